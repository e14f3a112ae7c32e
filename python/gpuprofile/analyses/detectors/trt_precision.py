"""FP32 layers inside a reduced-precision TensorRT engine (precision fallbacks).

An engine built with ``--fp16``/``--int8`` still runs a layer in FP32 when TensorRT found no
faster reduced-precision tactic, when the layer has no such implementation, or when a precision
constraint or missing INT8 scale kept it there. The engine graph (``--exportLayerInfo``) says
each layer's precision (its first output's datatype); without it this detector is silent.

Fires when compute layers (not reformats or copies) writing FP32 take a large enough share
(analyses/thresholds.py) of the layers' summed time in an engine whose other compute layers run
in FP16/BF16/FP8/INT8. Gain per layer, against the engine's main reduced precision P and the
device's roofs: convolution and matrix layers are taken as compute-bound, time x (1 - FP32 rate
/ P tensor-core rate); the others as memory-bound, half their time (P moves half the bytes or
fewer). Without both rates for the device, half of every fallback's time. Confidence medium
with the device's rates, low without: no FLOP or byte counts are recorded per layer, so which
bound holds is an assumption.
"""

from __future__ import annotations

import re

from gpuprofile.analyses.claims import frame_claim
from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.hints import Hint, heaviest_events
from gpuprofile.analyses.inference import REDUCED_PRECISIONS, layers, precision_mix
from gpuprofile.analyses.thresholds import worth_reporting
from gpuprofile.units import format_fraction, format_time

MEMORY_BOUND_SPEEDUP = 2.0
# Layer types (and fused names) that run convolutions or matrix products.
MATH_LAYER = re.compile(r"conv|gemm|matmul|matrixmultiply|fullyconnected|deconv", re.IGNORECASE)

FIX = (
    "Find why each layer stayed in FP32 (trtexec --verbose lists the tactics tried; TREx "
    "shows the precision per layer): a layer with no reduced-precision implementation, a "
    "precision constraint, or, in INT8, a tensor without a scale (no Q/DQ pair or "
    "calibration).",
    "Ask for reduced precision where accuracy allows: trtexec --fp16 --precisionConstraints="
    "prefer --layerPrecisions=<layer>:fp16 (or ILayer.precision and set_output_type in the "
    "builder API).",
    "Check the accuracy afterwards: FP32 is sometimes kept on purpose (softmax, "
    "normalisation, the last classifier layer).",
)
CODE = """\
config.set_flag(trt.BuilderFlag.FP16)
config.set_flag(trt.BuilderFlag.PREFER_PRECISION_CONSTRAINTS)
for i in range(network.num_layers):
    layer = network.get_layer(i)
    if layer.name in fp32_layers:          # the layers this hint lists
        layer.precision = trt.float16
        layer.set_output_type(0, trt.float16)
"""


def detect(analysis: Analysis) -> list[Hint]:
    trace = analysis.trace
    table = layers(trace)
    if table.empty or table["precision"].isna().all():
        return []
    compute = table[~table["moves_data"].astype(bool)]
    reduced = compute[compute["precision"].isin(REDUCED_PRECISIONS)]
    fallback = compute[(compute["precision"] == "FP32") & (compute["dur_ns"] > 0)]
    total = int(table["dur_ns"].sum())
    if reduced.empty or fallback.empty or total <= 0:
        return []
    fallback_ns = int(fallback["dur_ns"].sum())
    if not worth_reporting("precision-fallback", fallback_ns, total):
        return []
    target = str(reduced.groupby("precision")["dur_ns"].sum().idxmax())
    peaks = analysis.hardware.peak_flops
    fp32_rate, target_rate = peaks.get("fp32"), peaks.get(target.lower())
    is_math = [
        bool(MATH_LAYER.search(f"{kind or ''} {name}"))
        for kind, name in zip(fallback["type"], fallback["name"], strict=True)
    ]
    durations = fallback["dur_ns"].tolist()
    if fp32_rate and target_rate:
        ratio = min(1.0, fp32_rate / target_rate)
        gain = sum(
            d * (1 - ratio) if math else d * (1 - 1 / MEMORY_BOUND_SPEEDUP)
            for d, math in zip(durations, is_math, strict=True)
        )
        method = (
            f"Per FP32 layer: convolution/matrix layers taken as compute-bound at the device's "
            f"FP32 vs {target} tensor-core rate ({fp32_rate / 1e12:.1f} vs "
            f"{target_rate / 1e12:.0f} TFLOP/s: time x {1 - ratio:.2f}), others as "
            f"memory-bound (half their time). No per-layer FLOPs or bytes are recorded."
        )
        confidence = "medium"
    else:
        gain = fallback_ns * (1 - 1 / MEMORY_BOUND_SPEEDUP)
        method = (
            f"Half the FP32 layers' time: the device's FP32 and {target} tensor-core rates are "
            "not known, and any reduced precision at least halves the bytes moved."
        )
        confidence = "low"
    gain_ns = int(min(gain, fallback_ns))
    mix = ", ".join(f"{m['precision']} {format_fraction(m['share'])}" for m in precision_mix(trace))
    rank = trace.ranks[0]
    names = fallback.nlargest(3, "dur_ns")["name"].astype(str).tolist()
    count = len(fallback)
    return [
        Hint(
            kind="precision-fallback",
            subject="FP32 layers",
            title=(
                f"{count} FP32 {'layer' if count == 1 else 'layers'} in a {target} engine take "
                f"{format_fraction(fallback_ns / total)} of an inference"
            ),
            basis_ns=total,
            gain_ns=gain_ns,
            claim=frame_claim(fallback),
            gain_method=method,
            confidence=confidence,
            explanation=(
                f"The engine runs most compute layers in {target}, but {count} compute "
                f"{'layer writes' if count == 1 else 'layers write'} FP32 "
                f"({format_time(fallback_ns)} of {format_time(total)} per inference). "
                f"Time by layer precision: {mix}. Heaviest FP32 layers: {'; '.join(names)}."
            ),
            numbers={
                "layers": count,
                "fp32_ns": fallback_ns,
                "inference_ns": total,
                "share": round(fallback_ns / total, 4),
                "engine_precision": target,
            },
            fix=FIX,
            code=CODE,
            evidence=(heaviest_events(fallback, "ops", rank, "FP32 layers"),),
            rank=rank,
        )
    ]
