"""Shared helpers for the tests on real traces in ../shared/traces (beside the repository).

The traces are never copied into the repository. Without ../shared the tests skip, except under
CI=true, where a missing ../shared is a failure.

Everything here reads the raw JSON with json/gzip alone, never with gpuprofile code, so the
figures the tests expect come from an independent reading of the files.
"""

from __future__ import annotations

import gzip
import json
import os
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from helpers.prerequisites import SHARED_TRACES, missing, require_trace

os.environ.setdefault("OMP_NUM_THREADS", "1")

TRACES = SHARED_TRACES
KINETO = TRACES / "kineto"
DISTRIBUTED = TRACES / "kineto-distributed"
TRACE_SUFFIXES = (".json", ".json.gz")

# Kineto category -> the table gpuprofile puts it in (old 2020-21 traces capitalize categories).
TABLE_OF_CATEGORY = {
    "kernel": "kernels",
    "Kernel": "kernels",
    "gpu_memcpy": "memcpy",
    "Memcpy": "memcpy",
    "gpu_memset": "memset",
    "Memset": "memset",
    "cuda_runtime": "runtime",
    "Runtime": "runtime",
    "cuda_driver": "runtime",
    "cpu_op": "ops",
    "Operator": "ops",
    "user_annotation": "ops",
    "python_function": "ops",
}
INTERVAL_TABLES = ("ops", "kernels", "memcpy", "memset", "runtime")
GPU_TABLES = ("kernels", "memcpy", "memset")


def kineto_cases() -> list[Any]:
    """Every single-rank Kineto file and every multi-rank run directory, as pytest params.

    Collection must not fail without ../shared: then one placeholder param stands in, and the
    fixture that resolves it skips (or fails under CI=true).
    """
    if not KINETO.is_dir() or not DISTRIBUTED.is_dir():
        return [pytest.param(None, id="shared-traces-missing")]
    files = sorted(p for p in KINETO.iterdir() if p.name.endswith(TRACE_SUFFIXES))
    runs = sorted(p for p in DISTRIBUTED.iterdir() if p.is_dir())
    return [pytest.param(p, id=p.name) for p in (*files, *runs)]


def resolve_case(param: Path | None) -> Path:
    if param is None:
        missing(f"shared traces not found under {TRACES}")
    assert param is not None
    return require_trace(param)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    # Module scope: pytest then runs every test of a module on one trace before the next trace,
    # so each trace is read once per module.
    if "kineto_path" in metafunc.fixturenames:
        metafunc.parametrize("kineto_path", kineto_cases(), indirect=True, scope="module")


@pytest.fixture(scope="module")
def kineto_path(request: pytest.FixtureRequest) -> Path:
    """One shared Kineto file or run directory (parametrized over all of them)."""
    return resolve_case(request.param)


@pytest.fixture(scope="session")
def traces() -> Any:
    """This module's helpers, so tests reach them without importing a module named "conftest"
    (several conftest.py files share that name, so sys.modules["conftest"] is not this one)."""
    return SimpleNamespace(**{k: v for k, v in globals().items() if not k.startswith("__")})


# --- raw reading -------------------------------------------------------------------------


def read_json(path: Path, exact: bool = False) -> Any:
    """The JSON document of a trace file; gzip is recognised by its magic bytes, not the name.

    exact=True reads non-integer numbers as Decimal, so microsecond timestamps with nanosecond
    fractions keep every digit (a float64 holds only 0.25 us steps at 1.7e15 us).
    """
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return json.loads(raw, parse_float=Decimal) if exact else json.loads(raw)


def trace_events(doc: Any) -> list[dict[str, Any]]:
    """traceEvents of a document: a dict holding them, or (old traces) a bare list."""
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    assert isinstance(events, list)
    return events


def rank_files(path: Path) -> list[tuple[int, Path, Any]]:
    """(rank, file, exact document) per rank file, ranks assigned the way the spec says.

    A file's rank is its distributedInfo.rank, else 0. In a directory, when not every file
    declares a rank, the ranks are the positions of the files in sorted name order.
    """
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and p.name.endswith(TRACE_SUFFIXES))
    else:
        files = [path]
    docs = [read_json(p, exact=True) for p in files]
    declared = [
        d.get("distributedInfo", {}).get("rank") if isinstance(d, dict) else None for d in docs
    ]
    if path.is_dir() and any(r is None for r in declared):
        ranks = list(range(len(files)))
    else:
        ranks = [int(r) if r is not None else 0 for r in declared]
    return list(zip(ranks, files, docs, strict=True))


@dataclass
class RankFacts:
    """What the raw file of one rank holds, counted without gpuprofile."""

    rank: int
    counts: Counter[str] = field(default_factory=Counter)  # table -> events
    op_categories: Counter[str] = field(default_factory=Counter)  # cpu_op (from Operator) ...
    dur_ns: dict[str, Decimal] = field(default_factory=dict)  # table -> exact sum of dur*1000
    abs_start_ns: dict[str, list[Decimal]] = field(default_factory=dict)  # table -> starts
    memory_abs_ns: list[Decimal] = field(default_factory=list)

    @property
    def earliest_ns(self) -> Decimal | None:
        starts = [min(v) for v in self.abs_start_ns.values() if v]
        if self.memory_abs_ns:
            starts.append(min(self.memory_abs_ns))
        return min(starts) if starts else None

    @property
    def has_gpu(self) -> bool:
        return any(self.counts[t] for t in GPU_TABLES)


def rank_facts(rank: int, doc: Any) -> RankFacts:
    """Count and time the events of one rank file from its exact (Decimal) JSON."""
    base = Decimal(doc.get("baseTimeNanoseconds") or 0) if isinstance(doc, dict) else Decimal(0)
    facts = RankFacts(rank=rank)
    facts.dur_ns = {t: Decimal(0) for t in INTERVAL_TABLES}
    facts.abs_start_ns = {t: [] for t in INTERVAL_TABLES}
    # A host range ending over 1 ms after the profiler's own span (its Trace event) was left
    # open: docs/formats/kineto.md says it ends with the span.
    spans = [e for e in trace_events(doc) if e.get("ph") == "X" and e.get("cat") == "Trace"]
    span_end = max((Decimal(e["ts"]) + Decimal(e["dur"]) for e in spans), default=None)
    for e in trace_events(doc):
        ph = e.get("ph")
        if ph == "X":
            table = TABLE_OF_CATEGORY.get(e.get("cat", ""))
            if table is None:
                continue
            facts.counts[table] += 1
            dur = Decimal(e["dur"])
            if table == "ops" and span_end is not None and Decimal(e["ts"]) + dur > span_end + 1000:
                dur = max(span_end - Decimal(e["ts"]), Decimal(0))
            facts.dur_ns[table] += dur * 1000
            facts.abs_start_ns[table].append(base + Decimal(e["ts"]) * 1000)
            if table == "ops":
                facts.op_categories["cpu_op" if e["cat"] == "Operator" else e["cat"]] += 1
        elif ph in ("i", "I") and e.get("name") == "[memory]":
            facts.counts["memory"] += 1
            facts.memory_abs_ns.append(base + Decimal(e["ts"]) * 1000)
    return facts


def trace_origin_ns(facts: Iterable[RankFacts]) -> Decimal:
    """The trace start: the earliest imported event over all ranks (absolute ns)."""
    return min(e for f in facts if (e := f.earliest_ns) is not None)


# --- HTA's temporal breakdown, run on the shared files -----------------------------------


def symlink_dir(target: Path, into: Path) -> Path:
    """A directory HTA can load: symlinks to the shared file, or to each file of a run."""
    into.mkdir(parents=True, exist_ok=True)
    files = sorted(target.iterdir()) if target.is_dir() else [target]
    for f in files:
        if f.name.endswith(TRACE_SUFFIXES):
            (into / f.name).symlink_to(f)
    return into
