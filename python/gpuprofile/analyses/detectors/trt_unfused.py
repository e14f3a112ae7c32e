"""TensorRT layers that run on their own where a builder fuses them into a neighbour.

TensorRT fuses a quantize/dequantize pair into the convolution or matmul it feeds, explicit
padding into the convolution or pooling after it, and a bias add or an activation into the
layer before it. A layer of one of those ops that runs alone (its layer name is one op, not
TensorRT's "a + b + c" of a fused group) is a fusion the builder refused: a Q/DQ node placed
where the next op cannot run in INT8, a Pad exported apart from its convolution (TensorFlow's
SAME padding), a bias or activation left behind by the export. Layers are told by their type in
the engine graph (Quantize, Dequantize, Padding, Activation; ElementWise named for a bias) when
one was exported, else by the op in their name (``QuantizeLinear_98``,
``resnet50/pool1_pad/Pad``).
Reformat, copy and shuffle layers are the reformat-overhead finding's.

Fires when those layers hold three percent or more of the layers' summed time (one average
inference; analyses/thresholds.py). Gain: their time, an upper bound reached when each fuses
(a fused Q/DQ, pad, bias or activation costs next to nothing in its neighbour's epilogue).
"""

from __future__ import annotations

import re

import pandas as pd

from gpuprofile.analyses.claims import frame_claim
from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.hints import Hint, heaviest_events
from gpuprofile.analyses.inference import layers
from gpuprofile.analyses.thresholds import worth_reporting
from gpuprofile.units import format_fraction, format_time

# What a lone layer does, by its engine-graph type, else by the op its name ends in.
_BY_TYPE = {
    "Quantize": "quantize/dequantize",
    "Dequantize": "quantize/dequantize",
    "Padding": "pad",
    "Activation": "activation",
}
# An ElementWise layer of its own is a bias add only by its name (a residual add is not one).
_BIAS = re.compile(r"(^|/)BiasAdd(_\d+)?$|(^|/)bias_?add", re.I)
_BY_NAME = (
    (
        re.compile(r"(Quantize|Dequantize)Linear|/(Quantize|Dequantize)\w*$", re.I),
        "quantize/dequantize",
    ),
    (re.compile(r"(^|/)Pad(V2)?(_\d+)?$|(^|[/_])pad(_\d+)?$", re.I), "pad"),
    (_BIAS, "bias add"),
    (
        re.compile(
            r"(^|/)(Relu6?|LeakyRelu|Clip|Sigmoid|Tanh|Elu|Selu|Softplus|HardSigmoid|HardSwish|"
            r"Gelu|Swish|Silu)(_\d+)?$",
            re.I,
        ),
        "activation",
    ),
)
FIXES = {
    "quantize/dequantize": (
        "Place Q/DQ nodes only at the inputs of the ops TensorRT runs in INT8 (convolutions, "
        "matmuls) and quantize the ops between them too (residual adds, pooling): a Q/DQ "
        "before an op that stays in higher precision cannot fuse and runs as a layer of its own "
        "(NVIDIA's pytorch-quantization / TensorRT Model Optimizer place them this way)."
    ),
    "pad": (
        "Fold the explicit padding into the convolution or pooling after it: pad in that layer "
        "(padding=, or 'same' in the framework the model is exported from), or fold it in the "
        "ONNX graph (onnxoptimizer's fuse_pad_into_conv and fuse_pad_into_pool passes), so the "
        "builder sees one layer."
    ),
    "bias add": (
        "Export the bias with the convolution or matmul it follows (Conv with a bias input, "
        "Gemm rather than MatMul + Add), so TensorRT folds it into that layer's epilogue."
    ),
    "activation": (
        "Keep each activation right after the convolution or matmul it belongs to in the "
        "exported graph (no reshape, cast or Q/DQ between them), so the builder fuses it."
    ),
}
VERBOSE_FIX = (
    "Ask the builder why it did not fuse: trtexec --verbose lists the fusions it applied, and "
    "trtexec --exportLayerInfo --profilingVerbosity=detailed (or TREx) shows each layer's "
    "inputs, so the node that stopped a fusion can be found in the ONNX graph."
)
CODE = """\
# See which fusions the builder applied and which layers stayed apart:
trtexec --onnx=model.onnx --int8 --fp16 --verbose \\
        --profilingVerbosity=detailed --exportLayerInfo=layers.json
"""


def detect(analysis: Analysis) -> list[Hint]:
    trace = analysis.trace
    table = layers(trace)
    total = int(table["dur_ns"].sum()) if not table.empty else 0
    if total <= 0:
        return []
    does = pd.Series([_lone_op(t, n) for t, n in zip(table["type"], table["name"], strict=True)])
    lone = table[(does != "").to_numpy() & (table["dur_ns"] > 0).to_numpy()]
    gain = int(lone["dur_ns"].sum())
    if not worth_reporting("unfused-layers", gain / total, 1.0):
        return []
    by_kind = (
        lone.assign(op=does.loc[lone.index].to_numpy())
        .groupby("op")["dur_ns"]
        .agg(["count", "sum"])
    )
    by_kind = by_kind.sort_values("sum", ascending=False)
    parts = "; ".join(
        f"{op} x{int(r['count'])} ({format_time(int(r['sum']))}, "
        f"{format_fraction(int(r['sum']) / total)})"
        for op, r in by_kind.iterrows()
    )
    heaviest = lone.nlargest(1, "dur_ns").iloc[0]
    by_type = table["type"].notna().any()
    rank = trace.ranks[0]
    return [
        Hint(
            kind="unfused-layers",
            subject="layers the builder did not fuse",
            title=(
                f"{len(lone)} {'layer' if len(lone) == 1 else 'layers'} TensorRT fuses "
                f"elsewhere ran on their own: {format_fraction(gain / total)} of an inference"
            ),
            basis_ns=total,
            gain_ns=gain,
            claim=frame_claim(lone),
            gain_method=(
                "The summed average time of the layers that are one quantize/dequantize, pad, "
                "bias add or activation op (one average inference): fused into a neighbour "
                "they cost next to nothing, so this is the upper bound."
            ),
            confidence="medium" if by_type else "low",
            explanation=(
                f"Of the {format_time(total)} the engine's layers take per inference, "
                f"{format_time(gain)} ({format_fraction(gain / total)}) is spent in "
                f"{len(lone)} {'layer' if len(lone) == 1 else 'layers'} of one op each that "
                f"TensorRT fuses into the layer beside {'it' if len(lone) == 1 else 'them'} "
                f"when it can: {parts}"
                + (
                    " (told by their layer type in the engine graph)"
                    if by_type
                    else " (told by the op in their layer names: no engine graph was exported)"
                )
                + f". The heaviest, {heaviest['name']}, takes "
                f"{format_time(int(heaviest['dur_ns']))}."
            ),
            numbers={
                "layers": len(lone),
                "unfused_ns": gain,
                "inference_ns": total,
                "share": round(gain / total, 4),
                "heaviest_layer": str(heaviest["name"]),
                **{f"{op}_ns": int(r["sum"]) for op, r in by_kind.iterrows()},
            },
            fix=(*(FIXES[str(op)] for op in by_kind.index), VERBOSE_FIX),
            code=CODE,
            evidence=(heaviest_events(lone, "ops", rank, "layers of one op"),),
            rank=rank,
        )
    ]


def _lone_op(kind: object, name: object) -> str:
    """What a layer of one op does, "" for a fused group or another op."""
    text = str(name)
    if " + " in text or text.startswith("Reformatting"):
        return ""
    if isinstance(kind, str) and kind:
        if kind == "ElementWise":
            return "bias add" if _BIAS.search(text) else ""
        return _BY_TYPE.get(kind, "")
    return next((does for pattern, does in _BY_NAME if pattern.search(text)), "")
