"""DDP's buffer broadcast: the GPU idle while DistributedDataParallel copies the model's buffers
from rank 0 at the start of every forward.

With ``broadcast_buffers=True`` (its default) DDP's forward first flattens the module's buffers
(BatchNorm's running statistics), broadcasts them from rank 0 and copies them back
(``aten::flatten_dense_tensors``, ``c10d::broadcast_``, ``aten::unflatten_dense_tensors``
inside ``DistributedDataParallel.forward``). The host does that before it launches the forward,
so the GPU waits. Many models need no such broadcast: each rank may keep the statistics of its
own batches (``broadcast_buffers=False``), or SyncBatchNorm keeps them in step while training.

Gain: the GPU idle time (analyses/idle.py's gaps, any cause) that those ops cover on the rank,
which the forward's own launches would fill without them. Confidence medium: the ops are DDP's
own, but whether a model may drop the broadcast is the user's call.
"""

from __future__ import annotations

import re

import numpy as np

from gpuprofile.analyses.claims import frame_claim, rows_claim
from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.hints import Hint, heaviest_events
from gpuprofile.analyses.lookups import has_ancestor
from gpuprofile.analyses.names import matches
from gpuprofile.analyses.thresholds import worth_reporting
from gpuprofile.units import format_time

DDP_FORWARD = re.compile(r"^DistributedDataParallel\.forward")
BUFFER_BROADCAST = re.compile(r"^(aten::(un)?flatten_dense_tensors|c10d::broadcast_)$")
FIX = (
    "Stop the broadcast where each rank may keep its own buffers: "
    "DistributedDataParallel(model, broadcast_buffers=False); BatchNorm then keeps the running "
    "statistics of each rank's own batches.",
    "Where the statistics must agree across ranks, convert the model's BatchNorm layers with "
    "torch.nn.SyncBatchNorm.convert_sync_batchnorm(model), which keeps them in step as it "
    "trains, then wrap it in DDP with broadcast_buffers=False.",
)
CODE = """\
model = torch.nn.SyncBatchNorm.convert_sync_batchnorm(model)  # only if stats must agree
model = DistributedDataParallel(model, device_ids=[rank], broadcast_buffers=False)
"""


def detect(analysis: Analysis) -> list[Hint]:
    trace = analysis.trace
    ops = trace.ops
    if not len(ops):
        return []
    broadcast = matches(ops["name"], BUFFER_BROADCAST)
    if not broadcast.any():
        return []
    broadcast &= has_ancestor(matches(ops["name"], DDP_FORWARD), analysis.op_parents)
    hints = []
    gaps = analysis.idle_gaps
    for rank in trace.ranks:
        mine = analysis.rank_rows("ops", rank)
        rows = ops.iloc[mine[broadcast[mine]]]
        if not len(rows):
            continue
        idle = frame_claim(gaps[gaps["rank"] == rank])
        held = rows_claim(rows["start_ns"].to_numpy(), rows["dur_ns"].to_numpy())
        claim = idle.minus(idle.minus(held))  # the idle the broadcast's ops cover
        gain = claim.length_ns
        wall = analysis.wall_ns(rank)
        if not worth_reporting("ddp-buffer-broadcast", gain, wall):
            continue
        forwards = int(np.count_nonzero(rows["name"].astype(str) == "c10d::broadcast_"))
        op_ns = held.length_ns
        hints.append(
            Hint(
                kind="ddp-buffer-broadcast",
                subject="DDP's buffer broadcast",
                title=f"DDP's buffer broadcast leaves the GPU idle {format_time(gain)}",
                basis_ns=wall,
                gain_ns=gain,
                claim=claim,
                gain_method=(
                    "GPU idle time covered by DDP's buffer broadcast ops (flatten, broadcast_, "
                    "unflatten inside DistributedDataParallel.forward): the forward's launches "
                    "would fill it without them."
                ),
                confidence="medium",
                explanation=(
                    f"Rank {rank}: DistributedDataParallel.forward broadcast the model's "
                    f"buffers from rank 0 ({forwards} broadcast_ calls); its flatten, "
                    f"broadcast and unflatten ops took {format_time(op_ns)} of host time, "
                    f"{format_time(gain)} of it while the GPU sat idle waiting for the "
                    "forward's first launches. DDP does this before every forward while "
                    "broadcast_buffers=True, its default."
                ),
                numbers={"broadcasts": forwards, "op_ns": op_ns, "idle_ns": gain},
                fix=FIX,
                code=CODE,
                evidence=(heaviest_events(rows, "ops", rank, "DDP buffer broadcast ops"),),
                rank=rank,
            )
        )
    return hints
