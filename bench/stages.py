"""Where reading a Kineto trace and building its report spend their time, stage by stage.

    python bench/stages.py TRACE...

Each stage is one function of the reader (or the report), timed where it is called, summed
over a run of gpuprofile.load(TRACE).report() (best of 3 runs); "rest" is the time of the
whole not spent in a named stage (bucketing the events, metadata, freeing the decoded
events). gunzip is within read + gunzip. Not a test: it prints, and always exits 0.
"""

from __future__ import annotations

import os

os.environ["OMP_NUM_THREADS"] = "1"

import gc
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

# (module, function, stage): the reader's steps, in the order they run.
STAGES = (
    ("gpuprofile.importers.source", "_gunzip", "gunzip"),
    ("gpuprofile.importers.kineto.trace", "read_trace_bytes", "read + gunzip"),
    ("gpuprofile.importers.kineto.decode", "decode_bytes", "decode (msgspec)"),
    ("gpuprofile.importers.kineto.direct", "scanned", "direct (C): parts"),
    ("gpuprofile.importers.kineto.trace", "sort_events", "events to tables"),
    ("gpuprofile.importers.kineto.trace", "make_table", "tables (pandas)"),
    ("gpuprofile.importers.kineto.trace", "with_nesting", "op nesting"),
    ("gpuprofile.importers.kineto.trace", "launching_ops", "kernel -> op links"),
)


def _timed(totals: dict[str, float], stage: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def run(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            totals[stage] = totals.get(stage, 0.0) + time.perf_counter() - started

    return run


def stage_seconds(path: Path, repeat: int = 3) -> dict[str, float]:
    """Seconds per stage of gpuprofile.load(path).report(), from the fastest of ``repeat``."""
    import importlib

    import gpuprofile
    from gpuprofile.importers.kineto import decode
    from gpuprofile.importers.kineto import trace as kineto

    totals: dict[str, float] = {}
    for module_name, function, stage in STAGES:
        try:
            module = importlib.import_module(module_name)
        except ImportError:  # the compiled core, where it is not built
            continue
        setattr(module, function, _timed(totals, stage, getattr(module, function)))
    for table, build in kineto._BUILDERS.items():
        kineto._BUILDERS[table] = _timed(totals, "columns", build)
    # A file over PART_BYTES is decoded in parts: its outline, then each part's events.
    for name, stage in (("_OUTLINE_DECODER", "decode: outline"), ("LIST_DECODER", "decode: parts")):
        decoder = getattr(decode, name)
        setattr(decode, name, SimpleNamespace(decode=_timed(totals, stage, decoder.decode)))
    best: dict[str, float] | None = None
    for _ in range(repeat):
        totals.clear()
        gc.collect()
        started = time.perf_counter()
        profile = gpuprofile.load(path)
        loaded = time.perf_counter()
        profile.report()
        ended = time.perf_counter()
        run = dict(totals, load=loaded - started, report=ended - loaded, total=ended - started)
        if best is None or run["total"] < best["total"]:
            best = run
    assert best is not None
    return best


def print_stages(path: Path) -> None:
    seconds = stage_seconds(path)
    decoding = ["decode: outline", "decode: parts"]
    within_load = {stage for _, _, stage in STAGES[1:]} | {"columns", *decoding}
    named = sum(v for k, v in seconds.items() if k in within_load)
    print(f"\n{path.name}: load {seconds['load']:.3f} s + report {seconds['report']:.3f} s")
    stages = [s for _, _, s in STAGES]
    for stage in [*stages[:3], *decoding, *stages[3:5], "columns", *stages[5:]]:
        if stage in seconds:
            print(f"  {stage:<26} {seconds[stage]:7.3f} s")
    print(f"  {'rest of load':<26} {seconds['load'] - named:7.3f} s")
    print(f"  {'report (analyses)':<26} {seconds['report']:7.3f} s")


def main(argv: list[str]) -> int:
    import torch  # noqa: F401  (as in a notebook; not part of any timing)

    for arg in argv:
        print_stages(Path(arg))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
