"""trtexec exports written by the test: siblings found by stem, detection by content, wrong
shapes told in one line, and the precision-fallback and reformat-overhead scenarios."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

import gpuprofile
from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.detectors import detector
from gpuprofile.cli import main
from gpuprofile.errors import TraceFormatError
from gpuprofile.hardware.model import Hardware
from gpuprofile.importers.formats import detect_format
from gpuprofile.importers.tensorrt import load_tensorrt, percentile

FP16 = "Channel major FP16 format where channel % 8 == 0"
FP32 = "Row major linear FP32"
# The roofs of a made-up device: FP32 at 1/8 of the FP16 tensor-core rate.
HARDWARE = Hardware(
    name="test GPU",
    source="user",
    peak_flops={"fp32": 20e12, "fp16": 160e12},
    dram_bytes_per_s=1e12,
)


def _write(path: Path, document: Any) -> Path:
    text = json.dumps(document).encode()
    path.write_bytes(gzip.compress(text) if path.name.endswith(".gz") else text)
    return path


def _engine(tmp: Path, layers: list[tuple[str, float, str, str]], *, timing: bool = True) -> Path:
    """Profile (and graph, times, metadata) of layers (name, averageMs, LayerType, output
    format); returns the profile's path."""
    total = sum(ms for _, ms, _, _ in layers)
    records = [
        {
            "name": n,
            "timeMs": ms * 10,
            "averageMs": ms,
            "medianMs": ms,
            "percentage": 100 * ms / total,
        }
        for n, ms, _, _ in layers
    ]
    _write(tmp / "net.graph.json", {
        "Layers": [
            {"Name": n, "LayerType": kind, "Inputs": [{"Format/Datatype": fmt}],
             "Outputs": [{"Format/Datatype": fmt}], "TacticName": f"kernel_{n}"}
            for n, _, kind, fmt in layers
        ],
        "Bindings": ["in", "out"],
    })  # fmt: skip
    if timing:
        _write(tmp / "net.timing.json.gz", [
            {"startEnqMs": 10.0 * i, "endEnqMs": 10.0 * i + 0.5, "startComputeMs": 10.0 * i + 1,
             "endComputeMs": 10.0 * i + 1 + latency, "latencyMs": latency, "computeMs": latency}
            for i, latency in enumerate([4.0, 2.0, 3.0, 1.0, 5.0])
        ])  # fmt: skip
    _write(tmp / "net.profile.metadata.json", {
        "performance_summary": {"Throughput": 100.0},
        "device_information": {"Selected Device": "NVIDIA A100 80GB PCIe",
                               "Compute Capability": 8.0, "SMs": 108.0,
                               "Device Global Memory": "80994 MiB"},
    })  # fmt: skip
    return _write(tmp / "net.profile.json", [{"count": 10}, *records])


FP16_ENGINE = [
    ("conv1", 0.4, "CaskConvolution", FP16),
    ("pool", 0.1, "CudaPooling", FP16),
    ("conv2", 0.5, "CaskConvolution", FP16),
]


def test_profile_with_its_siblings(tmp_path: Path) -> None:
    trace = load_tensorrt(_engine(tmp_path, FP16_ENGINE))
    assert trace.meta.source.format == "tensorrt"
    assert trace.ops["start_ns"].tolist() == [0, 400_000, 500_000]
    assert trace.ops["dur_ns"].tolist() == [400_000, 100_000, 500_000]
    assert trace.kernels["name"].astype(str).tolist() == [
        "kernel_conv1",
        "kernel_pool",
        "kernel_conv2",
    ]
    assert trace.kernels["op_id"].tolist() == [0, 1, 2]
    facts = trace.meta.inference
    assert facts is not None
    assert [f["precision"] for f in facts["layers"]] == ["FP16"] * 3
    # Nearest rank over [1, 2, 3, 4, 5] ms: p50 is the 3rd value, p90..p99 the 5th.
    assert facts["latency"]["p50_ns"] == 3_000_000 and facts["latency"]["p99_ns"] == 5_000_000
    assert facts["latency"]["mean_ns"] == 3_000_000 and facts["latency"]["min_ns"] == 1_000_000
    # Five inferences from 0 ms (first enqueue) to 46 ms (last compute end).
    assert facts["span_ns"] == 46_000_000
    assert facts["throughput_per_s"] == pytest.approx(5 / 0.046)
    (device,) = trace.devices(0)
    assert device["name"] == "NVIDIA A100 80GB PCIe" and device["memory_bytes"] == 80994 << 20


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert [percentile(values, p) for p in (50, 90, 99, 100)] == [50.0, 90.0, 99.0, 100.0]
    assert percentile([7.0], 99) == 7.0


def test_sibling_given_reads_the_engine(tmp_path: Path) -> None:
    _engine(tmp_path, FP16_ENGINE)
    for name in ("net.timing.json.gz", "net.graph.json", "net.profile.metadata.json"):
        trace = gpuprofile.load(tmp_path / name).trace
        assert trace.ops["name"].astype(str).tolist() == ["conv1", "pool", "conv2"]


def test_detection_by_content(tmp_path: Path) -> None:
    profile = _engine(tmp_path, FP16_ENGINE)
    renamed = tmp_path / "other" / "dump.dat"
    renamed.parent.mkdir()
    renamed.write_bytes(profile.read_bytes())
    assert detect_format(renamed) == "tensorrt"
    assert len(load_tensorrt(renamed).ops) == 3  # no siblings beside it: layers alone
    meta = tmp_path / "other" / "device.json"
    meta.write_bytes((tmp_path / "net.profile.metadata.json").read_bytes())
    assert detect_format(meta) == "tensorrt"
    with pytest.raises(TraceFormatError, match=r"no times; give the layer profile"):
        load_tensorrt(meta)


def test_graph_alone_asks_for_the_profile(tmp_path: Path) -> None:
    _engine(tmp_path, FP16_ENGINE, timing=False)
    (tmp_path / "net.profile.json").unlink()
    with pytest.raises(TraceFormatError, match=r"engine graph .* holds no times"):
        load_tensorrt(tmp_path / "net.graph.json")


def test_times_alone_are_a_trace_of_inferences(tmp_path: Path) -> None:
    _engine(tmp_path, FP16_ENGINE)
    (tmp_path / "net.profile.json").unlink()
    trace = load_tensorrt(tmp_path / "net.timing.json.gz")
    assert trace.kernels["start_ns"].tolist() == [1_000_000 + 10_000_000 * i for i in range(5)]
    assert trace.kernels["dur_ns"].tolist() == [
        4_000_000,
        2_000_000,
        3_000_000,
        1_000_000,
        5_000_000,
    ]
    assert trace.ops["category"].astype(str).tolist() == ["trt_enqueue"] * 5
    assert trace.meta.inference is not None and "layers" not in trace.meta.inference


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        (
            [{"count": 1}, {"name": "a", "averageMs": 1}, {"timeMs": 2}],
            r"record \[2\] lacks a string 'name'",
        ),
        (
            [{"count": 1}, {"name": "a", "averageMs": "1.5"}],
            r"record \[1\] \('a'\) field 'averageMs' is not",
        ),
        ([{"count": 1}, {"name": "a", "averageMs": 1, "medianMs": -2}], r"field 'medianMs'"),
        ([{"count": 1}, {"name": "a"}], r"record \[1\] \('a'\) lacks 'averageMs'"),
        ([{"count": "x"}, {"name": "a", "averageMs": 1}], r"record \[0\] is neither"),
        ([{"count": 3}], "no layer records"),
        ([{"count": 1}, ["a", 1]], r"record \[1\] is not an object"),
    ],
)
def test_wrong_profile_shapes_name_the_record(
    tmp_path: Path, document: list[Any], problem: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path / "bad.profile.json", document)
    with pytest.raises(TraceFormatError, match=problem) as error:
        load_tensorrt(path)
    assert error.value.path == str(path)
    assert main(["report", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(path) in err


def test_wrong_times_and_truncated_json(tmp_path: Path) -> None:
    profile = _engine(tmp_path, FP16_ENGINE, timing=False)
    _write(tmp_path / "net.timing.json", [{"latencyMs": 1, "computeMs": "fast"}])
    with pytest.raises(TraceFormatError, match=r"net.timing.json: record \[0\] field 'computeMs'"):
        load_tensorrt(profile)
    (tmp_path / "net.timing.json").write_text('[{"latencyMs": 1,')
    with pytest.raises(TraceFormatError, match=r"net.timing.json: not valid JSON"):
        load_tensorrt(profile)


def _hints(tmp: Path, layers: list[tuple[str, float, str, str]], kind: str) -> list[Any]:
    trace = load_tensorrt(_engine(tmp, layers, timing=False))
    return detector(kind)(Analysis(trace, HARDWARE))


def test_fp32_fallback_in_fp16_engine(tmp_path: Path) -> None:
    layers = [
        *FP16_ENGINE,
        ("fc", 0.25, "CaskGemmMatrixMultiply", FP32),
        ("softmax", 0.25, "CudaSoftMax", FP32),
    ]
    (hint,) = _hints(tmp_path, layers, "trt_precision")
    assert hint.kind == "precision-fallback" and hint.numbers["layers"] == 2
    # The matrix layer at the FP32 / FP16 rate ratio (1/8), the other as memory-bound (1/2).
    assert hint.gain_ns == round(250_000 * (1 - 1 / 8) + 250_000 * 0.5)
    assert hint.confidence == "medium" and "FP16" in hint.title
    assert "FP16 66.7%, FP32 33.3%" in hint.explanation


def test_fp16_engine_and_fp32_engine_have_no_fallbacks(tmp_path: Path) -> None:
    assert _hints(tmp_path, FP16_ENGINE, "trt_precision") == []
    fp32 = [(n, ms, kind, FP32) for n, ms, kind, _ in FP16_ENGINE]
    (tmp_path / "b").mkdir()
    assert _hints(tmp_path / "b", fp32, "trt_precision") == []


def test_reformat_share(tmp_path: Path) -> None:
    heavy = [
        ("Reformatting CopyNode for Input Tensor 0 to conv1", 0.2, "Reformat", FP16),
        *FP16_ENGINE,
    ]
    (hint,) = _hints(tmp_path, heavy, "trt_reformat")
    assert hint.kind == "reformat-overhead" and hint.gain_ns == 200_000
    assert hint.confidence == "medium" and hint.evidence[0].event_ids == (0,)
    light = [
        ("Reformatting CopyNode for Input Tensor 0 to conv1", 0.02, "Reformat", FP16),
        *FP16_ENGINE,
    ]
    (tmp_path / "b").mkdir()
    assert _hints(tmp_path / "b", light, "trt_reformat") == []


def test_text_report_shows_layers_and_latency(tmp_path: Path) -> None:
    text = gpuprofile.load(_engine(tmp_path, FP16_ENGINE)).text()
    assert "latency (5 inferences): p50 3.00 ms, p90 5.00 ms" in text
    assert "time by layer precision: FP16 100.0%" in text
    assert "50.0%" in text and "conv2 [FP16]" in text
    assert "top ops by inclusive time" in text


def test_graph_without_layer_names_leaves_precisions_unknown(tmp_path: Path) -> None:
    profile = _engine(tmp_path, FP16_ENGINE, timing=False)
    _write(tmp_path / "net.graph.json", {"Layers": ["conv1", "pool", "conv2"], "Bindings": []})
    trace = load_tensorrt(profile)
    assert trace.meta.inference is not None
    assert [f["precision"] for f in trace.meta.inference["layers"]] == [None] * 3
    assert any("3 of 3 profiled layers" in n for n in trace.meta.inference["notes"])
    assert detector("trt_precision")(Analysis(trace, HARDWARE)) == []


def test_layers_the_builder_should_have_fused(tmp_path: Path) -> None:
    # A Q/DQ pair and a Pad on their own, beside fused groups and a residual add that is no
    # bias: 0.05 + 0.03 + 0.04 ms of the layers' 0.05 + 0.03 + 0.04 + 0.02 + 1.0 ms.
    layers = [
        ("QuantizeLinear_7", 0.05, "Quantize", FP16),
        ("DequantizeLinear_9", 0.03, "Dequantize", FP16),
        ("resnet50/pool1_pad/Pad", 0.04, "Padding", FP16),
        ("block1/add", 0.02, "ElementWise", FP16),
        *FP16_ENGINE,
    ]
    (hint,) = _hints(tmp_path, layers, "trt_unfused")
    assert hint.kind == "unfused-layers" and hint.gain_ns == 120_000
    assert hint.numbers["layers"] == 3
    assert hint.numbers["quantize/dequantize_ns"] == 80_000
    assert hint.numbers["pad_ns"] == 40_000
    assert hint.confidence == "medium"  # told by the engine graph's layer types
    fixes = " ".join(hint.fix)
    assert "Q/DQ" in fixes and "padding" in fixes and "--verbose" in fixes
    # Under three percent of the layers' time is no finding.
    (tmp_path / "b").mkdir()
    light = [("QuantizeLinear_7", 0.02, "Quantize", FP16), *FP16_ENGINE]
    assert _hints(tmp_path / "b", light, "trt_unfused") == []


def test_unfused_layers_told_by_name_without_a_graph(tmp_path: Path) -> None:
    # No engine graph: the op in each layer's name decides; fused groups ("a + b") never count.
    profile = [
        {"name": n, "timeMs": ms * 10, "averageMs": ms, "medianMs": ms, "percentage": 0}
        for n, ms in [
            ("QuantizeLinear_2", 0.1),
            ("conv.weight + QuantizeLinear_8 + Conv_12 + PWN(Clip_16)", 0.6),
            ("model/dense/BiasAdd", 0.05),
            ("Relu_3", 0.05),
            ("Conv_20", 0.2),
        ]
    ]
    path = _write(tmp_path / "only.profile.json", [{"count": 10}, *profile])
    (hint,) = detector("trt_unfused")(Analysis(load_tensorrt(path), HARDWARE))
    assert hint.gain_ns == 200_000 and hint.numbers["layers"] == 3
    assert hint.confidence == "low"
    assert hint.numbers["bias add_ns"] == 50_000 and hint.numbers["activation_ns"] == 50_000


# A DLA build's verbose log, as trtexec writes it (the lists TensorRT prints after placing
# layers; newer versions prefix a GPU layer with its type, older ones do not).
DLA_LOG = """\
[12/06/2026-10:00:00] [I] [TRT] ---------- Layers Running on DLA ----------
[12/06/2026-10:00:00] [I] [TRT] [DlaLayer] {ForeignNode[conv1...conv2]}
[12/06/2026-10:00:00] [I] [TRT] [DlaLayer] {ForeignNode[conv3]}
[12/06/2026-10:00:00] [I] [TRT] ---------- Layers Running on GPU ----------
[12/06/2026-10:00:00] [I] [TRT] [GpuLayer] COPY: Reformatting CopyNode for Input Tensor 0 to softmax
[12/06/2026-10:00:00] [I] [TRT] [GpuLayer] SOFTMAX: softmax
[12/06/2026-10:00:00] [I] [TRT] [GpuLayer] reshape_3
[12/06/2026-10:00:00] [I] [TRT] After Myelin optimization: 6 layers
"""
DLA_ENGINE = [
    ("{ForeignNode[conv1...conv2]}", 0.5, "DLA", FP16),
    ("Reformatting CopyNode for Input Tensor 0 to softmax", 0.05, "Reformat", FP16),
    ("softmax", 0.2, "SoftMax", FP16),
    ("reshape_3", 0.05, "Shuffle", FP16),
    ("{ForeignNode[conv3]}", 0.2, "DLA", FP16),
]


@pytest.mark.parametrize("log_name", ["net.build.log", "net.log"])
def test_layers_that_fell_back_from_the_dla(tmp_path: Path, log_name: str) -> None:
    """The build log beside the profile puts softmax and reshape_3 on the GPU of an engine
    with two DLA subgraphs: those are the fallbacks, their time summed from this test's own
    profile; the reformat copy TensorRT inserted is a switch's cost, said apart."""
    profile = _engine(tmp_path, DLA_ENGINE)
    (tmp_path / log_name).write_text(DLA_LOG)
    trace = load_tensorrt(profile)
    assert trace.meta.inference is not None
    assert trace.meta.inference["placement"] == {
        "dla": ["{ForeignNode[conv1...conv2]}", "{ForeignNode[conv3]}"],
        "gpu": ["Reformatting CopyNode for Input Tensor 0 to softmax", "softmax", "reshape_3"],
    }
    (hint,) = detector("trt_dla_fallback")(Analysis(trace, HARDWARE))
    total_ms = sum(ms for _, ms, _, _ in DLA_ENGINE)
    assert hint.gain_ns == 250_000  # softmax 0.2 ms + reshape_3 0.05 ms
    assert hint.numbers["share"] == round(0.25 / total_ms, 4)
    assert "softmax (200 µs), reshape_3 (50.0 µs)" in hint.explanation
    assert "1 reformat layer between the two takes 50.0 µs more" in hint.explanation
    assert hint.title.startswith("2 layers fell back from the DLA to the GPU")


def test_no_fallback_without_a_dla_or_a_log(tmp_path: Path) -> None:
    profile = _engine(tmp_path, FP16_ENGINE)
    assert detector("trt_dla_fallback")(Analysis(load_tensorrt(profile), HARDWARE)) == []
    (tmp_path / "net.log").write_text(DLA_LOG.replace("[DlaLayer]", "[Other]"))
    assert detector("trt_dla_fallback")(Analysis(load_tensorrt(profile), HARDWARE)) == []
