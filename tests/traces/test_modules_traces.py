"""Module attribution on shared traces with torch's own ``nn.Module:`` events, checked against
the raw JSON read here: module paths nested by ts/dur on one pid/tid, backward engine ops
matched to forward ops by their Sequence number, all with json and gzip alone."""

from __future__ import annotations

import gzip
import json
from collections import Counter, defaultdict
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.modules import NO_MODULE
from gpuprofile.importers.kineto import load_kineto
from gpuprofile.report.build import build_report
from helpers.prerequisites import SHARED_TRACES, require_trace

BERT = SHARED_TRACES / "kineto" / "tracelens_h100_bert_small_inference.json.gz"
RESNET = SHARED_TRACES / "kineto" / "tracelens_mi300x_ddp_resnet18_train.json.gz"
ENGINE = "autograd::engine::evaluate_function: "


def raw_events(path: Path) -> list[dict[str, Any]]:
    raw = path.read_bytes()
    # Decimal: microsecond times keep their nanosecond digits.
    doc = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw, parse_float=Decimal)
    return [e for e in doc["traceEvents"] if e.get("ph") == "X" and "dur" in e]


def span(e: dict[str, Any]) -> tuple[Decimal, Decimal]:
    return Decimal(e["ts"]), Decimal(e["ts"]) + Decimal(e["dur"])


def module_calls(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """torch's module events with their path: the chain of module events around each on its
    pid/tid (a call-stack walk in start order, longest first at equal starts)."""
    calls = [
        e
        for e in events
        if e.get("cat") == "python_function" and e["name"].startswith("nn.Module: ")
    ]
    calls.sort(key=lambda e: (e["pid"], e["tid"], span(e)[0], -Decimal(e["dur"])))
    stack: list[dict[str, Any]] = []
    out = []
    for e in calls:
        while stack and (
            (stack[-1]["pid"], stack[-1]["tid"]) != (e["pid"], e["tid"])
            or span(stack[-1])[1] <= span(e)[0]
        ):
            stack.pop()
        link = e["name"].removeprefix("nn.Module: ")
        path = f"{stack[-1]['path']}.{link}" if stack else link
        call = {**e, "path": path}
        out.append(call)
        stack.append(call)
    return out


def innermost_call(calls: list[dict[str, Any]], e: dict[str, Any]) -> str | None:
    """The path of the innermost module call around e on its thread (None: none)."""
    start, end = span(e)
    around = [
        c
        for c in calls
        if (c["pid"], c["tid"]) == (e["pid"], e["tid"])
        and span(c)[0] <= start
        and end <= span(c)[1]
    ]
    return max(around, key=lambda c: span(c)[0])["path"] if around else None


def exclusive_ns(intervals: list[tuple[Decimal, Decimal]]) -> int:
    """The union's length in ns: a call nested in one of the same path counts once."""
    total, reach = Decimal(0), None
    for start, end in sorted(intervals):
        if reach is None or start >= reach:
            total += end - start
            reach = end
        elif end > reach:
            total += end - reach
            reach = end
    return round(total * 1000)


@pytest.fixture(scope="module")
def bert() -> tuple[Analysis, list[dict[str, Any]]]:
    return Analysis(load_kineto(require_trace(BERT))), raw_events(BERT)


@pytest.fixture(scope="module")
def resnet() -> tuple[Analysis, list[dict[str, Any]]]:
    return Analysis(load_kineto(require_trace(RESNET))), raw_events(RESNET)


@pytest.mark.parametrize("case", ["bert", "resnet"])
def test_every_module_path_and_its_calls_as_the_raw_nesting_says(
    case: str, request: pytest.FixtureRequest
) -> None:
    analysis, events = request.getfixturevalue(case)
    modules = analysis.modules
    expected = Counter(c["path"] for c in module_calls(events))
    assert len(expected) > 20
    got = Counter(modules.paths[m] for m in modules.calls["module"])
    assert got == expected
    # Each call knows its module's class: torch's name without the instance counter.
    for path, kind in zip(modules.paths, modules.types, strict=True):
        assert kind == path.rsplit(".", 1)[-1].rsplit("_", 1)[0]
        assert NO_MODULE not in path


def engine_owners(events: list[dict[str, Any]]) -> list[tuple[dict[str, Any], str | None]]:
    """Each backward engine op (in start order) with the path of the module its forward op
    ran in, read from the raw events alone."""
    calls = module_calls(events)
    engine = sorted((e for e in events if e["name"].startswith(ENGINE)), key=lambda e: span(e)[0])
    engine_spans = defaultdict(list)
    for e in engine:
        engine_spans[(e["pid"], e["tid"])].append(span(e))

    def in_engine(e: dict[str, Any]) -> bool:
        start, end = span(e)
        return any(s <= start and end <= t for s, t in engine_spans[(e["pid"], e["tid"])])

    # Forward ops by sequence number, outside every engine op. Autograd's counter moves on
    # when an op makes a grad_fn, so the maker is the last to start (ops that only read the
    # counter, like aten::item, come before it), and the op that owns it the outermost one
    # around it with the same number (aten::conv2d around aten::convolution).
    by_seq: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for e in events:
        seq = (e.get("args") or {}).get("Sequence number")
        if seq is not None and not e["name"].startswith(ENGINE) and not in_engine(e):
            by_seq[seq].append(e)
    forward: dict[int, dict[str, Any]] = {}
    for seq, ops in by_seq.items():
        maker = max(ops, key=lambda e: span(e)[0])
        around = [
            e
            for e in ops
            if e["tid"] == maker["tid"]
            and span(e)[0] <= span(maker)[0]
            and span(maker)[1] <= span(e)[1]
        ]
        forward[seq] = max(around, key=lambda e: Decimal(e["dur"]))
    out = []
    for e in engine:
        owner = forward.get((e.get("args") or {}).get("Sequence number"))
        out.append((e, innermost_call(calls, owner) if owner is not None else None))
    return out


def test_backward_engine_ops_belong_to_the_module_of_their_forward_op(
    resnet: tuple[Analysis, list[dict[str, Any]]],
) -> None:
    analysis, events = resnet
    expected = [path for _, path in engine_owners(events)]
    owned = {p for p in expected if p is not None}
    assert len(owned) >= 10  # convolutions, batch norms, the fc layer...

    modules = analysis.modules
    got = [
        modules.paths[m] if m >= 0 else None
        for m in modules.engines.sort_values("start_ns", kind="stable")["module"]
    ]
    assert got == expected


@pytest.mark.parametrize("case", ["bert", "resnet"])
def test_module_rows_forward_and_calls_from_the_raw_events(
    case: str, request: pytest.FixtureRequest
) -> None:
    analysis, events = request.getfixturevalue(case)
    (rank,) = build_report(analysis).ranks
    rows = {row.path: row for row in rank.modules}
    calls = module_calls(events)
    by_path: dict[str, list[tuple[Decimal, Decimal]]] = defaultdict(list)
    for c in calls:
        by_path[c["path"]].append(span(c))
    assert set(rows) - {NO_MODULE} == set(by_path)
    for path, spans in by_path.items():
        assert rows[path].calls == len(spans), path
        # Each call's ts and dur round to whole ns on reading: allow 1 ns per call.
        assert abs(rows[path].forward_ns - exclusive_ns(spans)) <= len(spans), path
    # A tree: every row after its parent, one level deeper.
    seen: dict[str, int] = {}
    for row in rank.modules:
        if row.path == NO_MODULE:
            continue
        parent = row.path.rsplit(".", 1)[0] if "." in row.path else None
        assert row.depth == (seen[parent] + 1 if parent else 0), row.path
        seen[row.path] = row.depth
    # Siblings largest (forward + backward) first.
    for parent in [None, *seen]:
        sizes = [
            r.forward_ns + r.backward_ns
            for r in rank.modules
            if r.path != NO_MODULE
            and (r.path.rsplit(".", 1)[0] if "." in r.path else None) == parent
        ]
        assert sizes == sorted(sizes, reverse=True)
    phases = rank.phases
    assert phases is not None
    total = phases.forward_ns + phases.backward_ns + phases.optimizer_ns + phases.other_ns
    assert total == rank.wall_ns


def test_backward_time_of_modules_from_the_raw_engine_ops(
    resnet: tuple[Analysis, list[dict[str, Any]]],
) -> None:
    analysis, events = resnet
    (rank,) = build_report(analysis).ranks
    rows = {row.path: row for row in rank.modules}
    owners = engine_owners(events)
    checked = 0
    for path in sorted({p for _, p in owners if p is not None}):
        # Its engine ops and those of the modules below it, nested ones counted once.
        spans = [
            span(e) for e, p in owners if p is not None and (p == path or p.startswith(path + "."))
        ]
        assert abs(rows[path].backward_ns - exclusive_ns(spans)) <= len(spans), path
        checked += 1
    assert checked >= 10
    assert rows["ResNet_0"].backward_ns > rows["ResNet_0"].forward_ns > 0
    # Engine ops of no module (the loss, AccumulateGrad) are the "(no module)" row's.
    spans = [span(e) for e, p in owners if p is None]
    assert abs(rows[NO_MODULE].backward_ns - exclusive_ns(spans)) <= len(spans)
    # Optimizer steps are in this trace: their time is the optimizer phase's, at least.
    steps = [
        span(e)
        for e in events
        if e["name"].startswith("Optimizer.step#") and e["cat"] == "user_annotation"
    ]
    assert steps and rank.phases is not None
    assert rank.phases.optimizer_ns >= exclusive_ns(steps) - len(steps)


def test_phases_from_the_ranges_a_program_marks() -> None:
    """HTA's 2-rank DDP trace has no nn.Module events, only the phase ranges its harness marks
    ("## forward ##", "## backward ##", "## optimizer ##") with DDP's forward and the
    optimizer's own ranges. The phases are the unions of those ranges (and of the autograd
    engine's ops, backward) taken in priority order, optimizer > backward > forward, from the
    raw JSON."""
    from helpers.reference import union_length

    path = require_trace(SHARED_TRACES / "kineto" / "hta_a100_nccl_2rank_rank0.json.gz")
    events = [e for e in json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]]
    ranges = [e for e in events if e.get("ph") == "X" and e.get("cat") == "user_annotation"]
    assert not [e for e in events if str(e.get("name", "")).startswith("nn.Module:")]

    def spans(*names: str, prefix: tuple[str, ...] = ()) -> list[tuple[Decimal, Decimal]]:
        chosen = [e for e in ranges if e["name"] in names or e["name"].startswith(prefix)]
        return [(Decimal(e["ts"]), Decimal(e["ts"]) + Decimal(e["dur"])) for e in chosen]

    engine = [
        (Decimal(e["ts"]), Decimal(e["ts"]) + Decimal(e["dur"]))
        for e in events
        if e.get("ph") == "X"
        and str(e.get("name", "")).startswith("autograd::engine::evaluate_function: ")
    ]
    optimizer = spans("## optimizer ##", "## zero_grad ##", prefix=("Optimizer.",))
    backward = spans("## backward ##") + engine
    forward = spans("## forward ##", "DistributedDataParallel.forward")
    assert optimizer and backward and forward
    o = union_length(optimizer)
    ob = union_length(optimizer + backward)
    obf = union_length(optimizer + backward + forward)
    (rank,) = build_report(Analysis(load_kineto(path))).ranks
    assert rank.phases is not None
    tolerance = len(events)  # ns: each raw time rounds to a whole ns once
    assert abs(rank.phases.optimizer_ns - o * 1000) <= tolerance
    assert abs(rank.phases.backward_ns - (ob - o) * 1000) <= tolerance
    assert abs(rank.phases.forward_ns - (obf - ob) * 1000) <= tolerance


def test_phases_of_a_torch_1_trace_from_its_grad_functions_and_optimizer_ops() -> None:
    """A torch 1.x ResNet-50 trace (no schema version): its backward is the grad functions'
    own ops (CudnnConvolutionBackward, no autograd engine op around them) and its optimizer's
    ranges are plain "Operator" events. The phases are the unions of those, optimizer first,
    each op cut at the end of the ProfilerStep it starts in, from the raw JSON; nothing marks
    the forward, and the text says so instead of "forward 0 ns"."""
    import re

    from gpuprofile.report.text import render_text
    from helpers.reference import union_length

    path = require_trace(
        SHARED_TRACES / "kineto" / "kineto_plugin_resnet50_no_schema_version.pt.trace.json.gz"
    )
    doc = json.loads(gzip.decompress(path.read_bytes()), parse_float=Decimal)
    events = [e for e in doc if e.get("ph") == "X" and "dur" in e]
    ops = [e for e in events if e.get("cat") == "Operator"]
    assert not [e for e in events if e["name"].startswith(ENGINE)]
    steps = sorted(span(e) for e in ops if e["name"].startswith("ProfilerStep#"))

    def cut(e: dict[str, Any]) -> tuple[Decimal, Decimal]:
        start, end = span(e)
        held = [b for a, b in steps if a <= start < b]
        return start, min([end, *held[-1:]])

    optimizer = [cut(e) for e in ops if e["name"].startswith("Optimizer.")]
    backward = [cut(e) for e in ops if re.match(r"^[A-Z]\w*Backward\d*$", e["name"])]
    assert optimizer and backward
    o = union_length(optimizer)
    ob = union_length(optimizer + backward)
    report = build_report(Analysis(load_kineto(path)))
    (rank,) = report.ranks
    assert rank.phases is not None
    tolerance = len(events)  # ns: each raw time rounds to a whole ns once
    assert abs(rank.phases.optimizer_ns - o * 1000) <= tolerance
    assert abs(rank.phases.backward_ns - (ob - o) * 1000) <= tolerance
    assert rank.phases.forward_ns == 0
    assert "forward not told apart" in render_text(report)
