"""Sampled counters in exported Chrome traces: written into torch's file, read back as counters."""

from __future__ import annotations

import gzip
import json
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import torch

import gpuprofile
from gpuprofile.capture.counter_export import CounterExportError, append_counters
from gpuprofile.trace.model import make_table
from helpers.kineto_docs import cpu_op, document, write

BASE_NS = 1_790_000_000_000_000_000


def samples(origin_offset_ns: int = 0) -> pd.DataFrame:
    return make_table(
        "counters",
        {
            "rank": np.zeros(4, int),
            "name": ["process CPU", "process CPU", "GPU utilization", "memory used"],
            "unit": ["%", "%", "%", ""],
            "device": np.array([-1, -1, 0, 3]),
            "time_ns": np.array([0, 1_000_001, 1_500_000, 2_000_000]) + origin_offset_ns,
            "value": [12.5, 99.0, 40.0, 1e9],
        },
    )


def counter_events(path: Path) -> list[dict[str, Any]]:
    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    return [e for e in json.loads(raw)["traceEvents"] if e.get("ph") == "C"]


@pytest.mark.parametrize("gz", [False, True])
def test_counters_are_added_to_the_file_and_read_back(tmp_path: Path, gz: bool) -> None:
    ops = [cpu_op("aten::mm", 1000.0, 5000.0), cpu_op("aten::add", 2000.0, 10.0)]
    doc = document(ops, baseTimeNanoseconds=BASE_NS, traceName="run")
    path = write(tmp_path / ("run.json.gz" if gz else "run.json"), doc, gz=gz)
    origin = BASE_NS + 1000 * 1000  # the first event's start
    append_counters(path, samples(), origin)
    written = counter_events(path)
    # Independent reading: every sample at base + ts * 1000, its unit in the name, the device
    # as the series id.
    assert [
        (e["name"], e.get("id"), BASE_NS + int(Decimal(str(e["ts"])) * 1000), e["args"]["value"])
        for e in written
    ] == [
        ("process CPU [%]", None, origin, 12.5),
        ("process CPU [%]", None, origin + 1_000_001, 99.0),
        ("GPU utilization [%]", 0, origin + 1_500_000, 40.0),
        ("memory used", 3, origin + 2_000_000, 1e9),
    ]
    trace = gpuprofile.load(path).trace
    assert len(trace.ops) == 2  # what torch wrote is still there
    back = trace.counters
    expected = samples()
    assert list(back["name"].astype(str)) == list(expected["name"].astype(str))
    assert list(back["unit"].astype(str)) == list(expected["unit"].astype(str))
    np.testing.assert_array_equal(back["device"], expected["device"])
    np.testing.assert_array_equal(back["value"], expected["value"])
    np.testing.assert_array_equal(back["time_ns"], expected["time_ns"])


def test_an_empty_event_list_takes_counters_without_a_stray_comma(tmp_path: Path) -> None:
    path = write(tmp_path / "empty.json", document([], traceName="x"))
    append_counters(path, samples(), 0)
    assert len(counter_events(path)) == 4


def test_a_file_that_does_not_end_like_a_trace_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "odd.json"
    path.write_text('{"traceEvents": [], "extra": {"nested": [1, 2]}}')
    before = path.read_bytes()
    with pytest.raises(CounterExportError, match="traceEvents"):
        append_counters(path, samples(), 0)
    assert path.read_bytes() == before


def test_a_capture_exports_its_samples(tmp_path: Path) -> None:
    export = tmp_path / "cell.pt.trace.json"
    with gpuprofile.profile(export=export, interval=0.02) as p:
        x = torch.randn(64, 64)
        for _ in range(300):
            x = torch.tanh(x @ x / 64)
    counters = p.trace.counters
    assert len(counters) > 0
    written = counter_events(export)
    assert len(written) == len(counters)
    base = json.loads(export.read_text())["baseTimeNanoseconds"]
    origin = p.trace.meta.origin_ns
    at = sorted(base + int(Decimal(str(e["ts"])) * 1000) - origin for e in written)
    assert at == sorted(counters["time_ns"].tolist())
    back = gpuprofile.load(export).trace.counters
    assert sorted(zip(back["name"].astype(str), back["value"], strict=True)) == sorted(
        zip(counters["name"].astype(str), counters["value"], strict=True)
    )
    assert p.report()["capture_errors"] == []


def test_a_steps_export_is_one_file_that_loads_back_as_the_same_profile(tmp_path: Path) -> None:
    export = tmp_path / "run.json"
    with gpuprofile.profile(steps=(1, 1, 2), export=export, interval=0.01) as p:
        x = torch.randn(64, 64)
        for _ in range(6):
            for _ in range(150):
                x = torch.tanh(x @ x / 64)
            gpuprofile.step()
    assert sorted(f.name for f in tmp_path.iterdir()) == ["run.json"]
    doc = json.loads(export.read_text())
    base = int(doc.get("baseTimeNanoseconds", 0))

    def at(e: dict[str, Any]) -> int:
        return base + int(Decimal(str(e["ts"])) * 1000)

    # Both windows' events, and the samples, all within the first event and the last end.
    ops = [e for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "cpu_op"]
    spans = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    start = min(at(e) for e in spans)
    end = max(at(e) + int(Decimal(str(e["dur"])) * 1000) for e in spans)
    samples = [at(e) for e in doc["traceEvents"] if e.get("ph") == "C"]
    assert samples and all(start - 1 <= t <= end + 1 for t in samples)
    back = gpuprofile.load(export)
    assert len(back.trace.ops[back.trace.ops["category"] == "cpu_op"]) == len(ops)
    assert len(back.trace.counters) == len(p.trace.counters) == len(samples)
    # The windows come back: the same wall (not the time between them), the same notice.
    assert back.report()["ranks"][0]["wall_ns"] == p.report()["ranks"][0]["wall_ns"]
    assert back.report()["notices"] == p.report()["notices"]
    assert back.report()["notices"][0]["text"].startswith("recorded 2 of 6 steps in 2 windows")


def test_a_steps_export_to_gz_is_compressed_once_with_its_samples(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gzip

    opened: list[str] = []
    real_open = gzip.open

    def counted(path: Any, mode: str = "rb", *args: Any, **kwargs: Any) -> Any:
        opened.append(mode)
        return real_open(path, mode, *args, **kwargs)

    monkeypatch.setattr(gzip, "open", counted)
    export = tmp_path / "run.json.gz"
    with gpuprofile.profile(steps=(0, 1, 2), export=export, interval=0.01) as p:
        for _ in range(4):
            time.sleep(0.02)
            torch.ones(8, 8).cumsum(0)
            gpuprofile.step()
    # Written once (the windows and the samples together), never read back and rewritten.
    assert opened == ["wb"]
    monkeypatch.undo()
    back = gpuprofile.load(export)
    assert len(p.trace.counters) > 0
    assert len(back.trace.counters) == len(p.trace.counters)
    assert back.report()["notices"] == p.report()["notices"]


def test_samples_that_cannot_be_exported_are_reported_and_the_file_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gpuprofile.capture.session as session

    def refuse(path: Path, counters: pd.DataFrame, origin_ns: int) -> None:
        raise CounterExportError("the file does not end with a traceEvents list")

    monkeypatch.setattr(session, "append_counters", refuse)
    export = tmp_path / "cell.json"
    with gpuprofile.profile(export=export, interval=0.01) as p:
        torch.ones(8, 8).cumsum(0)
    assert json.loads(export.read_text())["traceEvents"]  # torch's file, as it wrote it
    (error,) = p.report()["capture_errors"]
    assert str(export) in error and "traceEvents" in error
    assert f"INCOMPLETE: samples not written to {export}" in p.text()


def test_a_write_that_fails_leaves_torchs_file_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path / "run.json", document([cpu_op("aten::mm", 1.0, 5.0)], traceName="r"))
    before = path.read_bytes()
    real_open = Path.open

    class DiskFull:
        def __init__(self, file: Any) -> None:
            self.file = file

        def __getattr__(self, name: str) -> Any:
            return getattr(self.file, name)

        def __enter__(self) -> DiskFull:
            return self

        def __exit__(self, *exc: object) -> None:
            self.file.close()

        def write(self, data: bytes) -> int:
            if b'"ph": "C"' in data:
                self.file.write(data[: len(data) // 2])  # half of it reaches the disk
                raise OSError(28, "No space left on device")
            return int(self.file.write(data))

    monkeypatch.setattr(Path, "open", lambda self, *a, **k: DiskFull(real_open(self, *a, **k)))
    with pytest.raises(OSError, match="No space"):
        append_counters(path, samples(), BASE_NS)
    monkeypatch.undo()
    assert path.read_bytes() == before


def test_samples_before_the_files_base_time_keep_their_sign(tmp_path: Path) -> None:
    doc = document([cpu_op("aten::mm", 1.0, 5.0)], baseTimeNanoseconds=BASE_NS)
    path = write(tmp_path / "early.json", doc)
    origin = BASE_NS - 2_500_000  # 2.5 ms before the base: negative ts in the file
    append_counters(path, samples(), origin)
    written = counter_events(path)
    assert [BASE_NS + int(Decimal(str(e["ts"])) * 1000) for e in written] == [
        origin + t for t in samples()["time_ns"].tolist()
    ]
