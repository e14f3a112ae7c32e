"""What the doctor reads from the machine, each behind one small function of ``Facts``: tests
pass their own functions to fake a driver, a container or a missing tool."""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuprofile.importers.kineto import direct, gather
from gpuprofile.trace import walk

# CAP_SYS_ADMIN's bit in /proc/self/status CapEff: what the NVIDIA driver calls an admin when
# it restricts GPU performance counters.
_CAP_SYS_ADMIN = 21


@dataclass(frozen=True)
class TorchFacts:
    """What torch says about its build and the devices it sees."""

    version: str
    cuda: str | None  # torch.version.cuda: the CUDA it was built for, None on CPU/ROCm builds
    hip: str | None  # torch.version.hip: the ROCm it was built for
    cuda_available: bool
    device_names: tuple[str, ...]
    kineto: bool  # torch.profiler.kineto_available()
    activities: tuple[str, ...]  # ProfilerActivity names the profiler can record
    driver: int | None = None  # the CUDA driver API version torch loaded (12040 = 12.4)


@dataclass(frozen=True)
class NvmlDevice:
    """One GPU as NVML sees it; a field is None where NVML refused, with the reason in
    ``refused``."""

    name: str
    mig: bool | None
    process_utilization: str  # "readable", "no samples yet", or NVML's error
    refused: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class NvmlFacts:
    """The driver version and the devices NVML lists."""

    driver: str
    devices: tuple[NvmlDevice, ...]


def read_reader_compiled() -> bool:
    # One build script makes every module: either all import or none.
    return gather.COMPILED and walk.COMPILED and direct.COMPILED


@dataclass(frozen=True)
class Facts:
    """Every fact the checks read, each a function so that a test can replace one.

    Attributes:
        torch: TorchFacts; raises whatever importing torch raises.
        nvml: NvmlFacts; raises ImportError without nvidia-ml-py, NVML's error otherwise.
        driver_params: the text of /proc/driver/nvidia/params, None without an NVIDIA driver.
        has_sys_admin: whether this process holds CAP_SYS_ADMIN.
        cgroup: the text of a file of this process's cgroup v2 folder (``cpu.max``), or None.
        host_cpus: the CPUs the kernel reports (os.cpu_count()).
        affinity_cpus: the CPUs this process may run on (sched_getaffinity), or None.
        host_memory: the machine's memory in bytes (psutil), or None.
        which: the path of a program on PATH, or None.
        tool_version: the first line of ``PROGRAM --version`` (raises on failure or timeout).
        package_version: an installed distribution's version, or None.
        in_kernel: whether this runs in a Jupyter kernel.
        widget_manager_seen: whether a notebook's widget manager opened ipywidgets' control
            channel to this kernel.
        reader_compiled: whether the trace reader's compiled core (a C extension, built when
            gpuprofile was installed) imports.
    """

    torch: Callable[[], TorchFacts]
    nvml: Callable[[], NvmlFacts]
    driver_params: Callable[[], str | None]
    has_sys_admin: Callable[[], bool]
    cgroup: Callable[[str], str | None]
    host_cpus: Callable[[], int]
    affinity_cpus: Callable[[], int | None]
    host_memory: Callable[[], int | None]
    which: Callable[[str], str | None]
    tool_version: Callable[[str], str]
    package_version: Callable[[str], str | None]
    in_kernel: Callable[[], bool]
    widget_manager_seen: Callable[[], bool]
    reader_compiled: Callable[[], bool] = read_reader_compiled


def read_torch() -> TorchFacts:
    import torch
    import torch.profiler

    available = bool(torch.cuda.is_available())
    names = (
        tuple(torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count()))
        if available
        else ()
    )
    driver = None
    if available and torch.version.cuda:
        # Private but stable since torch 1.x; absent, the NVML check still gives the driver.
        get_driver: Any = getattr(torch._C, "_cuda_getDriverVersion", None)
        try:
            driver = int(get_driver()) if get_driver is not None else None
        except RuntimeError:
            driver = None
    activities = torch._C._autograd._supported_activities()
    return TorchFacts(
        version=str(torch.__version__),
        cuda=torch.version.cuda,
        hip=torch.version.hip,
        cuda_available=available,
        device_names=names,
        kineto=bool(torch.profiler.kineto_available()),
        activities=tuple(sorted(a.name for a in activities)),
        driver=driver,
    )


def read_nvml() -> NvmlFacts:
    import pynvml

    pynvml.nvmlInit()
    try:
        driver = pynvml.nvmlSystemGetDriverVersion()
        devices = [
            _nvml_device(pynvml, pynvml.nvmlDeviceGetHandleByIndex(i))
            for i in range(pynvml.nvmlDeviceGetCount())
        ]
        return NvmlFacts(driver=_text(driver), devices=tuple(devices))
    finally:
        pynvml.nvmlShutdown()


def _nvml_device(nvml: Any, handle: Any) -> NvmlDevice:
    refused: dict[str, str] = {}
    mig: bool | None = None
    try:
        mig = nvml.nvmlDeviceGetMigMode(handle)[0] == nvml.NVML_DEVICE_MIG_ENABLE
    except nvml.NVMLError_NotSupported:
        mig = False  # a GPU without MIG
    except nvml.NVMLError as error:
        refused["MIG mode"] = str(error)
    try:
        nvml.nvmlDeviceGetProcessUtilization(handle, 0)
        utilization = "readable"
    except nvml.NVMLError_NotFound:
        # No process has sampled yet: the query itself is allowed.
        utilization = "no samples yet"
    except nvml.NVMLError as error:
        utilization = str(error)
    return NvmlDevice(_text(nvml.nvmlDeviceGetName(handle)), mig, utilization, refused)


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def read_has_sys_admin() -> bool:
    status = _read(Path("/proc/self/status")) or ""
    for line in status.splitlines():
        if line.startswith("CapEff:"):
            return bool(int(line.split()[1], 16) >> _CAP_SYS_ADMIN & 1)
    return os.geteuid() == 0 if hasattr(os, "geteuid") else False


def read_cgroup(name: str) -> str | None:
    # cgroup v2 mounts this process's own group at /sys/fs/cgroup inside a container.
    return _read(Path("/sys/fs/cgroup") / name)


def read_affinity() -> int | None:
    getter = getattr(os, "sched_getaffinity", None)
    return len(getter(0)) if getter is not None else None


def read_host_memory() -> int | None:
    try:
        import psutil
    except ImportError:
        return None
    return int(psutil.virtual_memory().total)


def read_tool_version(program: str) -> str:
    # nsys starts a JVM-free launcher but can still take a second or two on a cold disk.
    done = subprocess.run(
        [program, "--version"], capture_output=True, text=True, timeout=10, check=False
    )
    lines = [line.strip() for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"`{program} --version` exited {done.returncode}")
    return lines[-1] if program.endswith("ncu") else lines[0]


def read_package_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def read_in_kernel() -> bool:
    from IPython import get_ipython

    return getattr(get_ipython(), "kernel", None) is not None


def read_widget_manager_seen() -> bool:
    # JupyterLab's and Notebook 7's widget manager (ipywidgets 8) opens the
    # "jupyter.widget.control" comm when it connects to the kernel, to restore widgets, and
    # ipywidgets keeps it on the class even after the page closes it. The target exists only
    # once ipywidgets is imported: not imported, no manager can have reached it.
    ipywidgets: Any = sys.modules.get("ipywidgets")
    widget = getattr(ipywidgets, "Widget", None)
    return getattr(widget, "_control_comm", None) is not None


def machine_facts() -> Facts:
    """The facts of this machine and process."""
    return Facts(
        torch=read_torch,
        nvml=read_nvml,
        driver_params=lambda: _read(Path("/proc/driver/nvidia/params")),
        has_sys_admin=read_has_sys_admin,
        cgroup=read_cgroup,
        host_cpus=lambda: os.cpu_count() or 1,
        affinity_cpus=read_affinity,
        host_memory=read_host_memory,
        which=shutil.which,
        tool_version=read_tool_version,
        package_version=read_package_version,
        in_kernel=read_in_kernel,
        widget_manager_seen=read_widget_manager_seen,
        reader_compiled=read_reader_compiled,
    )
