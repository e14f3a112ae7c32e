"""Kernel classes from evidence (issue 26, point 3): communication is told by what a kernel
does (its name's words and namespace, the trace's record, the op that launched it, its stream),
not by a list of libraries, and ``top_kernels[].class_reason`` says why.

Every trace here is built in the test, its launching ops and streams set by hand, so that the
expected class of each kernel is what the test put there."""

from __future__ import annotations

import pytest

from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.kernel_kind import kernel_class
from gpuprofile.trace.meta import RankMeta, Source, TraceMeta
from gpuprofile.trace.model import NO_ID, Trace, make_table


@pytest.mark.parametrize(
    ("name", "kind", "reason"),
    [
        # An in-house expert-parallel build in its own namespace: no library name in it.
        ("void ds_moe::intranode::dispatch<8, 768>(int4*)", "communication", "expert-parallel"),
        ("void acme::ep::notify_combine(int*)", "communication", "notify_combine"),
        ("void acme::comm::push_tokens(int*)", "communication", "across GPUs"),
        ("void my_ar::two_shot_all_reduce<float>(float*)", "communication", "all-reduce"),
        ("ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)", "communication", "NCCL"),
        ("ncclKernel_Broadcast_RING_LL_Sum_int8_t(ncclDevComm*)", "communication", "broadcast"),
        # Words that look like communication in kernels that compute.
        ("void (anonymous namespace)::groupnorm_dispatch_up<float, 1024u>(int)", "compute", ""),
        ("_combined_routing_compute", "compute", ""),
        ("void cub::DeviceReduceByKeyKernel<cub::DispatchReduceByKey<long*>>(int)", "compute", ""),
        ("void at::native::_scatter_gather_elementwise_kernel<128, 4>(int)", "compute", ""),
        ("triton_poi_fused_all_gather_into_tensor_copy_0", "compute", ""),
        ("void moe_dispatch_kernel(int*)", "compute", ""),
        ("Memcpy DtoD (Device -> Device)", "memory", "copy"),
        # HIP's device-to-device copies run as its own kernels (JAX's GEMM trace on MI300X).
        ("__amd_rocclr_copyBuffer", "memory", "copy"),
        ("__amd_rocclr_fillBufferAligned", "memory", "copy"),
        ("cudaStreamSynchronize", "sync", "waits"),
    ],
)
def test_class_from_name(name: str, kind: str, reason: str) -> None:
    got_kind, got_reason = kernel_class(name)
    assert got_kind == kind
    assert reason in got_reason


# op ids: 1 a c10d call, 2 record_param_comms inside it, 3 an aten op, 4 another aten op.
OPS = {
    "id": [1, 2, 3, 4],
    "rank": [0, 0, 0, 0],
    "name": ["c10d::allreduce_", "record_param_comms", "aten::cat", "aten::mm"],
    "start_ns": [0, 10, 1000, 2000],
    "dur_ns": [500, 400, 100, 100],
    "parent": [NO_ID, 1, NO_ID, NO_ID],
    "depth": [0, 1, 0, 0],
}
# name, stream, launching op, the trace's collective record
KERNELS = [
    ("void house::reduce_pack_kernel(float*)", 30, 2, ""),  # only from record_param_comms
    ("void house::reduce_pack_kernel(float*)", 30, 2, ""),
    ("void at::native::CatArrayBatchedCopy<float>(int)", 30, 2, ""),  # also from aten::cat
    ("void at::native::CatArrayBatchedCopy<float>(int)", 7, 3, ""),
    ("void house::ring_step(float*)", 30, NO_ID, "allreduce"),  # recorded by the trace
    ("void notify_dispatch(int*)", 30, NO_ID, ""),  # on the stream of the ones above
    ("void other_dispatch_stage(int*)", 7, NO_ID, ""),  # on the compute stream
    ("sm90_xmma_gemm_f16f16_f16f32", 7, 4, ""),
]


def _analysis() -> Analysis:
    n = len(KERNELS)
    kernels = make_table(
        "kernels",
        {
            "id": list(range(n)),
            "rank": [0] * n,
            "device": [0] * n,
            "stream": [k[1] for k in KERNELS],
            "name": [k[0] for k in KERNELS],
            "start_ns": [3000 + 100 * i for i in range(n)],
            "dur_ns": [50 + 10 * i for i in range(n)],
            "op_id": [k[2] for k in KERNELS],
            "collective": [k[3] for k in KERNELS],
        },
    )
    meta = TraceMeta(source=Source(format="kineto"), ranks={0: RankMeta()})
    return Analysis(Trace(ops=make_table("ops", OPS), kernels=kernels, meta=meta))


def test_class_from_the_trace() -> None:
    classes = _analysis().kernel_classes
    kind, reason = classes.of("void house::reduce_pack_kernel(float*)")
    assert (kind, reason) == ("communication", "launched by record_param_comms")
    # A kernel that some launches run outside communication stays compute.
    assert classes.of("void at::native::CatArrayBatchedCopy<float>(int)")[0] == "compute"
    assert classes.of("void house::ring_step(float*)") == (
        "communication",
        "the trace records it as collective 'allreduce'",
    )
    kind, reason = classes.of("void notify_dispatch(int*)")
    assert kind == "communication" and "stream 30" in reason
    assert classes.of("void other_dispatch_stage(int*)")[0] == "compute"
    assert classes.of("sm90_xmma_gemm_f16f16_f16f32")[0] == "compute"


def test_report_says_why() -> None:
    from gpuprofile.report.build import plain_report

    report = plain_report(_analysis(), top=20)
    rows = {k["name"]: k for k in report["ranks"][0]["top_kernels"]}
    expected = {name: kind for name, kind in [
        ("void house::reduce_pack_kernel(float*)", "communication"),
        ("void at::native::CatArrayBatchedCopy<float>(int)", "compute"),
        ("void house::ring_step(float*)", "communication"),
        ("void notify_dispatch(int*)", "communication"),
        ("void other_dispatch_stage(int*)", "compute"),
        ("sm90_xmma_gemm_f16f16_f16f32", "compute"),
    ]}  # fmt: skip
    assert {n: r["class"] for n, r in rows.items()} == expected
    assert all(r["class_reason"] for r in rows.values())
    assert rows["void house::ring_step(float*)"]["class_reason"].endswith("'allreduce'")
    # The kernel table says the same classes.
    from gpuprofile.report.tables import kernel_table

    analysis = _analysis()
    table = kernel_table(analysis.trace, analysis.kernel_classes)
    by_name = dict(zip(table["name"], table["kind"], strict=True))
    assert by_name == expected
