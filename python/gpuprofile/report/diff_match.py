"""Which op or kernel of one run is which of another's: by name, by normalized name, else by
position.

A kernel's full name changes with the library version (template arguments, the lambda in it)
and with the GPU vendor or generation (another GEMM kernel altogether). Names found in both
runs pair as they are (so the many instantiations of one template stay apart); the names left
pair after ``normalize_name`` (all of a run's names of one normalized name merged into a row);
kernels that still differ pair by what they do, their role (what their names say they compute,
and the op that launched them: a cuBLAS GEMM and a hipBLASLt one under ``aten::mm`` are one
row); rows that still differ pair by where their first occurrence sits in the op tree
(docs/diff.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import pandas as pd

from gpuprofile.analyses.names import codes, strings
from gpuprofile.analyses.summary import TOP_OP_CATEGORIES
from gpuprofile.report.diff_schema import MatchedBy
from gpuprofile.trace.links import launching_ops
from gpuprofile.trace.model import NO_ID, Trace

_HEX = re.compile(r"0x[0-9a-fA-F]+")
_SPACE = re.compile(r"\s+")
_OPENING = {"<": ">", "(": ")"}


def normalize_name(name: str) -> str:
    """The name without what varies between builds of the same code: text inside ``<...>``
    (template arguments) and ``(...)`` (parameter lists), hexadecimal addresses, a leading
    ``void``, ``(anonymous namespace)::``; runs of whitespace become one space. A name that
    would be left empty stays as it was (whitespace collapsed)."""
    text = _HEX.sub("", name.replace("(anonymous namespace)::", ""))
    kept: list[str] = []
    closers: list[str] = []
    previous = ""
    for char in text:
        if char in _OPENING:
            closers.append(_OPENING[char])
        elif closers and char == closers[-1] and not (char == ">" and previous == "-"):
            closers.pop()  # "->" inside a parameter list is no closing bracket
        elif not closers:
            kept.append(char)
        previous = char
    stripped = _SPACE.sub(" ", "".join(kept)).strip().removeprefix("void ").strip()
    return stripped or _SPACE.sub(" ", name).strip()


@dataclass(frozen=True)
class NameRow:
    """One name of a run: its time and count summed over ranks, and the table row of its first
    occurrence and that row's place in (rank, start) order."""

    name: str
    total_ns: int
    count: int
    first: int
    order: int


def merged(name: str, rows: list[NameRow]) -> NameRow:
    """Several names as one row under ``name``: sums, and the earliest first occurrence."""
    earliest = min(rows, key=lambda r: r.order)
    return NameRow(
        name=name,
        total_ns=sum(r.total_ns for r in rows),
        count=sum(r.count for r in rows),
        first=earliest.first,
        order=earliest.order,
    )


class Rows(Protocol):
    """A run's ops or kernels by name, where a row's first occurrence sits (op-tree path;
    None: not placed), and a kernel's role (``role``; None for ops or when not known)."""

    @property
    def rows(self) -> dict[str, NameRow]: ...

    def position(self, row: NameRow) -> tuple[int, ...] | None: ...

    def role(self, row: NameRow) -> str | None: ...

    @property
    def time(self) -> str: ...


# What a kernel computes, from its name, in words that hold across vendors and libraries
# (first match wins: a flash-attention GEMM is attention).
_ROLES = (
    ("attention", re.compile(r"flash|fmha|attn|attention|sdpa", re.I)),
    (
        "communication",
        re.compile(r"nccl|rccl|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all", re.I),
    ),
    ("convolution", re.compile(r"conv|winograd|fft2d|implicit_?gemm|igemm|miopen", re.I)),
    (
        "GEMM",
        re.compile(
            r"gemm|gemv|Cijk_|xmma|cutlass|matmul|cublas|hipblas|rocblas|tensile|wgmma", re.I
        ),
    ),
    ("normalization", re.compile(r"norm", re.I)),
    ("softmax", re.compile(r"softmax", re.I)),
    ("reduction", re.compile(r"reduce|reduction", re.I)),
    ("copy", re.compile(r"copy|memcpy|transpose|cat_?array", re.I)),
    ("elementwise", re.compile(r"elementwise|triton_poi", re.I)),
)


def kernel_role(name: str, launched_by: str | None) -> str:
    """A kernel's role: what its name says it computes ("GEMM", "attention", ...; "other"),
    and the op that launched it where known ("GEMM kernels of aten::mm")."""
    what = next((role for role, pattern in _ROLES if pattern.search(name)), "other")
    return f"{what} kernels of {launched_by}" if launched_by else f"{what} kernels"


class NameRows:
    """A run's ops or kernels by name, placing a row in the op tree on demand (only
    rows that no name matches need a place, and the tree costs a pass over every op)."""

    def __init__(self, trace: Trace, table: str) -> None:
        self._trace = trace
        self._table = table
        self._tree: _OpTree | None = None
        self._earlier: np.ndarray | None = None
        frame = trace.table(table)
        chosen = np.ones(len(frame), bool)
        time = frame["dur_ns"].to_numpy().astype(np.int64)
        # What an op row's time is: "gpu", the kernels it launched (itself or the ops inside
        # it), on a trace with kernels launched by its ops; "host", its own span, otherwise.
        self.time = "host"
        if table == "ops":
            # The ops the report ranks (aten ops, engine layers, XLA ops, by inclusive time);
            # all ops where a trace has none of those.
            ranked = frame["category"].isin(TOP_OP_CATEGORIES).to_numpy()
            chosen = ranked if ranked.any() else chosen
            gpu = _gpu_time_of_ops(trace)
            if gpu is not None:
                time, self.time = gpu, "gpu"
        self.rows = _rows(frame, chosen, time)

    def role(self, row: NameRow) -> str | None:
        """A kernel's role (kernel_role), with the name of the op that launched its first
        occurrence; None for ops."""
        if self._table != "kernels":
            return None
        op_id = int(self._trace.kernels["op_id"].to_numpy()[row.first])
        ops = self._trace.ops
        at = np.flatnonzero(ops["id"].to_numpy() == op_id) if op_id != NO_ID else np.zeros(0)
        launched_by = str(ops["name"].iloc[int(at[0])]) if len(at) else None
        return kernel_role(row.name, launched_by)

    def position(self, row: NameRow) -> tuple[int, ...] | None:
        """Where the row's first occurrence sits: the op's path; for a kernel, its launching
        op's path, then its order among that op's kernels. None: not placed."""
        if self._tree is None:
            self._tree = _OpTree(self._trace.ops)
        if self._table == "ops":
            return self._tree.path(int(self._trace.ops["id"].to_numpy()[row.first]))
        kernels = self._trace.kernels
        op_id = int(kernels["op_id"].to_numpy()[row.first])
        op_path = None if op_id == NO_ID else self._tree.path(op_id)
        if op_path is None:
            return None
        if self._earlier is None:
            # Per kernel, how many of its op's kernels started strictly before it: one pass
            # for all rows (the history places hundreds of them), not one per row.
            ranks = kernels["start_ns"].groupby(kernels["op_id"].to_numpy()).rank(method="min")
            self._earlier = ranks.to_numpy().astype(np.int64) - 1
        return (*op_path, -1, int(self._earlier[row.first]))  # -1: apart from any op's path


def _gpu_time_of_ops(trace: Trace) -> np.ndarray | None:
    """Per op row, the GPU time of the kernels, copies and sets it or any op inside it
    launched; None when no kernel's launching op is known (a CPU trace, a GPU-only one)."""
    ops, kernels = trace.ops, trace.kernels
    if not len(ops) or not len(kernels):
        return None
    ids = pd.Index(ops["id"].to_numpy())
    launchers = [kernels["op_id"].to_numpy()]
    durations = [kernels["dur_ns"].to_numpy()]
    for table in (trace.memcpy, trace.memset):
        if len(table):
            launchers.append(launching_ops(ops, trace.runtime, table))
            durations.append(table["dur_ns"].to_numpy())
    at = ids.get_indexer(pd.Index(np.concatenate(launchers)))
    known = at >= 0
    if not (at[: len(kernels)] >= 0).any():
        return None
    parent = ids.get_indexer(pd.Index(ops["parent"].to_numpy()))
    gpu = np.zeros(len(ops), np.int64)
    dur = np.concatenate(durations).astype(np.int64)[known]
    rows = at[known]
    for _ in range(256):  # up the tree, one level a pass (deeper is a broken trace)
        np.add.at(gpu, rows, dur)
        up = parent[rows]
        keep = up >= 0
        if not keep.any():
            break
        rows, dur = up[keep], dur[keep]
    return gpu


def _rows(table: pd.DataFrame, chosen: np.ndarray, time: np.ndarray) -> dict[str, NameRow]:
    if not len(table) or not chosen.any():
        return {}
    names = table["name"]
    name_codes = codes(names)
    chosen = chosen & (name_codes >= 0)
    rows = np.flatnonzero(chosen)
    order = np.lexsort((table["start_ns"].to_numpy()[rows], table["rank"].to_numpy()[rows]))
    frame = pd.DataFrame(
        {
            "key": strings(names, rows=rows[order]),
            "dur": time[rows][order],
            "row": rows[order],
            "order": np.arange(len(rows)),
        }
    )
    grouped = frame.groupby("key", sort=False)
    totals = grouped["dur"].sum()
    counts = grouped["dur"].size()
    firsts = grouped["row"].first()  # rows are in (rank, start) order
    orders = grouped["order"].first()
    return {
        str(key): NameRow(
            name=str(key),
            total_ns=int(totals[key]),
            count=int(counts[key]),
            first=int(firsts[key]),
            order=int(orders[key]),
        )
        for key in totals.index
    }


class _OpTree:
    """Each op's place in its rank's op tree: the order among its siblings (by start) at every
    level from the root down, so the path says depth, parent path and order at once."""

    def __init__(self, ops: pd.DataFrame) -> None:
        self._ids = ops["id"].to_numpy()
        parent = ops["parent"].to_numpy()
        frame = pd.DataFrame(
            {"rank": ops["rank"].to_numpy(), "parent": parent, "start": ops["start_ns"].to_numpy()}
        )
        order = frame.sort_values(["rank", "parent", "start"], kind="stable")
        sibling = order.groupby(["rank", "parent"], sort=False).cumcount()
        self._sibling = sibling.reindex(frame.index).to_numpy()
        self._parent = parent
        self._by_id = np.argsort(self._ids, kind="stable")

    def _row(self, op_id: int) -> int | None:
        at = int(np.searchsorted(self._ids, op_id, sorter=self._by_id))
        if at < len(self._ids) and self._ids[self._by_id[at]] == op_id:
            return int(self._by_id[at])
        return None

    def path(self, op_id: int) -> tuple[int, ...] | None:
        steps: list[int] = []
        row = self._row(op_id)
        while row is not None and len(steps) < 256:  # a cycle would be a broken trace
            steps.append(int(self._sibling[row]))
            parent = int(self._parent[row])
            row = None if parent == NO_ID else self._row(parent)
            if parent != NO_ID and row is None:
                return None  # a parent the table does not hold: no reliable place
        return tuple(reversed(steps))


@dataclass(frozen=True)
class Match:
    """A pair of rows (either may be None: only in one run) and how they were paired."""

    a: NameRow | None
    b: NameRow | None
    matched_by: MatchedBy


def match_rows(a: Rows, b: Rows) -> list[Match]:
    """Pair rows by name; the rest by normalized name (merging a run's names of one normalized
    name); kernels left by role (merging a run's kernels of one role, with the launching op,
    then without it); the rest by op-tree position, one to one (the first unmatched row of b
    at a place takes the unmatched row of a there)."""
    matches = [Match(row, b.rows[n], "name") for n, row in a.rows.items() if n in b.rows]
    left_a = _by_normalized([row for n, row in a.rows.items() if n not in b.rows])
    left_b = _by_normalized([row for n, row in b.rows.items() if n not in a.rows])
    matches += [Match(row, left_b[n], "name") for n, row in left_a.items() if n in left_b]
    rest_a = [row for n, row in left_a.items() if n not in left_b]
    rest_b = [row for n, row in left_b.items() if n not in left_a]
    for with_op in (True, False):
        by_role, rest_a, rest_b = _by_role(a, b, rest_a, rest_b, with_op)
        matches += by_role
    at_place: dict[tuple[int, ...], NameRow] = {}
    if rest_a and rest_b:
        for row in rest_b:
            place = b.position(row)
            if place is not None:
                at_place.setdefault(place, row)
    paired: set[str] = set()
    for row in rest_a:
        place = a.position(row) if at_place else None
        other = at_place.pop(place, None) if place is not None else None
        if other is None:
            matches.append(Match(row, None, "only in a"))
        else:
            matches.append(Match(row, other, "position"))
            paired.add(other.name)
    matches.extend(Match(None, row, "only in b") for row in rest_b if row.name not in paired)
    return matches


def _by_role(
    a: Rows, b: Rows, rest_a: list[NameRow], rest_b: list[NameRow], with_op: bool
) -> tuple[list[Match], list[NameRow], list[NameRow]]:
    """Rows of a and b of one role merged and paired (matched_by "role", named by the role);
    with_op: the role with its launching op, else what the kernels compute alone ("other"
    never pairs: it says nothing)."""

    def roles(rows: Rows, rest: list[NameRow]) -> dict[str, list[NameRow]]:
        out: dict[str, list[NameRow]] = {}
        for row in rest:
            role = rows.role(row)
            if role is None:
                continue
            role = role if with_op else role.split(" of ", 1)[0]
            if not role.startswith("other"):
                out.setdefault(role, []).append(row)
        return out

    in_a, in_b = roles(a, rest_a), roles(b, rest_b)
    both = [role for role in in_a if role in in_b]
    matches = [Match(merged(r, in_a[r]), merged(r, in_b[r]), "role") for r in both]
    taken_a = {row.name for r in both for row in in_a[r]}
    taken_b = {row.name for r in both for row in in_b[r]}
    return (
        matches,
        [row for row in rest_a if row.name not in taken_a],
        [row for row in rest_b if row.name not in taken_b],
    )


def _by_normalized(rows: list[NameRow]) -> dict[str, NameRow]:
    groups: dict[str, list[NameRow]] = {}
    for row in rows:
        groups.setdefault(normalize_name(row.name), []).append(row)
    return {name: merged(name, group) for name, group in groups.items()}
