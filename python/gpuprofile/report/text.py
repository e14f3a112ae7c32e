"""The report as plain text, for terminals, CI logs and notebooks read without widgets."""

from __future__ import annotations

from collections import Counter
from typing import Any

from gpuprofile.analyses.measured import MEASURED_METRICS
from gpuprofile.report.diff_text import render_baseline
from gpuprofile.report.memory_text import allocator_lines, failure_lines, memory_lines
from gpuprofile.report.module_text import module_lines, owner_line, phase_line
from gpuprofile.report.schema import (
    Device,
    Gauge,
    GpuStep,
    HardwareRoofs,
    Hint,
    Number,
    Report,
    Roofline,
    Sampled,
)
from gpuprofile.report.workload_text import workload_line
from gpuprofile.units import (
    format_bytes,
    format_bytes_per_s,
    format_count,
    format_flops,
    format_fraction,
    format_intensity,
    format_percent,
    format_reading,
    format_time,
    printable,
)

# A roofline point above the DRAM roof (the widget's point details say the same, roofline.js).
ABOVE_DRAM = (
    "above DRAM bandwidth: caches served part of the traffic (minimal bytes are a lower bound, "
    "and L2 can deliver more than DRAM bandwidth)"
)


def _device_name(device: Device) -> str:
    """A device as its name, or, where the trace gives none, as its properties (a ROCm
    trace's deviceProperties may carry empty names beside the compute units and memory)."""
    if device.name:
        return _shorten(device.name)
    parts = [
        f"{device.sm_count} compute units" if device.sm_count else "",
        format_bytes(device.memory_bytes) if device.memory_bytes else "",
    ]
    return f"unnamed GPU: {', '.join(p for p in parts if p)}" if any(parts) else ""


def _devices_text(names: list[str]) -> str:
    """The devices of a rank, each name once with its count: "8 x NVIDIA A100" (a trace lists
    every GPU of the machine, not the one the rank used)."""
    names = [name for name in names if name]
    if not names:
        return "no device info"
    counts = Counter(names)
    return ", ".join(name if n == 1 else f"{n} x {name}" for name, n in counts.items())


def _shorten(name: object, width: int = 80) -> str:
    """A name from the trace as it is printed: escaped (``units.printable``), then cut."""
    text = printable(str(name))
    return text if len(text) <= width else text[: width - 1] + "…"


def render_text(report: Report) -> str:
    lines = []
    source = report.source
    title = f"gpuprofile report ({source.format}"
    title += f": {_shorten(source.path, 400)})" if source.path else ")"
    lines.append(title)
    if report.workload is not None:
        lines.append(workload_line(report.workload))
        lines.extend(f"  - {printable(why)}" for why in report.workload.evidence)
    lines.extend(f"{n.kind.upper()}: {n.text}" for n in report.notices)
    for rank in report.ranks:
        lines.extend(failure_lines(rank.memory, rank.rank))
    lines.extend(_hardware_lines(report.hardware))
    lines.extend(_hint_lines(report.hints, report.no_findings))
    lines.extend(_ranks_table(report))
    for rank in report.ranks:
        lines.append("")
        devices = _devices_text([_device_name(d) for d in rank.devices])
        lines.append(f"rank {rank.rank} ({devices}); wall {format_time(rank.wall_ns)}")
        c = rank.counts
        lines.append(
            f"  events: {c.kernels} kernels, {c.memcpy} memcpy, {c.memset} memset, "
            f"{c.ops} ops, {c.runtime} runtime calls"
        )
        lines.extend(phase_line(rank.phases, rank.wall_ns))
        gpu = rank.gpu
        if gpu is None:
            lines.append("  GPU: no GPU activity recorded")
        else:
            lines.append(
                f"  GPU window {format_time(gpu.window_ns)}: busy {format_time(gpu.busy_ns)} "
                f"({format_percent(gpu.busy_pct)}), idle {format_time(gpu.idle_ns)}; "
                f"compute {format_time(gpu.compute_ns)}, "
                f"non-compute {format_time(gpu.non_compute_ns)}"
            )
            lines.extend(_step_lines(gpu.steps))
        if rank.top_kernels:
            lines.append("  top kernels by total time:")
            for kernel in rank.top_kernels:
                lines.append(
                    _top_line(kernel.total_ns, kernel.count, kernel.label or kernel.name, 100)
                )
                lines.extend(_measured_line(kernel.measured))
        if rank.top_ops:
            lines.append("  top ops by inclusive time (nested ops overlap):")
            lines.extend(_top_line(op.total_ns, op.count, op.name) for op in rank.top_ops)
        lines.extend(module_lines(rank.modules, rank.rank))
        causes = {k: v for k, v in rank.idle_by_cause.items() if v > 0}
        if causes:
            ordered = sorted(causes.items(), key=lambda kv: -kv[1])
            lines.append(
                "  GPU idle by cause: " + ", ".join(f"{c} {format_time(ns)}" for c, ns in ordered)
            )
        lines.extend(_gauge_lines(report.gauges, rank.rank))
        lines.extend(memory_lines(rank.memory))
        if rank.copies:
            lines.append("  memcpy by kind:")
            for copy in rank.copies:
                rate = format_bytes_per_s(_rate(copy.bytes, copy.total_ns))
                size = "bytes unknown" if copy.bytes is None else format_bytes(copy.bytes)
                lines.append(
                    f"    {copy.kind:<8} x{copy.count:<6} {size:>9} "
                    f"in {format_time(copy.total_ns)} ({rate})"
                )
        lines.extend(_sampled_lines(rank.sampled))
    lines.extend(_inference_lines(report.inference))
    lines.extend(allocator_lines(report.allocator))
    lines.extend(_roofline_lines(report.roofline))
    if report.baseline:
        lines.extend(render_baseline(report.baseline))
    # Names are escaped where printed; this catches trace text inside hints and notices.
    return printable("\n".join(lines), lines=True)


def _inference_lines(inference: dict[str, Any] | None, limit: int = 5) -> list[str]:
    """An inference engine's latency, throughput, precision mix and heaviest layers."""
    if not inference:
        return []
    layers = inference.get("layers") or []
    runs = inference.get("profile_runs")
    head = (
        f"inference engine: {format_count(len(layers), 'layer')}"
        if layers
        else "inference engine (no layer profile)"
    )
    if runs:
        head += f", times averaged over {format_count(runs, 'profiled inference')}"
    lines = ["", head]
    for key, label in (("latency", "latency"), ("compute", "GPU compute")):
        stats = inference.get(key)
        if stats:
            cells = ", ".join(
                f"{name} {format_time(stats[f'{name}_ns'])}"
                for name in ("p50", "p90", "p95", "p99", "mean", "min", "max")
            )
            lines.append(f"  {label} ({format_count(stats['count'], 'inference')}): {cells}")
    if inference.get("throughput_per_s") is not None:
        lines.append(
            f"  throughput: {format_count(inference['throughput_per_s'])} inferences/s over "
            f"{format_time(inference['span_ns'])}"
        )
    mix = inference.get("precision_mix") or []
    if mix:
        lines.append(
            "  time by layer precision: "
            + ", ".join(f"{m['precision']} {format_fraction(m['share'])}" for m in mix)
        )
    shared = sorted(
        (layer for layer in layers if layer.get("share_pct") is not None),
        key=lambda layer: -layer["share_pct"],
    )
    if shared:
        lines.append("  heaviest layers (share of an inference, as trtexec measured it):")
        for layer in shared[:limit]:
            precision = f" [{layer['precision']}]" if layer.get("precision") else ""
            share, time = format_percent(layer["share_pct"]), format_time(layer["average_ns"])
            lines.append(f"    {share:>7}  {time:>10}  {_shorten(layer['name'], 70)}{precision}")
    lines.extend(f"  note: {note}" for note in inference.get("notes") or [])
    return lines


def _top_line(total_ns: int, count: int, name: str, width: int = 80) -> str:
    return f"    {format_time(total_ns):>10}  x{count:<6} {_shorten(name, width)}"


# GPU steps listed one per line; beyond, the first ones and a sum of all.
LISTED_STEPS = 5


def _step_lines(steps: list[GpuStep]) -> list[str]:
    """The GPU span of each step marker: one line per step, or, for many, the first few and
    the sum over all of them."""
    if not steps:
        return []

    def busy(window: int, busy_ns: int) -> str:
        share = format_fraction(busy_ns / window) if window else format_fraction(None)
        return f"busy {format_time(busy_ns)} ({share}), idle {format_time(window - busy_ns)}"

    lines = [f"  GPU steps ({len(steps)}, from the trace's GPU step markers):"]
    shown = steps if len(steps) <= LISTED_STEPS + 1 else steps[:LISTED_STEPS]
    for step in shown:
        lines.append(
            f"    {step.name}: window {format_time(step.window_ns)}, "
            + busy(step.window_ns, step.busy_ns)
        )
    if len(shown) < len(steps):
        window = sum(step.window_ns for step in steps)
        lines.append(
            f"    ... and {len(steps) - len(shown)} more; all {len(steps)}: window "
            f"{format_time(window)}, " + busy(window, sum(step.busy_ns for step in steps))
        )
    return lines


def _rate(nbytes: int | None, ns: int) -> float | None:
    """Bytes per second, unrounded (the report's gbps is rounded to 3 decimals: a 1-byte
    copy would read 0 B/s)."""
    return nbytes / (ns * 1e-9) if ns > 0 and nbytes is not None else None


def _measured_line(measured: dict[str, Number | None] | None) -> list[str]:
    """What a tool (Nsight Compute) measured on a kernel, under its line in the top list."""
    if not measured:
        return []
    cells = []
    if measured.get("bytes") is not None:
        cells.append(f"DRAM {format_bytes(measured['bytes'])}")
    if measured.get("bytes_per_s") is not None:
        cells.append(format_bytes_per_s(measured["bytes_per_s"]))
    if measured.get("flops") is not None:
        cells.append(format_flops(measured["flops"]))
    cells += [
        f"{label} {format_percent(measured[key])}"
        for key, label in MEASURED_METRICS.items()
        if measured.get(key) is not None
    ]
    return [f"{'':18}measured: " + ", ".join(cells)] if cells else []


RANK_COLUMNS = ("rank", "clock offset", "compute", "wait", "bubble", "exposed comm")


def _ranks_table(report: Report) -> list[str]:
    """One line per rank of a multi-rank job: its clock offset, compute (summed over the
    recorded steps), wait in collectives, bubble fraction (mean over steps), exposed
    communication; the straggler (the rank that caused the most wait) marked."""
    job = report.distributed
    if not job:
        return []
    compute: dict[int, int] = {}
    for step in job.steps:
        for row in step.ranks:
            compute[row.rank] = compute.get(row.rank, 0) + row.compute_ns
    stragglers = job.stragglers
    worst = stragglers[0] if stragglers and stragglers[0].wait_caused_ns else None
    clock = job.clock
    residual = clock.residual_ns
    how = f"clocks: {clock.method}" + (
        f", residual {format_time(residual)}" if residual is not None else ""
    )
    rows = []
    for rank in report.ranks:
        d = rank.distributed
        offset = d.clock_offset_ns if d else None
        cells = [
            str(rank.rank),
            ("+" if offset is not None and offset > 0 else "") + format_time(offset),
            format_time(compute.get(rank.rank)),
            format_time(d.wait_ns if d else None),
            format_fraction(d.bubble_fraction if d else None),
            format_time(d.exposed_comm_ns if d else None),
        ]
        mark = ""
        if worst is not None and worst.rank == rank.rank:
            mark = f"  <- straggler: others waited {format_time(worst.wait_caused_ns)} for it"
        rows.append((cells, mark))
    widths = [max(len(c), *(len(r[0][i]) for r in rows)) for i, c in enumerate(RANK_COLUMNS)]
    lines = ["", f"ranks ({how}):"]
    lines.append("  " + "  ".join(c.rjust(w) for c, w in zip(RANK_COLUMNS, widths, strict=True)))
    for cells, mark in rows:
        lines.append(
            "  " + "  ".join(c.rjust(w) for c, w in zip(cells, widths, strict=True)) + mark
        )
    return lines


def _gauge_lines(gauges: list[Gauge], rank: int) -> list[str]:
    lines = []
    for gauge in gauges:
        if gauge.rank != rank or gauge.key == "gpu-busy":  # busy is on the GPU line
            continue
        # The roof's label ends in its source, "(datasheet)": not inside parentheses again.
        roof = (
            f" of {format_reading(gauge.roof, gauge.unit)} "
            f"({format_fraction(gauge.fraction, 0)}), roof: {gauge.roof_label}"
            if gauge.fraction is not None
            else ""
        )
        value = "unknown" if gauge.value is None else format_reading(gauge.value, gauge.unit)
        lines.append(f"  {gauge.label}: {value}{roof}; {gauge.note}")
    return lines


def _sampled_lines(sampled: Sampled | None) -> list[str]:
    if not sampled:
        return []
    every = f" every {sampled.interval_s:g} s" if sampled.interval_s else ""
    dropped = f", {sampled.dropped} oldest dropped" if sampled.dropped else ""
    lines = [f"  sampled{every}{dropped} (min / mean / max):"]
    for c in sampled.counters:
        where = "" if c.device < 0 else f" · GPU {c.device}"
        values = " / ".join(format_reading(v, c.unit) for v in (c.min, c.mean, c.max))
        lines.append(f"    {c.name}{where}: {values} (x{c.count})")
    for source, reason in sampled.missing.items():
        lines.append(f"    {source}: none - {reason}")
    return lines


def _hardware_lines(hardware: HardwareRoofs) -> list[str]:
    if hardware.source == "unknown":
        reason = hardware.notes or "no datasheet entry for this device"
        return [f"hardware: roofs unknown ({reason})"]
    return [f"hardware: {hardware.name} ({hardware.source} roofs)"]


def _hint_lines(hints: list[Hint], no_findings: str = "", limit: int = 5) -> list[str]:
    lines = ["", "What to fix first:" if hints else "No findings worth a fix in this trace."]
    if not hints and no_findings:
        lines.append(f"  {no_findings}")
    for number, hint in enumerate(hints[:limit], 1):
        lines.append(
            f"  {number}. [{hint.severity}] {hint.title} "
            f"(gain ~{format_time(hint.gain_ns)}, {hint.confidence} confidence)"
        )
        lines.extend(owner_line(hint.modules, hint.sources))
        evidence = hint.evidence
        if evidence:
            events = sum(len(e.event_ids) for e in evidence)
            windows = sum(len(e.windows) for e in evidence)
            tables = sorted({e.table for e in evidence})
            lines.append(
                f"     evidence: {events} events in {', '.join(tables)}, {windows} time windows"
            )
        for step in hint.fix[:3]:
            lines.append(f"     fix: {step}")
    if len(hints) > limit:
        lines.append(f"  ... and {len(hints) - limit} more (--format json, or report()['hints'])")
    return lines


def _roofline_lines(roofline: Roofline, limit: int = 5) -> list[str]:
    coverage = roofline.coverage
    # Ops, or kernels that inherit their launching op's FLOPs (GPU traces).
    placed = [p for p in roofline.points if p.flops]
    if not placed:
        # Nothing to place on a roofline: one line that says why, not an empty section.
        why = roofline.missing_flops or "no FLOP counts"
        return ["", f"roofline: no op or kernel has a FLOP count ({why})"]
    lines = [""]
    lines.append(
        "roofline: FLOP counts cover "
        + (
            f"{format_fraction(coverage, 0)} of the time"
            if coverage is not None
            else "an unknown share"
        )
    )
    for point in placed[:limit]:
        pct = point.pct_of_roof
        if pct is not None:
            roof = f"{point.bound}-bound, {format_percent(pct, 0)} of the {point.roof} roof"
        elif point.bound in ("compute", "memory"):  # past what the roof allows
            roof = f"{point.bound}-bound, far past the {point.roof} roof (see the notices)"
        else:
            roof = "roof unknown"
        if pct is not None and pct > 100 and point.roof == "dram":
            roof += f"; {ABOVE_DRAM}"
        name = _shorten(point.label or point.name, 80 if point.label else 40)
        intensity = point.intensity
        # Bytes are unknown when an input's dtype or shape was not recorded.
        per_byte = format_intensity(intensity) if intensity is not None else "bytes unknown"
        lines.append(
            f"  {format_time(point.time_ns):>10}  x{point.count:<6} {name}  {per_byte}, {roof}"
        )
    return lines
