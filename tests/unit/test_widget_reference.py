"""The widget's state against a straightforward per-event computation in this file: the
vectorised layout (timeline.py, tables.py, marks.py) must send exactly what a plain loop over
the events would, on shared traces and a synthetic one."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import gpuprofile
from gpuprofile.trace.model import Trace
from gpuprofile.widget.encoding import decode_meta, decode_table
from gpuprofile.widget.marks import heaviest_first
from gpuprofile.widget.tables import overview_bins
from gpuprofile.widget.widget import make_widget
from helpers.synthetic import synthetic_trace

SHARED = Path(__file__).resolve().parents[3] / "shared" / "traces" / "kineto"
TRACES = (
    "hta_a100_nccl_2rank_rank0.json.gz",
    "hta_v100_32gb_memory_rank1_of2.json.gz",
    "tracelens_mi300x_vllm_cudagraph_decode_execution.json.gz",
)
TABLES = ("ops", "runtime", "kernels", "memcpy", "memset")  # the wire's kinds, in order


def reference_events(trace: Trace) -> dict[str, Any]:
    """Events in global-id order with lane, row and name index, by a loop per event."""
    names: list[tuple[int, str]] = []
    index: dict[tuple[int, str], int] = {}
    rows = []
    for kind, table_name in enumerate(TABLES):
        table = trace.table(table_name)
        column = table["name"]
        # The symbol table lists each kind's names in category order, a missing name first.
        used = {str(v) for v in column.dropna()}
        ordered = ([""] if column.isna().any() else []) + [
            str(c) for c in column.cat.categories if str(c) in used
        ]
        for text in ordered:
            index[(kind, text)] = len(names)
            names.append((kind, text))
        cpu = kind < 2
        for source, rec in enumerate(table.to_dict("records")):
            text = "" if pd.isna(rec["name"]) else str(rec["name"])
            where = int(rec["pid"] if cpu else rec["device"])
            key = int(rec["tid"] if cpu else rec["stream"])
            start = int(rec["start_ns"])
            end = start + int(rec["dur_ns"])
            lane_key = (int(rec["rank"]), 1 if cpu else 0, where, key)
            rows.append((lane_key, start, end, index[(kind, text)], kind, source))
    # Lanes per rank: GPU streams by (device, stream), then CPU threads by (pid, tid).
    lane_keys = sorted({r[0] for r in rows})
    lane_of = {k: i for i, k in enumerate(lane_keys)}
    rows.sort(key=lambda r: (lane_of[r[0]], r[1], -(r[2] - r[1]), r[4], r[5]))
    lane = [lane_of[r[0]] for r in rows]
    row = []
    previous = None
    stack: list[int] = []  # CPU: ends of the open call frames
    row_ends: list[int] = []  # GPU: last end per row, first fit
    for (key, start, end, *_), lane_id in zip(rows, lane, strict=True):
        if lane_id != previous:
            stack, row_ends, previous = [], [], lane_id
        if key[1] == 1:
            while stack and stack[-1] <= start:
                stack.pop()
            row.append(len(stack))
            stack.append(end)
        else:
            free = [i for i, e in enumerate(row_ends) if e <= start]
            if free:
                row_ends[free[0]] = end
                row.append(free[0])
            else:
                row.append(len(row_ends))
                row_ends.append(end)
    return {
        "lane_keys": lane_keys,
        "lane": lane,
        "row": row,
        "start": [r[1] for r in rows],
        "end": [r[2] for r in rows],
        "name": [r[3] for r in rows],
        "gid_of": {(TABLES[r[4]], r[5]): gid for gid, r in enumerate(rows)},
        "names": [text for _, text in names],
    }


def reference_overview(ref: dict[str, Any], span: float, bins: int) -> dict[str, list[Any]]:
    """Merged boxes by a loop: a short event joins its lane row's box of its bin."""
    width = max(span / bins, 1e-9)
    boxes: dict[tuple[int, int, int], list[Any]] = {}
    long = []
    for gid, (lane, row, start, end) in enumerate(
        zip(ref["lane"], ref["row"], ref["start"], ref["end"], strict=True)
    ):
        if end - start >= width:
            long.append([lane, row, start, end, gid, 1])
            continue
        b = min(max(math.floor(start / width), 0), bins - 1)
        box = boxes.setdefault((lane, row, b), [lane, row, start, end, gid, 0])
        box[3] = max(box[3], end)
        box[5] += 1
        if end - start > ref["end"][box[4]] - ref["start"][box[4]]:
            box[4] = gid  # the longest member names the box; the first of equals
    every = [boxes[k] for k in sorted(boxes)] + long
    every.sort(key=lambda b: (b[0], b[2]))
    return {
        "lane": [b[0] for b in every],
        "row": [b[1] for b in every],
        "start_ns": [float(b[2]) for b in every],
        "dur_ns": [float(np.float32(b[3] - b[2])) for b in every],
        "name": [ref["name"][b[4]] for b in every],
        "count": [b[5] for b in every],
    }


def profiles() -> list[tuple[str, Any]]:
    from gpuprofile.profiles import Profile

    out = [("synthetic", Profile(synthetic_trace(12000, ranks=2, streams=3, overlap_every=7)))]
    out += [(name, gpuprofile.load(SHARED / name)) for name in TRACES if (SHARED / name).exists()]
    return out


@pytest.fixture(scope="module", params=profiles(), ids=lambda p: p[0])
def case(request: pytest.FixtureRequest) -> tuple[Any, dict[str, Any]]:
    profile = request.param[1]
    return profile, reference_events(profile.trace)


def lanes_of(segments: list[list[int]]) -> list[int]:
    return [lane for lane, _, count in segments for _ in range(count)]


def test_events_table_is_every_event_in_reference_order(case: tuple[Any, dict]) -> None:
    profile, ref = case
    widget = make_widget(
        profile.typed_report(), profile.trace, profile.analysis, detail_threshold=10**9
    )
    lanes = [x for x in widget.lanes if x["kind"] != "counter"]
    assert [
        (x["rank"], int(x["kind"] == "cpu"), x.get("device", -1), x.get("stream", x.get("tid")))
        for x in lanes
    ] == [
        (r, c, w if c == 0 else -1, k if c == 0 else k % 2**32) for r, c, w, k in ref["lane_keys"]
    ]
    assert widget.names == ref["names"]
    table = decode_table(widget.events)
    meta = decode_meta(widget.events)
    assert lanes_of(meta["segments"]) == [lanes[i]["id"] for i in ref["lane"]]
    assert table["start_ns"].tolist() == ref["start"]
    ends = np.asarray(ref["end"], np.float64) - np.asarray(ref["start"], np.float64)
    np.testing.assert_array_equal(table["dur_ns"], ends.astype(np.float32))
    assert table["name"].tolist() == ref["name"]
    assert table["row"].tolist() == ref["row"]


def test_overview_boxes_match_a_loop_over_events(case: tuple[Any, dict]) -> None:
    profile, ref = case
    widget = make_widget(
        profile.typed_report(), profile.trace, profile.analysis, detail_threshold=100
    )
    data = widget._source.data
    expected = reference_overview(ref, data.span_ns, overview_bins(data))
    table = decode_table(widget.events)
    assert decode_meta(widget.events)["merged"] and max(expected["count"]) > 1
    lanes = [x["id"] for x in widget.lanes if x["kind"] != "counter"]
    expected["lane"] = [lanes[i] for i in expected["lane"]]
    assert lanes_of(decode_meta(widget.events)["segments"]) == expected.pop("lane")
    for column, values in expected.items():
        assert table[column].tolist() == values, column


def test_hint_marks_are_the_evidence_events(case: tuple[Any, dict]) -> None:
    profile, ref = case
    report = profile.report()
    widget = make_widget(profile.typed_report(), profile.trace, profile.analysis)
    table = decode_table(widget.marks)
    groups = decode_meta(widget.marks)["groups"]
    for g, group in enumerate(groups):
        if group["kind"] != "hint":
            continue
        evidence = report["hints"][group["hint"]]["evidence"][group["evidence"]]
        name = evidence.get("table", "")
        trace_table = profile.trace.table(name) if name in TABLES else None
        rows = {} if trace_table is None else {int(i): r for r, i in enumerate(trace_table["id"])}
        gids = [ref["gid_of"][(name, rows[i])] for i in evidence.get("event_ids", []) if i in rows]
        gids = sorted(gids, key=lambda gid: ref["start"][gid])  # stable: time order
        assert table["id"][table["group"] == g].tolist() == gids


def test_heaviest_first_is_the_stable_sort_it_replaces() -> None:
    rng = np.random.default_rng(3)
    for weight in (rng.integers(0, 50, 5000), rng.random(3000), np.zeros(10, np.int64)):
        for k in (1, 7, 2000, 6000):
            expected = np.argsort(-weight, kind="stable")[:k]
            np.testing.assert_array_equal(heaviest_first(weight, k), expected)


def test_a_window_of_only_long_events_is_those_events() -> None:
    from gpuprofile.widget.tables import merged_columns
    from gpuprofile.widget.timeline import timeline_data

    data = timeline_data(synthetic_trace(50))
    longest = int(np.argmax(data.end - data.start))
    view = (float(data.start[longest]), float(data.end[longest]))
    columns, meta = merged_columns(data, np.array([longest]), view, bins=4)
    assert columns["count"].tolist() == [1]
    assert columns["start_ns"].tolist() == [data.start[longest]]
    assert meta["segments"] == [[int(data.lane[longest]), -1, 1]]
