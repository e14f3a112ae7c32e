"""A small built-in workload: a few training steps of one transformer block."""

from __future__ import annotations

import torch

from gpuprofile.capture.options import CaptureOptions
from gpuprofile.capture.session import capture
from gpuprofile.trace.model import Trace


def transformer_block_steps(
    steps: int = 3, *, seq: int = 64, batch: int = 8, width: int = 128
) -> Trace:
    """Train one transformer encoder layer for a few steps, on the GPU when there is one, and
    return what the profiler recorded."""
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    block = torch.nn.TransformerEncoderLayer(
        d_model=width, nhead=4, dim_feedforward=4 * width, batch_first=True
    ).to(device)
    optimizer = torch.optim.SGD(block.parameters(), lr=1e-3)
    x = torch.randn(batch, seq, width, device=device)
    # One step outside the profiler so one-time initialisation does not dominate the report.
    block(x).square().mean().backward()
    with capture(CaptureOptions()) as recording:
        for _ in range(steps):
            with torch.profiler.record_function("train_step"):
                optimizer.zero_grad(set_to_none=True)
                loss = block(x).square().mean()
                loss.backward()
                optimizer.step()
    return recording.trace
