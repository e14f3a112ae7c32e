"""Measured roofs kept per device and torch version, in ``$XDG_CACHE_HOME/gpuprofile`` (else
``~/.cache/gpuprofile``): written by ``gpuprofile.calibrate()``, read by it and by the analysis
of a capture made on this machine's CPU."""

from __future__ import annotations

import json
import os
import platform
import re
from datetime import datetime, timezone
from pathlib import Path

from gpuprofile.errors import GpuprofileError
from gpuprofile.hardware.model import Hardware

CACHE_VERSION = 1


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gpuprofile"


def cache_path(device_name: str, torch_version: str) -> Path:
    slug = re.sub(r"[^A-Za-z0-9.]+", "-", f"{device_name}-torch-{torch_version}").strip("-")
    return cache_dir() / f"calibration-{slug}.json"


def read_cache(path: Path) -> Hardware | None:
    """The roofs cached at ``path``; None when there are none (or another version's)."""
    if not path.exists():
        return None
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise GpuprofileError(
            f"calibration cache {path} is unreadable ({exc}); delete it or call "
            "calibrate(refresh=True)"
        ) from exc
    if not isinstance(payload, dict) or payload.get("version") != CACHE_VERSION:
        return None  # written by another gpuprofile: measure again
    try:
        return Hardware(**payload["hardware"])
    except (KeyError, TypeError, ValueError) as exc:
        raise GpuprofileError(
            f"calibration cache {path} holds no usable roofs ({exc}); delete it or call "
            "calibrate(refresh=True)"
        ) from exc


def write_cache(path: Path, hardware: Hardware) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "version": CACHE_VERSION,
        "written": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "hardware": hardware.to_dict(),
    }
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(payload, indent=2), encoding="utf-8")
    tmp.replace(path)  # atomic: a concurrent reader never sees half a file


def host_cpu_name(threads: int) -> str:
    """This machine's CPU as calibration names it. The thread count is part of the name: the
    matmul rate depends on it."""
    model = None
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text(errors="replace").splitlines():
            if line.lower().startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    model = model or platform.processor() or platform.machine() or "unknown"
    return f"CPU {model} ({threads} threads)"
