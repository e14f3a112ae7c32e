"""Nsight Compute CSVs written here in each shape ncu writes, so every expected figure is known:
the details page (long, with a preamble, BOM, CRLF and thousands separators), the raw page (wide,
with its unit row and "n/a"), damaged files, and the join onto a Kineto capture."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import numpy as np
import pytest

import gpuprofile
from gpuprofile.cli import main
from gpuprofile.hardware.match import hardware_for_trace
from gpuprofile.importers.formats import detect_format
from gpuprofile.importers.ncu import load_ncu
from gpuprofile.importers.ncu_join import base_key, full_key
from helpers.kineto_docs import document, kernel, runtime, write

GEMM = "void gemm_kernel<float, 64>(const float *, const float *, float *, int)"
AXPY = "void ns::axpy_kernel(float, const float *, float *, int)"
LONG_HEADER = [
    "ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
    "Block Size", "Grid Size", "Device", "CC", "Section Name", "Metric Name", "Metric Unit",
    "Metric Value",
]  # fmt: skip


def _csv_text(rows: list[list[str]]) -> str:
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\r\n").writerows(rows)
    return out.getvalue()


def _long_rows(launch: int, name: str, metrics: list[tuple[str, str, str]]) -> list[list[str]]:
    identity = [str(launch), "4242", "app", "127.0.0.1", name, "1", "7", "(256, 1, 1)",
                "(1024, 2, 1)", "0", "9.0"]  # fmt: skip
    return [[*identity, "Command line profiler metrics", *metric] for metric in metrics]


def _sass(f_add: int, f_mul: int, f_fma: int, d_fma: int) -> list[tuple[str, str, str]]:
    op = "smsp__sass_thread_inst_executed_op_{}_pred_on.sum"
    return [
        (op.format("fadd"), "inst", f"{f_add:,}"),
        (op.format("fmul"), "inst", f"{f_mul:,}"),
        (op.format("ffma"), "inst", f"{f_fma:,}"),
        (op.format("dfma"), "inst", f"{d_fma:,}"),
    ]


def details_csv(path: Path) -> Path:
    """Two GEMM launches and one axpy: times in three units, bytes in two, SASS counts."""
    rows = [LONG_HEADER]
    rows += _long_rows(0, GEMM, [
        ("gpu__time_duration.sum", "usecond", "1,250.5"),
        ("dram__bytes_read.sum", "Mbyte", "2.5"),
        ("dram__bytes_write.sum", "Kbyte", "500"),
        ("sm__throughput.avg.pct_of_peak_sustained_elapsed", "%", "81.2"),
        ("sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active", "%", "0"),
        ("sm__warps_active.avg.pct_of_peak_sustained_active", "%", "45.5"),
        ("launch__registers_per_thread", "register/thread", "64"),
        *_sass(1_000, 2_000, 3_000_000, 0),
    ])  # fmt: skip
    rows += _long_rows(1, AXPY, [
        ("gpu__time_duration.sum", "nsecond", "823,404"),
        ("dram__bytes.sum", "byte", "823,404,288"),
        ("dram__throughput.avg.pct_of_peak_sustained_elapsed", "%", "91.0"),
    ])  # fmt: skip
    rows += _long_rows(2, GEMM, [
        ("gpu__time_duration.sum", "msecond", "1.5"),
        ("dram__bytes_read.sum", "Gbyte", "0.001"),
        ("dram__bytes_write.sum", "byte", "n/a"),
        *_sass(0, 0, 1_000_000, 10),
    ])  # fmt: skip
    preamble = (
        "==PROF== Connected to process 4242\r\n"
        "device: NVIDIA H100 80GB HBM3 (sm_90), 132 SMs, 1.98 GHz\r\n"
    )
    path.write_bytes(b"\xef\xbb\xbf" + (preamble + _csv_text(rows)).encode())
    return path


def raw_csv(path: Path) -> Path:
    """The raw page: one row per launch, a unit row under the header, cycles without time."""
    header = ["ID", "Kernel Name", "Device", "CC", "Grid Size", "Block Size",
              "device__attribute_display_name", "device__attribute_multiprocessor_count",
              "device__attribute_clock_rate", "device__attribute_memory_clock_rate",
              "device__attribute_global_memory_bus_width", "gpu__time_duration.sum",
              "sm__cycles_elapsed.avg", "dram__bytes_read.sum", "dram__bytes_write.sum",
              "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum"]  # fmt: skip
    units = ["", "", "", "", "", "", "", "", "khz", "khz", "bit", "nsecond", "cycle", "Kbyte",
             "Kbyte", "inst"]  # fmt: skip
    launches = [
        ["0", AXPY, "0", "8.0", "(4, 1, 1)", "(128, 1, 1)", "NVIDIA A100-SXM4-80GB", "108",
         "1410000", "1593000", "5120", "2,000", "2820", "40", "8", "n/a"],
        ["1", AXPY, "0", "8.0", "(4, 1, 1)", "(128, 1, 1)", "NVIDIA A100-SXM4-80GB", "108",
         "1410000", "1593000", "5120", "n/a", "2820", "40", "8", "512"],
    ]  # fmt: skip
    path.write_text(_csv_text([header, units, *launches]))
    return path


def test_details_page_launches_in_id_order(tmp_path: Path) -> None:
    trace = load_ncu(details_csv(tmp_path / "gemm.csv"))
    k = trace.kernels
    assert trace.meta.source.format == "ncu"
    assert k["name"].astype(str).tolist() == [GEMM, AXPY, GEMM]
    assert k["dur_ns"].tolist() == [1_250_500, 823_404, 1_500_000]
    assert k["start_ns"].tolist() == [0, 1_250_500, 1_250_500 + 823_404]
    assert k["bytes"].tolist() == [2_500_000 + 500_000, 823_404_288, 1_000_000]
    assert k["flops"].tolist() == [
        1_000 + 2_000 + 2 * 3_000_000,
        pytest.approx(math.nan, nan_ok=True),
        2 * 1_000_000 + 2 * 10,
    ]
    assert (k["grid_x"].tolist(), k["grid_y"].tolist(), k["block_x"].tolist()) == (
        [1024] * 3, [2] * 3, [256] * 3
    )  # fmt: skip
    assert k["registers_per_thread"].tolist() == [64, -1, -1]
    assert k["occupancy"].tolist()[0] == 45.5
    first = k["metrics"].iloc[0]
    assert first["sm_throughput_pct"] == 81.2 and first["tensor_pipe_pct"] == 0
    assert first["fp32_flops"] == 1_000 + 2_000 + 2 * 3_000_000
    assert k["metrics"].iloc[1]["dram_throughput_pct"] == 91.0
    assert k["metrics"].iloc[2]["fp64_flops"] == 20
    device = trace.devices(0)[0]
    assert (device["name"], device["sm_count"], device["compute_capability"]) == (
        "NVIDIA H100 80GB HBM3", 132, "9.0"
    )  # fmt: skip
    assert any("replays each launch in isolation" in note for note in trace.meta.notes)


def test_raw_page_with_unit_row_and_na(tmp_path: Path) -> None:
    trace = load_ncu(raw_csv(tmp_path / "raw.csv"))
    k = trace.kernels
    assert len(k) == 2
    # Launch 1 has no time: 2820 cycles at the 1.41 GHz device clock.
    assert k["dur_ns"].tolist() == [2_000, round(2820 / 1.41e9 * 1e9)]
    assert k["bytes"].tolist() == [48_000, 48_000]
    assert math.isnan(k["flops"].iloc[0]) and k["flops"].iloc[1] == 1024
    assert k["grid_x"].tolist() == [4, 4] and k["block_x"].tolist() == [128, 128]
    props = trace.devices(0)[0]["properties"]
    assert (props["numSms"], props["clockRate"], props["memoryBusWidth"]) == (108, 1410000, 5120)
    hardware = hardware_for_trace(trace)
    assert hardware.source == "datasheet" and hardware.dram_bytes_per_s


def test_tensor_pipe_busy_leaves_flops_unmeasured(tmp_path: Path) -> None:
    rows = [LONG_HEADER, *_long_rows(0, GEMM, [
        ("gpu__time_duration.sum", "nsecond", "100"),
        ("sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active", "%", "62.5"),
        *_sass(1, 1, 1, 0),
    ])]  # fmt: skip
    path = tmp_path / "mma.csv"
    path.write_text(_csv_text(rows))
    k = load_ncu(path).kernels
    assert math.isnan(k["flops"].iloc[0])
    assert k["metrics"].iloc[0]["tensor_pipe_pct"] == 62.5


def test_report_json_roofline_points_are_measured(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = details_csv(tmp_path / "gemm.csv")
    assert main(["report", str(path), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["source"]["format"] == "ncu"
    points = {p["name"]: p for p in report["roofline"]["points"]}
    gemm = points[GEMM]
    assert gemm["level"] == "kernel" and gemm["flops_source"] == "measured"
    assert gemm["flops"] == 1_000 + 2_000 + 2 * 3_000_000 + 2 * 1_000_000 + 20
    assert gemm["bytes"] == 3_000_000 + 1_000_000
    assert gemm["bound"] in ("compute", "memory")
    assert points[AXPY]["flops_source"] == "unknown"


def test_renamed_file_is_detected_by_content(tmp_path: Path) -> None:
    path = details_csv(tmp_path / "gemm.csv").rename(tmp_path / "profile.txt")
    assert detect_format(path) == "ncu"
    assert gpuprofile.load(path).trace.meta.source.format == "ncu"


def _header_only(tmp: Path) -> Path:
    path = tmp / "nometrics.csv"
    path.write_text(_csv_text([["ID", "Process ID", "Kernel Name", "Context", "Stream"],
                               ["0", "1", "k", "1", "7"]]))  # fmt: skip
    return path


def _bad_value(tmp: Path) -> Path:
    rows = [LONG_HEADER, *_long_rows(0, GEMM, [("gpu__time_duration.sum", "nsecond", "fast")])]
    path = tmp / "badvalue.csv"
    path.write_text("some program output\n" + _csv_text(rows))
    return path


def _no_time(tmp: Path) -> Path:
    rows = [LONG_HEADER, *_long_rows(3, GEMM, [("dram__bytes.sum", "byte", "10")])]
    path = tmp / "notime.csv"
    path.write_text(_csv_text(rows))
    return path


def _no_rows(tmp: Path) -> Path:
    path = tmp / "norows.csv"
    path.write_text(_csv_text([LONG_HEADER]))
    return path


DAMAGED = {
    "header without metrics": (_header_only, "no columns 'Metric Name', 'Metric Unit'"),
    "value that is not a number": (
        _bad_value,
        "line 3: metric 'gpu__time_duration.sum': value 'fast' is not a number",
    ),
    "launch without a time": (_no_time, "launch ID 3 has neither a duration"),
    "header and nothing else": (_no_rows, "followed by no launches"),
}


@pytest.mark.parametrize("case", DAMAGED, ids=list(DAMAGED))
def test_damaged_csv_exits_2_with_one_line(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make, problem = DAMAGED[case]
    path = make(tmp_path)
    assert main(["report", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.startswith(f"gpuprofile: error: {path}: ") and problem in err, err


def test_csv_of_something_else_names_the_missing_header(tmp_path: Path) -> None:
    path = tmp_path / "other.csv"
    path.write_text('"ID","Kernel Name"\n')  # detected as ncu, but no metrics at all
    with pytest.raises(gpuprofile.TraceFormatError, match="without metrics"):
        load_ncu(path)
    other = tmp_path / "sales.csv"
    other.write_text("region,total\nnorth,3\n")
    with pytest.raises(gpuprofile.TraceFormatError, match="no header line with the columns"):
        load_ncu(other)


def test_name_keys_bridge_the_tools_spellings() -> None:
    kineto = "void at::native::(anonymous namespace)::k<4, float>(int, float*)"
    assert full_key(kineto) == full_key("at::native::<unnamed>::k<4,float>")
    assert base_key(kineto) == base_key("k") == "k"
    assert full_key("void f<(int)2>(int)") == "f<(int)2>"


def test_kineto_capture_gets_ncu_measurements_by_name_and_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Kineto spells names with spaces its own way; ncu profiled launches 0..2 of four kernels.
    kineto_gemm = "void gemm_kernel<float, 64>(float const*, float const*, float*, int)"
    kineto_axpy = "void ns::axpy_kernel(float, float const*, float*, int)"
    events = []
    for i, name in enumerate([kineto_gemm, kineto_axpy, kineto_gemm, kineto_gemm]):
        events += [runtime("cudaLaunchKernel", 10 + 100 * i, 5, corr=i + 1),
                   kernel(name, 20 + 100 * i, 50, corr=i + 1)]  # fmt: skip
    trace_path = write(tmp_path / "run.json", document(events))
    ncu_path = details_csv(tmp_path / "gemm.csv")
    profile = gpuprofile.load(trace_path, ncu=ncu_path)
    k = profile.trace.kernels.sort_values("start_ns")
    assert profile.trace.meta.source.format == "kineto"
    flops = k["flops"].to_numpy()
    assert flops[0] == 1_000 + 2_000 + 2 * 3_000_000  # ncu launch 0
    assert math.isnan(flops[1])  # axpy: measured bytes, no SASS counts
    assert k["bytes"].iloc[1] == 823_404_288
    assert flops[2] == 2 * 1_000_000 + 20  # ncu launch 2, the second gemm
    assert np.isnan(flops[3]) and np.isnan(k["bytes"].iloc[3])  # not profiled
    note = profile.trace.meta.notes[-1]
    assert "3 of 3 profiled launches matched" in note and "1 of the trace's 4 kernels" in note
    assert main(["report", str(trace_path), "--ncu", str(ncu_path), "--format", "json"]) == 0
    points = json.loads(capsys.readouterr().out)["roofline"]["points"]
    gemm = next(p for p in points if p["level"] == "kernel" and p["name"] == kineto_gemm)
    assert gemm["flops_source"] == "measured" and gemm["count"] == 3
    assert gemm["flops"] == 1_000 + 2_000 + 2 * 3_000_000 + 2 * 1_000_000 + 20


def test_a_details_page_with_rule_columns_and_launch_sections(tmp_path: Path) -> None:
    """A recent ncu's details page: the header ends with five rule columns that metric rows
    leave off, and rule rows (no metric) sit among Launch Statistics and Occupancy rows."""
    header = [*LONG_HEADER, "Rule Name", "Rule Type", "Rule Description",
              "Estimated Speedup Type", "Estimated Speedup"]  # fmt: skip
    identity = ["0", "4242", "app", "127.0.0.1", GEMM, "1", "7", "(384, 1, 1)", "(9, 32, 1)",
                "0", "10.0"]  # fmt: skip
    metric_rows = [
        ("GPU Speed Of Light Throughput", "Duration", "usecond", "406.24"),
        ("GPU Speed Of Light Throughput", "DRAM Throughput", "%", "0.74"),
        ("Launch Statistics", "Block Size", "", "384"),
        ("Launch Statistics", "Cluster Scheduling Policy", "", "PolicySpread"),
        ("Launch Statistics", "Registers Per Thread", "register/thread", "168"),
        ("Occupancy", "Theoretical Occupancy", "%", "12.5"),
    ]
    lines = [",".join(f'"{c}"' for c in header)]
    for section, name, unit, value in metric_rows:
        # Metric rows stop after their value, with a trailing comma, as ncu writes them.
        lines.append(",".join(f'"{c}"' for c in [*identity, section, name, unit, value]) + ",")
    rule = [*identity, "LaunchStats", "", "", "", "LaunchConfiguration", "OPT", "a tail", "", ""]
    lines.insert(4, ",".join(f'"{c}"' for c in rule))
    path = tmp_path / "details.csv"
    path.write_text("\n".join(lines) + "\n")
    kernels = load_ncu(path).kernels
    assert len(kernels) == 1
    assert int(kernels["dur_ns"].iat[0]) == 406_240
    metrics = kernels["metrics"].iat[0]
    metrics = json.loads(metrics) if isinstance(metrics, str) else metrics
    assert metrics["Registers Per Thread"] == 168


def test_sass_counts_under_their_sm_level_names(tmp_path: Path) -> None:
    """sm__sass_* are the smsp__ counts summed per SM: an FP64 kernel counted so has FLOPs."""
    rows = [LONG_HEADER]
    op = "sm__sass_thread_inst_executed_op_{}_pred_on.sum"
    rows += _long_rows(0, AXPY, [
        ("gpu__time_duration.sum", "usecond", "10"),
        (op.format("dadd"), "inst", "1,000"),
        (op.format("dmul"), "inst", "2,000"),
        (op.format("dfma"), "inst", "3,000"),
    ])  # fmt: skip
    path = tmp_path / "fp64.csv"
    path.write_text(_csv_text(rows))
    kernels = load_ncu(path).kernels
    assert float(kernels["flops"].iat[0]) == 1_000 + 2_000 + 2 * 3_000


def test_missing_metrics_are_named_as_missing(tmp_path: Path) -> None:
    rows = [LONG_HEADER, *_long_rows(0, AXPY, [("gpu__time_duration.sum", "usecond", "10")])]
    path = tmp_path / "time_only.csv"
    path.write_text(_csv_text(rows))
    gauges = {g["key"]: g for g in gpuprofile.load(path).report()["gauges"]}
    assert "the file has no DRAM byte metrics" in gauges["dram-bandwidth"]["note"]
    assert "the file has no SASS op counts" in gauges["compute"]["note"]


def test_a_launch_under_one_wave_capped_by_registers(tmp_path: Path) -> None:
    """A paged-decode-like launch: 204 blocks on 132 SMs, two blocks per SM by its registers
    (Nsight Compute's occupancy limits), so 204 / 264 = 0.77 of one wave."""
    from gpuprofile.analyses.detectors import detector

    identity = ["0", "4242", "app", "127.0.0.1", "void paged_decode<128>(float *)", "1", "7",
                "(256, 1, 1)", "(204, 1, 1)", "0", "9.0"]  # fmt: skip
    metrics = [
        ("gpu__time_duration.sum", "usecond", "100"),
        ("launch__occupancy_limit_registers", "block", "2"),
        ("launch__occupancy_limit_shared_mem", "block", "8"),
        ("launch__occupancy_limit_warps", "block", "8"),
        ("launch__occupancy_limit_blocks", "block", "32"),
        ("launch__sm_count", "SM", "132"),
        ("launch__waves_per_multiprocessor", "", "0.77"),
    ]
    rows = [LONG_HEADER, *([*identity, "Launch Statistics", *m] for m in metrics)]
    path = tmp_path / "decode.csv"
    path.write_text("device: NVIDIA H100 80GB HBM3 (sm_90), 132 SMs, 1.98 GHz\n" + _csv_text(rows))
    profile = gpuprofile.load(path)
    (hint,) = detector("low_occupancy")(profile.analysis)
    waves = 204 / (132 * 2)
    assert hint.gain_ns == int(0.5 * 100_000 * (1 - waves))  # half the idle share of one wave
    assert "0.77 waves of 132x2 blocks (blocks per SM capped at 2 by registers)" in hint.explanation
    assert any("__launch_bounds__" in f for f in hint.fix)


def _access_csv(path: Path, counts: dict[str, tuple[int, int]]) -> Path:
    """One 100 us launch with global sector and request counts per direction ("ld", "st")."""
    metrics = [("gpu__time_duration.sum", "usecond", "100")]
    for direction, (sectors, requests) in counts.items():
        metrics += [
            (f"l1tex__t_sectors_pipe_lsu_mem_global_op_{direction}.sum", "sector", f"{sectors:,}"),
            (f"l1tex__t_requests_pipe_lsu_mem_global_op_{direction}.sum", "", f"{requests:,}"),
        ]
    path.write_text(_csv_text([LONG_HEADER, *_long_rows(0, AXPY, metrics)]))
    return path


@pytest.mark.parametrize(
    ("counts", "ideal", "excess"),
    [
        # Loads coalesced at 4 a request, stores 8 a request: 2x, half their sectors wasted.
        ({"ld": (4_000, 1_000), "st": (8_000, 1_000)}, 4, 8_000 - 4 * 1_000),
        # One direction counted: 16 sectors is the widest coalesced request; 32 is twice that.
        ({"st": (32_000, 1_000)}, 16, 32_000 - 16 * 1_000),
        ({"st": (16_000, 1_000)}, 16, None),  # 16-byte accesses, coalesced: nothing to say
        ({"ld": (8_000, 1_000), "st": (8_000, 1_000)}, 8, None),  # both alike: 8-byte accesses
    ],
)
def test_uncoalesced_accesses_from_sector_counts(
    tmp_path: Path, counts: dict[str, tuple[int, int]], ideal: int, excess: int | None
) -> None:
    from gpuprofile.analyses.context import Analysis
    from gpuprofile.analyses.detectors import uncoalesced

    trace = load_ncu(_access_csv(tmp_path / "k.csv", counts))
    hints = uncoalesced.detect(Analysis(trace, hardware_for_trace(trace)))
    if excess is None:
        assert hints == []
        return
    [hint] = hints
    total = sum(sectors for sectors, _ in counts.values())
    assert hint.numbers["heaviest_ideal_sectors_per_request"] == ideal
    assert hint.numbers["heaviest_excess_sector_share"] == round(excess / total, 3)
    assert hint.gain_ns == round(100_000 * excess / total / 2)
