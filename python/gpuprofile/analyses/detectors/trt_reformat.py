"""TensorRT reformat and copy layers that take a visible share of an inference.

TensorRT inserts a reformat ("Reformatting CopyNode for Input Tensor 0 to ...") where one
layer writes a tensor in a format or precision the next cannot read: at the engine's inputs
and outputs when their I/O formats differ from what the first and last layers use, and between
layers whose chosen tactics disagree. They compute nothing. Layers are told by their type in
the engine graph (Reformat, Shuffle, Copy, ...), else by TensorRT's reformat names.

Fires when those layers hold a large enough share of the layers' summed time (one average
inference; analyses/thresholds.py). Gain: their time, the upper bound reached when every one is
removed; an I/O reformat removed with ``--inputIOFormats`` moves its conversion to whoever
writes the input (often fused into a preprocessing kernel), an internal one may not go away at
all. Confidence medium when the engine graph gave the layer types, low when they were told by
name.
"""

from __future__ import annotations

from gpuprofile.analyses.claims import frame_claim
from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.hints import Hint, heaviest_events
from gpuprofile.analyses.inference import layers
from gpuprofile.analyses.thresholds import worth_reporting
from gpuprofile.units import format_fraction, format_time

FIX = (
    "Give the engine its inputs and outputs in the format and precision its first and last "
    "layers use (trtexec --inputIOFormats / --outputIOFormats, or the builder's "
    "ITensor.dtype and allowed_formats), so no reformat runs at its edges.",
    "Look at the reformats between layers in the engine graph (trtexec --exportLayerInfo "
    "--profilingVerbosity=detailed, or TREx): a precision or format constraint on one layer "
    "forces a reformat on each side of it; relax it, or move it to a layer that needs it.",
    "Fold transposes and reshapes into the producing model (channels-last export), so TensorRT "
    "does not need Shuffle layers to change the layout.",
)
CODE = """\
# The engine's first layer reads FP16 channel-major data: feed it that, not FP32 linear.
trtexec --onnx=model.onnx --fp16 \\
        --inputIOFormats=fp16:hwc8 --outputIOFormats=fp16:chw \\
        --saveEngine=model.engine
"""


def detect(analysis: Analysis) -> list[Hint]:
    trace = analysis.trace
    table = layers(trace)
    total = int(table["dur_ns"].sum()) if not table.empty else 0
    if total <= 0:
        return []
    moving = table[table["moves_data"] & (table["dur_ns"] > 0)]
    gain = int(moving["dur_ns"].sum())
    share = gain / total
    if not worth_reporting("reformat-overhead", share, 1.0):
        return []
    by_type = table["type"].notna().any()
    heaviest = moving.nlargest(1, "dur_ns").iloc[0]
    rank = trace.ranks[0]
    count = len(moving)
    return [
        Hint(
            kind="reformat-overhead",
            subject="reformat layers",
            title=(
                f"{count} reformat/copy {'layer takes' if count == 1 else 'layers take'} "
                f"{format_fraction(share)} of an inference ({format_time(gain)})"
            ),
            basis_ns=total,
            gain_ns=gain,
            claim=frame_claim(moving),
            gain_method=(
                "The summed average time of the engine's reformat, copy and shuffle layers "
                "(one average inference): what removing them all gives back, an upper bound; "
                "a reformat at the engine's edge removed by matching its I/O format moves its "
                "conversion to whoever writes the input."
            ),
            confidence="medium" if by_type else "low",
            explanation=(
                f"Of the {format_time(total)} the engine's layers take per inference, "
                f"{format_time(gain)} ({format_fraction(share)}) is spent in {count} layers "
                "that only convert or move data"
                + (
                    " (told by their layer type in the engine graph)"
                    if by_type
                    else " (told by TensorRT's reformat names: no engine graph was exported)"
                )
                + f". The heaviest, {heaviest['name']}, takes "
                f"{format_time(int(heaviest['dur_ns']))}."
            ),
            numbers={
                "layers": count,
                "reformat_ns": gain,
                "inference_ns": total,
                "share": round(share, 4),
                "heaviest_layer": str(heaviest["name"]),
            },
            fix=FIX,
            code=CODE,
            evidence=(heaviest_events(moving, "ops", rank, "reformat/copy layers"),),
            rank=rank,
        )
    ]
