"""The shared JAX/XLA XPlane fixtures, held to a second reading of their protobuf bytes.

Expected counts, times and names come from tests/helpers/xplane_wire.py (the wire format read
by hand, independent of jaxlib and of the importer), classified by the documented line rule
written out again here: on a /device:GPU:N or /device:TPU:N plane, a line named "Stream #..."
holds kernels unless its name says Memcpy or Memset; host lines whose events are CUDA/HIP API
calls hold runtime calls.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from gpuprofile.cli import main
from gpuprofile.importers.formats import detect_format
from gpuprofile.importers.xplane import load_xplane
from helpers.prerequisites import SHARED_TRACES, missing, require_trace
from helpers.xplane_wire import Plane, read_space

pytestmark = pytest.mark.traces

JAX = SHARED_TRACES / "jax"
GPU_FIXTURES = ("tracelens_mi300x_jax08_gemm.xplane.pb", "tracelens_jax_te_fused_attn.xplane.pb")
TPU_FIXTURE = "xprof_tpu_inference.xplane.pb"


@pytest.fixture(autouse=True)
def _needs_jaxlib() -> None:
    try:
        import jaxlib._profile_data  # noqa: F401
    except ImportError:
        missing("jaxlib is not installed: pip install -e '.[jax]' (make setup)")


def _device_planes(planes: list[Plane]) -> dict[int, Plane]:
    return {
        int(m.group(2)): p
        for p in planes
        if (m := re.fullmatch(r"/device:(GPU|TPU):(\d+)", p.name))
    }


def _is_kernel_line(name: str) -> bool:
    return name.startswith("Stream #") and not re.search("memcpy|memset", name, re.I)


@pytest.mark.parametrize("name", GPU_FIXTURES)
def test_kernels_copies_and_devices_match_the_protobuf(name: str) -> None:
    path = require_trace(JAX / name)
    planes = read_space(path.read_bytes())
    devices = _device_planes(planes)
    trace = load_xplane(path)
    kernels = trace.kernels
    assert len(kernels) > 0
    for ordinal, plane in devices.items():
        lines = [line for line in plane.lines if _is_kernel_line(line.name)]
        events = [e for line in lines for e in line.events]
        on_device = kernels[kernels["device"] == ordinal]
        assert len(on_device) == len(events), plane.name
        # Each event's nanoseconds are rounded once: at most half a nanosecond off each.
        total_ns = sum(e.duration_ps for e in events) / 1000
        assert abs(int(on_device["dur_ns"].sum()) - total_ns) <= len(events) / 2 + 1e-9
        names = sorted(plane.event_names[e.metadata_id] for e in events)
        assert sorted(on_device["name"].astype(str)) == names
        correlations = sorted(plane.stat(e.stats, "correlation_id") for e in events)
        assert sorted(on_device["correlation"].tolist()) == correlations
        copy_lines = [line for line in plane.lines if "memcpy" in line.name.lower()]
        copies = trace.memcpy[trace.memcpy["device"] == ordinal]
        assert len(copies) == sum(len(line.events) for line in copy_lines)
    # Every device plane is a device, named by what its stats say.
    listed = {d["id"]: d for d in trace.meta.ranks[0].devices}
    assert sorted(listed) == sorted(devices)
    for ordinal, plane in devices.items():
        stats = plane.named_stats()
        assert listed[ordinal]["name"] == stats["device_vendor"] == "AMD"
        # Planes that recorded no activity may carry the vendor alone.
        assert listed[ordinal].get("sm_count") == stats.get("core_count")
        assert listed[ordinal].get("memory_bytes") == stats.get("memory_size")
    # Host API calls (hip*/cuda*) are the runtime table, carrying the kernels' correlation ids.
    (host,) = [p for p in planes if p.name == "/host:CPU"]
    calls = [
        e
        for line in host.lines
        for e in line.events
        if re.match(r"(hip|cuda|cu)[A-Z]", host.event_names[e.metadata_id])
    ]
    assert len(trace.runtime) == len(calls)
    assert set(trace.kernels["correlation"]) <= set(trace.runtime["correlation"])


def test_times_start_at_the_earliest_event_and_origin_is_absolute() -> None:
    path = require_trace(JAX / GPU_FIXTURES[0])
    planes = read_space(path.read_bytes())
    starts = [
        line.timestamp_ns * 1000 + e.offset_ps
        for p in planes
        if p.name.startswith(("/device:", "/host:CPU"))
        for line in p.lines
        for e in line.events
        if not (p.name == "/host:CPU" and p.event_names[e.metadata_id].startswith("Memory"))
    ]
    (task,) = [p for p in planes if p.name == "Task Environment"]
    profile_start = task.named_stats()["profile_start_time"]
    trace = load_xplane(path)
    assert trace.meta.origin_ns == profile_start + round(min(starts) / 1000)
    first = min(
        int(trace.table(t)["start_ns"].min())
        for t in ("kernels", "ops", "runtime")
        if len(trace.table(t))
    )
    assert first == 0


def test_the_mi300x_is_found_by_its_properties() -> None:
    # The plane names only the vendor ("AMD"); 304 CUs, 192 GiB and gfx94x say MI300X.
    path = require_trace(JAX / GPU_FIXTURES[0])
    from gpuprofile.hardware.match import hardware_for_trace

    hardware = hardware_for_trace(load_xplane(path))
    assert hardware.source == "datasheet"
    assert "MI300X" in hardware.name


@pytest.mark.parametrize("name", GPU_FIXTURES)
def test_report_json_names_the_format(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = require_trace(JAX / name)
    assert main(["report", str(path), "--format", "json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["source"]["format"] == "xplane"
    (rank,) = printed["ranks"]
    assert rank["top_kernels"]
    assert rank["gpu"]["busy_ns"] > 0


def test_a_renamed_file_is_told_by_its_content(tmp_path: Path) -> None:
    source = require_trace(JAX / GPU_FIXTURES[0])
    renamed = tmp_path / "profile.bin"
    shutil.copyfile(source, renamed)
    assert detect_format(renamed) == "xplane"
    expected = sum(
        len(line.events)
        for plane in _device_planes(read_space(source.read_bytes())).values()
        for line in plane.lines
        if _is_kernel_line(line.name)
    )
    assert len(load_xplane(renamed).kernels) == expected


def test_a_profile_directory_reads_the_newest_run_one_rank_per_host(tmp_path: Path) -> None:
    gemm, attention = (require_trace(JAX / name) for name in GPU_FIXTURES)
    runs = tmp_path / "logdir" / "plugins" / "profile"
    (runs / "2025_01_01_00_00_00").mkdir(parents=True)
    shutil.copyfile(gemm, runs / "2025_01_01_00_00_00" / "old.xplane.pb")
    newest = runs / "2025_02_01_00_00_00"
    newest.mkdir()
    shutil.copyfile(gemm, newest / "host-a.xplane.pb")
    shutil.copyfile(attention, newest / "host-b.xplane.pb")
    counts = {
        path.name: sum(
            len(line.events)
            for plane in _device_planes(read_space(path.read_bytes())).values()
            for line in plane.lines
            if _is_kernel_line(line.name)
        )
        for path in (gemm, attention)
    }
    top = tmp_path / "logdir"
    assert detect_format(top) == "xplane"
    trace = load_xplane(top)
    assert trace.ranks == [0, 1]
    by_rank = trace.kernels.groupby("rank").size().to_dict()
    assert sorted(by_rank.values()) == sorted(counts.values())
    hosts = {trace.meta.ranks[r].host_name for r in trace.ranks}
    assert hosts == {"host-a", "host-b"}
    assert any("2 profile runs" in note for note in trace.meta.notes)
    # A run's own directory is read whole, with no note.
    run = load_xplane(newest)
    assert len(run.kernels) == sum(counts.values())
    assert not any("profile runs" in note for note in run.meta.notes)


def test_the_tpu_fixture_is_damaged_and_says_so(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # This copy went through a text decoder: its non-UTF-8 bytes became U+FFFD (EF BF BD).
    path = require_trace(JAX / TPU_FIXTURE)
    data = path.read_bytes()
    assert data.count("\ufffd".encode()) > 100_000
    assert detect_format(path) == "xplane"
    assert main(["report", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "not a valid XPlane protobuf" in err and "U+FFFD" in err and path.name in err
