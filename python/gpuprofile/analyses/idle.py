"""GPU idle gaps and what the host was doing during each: one cause per gap.

A gap is an interval inside a rank's GPU window (gpu_time.py: from the first kernel, memcpy or
memset to the end of the last) where none of them runs. What the CPU of that rank (all its
threads) did during the gap decides the cause. Host activity falls into these sets:

- synchronization: blocking runtime calls (cuda/hip Device/Stream/Event/CtxSynchronize; the
  synchronous cudaMemcpy/hipMemcpy/hipMemcpyWithStream, except host-to-device ones; copies to
  the host that block: a pageable DtoH cudaMemcpyAsync, the ``.cpu()`` pattern), the op right
  around each call when that op only syncs or copies (aten::_local_scalar_dense, aten::copy_:
  they outlive the call), and aten::item / _local_scalar_dense / is_nonzero / nonzero by
  name. A wider op around a sync (a convolution timing its cuDNN algorithms) is host work of
  its own and does not count;
- host-device-copy: HtoD/DtoH memcpy runtime calls, and the synchronization that ends a
  host-to-device copy (the sync right after an HtoD memcpy call on the same thread:
  ``x.to("cuda")`` without ``non_blocking=True``; a synchronous HtoD copy), with the copy op
  around them. Those waits belong to the copy because the copy's fix (pinned memory,
  ``non_blocking=True``) removes them. The blocking ones are the synchronizing calls and the
  async copies from pageable memory (the driver stages them while the host waits).
  Device-to-device copies are ordinary GPU work;
- data-loading: ops whose name says DataLoader (``enumerate(DataLoader)#..._DataLoaderIter
  .__next__`` annotations) or Python frames ``dataloader.py(N): __next__`` / ``__iter__``;
- collective-wait: ops named c10d::..., nccl:..., gloo:..., record_param_comms, ProcessGroup...;
- host: cpu_op events (aten ops) and runtime calls (but not polling: cudaEventQuery...).

Rules, first match wins:
0. the work that ends the gap was launched before the gap began, or waited after its launch
   for most of the gap (and longer than LAUNCH_LATENCY_NS): it sat queued, so the GPU was
   not waiting for the host (a dependency on another stream, rank or event, a graph replay,
   scheduling between queued kernels; a host sync in progress meanwhile only waits for that
   same queue): other, with runtime_id the launch of the waiting work;
1. a set among synchronization, data-loading, host-device-copy, collective-wait (in that
   order) covers at least half of the gap: that cause;
2. a blocking synchronization (then a blocking copy) was in progress when the gap began, and
   the host waited in it at least half as long as the gap lasts: the host could not queue
   work ahead while it waited, so the GPU ran dry. (Without the wait the host would have done
   the work that follows it while the GPU was still busy: a sync costs at most min(gap, wait)
   of idle, so a short wait followed by a long stretch of host work is not the sync's doing.)
   synchronization (host-device-copy);
3. host activity covers at least half of the gap, or the work that ends the gap was launched
   after the gap began (the GPU waited for the host to issue it): host-launch-bound;
4. otherwise other: nothing on the host explains it (the host was outside traced code, or
   the launch of the next work is not in the trace).

op_id is the op most responsible: for rules 1-2 the aten op around the runtime call (or the
annotation), for rules 0 and 3 the aten op that launched the work ending the gap. runtime_id
is the runtime call (the sync, the copy, the launch) when there is one.
Everything is vectorised: interval sets are merged once and gaps query them with searchsorted.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

from gpuprofile.analyses.intervals import IntervalSet
from gpuprofile.analyses.lookups import Lookups
from gpuprofile.analyses.names import matches, one_of, strings
from gpuprofile.analyses.patterns import (
    COLLECTIVE_OP,
    COPY_CALL,
    COPY_OR_SYNC_OP,
    LOADER_OP,
    SYNC_CALL,
    SYNC_COPY_CALL,
    SYNC_OP,
)
from gpuprofile.analyses.windows import within_one_window
from gpuprofile.trace.codes import shared_codes
from gpuprofile.trace.model import HOST_DEVICE_KINDS, NO_ID

SYNCHRONIZATION = "synchronization"
DATA_LOADING = "data-loading"
HOST_DEVICE_COPY = "host-device-copy"
COLLECTIVE_WAIT = "collective-wait"
HOST_LAUNCH_BOUND = "host-launch-bound"
OTHER = "other"
CAUSES = (
    SYNCHRONIZATION,
    DATA_LOADING,
    HOST_DEVICE_COPY,
    COLLECTIVE_WAIT,
    HOST_LAUNCH_BOUND,
    OTHER,
)
CAUSE_TYPE = pd.CategoricalDtype(list(CAUSES))  # a gap's cause, as _frame makes it
MOST = 0.5  # "covers most of the gap"
# Python and dispatch overhead between two launches is tens of microseconds; a late launch
# after more untraced host time than this is not launch overhead (the host was elsewhere).
UNTRACED_LAUNCH_NS = 100_000
# On an idle GPU work starts within 5-20 us of its launch call; waiting longer (and for most
# of the gap) means it waited on a dependency, not on the host.
LAUNCH_LATENCY_NS = 50_000

_COLUMNS = ("rank", "start_ns", "end_ns", "dur_ns", "cause", "op_id", "runtime_id")


def idle_gaps(facts: Lookups, calls: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per GPU idle gap: rank, start_ns, end_ns, dur_ns, cause, op_id, runtime_id.

    calls: blocking_calls(facts) (``Analysis.blocking_calls``); None: found here."""
    trace = facts.trace
    if calls is None:
        calls = blocking_calls(facts)
    frames = [_rank_gaps(facts, rank, calls) for rank in trace.ranks]
    frames = [f for f in frames if len(f)]
    if not frames:
        return _frame({c: np.empty(0, np.int64) for c in _COLUMNS} | {"cause": []})
    return pd.concat(frames, ignore_index=True)


def idle_by_cause(gaps: pd.DataFrame) -> dict[int, dict[str, int]]:
    """Per rank, idle ns per cause (causes with idle only); the sum is the rank's idle_ns."""
    out: dict[int, dict[str, int]] = {}
    if gaps.empty:
        return out
    # Summed per (rank, cause) in rank order, then the causes' order: a groupby's order.
    causes = gaps["cause"].astype(CAUSE_TYPE).array
    rank, code = gaps["rank"].to_numpy(np.int64), causes.codes.astype(np.int64)
    known = code >= 0
    rank, code, dur = rank[known], code[known], gaps["dur_ns"].to_numpy(np.int64)[known]
    order = np.lexsort((code, rank))
    rank, code, dur = rank[order], code[order], dur[order]
    first = np.flatnonzero(np.r_[True, (rank[1:] != rank[:-1]) | (code[1:] != code[:-1])])
    sums = np.add.reduceat(dur, first) if len(first) else np.zeros(0, np.int64)
    for at, ns in zip(first.tolist(), sums.tolist(), strict=True):
        if ns > 0:
            out.setdefault(int(rank[at]), {})[CAUSES[code[at]]] = int(ns)
    return out


def blocking_calls(facts: Lookups) -> pd.DataFrame:
    """Runtime calls that make the host wait or copy, with the cause they stand for.

    Columns: runtime (row position), rank, start_ns, end_ns, cause (synchronization or
    host-device-copy), blocking (bool), op and inner_op (positions in trace.ops of the
    outermost aten op and the innermost cpu_op around the call, or NO_ID), copy_kind (kind
    of the correlated memcpy, or "". ``Analysis.blocking_calls`` keeps it for idle_gaps
    and the sync-stall detector.
    """
    trace = facts.trace
    runtime = trace.runtime
    sync = matches(runtime["name"], SYNC_CALL)
    sync_copy = matches(runtime["name"], SYNC_COPY_CALL)
    memcpy = trace.memcpy
    copy_kind, pageable = _memcpy_of_call(runtime, memcpy)
    # Copies between host and device; device-to-device ones are ordinary GPU work.
    copy = matches(runtime["name"], COPY_CALL) & np.isin(copy_kind, HOST_DEVICE_KINDS)
    # A sync right after an HtoD copy call on the same thread finishes that copy.
    thread = facts.cpu_op_tree.runtime_thread
    order = np.lexsort((runtime["start_ns"].to_numpy(), thread))
    previous = np.full(len(runtime), -1, np.int64)
    threads = thread[order]
    same = np.zeros(len(runtime), bool)
    same[1:] = threads[1:] == threads[:-1]
    previous[order[same]] = order[np.flatnonzero(same) - 1]
    after_htod = (
        (previous >= 0)
        & copy[np.maximum(previous, 0)]
        & (copy_kind[np.maximum(previous, 0)] == "HtoD")
    )
    # Waits that finish an HtoD copy belong to the copy; copies to the host (.cpu(), .item())
    # are waits for a value, whether a sync call follows or the copy itself blocks.
    copy_sync = (sync & after_htod) | (sync_copy & (copy_kind == "HtoD"))
    to_host = copy & (copy_kind == "DtoH") & (sync_copy | pageable)
    keep = np.flatnonzero(sync | sync_copy | copy)
    is_sync = ((sync | sync_copy) & ~copy_sync | to_host)[keep]
    start = runtime["start_ns"].to_numpy()[keep]
    inner, outer = ops_around(facts, keep)
    return pd.DataFrame(
        {
            "runtime": keep,
            "rank": runtime["rank"].to_numpy()[keep],
            "start_ns": start,
            "end_ns": start + runtime["dur_ns"].to_numpy()[keep],
            "cause": np.where(is_sync, SYNCHRONIZATION, HOST_DEVICE_COPY),
            "blocking": (sync | sync_copy | (copy & pageable))[keep],
            "op": outer,
            "inner_op": inner,
            "copy_kind": np.where(copy[keep], copy_kind[keep], ""),
        }
    )


def ops_around(facts: Lookups, calls: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per runtime row position: the innermost cpu_op around it on its thread, and the
    outermost aten op of that chain (ops row positions, or NO_ID).

    The outermost climbs from the innermost while the parent is an aten:: op
    (aten::_local_scalar_dense -> aten::item; aten::copy_ -> aten::to), stopping below
    wrappers such as CompiledFunction or autograd engine frames.
    """
    trace = facts.trace
    ops, runtime = trace.ops, trace.runtime
    inner = np.full(len(calls), NO_ID, np.int64)
    out = np.full(len(calls), NO_ID, np.int64)
    if len(calls) == 0 or ops.empty:
        return inner, out
    tree = facts.cpu_op_tree
    op_end, is_cpu_op, is_aten, parent = tree.end, tree.is_cpu_op, tree.is_aten, tree.parent
    call_start = runtime["start_ns"].to_numpy()[calls]
    call_end = call_start + runtime["dur_ns"].to_numpy()[calls]
    call_thread = tree.runtime_thread[calls]
    for thread in np.unique(call_thread):
        lo, hi = np.searchsorted(tree.thread, [thread, thread + 1])
        on = tree.by_thread[lo:hi]
        if len(on) == 0:
            continue
        mine = np.flatnonzero(call_thread == thread)
        at = np.searchsorted(tree.start[on], call_start[mine], side="right") - 1
        pos = np.where(at >= 0, on[np.maximum(at, 0)], -1)
        # The last op to start before the call may have ended: climb to one that encloses it.
        found = np.full(len(mine), -1, np.int64)
        while (open_ := pos >= 0).any():
            p = np.maximum(pos, 0)
            hit = open_ & (op_end[p] >= call_end[mine]) & is_cpu_op[p] & (found < 0)
            found[hit] = p[hit]
            pos = np.where(open_ & (found < 0), parent[p], -1)
        inner[mine] = found
        while (climb := (found >= 0) & is_aten[np.maximum(found, 0)]).any():
            up = parent[np.maximum(found, 0)]
            step = climb & (up >= 0) & is_aten[np.maximum(up, 0)]
            if not step.any():
                break
            found = np.where(step, up, found)
        out[mine] = found
    return inner, out


def _memcpy_of_call(runtime: pd.DataFrame, memcpy: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Per runtime row: the kind of the memcpy with its correlation ("" if none), and whether
    that copy used pageable host memory."""
    kind = np.full(len(runtime), "", object)
    pageable = np.zeros(len(runtime), bool)
    if memcpy.empty or runtime.empty:
        return kind, pageable
    # (rank, correlation) pairs as one integer each, the same in both tables.
    copy_key, call_key = shared_codes([memcpy, runtime], ("rank", "correlation"))
    keys = pd.Index(copy_key)
    if keys.is_unique:
        at = keys.get_indexer(call_key)
    else:  # the first copy with a key stands for it
        first = np.flatnonzero(~keys.duplicated())
        at = pd.Index(copy_key[first]).get_indexer(call_key)
        at = np.where(at >= 0, first[np.maximum(at, 0)], -1)
    has = at >= 0
    kind[has] = strings(memcpy["kind"], rows=at[has])
    page = ~memcpy["pinned"].to_numpy() & matches(memcpy["name"], re.compile("Pageable"))
    pageable[has] = page[at[has]]
    return kind, pageable


def _rank_gaps(facts: Lookups, rank: int, calls: pd.DataFrame) -> pd.DataFrame:
    trace = facts.trace
    activity = facts.gpu_activity(rank)
    if activity.empty:
        return pd.DataFrame()
    gpu = IntervalSet(
        *(activity[c].to_numpy(np.int64) for c in ("start_ns", "end_ns")),
        *[np.zeros(len(activity), np.int64)] * 2,
    )
    start = gpu.block_end[:-1]
    end = gpu.block_start[1:]
    recorded = within_one_window(trace, start, end)
    start, end = start[recorded], end[recorded]
    if len(start) == 0:
        return pd.DataFrame()
    dur = end - start
    sets = _host_sets(facts, rank, calls)
    # Causes as positions in CAUSES, and which set (a key of sets, or "launch") chose each gap
    # as positions in keys (-1: none).
    cause = np.full(len(start), CAUSES.index(OTHER), np.int8)
    chosen = np.full(len(start), -1, np.int64)
    keys = ["launch", *sets]
    which = np.full(len(start), -1, np.int64)
    undecided = np.ones(len(start), bool)

    def decide(mask: np.ndarray, name: str, key: str, pos: np.ndarray) -> None:
        hit = undecided & mask
        cause[hit], chosen[hit], which[hit] = CAUSES.index(name), pos[hit], keys.index(key)
        undecided[hit] = False

    launch_call, launch_start, launch_end = _launches(facts, rank, end)
    # From the return of the launch call: a launch that itself takes long (lazy module
    # loading) keeps the host busy, it does not make the work wait.
    waited = end - np.maximum(launch_end, start)
    queued = (launch_end <= start) | (waited >= np.maximum(MOST * dur, LAUNCH_LATENCY_NS))
    decide((launch_call >= 0) & queued, OTHER, "launch", chosen)
    for name in (SYNCHRONIZATION, DATA_LOADING, HOST_DEVICE_COPY, COLLECTIVE_WAIT):
        s = sets[name]
        decide(s.coverage(start, end) >= MOST * dur, name, name, s.first_in(start, end))
    for name in (SYNCHRONIZATION, HOST_DEVICE_COPY):
        s = sets[name + "/blocking"]
        at = s.running_at(start)
        wait = (s.end - s.start)[at] if len(s.start) else np.zeros(len(at), np.int64)
        decide((at >= 0) & (wait >= MOST * dur), name, name + "/blocking", at)
    host = sets["host"]
    host_ns = host.coverage(start, end)
    late = (launch_start > start) & (dur - host_ns <= UNTRACED_LAUNCH_NS)
    late |= host_ns >= MOST * dur
    decide(late, HOST_LAUNCH_BOUND, "launch", np.arange(len(start)))
    op_id = np.full(len(start), NO_ID, np.int64)
    runtime_id = np.full(len(start), NO_ID, np.int64)
    ops_id, runtime_ids = trace.ops["id"].to_numpy(), trace.runtime["id"].to_numpy()
    for code in np.unique(which[which >= 0]).tolist():
        rows = np.flatnonzero(which == code)
        key = keys[code]
        if key == "launch":
            call = launch_call[rows]
            _, op = ops_around(facts, np.maximum(call, 0))
            op = np.where(call >= 0, op, NO_ID)
        else:
            s, pos = sets[key], chosen[rows]
            op, call = s.op[pos], s.call[pos]
        op_id[rows] = _ids(ops_id, op)
        runtime_id[rows] = _ids(runtime_ids, call)
    return _frame(
        {
            "rank": np.full(len(start), rank, np.int64),
            "start_ns": start,
            "end_ns": end,
            "dur_ns": dur,
            "cause": pd.Categorical.from_codes(cause, categories=pd.Index(list(CAUSES))),
            "op_id": op_id,
            "runtime_id": runtime_id,
        }
    )


_CALL_COLUMNS = ("start_ns", "end_ns", "op", "inner_op", "runtime")
_POLLING = re.compile(r"Query$")


def _host_sets(facts: Lookups, rank: int, calls: pd.DataFrame) -> dict[str, IntervalSet]:
    trace = facts.trace
    ops = trace.ops
    op_rows = facts.rank_rows("ops", rank)
    op_start = ops["start_ns"].to_numpy()
    op_end = op_start + ops["dur_ns"].to_numpy()
    runtime = trace.runtime
    rt_rows = facts.rank_rows("runtime", rank)
    rt_start = runtime["start_ns"].to_numpy()[rt_rows]
    rt_end = rt_start + runtime["dur_ns"].to_numpy()[rt_rows]

    def of_ops(mask: np.ndarray) -> tuple[np.ndarray, ...]:
        rows = op_rows[mask]  # mask: per row of op_rows (a job's rank asks its rows alone)
        return op_start[rows], op_end[rows], rows, np.full(len(rows), NO_ID, np.int64)

    def named(pattern: re.Pattern[str]) -> np.ndarray:
        return matches(ops["name"], pattern, rows=op_rows)

    # The calls' columns as arrays once: a frame filtered per cause costs more than the sets.
    column = {c: calls[c].to_numpy() for c in ("rank", "cause", "blocking", *_CALL_COLUMNS)}
    on_calls = column["rank"] == rank

    def of_calls(cause: str, blocking: bool) -> tuple[np.ndarray, ...]:
        # The call alone when blocking: its duration is the wait that rule 2 weighs.
        rows = np.flatnonzero(
            on_calls & (column["cause"] == cause) & (column["blocking"] | (not blocking))
        )
        start, end, op, inner, runtime_of = (column[c][rows] for c in _CALL_COLUMNS)
        if blocking:
            return start, end, op, runtime_of
        # The call, and the op right around it when that op only copies or syncs
        # (aten::_local_scalar_dense and aten::copy_ outlive their cudaStreamSynchronize);
        # a wider op (a convolution timing its algorithms) is host work of its own.
        around = inner >= 0
        around[around] = matches(ops["name"], COPY_OR_SYNC_OP, rows=inner[around])
        o = inner[around]
        return (
            np.r_[start, op_start[o]],
            np.r_[end, op_end[o]],
            np.r_[op, op[around]],
            np.r_[runtime_of, runtime_of[around]],
        )

    def joined(*parts: tuple[np.ndarray, ...]) -> IntervalSet:
        return IntervalSet(
            *(np.concatenate([p[i] for p in parts]).astype(np.int64) for i in range(4))
        )

    sync_ops = of_ops(named(SYNC_OP))
    cpu_ops = of_ops(one_of(ops["category"], frozenset(("cpu_op",)), rows=op_rows))
    # Polling (cudaEventQuery from a watchdog thread) is not the host issuing work.
    working = ~matches(runtime["name"], _POLLING, rows=rt_rows)
    calls_rt = (
        rt_start[working],
        rt_end[working],
        np.full(int(working.sum()), NO_ID, np.int64),
        rt_rows[working],
    )
    none = (np.zeros(0, np.int64),) * 4
    return {
        SYNCHRONIZATION: joined(of_calls(SYNCHRONIZATION, False), sync_ops),
        # Without runtime events, aten::item itself is the only trace of the wait.
        SYNCHRONIZATION + "/blocking": joined(
            of_calls(SYNCHRONIZATION, True), sync_ops if len(rt_rows) == 0 else none
        ),
        HOST_DEVICE_COPY: joined(of_calls(HOST_DEVICE_COPY, False)),
        HOST_DEVICE_COPY + "/blocking": joined(of_calls(HOST_DEVICE_COPY, True)),
        DATA_LOADING: joined(of_ops(named(LOADER_OP))),
        COLLECTIVE_WAIT: joined(of_ops(named(COLLECTIVE_OP))),
        "host": joined(cpu_ops, calls_rt),
    }


def _launches(facts: Lookups, rank: int, at: np.ndarray) -> tuple[np.ndarray, ...]:
    """For the GPU work starting at each time: its launch call's row, start and end (-1 if
    the trace has no runtime call with its correlation id)."""
    trace = facts.trace
    starts, corrs = [], []
    for name in ("kernels", "memcpy", "memset"):
        table, on_rank = trace.table(name), facts.rank_rows(name, rank)
        starts.append(table["start_ns"].to_numpy()[on_rank])
        corrs.append(table["correlation"].to_numpy()[on_rank])
    start, corr = np.concatenate(starts), np.concatenate(corrs)
    order = np.argsort(start, kind="stable")
    wanted = corr[order[np.minimum(np.searchsorted(start[order], at), len(order) - 1)]]
    runtime = trace.runtime
    rows = facts.rank_rows("runtime", rank)
    missing = np.full(len(at), -1, np.int64)
    if len(rows) == 0:
        return missing, missing, missing
    rt_corr = runtime["correlation"].to_numpy()[rows]
    by_corr = np.argsort(rt_corr, kind="stable")
    k = np.minimum(np.searchsorted(rt_corr[by_corr], wanted), len(rows) - 1)
    call = rows[by_corr[k]]
    found = (wanted != NO_ID) & (rt_corr[by_corr[k]] == wanted)
    call_start = runtime["start_ns"].to_numpy()[call]
    call_end = call_start + runtime["dur_ns"].to_numpy()[call]
    return (
        np.where(found, call, -1),
        np.where(found, call_start, -1),
        np.where(found, call_end, -1),
    )


def _ids(ids: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """Ids at row positions; NO_ID where the position is -1."""
    if len(ids) == 0:
        return np.full(len(positions), NO_ID, np.int64)
    return np.where(positions >= 0, ids[np.maximum(positions, 0)], NO_ID)


def _frame(columns: dict[str, Any]) -> pd.DataFrame:
    cause = columns["cause"]
    if not isinstance(cause, pd.Categorical):
        cause = pd.Categorical(cause, categories=list(CAUSES))
    typed = {c: np.asarray(columns[c]).astype(np.int64) for c in _COLUMNS if c != "cause"}
    return pd.DataFrame({**typed, "rank": typed["rank"].astype(np.int32), "cause": cause})[
        list(_COLUMNS)
    ]
