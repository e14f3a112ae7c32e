"""The shared trtexec exports (../shared/traces/tensorrt), read by gpuprofile and held to what
json, gzip, math and statistics say of the same files.

Percentiles are the nearest-rank ones (the value at 1-based rank ceil(p/100 * n) of the sorted
values), the definition gpuprofile documents; throughput is inferences over the span from the
earliest start to the latest end field of the times file, and is also held to the throughput
trtexec itself logged (TREx's metadata file), within 1%.
"""

from __future__ import annotations

import gzip
import json
import math
import shutil
import statistics
from pathlib import Path
from typing import Any

import pytest

import gpuprofile
from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.detectors import detector
from gpuprofile.cli import main
from gpuprofile.errors import TraceFormatError
from helpers.prerequisites import SHARED_TRACES, require_trace

TENSORRT = SHARED_TRACES / "tensorrt"
ENGINES = ("trex_a100_resnet_fp16", "trex_rtx3090_tf_resnet_fp16", "trex_mobilenet_qat")
# What the hardware tables know of each device: two datasheets, one estimate (not in them).
ROOFS = {
    "trex_a100_resnet_fp16": "datasheet",
    "trex_rtx3090_tf_resnet_fp16": "datasheet",
    "trex_mobilenet_qat": "estimated",
}
NS = 1_000_000


def _json(path: Path) -> Any:
    raw = path.read_bytes()
    return json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)


def _sibling(engine: str, suffix: str) -> Path | None:
    for name in (engine + suffix, engine + suffix + ".gz"):
        if (TENSORRT / name).exists():
            return TENSORRT / name
    return None


def _nearest_rank(values: list[float], pct: int) -> float:
    ordered = sorted(values)
    return ordered[max(1, math.ceil(pct / 100 * len(ordered))) - 1]


@pytest.fixture(scope="module", params=ENGINES)
def engine(request: pytest.FixtureRequest) -> dict[str, Any]:
    name = request.param
    profile = require_trace(TENSORRT / f"{name}.profile.json")
    timing, graph = _sibling(name, ".timing.json"), _sibling(name, ".graph.json")
    return {
        "name": name,
        "path": profile,
        "records": _json(profile),
        "timing": _json(timing) if timing else None,
        "graph": _json(graph) if graph else None,
        "metadata": _json(TENSORRT / f"{name}.profile.metadata.json"),
        "profile": gpuprofile.load(profile),
    }


def test_layers_are_ops_end_to_end_with_their_times_and_shares(engine: dict[str, Any]) -> None:
    records = engine["records"]
    assert set(records[0]) == {"count"}
    layers = records[1:]
    trace = engine["profile"].trace
    assert trace.meta.source.format == "tensorrt"
    ops = trace.ops
    assert len(ops) == len(layers)
    assert ops["name"].astype(str).tolist() == [r["name"] for r in layers]
    assert set(ops["category"].astype(str)) == {"trt_layer"}
    total_ms = math.fsum(r["averageMs"] for r in layers)
    assert int(ops["dur_ns"].sum()) == round(total_ms * NS)
    for dur, record in zip(ops["dur_ns"].tolist(), layers, strict=True):
        assert abs(dur - record["averageMs"] * NS) <= 1
    # End to end: each layer starts where the one before it ended.
    ends = (ops["start_ns"] + ops["dur_ns"]).tolist()
    assert ops["start_ns"].tolist() == [0, *ends[:-1]]
    facts = trace.meta.inference
    assert facts is not None and facts["profile_runs"] == records[0]["count"]
    assert [f["share_pct"] for f in facts["layers"]] == [r["percentage"] for r in layers]
    # trtexec's share is the layer's part of the summed layer times.
    for dur, record in zip(ops["dur_ns"].tolist(), layers, strict=True):
        assert dur / (total_ms * NS) == pytest.approx(record["percentage"] / 100, abs=2e-4)


def test_kernels_are_the_timed_layers_named_by_their_tactics(engine: dict[str, Any]) -> None:
    trace = engine["profile"].trace
    layers = engine["records"][1:]
    timed = [i for i, r in enumerate(layers) if r["averageMs"] > 0]
    kernels = trace.kernels
    assert kernels["op_id"].tolist() == timed
    assert kernels["external_id"].tolist() == trace.ops["external_id"].to_numpy()[timed].tolist()
    tactics = {}
    if engine["graph"] is not None:
        tactics = {g["Name"]: g.get("TacticName") for g in engine["graph"]["Layers"]}
    expected = [tactics.get(layers[i]["name"]) or layers[i]["name"] for i in timed]
    assert kernels["name"].astype(str).tolist() == expected


def test_precisions_come_from_the_graph(engine: dict[str, Any]) -> None:
    facts = engine["profile"].trace.meta.inference["layers"]
    if engine["graph"] is None:
        assert all(f["precision"] is None for f in facts)
        assert engine["profile"].report()["inference"]["precision_mix"] == []
        return
    outputs = {g["Name"]: g["Outputs"][0]["Format/Datatype"] for g in engine["graph"]["Layers"]}
    for fact in facts:
        assert fact["precision"] is not None
        assert fact["precision"] in outputs[fact["name"]].upper()


def test_latency_percentiles_and_throughput(engine: dict[str, Any]) -> None:
    facts = engine["profile"].trace.meta.inference
    records = engine["timing"]
    if records is None:
        assert facts["latency"] is None and facts["throughput_per_s"] is None
        return
    assert facts["inferences"] == len(records)
    for key, field in (("latency", "latencyMs"), ("compute", "computeMs")):
        values = [r[field] for r in records]
        stats = facts[key]
        for pct in (50, 90, 95, 99):
            assert stats[f"p{pct}_ns"] == round(_nearest_rank(values, pct) * NS)
        assert stats["mean_ns"] == pytest.approx(statistics.fmean(values) * NS, abs=1)
        assert stats["min_ns"] == round(min(values) * NS)
        assert stats["max_ns"] == round(max(values) * NS)
    starts = [v for r in records for k, v in r.items() if k.startswith("start")]
    ends = [v for r in records for k, v in r.items() if k.startswith("end")]
    throughput = len(records) / ((max(ends) - min(starts)) / 1000)
    assert facts["throughput_per_s"] == pytest.approx(throughput, rel=1e-6)
    logged = engine["metadata"]["performance_summary"]["Throughput"]
    assert facts["throughput_per_s"] == pytest.approx(logged, rel=0.01)


def test_device_and_roofs_from_the_metadata(engine: dict[str, Any]) -> None:
    profile = engine["profile"]
    info = engine["metadata"]["device_information"]
    (device,) = profile.trace.devices(0)
    assert device["name"] == info["Selected Device"]
    assert device["sm_count"] == int(info["SMs"])
    assert device["compute_capability"] == f"{info['Compute Capability']:.1f}"
    assert profile.analysis.hardware.source == ROOFS[engine["name"]]


def test_hints_say_what_the_engines_hold(engine: dict[str, Any]) -> None:
    analysis = Analysis(engine["profile"].trace)
    layers = engine["records"][1:]
    total = math.fsum(r["averageMs"] for r in layers)
    if engine["graph"] is not None:
        types = {g["Name"]: g["LayerType"] for g in engine["graph"]["Layers"]}
        moving = [r for r in layers if types[r["name"]] in ("Reformat", "Shuffle", "NoOp")]
        compute = [
            g for g in engine["graph"]["Layers"] if g["LayerType"] not in ("Reformat", "NoOp")
        ]
        fp32 = [g for g in compute if "FP32" in g["Outputs"][0]["Format/Datatype"]]
    else:
        moving = [r for r in layers if r["name"].startswith("Reformatting CopyNode")]
        fp32 = []
    reformat_ms = math.fsum(r["averageMs"] for r in moving)
    hints = detector("trt_reformat")(analysis)
    if reformat_ms / total >= 0.03:
        (hint,) = hints
        assert hint.gain_ns == pytest.approx(reformat_ms * NS, abs=len(moving) + 1)
        assert hint.confidence == ("medium" if engine["graph"] is not None else "low")
    else:
        assert hints == []
    # No engine here keeps a compute layer in FP32 (checked above from the graph): silent.
    assert fp32 == []
    assert detector("trt_precision")(analysis) == []


def test_a100_engine_spends_a_visible_share_in_reformats() -> None:
    """The one fixture whose reformats are heavy: the FP32 input converted to FP16."""
    path = require_trace(TENSORRT / "trex_a100_resnet_fp16.profile.json")
    (hint,) = detector("trt_reformat")(Analysis(gpuprofile.load(path).trace))
    assert hint.kind == "reformat-overhead" and float(hint.numbers["share"]) > 0.03


def test_report_json_through_the_cli(
    engine: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", str(engine["path"]), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["source"]["format"] == "tensorrt"
    layers = engine["records"][1:]
    heaviest = max(layers, key=lambda r: r["averageMs"])
    assert report["ranks"][0]["top_ops"][0]["name"] == heaviest["name"]
    inference = report["inference"]
    assert len(inference["layers"]) == len(layers)
    if engine["timing"] is not None:
        values = [r["latencyMs"] for r in engine["timing"]]
        assert inference["latency"]["p99_ns"] == round(_nearest_rank(values, 99) * NS)


def test_any_sibling_given_reads_the_same_engine() -> None:
    base = require_trace(TENSORRT / "trex_a100_resnet_fp16.profile.json")
    expected = gpuprofile.load(base).trace
    for suffix in (".timing.json.gz", ".graph.json", ".profile.metadata.json"):
        trace = gpuprofile.load(TENSORRT / f"trex_a100_resnet_fp16{suffix}").trace
        assert trace.meta.source.format == "tensorrt"
        assert trace.ops["name"].tolist() == expected.ops["name"].tolist()
        assert trace.meta.inference["latency"] == expected.meta.inference["latency"]


def test_renamed_files_are_told_by_content(tmp_path: Path) -> None:
    profile = require_trace(TENSORRT / "trex_rtx3090_tf_resnet_fp16.profile.json")
    timing = TENSORRT / "trex_rtx3090_tf_resnet_fp16.timing.json"
    layers = _json(profile)[1:]
    renamed = shutil.copy(profile, tmp_path / "layers_dump.txt")
    trace = gpuprofile.load(renamed).trace
    assert trace.meta.source.format == "tensorrt"
    assert len(trace.ops) == len(layers) and trace.meta.inference["latency"] is None
    # The times file alone: a trace of inferences, one GPU compute span each.
    records = _json(timing)
    alone = gpuprofile.load(shutil.copy(timing, tmp_path / "run.timing.json")).trace
    assert len(alone.kernels) == len(records)
    first = min(v for r in records for k, v in r.items() if k.startswith("start"))
    assert alone.kernels["start_ns"].tolist() == [
        round(r["startComputeMs"] * NS) - round(first * NS) for r in records
    ]
    assert alone.meta.inference["inferences"] == len(records)
    # TREx's metadata alone holds no times.
    metadata = shutil.copy(
        TENSORRT / "trex_rtx3090_tf_resnet_fp16.profile.metadata.json", tmp_path / "m.json"
    )
    with pytest.raises(TraceFormatError, match="profile"):
        gpuprofile.load(metadata)
