"""Data out: Profile.kernels()/ops()/copies(), to_parquet and export_trace, on Kineto documents
built here. Expected values are read from the written JSON with json and Decimal alone."""

from __future__ import annotations

import gzip
import json
import sys
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import msgspec
import pandas as pd
import pytest

import gpuprofile
from gpuprofile.cli import main
from gpuprofile.errors import GpuprofileError
from gpuprofile.report.chrome_trace import us, us_column
from gpuprofile.trace.meta import TraceMeta
from helpers.kineto_docs import cpu_op, document, kernel, memcpy, memset, runtime, write

GPU_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")


def events(shift: float = 0.0) -> list[dict[str, Any]]:
    """One step of a matmul and an all-reduce, with a copy each way; times (us) with
    nanosecond digits so that a float's rounding would show."""
    t = 1000.0 + shift
    return [
        cpu_op("aten::linear", t + 0.125, 60.5, ext=1),
        cpu_op(
            "aten::mm",
            t + 1.25,
            40.001,
            ext=2,
            **{"Input Dims": [[4, 8], [8, 16]], "Input type": ["float", "float"]},
        ),
        runtime("cudaLaunchKernel", t + 2.003, 5.007, corr=11),
        kernel(
            "ampere_sgemm_128x64_nn",
            t + 30.123,
            20.251,
            corr=11,
            grid=[8, 4, 1],
            block=[128, 1, 1],
            **{
                "registers per thread": 64,
                "shared memory": 4096,
                "est. achieved occupancy %": 50,
                "blocks per SM": 0.5,
            },
        ),
        cpu_op("c10d::allreduce_", t + 70.0, 9.0, ext=3),
        runtime("cudaLaunchKernel", t + 71.0, 3.0, corr=12),
        kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", t + 80.5, 10.009, corr=12, stream=13),
        kernel("triton_poi_fused_0", t + 95.0, 1.5, corr=99, grid="(4,)"),
        memcpy("HtoD", t + 100.0, 2.0, 4096, pinned=True),
        memcpy("DtoH", t + 110.0, 4.0, 1000),
        memset(t + 120.0, 1.0, 256),
    ]


def write_doc(path: Path, doc_events: list[dict[str, Any]], rank: int = 0, **kw: Any) -> Path:
    info = {"rank": rank, "world_size": 2}
    return write(path, document(doc_events, distributedInfo=info), **kw)


@pytest.fixture(scope="module")
def one_rank(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, gpuprofile.Profile]:
    path = write_doc(tmp_path_factory.mktemp("one") / "trace.json", events())
    return path, gpuprofile.load(path)


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, gpuprofile.Profile]:
    folder = tmp_path_factory.mktemp("job")
    for rank in (0, 1):
        write_doc(folder / f"rank{rank}.json", events(shift=0.5 * rank), rank=rank)
    return folder, gpuprofile.load(folder)


def raw(path: Path, category: str) -> list[dict[str, Any]]:
    doc = json.loads(path.read_text(), parse_float=Decimal)
    return [e for e in doc["traceEvents"] if e.get("ph") == "X" and e["cat"] == category]


def ns(us: Any) -> int:
    value = Decimal(str(us)) * 1000
    assert value == value.to_integral_value()
    return int(value)


def origin(path: Path) -> int:
    doc = json.loads(path.read_text(), parse_float=Decimal)
    return min(ns(e["ts"]) for e in doc["traceEvents"] if e.get("ph") == "X")


def test_kernels_hold_the_json_values(one_rank: tuple[Path, gpuprofile.Profile]) -> None:
    path, profile = one_rank
    ts0 = origin(path)
    frame = profile.kernels()
    expected = raw(path, "kernel")
    assert len(frame) == len(expected)
    by_name = {row["name"]: row for row in frame.to_dict("records")}
    for event in expected:
        row, args = by_name[event["name"]], event["args"]
        assert isinstance(row["name"], str)
        assert row["start_ns"] == ns(event["ts"]) - ts0
        assert row["dur_ns"] == ns(event["dur"])
        assert (row["device"], row["stream"], row["correlation"]) == (
            args["device"],
            args["stream"],
            args["correlation"],
        )
        dims = [row[f"grid_{a}"] for a in "xyz"], [row[f"block_{a}"] for a in "xyz"]
        if isinstance(args.get("grid"), list):
            assert dims == (args["grid"], args["block"])
        else:  # Triton's "(4,)": no dimensions known
            assert all(pd.isna(v) for v in dims[0])
        for column, key in (
            ("registers_per_thread", "registers per thread"),
            ("shared_memory", "shared memory"),
            ("occupancy", "est. achieved occupancy %"),
            ("blocks_per_sm", "blocks per SM"),
        ):
            if key in args:
                assert row[column] == float(args[key])
            else:
                assert pd.isna(row[column])
        assert pd.isna(row["flops"]) and pd.isna(row["bytes"])  # Kineto measures neither
    kinds = dict(zip(frame["name"], frame["kind"]))
    assert kinds == {
        "ampere_sgemm_128x64_nn": "compute",
        "ncclDevKernel_AllReduce_Sum_f32_RING_LL": "communication",
        "triton_poi_fused_0": "compute",
    }


def test_ops_hold_the_json_values_and_their_tree(one_rank: tuple[Path, gpuprofile.Profile]) -> None:
    path, profile = one_rank
    ts0 = origin(path)
    frame = profile.ops()
    expected = raw(path, "cpu_op")
    assert len(frame) == len(expected)
    rows = {row["name"]: row for row in frame.to_dict("records")}
    for event in expected:
        row = rows[event["name"]]
        assert (row["start_ns"], row["dur_ns"]) == (ns(event["ts"]) - ts0, ns(event["dur"]))
        assert row["external_id"] == event["args"]["External id"]
        assert row["category"] == "cpu_op"
    # The tree, from containment in the JSON: aten::mm lies inside aten::linear.
    assert rows["aten::mm"]["parent"] == rows["aten::linear"]["id"]
    assert rows["aten::mm"]["depth"] == rows["aten::linear"]["depth"] + 1
    assert pd.isna(rows["aten::linear"]["parent"])
    mm = next(e for e in expected if e["name"] == "aten::mm")["args"]
    assert json.loads(rows["aten::mm"]["input_dims"]) == mm["Input Dims"]
    assert json.loads(rows["aten::mm"]["input_types"]) == mm["Input type"]
    (m, k), (_, n) = mm["Input Dims"]
    assert rows["aten::mm"]["flops"] == 2 * m * k * n
    assert rows["aten::mm"]["flops_source"] == "computed"
    assert pd.isna(rows["aten::linear"]["input_dims"])


def test_copies_hold_the_json_values(one_rank: tuple[Path, gpuprofile.Profile]) -> None:
    path, profile = one_rank
    frame = profile.copies()
    expected = raw(path, "gpu_memcpy")
    assert len(frame) == len(expected)
    for row, event in zip(frame.to_dict("records"), expected):
        name = event["name"]  # "Memcpy HtoD (Pinned -> Device)"
        assert row["name"] == name
        assert row["kind"] == name.split()[1]
        assert row["pinned"] == ("Pinned" in name)
        assert row["bytes"] == event["args"]["bytes"]
        assert row["dur_ns"] == ns(event["dur"])
        rate = event["args"]["bytes"] / (float(event["dur"]) * 1e-6)
        assert row["bytes_per_s"] == pytest.approx(rate, rel=1e-12)


def test_changing_a_frame_leaves_the_trace_as_it_was(
    one_rank: tuple[Path, gpuprofile.Profile],
) -> None:
    _, profile = one_rank
    trace = profile.trace
    before = {t: trace.table(t).copy(deep=True) for t in ("kernels", "ops", "memcpy")}
    kernels_before, ops_before = profile.kernels(), profile.ops()
    for frame in (profile.kernels(), profile.ops(), profile.copies()):
        frame.loc[0, "start_ns"] = -12345
        frame["dur_ns"] *= 7
        frame["name"] = frame["name"].str.upper()
        frame.iloc[0, 0] = 999
    for table, saved in before.items():
        pd.testing.assert_frame_equal(trace.table(table), saved)
    pd.testing.assert_frame_equal(profile.kernels(), kernels_before)
    pd.testing.assert_frame_equal(profile.ops(), ops_before)


def test_parquet_round_trip(one_rank: tuple[Path, gpuprofile.Profile], tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    _, profile = one_rank
    written = profile.to_parquet(tmp_path / "out")
    names = sorted(Path(p).name for p in written)
    assert names == sorted(
        [f"{t}.parquet" for t in ("kernels", "ops", "copies", "memset", "runtime", "counters")]
        + ["meta.json"]
    )
    for name, frame in (
        ("kernels", profile.kernels()),
        ("ops", profile.ops()),
        ("copies", profile.copies()),
    ):
        back = pd.read_parquet(tmp_path / "out" / f"{name}.parquet")
        pd.testing.assert_frame_equal(back, frame)
        assert list(back.columns) == list(frame.columns)
    memset_back = pd.read_parquet(tmp_path / "out" / "memset.parquet")
    assert memset_back["bytes"].tolist() == profile.trace.memset["bytes"].tolist()
    runtime_back = pd.read_parquet(tmp_path / "out" / "runtime.parquet")
    assert runtime_back["name"].tolist() == profile.trace.runtime["name"].astype(str).tolist()
    meta = msgspec.json.decode((tmp_path / "out" / "meta.json").read_bytes(), type=TraceMeta)
    assert meta == profile.trace.meta


def test_parquet_without_pyarrow_names_the_extra(
    one_rank: tuple[Path, gpuprofile.Profile], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # find_spec then says "not installed"
    with pytest.raises(GpuprofileError, match=r"gpuprofile\[parquet\]"):
        one_rank[1].to_parquet(tmp_path / "out")
    assert not (tmp_path / "out").exists()


def read_export(path: Path) -> dict[str, Any]:
    data = path.read_bytes()
    if path.name.endswith(".gz"):
        data = gzip.decompress(data)
    doc: dict[str, Any] = json.loads(data, parse_float=Decimal)
    return doc


def test_export_maps_ranks_threads_times_and_flows(
    job: tuple[Path, gpuprofile.Profile], tmp_path: Path
) -> None:
    folder, profile = job
    out = tmp_path / "job.json.gz"
    count = profile.export_trace(out)
    doc = read_export(out)
    exported = doc["traceEvents"]
    assert count == len(exported)
    meta = [e for e in exported if e["ph"] == "M"]
    processes = {e["pid"]: e["args"]["name"] for e in meta if e["name"] == "process_name"}
    assert processes == {0: "rank 0", 1: "rank 1"}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in meta if e["name"] == "thread_name"}
    slices = [e for e in exported if e["ph"] == "X"]
    assert {(e["pid"], e["tid"]) for e in slices} <= set(threads)
    # Per category, as many slices as the Trace's tables hold, and as the files hold.
    trace = profile.trace
    expected = Counter[str]()
    for table in ("ops", "runtime"):
        expected.update(trace.table(table)["category"].astype(str).tolist())
    for table, category in (
        ("kernels", "kernel"),
        ("memcpy", "gpu_memcpy"),
        ("memset", "gpu_memset"),
    ):
        expected[category] = len(trace.table(table))
    assert Counter(e["cat"] for e in slices) == expected
    in_files = Counter(e["cat"] for r in (0, 1) for e in _x_events(folder / f"rank{r}.json"))
    assert Counter(e["cat"] for e in slices) == in_files
    # Exact times: the exported ts minus the file's first, in ns, is the JSON's.
    for rank in (0, 1):
        source = _x_events(folder / f"rank{rank}.json")
        mine = [e for e in slices if e["pid"] == rank]
        first_source = min(ns(e["ts"]) for e in source)
        first_mine = min(ns(e["ts"]) for e in mine)
        assert sorted(
            (e["cat"], e["name"], ns(e["ts"]) - first_source, ns(e["dur"])) for e in source
        ) == sorted((e["cat"], e["name"], ns(e["ts"]) - first_mine, ns(e["dur"])) for e in mine)
    for e in slices:
        if e["cat"] in GPU_CATEGORIES:
            assert threads[(e["pid"], e["tid"])] == (
                f"GPU {e['args']['device']} stream {e['args']['stream']}"
            )
    # Flows: every GPU event whose correlation a runtime call of its rank has.
    starts = {e["id"]: e for e in exported if e["ph"] == "s"}
    ends = {e["id"]: e for e in exported if e["ph"] == "f"}
    assert set(starts) == set(ends)
    linked = 0
    for rank in (0, 1):
        source = _x_events(folder / f"rank{rank}.json")
        calls = {e["args"]["correlation"] for e in source if e["cat"] == "cuda_runtime"}
        linked += sum(
            1
            for e in source
            if e["cat"] in GPU_CATEGORIES and e["args"].get("correlation") in calls
        )
    assert len(starts) == linked == 4
    runtime = {
        (e["pid"], e["args"]["correlation"]): e for e in slices if e["cat"] == "cuda_runtime"
    }
    gpu = {(e["pid"], e["tid"], e["ts"]): e for e in slices if e["cat"] in GPU_CATEGORIES}
    for flow, start in starts.items():
        end = ends[flow]
        assert start["cat"] == end["cat"] == "ac2g" and start["pid"] == end["pid"]
        target = gpu[(end["pid"], end["tid"], end["ts"])]
        call = runtime[(start["pid"], target["args"]["correlation"])]
        assert (start["tid"], start["ts"]) == (call["tid"], call["ts"])


def _x_events(path: Path) -> list[dict[str, Any]]:
    doc = json.loads(path.read_text(), parse_float=Decimal)
    return [e for e in doc["traceEvents"] if e.get("ph") == "X"]


def test_export_reads_back(job: tuple[Path, gpuprofile.Profile], tmp_path: Path) -> None:
    _, profile = job
    out = tmp_path / "job.json"
    profile.export_trace(out)
    json.loads(out.read_text())  # plain JSON without .gz
    back = gpuprofile.load(out).trace
    kernels = profile.trace.kernels
    assert len(back.kernels) == len(kernels)
    assert int(back.kernels["dur_ns"].sum()) == int(kernels["dur_ns"].sum())
    assert sorted(back.kernels["name"].astype(str)) == sorted(kernels["name"].astype(str))
    assert len(back.memcpy) == len(profile.trace.memcpy)


def test_export_of_a_missing_directory_fails_before_writing(
    one_rank: tuple[Path, gpuprofile.Profile], tmp_path: Path
) -> None:
    with pytest.raises(GpuprofileError, match="no such directory"):
        one_rank[1].export_trace(tmp_path / "absent" / "t.json")
    with pytest.raises(GpuprofileError, match="is a directory"):
        one_rank[1].export_trace(tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_cli_export_trace(
    one_rank: tuple[Path, gpuprofile.Profile], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, _ = one_rank
    out = tmp_path / "t.json.gz"
    assert main(["report", str(path), "--export-trace", str(out)]) == 0
    assert len([e for e in read_export(out)["traceEvents"] if e.get("cat") == "kernel"]) == 3
    capsys.readouterr()
    missing = tmp_path / "absent" / "t.json.gz"
    assert main(["report", str(path), "--export-trace", str(missing)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("gpuprofile: error: ")
    assert captured.err.count("\n") == 1
    assert not missing.parent.exists()


def test_times_are_exact_decimals_of_the_nanoseconds() -> None:
    values = [0, 1, 999, 1000, 1234567, 2**53 + 1, -1500]
    expected = [str(Decimal(v) / 1000) for v in values]
    assert [us(v).decode() for v in values] == [f"{Decimal(e):.3f}" for e in expected]
    column = pd.Series(values[:-1], dtype="int64")
    assert us_column(column) == [us(v) for v in values[:-1]]
    assert us_column(pd.Series(values, dtype="int64")) == [us(v) for v in values]
