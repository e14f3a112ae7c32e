"""TensorRT: trtexec's ``--exportProfile`` JSON, with ``--exportTimes``, ``--exportLayerInfo``,
TREx's ``.profile.metadata.json`` and trtexec's build log when they sit beside it
(docs/formats/tensorrt.md).

The layer profile is one average inference: its layers become ops (category ``trt_layer``)
laid end to end on one host thread, in profile order, each lasting its ``averageMs``; each
timed layer has one kernel row at the same times, linked to it as Kineto links kernels to
ops (``op_id``, ``external_id``). Per-layer facts that have no table column (type, precision,
tactic, trtexec's share) and the latency percentiles of the times file go into
``TraceMeta.inference``.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import numpy as np

from gpuprofile.errors import TraceFormatError
from gpuprofile.importers.tensorrt_files import (
    GRAPH,
    METADATA,
    Inference,
    Profile,
    read_engine,
)
from gpuprofile.trace.meta import RankMeta, Source, TraceMeta
from gpuprofile.trace.model import Trace, make_table

LAYER_CATEGORY = "trt_layer"
ENQUEUE_CATEGORY = "trt_enqueue"
INFERENCE_KERNEL = "TensorRT inference (GPU compute)"
PERCENTILES = (50, 90, 95, 99)
_NS_PER_MS = 1_000_000
# Past any device's count of SMs, GHz, bus bits or MiB: such a figure is damage, not a device.
_DEVICE_FIGURE_MAX = 1e9
# Precision tokens of a "Format/Datatype" string ("Channel major FP16 format where ...").
_PRECISION = re.compile(r"\b(FP32|FP16|BF16|FP8|FP4|INT8|INT4|INT32|INT64|UINT8|BOOL)\b", re.I)


def load_tensorrt(path: str | Path) -> Trace:
    """Read a trtexec export, and the other exports of the same engine beside it, into a Trace.

    Parameters:
        path: any of ``X.profile.json``, ``X.timing.json[.gz]``, ``X.graph.json`` or
            ``X.profile.metadata.json``; the others of stem ``X`` are found beside it.

    Returns:
        With a layer profile: one average inference (layers as ``trt_layer`` ops, their kernels
        on stream 0), ``meta.inference`` holding the layers' facts and, with a times file,
        latency percentiles and throughput. A times file alone: one op (enqueue) and one
        kernel (GPU compute) per inference on trtexec's own clock.

    Raises:
        TraceFormatError: a file of the wrong shape (naming the record and field), or an engine
            graph or metadata file with no layer profile or times file beside it.
    """
    path = Path(path)
    engine = read_engine(path)
    if engine.profile is None and engine.timing is None:
        given = GRAPH if GRAPH in engine.files else METADATA
        what = "an engine graph (--exportLayerInfo)" if given == GRAPH else "TREx metadata"
        raise TraceFormatError(
            path,
            f"{what} holds no times; give the layer profile (trtexec --exportProfile) written "
            "beside it as <engine>.profile.json",
        )
    inference = _timing_stats(engine.timing)
    if engine.profile is not None:
        tables, layers, notes = _average_inference(engine.profile, engine.graph, inference)
        origin = 0
        inference.update(
            {
                "profile_runs": engine.profile.count,
                "layer_time_ns": int(tables["ops"]["dur_ns"].sum()),
                "layers": layers,
            }
        )
    else:
        assert engine.timing is not None
        tables, origin = _inferences(engine.timing)
        notes = ["no layer profile (--exportProfile) beside the times file: no layers"]
    if engine.graph is None and engine.profile is not None:
        notes.append(
            "no engine graph (--exportLayerInfo) beside the profile: layer types, precisions "
            "and kernel names are unknown"
        )
    options = (engine.metadata or {}).get("inference_options")
    inference["options"] = options if isinstance(options, dict) else None
    # Where the builder placed each layer, from its log: {"dla": [...], "gpu": [...]}.
    placed = engine.placement
    inference["placement"] = {k: list(v) for k, v in placed.items()} if placed else None
    inference["notes"] = notes
    files = tuple(str(p) for p in engine.files.values())
    facts = RankMeta(
        devices=_devices(engine.metadata),
        thread_names={"0/0": "TensorRT engine"},
        files=files,
    )
    meta = TraceMeta(
        source=Source(format="tensorrt", path=str(path), files=files),
        origin_ns=origin,
        ranks={0: facts},
        inference=inference,
    )
    return Trace(**tables, meta=meta)


def _average_inference(
    profile: Profile, graph: dict[str, Any] | None, inference: dict[str, Any]
) -> tuple[dict[str, Any], list[dict[str, Any]], list[str]]:
    """Ops and kernels of one average inference, and each layer's facts."""
    layers = profile.layers
    n = len(layers)
    average_ms = np.array([layer.average_ms for layer in layers])
    # Ends from the running sum, so the layers abut exactly whatever the rounding.
    ends = np.rint(np.cumsum(average_ms) * _NS_PER_MS).astype(np.int64)
    starts = np.concatenate([[0], ends[:-1]]).astype(np.int64)
    ids = np.arange(n, dtype=np.int64)
    zeros = np.zeros(n, np.int64)
    ops = make_table(
        "ops",
        {
            "id": ids,
            "rank": np.zeros(n, np.int32),
            "pid": zeros,
            "tid": zeros,
            "name": [layer.name for layer in layers],
            "category": np.full(n, LAYER_CATEGORY, dtype=object),
            "start_ns": starts,
            "dur_ns": ends - starts,
            "depth": np.zeros(n, np.int32),
            "external_id": ids,
        },
    )
    facts = [
        _layer_facts(i, layer.name, (graph or {}).get(layer.name)) for i, layer in enumerate(layers)
    ]
    for fact, layer in zip(facts, layers, strict=True):
        fact.update(
            {
                "share_pct": layer.percentage,
                "average_ns": round(layer.average_ms * _NS_PER_MS),
                "median_ns": None
                if layer.median_ms is None
                else round(layer.median_ms * _NS_PER_MS),
            }
        )
    notes = []
    if graph is not None:
        unmatched = sum(1 for layer in layers if layer.name not in graph)
        if unmatched:
            notes.append(
                f"{unmatched} of {n} profiled layers are not named in the engine graph (built "
                "without --profilingVerbosity=detailed?): their type and precision are unknown"
            )
    timed = np.flatnonzero(ends > starts)
    kernel_names = [facts[i]["tactic"] or layers[i].name for i in timed]
    m = len(timed)
    kernels = make_table(
        "kernels",
        {
            "id": np.arange(m, dtype=np.int64),
            "rank": np.zeros(m, np.int32),
            "device": np.zeros(m, np.int32),
            "stream": np.zeros(m, np.int64),
            "name": kernel_names,
            "start_ns": starts[timed],
            "dur_ns": ends[timed] - starts[timed],
            "correlation": ids[timed],
            "external_id": ids[timed],
            "op_id": ids[timed],
        },
    )
    median = (inference.get("compute") or {}).get("p50_ns")
    total = int(ends[-1]) if n else 0
    if median and total > median:
        notes.append(
            f"layer times come from a profiling run (trtexec times each layer on its own, "
            f"which adds overhead): their sum is {total / median:.2f}x the median GPU compute "
            "time of the times file; read layers as shares, and latency from the times file"
        )
    return {"ops": ops, "kernels": kernels}, facts, notes


def _layer_facts(op_id: int, name: str, layer: dict[str, Any] | None) -> dict[str, Any]:
    """A layer's type, precision (of its first output), formats and tactic from the graph."""
    if layer is None:
        layer = {}
    outputs = [_precision(o) for o in layer.get("Outputs") or [] if isinstance(o, dict)]
    inputs = [_precision(i) for i in layer.get("Inputs") or [] if isinstance(i, dict)]
    tactic = layer.get("TacticName")
    kind = layer.get("LayerType")
    return {
        "op_id": op_id,
        "name": name,
        "type": kind if isinstance(kind, str) else None,
        "precision": next((p for p in outputs if p), None),
        "input_precisions": inputs,
        "tactic": tactic if isinstance(tactic, str) and tactic else None,
    }


def _precision(tensor: dict[str, Any]) -> str | None:
    text = tensor.get("Format/Datatype") or tensor.get("Datatype") or tensor.get("Format")
    found = _PRECISION.search(text) if isinstance(text, str) else None
    return found.group(1).upper() if found else None


def _inferences(timing: tuple[Inference, ...]) -> tuple[dict[str, Any], int]:
    """Per inference an enqueue op on the host and a GPU compute kernel, from the earliest
    time in the file; H2D and D2H copies (when they took time) as memcpy rows."""
    origin_ms = min(start for r in timing for start, _ in r.phases.values())
    origin = round(origin_ms * _NS_PER_MS)

    def span(phase: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        rows = [(i, *r.phases[phase]) for i, r in enumerate(timing) if phase in r.phases]
        index = np.array([r[0] for r in rows], np.int64)
        start = np.rint(np.array([r[1] for r in rows]) * _NS_PER_MS).astype(np.int64) - origin
        end = np.rint(np.array([r[2] for r in rows]) * _NS_PER_MS).astype(np.int64) - origin
        return index, start.reshape(-1), end.reshape(-1)

    tables: dict[str, Any] = {}
    index, start, end = span("enqueue")
    tables["ops"] = make_table(
        "ops",
        {
            "id": np.arange(len(index), dtype=np.int64),
            "rank": np.zeros(len(index), np.int32),
            "pid": np.zeros(len(index), np.int64),
            "tid": np.zeros(len(index), np.int64),
            "name": np.full(len(index), "enqueue", dtype=object),
            "category": np.full(len(index), ENQUEUE_CATEGORY, dtype=object),
            "start_ns": start,
            "dur_ns": end - start,
            "depth": np.zeros(len(index), np.int32),
            "external_id": index,
        },
    )
    index, start, end = span("compute")
    tables["kernels"] = make_table(
        "kernels",
        {
            "id": np.arange(len(index), dtype=np.int64),
            "rank": np.zeros(len(index), np.int32),
            "device": np.zeros(len(index), np.int32),
            "stream": np.zeros(len(index), np.int64),
            "name": np.full(len(index), INFERENCE_KERNEL, dtype=object),
            "start_ns": start,
            "dur_ns": end - start,
            "correlation": index,
            "external_id": index,
            "op_id": np.where(np.isin(index, tables["ops"]["external_id"]), index, -1),
        },
    )
    copies: dict[str, list[Any]] = {"kind": [], "start": [], "end": [], "index": []}
    for phase, kind in (("h2d", "HtoD"), ("d2h", "DtoH")):
        index, start, end = span(phase)
        took = end > start
        copies["kind"] += [kind] * int(took.sum())
        copies["start"] += start[took].tolist()
        copies["end"] += end[took].tolist()
        copies["index"] += index[took].tolist()
    k = len(copies["kind"])
    start_arr = np.array(copies["start"], np.int64)
    tables["memcpy"] = make_table(
        "memcpy",
        {
            "id": np.arange(k, dtype=np.int64),
            "rank": np.zeros(k, np.int32),
            "device": np.zeros(k, np.int32),
            "stream": np.zeros(k, np.int64),
            "name": [f"Memcpy {kind} (trtexec)" for kind in copies["kind"]],
            "kind": copies["kind"],
            "start_ns": start_arr,
            "dur_ns": np.array(copies["end"], np.int64) - start_arr,
            "bytes": np.full(k, -1, np.int64),
            "correlation": np.array(copies["index"], np.int64),
            "external_id": np.array(copies["index"], np.int64),
        },
    )
    return tables, origin


def percentile(values: list[float], pct: float) -> float:
    """Nearest rank: the value at 1-based rank ceil(pct/100 * n) of the sorted values."""
    ordered = sorted(values)
    rank = max(1, int(np.ceil(pct / 100 * len(ordered))))
    return ordered[rank - 1]


def _stats(values_ms: list[float]) -> dict[str, Any]:
    def ns(ms: float) -> int:
        return round(ms * _NS_PER_MS)

    out: dict[str, Any] = {"count": len(values_ms)}
    out.update({f"p{p}_ns": ns(percentile(values_ms, p)) for p in PERCENTILES})
    out["mean_ns"] = ns(sum(values_ms) / len(values_ms))
    out["min_ns"] = ns(min(values_ms))
    out["max_ns"] = ns(max(values_ms))
    return out


def _timing_stats(timing: tuple[Inference, ...] | None) -> dict[str, Any]:
    """Latency and GPU compute percentiles, and throughput: inferences over the span from the
    first phase's start to the last phase's end."""
    if not timing:
        return dict.fromkeys(("inferences", "latency", "compute", "span_ns", "throughput_per_s"))
    first = min(start for r in timing for start, _ in r.phases.values())
    last = max(end for r in timing for _, end in r.phases.values())
    span_ns = round((last - first) * _NS_PER_MS)
    return {
        "inferences": len(timing),
        "latency": _stats([r.latency_ms for r in timing]),
        "compute": _stats([r.compute_ms for r in timing]),
        "span_ns": span_ns,
        "throughput_per_s": len(timing) / (span_ns / 1e9) if span_ns > 0 else None,
    }


def _devices(metadata: dict[str, Any] | None) -> tuple[dict[str, Any], ...]:
    """The device TREx's metadata names, its figures also under the CUDA property names the
    hardware tables read (clock and memory clock in kHz, bus width in bits)."""
    info = (metadata or {}).get("device_information")
    if not isinstance(info, dict) or not isinstance(info.get("Selected Device"), str):
        return ()

    def number(key: str) -> float | None:
        """A device figure: a positive, finite number short of any device's (a count of
        SMs, GHz, bits); anything else is unknown rather than a roof."""
        value = info.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        return float(value) if 0 < value < _DEVICE_FIGURE_MAX else None

    memory = _mebibytes(info.get("Device Global Memory"))
    sms, capability = number("SMs"), number("Compute Capability")
    clock, memory_clock, bus = (
        number("Compute Clock Rate"),
        number("Memory Clock Rate"),
        number("Memory Bus Width"),
    )
    cuda_names = {
        "numSms": None if sms is None else int(sms),
        "clockRate": None if clock is None else round(clock * 1e6),  # GHz -> kHz
        "memoryClockRate": None if memory_clock is None else round(memory_clock * 1e6),
        "memoryBusWidth": None if bus is None else int(bus),
        "totalGlobalMem": memory,
    }
    return (
        {
            "id": 0,
            "name": info["Selected Device"],
            "memory_bytes": memory,
            "sm_count": None if sms is None else int(sms),
            "compute_capability": None if capability is None else f"{capability:.1f}",
            "properties": {**info, **{k: v for k, v in cuda_names.items() if v is not None}},
        },
    )


def _mebibytes(text: Any) -> int | None:
    found = re.fullmatch(r"\s*(\d+(?:\.\d*)?)\s*MiB\s*", text) if isinstance(text, str) else None
    mib = float(found.group(1)) if found else math.nan
    return int(mib * (1 << 20)) if 0 < mib < _DEVICE_FIGURE_MAX else None
