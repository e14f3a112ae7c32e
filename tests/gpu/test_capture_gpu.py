"""Captures on a real GPU: kernels recorded, none lost, device time from CUDA events."""

from __future__ import annotations

import torch

import gpuprofile


def test_gpu_capture_records_every_kernel_and_the_cell_device_time() -> None:
    a = torch.randn(2048, 2048, device="cuda")
    torch.cuda.synchronize()
    with gpuprofile.profile() as p:
        for _ in range(20):
            a = (a @ a).tanh()
        # No synchronize here: the profiler must wait for the queued kernels itself.
    report = p.report()
    (rank,) = report["ranks"]
    gemms = p.trace.kernels[p.trace.kernels["op_id"] >= 0]
    assert rank["counts"]["kernels"] >= 40  # a gemm and a tanh per iteration
    assert len(gemms) == rank["counts"]["kernels"]
    assert rank["gpu"]["busy_ns"] > 0
    assert rank["devices"][0]["name"] == torch.cuda.get_device_name(0)
    cuda_ns = p.trace.meta.cuda_event_ns
    assert cuda_ns is not None
    # The CUDA events bracket the block, so they cover at least the GPU's busy time.
    assert cuda_ns >= rank["gpu"]["busy_ns"] * 0.95


def test_copies_are_reported_with_bandwidth() -> None:
    host = torch.randn(64 * 1024 * 1024 // 4).pin_memory()
    with gpuprofile.profile() as p:
        device = host.to("cuda", non_blocking=True)
        back = device.cpu()
    assert back.shape == host.shape
    kinds = {c["kind"]: c for c in p.report()["ranks"][0]["copies"]}
    assert kinds["HtoD"]["bytes"] == host.numel() * 4
    assert kinds["HtoD"]["gbps"] > 1.0
    assert "DtoH" in kinds
