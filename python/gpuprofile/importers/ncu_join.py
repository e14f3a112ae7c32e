"""A capture's kernels with the measurements Nsight Compute made of the same launches.

ncu replays a program's launches one by one, usually a subset (``--launch-skip``,
``--launch-count``, ``--kernel-name``); a timeline (Kineto, nsys) of a run of the same program
has the real times but no counters. The i-th launch of a kernel name in the CSV is taken for the
i-th kernel of that name on the timeline, in start order. Names are compared in a normalised
form, since the tools spell them differently: ncu's "Kernel Name" is demangled with or without
its parameter list, or only the function's base name (``--print-kernel-base function``), where
Kineto writes the full demangled signature.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections import defaultdict

import numpy as np

from gpuprofile.trace.model import Trace

_ANONYMOUS = re.compile(r"\(anonymous namespace\)|<unnamed>|\bunnamed>")
_SPACES = re.compile(r"\s+")


def full_key(name: str) -> str:
    """A kernel name without its return type, its parameter list and spacing differences:
    "void ns::k<4, float>(int, float*)" -> "ns::k<4,float>"."""
    text = _ANONYMOUS.sub("(anonymous)", name.strip())
    text = text.removeprefix("void ").strip()
    text = _without_parameters(text)
    return _SPACES.sub("", text)


def base_key(name: str) -> str:
    """The function's own name, without namespaces and template arguments: "k"."""
    text = full_key(name)
    depth, kept = 0, []
    for char in text:
        if char == "<":
            depth += 1
        elif char == ">":
            depth = max(depth - 1, 0)
        elif depth == 0:
            kept.append(char)
    return "".join(kept).rsplit("::", 1)[-1]


def _without_parameters(text: str) -> str:
    """The text before its trailing balanced "(...)" (a signature's parameters), if any."""
    if not text.endswith(")"):
        return text
    depth = 0
    for at in range(len(text) - 1, -1, -1):
        if text[at] == ")":
            depth += 1
        elif text[at] == "(":
            depth -= 1
            if depth == 0:
                return text[:at] if at > 0 else text
    return text


def with_ncu(trace: Trace, ncu: Trace) -> Trace:
    """``trace`` whose kernels carry the measured flops, bytes, metrics (and occupancy where
    they had none) of the matching launches of ``ncu`` (an Nsight Compute Trace, load_ncu).

    Parameters:
        trace: a timeline of the run (any format).
        ncu: the Nsight Compute launches of the same program.

    Returns:
        A new Trace; unmatched kernels keep NaN, and a note in ``meta.notes`` says how many
        launches matched and how many did not.
    """
    kernels = trace.kernels
    names = kernels["name"].astype(str).to_numpy()
    order = np.argsort(kernels["start_ns"].to_numpy(), kind="stable")
    profiled = ncu.kernels.sort_values("id", kind="stable")
    by_base = any("::" not in full_key(n) and "<" not in full_key(n) for n in profiled["name"])
    key = base_key if by_base else full_key
    positions: dict[str, list[int]] = defaultdict(list)
    for row in order.tolist():
        positions[key(names[row])].append(row)
    seen: dict[str, int] = defaultdict(int)
    flops = kernels["flops"].to_numpy().copy()
    nbytes = kernels["bytes"].to_numpy().copy()
    metrics = kernels["metrics"].to_numpy().copy()
    occupancy = kernels["occupancy"].to_numpy().copy()
    matched = 0
    for launch in profiled.itertuples(index=False):
        name_key = key(str(launch.name))
        nth = seen[name_key]
        seen[name_key] += 1
        rows = positions.get(name_key, [])
        if nth >= len(rows):
            continue
        row = rows[nth]
        flops[row], nbytes[row], metrics[row] = launch.flops, launch.bytes, launch.metrics
        if not math.isfinite(occupancy[row]):
            occupancy[row] = launch.occupancy
        matched += 1
    joined = kernels.assign(flops=flops, bytes=nbytes, occupancy=occupancy)
    joined["metrics"] = metrics
    note = (
        f"Nsight Compute ({ncu.meta.source.path}): {matched} of {len(profiled)} profiled "
        f"launches matched this trace's kernels by name and order; "
        f"{len(kernels) - matched} of the trace's {len(kernels)} kernels have no measured "
        f"FLOPs or bytes.{_devices_differ(trace, ncu)}"
    )
    source = dataclasses.replace(trace, kernels=joined)
    return source.with_meta(notes=(*trace.meta.notes, note))


def _devices_differ(trace: Trace, ncu: Trace) -> str:
    """A sentence when the CSV and the trace name different GPUs: its figures then describe
    another device's run."""
    theirs = {str(d.get("name")) for r in ncu.ranks for d in ncu.devices(r) if d.get("name")}
    ours = {str(d.get("name")) for r in trace.ranks for d in trace.devices(r) if d.get("name")}
    if not theirs or not ours or theirs & ours:
        return ""
    return (
        f" The CSV was recorded on {', '.join(sorted(theirs))}, this trace on "
        f"{', '.join(sorted(ours))}: its figures are another device's."
    )
