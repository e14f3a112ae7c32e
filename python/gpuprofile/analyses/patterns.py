"""Name patterns of runtime calls and ops that more than one analysis or detector looks for."""

from __future__ import annotations

import re

SYNC_CALL = re.compile(
    r"^(cuda|hip)(Device|Stream|Event|Ctx)Synchronize$|^cu(Ctx|Stream|Event)Synchronize$"
)
# Synchronous copies: the host waits until the copy (and all work before it) has finished.
SYNC_COPY_CALL = re.compile(
    r"^(cuda|hip)Memcpy(WithStream|2D|3D|Peer|ToSymbol|FromSymbol|HtoD|DtoH|DtoD)?$"
    r"|^cuMemcpy(HtoD|DtoH|DtoD|2D|3D|Peer)?(_v2)?$"
)
COPY_CALL = re.compile(r"Memcpy")
SYNC_OP = re.compile(r"^aten::(item|_local_scalar_dense|is_nonzero|nonzero)$")
COPY_OR_SYNC_OP = re.compile(
    r"^aten::(item|_local_scalar_dense|is_nonzero|nonzero|copy_|_to_copy|to)$"
)
LOADER_OP = re.compile(r"DataLoader|dataloader\.py\(\d+\): (__next__|__iter__)")
COLLECTIVE_OP = re.compile(r"c10d|^nccl:|^gloo:|record_param_comms|ProcessGroup")
# Synchronous device and pinned allocation and release (the *Async stream-ordered ones are
# cheap by design and are not churn).
ALLOC_CALL = re.compile(
    r"^(cuda|hip)(Malloc|Free|MallocHost|FreeHost|HostAlloc|HostMalloc|HostFree|MallocManaged|"
    r"MallocPitch|ExtMallocWithFlags)$|^cuMem(Alloc|Free|AllocHost|FreeHost|Create|Release|Map|"
    r"Unmap)(_v2)?$"
)

# Kernels that run on tensor cores (NVIDIA) or matrix cores (AMD): cuBLAS/CUTLASS/cuDNN
# tensor-op kernels (tensorop, s1688/h16816 MMA shapes, h884/s884 on Volta, tf32, xmma, hmma,
# wmma, gmma, bf16/f16 types) and rocBLAS/hipBLASLt matrix-instruction kernels (MI16x16x1,
# mfma); __half/__nv_bfloat16 template arguments say the same of cuBLAS's gemv/gemmk1 kernels.
TENSOR_CORE_KERNEL = re.compile(
    r"tensorop|884|1688|16816|tf32|xmma|hmma|wmma|gmma|bf16|bfloat16|f16|__half|_MI\d+x\d+x\d+"
    r"|mfma",
    re.IGNORECASE,
)
# FP32 GEMM and convolution kernels on the vector (SIMT) units, by the names cuBLAS, cuDNN and
# CUTLASS give them. Seen in the shared Kineto traces: volta_sgemm_128x32_nt ... (V100
# captures), ampere_sgemm_128x64_nn / ampere_sgemm_32x32_sliced1x4_tn (A100 HTA captures),
# cutlass_80_simt_sgemm_128x32_8x5_nn_align1 (H100 Qwen), volta_scudnn_128x64_relu_interior_
# nn_v1, cudnn_infer_volta_scudnn_winograd_128x128_ldg1_ldg4_relu_tile148t_nt_v1,
# cudnn_ampere_scudnn_128x64_relu_xregs_large_nn_v1, implicit_convolve_sgemm<float, float, ...>,
# cudnn::winograd_nonfused::winogradForwardOutput4x4<float, float>, cudnn::winograd::
# generateWinogradTilesKernel<0, float, float>, gemmSN_TN_kernel<float, ...>
# (resnet50 and tbplugin captures). Also matched, from cuBLAS/CUTLASS naming: maxwell_/turing_/
# sm*_ sgemm, sgemm_* at the start, gemv2T/gemv2N_kernel<float ...>, CUTLASS OpClassSimt
# templates over float. Complex GEMMs (cgemm, gcgemm: FFT convolutions) are left out: their
# tensor-core counterparts are not a switch away. A name that TENSOR_CORE_KERNEL also
# matches is not fp32 SIMT (volta_fp16_scudnn_..., gemmk1_kernel<float, ... __half const>).
FP32_SIMT_KERNEL = re.compile(
    r"(?:^|_)(?:maxwell|pascal|volta|turing|ampere|hopper|sm\d+)_sgemm_"
    r"|^(?:void )?sgemm_|_simt_sgemm_"
    r"|(?:^|_)(?:maxwell|pascal|volta|turing|ampere|hopper|sm\d+)_scudnn_"
    r"|implicit_convolve_sgemm<float|[Ww]inograd\w*<(?:\d+, )?float|gemmSN_\w+<float"
    r"|gemv2[NT]_kernel\w*<(?:int, int, )?float|cutlass::.*OpClassSimt.*\bfloat\b",
)
