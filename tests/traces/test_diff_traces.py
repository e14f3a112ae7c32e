"""gpuprofile.diff on HTA's own trace_diff pair (PROVENANCE.md): an A100 training rank (control)
against a V100 one (test). Kernel and op totals are summed here from the raw JSON (orjson, gzip)
by exact name; names found in one file only are grouped by a normalization written here
independently (innermost <...> removed until none is left, then the name cut at its first
"("), as docs/diff.md says: the diff must find the same sums, row by row. Each side's trace
is read once for the module.
"""

from __future__ import annotations

import bisect
import gzip
import json
import re
from collections import defaultdict
from typing import Any

import jsonschema
import orjson
import pytest

import gpuprofile
from gpuprofile.report.schema_gen import DIFF_SCHEMA_FILE, generated
from helpers.prerequisites import SHARED_TRACES, require_trace

pytestmark = pytest.mark.traces

A_PATH = SHARED_TRACES / "kineto" / "hta_a100_train_rank3_of8_async_cpu_to_gpu.json.gz"
B_PATH = SHARED_TRACES / "kineto" / "hta_v100_16gb_train_rank1_of2.json.gz"
INNERMOST_TEMPLATE = re.compile(r"<[^<>]*>")
# What a role row may say a kernel computes (docs/diff.md).
ROLES = {
    "attention", "communication", "convolution", "GEMM", "normalization", "softmax",
    "reduction", "copy", "elementwise",
}  # fmt: skip


def key_of(name: str) -> str:
    """The diff's documented normalization (docs/diff.md), written another way."""
    text = re.sub(r"0x[0-9a-fA-F]+", "", name.replace("(anonymous namespace)::", ""))
    while INNERMOST_TEMPLATE.search(text):
        text = INNERMOST_TEMPLATE.sub("", text)
    text = text.split("(", 1)[0]
    text = " ".join(text.split()).removeprefix("void ").strip()
    return text or " ".join(name.split())


def raw_gpu_totals(events: list[dict[str, Any]]) -> dict[str, tuple[int, int]]:
    """{op name: (GPU ns, count)} of the cpu_op events: per call, the kernels, copies and sets
    whose launch call (by correlation id) started inside it on its thread, as docs/diff.md
    says op rows compare. Summed with prefix sums over each thread's calls in start order."""
    device: dict[int, int] = defaultdict(int)
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
            device[e["args"]["correlation"]] += int(e["dur"]) * 1000
    calls: dict[tuple[Any, Any], list[tuple[int, int]]] = defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "cuda_runtime":
            corr = e.get("args", {}).get("correlation")
            calls[(e["pid"], e["tid"])].append((int(e["ts"]), device.get(corr, 0)))
    starts: dict[tuple[Any, Any], list[int]] = {}
    sums: dict[tuple[Any, Any], list[int]] = {}
    for thread, rows in calls.items():
        rows.sort()
        starts[thread] = [t for t, _ in rows]
        running = [0]
        for _, ns in rows:
            running.append(running[-1] + ns)
        sums[thread] = running
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "cpu_op":
            thread = (e["pid"], e["tid"])
            at = starts.get(thread, [])
            lo = bisect.bisect_left(at, int(e["ts"]))
            hi = bisect.bisect_left(at, int(e["ts"]) + int(e["dur"]))
            total = totals[e["name"]]
            total[0] += sums[thread][hi] - sums[thread][lo] if at else 0
            total[1] += 1
    return {name: (ns, count) for name, (ns, count) in totals.items()}


def raw_totals(events: list[dict[str, Any]], category: str) -> dict[str, tuple[int, int]]:
    """{name: (total ns, count)} of one category's complete events. These traces hold whole
    microseconds (int dur), so the sums are exact."""
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == category:
            total = totals[e["name"]]
            total[0] += int(e["dur"]) * 1000
            total[1] += 1
    return {name: (ns, count) for name, (ns, count) in totals.items()}


@pytest.fixture(scope="module")
def runs(traces: Any) -> dict[str, Any]:
    """Each trace read once: its Profile, its raw events, and the diff of the pair."""
    paths = {"a": require_trace(A_PATH), "b": require_trace(B_PATH)}
    out: dict[str, Any] = {side: gpuprofile.load(path) for side, path in paths.items()}
    for side, path in paths.items():
        # orjson (a dev dependency, another parser than ours) reads the 100k events in a
        # fraction of json's time; the sums are integers either way.
        events = traces.trace_events(orjson.loads(gzip.decompress(path.read_bytes())))
        assert all(isinstance(e.get("dur", 0), int) for e in events)  # else sums are not exact
        out[f"{side}_kernels"] = raw_totals(events, "kernel")
        out[f"{side}_ops"] = raw_gpu_totals(events)
    out["diff"] = gpuprofile.diff(out["a"], out["b"]).to_dict()
    return out


def expected_rows(
    a_exact: dict[str, tuple[int, int]], b_exact: dict[str, tuple[int, int]]
) -> tuple[dict[str, tuple[int, int]], dict[str, tuple[int, int]]]:
    """Per side, the rows the docs promise: names in both files as they are; the other names
    summed by normalized name."""

    def side(mine: dict[str, tuple[int, int]], other: dict[str, tuple[int, int]]) -> Any:
        out = {name: value for name, value in mine.items() if name in other}
        for name, (ns, count) in mine.items():
            if name not in other:
                total = out.setdefault(key_of(name), (0, 0))
                out[key_of(name)] = (total[0] + ns, total[1] + count)
        return out

    return side(a_exact, b_exact), side(b_exact, a_exact)


@pytest.mark.parametrize("table", ["kernels", "ops"])
def test_rows_are_the_raw_sums_by_name(runs: dict[str, Any], table: str) -> None:
    a_raw, b_raw = expected_rows(runs[f"a_{table}"], runs[f"b_{table}"])
    rows = runs["diff"][table]
    seen_a, seen_b = set(), set()
    # Kernels of other names paired by role (what they compute: "GEMM kernels of aten::mm"):
    # the raw rows they merge are the ones no other row names, and their sums are those rows'.
    by_role = [r for r in rows if r["matched_by"] == "role"]
    named = {r["name"] for r in rows if r["matched_by"] != "role"}
    named |= {r["b_name"] for r in rows if r["b_name"]}
    for side, raw in (("a", a_raw), ("b", b_raw)):
        merged = [value for name, value in raw.items() if name not in named]
        assert sum(r[f"{side}_ns"] for r in by_role) == sum(ns for ns, _ in merged)
        assert sum(r[f"{side}_count"] for r in by_role) == sum(n for _, n in merged)
    seen_a |= {n for n in a_raw if n not in named}
    seen_b |= {n for n in b_raw if n not in named}
    if table == "ops":
        assert not by_role  # ops keep their framework names across vendors
    for row in rows:
        if row["matched_by"] == "role":
            assert row["name"].split(" kernels", 1)[0] in ROLES, row["name"]
            continue
        a_name = row["name"] if row["matched_by"] != "only in b" else None
        b_name = {"name": row["name"], "position": row["b_name"]}.get(row["matched_by"])
        if row["matched_by"] == "only in b":
            b_name = row["name"]
        a_ns, a_count = a_raw[a_name] if a_name else (0, 0)
        b_ns, b_count = b_raw[b_name] if b_name else (0, 0)
        assert (row["a_ns"], row["a_count"], row["b_ns"], row["b_count"]) == (
            a_ns,
            a_count,
            b_ns,
            b_count,
        ), row
        assert row["delta_ns"] == b_ns - a_ns
        seen_a.add(a_name)
        seen_b.add(b_name)
    # Every name of either file is in a row, once.
    assert set(a_raw) <= seen_a and set(b_raw) <= seen_b
    deltas = [abs(r["delta_ns"]) for r in rows]
    assert deltas == sorted(deltas, reverse=True)


def test_kernel_totals_cover_every_kernel(runs: dict[str, Any]) -> None:
    rows = runs["diff"]["kernels"]
    for side in ("a", "b"):
        raw = runs[f"{side}_kernels"].values()  # exact names: nothing merged
        assert sum(r[f"{side}_ns"] for r in rows) == sum(ns for ns, _ in raw)
        assert sum(r[f"{side}_count"] for r in rows) == sum(n for _, n in raw)
    # An A100 and a V100 run different GEMM kernels (paired by role), and share elementwise
    # and nccl kernels (by name).
    matched = {r["matched_by"] for r in rows}
    assert {"name", "role"} <= matched
    assert any(r["name"].startswith("GEMM kernels") for r in rows if r["matched_by"] == "role")


def test_summary_is_each_sides_report(runs: dict[str, Any]) -> None:
    summary = runs["diff"]["summary"]
    for key in ("wall_ns", "busy_ns", "idle_ns"):
        a_value = sum(_rank_value(r, key) for r in runs["a"].report()["ranks"])
        b_value = sum(_rank_value(r, key) for r in runs["b"].report()["ranks"])
        assert summary[key] == {
            "a": a_value,
            "b": b_value,
            "delta": b_value - a_value,
            "ratio": pytest.approx(b_value / a_value),
        }
    assert summary["busy_ns"]["a"] + summary["idle_ns"]["a"] == sum(
        r["gpu"]["window_ns"] for r in runs["a"].report()["ranks"]
    )
    for cause, change in summary["idle_by_cause"].items():
        assert change["a"] == runs["a"].report()["idle_by_cause"].get(cause, 0)
        assert change["b"] == runs["b"].report()["idle_by_cause"].get(cause, 0)


def _rank_value(rank: dict[str, Any], key: str) -> int:
    value: int = rank["wall_ns"] if key == "wall_ns" else rank["gpu"][key]
    return value


def test_every_hint_is_fixed_new_or_kept(runs: dict[str, Any]) -> None:
    hints = runs["diff"]["hints"]
    a_titles = {h["title"] for h in runs["a"].report()["hints"]}
    b_titles = {h["title"] for h in runs["b"].report()["hints"]}
    assert {e["a_title"] for e in hints["fixed"] + hints["kept"]} == a_titles
    assert {e["b_title"] for e in hints["new"] + hints["kept"]} == b_titles
    assert all(e["b_gain_ns"] is None for e in hints["fixed"])
    assert all(e["a_gain_ns"] is None for e in hints["new"])


def test_the_diff_follows_its_generated_schema(runs: dict[str, Any]) -> None:
    """docs/diff.schema.json, read by jsonschema (not msgspec), on this real pair: the JSON
    printed by `gpuprofile diff --format json` has what the schema says, sections included."""
    diff = json.loads(json.dumps(runs["diff"]))
    step = diff["summary"]["step_ns"]
    assert step["interval"] and step["verdict"] and diff["roofline"] and diff["notes"]
    document = json.loads(generated()[DIFF_SCHEMA_FILE])
    jsonschema.Draft202012Validator.check_schema(document)
    jsonschema.Draft202012Validator(document).validate(diff)


H100_QWEN = SHARED_TRACES / "kineto" / "tracelens_h100_qwen1.5_0.5b_inference.json.gz"
MI300_QWEN = SHARED_TRACES / "kineto" / "tracelens_mi300xvf_qwen1.5_0.5b_inference.json.gz"


def test_one_model_on_two_vendors_pairs_kernels_by_what_they_do(traces: Any) -> None:
    """Qwen1.5-0.5B inference on an H100 and on an MI300X (PROVENANCE.md): cuBLAS/CUTLASS GEMMs
    against hipBLASLt's Cijk_ kernels, FlashAttention's flash_fwd against attn_fwd. The sums
    come from the raw JSON by the vendors' own names (float microseconds: 1 ns of rounding a
    launch)."""
    a_path, b_path = require_trace(H100_QWEN), require_trace(MI300_QWEN)
    diff = gpuprofile.diff(a_path, b_path)
    rows = diff.to_dict()["kernels"]

    def raw(path: Any, chosen: Any) -> tuple[float, int]:
        events = traces.trace_events(orjson.loads(gzip.decompress(path.read_bytes())))
        picked = [e for e in events if e.get("cat") == "kernel" and chosen(e["name"])]
        return sum(float(e["dur"]) for e in picked) * 1000, len(picked)

    def role(prefix: str, side: str) -> tuple[int, int]:
        mine = [r for r in rows if r["matched_by"] == "role" and r["name"].startswith(prefix)]
        return sum(r[f"{side}_ns"] for r in mine), sum(r[f"{side}_count"] for r in mine)

    for prefix, in_a, in_b in (
        ("GEMM", lambda n: "gemm" in n.lower(), lambda n: n.startswith("Cijk_")),
        ("attention", lambda n: "flash_fwd" in n, lambda n: n == "attn_fwd"),
    ):
        for side, path, chosen in (("a", a_path, in_a), ("b", b_path, in_b)):
            ns, count = role(prefix, side)
            want_ns, want_count = raw(path, chosen)
            assert count == want_count, (prefix, side)
            assert abs(ns - want_ns) <= want_count, (prefix, side, ns, want_ns)
    # No GEMM or attention kernel is left "only in" one run.
    alone = [r["name"] for r in rows if r["matched_by"] in ("only in a", "only in b")]
    assert not [n for n in alone if re.search(r"gemm|Cijk_|flash|attn", n, re.I)], alone
    text = diff.text()
    assert "paired by what the kernels do" in text
    assert "op rows compare the GPU time of the kernels each op launched" in text
