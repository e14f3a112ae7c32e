"""gpuprofile.calibrate() on a real GPU: every roof measured, plausible against the datasheet."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

import gpuprofile
from gpuprofile.capture.calibrate import compare, datasheet_for_this_device
from gpuprofile.cli import main


@pytest.fixture
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    return tmp_path / "gpuprofile"


def test_calibrate_measures_every_gpu_roof(cache_home: Path) -> None:
    before = torch.get_float32_matmul_precision()
    hw = gpuprofile.calibrate(8, refresh=True)
    props = torch.cuda.get_device_properties(0)
    assert hw.source == "calibrated"
    assert hw.name == torch.cuda.get_device_name(0)
    assert hw.sm_count == props.multi_processor_count
    flops = hw.peak_flops
    assert {"fp32", "fp16"} <= set(flops)
    if props.major >= 8 and torch.version.hip is None:
        assert {"tf32", "bf16"} <= set(flops)
        # Tensor cores: TF32 beats FP32 with TF32 off, and half precision beats both.
        assert flops["fp32"] < flops["tf32"] < flops["bf16"]
    assert hw.dram_bytes_per_s is not None and hw.dram_bytes_per_s > 100e9
    assert hw.link_bytes_per_s is not None and hw.link_bytes_per_s > 1e9
    assert "Host link" in hw.notes
    assert len(list(cache_home.glob("calibration-*.json"))) == 1
    # The float32 matmul precision the user had is restored.
    assert torch.get_float32_matmul_precision() == before


def test_measured_roofs_are_plausible_against_the_datasheet(cache_home: Path) -> None:
    sheet = datasheet_for_this_device()
    if sheet is None:
        pytest.skip(f"{torch.cuda.get_device_name(0)} is not in the datasheet tables")
    hw = gpuprofile.calibrate(8, refresh=True)
    print(compare(hw, sheet))
    for precision in ("fp32", "tf32", "bf16", "fp16"):
        if precision in hw.peak_flops and precision in sheet.peak_flops:
            share = hw.peak_flops[precision] / sheet.peak_flops[precision]
            # A large matmul reaches a good part of the peak; boost clocks allow a little over.
            assert 0.3 < share < 1.25, (precision, share)
    assert sheet.dram_bytes_per_s is not None and hw.dram_bytes_per_s is not None
    assert 0.4 < hw.dram_bytes_per_s / sheet.dram_bytes_per_s < 1.1


def test_cli_calibrate_on_the_gpu(cache_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["calibrate", "--seconds", "5", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["calibrated"]["name"] == torch.cuda.get_device_name(0)
    if printed["datasheet"] is not None:
        assert printed["datasheet"]["source"] == "datasheet"
