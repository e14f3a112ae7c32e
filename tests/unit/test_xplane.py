"""XPlane (JAX/XLA) importer on small XSpaces written by the test: the line rule, times, stats,
devices, and the errors (damaged file, missing extra, no planes)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

from gpuprofile.cli import main
from gpuprofile.errors import TraceFormatError
from gpuprofile.importers.formats import detect_format
from gpuprofile.importers.xplane import load_xplane
from helpers.prerequisites import missing

# Device 0 (a GPU): kernels on stream 7, a host-to-device copy, and XLA's module and op lines;
# device 1 (a TPU): XLA Ops only, which are then its kernels; the host: a launch and a scope.
SPACE = """
planes { id: 1 name: "/device:GPU:0"
  stats { metadata_id: 10 str_value: "Nvidia" }
  stats { metadata_id: 11 int64_value: 108 }
  stats { metadata_id: 12 int64_value: 42949672960 }
  stats { metadata_id: 13 int64_value: 8 }
  stats { metadata_id: 14 int64_value: 0 }
  lines { id: 7 name: "Stream #7(Kernel)" timestamp_ns: 1000
    events { metadata_id: 1 offset_ps: 0 duration_ps: 5000000
      stats { metadata_id: 1 int64_value: 42 }
      stats { metadata_id: 2 double_value: 2e9 }
      stats { metadata_id: 3 int64_value: 4000000 }
      stats { metadata_id: 4 str_value: "regs:32 static_shared:1024 dynamic_shared:0 "
                                        "grid:4,2,1 block:128,1,1 occ_pct:50" } }
    events { metadata_id: 2 offset_ps: 6000000 duration_ps: 1000000 } }
  lines { id: 8 name: "Stream #8(MemcpyH2D)" timestamp_ns: 1000
    events { metadata_id: 3 offset_ps: 500000 duration_ps: 2000000
      stats { metadata_id: 5 str_value: "kind:HtoD size:65536 dest:0 async:1" } } }
  lines { id: 20 name: "XLA Modules" timestamp_ns: 1000
    events { metadata_id: 4 offset_ps: 0 duration_ps: 7000000 } }
  lines { id: 21 name: "XLA Ops" timestamp_ns: 1000
    events { metadata_id: 5 offset_ps: 0 duration_ps: 5000000
      stats { metadata_id: 2 int64_value: 2000000000 } } }
  lines { id: 22 name: "Steps" timestamp_ns: 1000
    events { metadata_id: 4 offset_ps: 0 duration_ps: 7000000 } }
  event_metadata { key: 1 value { id: 1 name: "gemm_fusion" } }
  event_metadata { key: 2 value { id: 2 name: "loop_add_fusion" } }
  event_metadata { key: 3 value { id: 3 name: "MemcpyH2D" } }
  event_metadata { key: 4 value { id: 4 name: "jit_train_step" } }
  event_metadata { key: 5 value { id: 5 name: "dot.3" } }
  stat_metadata { key: 1 value { id: 1 name: "correlation_id" } }
  stat_metadata { key: 2 value { id: 2 name: "flops" } }
  stat_metadata { key: 3 value { id: 3 name: "bytes_accessed" } }
  stat_metadata { key: 4 value { id: 4 name: "kernel_details" } }
  stat_metadata { key: 5 value { id: 5 name: "memcpy_details" } }
  stat_metadata { key: 10 value { id: 10 name: "device_vendor" } }
  stat_metadata { key: 11 value { id: 11 name: "core_count" } }
  stat_metadata { key: 12 value { id: 12 name: "memory_size" } }
  stat_metadata { key: 13 value { id: 13 name: "compute_cap_major" } }
  stat_metadata { key: 14 value { id: 14 name: "compute_cap_minor" } }
}
planes { id: 2 name: "/device:TPU:1"
  stats { metadata_id: 1 str_value: "TPU v6 Lite" }
  lines { id: 3 name: "XLA Ops" timestamp_ns: 1000
    events { metadata_id: 1 offset_ps: 1000000 duration_ps: 3000000 } }
  event_metadata { key: 1 value { id: 1 name: "fusion.1" } }
  stat_metadata { key: 1 value { id: 1 name: "device_type_string" } }
}
planes { id: 3 name: "/host:CPU"
  lines { id: 100 name: "python" timestamp_ns: 900
    events { metadata_id: 1 offset_ps: 0 duration_ps: 300000 }
    events { metadata_id: 2 offset_ps: 50000 duration_ps: 100000
      stats { metadata_id: 1 int64_value: 42 } } }
  event_metadata { key: 1 value { id: 1 name: "$train.py:10 step" } }
  event_metadata { key: 2 value { id: 2 name: "cudaLaunchKernel" } }
  stat_metadata { key: 1 value { id: 1 name: "correlation_id" } }
}
planes { id: 4 name: "Task Environment"
  stats { metadata_id: 1 int64_value: 1700000000000000000 }
  stat_metadata { key: 1 value { id: 1 name: "profile_start_time" } }
}
"""


def _serialized(text: str) -> bytes:
    try:
        from jaxlib._profile_data import ProfileData
    except ImportError:
        missing("jaxlib is not installed: pip install -e '.[jax]' (make setup)")
    data: bytes = ProfileData.text_proto_to_serialized_xspace(text)
    return data


@pytest.fixture
def space(tmp_path: Path) -> Path:
    path = tmp_path / "host.xplane.pb"
    path.write_bytes(_serialized(SPACE))
    return path


def test_lines_go_to_the_tables_their_names_say(space: Path) -> None:
    trace = load_xplane(space)
    kernels = trace.kernels.sort_values(["device", "start_ns"])
    assert kernels["name"].astype(str).tolist() == ["gemm_fusion", "loop_add_fusion", "fusion.1"]
    assert kernels["device"].tolist() == [0, 0, 1]
    assert kernels["stream"].tolist() == [7, 7, 0]  # the TPU's XLA Ops line is its first line
    (copy,) = trace.memcpy.itertuples()
    assert (copy.kind, copy.bytes, copy.device, copy.stream) == ("HtoD", 65536, 0, 8)
    ops = trace.ops.set_index("name")
    assert ops.loc["jit_train_step", "category"] == "xla_module"
    assert ops.loc["dot.3", "category"] == "xla_op"
    assert ops.loc["$train.py:10 step", "category"] == "python_function"
    # The module encloses its op on the device's XLA lane.
    assert ops.loc["dot.3", "parent"] == ops.loc["jit_train_step", "id"]
    assert trace.runtime["name"].astype(str).tolist() == ["cudaLaunchKernel"]
    assert trace.runtime["correlation"].tolist() == [42]
    assert trace.meta.ranks[0].skipped == {"line Steps": 1}


def test_times_are_ns_from_the_first_event_and_origin_absolute(space: Path) -> None:
    trace = load_xplane(space)
    # The host's python scope starts first: line 900 ns + 0 ps.
    assert trace.meta.origin_ns == 1_700_000_000_000_000_000 + 900
    gemm = trace.kernels[trace.kernels["name"] == "gemm_fusion"].iloc[0]
    assert (gemm["start_ns"], gemm["dur_ns"]) == (100, 5000)
    launch = trace.runtime.iloc[0]
    assert (launch["start_ns"], launch["dur_ns"]) == (50, 100)


def test_stats_fill_launch_shapes_flops_and_bytes(space: Path) -> None:
    trace = load_xplane(space)
    gemm = trace.kernels[trace.kernels["name"] == "gemm_fusion"].iloc[0]
    assert (gemm["grid_x"], gemm["grid_y"], gemm["grid_z"]) == (4, 2, 1)
    assert (gemm["block_x"], gemm["registers_per_thread"], gemm["shared_memory"]) == (128, 32, 1024)
    assert gemm["occupancy"] == 50.0
    assert (gemm["flops"], gemm["bytes"], gemm["correlation"]) == (2e9, 4e6, 42)
    other = trace.kernels[trace.kernels["name"] == "loop_add_fusion"].iloc[0]
    assert math.isnan(other["flops"]) and math.isnan(other["bytes"])
    op = trace.ops[trace.ops["name"] == "dot.3"].iloc[0]
    assert op["flops"] == 2e9


def test_devices_are_named_by_their_planes(space: Path) -> None:
    gpu, tpu = load_xplane(space).meta.ranks[0].devices
    assert (gpu["id"], gpu["name"], gpu["sm_count"], gpu["compute_capability"]) == (
        0,
        "Nvidia",
        108,
        "8.0",
    )
    assert gpu["memory_bytes"] == 40 * 2**30
    assert (tpu["id"], tpu["name"]) == (1, "TPU v6 Lite")


def test_the_a100_is_found_from_the_plane_stats(space: Path) -> None:
    from gpuprofile.hardware.match import hardware_for_trace

    hardware = hardware_for_trace(load_xplane(space))
    assert hardware.source == "datasheet" and "A100" in hardware.name


def test_a_host_only_space_is_an_empty_gpu_profile_with_a_note(tmp_path: Path) -> None:
    path = tmp_path / "cpu.xplane.pb"
    host_only = SPACE[SPACE.index('planes { id: 3 name: "/host:CPU"') :]
    path.write_bytes(_serialized(host_only))
    trace = load_xplane(path)
    assert trace.kernels.empty and trace.meta.ranks[0].devices == ()
    assert any("no /device:GPU or /device:TPU plane" in note for note in trace.meta.notes)
    assert len(trace.runtime) == 1


def test_a_space_without_planes_is_refused(tmp_path: Path) -> None:
    _serialized("")  # skips without jaxlib
    path = tmp_path / "errors.xplane.pb"
    path.write_bytes(b"\x12\x04oops")  # XSpace.errors = ["oops"], no planes
    with pytest.raises(TraceFormatError, match="holds no planes"):
        load_xplane(path)


def test_a_truncated_file_exits_2_with_one_line(
    space: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = space.read_bytes()
    cut = space.with_name("cut.xplane.pb")
    cut.write_bytes(data[: len(data) // 2])
    assert detect_format(cut) == "xplane"
    assert main(["report", str(cut)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert err.startswith(f"gpuprofile: error: {cut}: not a valid XPlane protobuf (")


def test_without_the_extra_the_error_says_what_to_install(
    space: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A None entry in sys.modules makes the import raise ImportError, as if not installed.
    monkeypatch.setitem(sys.modules, "jaxlib._profile_data", None)
    monkeypatch.setitem(sys.modules, "jax.profiler", None)
    assert main(["report", str(space)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "pip install 'gpuprofile[jax]'" in err and str(space) in err


def test_a_grid_past_two_to_the_31_is_read_whole(tmp_path: Path) -> None:
    """ROCm writes a grid in work-items: a large convolution's passes int32 (2,191,500,840 in
    an MI300 JAX profile made gpuprofile exit 3). It is kept; a block or register count that
    no int32 holds is unknown."""
    big = 2_191_500_840
    text = SPACE.replace("grid:4,2,1 block:128,1,1", f"grid:{big},1,1 block:{2**32},1,1")
    path = tmp_path / "wide.xplane.pb"
    path.write_bytes(_serialized(text))
    kernels = load_xplane(path).kernels
    gemm = kernels[kernels["name"] == "gemm_fusion"].iloc[0]
    assert int(gemm["grid_x"]) == big
    assert int(gemm["block_x"]) == -1
