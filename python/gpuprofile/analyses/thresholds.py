"""The one table of what makes a finding worth reporting, and how severe it is.

Detectors measure; whether what they measured is worth a user's attention, and how urgent it
is, is decided by the figures here, so they can be read, compared and tuned side by side
instead of hiding in sixteen modules. A detector asks ``worth_reporting`` with its entry and
the time its gain is a share of (the rank's wall time, the GPU window, the steps' windows),
before it spends time writing the finding's text; the pipeline (``detectors.findings``) sets
each finding's severity with ``severity_for`` and then ranks, labels and folds them.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

# Severity: a fix that gives back a tenth of the run changes how the run feels (high); a
# fiftieth is still worth a change in a day's work (medium); less is housekeeping (low).
HIGH_SHARE = 0.10
MEDIUM_SHARE = 0.02

# Smallest gain worth a finding, as a share of the time the detector measures it against.
MIN_GAIN_SHARE: Mapping[str, float] = MappingProxyType(
    {
        # Of the GPU window: a few percent of idle is the normal cost of launching and
        # synchronizing at all; from a twentieth it has a cause worth naming.
        "gpu-idle": 0.05,
        # Of the rank's wall time, for findings whose gain is time the trace measured and a
        # known fix removes: a hundredth is small but still a change the user can make.
        "launch-overhead": 0.01,
        "memory-bound": 0.01,
        "compute-bound": 0.01,
        "sync-stall": 0.01,
        "data-loading": 0.01,
        "low-occupancy": 0.01,
        "pageable-copy": 0.01,
        "communication": 0.01,
        "straggler": 0.01,
        # Half a percent: turning on TF32 or bf16 is one line, so even a small gain is worth it.
        "tensor-cores-unused": 0.005,
        # Of the rank's wall time: fusing attention is a one-line change (SDPA), so a hundredth
        # of the run is worth it, and less is a cost the user will not notice.
        "attention-unfused": 0.01,
        # Without a GPU the loader's time is host time beside the loop's own Python, which
        # workers only partly take away (they compete for the same cores): a twentieth.
        "data-loading/cpu": 0.05,
        # Of the steps' windows: schedules and partitions never balance exactly; a twentieth
        # beyond the ideal is a stage or a rank worth moving work off.
        "pipeline-bubble": 0.05,
        "load-imbalance": 0.05,
        # Of an engine's summed layer time: one FP32 layer among many is a choice; a
        # hundredth of the time is a fallback worth checking.
        "precision-fallback": 0.01,
        # Reformat layers exist in every engine; from three percent they cost a measurable
        # share of inference.
        "reformat-overhead": 0.03,
        # Layers of one quantize, pad, bias or activation op: the builder fuses them when the
        # graph lets it, so three percent of an inference left apart is worth the export fix.
        "unfused-layers": 0.03,
        # Of the rank's wall time: the eager code between compiled regions, which a fix
        # compiles (an upper bound); a hundredth is worth finding the break for.
        "graph-break": 0.01,
        # Of the rank's wall time: batching a loop over heads or experts is a rewrite of one
        # module, worth it from a hundredth of the run.
        "python-loop": 0.01,
        # Of the rank's wall time, on a GPU rank: each sync stalls the launch queue, and the
        # rewrite (scatter/gather routing) is local to one module.
        "data-dependent-routing": 0.01,
        # On a CPU-only rank the syncs cost almost nothing: the pattern, repeated in a loop, is
        # the finding (it stalls every step once the code runs on a GPU), whatever its time.
        "data-dependent-routing/cpu": 0.0,
        # Of the rank's wall time: a hand-written norm or activation is one call to replace
        # (F.rms_norm, F.gelu), so even half a percent of the run is worth it, as for TF32.
        "unfused-elementwise": 0.005,
        # Of the rank's GPU busy time: a twentieth of it spent transposing between NCHW and
        # NHWC is worth one memory-format change (channels_last).
        "layout-conversion": 0.05,
        # Of the rank's wall time: once host work before and after the GPU window holds half
        # of it (the wall is more than twice that window), it, not the GPU, sets the pace.
        "host-outside-gpu": 0.5,
        # Of the rank's wall time: a kernel whose warps fetch sectors no thread asked for is
        # one indexing change (or a shared-memory tile) away; a hundredth is worth it.
        "uncoalesced-access": 0.01,
        # Of the rank's wall time: one constructor argument (broadcast_buffers=False), so a
        # hundredth of the run is worth it.
        "ddp-buffer-broadcast": 0.01,
        # Of an engine's summed layer time: any layer the DLA could not take keeps the GPU
        # busy and adds two switches; from a hundredth it is worth naming.
        "dla-fallback": 0.01,
    }
)

# Counts and sizes under which a pattern is not yet a finding, whatever its time.
# A kernel or an op's average call shorter than this is launch latency (the upper end of the
# usual 5-10 us), not work of its own: launch-overhead counts such kernels; low-occupancy and
# the roofline's far-from-roof points leave them out.
LAUNCH_LATENCY_NS = 10_000
# Attention score rows shorter than this are cheap enough that fusing them matters little.
MIN_ATTENTION_KEYS = 128
# A kernel has low occupancy when at least this share of its waves' capacity sat idle.
MIN_IDLE_WAVE_SHARE = 0.25
# ... or, for a launch of less than one wave (every SM slot it left empty stays empty for the
# whole kernel, as a paged-decode kernel at 0.77 waves), this share.
MIN_ONE_WAVE_IDLE = 0.1
# A copy smaller than this is latency-bound (a scalar's .item()), whatever its memory.
MIN_COPY_BYTES = 64 * 1024
# One-time work (context creation, first calls, compiling) holding this share of a rank's wall
# is said first: the rest of the report measures a window it dominates.
ONE_OFF_SHARE = 0.2
# Host time outside the GPU window under this is no stage of a program (a toy trace's edges).
MIN_OUTSIDE_NS = 1_000_000
MIN_KERNELS_FOR_GRAPHS = 20  # fewer launches make no pattern worth capturing as a CUDA graph
MIN_PAGEABLE_BYTES = 1 << 20  # per rank: less pageable traffic costs microseconds in all
MIN_STEADY_ALLOCATOR_CALLS = 2  # one cudaMalloc after warm-up can be a late first use
# Fragmentation: reserved at least this multiple of allocated, and by at least this many
# bytes (a small model's caching allocator holds spare blocks by design).
FRAGMENTATION_RATIO = 1.5
MIN_WASTE_BYTES = 1 << 30
MAX_NAMED_BREAKS = 3  # graph breaks named one by one in a hint's text before the rest are counted
# The share of a roof tuned kernels reach: 80-90% of DRAM bandwidth (STREAM-like copies) and
# 70-90% of tensor-core peak (large cuBLAS GEMMs) on datasheet roofs. The memory-bound finding
# claims an op's time beyond its roof at this share; the unfused-elementwise finding counts an
# op's time only up to it, so the two never claim the same time.
ACHIEVABLE_ROOF_SHARE = 0.8
# Hand-written model code (analyses/code_patterns.py). A block of ops repeated back to back
# this often in one module call is a Python loop (over heads, over experts); three in a row is
# still the q, k, v projections of one attention.
MIN_LOOP_ITERATIONS = 4
# Host syncs in one module call from which mask routing is a loop of them, not one gather.
MIN_ROUTING_SYNCS = 4
# Consecutive elementwise ops from which a chain is a hand-written norm or activation (x * w
# with a bias add is two or three).
MIN_CHAIN_OPS = 4


def worth_reporting(finding: str, gain: float, basis: float) -> bool:
    """Whether a gain (ns, or a share when basis is 1) is worth a finding of this entry (an
    entry of share 0 reports any pattern it found, even one whose gain is 0 here)."""
    share = MIN_GAIN_SHARE[finding]
    return gain >= share * basis if share == 0 else gain > 0 and gain >= share * basis


def severity_for(gain_ns: int, basis_ns: int) -> str:
    """High when a fix gives back at least HIGH_SHARE of the basis, medium from MEDIUM_SHARE."""
    share = gain_ns / basis_ns if basis_ns > 0 else 0.0
    return "high" if share >= HIGH_SHARE else "medium" if share >= MEDIUM_SHARE else "low"
