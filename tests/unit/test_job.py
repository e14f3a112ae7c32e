"""The job view on hand-made rank traces whose waits, stragglers and bubbles are known.

Three GPU ranks run two steps. In each step every rank computes (a gemm kernel), then joins an
all-reduce of 1,000,000 floats. Rank 2 computes 3 ms, the others 1 ms, so ranks 0 and 1 wait
2 ms in each all-reduce and rank 2 is the straggler. The all-reduce then transfers for 0.5 ms
and ends at the same instant everywhere. Rank 1's trace clock runs 7 ms ahead (its
baseTimeNanoseconds is 7 ms later), which the alignment must undo.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import gpuprofile
from gpuprofile.analyses import collectives
from gpuprofile.analyses.collectives import collective_of
from gpuprofile.analyses.job import bus_factor
from gpuprofile.analyses.kernel_kind import kernel_kind
from gpuprofile.analyses.lookups import Lookups
from gpuprofile.errors import TraceFormatError
from gpuprofile.units import format_time
from helpers.kineto_docs import document, kernel, write

MS = 1000.0  # trace ts are microseconds
STEP = 10 * MS
COMPUTE = {0: 1 * MS, 1: 1 * MS, 2: 3 * MS}
TRANSFER = 0.5 * MS
BASE = 1_700_000_000_000_000_000
SKEW_NS = {0: 0, 1: 7_000_000, 2: 0}
ELEMS = 1_000_000
ALLREDUCE = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"


def _annotation(name: str, ts: float, dur: float) -> dict:
    return {"ph": "X", "cat": "user_annotation", "name": name, "pid": 1, "tid": 1, "ts": ts,
            "dur": dur, "args": {}}  # fmt: skip


def _rank_doc(
    rank: int, *, seqs: tuple[int, ...] = (0, 1), world: int = 3, with_seq: bool = True
) -> dict:
    events = []
    corr = 1
    for step in seqs:
        t0 = step * STEP
        events.append(_annotation(f"ProfilerStep#{step}", t0, STEP))
        events.append(kernel("gemm_kernel", t0, COMPUTE[rank], corr))
        corr += 1
        arrival = t0 + COMPUTE[rank]
        end = t0 + max(COMPUTE.values()) + TRANSFER
        events.append(
            kernel(
                ALLREDUCE,
                arrival,
                end - arrival,
                corr,
                stream=20,
                **{
                    "Collective name": "allreduce",
                    "Process Group Name": "0",
                    "Process Group Ranks": "[0, 1, 2]",
                    "In msg nelems": ELEMS,
                    "Out msg nelems": ELEMS,
                    "dtype": "Float",
                    **({"Seq": step} if with_seq else {}),
                },
            )
        )
        corr += 1
    # A rank whose clock runs ahead writes later times for the same instants.
    return document(
        events,
        baseTimeNanoseconds=BASE + SKEW_NS[rank],
        distributedInfo={"backend": "nccl", "rank": rank, "world_size": world},
    )


@pytest.fixture
def job_dir(tmp_path: Path) -> Path:
    for rank in range(3):
        write(tmp_path / f"rank{rank}.json", _rank_doc(rank))
    return tmp_path


def test_waits_straggler_and_clock(job_dir: Path) -> None:
    profile = gpuprofile.load(job_dir)
    report = profile.report()
    job = report["distributed"]
    assert job["world_size"] == 3 and job["ranks_present"] == [0, 1, 2]
    assert job["missing_ranks"] == []
    # Rank 1 ran 7 ms ahead: aligned from the all-reduces' ends, to the nanosecond.
    assert job["clock"]["method"] == "collective ends"
    assert job["clock"]["residual_ns"] == 0
    offsets = {r["rank"]: r["distributed"]["clock_offset_ns"] for r in report["ranks"]}
    assert offsets == {0: 0, 1: -7_000_000, 2: 0}
    # Each all-reduce: ranks 0 and 1 wait 2 ms for rank 2.
    wait = int((COMPUTE[2] - COMPUTE[0]) * 1000)
    assert [s["rank"] for s in job["stragglers"]] == [2]
    assert job["stragglers"][0]["wait_caused_ns"] == 2 * 2 * wait
    assert job["stragglers"][0]["arrived_last"] == 2
    assert "gemm_kernel" in job["stragglers"][0]["cause"]
    waits = {r["rank"]: r["distributed"]["wait_ns"] for r in report["ranks"]}
    assert waits == {0: 2 * wait, 1: 2 * wait, 2: 0}
    kinds = [h["kind"] for h in report["hints"]]
    assert "straggler" in kinds and "load-imbalance" in kinds
    # One figure per fact: the title holds the job up by the gain (2 collectives, each
    # arriving `wait` after the next-latest rank), and the summed waits are said apart.
    [straggler] = [h for h in report["hints"] if h["kind"] == "straggler"]
    assert straggler["gain_ns"] == 2 * wait
    assert (
        straggler["title"]
        == f"Rank 2 is the straggler: it holds the job up {format_time(2 * wait)}"
    )
    assert f"the others waited {format_time(2 * 2 * wait)}" in straggler["explanation"]


def test_bubbles_by_definition(job_dir: Path) -> None:
    job = gpuprofile.load(job_dir).report()["distributed"]
    assert [s["step"] for s in job["steps"]] == [0, 1]
    for step in job["steps"]:
        # The window: earliest compute start to latest compute end on any rank (rank 2's 3 ms).
        assert step["end_ns"] - step["start_ns"] == int(COMPUTE[2] * 1000)
        bubble = {r["rank"]: r["bubble_fraction"] for r in step["ranks"]}
        assert bubble[0] == pytest.approx(1 - COMPUTE[0] / COMPUTE[2])
        assert bubble[2] == pytest.approx(0.0)
    assert job["pipeline"] is None


def test_bus_bandwidth_with_nccl_tests_factor(job_dir: Path) -> None:
    (allreduce,) = gpuprofile.load(job_dir).report()["distributed"]["collectives"]
    assert allreduce["name"] == "allreduce" and allreduce["count"] == 2
    assert allreduce["bytes"] == ELEMS * 4
    # The transfer is the last arrival's time in it (0.5 ms); bus = alg x 2(n-1)/n.
    alg = ELEMS * 4 / (TRANSFER / 1e6)
    assert allreduce["alg_bytes_per_s"] == pytest.approx(alg)
    assert allreduce["bus_bytes_per_s"] == pytest.approx(alg * 2 * 2 / 3)


def test_sequence_numbers_match_a_rank_that_started_late(tmp_path: Path) -> None:
    # Rank 0's profiler missed step 0: by order its first all-reduce would pair with the
    # others' first; its recorded Seq pairs it with their second.
    write(tmp_path / "rank0.json", _rank_doc(0, seqs=(1,)))
    for rank in (1, 2):
        write(tmp_path / f"rank{rank}.json", _rank_doc(rank))
    analysis = gpuprofile.load(tmp_path).analysis
    matched = analysis.collectives
    assert matched.groupby("instance")["rank"].size().tolist() == [2, 3]
    assert analysis.alignment.residual_ns == 0


def test_one_slow_rank_folds_repeated_hints_into_one(job_dir: Path) -> None:
    hints = gpuprofile.load(job_dir).report()["hints"]
    per_kind = [h["kind"] for h in hints]
    assert len(per_kind) == len(set(per_kind)), per_kind
    folded = [h for h in hints if "of 3 ranks, worst rank" in h["title"]]
    assert folded and all(h["rank"] is None for h in folded)


def test_missing_rank_is_a_notice(tmp_path: Path) -> None:
    for rank in (0, 2):
        write(tmp_path / f"rank{rank}.json", _rank_doc(rank))
    report = gpuprofile.load(tmp_path).report()
    assert report["distributed"]["missing_ranks"] == [1]
    assert any(
        n["kind"] == "ranks" and "1 rank of 3 missing" in n["text"] for n in report["notices"]
    )


def test_duplicate_rank_and_mixed_jobs_are_errors(tmp_path: Path) -> None:
    write(tmp_path / "a.json", _rank_doc(0))
    write(tmp_path / "b.json", _rank_doc(0))
    with pytest.raises(TraceFormatError, match=r"rank 0 appears twice: a\.json and b\.json"):
        gpuprofile.load(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    write(other / "a.json", _rank_doc(0))
    write(other / "b.json", _rank_doc(1, world=2))
    with pytest.raises(TraceFormatError, match="world sizes differ"):
        gpuprofile.load(other)


def test_ranks_from_file_names_list_and_glob(tmp_path: Path) -> None:
    for rank in range(3):
        doc = _rank_doc(rank)
        del doc["distributedInfo"]
        write(tmp_path / f"trace-{rank}.json", doc)
    by_regex = gpuprofile.load(tmp_path, rank_regex=r"trace-(\d+)")
    assert by_regex.trace.ranks == [0, 1, 2]
    files = [tmp_path / "trace-2.json", tmp_path / "trace-0.json"]
    listed = gpuprofile.load(files, rank_regex=r"trace-(\d+)")
    assert listed.trace.ranks == [0, 2]
    globbed = gpuprofile.load(str(tmp_path / "trace-[01].json"), rank_regex=r"trace-(\d+)")
    assert globbed.trace.ranks == [0, 1]
    # No rank anywhere: file order, said in a notice.
    by_order = gpuprofile.load(tmp_path)
    assert by_order.trace.ranks == [0, 1, 2]
    assert any("taken from file order" in n["text"] for n in by_order.report()["notices"])
    with pytest.raises(TraceFormatError, match="one group"):
        gpuprofile.load(tmp_path, rank_regex=r"trace-\d+")


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "communication"),
        ("rcclKernel_AllReduce_RING_LL_Sum_bf16", "communication"),
        ("void nvshmemi_transfer_rma_kernel<...>", "communication"),
        ("void deep_ep::intranode::dispatch<8, 768, 8192>(...)", "communication"),
        ("void deep_ep::internode_ll::combine<...>", "communication"),
        ("void c10d::symmetric_memory::multimem_all_reduce_kernel<...>", "communication"),
        ("void c10d::symmetric_memory::one_shot_all_reduce_kernel<...>", "communication"),
        ("void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(...)", "communication"),
        ("Memcpy DtoD (Device -> Device)", "memory"),
        ("Memset (Device)", "memory"),
        ("cudaStreamSynchronize", "sync"),
        ("ampere_sgemm_128x64_tn", "compute"),
        ("void at::native::reduce_kernel<512, 1>(...)", "compute"),
    ],
)
def test_kernel_classes(name: str, kind: str) -> None:
    assert kernel_kind(name) == kind


@pytest.mark.parametrize(
    ("name", "collective"),
    [
        ("c10d::allreduce_", "allreduce"),
        ("gloo:all_reduce", "allreduce"),
        ("c10d::_allgather_base_", "allgather"),
        ("c10d::_reduce_scatter_base_", "reduce_scatter"),
        ("c10d::alltoall_base_", "alltoall"),
        ("c10d::recv_", "recv"),
        ("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*)", "sendrecv"),
        ("ncclDevKernel_Broadcast_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "broadcast"),
    ],
)
def test_collective_names(name: str, collective: str) -> None:
    assert collective_of(name) == collective


def test_bus_factors_are_nccl_tests() -> None:
    assert bus_factor("allreduce", 8) == pytest.approx(2 * 7 / 8)
    for name in ("allgather", "reduce_scatter", "alltoall"):
        assert bus_factor(name, 8) == pytest.approx(7 / 8)
    assert bus_factor("broadcast", 8) == 1.0


def test_bus_bandwidth_against_the_nvlink_roof(job_dir: Path) -> None:
    from gpuprofile.hardware.tables import datasheet

    h100 = datasheet("h100_sxm")
    # The H100 SXM datasheet quotes NVLink 900 GB/s, both directions together.
    assert h100.peer_link_bytes_per_s == 450e9
    (allreduce,) = gpuprofile.load(job_dir, hardware=h100).report()["distributed"]["collectives"]
    assert allreduce["link_roof_bytes_per_s"] == 450e9
    bus = ELEMS * 4 / (TRANSFER / 1e6) * 2 * 2 / 3
    assert allreduce["pct_of_link_roof"] == pytest.approx(100 * bus / 450e9)


def test_cli_reads_a_job_and_refuses_a_bad_one(
    job_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from gpuprofile.cli import main

    files = [str(job_dir / f"rank{r}.json") for r in range(3)]
    assert main(["report", *files, "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["distributed"]["stragglers"][0]["rank"] == 2
    write(job_dir / "again.json", _rank_doc(1))
    assert main(["report", str(job_dir)]) == 2
    err = capsys.readouterr().err
    assert "rank 1 appears twice" in err and "Traceback" not in err


def test_nccl_pipeline_peers_from_the_c10d_calls(tmp_path: Path) -> None:
    """Two GPU stages: stage 0 computes 1 ms per microbatch, then sends it (a SendRecv kernel
    launched by c10d::send, whose concrete inputs name the peer, as record_shapes writes
    them); stage 1 receives it (posted at once, so it waits for the send), then computes."""
    from helpers.kineto_docs import cpu_op, runtime

    send = "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)"
    docs: dict[int, list[dict]] = {0: [], 1: []}
    corr = 1
    for mb in range(2):
        t = mb * 2 * MS
        # Stage 0: compute [t, t+1ms), then the send, launched at t+1ms.
        docs[0].append(kernel("gemm_kernel", t, MS, corr))
        docs[0].append(cpu_op("c10d::send", t + MS, 20, **{"Concrete Inputs": ["", "", "1", "0"]}))
        docs[0].append(runtime("cudaLaunchKernel", t + MS + 5, 5, corr + 1))
        docs[0].append(kernel(send, t + MS, 100, corr + 1, stream=20))
        # Stage 1: the receive is posted at t and completes after the send; then compute.
        docs[1].append(cpu_op("c10d::recv_", t, 20, **{"Concrete Inputs": ["", "", "0", "0"]}))
        docs[1].append(runtime("cudaLaunchKernel", t + 5, 5, corr + 2))
        docs[1].append(kernel(send, t, MS + 100, corr + 2, stream=20))
        docs[1].append(kernel("gemm_kernel", t + MS + 100, MS, corr + 3))
        corr += 4
    for rank, events in docs.items():
        events.append(_annotation("ProfilerStep#0", 0, 5 * MS))
        info = {"backend": "nccl", "rank": rank, "world_size": 2}
        write(tmp_path / f"rank{rank}.json", document(events, distributedInfo=info))
    job = gpuprofile.load(tmp_path).report()["distributed"]
    pipe = job["pipeline"]
    assert pipe is not None
    assert (pipe["stages"], pipe["stage_ranks"], pipe["microbatches"]) == (2, [0, 1], 2)
    assert pipe["theoretical_bubble_fraction"] == pytest.approx(1 / 3)
    # The receiver waits 1 ms per microbatch for the sender: rank 0 caused 2 ms.
    (straggler,) = job["stragglers"]
    assert straggler["rank"] == 0 and straggler["wait_caused_ns"] == 2 * 1_000_000


def test_a_trimmed_trace_matches_by_nearest_end_not_by_order(tmp_path: Path) -> None:
    # No sequence numbers; rank 0 recorded steps 0, 1, 2, 4 and rank 1 steps 0, 2, 3, 4 (a
    # sampled trace lost events in the middle). By order, rank 1's second all-reduce would
    # pair with rank 0's second (step 1) although it is step 2's: nearest ends pair them.
    recorded = {0: (0, 1, 2, 4), 1: (0, 2, 3, 4)}
    for rank, steps in recorded.items():
        doc = _rank_doc(rank, seqs=steps, world=2, with_seq=False)
        doc["baseTimeNanoseconds"] = BASE  # one clock: the ends of one instance coincide
        write(tmp_path / f"rank{rank}.json", doc)
    analysis = gpuprofile.load(tmp_path).analysis
    matched = analysis.collectives
    pairs = matched.groupby("instance")["rank"].size()
    assert sorted(pairs.tolist()) == [2, 2, 2]  # steps 0, 2 and 4
    assert analysis.alignment.residual_ns == 0


def _counting_matches(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the calls of match_collectives (one per trace whose collectives are matched)."""
    calls: list[int] = []
    real = collectives.match_collectives

    def counted(facts: Lookups) -> pd.DataFrame:
        calls.append(1)
        return real(facts)

    monkeypatch.setattr(collectives, "match_collectives", counted)
    return calls


def test_collectives_are_matched_once_when_no_clock_moves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(SKEW_NS, 1, 0)  # every rank on one clock already
    for rank in range(3):
        write(tmp_path / f"rank{rank}.json", _rank_doc(rank))
    calls = _counting_matches(monkeypatch)
    analysis = gpuprofile.load(tmp_path).analysis
    assert analysis.alignment.offsets_ns == {}
    assert analysis.job is not None and len(analysis.collectives) == 2 * 3
    # The alignment's matches are the Analysis's: the trace it kept is the one they were of.
    assert len(calls) == 1


def test_facts_after_a_clock_moves_are_of_the_aligned_trace(
    job_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _counting_matches(monkeypatch)
    analysis = gpuprofile.load(job_dir).analysis
    assert analysis.alignment.offsets_ns == {0: 0, 1: -7_000_000, 2: 0}
    matched = analysis.collectives
    # Matched again on the aligned clocks: each all-reduce ends at one instant on all ranks
    # (rank 1's own clock put its ends 7 ms later).
    assert len(calls) == 2
    assert matched.groupby("instance")["end_ns"].nunique().tolist() == [1, 1]
    # Every rank's first kernel starts the step at the same instant.
    starts = {rank: analysis.gpu_time(rank) for rank in range(3)}
    assert len({gpu.start_ns for gpu in starts.values() if gpu is not None}) == 1
