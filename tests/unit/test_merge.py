"""The one merge (trace/merge.py): ranks of a job and windows of one rank, placed on one time
base with their clock offsets, ids renumbered and the links between tables kept."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gpuprofile.importers.kineto import load_kineto
from gpuprofile.trace.merge import merge
from gpuprofile.trace.meta import RankMeta, Window
from gpuprofile.trace.model import Trace
from helpers.kineto_docs import cpu_op, document, kernel, runtime, write


def rank_trace(directory: Path, name: str, base_ns: int, kernels: int) -> Trace:
    """A rank's file: ``kernels`` launches 100 us apart, each kernel 20 us after its launch."""
    events = []
    for k in range(kernels):
        t = 10.0 + 100 * k
        events += [
            cpu_op("aten::mm", t, 30.0, ext=k),
            runtime("cudaLaunchKernel", t + 2, 5.0, k + 1),
            kernel(f"gemm_{name}", t + 20, 40.0, k + 1),
        ]
    return load_kineto(
        write(directory / f"{name}.json", document(events, baseTimeNanoseconds=base_ns))
    )


def test_ranks_are_placed_by_their_clock_offsets(tmp_path: Path) -> None:
    a = rank_trace(tmp_path, "a", 1_000_000_000, kernels=3)
    b = rank_trace(tmp_path, "b", 1_000_000_000, kernels=2)
    # Rank 1's clock runs 7 us ahead: -7000 ns places it on rank 0's.
    merged = merge([a, b], ranks=[0, 1], clock_offsets_ns=[0, -7_000])
    assert merged.ranks == [0, 1]
    assert merged.meta.ranks[1].clock_offset_ns == -7_000
    assert merged.meta.ranks[0].clock_offset_ns == 0
    # b starts 7 us before a on the shared base: the merged trace starts at b's first event.
    assert merged.meta.origin_ns == b.meta.origin_ns - 7_000
    of = merged.kernels.set_index("rank")
    start_a = a.meta.origin_ns - merged.meta.origin_ns + a.kernels["start_ns"].to_numpy()
    start_b = b.meta.origin_ns - 7_000 - merged.meta.origin_ns + b.kernels["start_ns"].to_numpy()
    np.testing.assert_array_equal(np.sort(of.loc[0, "start_ns"].to_numpy()), np.sort(start_a))
    np.testing.assert_array_equal(np.sort(of.loc[1, "start_ns"].to_numpy()), np.sort(start_b))


def test_ids_stay_unique_and_kernels_keep_their_launching_op(tmp_path: Path) -> None:
    parts = [rank_trace(tmp_path, n, 0, kernels=k) for n, k in (("a", 3), ("b", 2), ("c", 4))]
    merged = merge(parts, ranks=[0, 1, 2])
    for table in ("ops", "kernels", "runtime"):
        ids = merged.table(table)["id"]
        assert ids.is_unique and len(ids) == sum(len(p.table(table)) for p in parts)
    ops = merged.ops.set_index("id")
    kernels = merged.kernels
    # Each kernel starts 20 us after the op that launched it, on its own rank.
    launched = ops.loc[kernels["op_id"].to_numpy()]
    np.testing.assert_array_equal(
        launched["start_ns"].to_numpy() + 20_000, kernels["start_ns"].to_numpy()
    )
    assert (launched["rank"].to_numpy() == kernels["rank"].to_numpy()).all()
    names = kernels.groupby("rank")["name"].agg(lambda s: set(s.astype(str)))
    assert names.to_dict() == {0: {"gemm_a"}, 1: {"gemm_b"}, 2: {"gemm_c"}}


def test_parts_of_one_rank_join_their_facts_and_windows(tmp_path: Path) -> None:
    first = rank_trace(tmp_path, "w0", 0, kernels=1)
    second = rank_trace(tmp_path, "w1", 5_000_000, kernels=1)
    first = first.with_meta(windows=(Window(index=0, start_ns=0, end_ns=70_000, step=2),))
    second = second.with_meta(windows=(Window(index=1, start_ns=0, end_ns=70_000, step=4),))
    merged = merge([second, first])  # any order: placed by their starts
    assert [w.index for w in merged.meta.windows] == [0, 1]
    shift = second.meta.origin_ns - first.meta.origin_ns
    assert (
        merged.meta.windows[1].start_ns == shift and merged.meta.windows[1].end_ns == shift + 70_000
    )
    facts = merged.meta.ranks[0]
    assert facts.files == (*first.meta.ranks[0].files, *second.meta.ranks[0].files)


def test_one_rank_per_part_when_ranks_are_given(tmp_path: Path) -> None:
    two = merge([rank_trace(tmp_path, "a", 0, 1), rank_trace(tmp_path, "b", 0, 1)], ranks=[0, 1])
    with pytest.raises(ValueError, match="one rank each"):
        merge([two], ranks=[3])
    with pytest.raises(ValueError, match="2 clock offsets for 1 traces"):
        merge([two], clock_offsets_ns=[0, 1])
    with pytest.raises(ValueError, match="no traces"):
        merge([])


def test_rank_facts_join_without_losing_either_side() -> None:
    a = RankMeta(
        devices=({"id": 0, "name": "X"},),
        thread_names={"1/1": "main"},
        files=("a.json",),
        skipped={"flow": 2},
    )
    b = RankMeta(
        devices=({"id": 0, "name": "X"}, {"id": 1, "name": "X"}),
        thread_names={"1/1": "other", "1/2": "loader"},
        files=("b.json",),
        skipped={"flow": 1, "instant x": 4},
    )
    joined = a.joined(b)
    assert [d["id"] for d in joined.devices] == [0, 1]
    assert joined.thread_names == {"1/1": "main", "1/2": "loader"}
    assert joined.files == ("a.json", "b.json")
    assert joined.skipped == {"flow": 3, "instant x": 4}
