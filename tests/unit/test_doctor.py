"""gpuprofile doctor: on this machine (no GPU, torch CPU build) and with faked machines."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from typing import Any

import pytest
import torch
from IPython.core.interactiveshell import InteractiveShell

from gpuprofile import cli
from gpuprofile.doctor import (
    Facts,
    NvmlDevice,
    NvmlFacts,
    TorchFacts,
    exit_code,
    machine_facts,
    render_text,
    run_checks,
    to_json,
)

NAMES = [
    "torch",
    "torch.profiler",
    "cuda",
    "cupti",
    "gpu counters",
    "nvml",
    "container",
    "nsys",
    "ncu",
    "jupyter",
    "widget frontend",
    "reader core",
]

CUDA_TORCH = TorchFacts(
    version="2.6.0+cu124",
    cuda="12.4",
    hip=None,
    cuda_available=True,
    device_names=("NVIDIA H100 80GB HBM3",),
    kineto=True,
    activities=("CPU", "CUDA"),
    driver=12040,
)
PARAMS = "ResmanDebugLevel: 4294967295\nRmProfilingAdminOnly: {}\nEnableMSI: 1\n"


def _raise(error: BaseException) -> Any:
    def reader(*_args: object) -> Any:
        raise error

    return reader


def _gpu_box(**changes: Any) -> Facts:
    """A healthy GPU machine, every fact made up; ``changes`` replace some."""
    facts = Facts(
        torch=lambda: CUDA_TORCH,
        nvml=lambda: NvmlFacts("550.54.15", (NvmlDevice("NVIDIA H100", False, "readable"),)),
        driver_params=lambda: PARAMS.format(0),
        has_sys_admin=lambda: False,
        cgroup=lambda name: {"cpu.max": "max 100000", "memory.max": "max"}.get(name),
        host_cpus=lambda: 8,
        affinity_cpus=lambda: 8,
        host_memory=lambda: 64 << 30,
        which=lambda program: f"/usr/local/cuda/bin/{program}",
        tool_version=lambda path: f"{os.path.basename(path)} 2024.1",
        package_version=lambda name: "8.1.5" if name == "ipywidgets" else "4.2.0",
        in_kernel=lambda: True,
        widget_manager_seen=lambda: True,
        reader_compiled=lambda: True,
    )
    return dataclasses.replace(facts, **changes)


def _by_name(facts: Facts) -> dict[str, Any]:
    return {c.name: c for c in run_checks(facts)}


def test_this_machine_torch_cpu_build_is_ok_and_cuda_skips() -> None:
    # Independent: torch itself says what build this is.
    assert torch.version.cuda is None and torch.version.hip is None, "this test expects no GPU"
    checks = run_checks()
    assert [c.name for c in checks] == NAMES
    found = {c.name: c for c in checks}
    assert found["torch"].status == "ok"
    assert found["torch"].detail == f"{torch.__version__} (CPU build)"
    assert found["torch.profiler"].status == "ok"
    assert found["cuda"].status == "skip"
    assert "torch" in found["cuda"].detail and "CPU build" in found["cuda"].detail
    assert found["cupti"].status == "skip"
    # No driver here: nothing about counters or NVML can be known.
    if not os.path.exists("/proc/driver/nvidia/params"):
        assert found["gpu counters"].status == "skip"
        assert found["nvml"].status in ("skip", "warn")
    assert found["widget frontend"].status == "skip"  # pytest is no kernel
    assert exit_code(checks) == 0
    for check in checks:
        assert check.status in ("ok", "warn", "fail", "skip")
        assert check.status == "ok" or check.detail, check
        if check.status == "warn":
            assert check.fix, check


def test_cli_json_names_every_check_and_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["doctor", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "gpuprofile.doctor/1"
    assert doc["ok"] is True
    assert [c["name"] for c in doc["checks"]] == NAMES
    assert all(set(c) == {"name", "status", "detail", "fix"} for c in doc["checks"])


def test_cli_text_one_line_per_check(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["doctor"]) == 0
    lines = capsys.readouterr().out.splitlines()
    heads = [line for line in lines if not line.startswith(" ")]
    assert len(heads) == len(NAMES)
    assert heads[0].split()[:3] == ["ok", "torch", torch.__version__]
    assert all(line.split()[0] in ("ok", "warn", "fail", "skip") for line in heads)
    assert all(line.strip().startswith("fix: ") for line in lines if line.startswith(" "))


def test_magic_prints_the_text(shell: InteractiveShell, capsys: pytest.CaptureFixture[str]) -> None:
    shell.run_line_magic("gpuprofile_doctor", "")
    out = capsys.readouterr().out
    assert out.startswith("ok   torch")
    assert "widget frontend" in out


def test_a_healthy_gpu_machine_is_ok_everywhere() -> None:
    checks = run_checks(_gpu_box())
    bad = [c for c in checks if c.status != "ok"]
    assert bad == []
    found = {c.name: c for c in checks}
    assert "CUDA 12.4 build" in found["torch"].detail
    assert "NVIDIA H100 80GB HBM3" in found["cuda"].detail
    assert "CUDA 12.4" in found["cuda"].detail  # driver 12040
    assert "550.54.15" in found["nvml"].detail


def test_torch_failing_to_import_fails_with_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    checks = run_checks(_gpu_box(torch=_raise(ImportError("No module named 'torch'"))))
    found = {c.name: c for c in checks}
    assert found["torch"].status == "fail"
    assert "No module named 'torch'" in found["torch"].detail
    assert "pip install torch" in found["torch"].fix
    assert found["cuda"].status == "skip"
    assert exit_code(checks) == 1
    assert to_json(checks)["ok"] is False
    assert render_text(checks).startswith("fail torch")


def test_a_profiler_without_kineto_fails() -> None:
    broken = dataclasses.replace(CUDA_TORCH, kineto=False, activities=())
    found = _by_name(_gpu_box(torch=lambda: broken))
    assert found["torch.profiler"].status == "fail"
    assert exit_code(run_checks(_gpu_box(torch=lambda: broken))) == 1


def test_no_cupti_warns_with_the_package_to_install() -> None:
    no_cupti = dataclasses.replace(CUDA_TORCH, activities=("CPU",))
    checks = run_checks(_gpu_box(torch=lambda: no_cupti))
    found = {c.name: c for c in checks}
    assert found["cupti"].status == "warn"
    assert "libcupti" in found["cupti"].detail and "cupti" in found["cupti"].fix
    assert exit_code(checks) == 0


def test_cuda_build_without_a_visible_gpu_warns() -> None:
    blind = dataclasses.replace(CUDA_TORCH, cuda_available=False, device_names=())
    found = _by_name(_gpu_box(torch=lambda: blind))
    assert found["cuda"].status == "warn"
    assert "CUDA_VISIBLE_DEVICES" in found["cuda"].fix


def test_counters_restricted_to_admins_warn_with_the_driver_option() -> None:
    locked = _gpu_box(driver_params=lambda: PARAMS.format(1))
    check = _by_name(locked)["gpu counters"]
    assert check.status == "warn"
    assert "ERR_NVGPUCTRPERM" in check.detail + check.fix
    assert "NVreg_RestrictProfilingToAdminUsers=0" in check.fix
    assert "--cap-add=SYS_ADMIN" in check.fix
    assert exit_code(run_checks(locked)) == 0
    # An admin (CAP_SYS_ADMIN) reads them anyway; with the option at 0 anyone does.
    admin = dataclasses.replace(locked, has_sys_admin=lambda: True)
    assert _by_name(admin)["gpu counters"].status == "ok"
    assert _by_name(_gpu_box())["gpu counters"].status == "ok"
    assert _by_name(_gpu_box(driver_params=lambda: None))["gpu counters"].status == "skip"


class FakeNvmlError(Exception):
    pass


def test_nvml_failing_warns_with_a_fix() -> None:
    failing = _gpu_box(nvml=_raise(FakeNvmlError("Driver Not Loaded")))
    check = _by_name(failing)["nvml"]
    assert check.status == "warn"
    assert "Driver Not Loaded" in check.detail
    assert "nvidia-smi" in check.fix
    missing = _by_name(_gpu_box(nvml=_raise(ImportError("pynvml"))))["nvml"]
    assert missing.status == "warn" and "nvidia-ml-py" in missing.fix
    # Without any NVIDIA driver, NVML failing is expected: skip, not warn.
    no_driver = _by_name(_gpu_box(nvml=_raise(FakeNvmlError("x")), driver_params=lambda: None))
    assert no_driver["nvml"].status == "skip"


def test_nvml_mig_and_refused_process_utilisation_warn() -> None:
    device = NvmlDevice("NVIDIA A100", True, "Insufficient Permissions")
    check = _by_name(_gpu_box(nvml=lambda: NvmlFacts("535.1", (device,))))["nvml"]
    assert check.status == "warn"
    assert "MIG on" in check.detail
    assert "MIG mode" in check.fix and "per-process utilisation" in check.fix


def test_cgroup_quota_of_one_cpu_on_an_8_cpu_host_warns() -> None:
    limits = {"cpu.max": "100000 100000\n", "memory.max": str(4 << 30)}
    check = _by_name(_gpu_box(cgroup=limits.get))["container"]
    assert check.status == "warn"
    assert check.detail.startswith("1 CPU available of the 8 the host shows")
    assert "OMP_NUM_THREADS=1" in check.fix
    assert "4.29 GB" in check.detail  # 4 GiB, in the package's SI bytes
    half = _by_name(_gpu_box(cgroup={"cpu.max": "150000 100000"}.get))["container"]
    assert half.detail.startswith("1.50 CPUs available")
    unlimited = _by_name(_gpu_box())["container"]
    assert unlimited.status == "ok"


def test_affinity_narrower_than_the_host_warns() -> None:
    check = _by_name(_gpu_box(affinity_cpus=lambda: 2))["container"]
    assert check.status == "warn" and check.detail.startswith("2 CPUs available of the 8")


def test_nsys_absent_warns_on_a_gpu_machine_and_skips_on_a_cpu_one() -> None:
    gone = _gpu_box(which=lambda _program: None)
    found = _by_name(gone)
    assert found["nsys"].status == "warn" and "PATH" in found["nsys"].fix
    cpu_torch = dataclasses.replace(
        CUDA_TORCH, cuda=None, cuda_available=False, device_names=(), activities=("CPU",)
    )
    assert _by_name(_gpu_box(which=lambda _p: None, torch=lambda: cpu_torch))["nsys"].status == (
        "skip"
    )
    broken = _by_name(_gpu_box(tool_version=_raise(RuntimeError("exited 127"))))
    assert broken["ncu"].status == "warn" and "exited 127" in broken["ncu"].detail
    assert _by_name(_gpu_box())["nsys"].detail == "nsys 2024.1 (/usr/local/cuda/bin/nsys)"


def test_widget_packages_missing_warn() -> None:
    versions = {"ipywidgets": "7.8.1"}
    old = _by_name(_gpu_box(package_version=versions.get))["jupyter"]
    assert old.status == "warn"
    assert "anywidget not installed" in old.detail and "pip install anywidget" in old.fix


def test_widget_frontend_in_a_kernel() -> None:
    seen = _by_name(_gpu_box())
    assert seen["widget frontend"].status == "ok"
    assert _by_name(_gpu_box(in_kernel=lambda: False))["widget frontend"].status == "skip"
    unseen = _by_name(_gpu_box(widget_manager_seen=lambda: False))
    # Unseen is not proof of a broken page (ipywidgets may have been imported after it
    # connected): skip, with the reason and what to do if widgets do not show.
    assert unseen["widget frontend"].status == "skip"
    assert "cannot be known" in unseen["widget frontend"].detail
    assert "Error displaying widget" in unseen["widget frontend"].fix


def test_a_reader_without_its_compiled_core_warns_with_the_notice() -> None:
    check = _by_name(_gpu_box(reader_compiled=lambda: False))["reader core"]
    assert check.status == "warn"
    assert "not built" in check.detail and "pure-Python" in check.detail
    assert "C compiler" in check.fix and "make setup" in check.fix
    assert _by_name(_gpu_box())["reader core"].status == "ok"


def test_machine_facts_read_this_process() -> None:
    facts = machine_facts()
    assert facts.host_cpus() == os.cpu_count()
    assert facts.affinity_cpus() == len(os.sched_getaffinity(0))
    assert facts.torch().version == torch.__version__
    assert facts.package_version("no-such-package-gpuprofile") is None
    assert facts.in_kernel() is False


def test_cli_exits_1_where_torch_does_not_import() -> None:
    # A real process in which `import torch` fails (None in sys.modules makes it raise
    # ImportError): the whole command, not only run_checks.
    script = (
        "import sys; sys.modules['torch'] = None\n"
        "from gpuprofile.cli import main\n"
        "sys.exit(main(['doctor', '--format', 'json']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 1, done.stderr
    doc = json.loads(done.stdout)
    assert doc["ok"] is False
    assert doc["checks"][0]["name"] == "torch" and doc["checks"][0]["status"] == "fail"
    assert "Traceback" not in done.stderr
