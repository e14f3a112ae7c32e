"""One-time costs: work a program does once, at its start, that a profile of its first steps
holds but its steady state does not. When it dominates a rank's wall, the report says so
first (report/notices.py), with each call, its time and where it ran.

What counts, per rank:

- the rank's first CUDA/HIP runtime call, when it is long: the context is created inside
  whichever call comes first (``cudaDeviceGetStreamPriorityRange`` inside ``aten::to`` is
  ``model.cuda()``'s first copy); in a trace of ranges alone (an NVTX CSV), the first range
  the program named for a CUDA call (``cudaMallocManaged``);
- a first call far longer than the calls of its name that follow (``FIRST_CALL_RATIO``), or a
  long call made once: the first kernel launch loads its module (lazy loading), the first
  ``cudaMalloc``/``cudaFree`` grows the allocator, ``cudaHostRegister`` pins memory; calls
  that wait for the GPU (syncs, blocking copies) are no one-time work and are left out;
- any launch call of ``MIN_SLOW_LAUNCH_NS`` or more and FIRST_CALL_RATIO times its name's
  median: the first launch of another kernel, whose module loads then (a launch otherwise
  takes microseconds; six first launches of 111-332 ms each are all cold start);
- compiling: torch.compile's compile ranges (Analysis.compiled), and JIT compilation ops
  (NVRTC, nvFuser, Triton autotuning);
- the profiler's own start (``start_trace`` in a JAX profile).

Each is at least ``MIN_ONE_OFF_NS`` long.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from gpuprofile.analyses.frames import is_user_frame
from gpuprofile.analyses.intervals import union_length
from gpuprofile.analyses.names import code_texts, codes, matches, strings

if TYPE_CHECKING:
    from gpuprofile.analyses.compiled import CompiledCode
    from gpuprofile.analyses.lookups import Lookups

MIN_ONE_OFF_NS = 10_000_000  # shorter one-time work is no cost a profile needs to name
# A launch this long is no launch cost (microseconds) but a module loading; a millisecond of it
# dominates a short trace (a 6.5 ms first launch is two thirds of a toy step).
MIN_SLOW_LAUNCH_NS = 1_000_000
FIRST_CALL_RATIO = 50.0  # a first call this many times its name's median later call
_WAITS = re.compile(r"Synchronize|Memcpy|Query|Wait|Sleep|Poll", re.IGNORECASE)
_LAUNCH = re.compile(r"Launch", re.IGNORECASE)
_ALLOCATOR = re.compile(r"Malloc|Free|Alloc|MemPool", re.IGNORECASE)
_PINNING = re.compile(r"HostRegister|MallocHost|HostAlloc|HostMalloc", re.IGNORECASE)
_JIT = re.compile(
    r"nvrtc|fusion_?compile|FusionExecutor|nvfuser.*compile|autotun|benchmark_all_configs"
    r"|jit_compile|compile_kernel",
    re.IGNORECASE,
)
# A range named for a CUDA/HIP runtime or driver call.
_RUNTIME_NAME = re.compile(r"^(cuda|hip|cu)[A-Z]\w*$")
_PROFILER_START = re.compile(r"start_trace|ProfilerStart|profiler.*\bstart\b", re.IGNORECASE)


@dataclass(frozen=True)
class OneOff:
    """One piece of one-time work on one rank."""

    rank: int
    what: str  # "CUDA context creation", "lazy module loading", "compilation", ...
    call: str  # the runtime call or op that holds it
    start_ns: int
    dur_ns: int
    op: str = ""  # the outermost aten op it ran inside ("aten::to"), "" unknown
    frame: str = ""  # the innermost frame of the user's code around it, "" unknown


def one_off_costs(facts: Lookups, compiled: CompiledCode) -> list[OneOff]:
    """Every rank's one-time work (see the module docstring), longest first per rank."""
    out: list[OneOff] = []
    for rank in facts.trace.ranks:
        found = _runtime_one_offs(facts, rank) + _op_one_offs(facts, rank, compiled)
        out += sorted(found, key=lambda o: -o.dur_ns)
    return out


def one_off_ns(found: list[OneOff], rank: int) -> int:
    """The rank's one-time work, its overlaps counted once."""
    mine = [o for o in found if o.rank == rank]
    start = np.array([o.start_ns for o in mine], np.int64)
    return union_length(start, start + np.array([o.dur_ns for o in mine], np.int64))


def _runtime_one_offs(facts: Lookups, rank: int) -> list[OneOff]:
    runtime = facts.trace.runtime
    rows = facts.rank_rows("runtime", rank)
    if not len(rows):
        return []
    start = runtime["start_ns"].to_numpy()[rows]
    dur = runtime["dur_ns"].to_numpy()[rows]
    # Names as category codes: comparing codes, not 10^4 texts, per distinct name.
    code = codes(runtime["name"])[rows]
    text = code_texts(runtime["name"])
    order = np.argsort(start, kind="stable")
    ordered = code[order]
    out: list[OneOff] = []
    first = int(order[0])
    first_name = text[code[first]]
    context = dur[first] >= MIN_ONE_OFF_NS and not _WAITS.search(first_name)
    if context:
        vendor = "HIP" if first_name.startswith("hip") else "CUDA"
        out.append(_at(facts, rank, f"{vendor} context creation", first_name, rows[first]))
    for name_code in dict.fromkeys(ordered.tolist()):
        name = text[name_code]
        if _WAITS.search(name):
            continue
        mine = order[ordered == name_code]  # this name's calls, in time order
        if _LAUNCH.search(name) and len(mine) > 1:
            median = max(float(np.median(dur[mine])), 1.0)
            slow = mine[
                (dur[mine] >= MIN_SLOW_LAUNCH_NS) & (dur[mine] >= FIRST_CALL_RATIO * median)
            ]
            out += [
                _at(facts, rank, "lazy module loading (first launch)", name, rows[i])
                for i in slow.tolist()
                if i != first or not context  # a first call that is not the context's
            ]
            continue
        head = int(mine[0])
        if head == first or dur[head] < MIN_ONE_OFF_NS:
            continue
        rest = dur[mine[1:]]
        if len(rest) and dur[head] < FIRST_CALL_RATIO * max(float(np.median(rest)), 1.0):
            continue
        out.append(_at(facts, rank, _what(name), name, rows[head]))
    return out


def _what(name: str) -> str:
    if _LAUNCH.search(name):
        return "lazy module loading (first launch)"
    if _PINNING.search(name):
        return "pinning host memory"
    if _ALLOCATOR.search(name):
        return "first allocation"
    return "first call"


def _op_one_offs(facts: Lookups, rank: int, compiled: CompiledCode) -> list[OneOff]:
    out: list[OneOff] = []
    for a, b in compiled.compile_windows.get(rank, ()):
        if b - a >= MIN_ONE_OFF_NS:
            out.append(OneOff(rank, "torch.compile compilation", "compile", a, b - a))
    ops = facts.trace.ops
    rows = facts.rank_rows("ops", rank)
    if not len(rows):
        return out
    dur = ops["dur_ns"].to_numpy()[rows]
    long = rows[dur >= MIN_ONE_OFF_NS]
    # A program that marks its own CUDA calls (NVTX ranges named cudaMallocManaged ...) in a
    # trace without runtime calls: its first such range holds the context's creation.
    if not len(facts.rank_rows("runtime", rank)):
        named = rows[matches(ops["name"], _RUNTIME_NAME, rows=rows)]
        if len(named):
            first = int(named[np.argmin(ops["start_ns"].to_numpy()[named])])
            name = str(ops["name"].iat[first])
            if ops["dur_ns"].to_numpy()[first] >= MIN_ONE_OFF_NS and not _WAITS.search(name):
                vendor = "HIP" if name.startswith("hip") else "CUDA"
                out.append(_at(facts, rank, f"{vendor} context creation", name, first, "ops"))
    jit = matches(ops["name"], _JIT, rows=long)
    profiler_start = matches(ops["name"], _PROFILER_START, rows=long)
    for at in np.flatnonzero(jit | profiler_start).tolist():
        row = int(long[at])
        name = str(ops["name"].iat[row])
        what = "JIT compilation" if jit[at] else "the profiler's own start"
        out.append(_at(facts, rank, what, name, row, table="ops"))
    return out


def _at(
    facts: Lookups, rank: int, what: str, call: str, row: int, table: str = "runtime"
) -> OneOff:
    """The one-off at a row, with the innermost aten op and user frame around it on its thread."""
    rows = facts.trace.table(table)
    start = int(rows["start_ns"].to_numpy()[row])
    dur = int(rows["dur_ns"].to_numpy()[row])
    tid = int(rows["tid"].to_numpy()[row])
    ops = facts.trace.ops
    mine = facts.rank_rows("ops", rank)
    op_start = ops["start_ns"].to_numpy()[mine]
    op_end = op_start + ops["dur_ns"].to_numpy()[mine]
    around = mine[
        (ops["tid"].to_numpy()[mine] == tid) & (op_start <= start) & (op_end >= start + dur)
    ]
    around = around[around != row] if table == "ops" else around
    names = strings(ops["name"], rows=around)
    depth = ops["depth"].to_numpy()[around]
    by_depth = np.argsort(-depth, kind="stable")  # innermost first
    # The op the program called (the outermost: aten::to, not the aten::empty_strided inside
    # it), and the innermost frame of its own code.
    op = next((names[i] for i in by_depth[::-1] if names[i].startswith("aten::")), "")
    frame = next((names[i] for i in by_depth if is_user_frame(names[i])), "")
    return OneOff(rank, what, call, start, dur, op, frame)
