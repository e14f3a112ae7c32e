"""What the sampler thread reads: GPU gauges from NVML, host gauges from psutil, and the CUDA
caching allocator's totals from torch.

Each source says why it cannot run (``unavailable()``) instead of reporting zeros, and states the
parts it cannot read (``notes``) instead of leaving them silently out. The NVML and torch sources
never raise from ``read()``: an error sets ``failed`` and the sampler stops asking them.
"""

from __future__ import annotations

import contextlib
import os
import time
from typing import Any, Protocol

from gpuprofile.trace.samples import Reading

HOST = -1


class Source(Protocol):
    name: str

    def unavailable(self) -> str | None:
        """Why this source cannot run on this machine, or None when it can."""
        ...

    def read(self) -> list[Reading]: ...


# Optional on a source (the sampler reads them with getattr):
#   failed: str | None      - set by read() when it stopped working, with the reason
#   notes: dict[str, str]   - parts it cannot read, with the reason (e.g. per-MIG utilization)
#   close() -> None         - release what unavailable() acquired


# The shortest span a process CPU share is measured over (see PsutilSource.read); a little
# under the default interval of 0.1 s, so that timer jitter does not skip every other sample.
CPU_SPAN_S = 0.09


class PsutilSource:
    """This process's CPU and resident memory, and the machine's memory in use."""

    name = "psutil"

    def __init__(self) -> None:
        self._process: Any = None
        self._psutil: Any = None
        self._cpu_since = (0.0, 0.0)
        self.notes: dict[str, str] = {}

    def unavailable(self) -> str | None:
        try:
            import psutil
        except ImportError:
            return "psutil not installed"
        self._psutil = psutil
        self._process = psutil.Process()
        self._cpu_since = self._cpu_now()
        return None

    def _cpu_now(self) -> tuple[float, float]:
        times = self._process.cpu_times()
        return time.monotonic(), times.user + times.system

    def read(self) -> list[Reading]:
        process, psutil = self._process, self._psutil
        out = []
        with process.oneshot():
            # CPU time advances in clock ticks (10 ms on Linux): over a shorter span a share is
            # noise (0% or 1000% at --interval 0.001), and over none (the first read) it is no
            # measurement at all. So a CPU share is given once at least CPU_SPAN_S has passed.
            wall, used = self._cpu_now()
            since_wall, since_used = self._cpu_since
            if wall - since_wall >= CPU_SPAN_S:
                # Not divided by the number of cores: 100 is one core fully busy, 400 four.
                cpu = 100 * (used - since_used) / (wall - since_wall)
                out.append(Reading("process CPU (100% = 1 core)", "%", HOST, cpu))
                self._cpu_since = (wall, used)
            rss = process.memory_info().rss
        memory = psutil.virtual_memory()
        return [
            *out,
            Reading("process RSS", "B", HOST, float(rss)),
            # total - available: what new allocations cannot get without swapping. psutil's own
            # "used" is computed differently on every OS and leaves page cache out on Linux.
            Reading("system memory used", "B", HOST, float(memory.total - memory.available)),
        ]


class TorchCudaSource:
    """The CUDA caching allocator's allocated and reserved bytes per device."""

    name = "torch.cuda"

    def __init__(self) -> None:
        self._devices = 0
        self.failed: str | None = None
        self.notes: dict[str, str] = {}

    def unavailable(self) -> str | None:
        import torch

        if not torch.cuda.is_available():
            return "CUDA not available (torch " + str(torch.__version__) + ")"
        self._devices = torch.cuda.device_count()
        return None

    def read(self) -> list[Reading]:
        import torch

        try:
            out = []
            for device in range(self._devices):
                # memory_stats is {} until this process has used the device: no CUDA init here.
                stats = torch.cuda.memory_stats(device)
                allocated = stats.get("allocated_bytes.all.current", 0)
                reserved = stats.get("reserved_bytes.all.current", 0)
                out.append(Reading("CUDA allocated", "B", device, float(allocated)))
                out.append(Reading("CUDA reserved", "B", device, float(reserved)))
            return out
        except Exception as error:
            self.failed = f"read failed: {type(error).__name__}: {error}"
            return []


class NvmlSource:
    """Device gauges from the NVIDIA driver (nvidia-ml-py): what nvidia-smi shows, per device."""

    name = "nvml"

    def __init__(self) -> None:
        self._nvml: Any = None
        self._handles: list[tuple[int, Any]] = []  # (CUDA ordinal, NVML handle)
        self._skip: set[tuple[int, str]] = set()  # (device, metric) the driver refused
        self._pid = os.getpid()
        self.failed: str | None = None
        self.notes: dict[str, str] = {}

    def unavailable(self) -> str | None:
        try:
            import pynvml
        except ImportError:
            return "nvidia-ml-py not installed"
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as error:
            return f"no NVIDIA driver (NVML: {error})"
        self._nvml = pynvml
        try:
            self._handles = _visible_handles(pynvml)
        except pynvml.NVMLError as error:
            self.close()
            return f"NVML cannot list devices ({error})"
        if not self._handles:
            self.close()
            return "no NVIDIA GPU visible (NVML lists none, or CUDA_VISIBLE_DEVICES hides all)"
        return None

    def close(self) -> None:
        if self._nvml is not None:
            # Reference-counted by the driver library: other users' handles stay valid.
            with contextlib.suppress(self._nvml.NVMLError):
                self._nvml.nvmlShutdown()
            self._nvml = None

    def read(self) -> list[Reading]:
        nvml = self._nvml
        if nvml is None:
            return []
        out: list[Reading] = []
        try:
            for device, handle in self._handles:
                self._read_device(nvml, device, handle, out)
        except Exception as error:
            self.failed = f"read failed: {type(error).__name__}: {error}"
            return []
        return out

    def _read_device(self, nvml: Any, device: int, handle: Any, out: list[Reading]) -> None:
        mig = self._metric(device, "MIG mode", lambda: nvml.nvmlDeviceGetMigMode(handle))
        mig_on = mig is not None and mig[0] == nvml.NVML_DEVICE_MIG_ENABLE
        if mig_on:
            self.notes.setdefault(
                "utilization",
                "not available per MIG slice: NVML reports no utilization with MIG on",
            )
        else:
            rates = self._metric(
                device, "utilization", lambda: nvml.nvmlDeviceGetUtilizationRates(handle)
            )
            if rates is not None:
                # NVML's "gpu" rate is the share of the last sample period (1/6 s to 1 s, by
                # device) in which any kernel ran: nvidia-smi's GPU-Util, not SM occupancy.
                out.append(Reading("GPU utilization", "%", device, float(rates.gpu)))
                out.append(
                    Reading("memory-controller utilization", "%", device, float(rates.memory))
                )
        memory = self._metric(device, "memory used", lambda: nvml.nvmlDeviceGetMemoryInfo(handle))
        if memory is not None:
            out.append(Reading("GPU memory used", "B", device, float(memory.used)))
        for label, counter in (
            ("PCIe TX", nvml.NVML_PCIE_UTIL_TX_BYTES),
            ("PCIe RX", nvml.NVML_PCIE_UTIL_RX_BYTES),
        ):
            kib_s = self._metric(
                device, label, lambda c=counter: nvml.nvmlDeviceGetPcieThroughput(handle, c)
            )
            if kib_s is not None:  # KB/s over a 20 ms window, in NVML's 1024-byte KB
                out.append(Reading(label, "B/s", device, float(kib_s) * 1024))
        milliwatts = self._metric(device, "power", lambda: nvml.nvmlDeviceGetPowerUsage(handle))
        if milliwatts is not None:
            out.append(Reading("power", "W", device, milliwatts / 1000))
        for label, clock in (
            ("SM clock", nvml.NVML_CLOCK_SM),
            ("memory clock", nvml.NVML_CLOCK_MEM),
        ):
            mhz = self._metric(
                device, label, lambda c=clock: nvml.nvmlDeviceGetClockInfo(handle, c)
            )
            if mhz is not None:
                out.append(Reading(label, "MHz", device, float(mhz)))
        used = self._metric(device, "process memory", lambda: self._process_memory(nvml, handle))
        if used is not None:
            out.append(Reading("process GPU memory", "B", device, float(used)))
        if mig_on:
            for index, slice_handle in self._mig_slices(nvml, device, handle):
                info = self._metric(
                    device,
                    f"MIG {index} memory",
                    lambda h=slice_handle: nvml.nvmlDeviceGetMemoryInfo(h),
                )
                if info is not None:
                    out.append(Reading(f"MIG {index} memory used", "B", device, float(info.used)))

    def _process_memory(self, nvml: Any, handle: Any) -> int:
        for process in nvml.nvmlDeviceGetComputeRunningProcesses(handle):
            if process.pid == self._pid and process.usedGpuMemory is not None:
                return int(process.usedGpuMemory)
        # Not listed: no context yet, or the driver hides it (another PID namespace, no rights).
        raise nvml.NVMLError_NotFound()

    def _mig_slices(self, nvml: Any, device: int, handle: Any) -> list[tuple[int, Any]]:
        count = self._metric(
            device, "MIG slices", lambda: nvml.nvmlDeviceGetMaxMigDeviceCount(handle)
        )
        slices = []
        for index in range(count or 0):
            try:
                slices.append((index, nvml.nvmlDeviceGetMigDeviceHandleByIndex(handle, index)))
            except nvml.NVMLError_NotFound:
                continue  # that slot holds no slice
        return slices

    def _metric(self, device: int, metric: str, call: Any) -> Any:
        """One NVML query; a query the driver refuses is noted once and not asked again."""
        if (device, metric) in self._skip:
            return None
        nvml = self._nvml
        try:
            return call()
        except (
            nvml.NVMLError_NotSupported,
            nvml.NVMLError_NoPermission,
            nvml.NVMLError_NotFound,
        ) as error:
            self._skip.add((device, metric))
            if metric == "process memory":
                reason = (
                    "this process is not listed by the driver (other PID namespace, or no rights)"
                )
            else:
                reason = str(error)
            self.notes.setdefault(metric, f"GPU {device}: {reason}")
            return None


def _visible_handles(nvml: Any) -> list[tuple[int, Any]]:
    """NVML handles keyed by CUDA ordinal. NVML numbers every GPU on the machine in PCI order;
    CUDA numbers only those in CUDA_VISIBLE_DEVICES, in that order."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None or not visible.strip():
        if visible is not None:
            return []  # "" hides every GPU from CUDA
        return [(i, nvml.nvmlDeviceGetHandleByIndex(i)) for i in range(nvml.nvmlDeviceGetCount())]
    handles = []
    for ordinal, entry in enumerate(e.strip() for e in visible.split(",")):
        if entry.isdigit():
            handles.append((ordinal, nvml.nvmlDeviceGetHandleByIndex(int(entry))))
        elif entry.startswith(("GPU-", "MIG-")):
            handles.append((ordinal, nvml.nvmlDeviceGetHandleByUUID(entry)))
        else:
            break  # CUDA stops at the first entry it cannot parse, and so do we
    return handles


def default_sources() -> list[Source]:
    return [NvmlSource(), PsutilSource(), TorchCudaSource()]
