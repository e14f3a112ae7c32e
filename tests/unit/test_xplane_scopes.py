"""JAX scope paths in an XPlane, on a small XSpace written here: kernels whose ``name`` stat
holds ``jit(f)/jvp(...)/scope/.../primitive`` get a launching op named by the primitive inside
nested module calls of their scopes. The expected names and paths are read from the serialized
protobuf with tests/helpers/xplane_wire.py (not jaxlib), split by this test's own rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuprofile.importers.xplane import load_xplane
from gpuprofile.trace.model import NO_ID
from helpers.prerequisites import missing
from helpers.xplane_wire import read_space

STEP = "jit(train_step)/jvp(Transformer)"
NAMES = {
    1: f"{STEP}/transformer/layer_0/mlp/dot_general",
    2: f"{STEP}/transformer/layer_0/mlp/add",
    3: f"{STEP}/transformer/layer_1/attn/dot_general",
    4: "jit(train_step)/transpose(jvp(Transformer))/transformer/layer_1/attn/dot_general",
    5: "jit(f)/convert_element_type",  # no scope: no module
}
# (stream, name key, offset ps, duration ps)
KERNELS = [
    (7, 1, 0, 5_000_000),
    (7, 2, 6_000_000, 1_000_000),
    (7, 3, 8_000_000, 1_000_000),
    (7, 4, 10_000_000, 1_000_000),
    (7, 5, 12_000_000, 500_000),
    (8, 1, 1_000_000, 2_000_000),
]


def _space() -> str:
    lines = []
    for stream in sorted({s for s, *_ in KERNELS}):
        events = "".join(
            f"events {{ metadata_id: 1 offset_ps: {off} duration_ps: {dur} "
            f'stats {{ metadata_id: 1 str_value: "{NAMES[key]}" }} '
            f'stats {{ metadata_id: 2 str_value: "XlaModule:" }} }}\n'
            for s, key, off, dur in KERNELS
            if s == stream
        )
        lines.append(f'lines {{ id: {stream} name: "Stream #{stream}(Kernel)" timestamp_ns: 1000\n')
        lines.append(events + "}\n")
    return (
        'planes { id: 1 name: "/device:GPU:0"\n'
        + "".join(lines)
        + 'event_metadata { key: 1 value { id: 1 name: "fusion_kernel" } }\n'
        'stat_metadata { key: 1 value { id: 1 name: "name" } }\n'
        'stat_metadata { key: 2 value { id: 2 name: "tf_op" } }\n'
        "}\n"
    )


@pytest.fixture
def written(tmp_path: Path) -> Path:
    try:
        from jaxlib._profile_data import ProfileData
    except ImportError:
        missing("jaxlib is not installed: pip install -e '.[jax]' (make setup)")
    path = tmp_path / "scopes.xplane.pb"
    path.write_bytes(ProfileData.text_proto_to_serialized_xspace(_space()))
    return path


def _raw_names(path: Path) -> list[tuple[int, int, str]]:
    """(stream, start ps from the plane's first line, JAX op name) per kernel, from the wire."""
    (plane,) = read_space(path.read_bytes())
    out = []
    for line in plane.lines:
        stream = int(line.name.removeprefix("Stream #").split("(")[0])
        for event in line.events:
            out.append((stream, event.offset_ps, str(plane.stat(event.stats, "name"))))
    return out


def _scopes(name: str) -> list[str]:
    """This test's rule: drop the primitive and every segment that is a transformation."""
    return [s for s in name.split("/")[:-1] if "(" not in s]


def test_each_kernel_sits_in_its_scopes_module_calls(written: Path) -> None:
    trace = load_xplane(written)
    ops = trace.ops.set_index("id")
    raw = _raw_names(written)
    kernels = trace.kernels.sort_values(["stream", "start_ns"])
    assert len(kernels) == len(raw)
    for (stream, _, name), kernel in zip(sorted(raw), kernels.itertuples(), strict=True):
        assert kernel.stream == stream
        op = ops.loc[kernel.op_id]
        assert op["name"] == name.split("/")[-1]
        assert op["category"] == "xla_op"
        chain = []
        parent = op["parent"]
        while parent != NO_ID:
            chain.append(str(ops.loc[parent, "name"]))
            parent = ops.loc[parent, "parent"]
        scopes = _scopes(name)
        expected = [
            f"nn.Module: {'.'.join(scopes[: i + 1])} ({scopes[i].rstrip('0123456789_')})"
            for i in range(len(scopes))
        ]
        assert chain[::-1] == expected


def test_one_call_spans_a_scopes_consecutive_kernels(written: Path) -> None:
    trace = load_xplane(written)
    calls = trace.ops[trace.ops["name"] == "nn.Module: transformer.layer_0.mlp (mlp)"]
    # Stream 7's two layer_0/mlp kernels (0..5 us and 6..7 us) are one call; stream 8's its own.
    spans = sorted(
        (int(s), int(s + d)) for s, d in zip(calls["start_ns"], calls["dur_ns"], strict=True)
    )
    assert spans == [(0, 7000), (1000, 3000)]


def test_names_without_scopes_change_nothing(tmp_path: Path) -> None:
    try:
        from jaxlib._profile_data import ProfileData
    except ImportError:
        missing("jaxlib is not installed: pip install -e '.[jax]' (make setup)")
    text = _space()
    for key in (1, 2, 3, 4):
        text = text.replace(NAMES[key], NAMES[5])
    path = tmp_path / "flat.xplane.pb"
    path.write_bytes(ProfileData.text_proto_to_serialized_xspace(text))
    trace = load_xplane(path)
    assert trace.ops.empty
    assert (trace.kernels["op_id"] == NO_ID).all()


def test_the_module_attribution_reads_the_scopes(written: Path) -> None:
    from gpuprofile.analyses.context import Analysis

    trace = load_xplane(written)
    modules = Analysis(trace).modules
    raw = sorted(_raw_names(written))
    kernels = trace.kernels.sort_values(["stream", "start_ns"])
    got = [modules.paths[m] if m >= 0 else None for m in modules.kernel_module[kernels.index]]
    assert got == [".".join(_scopes(name)) or None for _, _, name in raw]
