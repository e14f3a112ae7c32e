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
    "so segments grow in place instead of fragmenting; check "
    'torch.cuda.memory_stats()["num_alloc_retries"] for retries after failed allocations.',
)
ALLOCATOR_CODE = """\
import os
os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"  # before CUDA starts
import torch
static_input = torch.empty(max_batch, seq_len, device="cuda")  # reuse, do not reallocate
print(torch.cuda.memory_stats()["num_alloc_retries"])
"""


# Tensor cores: fp32 matmuls and convolutions (by shapes or by kernel names), misaligned dims.
FP32_FIX = (
    'Allow TF32 for fp32 matmuls: torch.set_float32_matmul_precision("high") (or '
    "torch.backends.cuda.matmul.allow_tf32 = True); same storage, ~10 mantissa bits in the "
    "product, the usual choice for training.",
    'Or run the model in bf16: with torch.autocast(device_type="cuda", dtype=torch.bfloat16): '
    "(halves the bytes moved as well; keep the loss and optimizer state in fp32).",
    "Pad the GEMM dims (hidden sizes, vocabulary, channels) to multiples of 8 so the "
    "half-precision kernels can use tensor cores at full speed.",
)
FP16_FIX = (
    "This GPU's tensor cores take fp16 (no TF32 or bf16 before Ampere): run the model under "
    'torch.autocast(device_type="cuda", dtype=torch.float16) with a torch.amp.GradScaler '
    "for training.",
    FP32_FIX[2],
)
FP16_CODE = """\
scaler = torch.amp.GradScaler("cuda")
with torch.autocast(device_type="cuda", dtype=torch.float16):
    loss = loss_fn(model(batch), target)
scaler.scale(loss).backward()
scaler.step(optimizer)
scaler.update()
"""
FP32_CODE = """\
torch.set_float32_matmul_precision("high")  # TF32 tensor cores for fp32 matmuls
with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
    loss = loss_fn(model(batch), target)
"""
ALIGN_FIX = (
    "Pad the dims these GEMMs multiply over (K and N: hidden size, vocabulary, channels, "
    "sequence length for attention scores) to multiples of 8 for fp16/bf16, 16 for fp8/int8; "
    "64 or 128 is better still (NVIDIA's tile sizes).",
    "Vocabulary: pad the embedding and output projection (e.g. to a multiple of 64) and "
    "ignore the extra logits; attention over an odd sequence length: pad the sequence.",
    "Channels of convolutions: choose multiples of 8 (e.g. 3 input channels -> pad to 4 or "
    "8, or use channels_last with cuDNN's padded kernels).",
)
ALIGN_CODE = """\
vocab = 50257
padded = (vocab + 63) // 64 * 64        # 50304: a multiple of 64
lm_head = torch.nn.Linear(hidden, padded, bias=False)
logits = lm_head(x)[..., :vocab]
"""
CONV_TF32_FIX = (
    "fp32 convolutions (scudnn, implicit_convolve_sgemm, winograd kernels): keep "
    "torch.backends.cudnn.allow_tf32 = True (the default) and set torch.backends.cudnn."
    "benchmark = True so cuDNN may pick its tensor-core kernels; channels_last memory format "
    "helps it further."
)
