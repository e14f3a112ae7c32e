"""The widget's requests (window, details, range, search) and marks, against brute force."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import gpuprofile
from gpuprofile.analyses.context import Analysis
from gpuprofile.profiles import Profile
from gpuprofile.trace.meta import Window
from gpuprofile.trace.model import Trace
from gpuprofile.widget import marks, requests
from gpuprofile.widget.encoding import decode_meta, decode_table, encode_table
from gpuprofile.widget.requests import Source, handle
from gpuprofile.widget.timeline import KIND_TABLES, timeline_data
from gpuprofile.widget.widget import make_widget
from helpers import report_parts
from helpers.kineto_docs import cpu_op, document, kernel, runtime, write
from helpers.reference import union_length
from helpers.synthetic import KERNEL_NAMES, synthetic_trace

HTML = "<img src=x onerror=alert(1)>"


def _source(trace: Trace) -> Source:
    return Source(data=timeline_data(trace), trace=trace)


def _ask(source: Source, **message: Any) -> tuple[dict[str, Any], list[bytes]]:
    reply, buffers = handle(source, {"request": 41, **message})
    assert reply["request"] == 41 and reply["type"] == message["type"]
    assert "error" not in reply, reply.get("error")
    return reply, buffers


def _segment_ids(meta: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """Global id and lane of each row of a (real-event) segment table."""
    ids = [np.arange(first, first + count) for _, first, count in meta["segments"]]
    lanes = [np.full(count, lane) for lane, _, count in meta["segments"]]
    return (
        np.concatenate(ids) if ids else np.empty(0, int),
        np.concatenate(lanes) if lanes else np.empty(0, int),
    )


def _overlapping(trace: Trace, t0: float, t1: float) -> set[tuple[str, int]]:
    """(table, row) of every timeline event touching [t0, t1], straight from the trace."""
    out = set()
    for table in KIND_TABLES:
        frame = trace.table(table)
        start = frame["start_ns"].to_numpy()
        end = start + frame["dur_ns"].to_numpy()
        out |= {(table, int(r)) for r in np.flatnonzero((start <= t1) & (end >= t0))}
    return out


@pytest.fixture(scope="module")
def synthetic() -> Source:
    return _source(synthetic_trace(3000, streams=3, step=100, overlap_every=11))


@pytest.mark.parametrize(
    "window",
    [
        (0.0, 1e5),
        (4_990_000.0, 5_010_000.0),  # the end of one step: its earlier children are left out
        (1_234_567.5, 1_234_567.5),  # a single instant
        (3.0e6, 9.0e6),
        (0.0, 2e10),  # everything
        (2e10, 3e10),  # after the end: nothing
    ],
)
def test_window_equals_brute_force(synthetic: Source, window: tuple[float, float]) -> None:
    t0, t1 = window
    reply, (table,) = _ask(synthetic, type="window", start=t0, end=t1, width=1000)
    assert reply["merged"] is False and (reply["start"], reply["end"]) == (t0, t1)
    columns, meta = decode_table(table), decode_meta(table)
    assert meta["merged"] is False and meta["view"] == [t0, t1]
    ids, lanes = _segment_ids(meta)
    data, trace = synthetic.data, synthetic.trace
    got = {(KIND_TABLES[k], int(r)) for k, r in zip(data.kind[ids], data.source[ids], strict=True)}
    assert got == _overlapping(trace, t0, t1)
    assert len(got) == len(ids)  # each event once
    # The rows are those events: start, duration, name and place agree with the trace.
    for gid in ids[:: max(1, len(ids) // 200)].tolist():
        row = trace.table(KIND_TABLES[data.kind[gid]]).iloc[int(data.source[gid])]
        at = int(np.flatnonzero(ids == gid)[0])
        assert columns["start_ns"][at] == row["start_ns"]
        assert columns["dur_ns"][at] == np.float32(row["dur_ns"])
        assert data.names[columns["name"][at]] == row["name"]
        assert lanes[at] == data.lane[gid] and columns["row"][at] == data.row[gid]


def test_window_over_the_limit_is_merged(
    synthetic: Source, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(requests, "DETAIL_LIMIT", 500)
    t0, t1 = 1e6, 9e6
    reply, (table,) = _ask(synthetic, type="window", start=t0, end=t1, width=50)
    assert reply["merged"] is True
    columns, meta = decode_table(table), decode_meta(table)
    assert meta["merged"] is True
    assert int(columns["count"].sum()) == len(_overlapping(synthetic.trace, t0, t1))
    rows = sum(lane.rows for lane in synthetic.data.lanes)
    assert len(columns["count"]) <= 2 * (2 * 50) * rows


SHARED = {"shared memory": 49_152}


@pytest.fixture(scope="module")
def linked(tmp_path_factory: pytest.TempPathFactory) -> Source:
    path = write(
        tmp_path_factory.mktemp("linked") / "t.json",
        document(
            [
                cpu_op("outer", 0, 100, ext=1),
                cpu_op("inner", 10, 20, ext=2),
                runtime("cudaLaunchKernel", 12, 3, corr=1),
                runtime("cudaLaunchKernel", 40, 3, corr=2),  # in outer, not in inner
                kernel("gemm", 20, 30, corr=1, grid=[4, 2, 1], block=[128, 1, 1], **SHARED),
                kernel("add", 50, 10, corr=2),
                kernel(HTML, 90, 1, corr=99),  # launched by nothing in the trace
            ]
        ),
    )
    return _source(gpuprofile.load(path).trace)


def _details(source: Source, name: str) -> dict[str, Any]:
    gid = source.data.names.index(name)
    (event,) = np.flatnonzero(source.data.name == gid)
    reply, buffers = _ask(source, type="details", id=int(event))
    assert reply["id"] == int(event) and buffers == []
    details: dict[str, Any] = reply["details"]
    assert details["id"] == int(event) and details["name"] == name
    return details


def test_details_of_a_kernel_name_its_launch_and_op(linked: Source) -> None:
    gemm = _details(linked, "gemm")
    assert gemm["kind"] == "kernel"
    assert gemm["launch"]["name"] == "cudaLaunchKernel" and gemm["launch"]["start_ns"] == 12_000
    assert gemm["op"]["name"] == "inner"
    fields = dict(gemm["fields"])
    assert fields["grid"] == "4 x 2 x 1" and fields["block"] == "128 x 1 x 1"
    assert fields["correlation"] == "1" and fields["stream"] == "7"
    # Sizes as every number is spelt (3 digits), with the exact count beside.
    assert fields["shared memory"] == "49.2 kB (49,152 B)"
    assert gemm["start_ns"] == 20_000 and gemm["dur_ns"] == 30_000
    add = _details(linked, "add")
    assert add["launch"]["start_ns"] == 40_000 and add["op"]["name"] == "outer"
    orphan = _details(linked, HTML)  # the name is plain data, as it came
    assert orphan["launch"] is None and orphan["op"] is None


def test_details_of_ops_and_calls_list_what_they_launched(linked: Source) -> None:
    outer = _details(linked, "outer")
    assert [k["name"] for k in outer["kernels"]] == ["gemm", "add"]  # time order
    assert outer["kernels_total"] == 2 and outer["launch"] is None
    inner = _details(linked, "inner")
    assert [k["name"] for k in inner["kernels"]] == ["gemm"]
    data = linked.data
    calls = np.flatnonzero(data.name == data.names.index("cudaLaunchKernel"))
    reply, _ = _ask(linked, type="details", id=int(calls[0]))
    call = reply["details"]
    assert call["kind"] == "runtime" and call["op"]["name"] == "inner"
    assert [k["name"] for k in call["kernels"]] == ["gemm"]
    gemm = call["kernels"][0]
    (stream,) = [lane.id for lane in data.lanes if lane.kind == "gpu"]
    assert gemm["lane"] == stream and gemm["row"] == 0


@pytest.mark.parametrize("window", [(0, 10**9), (1_234_567, 2_345_678), (7_000_000, 7_000_100)])
def test_range_busy_and_top_names_equal_independent_sums(
    synthetic: Source, window: tuple[int, int]
) -> None:
    t0, t1 = window
    reply, _ = _ask(synthetic, type="range", start=t0, end=t1)
    (rank,) = reply["range"]["ranks"]
    kernels = synthetic.trace.kernels
    start = kernels["start_ns"].to_numpy()
    end = start + kernels["dur_ns"].to_numpy()
    inside = (start <= t1) & (end >= t0)
    clipped = [(max(s, t0), min(e, t1)) for s, e in zip(start[inside], end[inside], strict=True)]
    busy = union_length(clipped)
    assert busy > 0
    assert rank["gpu_busy_ns"] == busy
    assert rank["gpu_busy_pct"] == pytest.approx(100 * busy / (t1 - t0))
    assert rank["kernels"] == int(inside.sum())
    per_name = (
        pd.DataFrame(
            {"name": kernels["name"].astype(str)[inside], "ns": [e - s for s, e in clipped]}
        )
        .groupby("name")["ns"]
        .agg(["count", "sum"])
        .sort_values("sum", ascending=False)
    )
    top = rank["top_kernels"]
    assert len(top) == min(5, len(per_name))
    for entry in top:
        assert entry["total_ns"] == per_name.loc[entry["name"], "sum"]
        assert entry["count"] == per_name.loc[entry["name"], "count"]
    assert [e["total_ns"] for e in top] == sorted(per_name["sum"], reverse=True)[: len(top)]
    # Top ops: the outermost aten ops (category cpu_op), never the ProfilerStep annotations
    # around them; clipped time summed per name.
    ops = synthetic.trace.ops
    aten = ops[ops["category"] == "cpu_op"]
    a_start = aten["start_ns"].to_numpy()
    a_end = a_start + aten["dur_ns"].to_numpy()
    hit = (a_start <= t1) & (a_end >= t0)
    clipped = pd.Series(
        np.minimum(a_end[hit], t1) - np.maximum(a_start[hit], t0),
        index=aten["name"].astype(str).to_numpy()[hit],
    )
    expected = sorted(clipped.groupby(level=0).sum().astype(int).tolist(), reverse=True)[:5]
    assert sorted((e["total_ns"] for e in rank["top_ops"]), reverse=True) == expected
    assert not any(e["name"].startswith("ProfilerStep#") for e in rank["top_ops"])


def test_range_per_rank_and_without_gpu() -> None:
    two = _source(synthetic_trace(100, ranks=2))
    reply, _ = _ask(two, type="range", start=0, end=1e6)
    assert [r["rank"] for r in reply["range"]["ranks"]] == [0, 1]
    trace = synthetic_trace(100)
    cpu_only = _source(Trace(ops=trace.ops, runtime=trace.runtime, meta=trace.meta))
    reply, _ = _ask(cpu_only, type="range", start=0, end=1e6)
    (rank,) = reply["range"]["ranks"]
    assert rank["gpu_busy_pct"] is None and rank["kernels"] == 0 and rank["top_ops"]


def _search(source: Source, pattern: str, regex: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    reply, (table,) = _ask(source, type="search", pattern=pattern, regex=regex)
    return reply, decode_table(table)


def _name_count(trace: Trace, keep: Any) -> int:
    return sum(bool(keep(str(n))) for t in KIND_TABLES for n in trace.table(t)["name"])


def test_search_substring_regex_and_bad_regex(synthetic: Source) -> None:
    trace, data = synthetic.trace, synthetic.data
    reply, table = _search(synthetic, "SGEMM", regex=False)  # case-insensitive
    assert reply["count"] == _name_count(trace, lambda n: "sgemm" in n.lower()) > 0
    assert [data.names[i] for i in reply["names"]] == ["ampere_sgemm_128x64_tn"]
    assert len(table["id"]) == reply["count"]
    assert (np.diff(table["start_ns"]) >= 0).all()  # time order
    assert all("sgemm" in data.names[data.name[i]] for i in table["id"])
    np.testing.assert_array_equal(table["start_ns"], data.start[table["id"]])
    np.testing.assert_array_equal(table["lane"], data.lane[table["id"]])

    reply, _ = _search(synthetic, r"^aten::(mm|add)$", regex=True)
    assert reply["count"] == _name_count(trace, lambda n: n in ("aten::mm", "aten::add")) > 0
    reply, _ = _search(synthetic, "^ATEN", regex=True)  # a regex means what it says
    assert reply["count"] == 0

    bad, buffers = handle(
        synthetic, {"type": "search", "request": 3, "pattern": "(", "regex": True}
    )
    assert bad["request"] == 3 and "regular expression" in bad["error"] and buffers == []
    assert "\n" not in bad["error"]
    # "(" is just a character in a substring search.
    reply, _ = _search(synthetic, "(", regex=False)
    assert reply["count"] == _name_count(trace, lambda n: "(" in n) > 0


def test_a_regex_that_backtracks_forever_is_stopped_with_a_clear_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    trace = synthetic_trace(50)
    slow = "a" * 60 + "!"  # (a|aa)+$ tries ~fib(60) ways to split it before giving up
    trace.ops["name"] = trace.ops["name"].cat.rename_categories(
        {"aten::weird": slow, "aten::mm": "aaa"}
    )
    source = _source(trace)
    monkeypatch.setattr(requests, "REGEX_BUDGET_S", 0.2)
    started = time.monotonic()
    reply, buffers = handle(
        source, {"type": "search", "request": 7, "pattern": "(a|aa)+$", "regex": True}
    )
    # A guard against a hang, not a speed target: without a budget this runs for centuries.
    assert time.monotonic() - started < 60
    assert reply["request"] == 7 and buffers == []
    assert "(a|aa)+$" in reply["error"] and "simplify" in reply["error"]
    # The same pattern on names it does not backtrack on answers normally.
    plain = synthetic_trace(50)
    reply, _ = _search(_source(plain), "(m|mm)+$", regex=True)
    assert reply["count"] == _name_count(plain, lambda n: n.endswith("m")) > 0


def test_the_regex_budget_covers_all_names_together(monkeypatch: pytest.MonkeyPatch) -> None:
    # Each name alone takes well under a millisecond; 2000 of them take longer than the budget.
    trace = synthetic_trace(2000, step=10**6)
    ops = trace.ops
    ops["name"] = pd.Categorical([f"{'a' * 14}!{i}" for i in range(len(ops))])
    monkeypatch.setattr(requests, "REGEX_BUDGET_S", 0.1)
    started = time.monotonic()
    reply, _ = handle(
        _source(trace), {"type": "search", "request": 8, "pattern": "(a|aa)+$", "regex": True}
    )
    assert time.monotonic() - started < 60  # a hang guard, not a speed target
    assert "took over 0.1 s" in reply["error"]


def test_search_returns_the_earliest_matches_up_to_the_limit(
    synthetic: Source, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(requests, "SEARCH_LIMIT", 100)
    reply, table = _search(synthetic, "aten::", regex=False)
    ops = synthetic.trace.ops
    aten = np.sort(ops.loc[ops["name"].astype(str).str.contains("aten::"), "start_ns"].to_numpy())
    assert reply["count"] == len(aten) > 100
    np.testing.assert_array_equal(table["start_ns"], aten[:100])


def test_html_names_stay_plain_strings(synthetic: Source) -> None:
    reply, table = _search(synthetic, "<img", regex=False)
    assert [synthetic.data.names[i] for i in reply["names"]] == [HTML]
    details, _ = _ask(synthetic, type="details", id=int(table["id"][0]))
    assert details["details"]["name"] == HTML


@pytest.mark.parametrize(
    ("message", "error"),
    [
        ({"type": "details", "id": 10**9}, "no event"),
        ({"type": "details", "id": "3"}, "no event"),
        ({"type": "window", "start": 5, "end": 1, "width": 10}, "before start"),
        ({"type": "range", "start": "a", "end": 1}, "finite number"),
        ({"type": "launch missiles"}, "unknown request type"),
    ],
)
def test_bad_requests_get_one_line_errors(
    synthetic: Source, message: dict[str, Any], error: str
) -> None:
    reply, buffers = handle(synthetic, {"request": 9, **message})
    assert reply["request"] == 9 and reply["type"] == message["type"]
    assert error in reply["error"] and buffers == []


def _marks(table: bytes) -> tuple[dict[str, np.ndarray], list[dict[str, Any]]]:
    return decode_table(table), decode_meta(table)["groups"]


def _table_ids(source: Source, gids: np.ndarray) -> list[tuple[str, int]]:
    data, trace = source.data, source.trace
    return [
        (KIND_TABLES[k], int(trace.table(KIND_TABLES[k])["id"].iloc[r]))
        for k, r in zip(data.kind[gids], data.source[gids], strict=True)
    ]


def test_marks_of_hint_evidence_point_at_those_events(synthetic: Source) -> None:
    report = report_parts.report(
        hints=[
            report_parts.hint(evidence=[report_parts.evidence("kernels", [2000, 5, 17],
                                                              label="slow ones")]),
            report_parts.hint(evidence=[report_parts.evidence("memory", [1]),
                                        report_parts.evidence("runtime", [3])]),
        ]
    )  # fmt: skip
    columns, groups = _marks(
        encode_table(*marks.marks_columns(synthetic.data, synthetic.trace, report))
    )
    heaviest = groups[0].pop("heaviest")
    assert groups[0] == {"kind": "hint", "hint": 0, "evidence": 0, "label": "slow ones",
                         "total": 3}  # fmt: skip
    longest = synthetic.trace.kernels.set_index("id").loc[[2000, 5, 17], "dur_ns"].idxmax()
    assert _table_ids(synthetic, np.array([heaviest])) == [("kernels", longest)]
    assert [(g["hint"], g["evidence"], g["total"]) for g in groups[1:]] == [(1, 0, 0), (1, 1, 1)]
    first = columns["id"][columns["group"] == 0]
    kernels = synthetic.trace.kernels.set_index("id")
    assert _table_ids(synthetic, first) == [("kernels", i) for i in (5, 17, 2000)]  # time order
    starts = columns["start_ns"][columns["group"] == 0]
    np.testing.assert_array_equal(starts, kernels.loc[[5, 17, 2000], "start_ns"])
    (call,) = columns["id"][columns["group"] == 2]
    assert _table_ids(synthetic, np.array([call])) == [("runtime", 3)]
    assert columns["lane"][columns["group"] == 2][0] == synthetic.data.lane[call]


def test_marks_of_module_rows_point_at_their_calls(synthetic: Source) -> None:
    ops = synthetic.trace.ops["id"].tolist()
    report = report_parts.report(
        ranks=[
            report_parts.rank(rank=0, modules=[
                report_parts.module_row("Net", 10, evidence=[
                    report_parts.evidence("ops", ops[:3]),
                    report_parts.evidence("ops", [ops[2], ops[5]]),  # ops[2] twice: once
                ]),
                report_parts.module_row("Net.fc", 5),  # no evidence: an empty group
            ]),
        ]
    )  # fmt: skip
    columns, groups = _marks(
        encode_table(*marks.marks_columns(synthetic.data, synthetic.trace, report))
    )
    mine = {g["module"]: (n, g) for n, g in enumerate(groups) if g["kind"] == "module"}
    assert sorted(mine) == [0, 1]
    n, group = mine[0]
    assert (group["rank"], group["path"], group["total"]) == (0, "Net", 4)
    got = _table_ids(synthetic, columns["id"][columns["group"] == n])
    assert sorted(got) == sorted(("ops", i) for i in [*ops[:3], ops[5]])
    durs = synthetic.trace.ops.set_index("id")["dur_ns"]
    ((table, heaviest),) = _table_ids(synthetic, np.array([group["heaviest"]]))
    assert (table, heaviest) in got  # the longest call: where the timeline zooms
    assert durs[heaviest] == max(durs[i] for i in [*ops[:3], ops[5]])
    assert mine[1][1]["total"] == 0 and not (columns["group"] == mine[1][0]).any()


def test_marks_of_roofline_points_hold_every_instance(monkeypatch: pytest.MonkeyPatch) -> None:
    trace = synthetic_trace(3000, streams=2)
    profile = Profile(trace)
    report = profile.report()
    points = report["roofline"]["points"]
    source = _source(trace)
    columns, groups = _marks(
        encode_table(
            *marks.marks_columns(source.data, trace, profile.typed_report(), profile.analysis)
        )
    )
    point_groups = {g["point"]: n for n, g in enumerate(groups) if g["kind"] == "point"}
    assert sorted(point_groups) == list(range(len(points)))
    kernel_points = [k for k, p in enumerate(points) if p["level"] == "kernel"]
    assert kernel_points
    for k in kernel_points:
        name = points[k]["name"]
        expected = set(trace.kernels.loc[trace.kernels["name"] == name, "id"].tolist())
        assert len(expected) > 50  # more than the report's event_ids keep
        group = point_groups[k]
        got = _table_ids(source, columns["id"][columns["group"] == group])
        assert set(got) == {("kernels", i) for i in expected}
        assert groups[group]["total"] == len(expected) == points[k]["count"]
    op_points = [k for k, p in enumerate(points) if p["level"] == "op"]
    assert op_points
    gpu_ns = trace.kernels.groupby("op_id")["dur_ns"].sum()
    for k in op_points:
        group = point_groups[k]
        got = _table_ids(source, columns["id"][columns["group"] == group])
        assert {t for t, _ in got} == {"ops"}
        names = trace.ops.set_index("id").loc[[i for _, i in got], "name"].astype(str)
        assert set(names) == {points[k]["name"]}
        assert groups[group]["total"] == points[k]["count"] == len(got)
        # The heaviest instance by GPU time (its kernels' durations), not by the op's own.
        weights = gpu_ns.reindex([i for _, i in got]).fillna(0)
        heaviest = _table_ids(source, np.array([groups[group]["heaviest"]]))
        assert heaviest[0] == ("ops", int(weights.idxmax()))
        assert weights.loc[heaviest[0][1]] == weights.max()

    # Over the cap: the longest instances, and the true total.
    monkeypatch.setattr(marks, "MAX_POINT_MARKS", 10)
    columns, groups = _marks(
        encode_table(
            *marks.marks_columns(source.data, trace, profile.typed_report(), profile.analysis)
        )
    )
    k = kernel_points[0]
    group = point_groups[k]
    gids = columns["id"][columns["group"] == group]
    assert len(gids) == 10 and groups[group]["total"] == points[k]["count"]
    durations = trace.kernels.loc[trace.kernels["name"] == points[k]["name"], "dur_ns"]
    got = source.data.end[gids] - source.data.start[gids]
    assert sorted(got.tolist()) == sorted(durations.nlargest(10).tolist())
    assert (np.diff(columns["start_ns"][columns["group"] == group]) >= 0).all()


def test_requests_read_the_analysis_the_widget_has(monkeypatch: pytest.MonkeyPatch) -> None:
    trace = synthetic_trace(200)
    analysis = Analysis(trace)
    source = Source(data=timeline_data(trace), trace=trace, analysis=analysis)

    def second_analysis(*_: Any) -> None:
        raise AssertionError("a request made an Analysis of its own")

    monkeypatch.setattr(Analysis, "__init__", second_analysis)
    reply, _ = _ask(source, type="range", start=0, end=1e9)
    (rank,) = reply["range"]["ranks"]
    assert rank["top_ops"] and source.analysis is analysis
    # Without one (a live view), the first request that needs one makes it, once.
    monkeypatch.undo()
    bare = _source(trace)
    _ask(bare, type="range", start=0, end=1e9)
    made = bare.analysis
    assert made is not None and made.trace is trace
    _ask(bare, type="range", start=0, end=1e8)
    assert bare.analysis is made


def test_the_widget_answers_messages(tmp_path: Path) -> None:
    trace = synthetic_trace(50)
    widget = make_widget(None, trace)
    needle = KERNEL_NAMES[0].lower()
    matching = _name_count(trace, lambda n: needle in n.lower())
    sent: list[tuple[dict[str, Any], list[bytes]]] = []
    widget.send = lambda content, buffers=None: sent.append((content, buffers))  # type: ignore[method-assign]
    widget._handle_custom_msg({"type": "search", "request": 1, "pattern": KERNEL_NAMES[0]}, [])
    widget._handle_custom_msg({"type": "details", "request": 2, "id": -1}, [])
    (search, (table,)), (error, no_buffers) = sent
    assert matching > 0
    assert search["request"] == 1 and search["count"] == matching
    assert len(decode_table(table)["id"]) == matching
    assert error["request"] == 2 and "no event" in error["error"] and not no_buffers


def test_replies_echo_the_asking_view(synthetic: Source) -> None:
    # Every view of a widget hears every reply; the view name says whose it is.
    for message in (
        {"type": "details", "request": 3, "view": "va", "id": 0},
        {"type": "details", "request": 3, "view": "vb", "id": -5},  # an error reply too
    ):
        reply, _ = handle(synthetic, message)
        assert (reply["view"], reply["request"]) == (message["view"], 3)


def test_a_range_over_recorded_windows_says_how_much_was_recorded() -> None:
    # A --steps trace: two windows, the first and the last third of the span.
    trace = synthetic_trace(300)
    k = trace.kernels
    span = int((k["start_ns"] + k["dur_ns"]).max())
    third = span // 3
    windows = (
        Window(index=0, start_ns=0, end_ns=third),
        Window(index=1, start_ns=2 * third, end_ns=span),
    )
    windowed = Trace(ops=trace.ops, kernels=k, runtime=trace.runtime, meta=trace.meta)
    windowed = windowed.with_meta(windows=windows)
    t0, t1 = third // 2, span - third // 2  # half of each window, and all between
    whole, _ = _ask(_source(trace), type="range", start=t0, end=t1)
    parts, _ = _ask(_source(windowed), type="range", start=t0, end=t1)
    recorded = (third - t0) + (t1 - 2 * third)
    assert whole["range"]["recorded_ns"] == t1 - t0
    assert parts["range"]["recorded_ns"] == recorded
    (w,), (p,) = whole["range"]["ranks"], parts["range"]["ranks"]
    # Same events, same busy time; its share is of the recorded time, not of the range.
    assert p["gpu_busy_ns"] == w["gpu_busy_ns"] > 0
    assert p["gpu_busy_pct"] == pytest.approx(100 * w["gpu_busy_ns"] / recorded)


@pytest.fixture(scope="module")
def two_ranks() -> Source:
    return _source(synthetic_trace(600, ranks=2, streams=2))


@pytest.mark.parametrize("table", ["kernels", "ops"])
def test_named_lists_every_instance_of_a_name_on_a_rank(
    two_ranks: Source, table: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What a click on a row of the top kernels or top ops asks: every event of that name on
    # that rank, the longest first to be kept, and the longest of all named.
    trace, data = two_ranks.trace, two_ranks.data
    frame = trace.table(table)
    name = str(frame["name"].value_counts().index[0])
    mine = frame[(frame["name"].astype(str) == name) & (frame["rank"] == 1)]
    assert len(mine) > 3
    monkeypatch.setattr(requests, "MAX_POINT_MARKS", 3)
    reply, buffers = _ask(two_ranks, type="named", table=table, name=name, rank=1)
    assert reply["count"] == len(mine)
    kept = decode_table(buffers[0])
    gids = kept["id"].astype(np.int64)
    rows = frame.iloc[data.source[gids]]
    assert all(KIND_TABLES[k] == table for k in data.kind[gids])
    assert set(rows["name"].astype(str)) == {name} and set(rows["rank"]) == {1}
    # The 3 longest, in time order; the longest of all is the one the timeline zooms to.
    assert sorted(rows["dur_ns"].tolist()) == sorted(mine["dur_ns"].nlargest(3).tolist())
    assert list(kept["start_ns"]) == sorted(kept["start_ns"])
    heaviest = reply["heaviest"]
    assert frame.iloc[data.source[heaviest]]["dur_ns"] == mine["dur_ns"].max()
    # A name nobody has: nothing, and no error.
    reply, buffers = _ask(two_ranks, type="named", table=table, name="no such name", rank=1)
    assert reply["count"] == 0 and reply["heaviest"] is None
    assert len(decode_table(buffers[0])["id"]) == 0


def test_named_refuses_an_unknown_table(two_ranks: Source) -> None:
    reply, _ = handle(two_ranks, {"type": "named", "table": "memcpy", "name": "x", "rank": 0})
    assert "table" in reply["error"]
