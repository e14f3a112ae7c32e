"""The doctor's checks: each reads its facts and says ok, warn, fail or skip, with a fix.

Only the torch and torch.profiler checks can fail: without them nothing can be profiled.
Everything else limits a feature (GPU kernels, counters, gauges, widgets) and warns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from gpuprofile.doctor.facts import Facts, TorchFacts
from gpuprofile.units import format_bytes, format_count, format_si

Status = Literal["ok", "warn", "fail", "skip"]
# torch as read once for every check: its facts, or why it could not be imported.
TorchRead = TorchFacts | BaseException


@dataclass(frozen=True)
class Check:
    """One check's verdict.

    Attributes:
        name: what was checked ("torch", "cuda", ...).
        status: ok, warn (a feature is limited), fail (profiling is broken), skip (does not
            apply here, or cannot be known; ``detail`` says why).
        detail: what was found, with the numbers.
        fix: what to do, where the status is not ok; "" otherwise.
    """

    name: str
    status: Status
    detail: str
    fix: str = ""


def _cpu_build_reason(torch: TorchFacts) -> str:
    return f"no CUDA device: torch {torch.version} is a CPU build"


_CUDA_WHEEL = (
    "install a CUDA build of torch, e.g. `pip install torch --index-url "
    "https://download.pytorch.org/whl/cu124` (pick the CUDA your driver supports)"
)


def check_torch(torch: TorchRead) -> Check:
    if isinstance(torch, BaseException):
        return Check(
            "torch",
            "fail",
            f"torch cannot be imported: {type(torch).__name__}: {torch}",
            "install torch (`pip install torch`) in the environment of this kernel or script; "
            "gpuprofile records with torch.profiler",
        )
    if torch.cuda:
        build = f"CUDA {torch.cuda} build"
    elif torch.hip:
        build = f"ROCm {torch.hip} build"
    else:
        build = "CPU build"
    return Check("torch", "ok", f"{torch.version} ({build})")


def check_profiler(torch: TorchRead) -> Check:
    if isinstance(torch, BaseException):
        return Check("torch.profiler", "skip", "torch cannot be imported (see the torch check)")
    if not torch.kineto or "CPU" not in torch.activities:
        return Check(
            "torch.profiler",
            "fail",
            f"torch {torch.version} was built without Kineto: torch.profiler cannot record "
            f"(activities: {', '.join(torch.activities) or 'none'})",
            "install an official torch wheel (pip or conda); source builds need USE_KINETO=1",
        )
    return Check("torch.profiler", "ok", f"Kineto available; records {', '.join(torch.activities)}")


def check_cuda(torch: TorchRead) -> Check:
    if isinstance(torch, BaseException):
        return Check("cuda", "skip", "torch cannot be imported (see the torch check)")
    if not torch.cuda and not torch.hip:
        return Check("cuda", "skip", _cpu_build_reason(torch), _CUDA_WHEEL)
    if not torch.cuda_available:
        return Check(
            "cuda",
            "warn",
            f"torch is a {'CUDA ' + torch.cuda if torch.cuda else 'ROCm ' + str(torch.hip)} "
            "build but sees no GPU: only CPU activity will be recorded",
            "check `nvidia-smi` (or `rocm-smi`) lists the GPU, that CUDA_VISIBLE_DEVICES does "
            "not hide it, and that the driver is at least as new as the build's CUDA; in a "
            "container, start it with `--gpus all`",
        )
    names = "; ".join(f"{i}: {name}" for i, name in enumerate(torch.device_names))
    driver = ""
    if torch.driver:
        driver = f"; driver supports CUDA {torch.driver // 1000}.{torch.driver % 1000 // 10}"
    count = len(torch.device_names)
    return Check("cuda", "ok", f"{count} device{'s' if count != 1 else ''} ({names}){driver}")


def check_cupti(torch: TorchRead) -> Check:
    if isinstance(torch, BaseException):
        return Check("cupti", "skip", "torch cannot be imported (see the torch check)")
    if not torch.cuda:
        reason = _cpu_build_reason(torch) if not torch.hip else "a ROCm build uses roctracer"
        return Check("cupti", "skip", f"{reason}: no CUPTI to load")
    if "CUDA" not in torch.activities:
        return Check(
            "cupti",
            "warn",
            "torch.profiler cannot record CUDA activity: Kineto found no CUPTI "
            "(libcupti.so): kernels, copies and GPU idle will be missing",
            "install the CUPTI of your CUDA (`pip install nvidia-cuda-cupti-cu12`, or the CUDA "
            "toolkit's extras/CUPTI/lib64) and put its folder on LD_LIBRARY_PATH",
        )
    return Check("cupti", "ok", "torch.profiler records CUDA activity (CUPTI loads)")


_COUNTERS_FIX = (
    "the driver lets only admins read GPU performance counters (ncu and CUPTI metrics fail "
    "with ERR_NVGPUCTRPERM): on the host, add `options nvidia "
    "NVreg_RestrictProfilingToAdminUsers=0` to a file in /etc/modprobe.d and reload the driver "
    "(or reboot); or run the container with `--cap-add=SYS_ADMIN`; or run the profiler as root"
)


def check_gpu_counters(facts: Facts) -> Check:
    params = facts.driver_params()
    if params is None:
        return Check(
            "gpu counters", "skip", "no NVIDIA driver (/proc/driver/nvidia/params is absent)"
        )
    restricted = None
    for line in params.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "RmProfilingAdminOnly":
            restricted = value.strip() == "1"
    if restricted is None:
        return Check(
            "gpu counters",
            "skip",
            "the driver's params do not say RmProfilingAdminOnly: cannot tell whether GPU "
            "counters need admin rights",
        )
    if not restricted:
        return Check("gpu counters", "ok", "open to all users (RmProfilingAdminOnly: 0)")
    if facts.has_sys_admin():
        return Check(
            "gpu counters",
            "ok",
            "restricted to admins (RmProfilingAdminOnly: 1), and this process has CAP_SYS_ADMIN",
        )
    return Check(
        "gpu counters",
        "warn",
        "restricted to admins (RmProfilingAdminOnly: 1) and this process is not one: "
        "hardware counters give ERR_NVGPUCTRPERM",
        _COUNTERS_FIX,
    )


def check_nvml(facts: Facts) -> Check:
    try:
        nvml = facts.nvml()
    except ImportError:
        return Check(
            "nvml",
            "warn",
            "nvidia-ml-py is not installed: no live GPU gauges",
            "`pip install nvidia-ml-py`",
        )
    except Exception as error:
        problem = f"NVML cannot start: {type(error).__name__}: {error}"
        if facts.driver_params() is None:
            return Check("nvml", "skip", f"no NVIDIA driver ({problem})")
        return Check(
            "nvml",
            "warn",
            f"{problem}: no live GPU gauges (utilisation, memory, power)",
            "check `nvidia-smi` works in this environment; in a container, start it with "
            "`--gpus all` (the NVIDIA container toolkit mounts libnvidia-ml.so.1)",
        )
    if not nvml.devices:
        return Check("nvml", "warn", f"driver {nvml.driver}; NVML lists no GPU", "")
    parts: list[str] = []
    problems: list[str] = []
    for index, device in enumerate(nvml.devices):
        mig = {True: "MIG on", False: "MIG off", None: "MIG mode unknown"}[device.mig]
        parts.append(
            f"{index}: {device.name}, {mig}, per-process utilisation {device.process_utilization}"
        )
        if device.mig:
            problems.append(f"GPU {index} is in MIG mode: NVML gives no utilisation per slice")
        if device.process_utilization not in ("readable", "no samples yet"):
            problems.append(f"GPU {index} refuses per-process utilisation")
        problems.extend(
            f"GPU {index} refuses {what}: {why}" for what, why in device.refused.items()
        )
    detail = f"driver {nvml.driver}; " + "; ".join(parts)
    if problems:
        return Check(
            "nvml",
            "warn",
            detail,
            "; ".join(problems)
            + " (the GPU gauges show what NVML allows; the trace is unaffected)",
        )
    return Check("nvml", "ok", detail)


def _cpu_quota(cpu_max: str | None) -> float | None:
    """CPUs a cgroup v2 cpu.max allows ("QUOTA PERIOD"; "max" is no limit)."""
    if cpu_max is None:
        return None
    fields = cpu_max.split()
    if len(fields) != 2 or fields[0] == "max":
        return None
    try:
        return int(fields[0]) / int(fields[1])
    except (ValueError, ZeroDivisionError):
        return None


def _cpus(n: float) -> str:
    # A quota can be fractional (cpu.max "150000 100000" is 1.5 CPUs): never round it up.
    return format_count(n, "CPU") if n == int(n) else f"{format_si(n)} CPUs"


def check_container(facts: Facts) -> Check:
    host = facts.host_cpus()
    quota = _cpu_quota(facts.cgroup("cpu.max"))
    affinity = facts.affinity_cpus()
    limits = [c for c in (quota, affinity) if c is not None]
    usable = min(limits) if limits else float(host)
    notes = [f"the host shows {_cpus(host)}"]
    if quota is not None:
        notes.append(f"cgroup cpu.max allows {_cpus(quota)}")
    if affinity is not None and affinity != host:
        notes.append(f"CPU affinity allows {_cpus(affinity)}")
    memory_max = (facts.cgroup("memory.max") or "").strip()
    host_memory = facts.host_memory()
    if memory_max.isdigit():
        of = f" of the host's {format_bytes(host_memory)}" if host_memory else ""
        notes.append(f"memory limited to {format_bytes(int(memory_max))}{of}")
    detail = "; ".join(notes)
    if usable < host:
        return Check(
            "container",
            "warn",
            f"{_cpus(usable)} available of the {format_count(host)} the host shows ({detail}): "
            "torch, the "
            "DataLoader and the report's workers size themselves by os.cpu_count()",
            f"set OMP_NUM_THREADS={max(int(usable), 1)} (or torch.set_num_threads) and "
            "DataLoader(num_workers=...) to what the container gives, or give it more CPUs "
            "(`--cpus`)",
        )
    return Check("container", "ok", detail)


def check_tool(facts: Facts, program: str, torch: TorchRead) -> Check:
    path = facts.which(program)
    purpose = {
        "nsys": "Nsight Systems traces the whole program (`nsys profile -o run python train.py`)",
        "ncu": "Nsight Compute measures each kernel's FLOPs and bytes (`report --ncu`)",
    }[program]
    if path is None:
        gpu = not isinstance(torch, BaseException) and torch.cuda_available and bool(torch.cuda)
        fix = f"install the CUDA toolkit or Nsight, and put {program} on PATH; {purpose}"
        if not gpu:
            return Check(program, "skip", "not on PATH (needs an NVIDIA GPU to be useful)", fix)
        return Check(program, "warn", "not on PATH", fix)
    try:
        version = facts.tool_version(path)
    except Exception as error:
        return Check(
            program,
            "warn",
            f"{path} does not run: {type(error).__name__}: {error}",
            f"reinstall {program}, or take the broken one off PATH",
        )
    return Check(program, "ok", f"{version} ({path})")


_WIDGET_PACKAGES = ("jupyterlab", "notebook", "ipykernel", "ipywidgets", "anywidget")


def check_jupyter(facts: Facts) -> Check:
    versions = {name: facts.package_version(name) for name in _WIDGET_PACKAGES}
    detail = ", ".join(f"{name} {v or 'not installed'}" for name, v in versions.items())
    missing = [name for name in ("ipywidgets", "anywidget") if versions[name] is None]
    if missing:
        return Check(
            "jupyter",
            "warn",
            detail,
            f"`pip install {' '.join(missing)}` in the kernel's environment: the widget needs them",
        )
    ipywidgets = versions["ipywidgets"] or ""
    if not ipywidgets.startswith(("8.", "9.")):
        return Check(
            "jupyter",
            "warn",
            detail,
            "`pip install 'ipywidgets>=8'` (and JupyterLab 4 where it is served): "
            "older widget managers cannot show the widget",
        )
    return Check("jupyter", "ok", detail)


def check_frontend(facts: Facts) -> Check:
    if not facts.in_kernel():
        return Check("widget frontend", "skip", "not running in a notebook kernel")
    if facts.widget_manager_seen():
        return Check(
            "widget frontend",
            "ok",
            "the notebook's widget manager connected to this kernel (it opened ipywidgets' "
            "control channel)",
        )
    # Not seen proves nothing: the manager reaches the control channel only if ipywidgets was
    # imported before the page connected, and a kernel cannot ask the page while a cell runs.
    return Check(
        "widget frontend",
        "skip",
        "cannot be known from the kernel: no widget manager has opened ipywidgets' control "
        "channel here, which it does only when ipywidgets was imported before the page "
        "connected; a kernel hears the page's replies only after the running cell ends",
        "if a profiled cell shows 'Error displaying widget' or nothing: install ipywidgets>=8 "
        "and anywidget where JupyterLab runs (not only in the kernel), restart JupyterLab and "
        "reload the page",
    )


def check_reader_core(facts: Facts) -> Check:
    if facts.reader_compiled():
        return Check(
            "reader core", "ok", "compiled: the reader's column gathers and lane walks run in C"
        )
    return Check(
        "reader core",
        "warn",
        "gpuprofile's compiled core is not built (no C compiler when it was installed): traces "
        "are read and laid out by the pure-Python paths, the same results more slowly",
        "install a C compiler (gcc or clang) and Python's headers (python3-dev), then build "
        "gpuprofile again (`pip install --force-reinstall --no-deps --no-binary gpuprofile "
        "gpuprofile`; in a checkout, `make setup`)",
    )
