"""The versioned report: what every view (text, JSON, widget) shows, computed once."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import msgspec
import numpy as np

from gpuprofile.analyses.clock import ONE_HOST
from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.detectors import run_detectors
from gpuprofile.analyses.gpu_steps import gpu_steps
from gpuprofile.analyses.hints import Hint
from gpuprofile.analyses.idle import idle_by_cause
from gpuprofile.analyses.inference import precision_mix
from gpuprofile.analyses.measured import measured_by_name
from gpuprofile.analyses.module_rows import module_rows, rank_phases
from gpuprofile.analyses.names import codes
from gpuprofile.analyses.owners import owners, source_refs
from gpuprofile.analyses.roofline import point_members
from gpuprofile.analyses.summary import copies, counts, top_kernels, top_ops
from gpuprofile.hardware.properties import trace_devices
from gpuprofile.report.distributed import job_report, rank_job_report
from gpuprofile.report.notices import (
    carry_over_notices,
    compile_notices,
    notices,
    one_off_notices,
)
from gpuprofile.report.schema import SCHEMA, Report, jsonable, to_report
from gpuprofile.trace.model import Trace
from gpuprofile.units import format_bytes_per_s, format_fraction, format_percent, format_time

ROOFLINE_POINT_FIELDS = (
    "key",
    "level",
    "name",
    "shapes",
    "rank",
    "count",
    "time_ns",
    "flops",
    "bytes",
    "flops_source",
    "bytes_source",
    "precision",
    "tensor_cores",
    "intensity",
    "achieved_flops_per_s",
    "achieved_bytes_per_s",
    "bound",
    "roof",
    "attainable_flops_per_s",
    "pct_of_roof",
    "time_at_roof_ns",
    "saved_ns",
)


# Where FLOP counts come from in each format: what a point without one lacks.
MISSING_FLOPS = {
    "kineto": "FLOPs need recorded input shapes and an op with a known formula",
    "capture": "FLOPs need recorded input shapes and an op with a known formula",
    "nsys": "Nsight Systems counts no FLOPs or bytes: profile these kernels with Nsight Compute",
    "ncu": (
        "the CSV has no SASS op counts (smsp__sass_thread_inst_executed_op_*, collected by "
        "ncu's roofline sections)"
    ),
    "tensorrt": "a trtexec profile counts no FLOPs",
    "xplane": "the XPlane records no flops stats for this work",
}


def build_report(analysis: Analysis, *, top: int = 10) -> Report:
    """The report of an analysed trace (schema ``gpuprofile.report/1``, report/schema.py).
    ``top``: kernels and ops listed per rank."""
    return to_report(plain_report(analysis, top=top))


def plain_report(analysis: Analysis, *, top: int = 10) -> dict[str, Any]:
    """The report's sections as gathered, in plain JSON types (numpy scalars as Python
    numbers, NaN as None), before the contract checks them: a key the Structs lack would be
    dropped there, so tests hold report_json(build_report(a)) to this, key by key."""
    trace = analysis.trace
    meta = trace.meta
    idle = idle_by_cause(analysis.idle_gaps)
    ranks = [_rank_report(analysis, rank, top) for rank in trace.ranks]
    for rank in ranks:
        rank["idle_by_cause"] = idle.get(rank["rank"], {})
        rank["distributed"] = rank_job_report(analysis, rank["rank"])
        rank["modules"] = []  # filled after jsonable, below
        phases = rank_phases(analysis, rank["rank"])
        rank["phases"] = None if phases is None else asdict(phases)
        rank["memory"] = msgspec.to_builtins(analysis.memory_use(rank["rank"]))
    total_idle: dict[str, int] = {}
    for causes in idle.values():
        for cause, ns in causes.items():
            total_idle[cause] = total_idle.get(cause, 0) + ns
    roofline = analysis.roofline
    report = {
        "schema": SCHEMA,
        "source": {
            "path": meta.source.path,
            "format": meta.source.format,
            "version": meta.source.version,
        },
        "partial": meta.partial,
        # {"windows", "events" (None: not counted), "max_events"} when --max-events dropped
        # recorded windows.
        "dropped": msgspec.to_builtins(meta.dropped),
        # What the capture could not do (a recorded window not read, samples not exported).
        "capture_errors": list(meta.errors),
        # Each of the above (and which steps --steps recorded) as one line for every view.
        "notices": [
            *one_off_notices(analysis.one_off_costs, {r: analysis.wall_ns(r) for r in trace.ranks}),
            *notices(meta),
            *_clock_notice(analysis),
            *_device_notice(trace),
            *({"kind": "roofline", "text": note} for note in roofline.notes),
            *carry_over_notices(analysis.carry_over, len(trace.ranks)),
            *compile_notices(analysis.compiled, trace.ranks),
        ],
        "hardware": analysis.hardware.to_dict(),
        "gauges": [gauge.to_dict() for gauge in analysis.gauges],
        "hints": [_with_owners(analysis, hint) for hint in run_detectors(analysis)],
        "idle_by_cause": total_idle,
        "roofline": {
            "coverage": roofline.coverage,
            "points": _roofline_points(analysis, roofline.points, limit=50),
            "missing_flops": MISSING_FLOPS.get(meta.source.format, MISSING_FLOPS["kineto"]),
        },
        "ranks": ranks,
        # The job view of a multi-rank trace (None for one rank): see report/distributed.py.
        "distributed": job_report(analysis),
        # An inference engine's profile (TensorRT): its layers, latency percentiles and
        # throughput (TraceMeta.inference) and the time per layer precision; None otherwise.
        "inference": None
        if meta.inference is None
        else {**meta.inference, "precision_mix": precision_mix(trace)},
        # What the program is (analyses/workload.py): every view shows it first.
        "workload": asdict(analysis.workload),
    }
    report["no_findings"] = (
        ""
        if report["hints"]
        else _no_findings(analysis, ranks, report["roofline"], report["gauges"])
    )
    report["allocator"] = msgspec.to_builtins(meta.allocator)
    plain: dict[str, Any] = jsonable(report)
    # Module rows are built in plain JSON types already (ModuleRow.to_dict): a model's
    # thousand rows would double jsonable's walk of the report.
    for rank in plain["ranks"]:
        rank["modules"] = [row.to_dict() for row in module_rows(analysis, rank["rank"])]
    return plain


def _no_findings(
    analysis: Analysis,
    ranks: list[dict[str, Any]],
    roofline: dict[str, Any],
    gauges: list[dict[str, Any]],
) -> str:
    """Why a report has no hint, from its own figures: how busy the GPU was, whether graphs
    replay its launches, how much of its time the roofline could judge and the DRAM bandwidth
    it reached (a performance engineer's first questions), so "no findings" is never mistaken
    for "nothing to gain" where the trace cannot tell."""
    busy = [(r["rank"], r["gpu"]) for r in ranks if r["gpu"] is not None]
    if not busy:
        return "The trace holds no GPU work; its host ops gave no finding."
    rank, gpu = min(busy, key=lambda item: item[1]["busy_pct"])
    where = f" on rank {rank}, the least busy" if len(busy) > 1 else ""
    if analysis.trace.meta.source.format == "ncu":
        parts = ["Nsight Compute replayed each kernel alone, so no idle time or launch cost shows"]
    else:
        parts = [
            f"the GPU was busy {format_percent(gpu['busy_pct'])} of its window{where} "
            f"(idle {format_time(gpu['idle_ns'])})"
        ]
    if analysis.workload.execution == "cuda-graphs":
        parts.append("its kernels replay CUDA graphs, so launches cost it little")
    dram = next((g for g in gauges if g["key"] == "dram-bandwidth" and g["rank"] == rank), None)
    if dram is not None and dram["value"] is not None:
        of_roof = (
            f", {format_fraction(dram['fraction'])} of {dram['roof_label']}"
            if dram["fraction"] is not None
            else ", against no roof known for this GPU"
        )
        over = f" {dram['note']}" if dram["note"] else ""
        parts.append(f"DRAM traffic ran at {format_bytes_per_s(dram['value'])}{over}{of_roof}")
    coverage = roofline["coverage"]
    if coverage is None or coverage < 0.5:
        known = "none" if not coverage else format_fraction(coverage)
        parts.append(
            f"how near their compute roof the kernels run is not judged: FLOP counts cover "
            f"{known} of GPU time ({roofline['missing_flops']})"
        )
    else:
        parts.append(
            f"the work with FLOP counts ({format_fraction(coverage)} of GPU time) was judged "
            "against the roofs"
        )
    text = "; ".join(parts)
    return text[0].upper() + text[1:] + "."


# Aligned clocks whose collectives still end further apart than this make waits uncertain.
CLOCK_RESIDUAL_NOTICE_NS = 1_000_000


def _clock_notice(analysis: Analysis) -> list[dict[str, str]]:
    residual = analysis.alignment.residual_ns
    one_host = analysis.alignment.method == ONE_HOST  # an exact clock: the ends truly differ
    if residual is None or residual < CLOCK_RESIDUAL_NOTICE_NS or one_host:
        return []
    return [
        {
            "kind": "clock",
            "text": (
                f"after aligning the ranks' clocks their collectives still end "
                f"{format_time(residual)} apart (median), so waits and stragglers are uncertain "
                "by that much: the traces may miss some collectives (trimmed or sampled), or "
                "ranks were descheduled on a busy host."
            ),
        }
    ]


# Device properties listed in a notice; the rest are counted.
MAX_LISTED_PROPERTIES = 5


def _device_notice(trace: Trace) -> list[dict[str, str]]:
    """The device properties no analysis could use (hardware/properties.py), said once each
    over all ranks: each was taken as unknown, and the roofs and gauges say what that left."""
    ignored = list(
        dict.fromkeys(why for rank in trace.ranks for why in trace_devices(trace, rank).ignored)
    )
    if not ignored:
        return []
    listed = "; ".join(ignored[:MAX_LISTED_PROPERTIES])
    more = len(ignored) - MAX_LISTED_PROPERTIES
    return [
        {
            "kind": "device",
            "text": (
                f"device properties not used, taken as unknown: {listed}"
                + (f"; and {more} more" if more > 0 else "")
            ),
        }
    ]


# Modules and lines are named on hints, roofline points and top ops here, in one place: each
# needs the Analysis's modules and sources, which the detectors and the roofline need not know,
# and the report is what every view reads them from.


def _with_owners(analysis: Analysis, hint: Hint) -> dict[str, Any]:
    """The hint as the report writes it, with the modules and lines that own its evidence."""
    out = hint.to_dict()
    parts = [(e.table, np.asarray(e.event_ids, np.int64), None) for e in hint.evidence]
    paths, lines = owners(analysis, parts)
    # A detector that knows its owners without events (dynamo's break lines) keeps them.
    out["modules"] = paths or list(hint.modules)
    out["sources"] = source_refs(lines) if lines or not hint.sources else out["sources"]
    return out


def _top_ops(analysis: Analysis, rank: int, top: int) -> list[dict[str, Any]]:
    """The heaviest ops by name, each with the modules its calls of that name ran in."""
    rows = analysis.rank_rows("ops", rank)
    ops = analysis.trace.ops
    names = ops["name"]
    code = codes(names)[rows]
    ids = ops["id"].to_numpy()[rows]
    out = []
    for op in top_ops(analysis.trace, rank, top):
        wanted = names.cat.categories.get_loc(op.name)
        paths, _ = owners(analysis, [("ops", ids[code == wanted], None)])
        out.append({**asdict(op), "modules": paths})
    return out


def _roofline_points(analysis: Analysis, points: Any, limit: int) -> list[dict[str, Any]]:
    """The ``limit`` heaviest points that can be placed (known FLOPs) first, then the heaviest
    others: on a multi-rank job the heaviest are collectives without FLOPs, and a roofline of
    those alone would be empty while FLOP counts cover much of the time."""
    # Row positions, not frames: only the chosen rows are copied, never the whole table.
    by_time = points["time_ns"].reset_index(drop=True).sort_values(ascending=False, kind="stable")
    order = by_time.index.to_numpy()
    placed = points["flops"].to_numpy()[order] > 0
    chosen = np.concatenate([order[placed][:limit], order[~placed]])[:limit]
    heaviest = points.iloc[chosen].sort_values("time_ns", ascending=False, kind="stable")
    records = heaviest.to_dict("records")
    members = point_members(analysis.roofline_members, {r["key"] for r in records})
    out = []
    for record in records:
        found = members.get(record["key"])
        parts = [] if found is None else [(found.table, found.ids, found.time_ns)]
        paths, lines = owners(analysis, parts)
        out.append(
            {
                **{k: record.get(k) for k in ROOFLINE_POINT_FIELDS},
                "event_ids": record["event_ids"],
                "modules": paths,
                "sources": source_refs(lines),
                # A kernel's printed name; an op reads as its own name.
                "label": analysis.kernel_label(record["name"])
                if record["level"] == "kernel"
                else "",
            }
        )
    return out


def _rank_report(analysis: Analysis, rank: int, top: int) -> dict[str, Any]:
    trace = analysis.trace
    gpu = analysis.gpu_time(rank)
    return {
        "rank": rank,
        "devices": [
            {k: d.get(k) for k in ("id", "name", "memory_bytes", "sm_count", "compute_capability")}
            for d in _used_devices(analysis, rank)
        ],
        "wall_ns": analysis.wall_ns(rank),
        "gpu": None
        if gpu is None
        else {
            "window_ns": gpu.window_ns,
            "busy_ns": gpu.busy_ns,
            "idle_ns": gpu.idle_ns,
            "busy_pct": round(gpu.busy_pct, 3),
            "compute_ns": gpu.compute_ns,
            "non_compute_ns": gpu.non_compute_ns,
            # Per GPU-side step marker (ProfilerStep#N): its span, and the busy time within.
            "steps": [
                {
                    "name": s.name,
                    "window_ns": s.window_ns,
                    "busy_ns": s.busy_ns,
                    "idle_ns": s.idle_ns,
                }
                for s in gpu_steps(analysis, rank)
            ],
        },
        "counts": counts(analysis, rank),
        "top_kernels": _top_kernels(analysis, rank, top),
        "top_ops": _top_ops(analysis, rank, top),
        "copies": [
            {**asdict(c), "gbps": None if c.gbps is None else round(c.gbps, 3)}
            for c in copies(trace, rank)
        ],
        "sampled": _sampled(analysis, rank),
    }


def _top_kernels(analysis: Analysis, rank: int, top: int) -> list[dict[str, Any]]:
    """The heaviest kernels, their class and why, and what a tool measured on them (None:
    nothing)."""
    trace = analysis.trace
    kernels = top_kernels(trace, rank, top)
    measured = measured_by_name(trace, rank, [k.name for k in kernels])
    classes = [analysis.kernel_classes.of(k.name) for k in kernels]
    return [
        {
            **asdict(k),
            "class": kind,
            "measured": measured.get(k.name),
            "class_reason": reason,
            "label": analysis.kernel_label(k.name),
        }
        for k, (kind, reason) in zip(kernels, classes, strict=True)
    ]


def _sampled(analysis: Analysis, rank: int) -> dict[str, Any] | None:
    """The sampler's gauges of one rank: per counter and device its unit, min, mean (of the
    samples, taken at a fixed interval) and max, and the sources that gave nothing, with why."""
    trace = analysis.trace
    sampling = trace.meta.sampling
    counters = analysis.rank_table("counters", rank)
    if sampling is None and not len(counters):
        return None
    # One aggregation of the values (a named .agg of five columns costs 4 ms of pandas).
    groups = counters.groupby(["name", "device"], sort=True, observed=True)
    stats = groups["value"].agg(["min", "mean", "max", "size"])
    units = groups["unit"].first()
    return {
        "interval_s": sampling.interval_s if sampling else None,
        "dropped": sampling.dropped if sampling else 0,
        "counters": [
            {
                "name": str(name),
                "device": int(device),
                "unit": str(unit),
                "min": float(low),
                "mean": float(mean),
                "max": float(high),
                "count": int(count),
            }
            for (name, device), unit, low, mean, high, count in zip(
                stats.index,
                units.to_numpy(),
                stats["min"].to_numpy(),
                stats["mean"].to_numpy(),
                stats["max"].to_numpy(),
                stats["size"].to_numpy(),
                strict=True,
            )
        ],
        "missing": dict(sampling.missing) if sampling else {},
    }


def _used_devices(analysis: Analysis, rank: int) -> list[dict[str, Any]]:
    """Traces list every device on the host; a rank's report names the ones it ran on."""
    trace = analysis.trace
    devices = list(trace_devices(trace, rank).devices)  # checked: ids, names, sizes
    used: set[int] = set()
    for name in ("kernels", "memcpy", "memset"):
        device = trace.table(name)["device"].to_numpy()[analysis.rank_rows(name, rank)]
        used.update(int(d) for d in np.unique(device))
    chosen = [d for d in devices if d.get("id") in used]
    return chosen or devices
