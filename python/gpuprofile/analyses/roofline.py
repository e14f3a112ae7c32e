"""The roofline: each op (by name and input shapes) and each kernel (by name) against the roofs.

Points come at two levels (column ``level``), one row per rank:
- "op": the ops whose FLOPs are counted (analyses/flops.py: the outermost op with a formula),
  grouped by (name, input shapes), plus, on GPU traces, the launching ops of kernels no formula
  covers (their FLOPs unknown, so the time without a formula stays visible). Time is GPU time,
  the durations of the kernels the ops own; on a trace without kernels it is the ops' own
  inclusive CPU durations (``Roofline.time_basis`` says which).
- "kernel": kernels grouped by name, with the FLOPs and bytes they inherit from their ops.

A group can mix members with known and unknown FLOPs (one copy kernel launched under a matmul
and under an op without a formula): ``flops`` and ``bytes`` sum the known members, and the rates,
the distance from the roof and the time to save are computed over ``known_time_ns``, the time of
those members; ``time_ns`` is the whole group's. A group none of whose FLOPs are known can still
know its bytes (Nsight Compute measures DRAM traffic without SASS op counts): then ``bytes``
sums the members whose bytes are known, ``bytes_time_ns`` is their time, and the achieved
bandwidth is over it (elsewhere ``bytes_time_ns`` equals ``known_time_ns``). ``bytes_source``
says where the bytes come from: "measured" (the kernels' own, Nsight Compute), "computed"
(minimal traffic from shapes), "partly measured", or "unknown".

The roofs, from the Hardware: the compute roof is the tensor-core peak of ``tensor_core_roof``
(flops.py: bf16/fp16/fp8/int8 matmul-like ops, "tf32" for fp32 convolutions; fp32 matmuls use
the fp32 vector roof since PyTorch leaves torch.backends.cuda.matmul.allow_tf32 off by default)
when the Hardware lists it, else the vector peak: "fp64" for fp64, "fp32" for everything else
(elementwise kernels compute 16-bit dtypes in fp32). The memory roof is DRAM bandwidth; the
ridge point is peak / bandwidth, and a point below it is memory-bound. With
attainable = min(peak, intensity * bandwidth):
- pct_of_roof = achieved FLOP/s / attainable * 100 (for 0-FLOP copies: achieved bytes/s over
  bandwidth), which is time_at_roof_ns / known_time_ns * 100;
- time_at_roof_ns = flops / attainable = max(flops / peak, bytes / bandwidth) in ns;
- saved_ns = known_time_ns - time_at_roof_ns, at least 0.
Minimal bytes ignore caches, so a point that reuses data from L2 can exceed 100%. A point
beyond OVER_ROOF times its roof (200%) has pct_of_roof and saved_ns unknown (NaN): the roof it
is held to is not the one it ran against, or its counts are wrong; ``Roofline.notes`` says how
many and why.
Without known hardware (Hardware.known False) every point's bound is "unknown" and the roof
columns are NaN: run gpuprofile's calibrate() or pass a Hardware.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd

from gpuprofile.analyses.lookups import Lookups
from gpuprofile.analyses.names import codes as name_codes
from gpuprofile.analyses.names import per_category, strings
from gpuprofile.analyses.thresholds import ACHIEVABLE_ROOF_SHARE, LAUNCH_LATENCY_NS
from gpuprofile.hardware.model import Hardware
from gpuprofile.trace.codes import first_seen_codes
from gpuprofile.trace.model import NO_ID, Trace
from gpuprofile.trace.precisions import TENSOR_CORE_PRECISIONS

MAX_EVENT_IDS = 50
# Work measured at more than this multiple of its roof did not run against that roof, or its
# counts are wrong: its percent of roof is not shown. Twice, because less has explanations
# that leave the roof right: clocks above the datasheet's boost clock (a few percent), data
# served from cache, which minimal traffic ignores (up to 1.43x DRAM on the shared V100 and
# A100 traces), FLOPs counted by convention but not executed (attention under a mask the trace
# does not record: an explicit attn_mask is not read, so up to 2x). Beyond twice: fp32 matmuls
# that ran on TF32 tensor cores while held to the fp32 roof (up to 5.7x on a shared A100
# trace), or a roof from a bogus property.
OVER_ROOF = 2.0
_ROOF_NUMBERS = (
    "peak_flops_per_s", "ridge_intensity", "attainable_flops_per_s", "pct_of_roof",
    "time_at_roof_ns", "saved_ns",
)  # fmt: skip
COLUMNS = (
    "key", "level", "name", "shapes", "rank", "count", "time_ns", "known_time_ns",
    "bytes_time_ns", "flops", "bytes", "flops_source", "bytes_source", "precision", "tensor_cores",
    "intensity",
    "achieved_flops_per_s", "achieved_bytes_per_s", "bound", "roof", "compute_roof",
    "peak_flops_per_s", "ridge_intensity", "attainable_flops_per_s", "pct_of_roof",
    "time_at_roof_ns", "saved_ns", "event_ids",
)  # fmt: skip


@dataclass(frozen=True)
class Roofline:
    points: pd.DataFrame
    coverage: float  # share of GPU (or, without kernels, op) time with known FLOPs
    hardware: Hardware
    time_basis: str = "gpu"  # "gpu": kernel durations; "cpu": the ops' inclusive durations
    # What a reader must know about the figures (points past OVER_ROOF times their roof).
    notes: tuple[str, ...] = ()


def roofline(
    facts: Lookups,
    hardware: Hardware,
    op_costs: pd.DataFrame,
    kernel_costs: pd.DataFrame,
    sets: list[Members],
) -> Roofline:
    """The roofline of a trace (facts: it and its lookups, an Analysis); sets: member_sets()
    of the same trace and cost tables."""
    from gpuprofile.analyses.flops import coverage

    groups = [_aggregate(m) for m in sets]
    points = pd.concat(groups, ignore_index=True) if groups else _empty()
    if _spans_ranks(sets):
        points["key"] = _ranked_keys(points["key"], points["rank"])
    points = _with_roofs(points, hardware)
    return Roofline(
        points=points.loc[:, list(COLUMNS)],
        coverage=coverage(facts, op_costs, kernel_costs),
        hardware=hardware,
        time_basis="gpu" if len(kernel_costs) else "cpu",
        notes=_over_roof_notes(points, hardware, on_gpu=bool(len(kernel_costs))),
    )


def _over_roof_notes(points: pd.DataFrame, hardware: Hardware, *, on_gpu: bool) -> tuple[str, ...]:
    """A sentence on the points past OVER_ROOF times their roof, when there are any; the
    tensor-core example only where there is a GPU (a CPU capture has no TF32)."""
    over = points[(points["bound"] != "unknown") & points["pct_of_roof"].isna()]
    if over.empty:
        return ()
    roofs = ", ".join(sorted({str(r) for r in over["roof"]}))
    return (
        f"{len(over)} roofline points reached more than {OVER_ROOF:g}x the {hardware.name} "
        f"roof they are held to ({roofs}), more than the device can do at that roof: the "
        "work ran on other units than that roof's"
        + (" (fp32 matmuls on TF32 tensor cores)" if on_gpu else "")
        + ", or its "
        "FLOP or byte counts, or the device's roofs, are wrong. Their percent of roof is not "
        "shown.",
    )


@dataclass(frozen=True)
class Members:
    """One row per op or kernel that belongs to a point, as arrays: a DataFrame per member set
    costs more than the aggregation itself on traces with 10^4 kernels. Texts (name, shapes,
    dtype, tensor_core_roof) stay in their table until a point needs one."""

    level: str
    table: pd.DataFrame  # op_costs or kernel_costs
    rows: np.ndarray  # members' positions in table
    id: np.ndarray
    rank: np.ndarray
    time_ns: np.ndarray
    flops: np.ndarray
    bytes: np.ndarray
    measured: np.ndarray  # flops_source == "measured"
    bytes_measured: np.ndarray  # bytes_source == "measured" (ops' bytes are always computed)
    name_code: np.ndarray  # equal codes, equal names
    shape_code: np.ndarray  # equal codes, equal shapes

    @cached_property
    def group(self) -> np.ndarray:
        """Per member, its point's number (rank, name and shapes), in order of first
        appearance: worked out once for the roofline and the widget's point members."""
        return first_seen_codes(self.rank, self.name_code, self.shape_code)

    @cached_property
    def by_group(self) -> tuple[np.ndarray, np.ndarray]:
        """The members ordered by point (ties in member order), and where each point's begin."""
        order = np.argsort(self.group, kind="stable")
        return order, np.flatnonzero(np.r_[True, np.diff(self.group[order]) != 0])


def _op_members(
    trace: Trace, op_costs: pd.DataFrame, kernel_costs: pd.DataFrame, gpu: bool
) -> Members:
    """One row per op that is a point's member, with its time; ops in ascending id order on GPU
    traces, in trace order on CPU ones."""
    if gpu:
        owner = kernel_costs["cost_op_id"].to_numpy()
        owner = np.where(owner == NO_ID, kernel_costs["op_id"].to_numpy(), owner)
        attributed = owner != NO_ID
        ids, per_kernel = np.unique(owner[attributed], return_inverse=True)
        time_ns = np.zeros(len(ids), dtype=np.int64)
        np.add.at(time_ns, per_kernel, kernel_costs["dur_ns"].to_numpy()[attributed])
        rows = op_costs.index.get_indexer(pd.Index(ids))
        if (rows < 0).any():  # a kernel's op is not in the trace: fail as .loc does
            op_costs.loc[ids]
    else:
        rows = np.flatnonzero(op_costs["counted"].to_numpy())
        durations = pd.Series(trace.ops["dur_ns"].to_numpy(), index=trace.ops["id"].to_numpy())
        time_ns = durations.reindex(op_costs.index.to_numpy()[rows]).to_numpy()
    # None (no shapes recorded) and "" are one group, as fillna("") made them.
    shapes = op_costs["shapes"].to_numpy()[rows]
    shape_code = pd.factorize(np.where(pd.isna(shapes), "", shapes))[0]
    return Members(
        level="op",
        table=op_costs,
        rows=rows,
        id=op_costs["op_id"].to_numpy()[rows],
        rank=op_costs["rank"].to_numpy()[rows],
        time_ns=np.asarray(time_ns, dtype=np.int64),
        flops=op_costs["flops"].to_numpy()[rows],
        bytes=op_costs["bytes"].to_numpy()[rows],
        measured=_equals(op_costs["flops_source"], "measured")[rows],
        bytes_measured=np.zeros(len(rows), dtype=bool),
        name_code=_name_codes(op_costs["name"])[rows],
        shape_code=shape_code,
    )


def _kernel_members(kernel_costs: pd.DataFrame) -> Members:
    n = len(kernel_costs)
    return Members(
        level="kernel",
        table=kernel_costs,
        rows=np.arange(n),
        id=kernel_costs["kernel_id"].to_numpy(),
        rank=kernel_costs["rank"].to_numpy(),
        time_ns=kernel_costs["dur_ns"].to_numpy().astype(np.int64),
        flops=kernel_costs["flops"].to_numpy(),
        bytes=kernel_costs["bytes"].to_numpy(),
        measured=_equals(kernel_costs["flops_source"], "measured"),
        bytes_measured=_equals(kernel_costs["bytes_source"], "measured"),
        name_code=_name_codes(kernel_costs["name"]),
        shape_code=np.zeros(n, dtype=np.int64),
    )


@dataclass(frozen=True)
class PointMembers:
    """Every member of one roofline point: ids in ``table`` ("ops" or "kernels") and the time
    each contributes to the point (GPU time of an op's kernels, or its own duration)."""

    table: str
    ids: np.ndarray
    time_ns: np.ndarray


def point_members(sets: list[Members], keys: set[str]) -> dict[str, PointMembers]:
    """All members of the points with the given keys (roofline() keeps only the heaviest
    MAX_EVENT_IDS ids per point), grouped and keyed exactly as roofline() does; sets:
    member_sets() (``Analysis.roofline_members``)."""
    multi_rank = _spans_ranks(sets)
    out: dict[str, PointMembers] = {}
    for members in sets:
        by_group, firsts = members.by_group
        first = by_group[firsts]
        _, _, key = _point_names(members, first)
        if multi_rank:
            key = _ranked_keys(key, members.rank[first])
        ends = np.r_[firsts[1:], len(by_group)]
        table = "ops" if members.level == "op" else "kernels"
        for k, lo, hi in zip(key, firsts.tolist(), ends.tolist(), strict=True):
            if k in keys:
                at = by_group[lo:hi]
                out[k] = PointMembers(table, members.id[at], members.time_ns[at])
    return out


def _equals(column: pd.Series, text: str) -> np.ndarray:
    if isinstance(column.dtype, pd.CategoricalDtype):
        equals = per_category(column, ("equals", text), lambda v: v == text, bool, False)
        return np.asarray(equals[name_codes(column)])
    return np.asarray(column.to_numpy() == text, dtype=bool)


def _name_codes(names: pd.Series) -> np.ndarray:
    """Per row, a code equal for equal names: the categorical codes (categories are distinct),
    so long kernel names are not hashed row by row."""
    if isinstance(names.dtype, pd.CategoricalDtype):
        return name_codes(names).astype(np.int64)
    return pd.factorize(strings(names), use_na_sentinel=False)[0]


def member_sets(trace: Trace, op_costs: pd.DataFrame, kernel_costs: pd.DataFrame) -> list[Members]:
    """The members of the points at each level: ops, and kernels on GPU traces (none empty).
    Made once per Analysis (``Analysis.roofline_members``): roofline() and the widget's
    point_members() both read them (the widget's marks for millions of events paid twice)."""
    gpu = len(kernel_costs) > 0
    sets = [_op_members(trace, op_costs, kernel_costs, gpu)]
    if gpu:
        sets.append(_kernel_members(kernel_costs))
    return [m for m in sets if len(m.id)]


def _spans_ranks(sets: list[Members]) -> bool:
    """Points of several ranks: each point's key then says its rank."""
    return len(np.unique(np.concatenate([m.rank for m in sets]))) > 1 if sets else False


def _ranked_keys(keys: Iterable[str], ranks: Iterable[int] | np.ndarray) -> list[str]:
    return [f"{k}|rank={r}" for k, r in zip(keys, np.asarray(ranks).tolist(), strict=True)]


def _point_names(members: Members, first: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Name, shapes and key of the points whose first members are at ``first`` (before any
    rank suffix): "op:NAME|SHAPES" for ops, "kernel:NAME" for kernels."""
    name = _texts(members, "name", first)
    if members.level == "op":
        shapes = _texts(members, "shapes", first)
        shapes = np.where(pd.isna(shapes), "", shapes).astype(object)
        return name, shapes, [f"op:{nm}|{sh}" for nm, sh in zip(name, shapes, strict=True)]
    return name, np.full(len(first), "", dtype=object), [f"kernel:{nm}" for nm in name]


def _texts(members: Members, column: str, at: np.ndarray) -> np.ndarray:
    """str() of members' column at member positions, as .astype(str) writes them."""
    return strings(members.table[column].iloc[members.rows[at]])


def _aggregate(members: Members) -> pd.DataFrame:
    """Points from members: sums over the members with known FLOPs; facts of the heaviest."""
    # Heaviest first, members with known FLOPs ahead: a group's first row is its heaviest known
    # one. np.lexsort is stable, so ties keep the members' order.
    order = np.lexsort((-members.time_ns, ~np.isfinite(members.flops)))
    time_ns, flops, nbytes = members.time_ns[order], members.flops[order], members.bytes[order]
    known = np.isfinite(flops)
    # The points numbered in this order's first appearance (the members' own numbers, renamed).
    group = pd.factorize(members.group[order])[0]
    n = int(group.max()) + 1
    n_known = np.bincount(group[known], minlength=n)
    none_known = n_known == 0
    # Bytes count over the members with known FLOPs, so intensity compares like with like;
    # where no FLOPs are known, over the members whose bytes are.
    sized = np.where(none_known[group], np.isfinite(nbytes), known)
    first = order[np.unique(group, return_index=True)[1]]
    # pandas' grouped sum (compensated for floats) in member order, as the points always had.
    sums = (
        pd.DataFrame(
            {
                "time_ns": time_ns,
                "known_time_ns": np.where(known, time_ns, 0),
                "flops": np.where(known, flops, 0.0),
                "bytes_time_ns": np.where(sized, time_ns, 0),
                "bytes": np.where(sized, nbytes, 0.0),
            }
        )
        .groupby(group, sort=False)
        .sum()
    )
    n_bytes_missing = np.bincount(group[sized & ~np.isfinite(nbytes)], minlength=n)
    n_measured = np.bincount(group[known & members.measured[order]], minlength=n)
    n_sized = np.bincount(group[sized], minlength=n)
    no_bytes = (n_sized == 0) | (n_bytes_missing > 0)
    n_bytes_measured = np.bincount(group[sized & members.bytes_measured[order]], minlength=n)
    name, shapes, key = _point_names(members, first)
    points = {
        "rank": members.rank[first],
        "name": name,
        "shapes": shapes,
        "level": np.full(n, members.level, dtype=object),
        "count": np.bincount(group, minlength=n).astype(np.int64),
        "time_ns": sums["time_ns"].to_numpy(),
        "known_time_ns": sums["known_time_ns"].to_numpy(),
        "flops": np.where(none_known, np.nan, sums["flops"].to_numpy()),
        "bytes_time_ns": sums["bytes_time_ns"].to_numpy(),
        "bytes": np.where(no_bytes, np.nan, sums["bytes"].to_numpy()),
        "precision": _texts(members, "dtype", first),
        "tensor_core_roof": _texts(members, "tensor_core_roof", first),
        "event_ids": _heaviest_ids(group, n, time_ns, members.id[order]),
        "flops_source": np.where(
            none_known, "unknown", np.where(n_measured == n_known, "measured", "computed")
        ).astype(object),
        "bytes_source": np.select(
            [no_bytes, n_bytes_measured == n_sized, n_bytes_measured > 0],
            ["unknown", "measured", "partly measured"],
            "computed",
        ).astype(object),
        "key": np.array(key, dtype=object),
    }
    by_time = np.argsort(-points["time_ns"], kind="stable")
    return pd.DataFrame({k: v[by_time] for k, v in points.items()})


def _heaviest_ids(group: np.ndarray, n: int, time_ns: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Per group, the ids of its MAX_EVENT_IDS heaviest members, heaviest first (ties in member
    order), as a tuple of ints."""
    order = np.lexsort((-time_ns, group))
    starts = np.searchsorted(group[order], np.arange(n + 1))
    heaviest = ids[order].tolist()
    out = np.empty(n, dtype=object)
    for g in range(n):
        out[g] = tuple(heaviest[starts[g] : min(starts[g + 1], starts[g] + MAX_EVENT_IDS)])
    return out


def _with_roofs(points: pd.DataFrame, hardware: Hardware) -> pd.DataFrame:
    flops = points["flops"].to_numpy(dtype=np.float64)
    nbytes = points["bytes"].to_numpy(dtype=np.float64)
    seconds = points["known_time_ns"].to_numpy(dtype=np.float64) * 1e-9
    with np.errstate(divide="ignore", invalid="ignore"):
        intensity = flops / nbytes
        achieved_flops = np.where(seconds > 0, flops / seconds, np.nan)
        bytes_seconds = points["bytes_time_ns"].to_numpy(dtype=np.float64) * 1e-9
        achieved_bytes = np.where(bytes_seconds > 0, nbytes / bytes_seconds, np.nan)
    points = points.assign(
        intensity=intensity,
        achieved_flops_per_s=achieved_flops,
        achieved_bytes_per_s=achieved_bytes,
    )
    n = len(points)
    if not hardware.known or not n:
        unknown = dict.fromkeys(_ROOF_NUMBERS, np.full(n, np.nan))
        return points.assign(
            bound="unknown", roof=np.full(n, None), compute_roof=np.full(n, None),
            tensor_cores=False, **unknown,
        )  # fmt: skip
    pairs = zip(points["precision"], points["tensor_core_roof"])
    roof_key = np.array([compute_roof(p, tc, hardware) for p, tc in pairs], dtype=object)
    peak = np.array([hardware.peak_flops.get(k, np.nan) for k in roof_key], dtype=np.float64)
    bandwidth = float(hardware.dram_bytes_per_s or np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        ridge = peak / bandwidth
        at_roof_s = np.fmax(flops / peak, nbytes / bandwidth)
        attainable = np.minimum(peak, intensity * bandwidth)
        valid = (seconds > 0) & np.isfinite(flops) & np.isfinite(nbytes) & np.isfinite(peak)
        compute = valid & (intensity >= ridge)
        pct = np.where(valid, at_roof_s / seconds * 100.0, np.nan)
        # Past OVER_ROOF times the roof (or below zero): not a figure against this roof.
        valid_pct = valid & (pct >= 0) & (pct <= OVER_ROOF * 100.0)
        pct = np.where(valid_pct, pct, np.nan)
    time_at_roof = np.where(valid, at_roof_s * 1e9, np.nan)
    return points.assign(
        bound=np.where(valid, np.where(compute, "compute", "memory"), "unknown"),
        roof=np.where(valid, np.where(compute, roof_key, "dram"), np.full(n, None)),
        # The compute roof a point is held to, memory-bound or not (gauges weigh by it).
        compute_roof=np.where(valid, roof_key, np.full(n, None)),
        tensor_cores=compute & np.isin(roof_key, TENSOR_CORE_PRECISIONS),
        peak_flops_per_s=np.where(valid, peak, np.nan),
        ridge_intensity=np.where(valid, ridge, np.nan),
        attainable_flops_per_s=np.where(valid, attainable, np.nan),
        pct_of_roof=pct,
        time_at_roof_ns=time_at_roof,
        saved_ns=np.where(valid_pct, np.maximum(seconds * 1e9 - time_at_roof, 0.0), np.nan),
    )


def compute_roof(precision: str, tensor_core_roof: str, hardware: Hardware) -> str:
    if tensor_core_roof and tensor_core_roof in hardware.peak_flops:
        return tensor_core_roof
    return "fp64" if precision == "fp64" else "fp32"


def _empty() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "level": pd.Series(dtype=object),
            "name": pd.Series(dtype=object),
            "shapes": pd.Series(dtype=object),
            "rank": pd.Series(dtype=np.int32),
            "count": pd.Series(dtype=np.int64),
            "time_ns": pd.Series(dtype=np.int64),
            "known_time_ns": pd.Series(dtype=np.int64),
            "bytes_time_ns": pd.Series(dtype=np.int64),
            "flops": pd.Series(dtype=np.float64),
            "bytes": pd.Series(dtype=np.float64),
            "flops_source": pd.Series(dtype=object),
            "bytes_source": pd.Series(dtype=object),
            "precision": pd.Series(dtype=object),
            "tensor_core_roof": pd.Series(dtype=object),
            "event_ids": pd.Series(dtype=object),
            "key": pd.Series(dtype=object),
        }
    )


# An op-level point at or below this percent of its roof is far from it: the memory- and
# compute-bound findings' subject.
FAR_PCT = 50.0


def far_points(points: pd.DataFrame, op_costs: pd.DataFrame) -> pd.DataFrame:
    """The op-level points far below their roof (``Analysis.far_points``), with the gain each
    contributes (gain_ns), largest first: the memory- and compute-bound findings report them,
    and findings that cover the same ops (a Python loop) leave that gain out of theirs.

    A point counts when its known time is at most FAR_PCT of what its roof allows, its calls
    last LAUNCH_LATENCY_NS or more on average (shorter ones are launch latency, the
    launch-overhead finding's), and, for compute-bound points, its roof is not the fp32 vector
    roof of a matmul (the tensor-cores finding's: the fix is a precision). Gain: only the part
    below ACHIEVABLE_ROOF_SHARE of the roof, ``known_time - time_at_roof / share``: tuned
    kernels reach 80-90% of DRAM bandwidth and 70-90% of tensor-core peak on datasheet roofs,
    so the last 20% is not promised."""
    # Masks over the whole table and one take at the end: every filtered frame would copy
    # every column, the points' member ids included.
    at_op = ((points["level"] == "op") & points["bound"].isin(["memory", "compute"])).to_numpy()
    per_call = points["known_time_ns"] / points["count"].clip(lower=1)
    far = (points["pct_of_roof"] <= FAR_PCT) & (per_call >= LAUNCH_LATENCY_NS)
    fp32_matmul = points["key"].isin(_fp32_matmul_keys(points, at_op, op_costs))
    chosen = points[at_op & (far & ~fp32_matmul).to_numpy()]
    gain = chosen["known_time_ns"] - chosen["time_at_roof_ns"] / ACHIEVABLE_ROOF_SHARE
    return chosen.assign(gain_ns=gain.clip(lower=0)).sort_values("gain_ns", ascending=False)


def _fp32_matmul_keys(points: pd.DataFrame, at_op: np.ndarray, op_costs: pd.DataFrame) -> set[str]:
    """Compute-bound op points (at_op: the op-level rows) on the fp32 roof whose ops are
    matmul-like: tensor_cores' subject."""
    fp32 = ((points["bound"] == "compute") & (points["roof"] == "fp32")).to_numpy()
    at = np.flatnonzero(at_op & fp32)
    matmul = op_costs["matmul_like"]
    return {
        str(key)
        for key, ids in zip(
            points["key"].to_numpy()[at], points["event_ids"].to_numpy()[at], strict=True
        )
        if len(ids) and bool(matmul.get(ids[0], False))
    }
