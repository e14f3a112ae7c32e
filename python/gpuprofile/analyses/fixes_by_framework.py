"""Fix texts for programs not written in PyTorch, keyed by framework (analyses/framework.py).

Each detector keeps its PyTorch fix where it was and passes it to :func:`pick` with the table
of other frameworks' fixes below: a ``"cuda"`` entry (CUDA runtime advice for a C/C++ CUDA
program) always, a ``"jax"`` entry for JAX/XLA, and a ``"tensorrt"`` entry where a TensorRT
engine needs different words; TensorRT falls back to the CUDA entry (an engine runs inside a
CUDA program that owns its buffers, streams and syncs). Code sketches are CUDA C or JAX.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from gpuprofile.analyses.framework import Framework


class Fix(NamedTuple):
    """A hint's fix steps and code sketch; ``**fix._asdict()`` fills Hint(fix=, code=)."""

    fix: tuple[str, ...]
    code: str


def pick(kind: Framework, pytorch: Fix, others: Mapping[str, Fix]) -> Fix:
    """The fix for a program of framework ``kind`` (``Analysis.framework``): ``pytorch`` for
    PyTorch programs, else its entry in ``others``, else the CUDA one."""
    if kind == "pytorch":
        return pytorch
    return others.get(kind) or others["cuda"]


def pick_text(kind: Framework, pytorch: str, others: Mapping[str, str]) -> str:
    """As :func:`pick`, for one fix sentence."""
    if kind == "pytorch":
        return pytorch
    return others.get(kind) or others["cuda"]


_JAX_HOST_SYNC = (
    "Remove host reads of device values from the loop: float(x), x.item(), np.asarray(x), "
    "jax.device_get, print(x), block_until_ready() and Python `if` on an array all wait for "
    "the GPU; accumulate on the device and read every N steps."
)
_JAX_PROFILE = (
    "Profile the host side too: jax.profiler.trace(log_dir) with the Python tracer on "
    "(ProfileOptions python_tracer_level=1) shows the Python that runs while "
    "the GPU waits."
)
_CUDA_PROFILE = (
    "Collect host backtraces to see the code that runs while the GPU waits: "
    "nsys profile --backtrace=dwarf -s cpu (CPU sampling) --trace=cuda,nvtx,osrt, and mark "
    "phases with NVTX ranges (nvtxRangePushA / nvtxRangePop)."
)
_JAX_JIT = (
    "jit larger regions (the whole train or decode step, loops as lax.scan / lax.fori_loop) "
    "so XLA fuses the small ops and launches fewer, larger kernels."
)
_JAX_COMMAND_BUFFER = (
    "Let XLA replay the step as CUDA graphs: XLA_FLAGS=--xla_gpu_enable_command_buffer=FUSION,"
    "CUBLAS,CUSTOM_CALL (the default set on recent jaxlib; check it is not disabled)."
)
_CUDA_GRAPH = (
    "Capture the steady-state sequence of launches once in a CUDA Graph "
    "(cudaStreamBeginCapture / cudaStreamEndCapture / cudaGraphInstantiate) and replay it "
    "with one cudaGraphLaunch per step."
)
_CUDA_GRAPH_CODE = """\
cudaGraph_t graph; cudaGraphExec_t exec;
cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal);
step<<<grid, block, 0, stream>>>(d_in, d_out);   // the launches of one step
cudaStreamEndCapture(stream, &graph);
cudaGraphInstantiate(&exec, graph, 0);
for (int i = 0; i < steps; ++i) cudaGraphLaunch(exec, stream);   // one launch per step
"""
_JAX_JIT_CODE = """\
@functools.partial(jax.jit, donate_argnums=(0,))
def train_step(state, batch):       # one XLA program per step: fused, few launches
    ...
"""

# Pageable host-device copies.
PAGEABLE: dict[str, Fix] = {
    "cuda": Fix(
        (
            "Allocate the host buffers in pinned (page-locked) memory once: cudaMallocHost or "
            "cudaHostAlloc (or cudaHostRegister on an existing buffer) instead of malloc/new.",
            "Copy with cudaMemcpyAsync on a stream (not cudaMemcpy), so the host does not wait "
            "for the copy and the copy can overlap kernels.",
            "For results coming back, copy into a pinned buffer with cudaMemcpyAsync and read "
            "it after cudaEventSynchronize on an event recorded behind the copy.",
        ),
        """\
float *h_x;
cudaMallocHost(&h_x, bytes);                   // pinned: DMA at full speed, async possible
cudaMemcpyAsync(d_x, h_x, bytes, cudaMemcpyHostToDevice, stream);
kernel<<<grid, block, 0, stream>>>(d_x);
""",
    ),
    "jax": Fix(
        (
            "Feed batches with jax.device_put ahead of use (prefetch the next batch while the "
            "current step runs, e.g. flax.jax_utils.prefetch_to_device), not inside the step.",
            "Keep data on the device between steps: donate buffers (jax.jit(donate_argnums=...)) "
            "and avoid round trips through NumPy (np.asarray, jax.device_get) in the loop.",
        ),
        """\
next_batch = jax.device_put(batch0)          # async: returns before the copy ends
for batch in batches:
    current, next_batch = next_batch, jax.device_put(batch)
    state = train_step(state, current)
""",
    ),
    "tensorrt": Fix(
        (
            "Bind engine inputs and outputs to pinned host staging buffers (cudaMallocHost) "
            "and copy with cudaMemcpyAsync on the enqueue stream, or keep I/O on the device.",
        ),
        "",
    ),
}
COPY_STREAM: dict[str, Fix] = {
    "cuda": Fix(
        (
            "Issue host-device copies with cudaMemcpyAsync on a separate stream and copy the "
            "next batch while the current one computes; make the compute stream wait with "
            "cudaEventRecord + cudaStreamWaitEvent, not the host.",
            "Keep the host buffers pinned (cudaMallocHost): required for copies to overlap "
            "kernels.",
        ),
        """\
cudaMemcpyAsync(d_next, h_next, bytes, cudaMemcpyHostToDevice, copy_stream);
cudaEventRecord(copied, copy_stream);
cudaStreamWaitEvent(compute_stream, copied, 0);   // the GPU waits, not the host
""",
    ),
    "jax": Fix(
        (
            "Prefetch: jax.device_put the next batch before running the current step (transfers "
            "are asynchronous), so the copy overlaps compute.",
        ),
        "",
    ),
}

# Allocator churn (and idle time mostly in allocator calls).
ALLOCATOR: dict[str, Fix] = {
    "cuda": Fix(
        (
            "Allocate device buffers once, outside the loop, for the largest size, and reuse "
            "them: cudaMalloc/cudaFree per iteration synchronize the device and cost "
            "milliseconds.",
            "Where sizes vary, use the stream-ordered allocator: cudaMallocAsync / cudaFreeAsync "
            "on the stream, with cudaMemPoolAttrReleaseThreshold raised so the pool keeps "
            "memory between iterations.",
            "Warm up before profiling, so one-time allocations are not in the steady state.",
        ),
        """\
cudaMemPool_t pool;
cudaDeviceGetDefaultMemPool(&pool, device);
uint64_t keep = UINT64_MAX;                      // never hand memory back to the driver
cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
cudaMallocAsync(&d_tmp, bytes, stream);          // stream-ordered, served from the pool
kernel<<<grid, block, 0, stream>>>(d_tmp);
cudaFreeAsync(d_tmp, stream);
""",
    ),
    "jax": Fix(
        (
            "Keep shapes static so XLA reuses its buffers: pad or bucket variable-length "
            "inputs (each new shape also recompiles).",
            "Donate buffers you replace (jax.jit(..., donate_argnums=...)) so outputs reuse "
            "the inputs' memory instead of allocating.",
            "Leave XLA's preallocating BFC allocator on (XLA_PYTHON_CLIENT_PREALLOCATE not false, "
            "XLA_PYTHON_CLIENT_ALLOCATOR not platform).",
        ),
        _JAX_JIT_CODE,
    ),
}

# Launch-bound work: many small kernels launched one at a time.
LAUNCH: dict[str, Fix] = {
    "cuda": Fix(
        (
            _CUDA_GRAPH,
            "Fuse chains of small kernels into one (one pass over the data instead of one "
            "launch per elementwise step), or use library calls that batch: cublasGemmBatched "
            "/ cublasGemmStridedBatched, CUB device-wide primitives.",
            "Give each kernel more work: process several items per launch, grid-stride loops.",
        ),
        _CUDA_GRAPH_CODE,
    ),
    "jax": Fix(
        (
            _JAX_JIT,
            _JAX_COMMAND_BUFFER,
            "Batch many small arrays into one (jax.vmap, jnp.stack) and update parameters "
            "with one fused optimizer step (optax under the same jit).",
        ),
        _JAX_JIT_CODE,
    ),
}
GRAPHED: dict[str, Fix] = {
    "cuda": Fix(
        (
            "Part of the step already replays CUDA graphs; the gaps are in kernels launched one "
            "at a time outside them: bring those into the captured region (static buffers, no "
            "host syncs inside), or fuse them.",
        ),
        _CUDA_GRAPH_CODE,
    ),
    "jax": Fix(
        (
            "XLA already replays part of the step as command buffers (CUDA graphs); the gaps are "
            "in work outside them: move it under the same jit, and check which op types "
            "--xla_gpu_enable_command_buffer leaves out.",
        ),
        "",
    ),
}

# Host syncs.
SYNC: dict[str, Fix] = {
    "cuda": Fix(
        (
            "Replace cudaDeviceSynchronize (and blocking cudaMemcpy) in the loop with "
            "cudaEventRecord + cudaStreamWaitEvent between streams, so the GPU orders the work "
            "and the host keeps launching.",
            "When the host does need a value, cudaMemcpyAsync it into pinned memory, record an "
            "event, and cudaEventSynchronize on it a step later.",
            "Time with cudaEventRecord / cudaEventElapsedTime, not with cudaDeviceSynchronize "
            "around host timers.",
        ),
        """\
cudaEventRecord(done, stream);               // instead of cudaDeviceSynchronize()
cudaStreamWaitEvent(other_stream, done, 0);  // the GPU waits, the host keeps launching
// ... a step later, when the host needs the result:
cudaEventSynchronize(done);
""",
    ),
    "jax": Fix(
        (
            _JAX_HOST_SYNC,
            "Call block_until_ready() only to time a step or at the end, not every iteration; "
            "let JAX's asynchronous dispatch run ahead.",
            "Avoid data-dependent shapes (jnp.nonzero, boolean masks without size=): they force "
            "a sync and a recompile; pass size= / fill_value=.",
        ),
        """\
total = jnp.zeros(())
for step, batch in enumerate(batches):
    state, loss = train_step(state, batch)
    total += loss                        # stays on the device
    if step % 100 == 99:
        print(float(total) / 100)        # one sync per 100 steps
        total = jnp.zeros(())
""",
    ),
}
AUTOTUNE_TEXT: dict[str, str] = {
    "cuda": "These syncs come from convolution autotuning (cuDNN's algorithm search, "
    "cudnnFind*): a one-time cost per shape; cache the chosen algorithm and profile after "
    "warm-up.",
    "jax": "These syncs come from autotuning (XLA times GEMM and convolution algorithms on "
    "the first compilation): a one-time cost; profile after warm-up steps.",
}

# GPU idle, by dominant cause (analyses/idle.py's cause names).
IDLE_SYNC = SYNC
IDLE_COPY: dict[str, Fix] = {
    "cuda": Fix(PAGEABLE["cuda"].fix[:2], PAGEABLE["cuda"].code),
    "jax": PAGEABLE["jax"],
    "tensorrt": PAGEABLE["tensorrt"],
}
IDLE_COLLECTIVE: dict[str, Fix] = {
    "cuda": Fix(
        (
            "Balance work across ranks so none waits on a straggler.",
            "Overlap communication with compute: post nonblocking collectives (ncclGroupStart "
            "/ MPI_Iallreduce) on their own stream and compute meanwhile.",
        ),
        "",
    ),
    "jax": Fix(
        (
            "Balance work across devices so none waits on a straggler.",
            "Let XLA overlap collectives with compute: shard with jax.jit + NamedSharding and "
            "keep XLA's async collectives on (--xla_gpu_enable_latency_hiding_scheduler=true).",
        ),
        "",
    ),
}
IDLE_LAUNCH: dict[str, Fix] = {
    "cuda": Fix(
        (_CUDA_GRAPH, "Give each kernel more work (larger batches, fused kernels)."),
        _CUDA_GRAPH_CODE,
    ),
    "jax": Fix((_JAX_JIT, _JAX_COMMAND_BUFFER), _JAX_JIT_CODE),
}
IDLE_OTHER: dict[str, Fix] = {
    "cuda": Fix((_CUDA_PROFILE,), ""),
    "jax": Fix((_JAX_PROFILE,), ""),
    "tensorrt": Fix(
        (
            "Look at the host code between enqueueV3 calls (pre- and post-processing, copies, "
            "syncs): nsys profile --backtrace=dwarf -s cpu shows it.",
        ),
        "",
    ),
}
_QUEUED_WAIT = (
    "The next kernel was launched but started late: look at what it waited for in the "
    "timeline (the launch is the evidence's runtime call): an event from another stream, a "
    "collective whose peers were late (stragglers), a CUDA graph's internal dependencies."
)
IDLE_QUEUED: dict[str, Fix] = {
    "cuda": Fix(
        (
            _QUEUED_WAIT,
            "Profile all ranks, with nsys profile --backtrace=dwarf -s cpu, to see the other "
            "side of the dependency.",
        ),
        "",
    ),
    "jax": Fix(
        (
            _QUEUED_WAIT,
            "Profile all hosts with jax.profiler (python_tracer_level=1) to see the other side "
            "of the dependency.",
        ),
        "",
    ),
}

# Tensor cores: fp32 GEMMs, GPUs before Ampere (fp16 only), misaligned dims.
FP32: dict[str, Fix] = {
    "cuda": Fix(
        (
            "Let cuBLAS use TF32 tensor cores for fp32 GEMMs: "
            "cublasSetMathMode(handle, CUBLAS_TF32_TENSOR_OP_MATH), or "
            "CUBLAS_COMPUTE_32F_FAST_TF32 as the compute type of cublasGemmEx / cublasLt; "
            "~10 mantissa bits in the product.",
            "Or store operands in bf16/fp16 and multiply with CUBLAS_COMPUTE_32F (fp32 "
            "accumulate): half the bytes moved as well.",
            "Pad the GEMM dims to multiples of 8 so the half-precision kernels can use tensor "
            "cores at full speed.",
        ),
        """\
cublasSetMathMode(handle, CUBLAS_TF32_TENSOR_OP_MATH);   // fp32 GEMMs on TF32 tensor cores
cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha,
             A, CUDA_R_32F, lda, B, CUDA_R_32F, ldb, &beta, C, CUDA_R_32F, ldc,
             CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT);
""",
    ),
    "jax": Fix(
        (
            'Allow TF32 for fp32 matmuls: jax.default_matmul_precision("tensorfloat32") '
            '(or jax.config.update("jax_default_matmul_precision", "tensorfloat32")).',
            "Or keep parameters and activations in bf16 (params = jax.tree.map(lambda p: "
            "p.astype(jnp.bfloat16), params)) with fp32 master weights in the optimizer.",
            "Pad the GEMM dims to multiples of 8 so the half-precision kernels can use tensor "
            "cores at full speed.",
        ),
        """\
jax.config.update("jax_default_matmul_precision", "tensorfloat32")
params_bf16 = jax.tree.map(lambda p: p.astype(jnp.bfloat16), params)
""",
    ),
}
FP16: dict[str, Fix] = {
    "cuda": Fix(
        (
            "This GPU's tensor cores take fp16 (no TF32 or bf16 before Ampere): store GEMM "
            "operands in fp16 and call cublasGemmEx with CUDA_R_16F inputs and "
            "CUBLAS_COMPUTE_32F accumulation.",
            FP32["cuda"].fix[2],
        ),
        "",
    ),
    "jax": Fix(
        (
            "This GPU's tensor cores take fp16 (no TF32 or bf16 before Ampere): cast "
            "parameters and activations to jnp.float16 and scale the loss (jmp or optax "
            "loss scaling) for training.",
            FP32["jax"].fix[2],
        ),
        "",
    ),
}
ALIGN: dict[str, Fix] = {
    "cuda": Fix(
        (
            "Pad the dims these GEMMs multiply over (K and N) to multiples of 8 for fp16/bf16, "
            "16 for fp8/int8; 64 or 128 is better still (NVIDIA's tile sizes): allocate the "
            "padded size, zero the padding, and keep lda/ldb multiples of 8.",
        ),
        "",
    ),
    "jax": Fix(
        (
            "Pad the dims these GEMMs multiply over (K and N: hidden size, vocabulary, "
            "channels) to multiples of 8 for fp16/bf16, 64 or 128 better still; "
            "jnp.pad the inputs or size the parameters so, and slice the extra outputs off.",
        ),
        "",
    ),
}
CONV_TF32: dict[str, str] = {
    "cuda": "fp32 convolutions: cudnnSetConvolutionMathType(desc, "
    "CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) lets cuDNN use tensor cores; pick algorithms with "
    "cudnnFindConvolutionForwardAlgorithm; NHWC layouts help.",
    "jax": "fp32 convolutions: the same jax_default_matmul_precision setting lets XLA run "
    "them on TF32 tensor cores.",
}

# Roofline: memory- or compute-bound kernels.
MEMORY_BOUND: dict[str, Fix] = {
    "cuda": Fix(
        (
            "Fuse chains of elementwise and reduction kernels so intermediates stay in "
            "registers or shared memory instead of going through DRAM.",
            "Move fewer bytes: store in bf16/fp16, vectorize loads (float4), coalesce accesses, "
            "avoid transposes and copies between kernels.",
            "Raise arithmetic intensity: batch matrix-vector products into GEMMs so weights are "
            "read once per batch.",
        ),
        "",
    ),
    "jax": Fix(
        (
            _JAX_JIT,
            "Move fewer bytes: keep activations and parameters in bf16, avoid transposes and "
            "reshapes that force copies between fusions.",
            "Raise arithmetic intensity: batch requests or tokens together (jax.vmap) so "
            "weights are read once per batch.",
        ),
        "",
    ),
}
COMPUTE_BOUND: dict[str, Fix] = {
    "cuda": Fix(
        (
            "Let the libraries pick faster kernels: cublasLtMatmulAlgoGetHeuristic with more "
            "candidates, cudnnFind*Algorithm for convolutions; use tensor-core data types.",
            "Keep GEMM and convolution dims multiples of 8 (fp16/bf16) or 64 so tensor-core "
            "tiles fill completely.",
            "Give each GEMM enough work to fill the GPU: batched or grouped GEMMs instead of "
            "many small ones.",
        ),
        "",
    ),
    "jax": Fix(
        (
            "Use tensor-core precisions: bf16 parameters, or jax.default_matmul_precision("
            '"tensorfloat32") for fp32 matmuls; let XLA autotune (--xla_gpu_autotune_level=4).',
            "Keep GEMM dims multiples of 8 or 64 so tensor-core tiles fill completely.",
            "Give each GEMM enough work: larger batches, jax.vmap instead of Python loops.",
        ),
        "",
    ),
}

# Low occupancy: grids too small, or kernels that cannot keep enough blocks resident.
OCCUPANCY: dict[str, Fix] = {
    "cuda": Fix(
        (
            "Give small grids more blocks: split the work along another dimension (split-K for "
            "GEMMs with small M x N and large K), or batch several small launches into one "
            "(batched/grouped GEMM, one kernel over many arrays).",
            "For a mostly empty last wave, pick a tile or batch size whose block count is a "
            "multiple of SMs x resident blocks per SM; cudaOccupancyMaxPotentialBlockSize "
            "suggests a block size.",
            "Lower registers per thread (__launch_bounds__, -maxrregcount) or shared memory per "
            "block so more blocks fit on an SM.",
        ),
        "",
    ),
    "jax": Fix(
        (
            "Give each kernel more work: larger batches, jax.vmap over many small operations, "
            "one jit over the step so XLA fuses small launches.",
            "Pallas/Triton kernels: pick block sizes whose block count fills the SMs, fewer "
            "num_warps/num_stages so more blocks fit.",
        ),
        "",
    ),
}
