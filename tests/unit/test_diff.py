"""gpuprofile.diff on two Kineto documents built here: a kernel made slower, one removed, one
added, a template kernel renamed by another library version (matched by normalized name), an
op and its kernel named for another vendor (matched by place in the op tree); hints fixed, new
and kept; the JSON keys; the command line's exit codes.

Expected numbers come from the documents' own events (microseconds, x1000 for ns).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

import gpuprofile
from gpuprofile.cli import main
from gpuprofile.report.diff import diff_runs, hint_key
from gpuprofile.report.diff_match import normalize_name
from gpuprofile.report.diff_side import side_of_trace
from gpuprofile.report.schema import Hint, Report, Roofline, RooflinePoint
from helpers import report_parts
from helpers.baseline_pair import pageable_events
from helpers.kineto_docs import cpu_op, document, kernel, runtime, write

US = 1000
MIB = 1 << 20
ADD_A = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>, "
    "at::detail::Array<char*, 3> >(int, at::native::AddFunctor<float>, "
    "at::detail::Array<char*, 3>)"
)
ADD_B = (
    "void at::native::vectorized_elementwise_kernel<8, at::native::AddFunctor<c10::Half>, "
    "std::array<char*, 3ul> >(int, at::native::AddFunctor<c10::Half>, std::array<char*, 3ul>)"
)

# Per run, per step: (op, op start, kernel name, kernel start, kernel dur), in op order. The
# conv op and its kernel are named for another vendor in b, at the same place in the tree.
A_STEP = [
    ("aten::mm", 10, ADD_A, 100, 20),
    ("myext::conv_cuda", 50, "ampere_scudnn_128x64_relu_tn", 130, 50),
    ("aten::relu", 90, "relu_kernel_removed", 190, 30),
    ("aten::slow", 130, "slow_kernel", 230, 40),
]
B_STEP = [
    ("aten::mm", 10, ADD_B, 100, 20),
    ("myext::conv_rocm", 50, "MIOpenConvFwd_v4r4_nchw", 130, 60),
    ("aten::slow", 130, "slow_kernel", 230, 90),
    ("aten::add", 170, "added_kernel", 330, 10),
]
STEP_US = 500


def run_events(step: list[tuple[str, int, str, int, int]], steps: int = 2) -> list[dict]:
    events: list[dict] = []
    corr = 0
    for n in range(steps):
        t0 = n * STEP_US
        events.append(
            {**cpu_op(f"ProfilerStep#{n + 1}", t0, STEP_US - 10), "cat": "user_annotation"}
        )
        for op, op_ts, name, k_ts, k_dur in step:
            corr += 1
            events.append(cpu_op(op, t0 + op_ts, 30))
            events.append(runtime("cudaLaunchKernel", t0 + op_ts + 5, 1, corr))
            events.append(kernel(name, t0 + k_ts, k_dur, corr))
    return events


def kernel_ns(events: list[dict], names: set[str]) -> tuple[int, int]:
    chosen = [e for e in events if e["cat"] == "kernel" and e["name"] in names]
    return sum(e["dur"] for e in chosen) * US, len(chosen)


def op_ns(events: list[dict], name: str) -> tuple[int, int]:
    """The GPU time of the kernels an op's calls launched (a launch call inside the op, its
    kernel by correlation id), and the calls: what the diff's op rows compare."""
    chosen = [e for e in events if e["cat"] == "cpu_op" and e["name"] == name]
    launches = [e for e in events if e["cat"] == "cuda_runtime"]
    kernel_dur = {e["args"]["correlation"]: e["dur"] for e in events if e["cat"] == "kernel"}
    gpu = sum(
        kernel_dur[call["args"]["correlation"]]
        for op in chosen
        for call in launches
        if op["ts"] <= call["ts"] and call["ts"] + call["dur"] <= op["ts"] + op["dur"]
    )
    return gpu * US, len(chosen)


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[dict], list[dict]]:
    folder = tmp_path_factory.mktemp("diff")
    a_events, b_events = run_events(A_STEP), run_events(B_STEP)
    a = write(folder / "a.json", document(a_events))
    b = write(folder / "b.json", document(b_events))
    return a, b, a_events, b_events


@pytest.fixture(scope="module")
def profiles(pair: Any) -> tuple[gpuprofile.Profile, gpuprofile.Profile]:
    """The pair loaded once (a Profile keeps its report): each test reads these."""
    return gpuprofile.load(pair[0]), gpuprofile.load(pair[1])


@pytest.fixture(scope="module")
def diffed(profiles: tuple[gpuprofile.Profile, gpuprofile.Profile]) -> gpuprofile.Diff:
    return gpuprofile.diff(*profiles)


def rows_by_name(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["name"]: r for r in rows}


def test_normalized_names_drop_templates_parameters_addresses_and_spaces() -> None:
    assert (
        normalize_name(ADD_A)
        == normalize_name(ADD_B)
        == ("at::native::vectorized_elementwise_kernel")
    )
    assert normalize_name("void f<(anonymous namespace)::X>(float*, int) [clone .kd]") == (
        "f [clone .kd]"
    )
    assert normalize_name("kernel_0x7f3a12  at\tend") == "kernel_ at end"
    assert normalize_name("aten::add_") == "aten::add_"
    assert normalize_name("(weird)") == "(weird)"  # nothing left: the name as written


def test_kernels_slower_removed_added_renamed_and_by_position(
    pair: Any, diffed: gpuprofile.Diff
) -> None:
    _, _, a_events, b_events = pair
    document_ = diffed.to_dict()
    rows = rows_by_name(document_["kernels"])

    slow_a, slow_b = kernel_ns(a_events, {"slow_kernel"}), kernel_ns(b_events, {"slow_kernel"})
    assert rows["slow_kernel"]["a_ns"] == slow_a[0]
    assert rows["slow_kernel"]["b_ns"] == slow_b[0]
    assert rows["slow_kernel"]["delta_ns"] == slow_b[0] - slow_a[0] > 0
    assert rows["slow_kernel"]["matched_by"] == "name"

    add = rows["at::native::vectorized_elementwise_kernel"]
    assert add["matched_by"] == "name"
    assert (add["a_ns"], add["a_count"]) == kernel_ns(a_events, {ADD_A})
    assert (add["b_ns"], add["b_count"]) == kernel_ns(b_events, {ADD_B})

    removed = rows["relu_kernel_removed"]
    assert removed["matched_by"] == "only in a"
    assert (removed["a_ns"], removed["a_count"]) == kernel_ns(a_events, {"relu_kernel_removed"})
    assert (removed["b_ns"], removed["b_count"]) == (0, 0)
    added = rows["added_kernel"]
    assert added["matched_by"] == "only in b"
    assert (added["b_ns"], added["b_count"]) == kernel_ns(b_events, {"added_kernel"})

    conv = rows["ampere_scudnn_128x64_relu_tn"]
    assert conv["matched_by"] == "position"
    assert conv["b_name"] == "MIOpenConvFwd_v4r4_nchw"
    assert conv["a_ns"] == kernel_ns(a_events, {"ampere_scudnn_128x64_relu_tn"})[0]
    assert conv["b_ns"] == kernel_ns(b_events, {"MIOpenConvFwd_v4r4_nchw"})[0]
    assert "MIOpenConvFwd_v4r4_nchw" not in rows  # paired, not listed again
    assert len(document_["kernels"]) == 5

    deltas = [abs(r["delta_ns"]) for r in document_["kernels"]]
    assert deltas == sorted(deltas, reverse=True)


def test_ops_match_by_name_and_by_place_in_the_tree(pair: Any, diffed: gpuprofile.Diff) -> None:
    _, _, a_events, b_events = pair
    rows = rows_by_name(diffed.to_dict()["ops"])
    for name in ("aten::mm", "aten::slow"):
        assert rows[name]["matched_by"] == "name"
        assert (rows[name]["a_ns"], rows[name]["a_count"]) == op_ns(a_events, name)
        assert (rows[name]["b_ns"], rows[name]["b_count"]) == op_ns(b_events, name)
    conv = rows["myext::conv_cuda"]
    assert (conv["matched_by"], conv["b_name"]) == ("position", "myext::conv_rocm")
    assert rows["aten::relu"]["matched_by"] == "only in a"  # a different place from aten::add
    assert rows["aten::add"]["matched_by"] == "only in b"
    # Annotations are not ranked ops (the report's top_ops neither).
    assert not any(name.startswith("ProfilerStep") for name in rows)
    # The note counts the rows so matched, as a count of rows ("1 row", not "1 rows").
    document_ = diffed.to_dict()
    paired = [r for t in ("kernels", "ops") for r in document_[t] if r["matched_by"] == "position"]
    assert len(paired) == 2
    assert "2 rows matched by place in the op tree (the names differ)" in document_["notes"]


def test_summary_from_the_documents(pair: Any, diffed: gpuprofile.Diff) -> None:
    _, _, a_events, b_events = pair
    summary = diffed.to_dict()["summary"]

    def figures(events: list[dict]) -> tuple[int, int, int]:
        timed = [e for e in events if e["ph"] == "X"]
        wall = max(e["ts"] + e["dur"] for e in timed) - min(e["ts"] for e in timed)
        kernels = [e for e in events if e["cat"] == "kernel"]  # one stream, none overlap
        busy = sum(e["dur"] for e in kernels)
        window = max(e["ts"] + e["dur"] for e in kernels) - min(e["ts"] for e in kernels)
        return wall * US, busy * US, (window - busy) * US

    for key, a_value, b_value in zip(
        ("wall_ns", "busy_ns", "idle_ns"), figures(a_events), figures(b_events), strict=True
    ):
        assert summary[key] == {
            "a": a_value,
            "b": b_value,
            "delta": b_value - a_value,
            "ratio": pytest.approx(b_value / a_value),
        }
    # Host ProfilerStep ranges (no GPU step markers in these documents): all STEP_US - 10.
    step = summary["step_ns"]
    assert (step["a"], step["b"], step["delta"]) == ((STEP_US - 10) * US, (STEP_US - 10) * US, 0)
    assert step["source"] == {"a": "host ProfilerStep ranges", "b": "host ProfilerStep ranges"}
    assert isinstance(summary["idle_by_cause"], dict)
    for change in summary["idle_by_cause"].values():
        assert change["delta"] == change["b"] - change["a"]


def test_a_cpu_only_side_has_no_gpu_figures(tmp_path: Path, profiles: Any) -> None:
    cpu_only = write(tmp_path / "cpu.json", document([cpu_op("aten::mm", 0, 10)]))
    summary = gpuprofile.diff(cpu_only, profiles[0]).to_dict()["summary"]
    # Unknown, not 0: a CPU capture measured no GPU time.
    assert summary["busy_ns"]["a"] is None and summary["busy_ns"]["ratio"] is None
    assert summary["busy_ns"]["b"] == profiles[0].report()["ranks"][0]["gpu"]["busy_ns"]
    assert summary["step_ns"] is None  # a has no steps


def test_json_keys_are_the_schema(diffed: gpuprofile.Diff) -> None:
    document_ = diffed.to_dict()
    json.dumps(document_)  # plain JSON types
    assert document_["schema"] == "gpuprofile.diff/1"
    assert {"summary", "ops", "kernels", "hints", "roofline"} <= set(document_)
    for key in ("wall_ns", "busy_ns", "idle_ns"):
        assert set(document_["summary"][key]) == {"a", "b", "delta", "ratio"}
    issue_row = {"name", "a_ns", "b_ns", "delta_ns", "a_count", "b_count"}
    for table in ("ops", "kernels"):
        for row in document_[table]:
            assert set(row) == issue_row | {"matched_by", "b_name", "label", "b_label"}
    assert set(document_["hints"]) == {"fixed", "new", "kept", "unjudged"}


# --- hints: the pageable-copy scenario of test_detectors_host -----------------------------


def pageable_hint(report: dict[str, Any]) -> dict[str, Any]:
    (hint,) = [h for h in report["hints"] if h["kind"] == "pageable-copy"]
    return hint


def test_hints_fixed_new_and_kept(tmp_path: Path) -> None:
    slow = gpuprofile.load(write(tmp_path / "slow.json", document(pageable_events(2000))))
    slower = gpuprofile.load(write(tmp_path / "slower.json", document(pageable_events(3000))))
    pinned = gpuprofile.load(
        write(tmp_path / "pinned.json", document(pageable_events(200, pinned_side_stream=True)))
    )
    assert not [h for h in pinned.report()["hints"] if h["kind"] == "pageable-copy"]
    before = pageable_hint(slow.report())

    fixed = gpuprofile.diff(slow, pinned).to_dict()["hints"]
    (entry,) = [e for e in fixed["fixed"] if e["kind"] == "pageable-copy"]
    assert (entry["a_gain_ns"], entry["b_gain_ns"]) == (before["gain_ns"], None)
    assert not [e for e in fixed["new"] + fixed["kept"] if e["kind"] == "pageable-copy"]

    new = gpuprofile.diff(pinned, slow).to_dict()["hints"]
    (entry,) = [e for e in new["new"] if e["kind"] == "pageable-copy"]
    assert (entry["a_gain_ns"], entry["b_gain_ns"]) == (None, before["gain_ns"])

    after = pageable_hint(slower.report())
    assert after["title"] != before["title"]  # the numbers differ; the key does not
    kept = gpuprofile.diff(slow, slower).to_dict()["hints"]
    (entry,) = [e for e in kept["kept"] if e["kind"] == "pageable-copy"]
    assert (entry["a_gain_ns"], entry["b_gain_ns"]) == (before["gain_ns"], after["gain_ns"])
    assert (entry["a_title"], entry["b_title"]) == (before["title"], after["title"])


def test_hint_key_ignores_numbers_units_and_plurals() -> None:
    def hint(kind: str, rank: int, title: str) -> Hint:
        return Hint(kind, title, "low", 0, "", "low", "", {}, [], "", [], rank, [])

    one = hint("pageable-copy", 0, "1 pageable copy (8.39 MB) took 2.00 ms")
    more = hint("pageable-copy", 0, "3 pageable copies (25.2 MB) took 612 µs")
    assert hint_key(one) == hint_key(more)
    assert hint_key(one) != hint_key(hint("pageable-copy", 1, one.title))
    assert hint_key(one) != hint_key(hint("gpu-idle", 0, one.title))


def test_roofline_points_that_moved(profiles: Any) -> None:
    a_profile, b_profile = profiles
    point = report_parts.point(key="aten::mm|[[8, 8]]", pct_of_roof=40.0, achieved_flops_per_s=1e12)

    def with_points(profile: Any, *points: dict[str, Any]) -> Report:
        parts = [msgspec.convert(p, RooflinePoint) for p in points]
        roofline = Roofline(coverage=None, points=parts, missing_flops="")
        return msgspec.structs.replace(profile.typed_report(), roofline=roofline)

    a_report = with_points(a_profile, point, {**point, "key": "k2"})
    moved = {**point, "pct_of_roof": 50.0}  # +25%
    still = {**point, "key": "k2", "pct_of_roof": 43.0, "achieved_flops_per_s": 1.05e12}  # <10%
    b_report = with_points(b_profile, moved, still)
    result = diff_runs(
        side_of_trace(a_profile.trace, a_report), side_of_trace(b_profile.trace, b_report)
    ).to_dict()
    assert [p["key"] for p in result["roofline"]] == ["aten::mm|[[8, 8]]"]
    assert (
        result["roofline"][0]["a"]["pct_of_roof"],
        result["roofline"][0]["b"]["pct_of_roof"],
    ) == (
        40.0,
        50.0,
    )


def test_text_has_summary_rows_and_hints(diffed: gpuprofile.Diff) -> None:
    text = str(diffed)
    assert text.startswith("gpuprofile diff")
    for label in ("wall", "GPU busy", "GPU idle", "step (median)", "Kernels:", "Ops:"):
        assert label in text
    assert "slow_kernel" in text and "(by position)" in text and "(only in a)" in text
    assert "+100 µs" in text  # slow_kernel: 2 x (90 - 40) us
    assert text.count("\n") < 60  # compact


# --- the command line ---------------------------------------------------------------------


def test_cli_diff_prints_json_and_text(
    pair: Any, diffed: gpuprofile.Diff, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b, _, _ = pair
    assert main(["diff", str(a), str(b), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == diffed.to_dict()


@pytest.mark.parametrize(
    ("ref", "says"),
    [
        ("last", "no runs recorded yet"),
        ("my-baseline", "no runs recorded yet"),
        ("missing/run.json", "no such file"),
    ],
)
def test_cli_diff_bad_reference_exits_2_with_one_line(
    pair: Any,
    ref: str,
    says: str,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GPUPROFILE_HISTORY", str(tmp_path / "empty.sqlite"))
    _, b, _, _ = pair
    assert main(["diff", ref, str(b)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and captured.err.startswith("gpuprofile: error:")
    assert says in captured.err


def test_cli_diff_damaged_trace_exits_2(pair: Any, capsys: pytest.CaptureFixture[str]) -> None:
    a, _, _, _ = pair
    damaged = a.parent / "damaged.json"
    damaged.write_text('{"traceEvents": [')
    assert main(["diff", str(a), str(damaged), "--format", "text"]) == 2
    assert capsys.readouterr().err.startswith("gpuprofile: error:")


def test_diff_refuses_what_is_not_a_run() -> None:
    with pytest.raises(gpuprofile.GpuprofileError, match="cannot compare a int"):
        gpuprofile.diff(42, 43)  # type: ignore[arg-type]


def test_instantiations_found_in_both_runs_stay_apart(tmp_path: Path) -> None:
    step = [("aten::add", 10, "k<1>(int)", 100, 20), ("aten::mul", 50, "k<2>(int)", 130, 30)]
    slower = [("aten::add", 10, "k<1>(int)", 100, 25), ("aten::mul", 50, "k<2>(int)", 130, 30)]
    a = write(tmp_path / "a.json", document(run_events(step, steps=1)))
    b = write(tmp_path / "b.json", document(run_events(slower, steps=1)))
    rows = rows_by_name(gpuprofile.diff(a, b).to_dict()["kernels"])
    assert set(rows) == {"k<1>(int)", "k<2>(int)"}
    assert rows["k<1>(int)"]["delta_ns"] == 5 * US and rows["k<2>(int)"]["delta_ns"] == 0


def test_percentages_of_different_roofs_are_not_compared(profiles: Any) -> None:
    """An op memory-bound on one GPU and compute-bound on another: its % of roof is of two
    roofs, so only its FLOP/s decide whether it moved, and the text says so."""
    a_profile, b_profile = profiles
    on_dram = report_parts.point(
        key="aten::mm|[[8, 8]]", pct_of_roof=40.0, achieved_flops_per_s=1e12, roof="dram"
    )

    def with_points(profile: Any, *points: dict[str, Any]) -> Report:
        parts = [msgspec.convert(p, RooflinePoint) for p in points]
        roofline = Roofline(coverage=None, points=parts, missing_flops="")
        return msgspec.structs.replace(profile.typed_report(), roofline=roofline)

    a_report = with_points(a_profile, on_dram, {**on_dram, "key": "k2"})
    # Same FLOP/s, 40% -> 80% of another roof: not moved. Twice the FLOP/s: moved.
    same_rate = {**on_dram, "pct_of_roof": 80.0, "roof": "bf16"}
    faster = {
        **on_dram,
        "key": "k2",
        "pct_of_roof": 45.0,
        "roof": "bf16",
        "achieved_flops_per_s": 2e12,
    }
    b_report = with_points(b_profile, same_rate, faster)
    diffed = diff_runs(
        side_of_trace(a_profile.trace, a_report), side_of_trace(b_profile.trace, b_report)
    )
    result = diffed.to_dict()
    assert [p["key"] for p in result["roofline"]] == ["k2"]
    assert (result["roofline"][0]["a"]["roof"], result["roofline"][0]["b"]["roof"]) == (
        "dram",
        "bf16",
    )
    assert "% of roof not compared (dram roof -> bf16 roof)" in diffed.text()


def test_a_hint_the_other_vendor_cannot_judge_is_not_fixed() -> None:
    """A pageable-copy hint of a CUDA run, beside a ROCm run (whose copies are never labelled
    pageable): unjudged, not fixed. A hint any run can judge is still fixed."""
    from gpuprofile.report.diff import _hints

    def hint(kind: str, title: str) -> Hint:
        return Hint(kind, title, "low", 1000, "", "low", "", {}, [], "", [], 0, [])

    copies = hint("pageable-copy", "3 pageable copies (25.2 MB) took 612 µs")
    syncs = hint("sync-stall", "Syncs leave the GPU idle 2% of the window")
    on_rocm = _hints([copies, syncs], [], with_rank=False, b_can=set())
    assert [e.kind for e in on_rocm.unjudged] == ["pageable-copy"]
    assert [e.kind for e in on_rocm.fixed] == ["sync-stall"]
    on_cuda = _hints([copies, syncs], [], with_rank=False, b_can={"pageable-copy", "low-occupancy"})
    assert sorted(e.kind for e in on_cuda.fixed) == ["pageable-copy", "sync-stall"]
    assert on_cuda.unjudged == []
    # Uncoalesced accesses show only in Nsight Compute's counters: a Kineto run cannot say.
    strided = hint("uncoalesced-access", "1 kernel launch with uncoalesced global accesses")
    on_kineto = _hints([strided], [], with_rank=False, b_can={"pageable-copy"})
    assert [e.kind for e in on_kineto.unjudged] == ["uncoalesced-access"]
    on_ncu = _hints([strided], [], with_rank=False, b_can={"uncoalesced-access"})
    assert [e.kind for e in on_ncu.fixed] == ["uncoalesced-access"]
