"""Collectives matched across ranks: each instance's arrivals, ends and waits.

One communication event per rank and instance:

- on a rank with GPU kernels, its communication kernels (``kernel_kind``): arrival is the
  kernel's start, end its end (a collective kernel starts when its stream reaches it, then
  waits inside for its peers);
- on a CPU-only rank (gloo), its ``c10d::*`` ops: arrival is the op's start (the call); end is
  the end of the ``gloo:*`` annotation of the same collective that follows it (gloo's worker
  thread runs the collective there), unknown when the trace has none.

Instances are matched by (process group, collective, sequence number) where the trace records a
sequence number; else by order within (process group, collective) on each rank. Where ranks hold
different numbers of a collective (their profilers started or stopped at different steps) the
order is shifted so the ends line up best. A rank's wait is the last arrival minus its own;
the last-arriving rank makes the others wait.

Point-to-point sends and receives are paired by (sender, receiver) and order when the trace
names the peer (``Concrete Inputs`` of ``c10d::send``/``c10d::recv_``, recorded with
``record_shapes``): the receiver waits for the sender's arrival.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

from gpuprofile.analyses import recorded
from gpuprofile.analyses.kernel_kind import COMMUNICATION
from gpuprofile.analyses.lookups import Lookups
from gpuprofile.analyses.names import categorical, codes, per_category, strings
from gpuprofile.trace.model import NO_ID

COLUMNS = (
    "instance",
    "group",
    "name",
    "rank",
    "table",
    "event_id",
    "arrival_ns",
    "end_ns",
    "wait_ns",
    "last",
    "bytes",
    "group_size",
    "peer",
)
# Collectives that end at nearly the same instant on every member: their ends align clocks.
SYNCHRONIZING = frozenset(("allreduce", "allgather", "reduce_scatter", "alltoall", "barrier"))
POINT_TO_POINT = frozenset(("send", "recv"))
# Searched in order in a name reduced to lower-case letters: "sendrecv" before "send".
_KINDS = (
    ("allreduce", "allreduce"),
    ("allgather", "allgather"),
    ("reducescatter", "reduce_scatter"),
    ("alltoall", "alltoall"),
    ("all2all", "alltoall"),
    ("broadcast", "broadcast"),
    ("barrier", "barrier"),
    ("sendrecv", "sendrecv"),
    ("dispatch", "dispatch"),
    ("combine", "combine"),
    ("send", "send"),
    ("recv", "recv"),
    ("reduce", "reduce"),
    ("gather", "gather"),
    ("scatter", "scatter"),
)
_NOT_LETTERS = re.compile(r"[^a-z2]")


def collective_of(name: str) -> str:
    """The collective a kernel, op or recorded name stands for ("allreduce", "send", ...);
    the name itself, lower-cased, when none is recognised."""
    head = name.split("(", 1)[0]
    for prefix in ("c10d::", "gloo:", "nccl:"):
        head = head.removeprefix(prefix)
    letters = _NOT_LETTERS.sub("", head.lower())
    for token, kind in _KINDS:
        if token in letters:
            return kind
    return letters or "unknown"


def match_collectives(facts: Lookups) -> pd.DataFrame:
    """One row per (instance, rank) of every collective met on two ranks or more.

    Parameters:
        facts: a multi-rank trace and its lookups (an Analysis, whose ``collectives`` these
            are: clock alignment reads them, then the job).

    Returns:
        A frame of ``COLUMNS``: instance (numbered from 0 in order of first arrival), group
        (process group name, "" unknown), name (``collective_of``), rank, table ("kernels" or
        "ops") and event_id, arrival_ns and end_ns (-1: unknown), wait_ns, last (this rank
        arrived last), bytes (-1 unknown), group_size and peer (the other rank of a send or
        receive, -1 otherwise).
    """
    events = comm_events(facts)
    collectives = _collective_instances(events[~events["name"].isin(POINT_TO_POINT)])
    pairs = _point_to_point(events[events["name"].isin(POINT_TO_POINT)])
    rows = pd.concat([collectives, pairs], ignore_index=True)
    if not len(rows):
        return _empty()
    # Number instances in order of their first arrival.
    first = rows.groupby("instance")["arrival_ns"].transform("min")
    order = np.lexsort((rows["rank"].to_numpy(), rows["instance"].to_numpy(), first.to_numpy()))
    rows = rows.iloc[order].reset_index(drop=True)
    renumber = pd.factorize(rows["instance"])[0]
    rows["instance"] = renumber.astype(np.int64)
    return rows.loc[:, list(COLUMNS)]


def comm_events(facts: Lookups) -> pd.DataFrame:
    """Every rank's communication events (see the module docstring), one frame: rank, table,
    event_id, group, name, seq, arrival_ns, end_ns, bytes, group_size, peer."""
    trace = facts.trace
    frames = []
    gpu_ranks = set(trace.kernels["rank"].unique().tolist())
    kernels = trace.kernels
    if len(kernels):
        comm = kernels[facts.kernel_classes.kinds_of(kernels["name"]) == COMMUNICATION]
        frames.append(_kernel_events(facts, comm))
    ops = trace.ops
    cpu_ranks = [r for r in trace.ranks if r not in gpu_ranks]
    if cpu_ranks and len(ops):
        frames.append(_cpu_events(ops[ops["rank"].isin(cpu_ranks)]))
    frames = [f for f in frames if len(f)]
    return pd.concat(frames, ignore_index=True) if frames else _empty_events()


def _kernel_events(facts: Lookups, comm: pd.DataFrame) -> pd.DataFrame:
    recorded = comm["collective"].astype(str).to_numpy()
    launched, peers = _launching_collective(facts, comm["op_id"].to_numpy())
    guessed = _collectives_of(comm["name"])
    names = np.where(
        recorded != "",
        [collective_of(n) for n in recorded],
        np.where(launched != "", launched, guessed),
    )
    start = comm["start_ns"].to_numpy()
    return pd.DataFrame(
        {
            "rank": comm["rank"].to_numpy(np.int64),
            "table": "kernels",
            "event_id": comm["id"].to_numpy(),
            "group": comm["process_group"].astype(str).to_numpy(),
            "name": names,
            "seq": comm["seq"].to_numpy(),
            "arrival_ns": start,
            "end_ns": start + comm["dur_ns"].to_numpy(),
            "bytes": comm["comm_bytes"].to_numpy(),
            "group_size": [_group_size(t) for t in comm["group_ranks"].astype(str)],
            "peer": peers,
        }
    )


def _launching_collective(facts: Lookups, op_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per kernel, the collective its launching op names ("" where none), and the peer of a
    send or receive (-1 unknown): the kernel's op, or the ops around it up to the c10d call
    (``c10d::send`` > ``record_param_comms`` > ``nccl:send``), which holds the peer in its
    concrete inputs when shapes were recorded. ``c10d::alltoall_base_`` launches ``SendRecv``
    kernels: they are all-to-all."""
    ops = facts.trace.ops
    out = np.full(len(op_ids), "", dtype=object)
    peers = np.full(len(op_ids), NO_ID, dtype=np.int64)
    if not len(ops):
        return out, peers
    at = facts.id_index("ops").get_indexer(pd.Index(op_ids))
    names = strings(ops["name"])
    concrete = ops["concrete_inputs"].to_numpy()
    parents = facts.op_parents
    for i in np.flatnonzero(at >= 0):
        row, found = at[i], -1
        for _ in range(_LAUNCH_DEPTH + 1):
            if names[row].startswith(("c10d::", "nccl:", "gloo:")):
                found = row
            if names[row].startswith("c10d::") or parents[row] < 0:
                break
            row = parents[row]
        if found >= 0:
            out[i] = collective_of(names[found])
            peers[i] = _peer(concrete[found])
    return out, peers


# How far up from a kernel's launching op the c10d call that carried it may sit.
_LAUNCH_DEPTH = 3


def _cpu_events(ops: pd.DataFrame) -> pd.DataFrame:
    """c10d calls, each with the end of the gloo annotation that carried it out."""
    names = ops["name"].astype(str)
    calls = ops[names.str.startswith("c10d::").to_numpy()]
    done = ops[names.str.startswith("gloo:").to_numpy()]
    rows = []
    for _, mine in calls.groupby("rank", sort=True):
        rank = int(mine["rank"].iloc[0])
        kinds = _collectives_of(mine["name"])
        theirs = done[done["rank"] == rank]
        their_kinds = _collectives_of(theirs["name"]) if len(theirs) else np.array([])
        frame = pd.DataFrame(
            {
                "rank": rank,
                "table": "ops",
                "event_id": mine["id"].to_numpy(),
                "group": "",
                "name": kinds,
                "seq": NO_ID,
                "arrival_ns": mine["start_ns"].to_numpy(),
                "end_ns": NO_ID,
                "bytes": NO_ID,
                "group_size": NO_ID,
                "peer": [_peer(text) for text in mine["concrete_inputs"]],
            }
        )
        for kind in np.unique(kinds):
            at = np.flatnonzero(kinds == kind)
            ends = np.sort((theirs["start_ns"] + theirs["dur_ns"]).to_numpy()[their_kinds == kind])
            if len(ends) == len(at):
                order = np.argsort(frame["arrival_ns"].to_numpy()[at], kind="stable")
                frame.loc[frame.index[at[order]], "end_ns"] = ends
        rows.append(frame)
    return pd.concat(rows, ignore_index=True) if rows else _empty_events()


def _collectives_of(names: pd.Series) -> np.ndarray:
    """``collective_of`` per row, once per distinct name."""
    names = categorical(names)
    values = per_category(names, "collective_of", collective_of)
    return np.asarray(values[codes(names)], dtype=object)


def _group_size(text: str) -> int:
    """ "[0, 1, 2]" -> 3; -1 when the ranks are not written."""
    ranks = recorded.decoded_list(text) if text.startswith("[") else None
    return len(ranks) if ranks is not None else NO_ID


def _peer(concrete: Any) -> int:
    """The peer of ``c10d::send(tensors, group, dst, tag)`` / ``c10d::recv_(..., src, tag)``:
    its third concrete input; -1 where not recorded."""
    values = recorded.decoded_list(concrete)
    if values is not None and len(values) > 2:
        text = values[2]
        # A rank is a small number: digits past int64 (a hand-edited trace) are no peer.
        if isinstance(text, str) and text.isdigit() and len(text) < 10:
            return int(text)
    return NO_ID


def _collective_instances(events: pd.DataFrame) -> pd.DataFrame:
    """Instances of collectives: matched by sequence number, else by order per rank."""
    out = []
    for (group, name), rows in events.groupby(["group", "name"], sort=True):
        per_rank = {
            int(mine["rank"].iloc[0]): mine.sort_values("arrival_ns", kind="stable")
            for _, mine in rows.groupby("rank", sort=True)
        }
        if len(per_rank) < 2:
            continue
        if all((mine["seq"] != NO_ID).all() for mine in per_rank.values()):
            index = {rank: mine["seq"].to_numpy() for rank, mine in per_rank.items()}
        else:
            index = _order_index(per_rank)
        for rank, mine in per_rank.items():
            frame = mine.assign(instance=[f"{group}\0{name}\0{i}" for i in index[rank]])
            out.append(frame)
    if not out:
        return _empty_rows()
    rows = pd.concat(out, ignore_index=True)
    sizes = rows.groupby("instance")["rank"].transform("size")
    rows = rows[sizes.to_numpy() >= 2]
    return _with_waits(rows)


def _order_index(per_rank: dict[int, pd.DataFrame]) -> dict[int, np.ndarray]:
    """Per rank, each event's position in the collective's sequence, against the rank holding
    most of them (the reference): its order on the rank, shifted so that the spread of end
    differences is smallest (a rank that started recording one step late lacks the first
    instances); or, where that spread is large and matching each end to the nearest of the
    reference's (after their median offset) halves it, that: a trimmed or sampled trace lacks
    instances in the middle, and order pairs every one after the gap wrongly."""
    reference = max(per_rank, key=lambda r: (len(per_rank[r]), -r))
    ref_end = _ends_or_arrivals(per_rank[reference])
    index = {}
    for rank, mine in per_rank.items():
        n = len(mine)
        if rank == reference:
            index[rank] = np.arange(n)
            continue
        ends = _ends_or_arrivals(mine)
        best, best_spread = 0, np.inf
        for shift in range(0, len(ref_end) - n + 1):
            spread = _spread(ends - ref_end[shift : shift + n])
            if spread < best_spread:
                best, best_spread = shift, spread
        index[rank] = np.arange(n) + best
        nearest, spread, tolerance = _nearest_index(ends, ref_end)
        # Order is kept while its pairs agree (their ends differ by one clock offset).
        if best_spread > tolerance and spread < best_spread / NEAREST_GAIN:
            index[rank] = nearest
    return index


# Matching by nearest end replaces order only where it makes the ends this many times closer.
NEAREST_GAIN = 2.0
# An end further from its nearest reference end than this share of the reference's median gap
# between instances (or than MIN_TOLERANCE_NS) is no instance of the reference's.
NEAREST_TOLERANCE = 0.1
MIN_TOLERANCE_NS = 10_000.0
# Clock offsets tried when matching by nearest end (each end's distance to its nearest).
OFFSET_CANDIDATES = 64


def _spread(diff: np.ndarray) -> float:
    return float(np.median(np.abs(diff - np.median(diff)))) if len(diff) else np.inf


def _nearest_index(ends: np.ndarray, ref_end: np.ndarray) -> tuple[np.ndarray, float, float]:
    """Each end's position among the reference's (or a number past them: none), matched one
    to one to the nearest reference end after the clock offset most ends agree on; the spread
    of the matched ends' differences; and the tolerance a match had to meet."""
    order = np.argsort(ref_end, kind="stable")
    sorted_ref = ref_end[order]

    def nearest(values: np.ndarray) -> np.ndarray:
        at = np.clip(np.searchsorted(sorted_ref, values), 1, max(1, len(sorted_ref) - 1))
        left = np.maximum(at - 1, 0)
        right = np.minimum(at, len(sorted_ref) - 1)
        closer = np.abs(values - sorted_ref[left]) <= np.abs(values - sorted_ref[right])
        return np.where(closer, left, right)

    gaps = np.diff(sorted_ref)
    tolerance = max(
        NEAREST_TOLERANCE * float(np.median(gaps)) if len(gaps) else 0.0, MIN_TOLERANCE_NS
    )
    # The offset most ends agree on: of each end's distance to its nearest reference end, the
    # one that brings the most ends within the tolerance (ties: the smaller residuals).
    candidates = ends - sorted_ref[nearest(ends)]
    if len(candidates) > OFFSET_CANDIDATES:
        candidates = candidates[:: len(candidates) // OFFSET_CANDIDATES + 1]
    best = (-1, np.inf, 0.0)
    for offset in candidates:
        residual = np.abs(ends - offset - sorted_ref[nearest(ends - offset)])
        close = residual <= tolerance
        score = (int(close.sum()), -float(residual[close].sum()))
        if score > best[:2]:
            best = (*score, float(offset))
    offset = best[2]
    found = nearest(ends - offset)
    residual = np.abs(ends - offset - sorted_ref[found])
    accepted = residual <= tolerance
    # One to one: of the ends that found the same reference end, the closest keeps it.
    for target in np.unique(found[accepted]):
        claims = np.flatnonzero(accepted & (found == target))
        if len(claims) > 1:
            accepted[claims[claims != claims[np.argmin(residual[claims])]]] = False
    index = np.where(accepted, order[found], len(ref_end) + np.arange(len(ends)))
    diff = ends[accepted] - ref_end[order[found[accepted]]]
    return index, _spread(diff), tolerance


def _ends_or_arrivals(frame: pd.DataFrame) -> np.ndarray:
    ends = frame["end_ns"].to_numpy()
    return np.where(ends != NO_ID, ends, frame["arrival_ns"].to_numpy()).astype(np.float64)


def _with_waits(rows: pd.DataFrame) -> pd.DataFrame:
    arrival = rows["arrival_ns"].to_numpy()
    last_arrival = rows.groupby("instance")["arrival_ns"].transform("max").to_numpy()
    rows = rows.assign(wait_ns=last_arrival - arrival)
    # One last rank per instance: the highest rank among ties.
    latest = rows.sort_values(["arrival_ns", "rank"], kind="stable").groupby("instance").tail(1)
    last = np.zeros(len(rows), bool)
    last[rows.index.get_indexer(latest.index)] = True
    rows = rows.assign(last=last)
    return rows


def _point_to_point(events: pd.DataFrame) -> pd.DataFrame:
    """Sends paired with receives by (sender, receiver) and order: the receiver waits for the
    sender's arrival (the sender does not wait: a send may complete into a buffer)."""
    known = events[events["peer"].to_numpy() != NO_ID]
    sends = known[known["name"] == "send"]
    recvs = known[known["name"] == "recv"]
    out = []
    for (sender, receiver), sent in sends.groupby(["rank", "peer"], sort=True):
        got = recvs[(recvs["rank"] == receiver) & (recvs["peer"] == sender)]
        n = min(len(sent), len(got))
        if not n:
            continue
        sent = sent.sort_values("arrival_ns", kind="stable").head(n)
        got = got.sort_values("arrival_ns", kind="stable").head(n)
        keys = [f"p2p\0{sender}->{receiver}\0{i}" for i in range(n)]
        wait = np.maximum(sent["arrival_ns"].to_numpy() - got["arrival_ns"].to_numpy(), 0)
        out.append(sent.assign(instance=keys, wait_ns=0, last=wait > 0))
        out.append(got.assign(instance=keys, wait_ns=wait, last=wait <= 0))
    return pd.concat(out, ignore_index=True) if out else _empty_rows()


def _empty_events() -> pd.DataFrame:
    return pd.DataFrame(
        {
            c: pd.Series(dtype=object if c in ("table", "group", "name") else np.int64)
            for c in (
                "rank",
                "table",
                "event_id",
                "group",
                "name",
                "seq",
                "arrival_ns",
                "end_ns",
                "bytes",
                "group_size",
                "peer",
            )
        }
    )


def _empty_rows() -> pd.DataFrame:
    return _empty_events().assign(
        instance=pd.Series(dtype=object), wait_ns=pd.Series(dtype=np.int64), last=False
    )


def _empty() -> pd.DataFrame:
    frame = _empty_rows().loc[:, list(COLUMNS)]
    frame["instance"] = frame["instance"].astype(np.int64)
    frame["last"] = frame["last"].astype(bool)
    return frame
