"""framework(): which framework wrote the profiled program; and the fixes hints give for it:
PyTorch API only for PyTorch programs, CUDA runtime advice for CUDA apps under Nsight, JAX
advice on XPlane traces."""

from __future__ import annotations

from typing import Any

import pytest

import gpuprofile
from gpuprofile.analyses.fixes import ALLOCATOR_CODE, ALLOCATOR_FIX
from gpuprofile.analyses.fixes_by_framework import ALLOCATOR, PAGEABLE, Fix, pick
from gpuprofile.analyses.framework import framework
from gpuprofile.trace.meta import RankMeta, Source, TraceMeta
from gpuprofile.trace.model import Trace, make_table
from helpers.prerequisites import SHARED_TRACES, require_trace


def _trace(fmt: str, **tables: Any) -> Trace:
    meta = tables.pop("meta", {})
    return Trace(**tables, meta=TraceMeta(source=Source(format=fmt), **meta))


@pytest.mark.parametrize(
    ("fmt", "expected"),
    [
        ("kineto", "pytorch"),
        ("capture", "pytorch"),
        ("xplane", "jax"),
        ("tensorrt", "tensorrt"),
        ("nsys", "cuda"),
        ("ncu", "cuda"),
    ],
)
def test_framework_by_format(fmt: str, expected: str) -> None:
    assert framework(_trace(fmt)) == expected


def test_nsys_shows_pytorch() -> None:
    ops = make_table("ops", {"name": ["train_step", "aten::mm"], "dur_ns": [1, 1]})
    assert framework(_trace("nsys", ops=ops)) == "pytorch"
    kernels = make_table(
        "kernels",
        {"name": ["void at::native::vectorized_elementwise_kernel<4>(int)"], "dur_ns": [1]},
    )
    assert framework(_trace("nsys", kernels=kernels)) == "pytorch"
    threads = {0: RankMeta(thread_names={"1/2": "pt_autograd_0"})}
    assert framework(_trace("ncu", meta={"ranks": threads})) == "pytorch"
    assert framework(_trace("nsys", meta={"framework": {"torch": "2.5"}})) == "pytorch"
    plain = make_table("kernels", {"name": ["saxpy(int, float*)"], "dur_ns": [1]})
    assert framework(_trace("nsys", kernels=plain)) == "cuda"


def test_pick() -> None:
    torch_fix = Fix(ALLOCATOR_FIX, ALLOCATOR_CODE)
    assert pick(framework(_trace("kineto")), torch_fix, ALLOCATOR) is torch_fix
    assert pick(framework(_trace("nsys")), torch_fix, ALLOCATOR) is ALLOCATOR["cuda"]
    assert pick(framework(_trace("xplane")), torch_fix, ALLOCATOR) is ALLOCATOR["jax"]
    assert pick(framework(_trace("tensorrt")), torch_fix, ALLOCATOR) is ALLOCATOR["cuda"]
    assert pick(framework(_trace("tensorrt")), torch_fix, PAGEABLE) is PAGEABLE["tensorrt"]


def _texts(hint: dict[str, Any]) -> str:
    return "\n".join([hint["title"], hint["explanation"], *hint["fix"], hint["code"]])


TORCH_WORDS = ("torch", "DataLoader", "with_stack", "pin_memory", "non_blocking")


def test_cuda_app_gets_cuda_advice() -> None:
    path = require_trace(SHARED_TRACES / "nsys" / "pipit_perlmutter_a100_40gb_saxpy_mpi.sqlite")
    profile = gpuprofile.load(path)
    assert framework(profile.trace) == "cuda"
    hints = profile.report()["hints"]
    for hint in hints:
        text = _texts(hint)
        assert not any(word in text for word in TORCH_WORDS), (hint["kind"], text)
    fixes = "\n".join(f for hint in hints for f in hint["fix"])
    assert "cudaMallocHost" in fixes
    assert "cudaMalloc" in fixes


def test_jax_gets_jax_advice() -> None:
    path = require_trace(SHARED_TRACES / "jax" / "tracelens_mi300x_jax08_gemm.xplane.pb")
    profile = gpuprofile.load(path)
    assert framework(profile.trace) == "jax"
    for hint in profile.report()["hints"]:
        text = _texts(hint)
        assert not any(word in text for word in TORCH_WORDS), (hint["kind"], text)


def test_pytorch_keeps_pytorch_advice() -> None:
    path = require_trace(SHARED_TRACES / "kineto" / "tracelens_h100_bert_small_inference.json.gz")
    profile = gpuprofile.load(path)
    assert framework(profile.trace) == "pytorch"
    assert profile.report()["hints"]
