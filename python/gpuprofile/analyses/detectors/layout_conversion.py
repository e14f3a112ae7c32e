"""Layout conversions: kernels that only transpose activations between NCHW and NHWC.

cuDNN's tensor-core convolutions and MIOpen's half-precision ones work in NHWC (channels last);
fed NCHW tensors, the library transposes each input in and each output back out
(``cudnn::ops::nchwToNhwcKernel`` / ``nhwcToNchwKernel``; MIOpen's ``batched_transpose_*``).
Those kernels compute nothing. Kept in channels_last from the input on, a model's convolutions
read and write NHWC directly and the conversions go.

Fires when the conversions hold a large enough share of the rank's GPU busy time
(analyses/thresholds.py). Gain: their time, an upper bound (a conversion at the model's input,
or around an op with no NHWC kernel, may stay). Confidence medium: the kernels' names say what
they do, and their time is measured.
"""

from __future__ import annotations

import re

from gpuprofile.analyses.claims import frame_claim
from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.fixes_by_framework import Fix, pick
from gpuprofile.analyses.hints import Hint, heaviest_events
from gpuprofile.analyses.names import matches
from gpuprofile.analyses.thresholds import worth_reporting
from gpuprofile.units import format_fraction, format_time

LAYOUT_KERNEL = re.compile(
    r"nchwToNhwc|nhwcToNchw|batched_transpose_\d+x\d+|NCHW_?[Tt]o_?NHWC|NHWC_?[Tt]o_?NCHW"
    r"|nchw2nhwc|nhwc2nchw",
    re.IGNORECASE,
)
FIX = (
    "Keep activations in channels_last from the input on: model.to(memory_format="
    "torch.channels_last) and each batch .to(memory_format=torch.channels_last), so the "
    "convolutions read and write NHWC and the library has nothing to transpose.",
    "Under autocast (fp16/bf16) channels_last is what the tensor-core convolution kernels use; "
    "check the remaining conversions sit only at the model's input and output.",
)
CODE = """\
model = model.to(memory_format=torch.channels_last)
for x, y in loader:
    x = x.to(device, memory_format=torch.channels_last, non_blocking=True)
    loss = loss_fn(model(x), y)
"""
OTHERS = {
    "cuda": Fix(
        (
            "Describe tensors as NHWC (cudnnSetTensor4dDescriptor(..., CUDNN_TENSOR_NHWC, ...)) "
            "and keep the data in that layout between convolutions, so cuDNN does not "
            "transpose each input and output.",
        ),
        "",
    ),
    "jax": Fix(
        (
            "Write convolutions in NHWC: lax.conv_general_dilated(..., dimension_numbers="
            '("NHWC", "HWIO", "NHWC")) (flax.linen.Conv is NHWC already), so XLA inserts no '
            "transposes around them.",
        ),
        "",
    ),
}


def detect(analysis: Analysis) -> list[Hint]:
    hints = []
    for rank in analysis.trace.ranks:
        kernels = analysis.rank_table("kernels", rank)
        busy = analysis.gpu_time(rank)
        if busy is None or not len(kernels):
            continue
        converting = kernels[matches(kernels["name"], LAYOUT_KERNEL)]
        gain = int(converting["dur_ns"].sum())
        if not worth_reporting("layout-conversion", gain, busy.busy_ns):
            continue
        share = gain / busy.busy_ns
        by_name = converting.groupby(converting["name"].astype(str), observed=True)["dur_ns"].sum()
        heaviest = str(by_name.idxmax())
        hints.append(
            Hint(
                kind="layout-conversion",
                subject="NCHW/NHWC conversions",
                title=(
                    f"{len(converting)} NCHW/NHWC layout conversions take "
                    f"{format_fraction(share)} of GPU time"
                ),
                basis_ns=analysis.wall_ns(rank),
                gain_ns=gain,
                claim=frame_claim(converting),
                gain_method=(
                    "The summed time of the kernels that only transpose tensors between NCHW "
                    "and NHWC (told by their names): what keeping the model in channels_last "
                    "removes, an upper bound, since conversions at the model's edges may stay."
                ),
                confidence="medium",
                explanation=(
                    f"{len(converting)} layout conversion kernels ran for {format_time(gain)}, "
                    f"{format_fraction(share)} of the {format_time(busy.busy_ns)} the GPU was "
                    f"busy; the heaviest, {analysis.kernel_label(heaviest)}, took "
                    f"{format_time(int(by_name.max()))}. The convolution libraries transpose "
                    "NCHW tensors into the NHWC layout their fast kernels use, and back."
                ),
                numbers={
                    "kernels": len(converting),
                    "conversion_ns": gain,
                    "busy_ns": busy.busy_ns,
                    "share": round(share, 4),
                },
                **pick(analysis.framework, Fix(FIX, CODE), OTHERS)._asdict(),
                evidence=(heaviest_events(converting, "kernels", rank, "layout conversions"),),
                rank=rank,
            )
        )
    return hints
