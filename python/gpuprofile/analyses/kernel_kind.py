"""What a GPU kernel does: its class in the report, and why.

Classes: ``communication``, ``memory`` (copies and sets), ``sync`` (kernels that only wait) and
``compute`` (everything else), as HTA classifies kernels. Communication is recognised by what a
kernel does, not by a list of libraries, so that an in-house build of a collective or an
expert-parallel kernel in its own namespace is still seen:

- its name: the words of its function and namespaces name a collective (all-reduce,
  all-gather, reduce-scatter, all-to-all), a send or receive, or an expert-parallel dispatch,
  combine or notify (``dispatch`` in an ``ep`` or cross-node namespace: ``intranode``,
  ``internode``, ``comm``); or its namespace is one that works across GPUs (``nvshmem``,
  ``multimem``, symmetric memory); or it is a NCCL/RCCL/MSCCL device kernel whose name says no
  more (``ncclDevKernel_Generic``). Inductor's ``triton_*`` kernels are named for the ops they
  fused, so their words say nothing of this;
- the trace: it records the kernel as a collective (Kineto's "Collective name");
- the op that launched it: every launch of the name came from a communicating op
  (``record_param_comms``, ``c10d::*``, ``nccl:*``), its parent included;
- its stream: a dispatch, combine or notify kernel with no namespace that says so, on a stream
  that carries communication.

``Analysis.kernel_classes`` decides once per trace; ``kernel_class`` is the part that reads a
name alone. CPU ops that communicate: ``patterns.COLLECTIVE_OP`` (``c10d::*``, ``gloo:*``,
``nccl:*``, ``record_param_comms``, ProcessGroup calls).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from gpuprofile.analyses.kernel_names import parts_per_name, qualified_function
from gpuprofile.analyses.names import categorical, codes, per_category, strings
from gpuprofile.analyses.patterns import COLLECTIVE_OP
from gpuprofile.trace.model import Trace

COMMUNICATION = "communication"
MEMORY = "memory"
COMPUTE = "compute"
SYNC = "sync"

# HIP runs its device-to-device copies and fills as kernels of its own (hipMemcpyDtoDAsync).
_MEMORY = re.compile(r"^(Memcpy|Memset|dma|__amd_rocclr_(copy|fill)\w*Buffer)")
_SYNC = re.compile(r"Sync")
_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
# Collectives as words (split at "_", "::" and case): all_reduce, AllReduce, allreduce.
_COLLECTIVE = {
    ("all", "reduce"): "all-reduce",
    ("allreduce",): "all-reduce",
    ("all", "gather"): "all-gather",
    ("allgather",): "all-gather",
    ("reduce", "scatter"): "reduce-scatter",
    ("reducescatter",): "reduce-scatter",
    ("all", "to", "all"): "all-to-all",
    ("alltoall",): "all-to-all",
    ("all", "2", "all"): "all-to-all",
    ("all2all",): "all-to-all",
    ("send", "recv"): "send/receive",
    ("sendrecv",): "send/receive",
    ("send",): "send/receive",
    ("recv",): "send/receive",
    ("p2p",): "send/receive",
    ("cross", "device", "reduce"): "cross-device reduce",
}
# Namespace words of work that crosses GPUs or nodes.
_CROSS_GPU = frozenset(
    ("nvshmem", "nvshmemi", "multimem", "symm", "symmetric", "intranode", "internode", "comm")
)
# An expert-parallel act, and the words that say the experts live on other GPUs.
_EP_ACT = frozenset(("dispatch", "combine", "notify"))
_EP = frozenset(("ep", "deepep", "intranode", "internode", "all2all", "alltoall"))
# Device kernels of the collective libraries, whose name may say no more (ncclDevKernel_Generic),
# and what their words can add.
_LIBRARY = re.compile(r"^(nccl|rccl|msccl)", re.IGNORECASE)
# Inductor's kernels are named for the ops they fused (triton_poi_fused_all_gather_copy_0 copies
# into a collective's buffer); the collective itself runs elsewhere.
_GENERATED = re.compile(r"^triton_")
_LIBRARY_ACTS = frozenset(("broadcast", "reduce", "gather", "scatter"))


def kernel_class(name: str, function: str | None = None) -> tuple[str, str]:
    """A kernel's class and why, from its name alone (see the module docstring); function:
    its qualified_function where already known."""
    if _MEMORY.match(name):
        return MEMORY, "a copy or set"
    act = _communication(qualified_function(name) if function is None else function)
    if act:
        return COMMUNICATION, act
    if _SYNC.search(name):
        return SYNC, "it only waits"
    return COMPUTE, _NO_EVIDENCE


def kernel_kind(name: str) -> str:
    return kernel_class(name)[0]


_NO_EVIDENCE = "no copy, wait or communication in its name, launching op or stream"


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def _communication(function: str) -> str:
    """Why a kernel name whose qualified_function is this says the kernel communicates, ""
    when it does not."""
    if _GENERATED.match(function):
        return ""
    parts = function.split("::")
    spaces = [w for part in parts[:-1] for w in _words(part)]
    words = spaces + _words(parts[-1])
    for size in (3, 2, 1):
        for i in range(len(words) - size + 1):
            said = _COLLECTIVE.get(tuple(words[i : i + size]))
            if said:
                return f"its name says {said}"
    own = _words(parts[-1])
    if own and own[0] in _EP_ACT and (_EP & set(words) or _CROSS_GPU & set(spaces)):
        return f"expert-parallel {parts[-1]} ({'::'.join(parts[:-1]) or 'its name'})"
    crossing = sorted(_CROSS_GPU & set(spaces + own))
    if crossing:
        return f"works across GPUs (its name says {crossing[0]})"
    library = _LIBRARY.match(function.lstrip("_"))
    if library:
        acts = [w for w in words if w in _LIBRARY_ACTS]
        return f"a {library.group(1).upper()} kernel" + (f" ({acts[0]})" if acts else "")
    return ""


def _ambiguous(function: str) -> bool:
    """A dispatch, combine or notify kernel whose name (whose qualified_function is function)
    does not say where the experts are: its stream decides."""
    return bool(_EP_ACT & set(_words(function.rsplit("::", 1)[-1])))


@dataclass(frozen=True)
class KernelClasses:
    """Every distinct kernel name of a trace: its class and why (one class per name)."""

    names: pd.Index
    kinds: np.ndarray
    reasons: np.ndarray
    # kinds_of's per-category answer for each categories Index asked (a job's per-rank slices
    # share their column's), with the Index held so that its id is not reused.
    _per_categories: dict[int, tuple[pd.Index, np.ndarray]] = field(
        default_factory=dict, compare=False, repr=False
    )

    def of(self, name: str) -> tuple[str, str]:
        # get_loc: the Index's hash table, where an Index of the one name cost 40 us a call.
        try:
            at = self.names.get_loc(name)
        except KeyError:
            return kernel_class(name)
        return str(self.kinds[at]), str(self.reasons[at])

    def kinds_of(self, names: pd.Series) -> np.ndarray:
        """Per row of a column of kernel names, its class."""
        names = categorical(names)
        categories = names.cat.categories
        known = self._per_categories.get(id(categories))
        if known is None or known[0] is not categories:
            at = self.names.get_indexer(categories)
            per = np.array(
                [str(self.kinds[i]) if i >= 0 else kernel_kind(str(c))
                 for i, c in zip(at, categories, strict=True)] + [COMPUTE],
                dtype=object,
            )  # fmt: skip
            known = self._per_categories[id(categories)] = (categories, per)
        kinds: np.ndarray = known[1][codes(names)]
        return kinds


def kernel_classes(trace: Trace, op_ids: pd.Index, op_parents: np.ndarray) -> KernelClasses:
    """The class of each kernel name in the trace, from its name, the trace's record, its
    launching ops and its streams (see the module docstring). op_ids, op_parents: the
    Analysis' ``id_index("ops")`` and ``op_parents``."""
    kernels = trace.kernels
    names = categorical(kernels["name"])
    distinct = names.cat.categories
    # Each name's called function, parsed once for the name rules and the stream rule.
    functions = [parts[1] for parts in parts_per_name(names)[:-1].tolist()]
    found = [kernel_class(str(n), f) for n, f in zip(distinct, functions, strict=True)]
    kinds = np.array([k for k, _ in found] + [COMPUTE], dtype=object)
    reasons = np.array([r for _, r in found] + [_NO_EVIDENCE], dtype=object)
    code = codes(names)
    collective = strings(kernels["collective"])
    recorded = (kinds[code] == COMPUTE) & (collective != "")
    for c in np.unique(code[recorded]):
        said = collective[recorded & (code == c)][0]
        kinds[c], reasons[c] = COMMUNICATION, f"the trace records it as collective {said!r}"
    _by_launching_op(trace, op_ids, op_parents, code, kinds, reasons)
    _by_stream(kernels, functions, code, kinds, reasons)
    n = len(distinct)
    return KernelClasses(pd.Index(distinct.astype(str)), kinds[:n].copy(), reasons[:n].copy())


def _by_launching_op(
    trace: Trace,
    op_ids: pd.Index,
    parents: np.ndarray,
    code: np.ndarray,
    kinds: np.ndarray,
    reasons: np.ndarray,
) -> None:
    """Compute names every launch of which (with a known op) came from a communicating op."""
    ops = trace.ops
    if not len(ops):
        return
    at = op_ids.get_indexer(pd.Index(trace.kernels["op_id"].to_numpy()))
    known = at >= 0
    if not known.any():
        return
    comm_row = is_comm_op(ops["name"])
    rows = at[known]
    parent = parents[rows]
    from_comm = comm_row[rows] | np.where(parent >= 0, comm_row[np.maximum(parent, 0)], False)
    by = np.where(comm_row[rows], rows, parent)
    launched = code[known]
    for c in np.unique(launched[kinds[launched] == COMPUTE]):
        mine = launched == c
        if mine.any() and from_comm[mine].all():
            kinds[c] = COMMUNICATION
            reasons[c] = f"launched by {strings(ops['name'], rows=by[mine][:1])[0]}"


def _by_stream(
    kernels: pd.DataFrame,
    functions: list[str],
    code: np.ndarray,
    kinds: np.ndarray,
    reasons: np.ndarray,
) -> None:
    """Dispatch, combine and notify kernels on a stream that carries communication
    (functions: each distinct name's qualified_function)."""
    ambiguous = [i for i, f in enumerate(functions) if kinds[i] == COMPUTE and _ambiguous(f)]
    if not ambiguous:
        return
    key = pd.MultiIndex.from_arrays(
        [kernels["rank"].to_numpy(), kernels["device"].to_numpy(), kernels["stream"].to_numpy()]
    )
    comm_streams = set(key[kinds[code] == COMMUNICATION])
    for c in ambiguous:
        streams = set(key[code == c])
        shared = sorted(s for s in streams if s in comm_streams)
        if shared:
            kinds[c] = COMMUNICATION
            reasons[c] = f"on stream {shared[0][2]}, which carries communication"


def is_comm_op(names: pd.Series) -> np.ndarray:
    """Per CPU op, whether it communicates (c10d, gloo, nccl annotations, record_param_comms)."""
    names = categorical(names)
    comm = per_category(names, "is_comm_op", lambda n: bool(COLLECTIVE_OP.search(n)), bool)[:-1]
    return comm[codes(names)] if len(comm) else np.array([], dtype=bool)
