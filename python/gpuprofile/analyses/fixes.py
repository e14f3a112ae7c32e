"""Fix texts that more than one detector gives: the same advice, worded once."""

from __future__ import annotations

# Allocator churn: the allocator-churn hint, and idle time spent mostly in allocator calls.
ALLOCATOR_FIX = (
    "Warm up before profiling, so one-time allocations are not in the steady state.",
    "Keep buffers alive across steps and preallocate for the largest shape (pad or bucket "
    "variable-length inputs so the allocator can reuse blocks).",
    "Remove torch.cuda.empty_cache() from the loop: it returns the cache to the driver, so "
    "the next step calls cudaMalloc again.",
    "Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (PYTORCH_HIP_ALLOC_CONF on ROCm) "
    "so segments grow in place instead of fragmenting; check torch.cuda.memory_stats() "
    "['num_alloc_retries'] for retries after failed allocations.",
)
ALLOCATOR_CODE = """\
import os
os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"  # before CUDA starts
import torch
static_input = torch.empty(max_batch, seq_len, device="cuda")  # reuse, do not reallocate
print(torch.cuda.memory_stats()["num_alloc_retries"])
"""
