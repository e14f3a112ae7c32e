"""The gauge sampler thread, its sources, and its samples as the Trace's counters."""

from __future__ import annotations

import os
import sys
import threading
import time
import types
from typing import Any

import numpy as np
import pytest
import torch

import gpuprofile
from gpuprofile.analyses.context import Analysis
from gpuprofile.capture.guard import profiler_running
from gpuprofile.capture.sampler import THREAD_NAME, Sampler
from gpuprofile.capture.sources import CPU_SPAN_S, NvmlSource, PsutilSource
from gpuprofile.report.build import _sampled
from gpuprofile.report.text import render_text
from gpuprofile.trace.meta import RankMeta, Sampling, TraceMeta
from gpuprofile.trace.model import Trace, make_table
from gpuprofile.trace.samples import Reading, with_samples


class Counting:
    name = "counting"

    def __init__(self) -> None:
        self.reads = 0

    def unavailable(self) -> str | None:
        return None

    def read(self) -> list[Reading]:
        self.reads += 1
        return [Reading("count", "1", -1, float(self.reads))]


class Absent:
    name = "absent"

    def unavailable(self) -> str | None:
        return "no such device here"

    def read(self) -> list[Reading]:
        raise AssertionError("an unavailable source is never read")


class BreaksOnThird(Counting):
    name = "breaks"

    def read(self) -> list[Reading]:
        self.reads += 1
        if self.reads == 3:
            raise OSError("device went away")
        return [Reading("fragile", "W", 0, 7.0)]


def sampler_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == THREAD_NAME]


def run_for(sampler: Sampler, seconds: float) -> None:
    sampler.start()
    time.sleep(seconds)
    sampler.stop()


def test_samples_at_the_interval_and_states_missing_and_failed_sources() -> None:
    counting, absent, breaks = Counting(), Absent(), BreaksOnThird()
    sampler = Sampler([counting, absent, breaks], interval_s=0.02)
    sampler.start()
    deadline = time.monotonic() + 30  # a loaded machine may read late, never not at all
    while counting.reads < 10 and time.monotonic() < deadline:
        time.sleep(0.01)
    sampler.stop()
    samples = sampler.samples
    counts = [(t, r.value) for t, r in samples if r.name == "count"]
    # Every read kept, in order: 1, 2, 3, ...
    assert [v for _, v in counts] == [float(i) for i in range(1, counting.reads + 1)]
    assert counting.reads >= 10
    gaps = np.diff([t for t, _ in counts]) / 1e9
    assert abs(float(np.median(gaps)) - 0.02) < 0.01
    missing = sampler.missing
    assert missing["absent"] == "no such device here"
    assert "OSError: device went away" in missing["breaks"]
    assert breaks.reads == 3  # not asked again after failing
    assert [r.name for _, r in samples].count("fragile") == 2
    assert "counting" not in missing


def test_ring_buffer_keeps_the_newest_and_counts_the_dropped() -> None:
    counting = Counting()
    sampler = Sampler([counting], interval_s=0.01, max_samples=5)
    run_for(sampler, 0.15)
    assert counting.reads > 5
    values = [r.value for _, r in sampler.samples]
    assert values == [float(i) for i in range(counting.reads - 4, counting.reads + 1)]
    assert sampler.dropped == counting.reads - 5


def test_stop_joins_the_thread_at_once_and_twice() -> None:
    sampler = Sampler([Counting()], interval_s=30.0)
    sampler.start()
    time.sleep(0.05)
    assert len(sampler_threads()) == 1
    assert sampler_threads()[0].daemon
    start = time.perf_counter()
    sampler.stop()
    sampler.stop()
    assert time.perf_counter() - start < 1.0  # Event.wait wakes, no 30 s sleep to finish
    assert sampler_threads() == []
    assert not sampler.running
    with pytest.raises(RuntimeError):
        sampler.start()


def test_on_sample_runs_on_the_sampler_thread_and_cannot_kill_it() -> None:
    seen: list[tuple[str, int, list[Reading]]] = []

    def record(time_ns: int, readings: list[Reading]) -> None:
        seen.append((threading.current_thread().name, time_ns, readings))

    sampler = Sampler([Counting()], interval_s=0.01, on_sample=record)
    run_for(sampler, 0.08)
    assert seen and {name for name, _, _ in seen} == {THREAD_NAME}
    assert [r.value for _, _, rs in seen for r in rs] == [r.value for _, r in sampler.samples]

    def broken(time_ns: int, readings: list[Reading]) -> None:
        raise ValueError("widget gone")

    counting = Counting()
    sampler = Sampler([counting], interval_s=0.01, on_sample=broken)
    run_for(sampler, 0.08)
    assert sampler.callback_error == "ValueError: widget gone"
    assert counting.reads > 3  # kept sampling


def built_trace(origin_ns: int) -> Trace:
    ops = make_table(
        "ops",
        {
            "id": [0, 1],
            "rank": [0, 0],
            "name": ["a", "b"],
            "start_ns": [0, 5_000_000],
            "dur_ns": [2_000_000, 5_000_000],
        },
    )
    counters = make_table(
        "counters",
        {
            "rank": [0],
            "name": ["earlier"],
            "unit": ["x"],
            "device": [3],
            "time_ns": [42],
            "value": [1.5],
        },
    )
    meta = TraceMeta(origin_ns=origin_ns, ranks={0: RankMeta()})
    return Trace(ops=ops, counters=counters, meta=meta)


def test_with_samples_places_samples_on_the_trace_time_base() -> None:
    origin = 1_700_000_000_123_456_789
    trace = built_trace(origin)  # events cover [0, 10 ms]
    samples = [
        (origin - 3_000_000, Reading("cpu", "%", -1, 10.0)),  # before the first event
        (origin - 1_000_000, Reading("cpu", "%", -1, 20.0)),  # last before: holds at 0
        (origin + 4_000_000, Reading("cpu", "%", -1, 30.0)),
        (origin + 10_000_000, Reading("cpu", "%", -1, 40.0)),  # at the end: kept
        (origin + 12_000_000, Reading("cpu", "%", -1, 50.0)),  # after the end: left out
        (origin + 6_500_000, Reading("mem", "B", 1, 99.0)),
    ]
    out = with_samples(trace, samples, {"nvml": "no driver"}, interval_s=0.5, dropped=3)
    assert trace.counters.shape[0] == 1  # the input is not changed
    c = out.counters
    cpu = c[c["name"] == "cpu"].sort_values("time_ns")
    assert cpu["time_ns"].tolist() == [0, 4_000_000, 10_000_000]
    assert cpu["value"].tolist() == [20.0, 30.0, 40.0]
    assert set(cpu["unit"].astype(str)) == {"%"} and set(cpu["device"]) == {-1}
    mem = c[c["name"] == "mem"]
    assert mem["time_ns"].tolist() == [6_500_000] and mem["device"].tolist() == [1]
    earlier = c[c["name"] == "earlier"]
    assert earlier["time_ns"].tolist() == [42] and earlier["value"].tolist() == [1.5]
    assert out.meta.sampling == Sampling(interval_s=0.5, missing={"nvml": "no driver"}, dropped=3)
    assert out.meta.origin_ns == origin and len(out.ops) == 2


def test_kineto_times_are_on_the_time_time_ns_clock() -> None:
    # A sample stamped with time.time_ns() just before a record_function starts must land
    # where the trace puts that record_function's start (the clock finding in counters.py).
    stamps = []
    with gpuprofile.profile(interval=0) as p:
        for i in range(3):
            torch.ones(64).sum()
            stamps.append(time.time_ns())
            with torch.profiler.record_function(f"probe{i}"):
                torch.ones(64).add(1)
            time.sleep(0.005)
    trace = p.trace
    samples = [(t, Reading(f"stamp{i}", "1", -1, 0.0)) for i, t in enumerate(stamps)]
    placed = with_samples(trace, samples, {}).counters
    ops = trace.ops
    sums = ops[ops["name"] == "aten::sum"].sort_values("start_ns")
    for i in range(3):
        op_start = int(ops.loc[ops["name"] == f"probe{i}", "start_ns"].iloc[0])
        stamp = int(placed.loc[placed["name"] == f"stamp{i}", "time_ns"].iloc[0])
        # Between the sum that ran just before the stamp and the probe just after it: on one
        # clock, whatever the machine's load stretches the gap to.
        before = sums.iloc[i]
        assert int(before["start_ns"] + before["dur_ns"]) <= stamp <= op_start


def half_busy(seconds: float) -> None:
    """Busy half of each 20 ms, asleep the other half: about 50% of one core."""
    end = time.perf_counter() + seconds
    a = torch.randn(64, 64)
    while time.perf_counter() < end:
        busy_until = time.perf_counter() + 0.01
        while time.perf_counter() < busy_until:
            a = (a @ a).tanh()
        time.sleep(0.01)


def test_real_capture_records_process_gauges_within_the_trace() -> None:
    with gpuprofile.profile(interval=0.02) as p:
        wall0, cpu0 = time.perf_counter(), time.process_time()
        half_busy(0.6)
        wall1, cpu1 = time.perf_counter(), time.process_time()
    trace = p.trace
    c = trace.counters
    names = set(c["name"].astype(str))
    assert {"process CPU (100% = 1 core)", "process RSS", "system memory used"} <= names
    end = int((trace.ops["start_ns"] + trace.ops["dur_ns"]).max())
    assert int(c["time_ns"].min()) >= 0 and int(c["time_ns"].max()) <= end
    cpu = c[c["name"] == "process CPU (100% = 1 core)"]
    # The sample at 0 is the one taken before the first event (profiler start-up); each later
    # one covers at least CPU_SPAN_S before it (samples come every 20 ms, CPU shares less often:
    # over 20 ms, clock ticks of 10 ms make them 0% or several hundred).
    during = cpu[cpu["time_ns"] > 0]["value"]
    assert 0.6 / 0.2 <= len(during) <= 0.6 / CPU_SPAN_S + 1
    assert (during <= 100 * (os.cpu_count() or 1)).all()
    expected = 100 * (cpu1 - cpu0) / (wall1 - wall0)
    assert 5 < expected < 90  # part idle, whatever else the machine runs
    assert abs(float(during.mean()) - expected) < 20, (during.tolist(), expected)
    rss = c[c["name"] == "process RSS"]["value"]
    assert (rss > 10e6).all() and set(c[c["name"] == "process RSS"]["unit"].astype(str)) == {"B"}
    sampling = trace.meta.sampling
    assert sampling is not None
    assert sampling.interval_s == 0.02 and sampling.dropped == 0
    if not torch.cuda.is_available():
        assert "CUDA not available" in sampling.missing["torch.cuda"]
        if NvmlSource().unavailable() is not None:
            assert sampling.missing["nvml"].startswith(("no NVIDIA", "nvidia-ml-py"))
    report = p.report()
    (rank,) = report["ranks"]
    sampled = {(s["name"], s["device"]): s for s in rank["sampled"]["counters"]}
    rss_stats = sampled[("process RSS", -1)]
    assert rss_stats["count"] == len(rss) and rss_stats["max"] == float(rss.max())
    assert rss_stats["min"] <= rss_stats["mean"] <= rss_stats["max"]
    assert rank["sampled"]["missing"] == sampling.missing
    text = render_text(p.typed_report())
    assert "sampled every 0.02 s" in text and "process RSS: " in text
    for source in sampling.missing:
        assert f"    {source}: none - " in text


def test_no_sampler_when_the_interval_is_off() -> None:
    with gpuprofile.profile(interval=0) as p:
        torch.ones(8).sum()
    assert len(p.trace.counters) == 0 and p.trace.meta.sampling is None
    assert p.report()["ranks"][0]["sampled"] is None


def test_repeated_captures_leave_no_thread_or_profiler_behind() -> None:
    for _ in range(3):
        with gpuprofile.profile(interval=0.01) as p:
            torch.ones(16).cumsum(0)
        assert len(p.trace.counters) > 0
        assert sampler_threads() == []
        assert not profiler_running()
    with pytest.raises(ZeroDivisionError), gpuprofile.profile(interval=0.01):
        torch.ones(16).cumsum(0)
        1 / 0  # noqa: B018
    assert sampler_threads() == [] and not profiler_running()


def test_psutil_cpu_is_per_core_not_per_machine() -> None:
    source = PsutilSource()
    assert source.unavailable() is None
    # Read at once, there is no span to measure a CPU share over: none is given (not a 0%).
    assert [r.name for r in source.read()] == ["process RSS", "system memory used"]
    cpu0, wall0 = time.process_time(), time.perf_counter()
    end = time.perf_counter() + 0.2
    while time.perf_counter() < end:
        pass
    (cpu, rss, system) = source.read()
    expected = 100 * (time.process_time() - cpu0) / (time.perf_counter() - wall0)
    assert cpu.unit == "%" and abs(cpu.value - expected) < 20  # ~100 on a machine of any size
    assert rss.value > 10e6 and system.value > rss.value


class FakeNvml(types.ModuleType):
    """A pynvml stand-in: GPU 0 plain, GPU 1 with MIG on and no PCIe counters."""

    NVML_DEVICE_MIG_ENABLE = 1
    NVML_PCIE_UTIL_TX_BYTES = 0
    NVML_PCIE_UTIL_RX_BYTES = 1
    NVML_CLOCK_SM = 1
    NVML_CLOCK_MEM = 2

    class NVMLError(Exception):
        pass

    class NVMLError_NotSupported(NVMLError):
        def __str__(self) -> str:
            return "Not Supported"

    class NVMLError_NoPermission(NVMLError):
        pass

    class NVMLError_NotFound(NVMLError):
        pass

    def __init__(self, pid: int) -> None:
        super().__init__("pynvml")
        self.pid = pid
        self.shutdowns = 0

    def nvmlInit(self) -> None:
        pass

    def nvmlShutdown(self) -> None:
        self.shutdowns += 1

    def nvmlDeviceGetCount(self) -> int:
        return 2

    def nvmlDeviceGetHandleByIndex(self, i: int) -> Any:
        return ("gpu", i)

    def nvmlDeviceGetMigMode(self, h: Any) -> tuple[int, int]:
        return (1, 1) if h == ("gpu", 1) else (0, 0)

    def nvmlDeviceGetUtilizationRates(self, h: Any) -> Any:
        if h == ("gpu", 1):
            raise self.NVMLError_NotSupported()
        return types.SimpleNamespace(gpu=87, memory=41)

    def nvmlDeviceGetMemoryInfo(self, h: Any) -> Any:
        used = {("gpu", 0): 5e9, ("gpu", 1): 9e9, ("mig", 1, 0): 2e9, ("mig", 1, 2): 3e9}[h]
        return types.SimpleNamespace(used=used)

    def nvmlDeviceGetPcieThroughput(self, h: Any, counter: int) -> int:
        if h == ("gpu", 1):
            raise self.NVMLError_NotSupported()
        return 1000 + counter

    def nvmlDeviceGetPowerUsage(self, h: Any) -> int:
        return 250_500

    def nvmlDeviceGetClockInfo(self, h: Any, clock: int) -> int:
        return 1980 if clock == self.NVML_CLOCK_SM else 2619

    def nvmlDeviceGetComputeRunningProcesses(self, h: Any) -> list[Any]:
        if h == ("gpu", 1):
            return [types.SimpleNamespace(pid=self.pid + 1, usedGpuMemory=1)]
        return [
            types.SimpleNamespace(pid=self.pid + 1, usedGpuMemory=1),
            types.SimpleNamespace(pid=self.pid, usedGpuMemory=4e9),
        ]

    def nvmlDeviceGetMaxMigDeviceCount(self, h: Any) -> int:
        return 3

    def nvmlDeviceGetMigDeviceHandleByIndex(self, h: Any, i: int) -> Any:
        if i == 1:
            raise self.NVMLError_NotFound()
        return ("mig", h[1], i)


def test_nvml_source_reads_devices_mig_slices_and_notes_what_it_cannot(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import os

    fake = FakeNvml(os.getpid())
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    source = NvmlSource()
    assert source.unavailable() is None
    got = {(r.name, r.device): (r.unit, r.value) for r in source.read()}
    assert got[("GPU utilization", 0)] == ("%", 87.0)
    assert got[("memory-controller utilization", 0)] == ("%", 41.0)
    assert got[("GPU memory used", 0)] == ("B", 5e9)
    assert got[("PCIe TX", 0)] == ("B/s", 1000 * 1024)  # NVML's KB/s are KiB/s
    assert got[("PCIe RX", 0)] == ("B/s", 1001 * 1024)
    assert got[("power", 0)] == ("W", 250.5)
    assert got[("SM clock", 0)] == ("MHz", 1980.0)
    assert got[("memory clock", 0)] == ("MHz", 2619.0)
    assert got[("process GPU memory", 0)] == ("B", 4e9)
    assert got[("MIG 0 memory used", 1)] == ("B", 2e9)
    assert got[("MIG 2 memory used", 1)] == ("B", 3e9)
    assert ("GPU utilization", 1) not in got and ("PCIe TX", 1) not in got
    assert ("process GPU memory", 1) not in got and ("MIG 1 memory used", 1) not in got
    assert "per MIG slice" in source.notes["utilization"]
    assert source.notes["PCIe TX"] == "GPU 1: Not Supported"
    assert "not listed" in source.notes["process memory"]
    # The sampler reports a working source's unreadable parts under "nvml: <part>".
    sampler = Sampler([source], interval_s=0.01)
    run_for(sampler, 0.03)
    assert "per MIG slice" in sampler.missing["nvml: utilization"]
    assert fake.shutdowns == 1


def test_nvml_source_fails_instead_of_raising(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeNvml(0)

    def lost(h: Any) -> Any:
        raise fake.NVMLError("GPU is lost")

    fake.nvmlDeviceGetMemoryInfo = lost  # type: ignore[method-assign]
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    source = NvmlSource()
    assert source.unavailable() is None
    assert source.read() == []
    assert source.failed is not None and "GPU is lost" in source.failed
    sampler = Sampler([NvmlSource()], interval_s=0.01)
    run_for(sampler, 0.03)
    assert "GPU is lost" in sampler.missing["nvml"]
    assert sampler.samples == []


def test_sampled_report_of_a_trace_without_a_sampler_is_none() -> None:
    assert _sampled(Analysis(Trace(meta=TraceMeta(ranks={0: RankMeta()}))), 0) is None


def test_magic_interval_option(shell: Any) -> None:
    cell = "import torch\ntorch.ones(32).cumsum(0)\n"
    result = shell.run_cell("%%gpuprofile --interval 0.01\n" + cell, store_history=True)
    assert result.success, result.error_in_exec
    sampling = gpuprofile.last().trace.meta.sampling
    assert sampling is not None and sampling.interval_s == 0.01
    assert len(gpuprofile.last().trace.counters) > 0
    result = shell.run_cell("%%gpuprofile --interval 0\n" + cell, store_history=True)
    assert result.success, result.error_in_exec
    assert gpuprofile.last().trace.meta.sampling is None
    assert sampler_threads() == []
