"""torch.compile in a trace: the compiled regions, the time spent compiling against the time
the compiled code ran, the kernels each region ran with the ops Inductor fused into them, the
module that owns each, and the breaks between regions.

What the trace holds (torch 2.x, Kineto):
- each call of a compiled frame is a cpu_op ``Torch-Compiled Region: {frame}/{recompile}``; a
  frame's first call compiles inside that range;
- compiling is timed by ``dynamo_timed`` ranges (``_compile.compile_inner (dynamo_timed)``,
  ``backward_compile (dynamo_timed)``, ...) and ``entire_frame_compile``: their union is the
  compile time, a region's run time is its length less the compile time inside it;
- Inductor's kernels: on a GPU the launch (a cpu_op) and the kernel carry one name
  (``triton_poi_fused_add_cos_sin_0``); on a CPU a kernel is a cpu_op only when the code was
  generated with ``torch._inductor.config.cpp.enable_kernel_profile`` (``graph_0_cpp_fused_...``);
  calls to ATen kernels Inductor does not generate (``extern_kernels.mm``) are the outermost aten
  ops of a region (``aten::addmm``) and the kernels they launch;
- a graph break ends a region: the code up to the next region runs eagerly, and the frame that
  resumes after it is a new frame with a higher number. One call of a compiled function with
  k breaks is thus k + 1 regions in a row, frame numbers rising, each following call the same.
A kernel's module is the one the op tree gives it (Analysis.modules): the innermost module call
around the region (a compiled graph inlines the module calls inside it, so its kernels belong
to the module that called the compiled code); the fused ops say what each kernel does there.
Inductor's provenance tracking (torch 2.13: off unless INDUCTOR_PROVENANCE=1 or
TORCH_COMPILE_DEBUG=1) writes kernel -> post-grad -> pre-grad FX node names to
``inductor_provenance_tracking_node_mappings.json`` in its debug directory: node names, not module
paths (those need the dumped graphs' ``nn_module_stack``), and nothing of it reaches the trace, so
it is not read here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from gpuprofile.analyses.inductor_names import parse_kernel_name
from gpuprofile.analyses.intervals import merged_blocks
from gpuprofile.analyses.lookups import innermost_everywhere, outermost_with, read_only
from gpuprofile.analyses.modules import NO_MODULE
from gpuprofile.analyses.names import codes, matches, per_category, strings

if TYPE_CHECKING:
    from gpuprofile.analyses.lookups import Lookups
    from gpuprofile.analyses.modules import Modules
    from gpuprofile.trace.meta import Compiled

REGION = re.compile(r"Torch-Compiled Region: (?P<frame>\d+)/(?P<recompile>\d+)")
COMPILE = re.compile(
    r".* \(dynamo_timed\)|entire_frame_compile|backward_compile|_compile\.compile_inner"
)
_ATEN = re.compile(r"aten::")
_INDUCTOR = re.compile(r"(graph_\d+_)?(triton|cpp)_")
GRAPH_CALL = re.compile(r"CompiledFunction$|## Call CompiledFxGraph")
REGION_COLUMNS = (
    "op",
    "rank",
    "graph",
    "frame",
    "start_ns",
    "end_ns",
    "graph_ns",
    "outer",
    "module",
)
KERNEL_COLUMNS = ("table", "id", "rank", "name", "start_ns", "dur_ns", "region", "module")
BREAK_COLUMNS = ("rank", "start_ns", "end_ns", "compile_ns", "before", "after", "module")


@dataclass(frozen=True)
class CompiledCode:
    """torch.compile's regions, kernels, compile time and breaks in one trace."""

    # One row per region call: op (its ops id), rank, graph ("0/0"), frame, start_ns, end_ns,
    # graph_ns (in calls of its compiled graphs; a frame compiles before its region begins),
    # outer (the row of the region it runs in after a break, -1), module
    # (the path that owns it, NO_MODULE).
    regions: pd.DataFrame
    # One row per Inductor kernel (kernels rows; on a CPU, profiled cpp kernels' ops rows) and
    # per ATen call in a region (extern): table, id, rank, name, start_ns, dur_ns, region (row
    # of regions, -1: outside any), module; kind ("pointwise", ..., "extern") and fused ops
    # (a tuple, the ATen op itself for extern) per row.
    kernels: pd.DataFrame
    kinds: tuple[str, ...]
    fused: tuple[tuple[str, ...], ...]
    # One row per break met in the trace (_breaks): rank, start_ns, end_ns, compile_ns,
    # before and after (the graphs either side), module (of the region after it).
    breaks: pd.DataFrame
    # Per ops row: inside a compile range (dynamo tracing, AOTAutograd, Inductor's codegen).
    # The ATen ops dynamo and AOTAutograd run while compiling are no part of the program's run:
    # analyses of the run can leave them out with this.
    compiling: np.ndarray
    compile_ns: dict[int, int]  # per rank: the union of the compile ranges
    compile_windows: dict[int, tuple[tuple[int, int], ...]]
    meta: Compiled | None  # dynamo's own counts over a capture (TraceMeta.compiled)

    @property
    def present(self) -> bool:
        return len(self.regions) > 0 or len(self.kernels) > 0 or self.meta is not None

    def run_ns(self, rank: int) -> int:
        """The rank's time in calls of compiled graphs (compiling apart)."""
        return int(self.regions.loc[self.regions["rank"] == rank, "graph_ns"].sum())


def compiling_ops(names: pd.Series, parents: np.ndarray) -> np.ndarray:
    """Per ops row: inside a compile range (or one itself). Costs and findings leave these out:
    the ATen ops dynamo and AOTAutograd run on fake tensors while compiling are not the
    program's work, though they carry its shapes."""
    if not len(names):
        return np.zeros(0, bool)
    return np.asarray(outermost_with(matches(names, COMPILE, anchored=True), parents) >= 0)


def compiled_code(analysis: Lookups, modules: Modules) -> CompiledCode:
    """The compiled code of the trace (Analysis.compiled); modules: Analysis.modules."""
    trace = analysis.trace
    ops = trace.ops
    n = len(ops)
    names = ops["name"]
    start = ops["start_ns"].to_numpy(np.int64)
    end = start + ops["dur_ns"].to_numpy(np.int64)
    rank = ops["rank"].to_numpy()
    parents = analysis.op_parents
    region_flag = matches(names, REGION, anchored=True) if n else np.zeros(0, bool)
    compile_flag = matches(names, COMPILE, anchored=True) if n else np.zeros(0, bool)
    graph_flag = matches(names, GRAPH_CALL, anchored=True) if n else np.zeros(0, bool)

    def path(module: int) -> str:
        return modules.paths[module] if module >= 0 else NO_MODULE

    compile_windows: dict[int, tuple[tuple[int, int], ...]] = {}
    for r in trace.ranks:
        rows = np.flatnonzero(compile_flag & (rank == r))
        lo, hi = merged_blocks(start[rows], end[rows])
        compile_windows[r] = tuple(zip(lo.tolist(), hi.tolist()))
    region_rows = np.flatnonzero(region_flag)
    position = np.full(n, -1, np.int64)
    position[region_rows] = np.arange(len(region_rows))
    every = np.arange(n)
    # Each op's innermost region (itself for a region), and each region's enclosing one.
    innermost_region = innermost_everywhere(region_flag, parents, ops["depth"].to_numpy())
    region_of_op = np.where(innermost_region >= 0, position[np.maximum(innermost_region, 0)], -1)
    above = region_of_op[np.maximum(parents[region_rows], 0)]
    outer = np.where(parents[region_rows] >= 0, above, -1)
    # The compiled graphs' calls: the outermost graph call ranges (not compile's own).
    in_compile = outermost_with(compile_flag, parents) >= 0
    outermost_call = outermost_with(graph_flag, parents)
    calls = np.flatnonzero((outermost_call == every) & ~in_compile & (region_of_op >= 0))
    texts = strings(names.iloc[region_rows]) if len(region_rows) else np.zeros(0, object)
    graphs = [str(t).split(": ", 1)[1] for t in texts]
    regions = pd.DataFrame(
        {
            "op": ops["id"].to_numpy()[region_rows],
            "rank": rank[region_rows],
            "graph": graphs,
            "frame": [int(g.split("/")[0]) for g in graphs],
            "start_ns": start[region_rows],
            "end_ns": end[region_rows],
            "graph_ns": np.bincount(
                region_of_op[calls], weights=(end - start)[calls], minlength=len(region_rows)
            ).astype(np.int64),
            "outer": outer,
            "module": [path(int(modules.op_module[i])) for i in region_rows],
        },
        columns=list(REGION_COLUMNS),
    )
    inside_call = outermost_call >= 0
    kernels, kinds, fused = _kernels(analysis, modules, region_of_op, inside_call & ~in_compile)
    return CompiledCode(
        regions=regions,
        kernels=kernels,
        kinds=kinds,
        fused=fused,
        breaks=_breaks(regions, end[calls], region_of_op[calls], compile_windows),
        compiling=read_only(in_compile),
        compile_ns={r: sum(b - a for a, b in w) for r, w in compile_windows.items()},
        compile_windows=compile_windows,
        meta=trace.meta.compiled,
    )


def _parsed(names: pd.Series) -> np.ndarray:
    """Per row, parse_kernel_name of its name (None where it has none): parsed once per
    distinct name, as a trace repeats a few hundred kernel names over 10^5 launches."""
    if not len(names):
        return np.zeros(0, object)
    per_name = per_category(names, "inductor kernel name", parse_kernel_name, object)
    return np.asarray(per_name[codes(names)])


def _kernels(
    analysis: Lookups,
    modules: Modules,
    region_of_op: np.ndarray,
    ran: np.ndarray,
) -> tuple[pd.DataFrame, tuple[str, ...], tuple[tuple[str, ...], ...]]:
    """Inductor's kernels and the ATen calls of compiled graphs, each with its kind, fused ops,
    region and module. ran: per ops row, inside a compiled graph's call (not compiling)."""
    trace = analysis.trace
    ops, gpu = trace.ops, trace.kernels
    # GPU kernels: Inductor's by name, and any a graph's ATen call launched (extern kernels).
    op_of = analysis.id_index("ops").get_indexer(pd.Index(gpu["op_id"]))
    gpu_parsed = _parsed(gpu["name"])
    launched_in_graph = (op_of >= 0) & ran[np.maximum(op_of, 0)] if len(ops) else op_of >= 0
    gpu_rows = np.flatnonzero(
        np.array([p is not None for p in gpu_parsed], bool) | launched_in_graph
    )
    # On a CPU the ops are the kernels: Inductor's profiled ones, and the outermost ATen calls
    # of a graph. Where kernels ran on a GPU, their launches are not repeated.
    on_gpu = np.isin(ops["rank"].to_numpy(), gpu["rank"].unique())
    inductor = matches(ops["name"], _INDUCTOR, anchored=True) if len(ops) else on_gpu
    is_aten = matches(ops["name"], _ATEN, anchored=True) if len(ops) else on_gpu
    outermost_aten = outermost_with(is_aten, analysis.op_parents) == np.arange(len(ops))
    op_rows = np.flatnonzero(~on_gpu & (inductor | (outermost_aten & ran)))
    op_parsed = _parsed(ops["name"])[op_rows] if len(op_rows) else np.zeros(0, object)
    gpu_names = strings(gpu["name"], rows=gpu_rows) if len(gpu) else np.zeros(0, object)
    op_names = strings(ops["name"], rows=op_rows) if len(ops) else np.zeros(0, object)
    # A kernel's launching op (-1: none; a GPU-only trace has no ops) and region through it.
    launch = op_of[gpu_rows]
    called = [""] * len(gpu_rows)  # a GPU-only trace has no launching ops
    if len(ops):
        launchers = strings(ops["name"], rows=np.maximum(launch, 0))
        called = [str(n) if i >= 0 else "" for n, i in zip(launchers, launch.tolist(), strict=True)]
    called += [str(n) for n in op_names]
    kinds: list[str] = []
    fused: list[tuple[str, ...]] = []
    for parsed, name in zip([*gpu_parsed[gpu_rows], *op_parsed], called, strict=True):
        kinds.append(parsed.kind or parsed.backend if parsed else "extern")
        fused.append(parsed.ops if parsed else (name.removeprefix("aten::"),))
    region = np.full(len(gpu_rows), -1, dtype=np.int64)
    region[launch >= 0] = region_of_op[launch[launch >= 0]]
    paths = np.array([*modules.paths, NO_MODULE], dtype=object)  # module -1 reads NO_MODULE

    def both(column: str) -> np.ndarray:
        return np.concatenate([gpu[column].to_numpy()[gpu_rows], ops[column].to_numpy()[op_rows]])

    modules_of = [paths[modules.kernel_module[gpu_rows]], paths[modules.op_module[op_rows]]]
    frame = pd.DataFrame(
        {
            "table": pd.array(["kernels"] * len(gpu_rows) + ["ops"] * len(op_rows), dtype=str),
            "id": both("id").astype(np.int64),
            "rank": both("rank").astype(np.int64),
            "name": pd.array(np.concatenate([gpu_names, op_names]), dtype=str),
            "start_ns": both("start_ns"),
            "dur_ns": both("dur_ns"),
            "region": np.concatenate([region, region_of_op[op_rows]]).astype(np.int64),
            "module": pd.Series(np.concatenate(modules_of), dtype=object),
        },
        columns=list(KERNEL_COLUMNS),
    )
    return frame, tuple(kinds), tuple(fused)


def _breaks(
    regions: pd.DataFrame,
    call_end: np.ndarray,
    call_region: np.ndarray,
    compile_windows: dict[int, tuple[tuple[int, int], ...]],
) -> pd.DataFrame:
    """The eager stretches a graph break leaves. After a break the frame that resumes is called
    from inside the region that broke (its range nests in that one's): the break's time runs
    from the end of that region's last graph call before the nested region (its start when it
    had none) to the nested region's start; compile_ns: the compiling in it (a frame resumed
    after a break compiles there on its first call)."""
    out: list[tuple[int, int, int, int, str, str, str]] = []
    rank = regions["rank"].to_numpy()
    start = regions["start_ns"].to_numpy(np.int64)
    outer = regions["outer"].to_numpy()
    graph = [str(g) for g in regions["graph"]]
    module = [str(m) for m in regions["module"]]
    for i in np.flatnonzero(outer >= 0).tolist():
        up = int(outer[i])
        own = (call_region == up) & (call_end <= start[i])
        begin = int(call_end[own].max()) if own.any() else int(start[up])
        windows = compile_windows.get(int(rank[i]), ())
        compiling = sum(max(0, min(b, int(start[i])) - max(a, begin)) for a, b in windows)
        out.append((int(rank[i]), begin, int(start[i]), compiling, graph[up], graph[i], module[i]))
    return pd.DataFrame(out, columns=list(BREAK_COLUMNS))
