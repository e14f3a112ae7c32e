"""TensorRT layers that fell back from the DLA to the GPU.

An engine built for a DLA core (``--useDLACore=N --allowGPUFallback``) runs on the GPU every
layer the DLA cannot: an op it does not support, parameters out of its range, a batch past its
limit. The builder's log lists where each layer went ("Layers Running on DLA" /
"... on GPU", importers/tensorrt_files.py). A GPU layer in an engine that also runs DLA
subgraphs is a fallback: it keeps the GPU busy that the DLA offload was meant to free, and
each switch between the two adds a reformat (the ``Reformatting CopyNode`` layers, the
reformat finding's) and a synchronisation. Those copy nodes are the switches' cost, not
fallbacks, and are left out here.

Fires when the fallback layers hold a large enough share of the layers' summed time (one
average inference; analyses/thresholds.py). Gain: their time, the GPU time moving them onto
the DLA frees (an upper bound: on the DLA they take time of their own, off the GPU).
"""

from __future__ import annotations

from gpuprofile.analyses.claims import frame_claim
from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.hints import Hint, heaviest_events
from gpuprofile.analyses.inference import DATA_MOVEMENT_NAME, layers
from gpuprofile.analyses.thresholds import worth_reporting
from gpuprofile.units import format_count, format_fraction, format_time

TOP_LAYERS = 5
FIX = (
    "Make the fallback layers DLA-supported: check each against TensorRT's DLA supported "
    "layers and restrictions (op, kernel and padding sizes, batch size, INT8/FP16 only) and "
    "change the model where one falls outside them (a supported activation, a reshape moved "
    "out of the DLA part, a smaller batch).",
    "Build once without --allowGPUFallback: trtexec then stops at the first layer the DLA "
    "cannot run and says why.",
    "Group what stays on the GPU at the model's start or end: every switch between DLA and "
    "GPU costs a reformat copy and a synchronisation, so one GPU tail costs less than many "
    "GPU layers between DLA subgraphs.",
)


def detect(analysis: Analysis) -> list[Hint]:
    trace = analysis.trace
    placed = (trace.meta.inference or {}).get("placement") or {}
    on_dla, on_gpu = placed.get("dla") or [], placed.get("gpu") or []
    table = layers(trace)
    total = int(table["dur_ns"].sum()) if not table.empty else 0
    if not on_dla or not on_gpu or total <= 0:
        return []
    fallen = {name for name in on_gpu if not DATA_MOVEMENT_NAME.search(name)}
    rows = table[table["name"].isin(fallen)]
    gain = int(rows["dur_ns"].sum())
    if not worth_reporting("dla-fallback", gain / total, 1.0):
        return []
    switches = table[table["name"].isin(set(on_gpu) - fallen)]
    named = ", ".join(
        f"{name} ({format_time(int(ns))})"
        for name, ns in rows.nlargest(TOP_LAYERS, "dur_ns")[["name", "dur_ns"]].itertuples(
            index=False
        )
    )
    unmatched = len(fallen) - len(set(rows["name"]))
    return [
        Hint(
            kind="dla-fallback",
            subject="layers that fell back from the DLA",
            title=(
                f"{format_count(len(rows), 'layer')} fell back from the DLA to the GPU: "
                f"{format_fraction(gain / total)} of an inference"
            ),
            basis_ns=total,
            gain_ns=gain,
            claim=frame_claim(rows),
            gain_method=(
                "The summed average time of the layers the build log places on the GPU in an "
                "engine with DLA subgraphs (reformat copies left out): the GPU time running them "
                "on the DLA frees; an upper bound, as the DLA takes time of its own."
            ),
            confidence="medium",
            explanation=(
                f"The builder ran {format_count(len(on_dla), 'subgraph')} on the DLA and "
                f"{format_count(len(fallen), 'layer')} on the GPU. The GPU layers in the profile "
                f"take {format_time(gain)} of the {format_time(total)} an inference's layers "
                f"sum to; the heaviest: {named}."
                + (
                    f" {format_count(len(switches), 'reformat layer')} between the two "
                    f"{'takes' if len(switches) == 1 else 'take'} "
                    f"{format_time(int(switches['dur_ns'].sum()))} more."
                    if len(switches)
                    else ""
                )
                + (
                    f" {format_count(unmatched, 'GPU layer')} of the log are not in the profile."
                    if unmatched
                    else ""
                )
            ),
            numbers={
                "dla_subgraphs": len(on_dla),
                "gpu_layers": len(fallen),
                "fallback_ns": gain,
                "layer_ns": total,
                "share": round(gain / total, 4),
            },
            fix=FIX,
            evidence=(heaviest_events(rows, "ops", trace.ranks[0], "layers on the GPU"),),
            rank=trace.ranks[0],
        )
    ]
