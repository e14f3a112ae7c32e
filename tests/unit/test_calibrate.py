"""gpuprofile.calibrate(): roof arithmetic, timing, cache, comparison, and the CLI on the CPU."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

import gpuprofile
from gpuprofile.capture import calibrate as cal
from gpuprofile.cli import main
from gpuprofile.errors import GpuprofileError
from gpuprofile.hardware import cache
from gpuprofile.hardware.model import Hardware
from gpuprofile.units import UNKNOWN


@pytest.fixture
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    return tmp_path / "gpuprofile"


def test_roofs_from_measurements() -> None:
    n, nbytes = 1024, 64 << 20
    measured = {
        "fp32": cal.Measurement("fp32", cal.matmul_flops(n), 0.010, 5, "matmul"),
        "bf16": cal.Measurement("bf16", cal.matmul_flops(n), 0.001, 5, "matmul"),
        "dram": cal.Measurement("dram", cal.copy_bytes(nbytes, True), 0.002, 5, "copy"),
        "h2d": cal.Measurement("h2d", cal.copy_bytes(nbytes, False), 0.004, 5, "h2d"),
        "d2h": cal.Measurement("d2h", cal.copy_bytes(nbytes, False), 0.005, 5, "d2h"),
    }
    fields = cal.roofs(measured)
    # An n x n matmul does n^3 multiply-adds; a copy within memory reads and writes each byte.
    assert fields["peak_flops"] == {
        "fp32": pytest.approx(2 * n**3 / 0.010),
        "bf16": pytest.approx(2 * n**3 / 0.001),
    }
    assert fields["dram_bytes_per_s"] == pytest.approx(2 * nbytes / 0.002)
    assert fields["link_bytes_per_s"] == pytest.approx(nbytes / 0.004)  # the faster direction


def test_roofs_without_copies_leave_bandwidths_unknown() -> None:
    fields = cal.roofs({"fp32": cal.Measurement("fp32", 8.0, 2.0, 2, "x")})
    assert fields["peak_flops"] == {"fp32": 4.0}
    assert fields["dram_bytes_per_s"] is None and fields["link_bytes_per_s"] is None


def test_best_time_skips_the_warm_up_and_keeps_the_fastest_run() -> None:
    durations: Iterator[float] = iter([0.001, 0.3, 0.2, 0.5])  # the first is the warm-up
    best, runs = cal.best_time(lambda: next(durations), budget_s=0.0)
    assert (best, runs) == (0.2, 2)  # a spent budget still times two runs


def test_best_time_stops_at_the_run_cap() -> None:
    best, runs = cal.best_time(lambda: 1.0, budget_s=3600.0)
    assert runs == cal._MAX_RUNS and best == 1.0


def test_compare_shows_measured_against_datasheet() -> None:
    measured = Hardware(
        name="GPU X",
        source="calibrated",
        peak_flops={"fp32": 10e12, "bf16": 150e12},
        dram_bytes_per_s=1.5e12,
        link_bytes_per_s=20e9,
    )
    sheet = Hardware(
        name="X datasheet",
        source="datasheet",
        peak_flops={"fp32": 20e12, "bf16": 200e12, "fp8": 400e12},
        dram_bytes_per_s=2e12,
        link_bytes_per_s=32e9,
    )
    lines = cal.compare(measured, sheet).splitlines()
    rows = {line.split()[0]: line.split() for line in lines[2:]}
    assert lines[1].split() == ["roof", "measured", "datasheet", "%"]
    assert rows["fp32"][-1] == "50%"  # 10 of 20
    assert rows["bf16"][-1] == "75%"  # 150 of 200
    assert rows["fp8"][1] == UNKNOWN and rows["fp8"][-1] == UNKNOWN
    assert rows["DRAM"][-1] == "75%"  # 1.5 of 2 TB/s
    assert rows["host"][-1] == "63%"  # 20 of 32 GB/s: 62.5, halves away from zero
    assert "fp64" not in rows


def test_compare_without_a_datasheet_lists_the_measurements() -> None:
    measured = Hardware(name="CPU", source="calibrated", peak_flops={"fp32": 5e10})
    text = cal.compare(measured, None)
    assert "50.0 GFLOP/s" in text
    assert "DRAM" not in text


def test_cache_files_are_per_device_and_torch_version(
    cache_home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    a = cache.cache_path("NVIDIA H100 80GB HBM3", "2.6.0+cu124")
    assert a.parent == cache_home
    assert a != cache.cache_path("NVIDIA H100 80GB HBM3", "2.7.0")
    assert a != cache.cache_path("NVIDIA A100-SXM4-80GB", "2.6.0+cu124")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache.cache_dir() == tmp_path / "home" / ".cache" / "gpuprofile"


def test_a_cached_hardware_round_trips(cache_home: Path) -> None:
    hw = Hardware(name="n", source="calibrated", peak_flops={"fp32": 1e12}, dram_bytes_per_s=1e11)
    path = cache.cache_path("n", "t")
    cache.write_cache(path, hw)
    assert cache.read_cache(path) == hw
    path.write_text("{not json")
    with pytest.raises(GpuprofileError, match="calibration cache"):
        cache.read_cache(path)


def test_calibrate_on_the_cpu_measures_then_reads_the_cache(
    cache_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hw = gpuprofile.calibrate(2, device="cpu")
    assert hw.source == "calibrated"
    assert hw.name.startswith("CPU ")
    assert 1e9 < hw.peak_flops["fp32"] < 1e14
    assert hw.dram_bytes_per_s is not None and 1e8 < hw.dram_bytes_per_s < 1e13
    assert "best of" in hw.notes
    (written,) = cache_home.glob("calibration-*.json")
    assert json.loads(written.read_text())["hardware"]["name"] == hw.name

    def no_measuring(seconds: float) -> Hardware:
        raise AssertionError("measured again instead of reading the cache")

    monkeypatch.setattr(cal, "_calibrate_cpu", no_measuring)
    assert gpuprofile.calibrate(2, device="cpu") == hw
    with pytest.raises(AssertionError, match="measured again"):
        gpuprofile.calibrate(2, device="cpu", refresh=True)


def test_calibrate_rejects_a_non_positive_budget() -> None:
    with pytest.raises(ValueError, match="positive"):
        gpuprofile.calibrate(0, device="cpu")


def test_calibrate_is_exported_lazily() -> None:
    assert "calibrate" in gpuprofile.__all__
    assert gpuprofile.calibrate is cal.calibrate


def test_cli_calibrate_json(cache_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["calibrate", "--seconds", "2", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    measured = printed["calibrated"]
    assert measured["source"] == "calibrated"
    assert measured["peak_flops"]["fp32"] > 0
    assert measured["dram_bytes_per_s"] > 0
    # The datasheet entry is the CUDA device's; on a CPU there is none to compare with.
    assert (printed["datasheet"] is None) == (not torch.cuda.is_available())
    assert len(list(cache_home.glob("calibration-*.json"))) == 1


def test_cli_calibrate_prints_a_table(
    cache_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fixed = Hardware(name="CPU test", source="calibrated", peak_flops={"fp32": 2e11})
    seen: list[tuple[float, bool]] = []

    def fake(seconds: float, *, device: str | None = None, refresh: bool = False) -> Hardware:
        seen.append((seconds, refresh))
        return fixed

    monkeypatch.setattr(cal, "calibrate", fake)
    assert main(["calibrate", "--seconds", "3"]) == 0
    out = capsys.readouterr().out
    assert seen == [(3.0, True)]  # the command line always measures anew
    assert "CPU test" in out and "200 GFLOP/s" in out


def test_cli_calibrate_rejects_a_non_positive_budget(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["calibrate", "--seconds", "0"])
    assert exit_info.value.code == 2
    assert "positive" in capsys.readouterr().err


def test_a_cpu_capture_is_measured_against_this_cpus_cached_calibration(
    cache_home: Path, tmp_path: Path
) -> None:
    def capture(export: Path | None = None) -> gpuprofile.Profile:
        a = torch.ones(64, 64)
        with gpuprofile.profile(interval=0, export=export) as p:
            for _ in range(20):
                a = a @ a / 64
        return p

    # Nothing cached: the CPU's roofs are unknown, and the report says to calibrate.
    assert capture().report()["hardware"]["source"] == "unknown"
    # A calibration of this very CPU (as calibrate() names and caches it), made earlier.
    measured = Hardware(
        name=cal.cpu_name(), source="calibrated", peak_flops={"fp32": 2e11}, dram_bytes_per_s=3e10
    )
    cache.write_cache(cache.cache_path(cal.cpu_name(), torch.__version__), measured)
    export = tmp_path / "cpu.json"
    report = capture(export).report()
    assert report["hardware"] == measured.to_dict()
    roofs = {g["key"]: g["roof"] for g in report["gauges"]}
    assert roofs["compute"] == 2e11 and roofs["dram-bandwidth"] == 3e10
    # The same trace read from a file was not necessarily made here: no calibration assumed.
    assert gpuprofile.load(export).report()["hardware"]["source"] == "unknown"
