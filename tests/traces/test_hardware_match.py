"""Every shared Kineto trace resolves to the GPU that PROVENANCE.md says it was recorded on."""

from __future__ import annotations

import pytest

from gpuprofile import load
from gpuprofile.hardware.match import hardware_for_trace
from gpuprofile.hardware.tables import specs
from helpers.prerequisites import SHARED_TRACES, require_trace

pytestmark = pytest.mark.traces

KINETO = SHARED_TRACES / "kineto"
UNKNOWN = None

# File -> table entry, from the GPU column of ../shared/traces/PROVENANCE.md (None: the trace
# names no GPU, so the roofs are unknown).
EXPECTED: dict[str, str | None] = {
    # "NVIDIA A100-PG509-200": Meta's A100 SXM4 40GB board.
    "hta_a100_alexnet_critical_path.pt.trace.json.gz": "a100_sxm_40gb",
    "hta_a100_cuda_event_sync_multi_stream.json.gz": "a100_sxm_40gb",
    "hta_a100_cupti_range_profiler.json.gz": "a100_sxm_40gb",
    "hta_a100_triton_kernel.json.gz": "a100_sxm_40gb",
    "hta_a100_nccl_2rank_rank0.json.gz": "a100_sxm_40gb",
    "hta_a100_train_rank3_of8_async_cpu_to_gpu.json.gz": "a100_sxm_40gb",
    "hta_a100_80gb_train_rank0_of16.json.gz": "a100_sxm_80gb",
    "hta_v100_16gb_train_rank1_of2.json.gz": "v100_sxm2",
    "hta_v100_32gb_memory_rank1_of2.json.gz": "v100_sxm2",
    "hta_v100_32gb_ns_resolution.pt.trace.json.gz": "v100_sxm2",
    # "AMD Radeon Graphics", 104 CUs, 64 GB: one GCD of an MI250.
    "hta_mi250_rocm6_minitoy_train.json.gz": "mi250",
    "hta_legacy_inference_rank1_no_devprops.json.gz": UNKNOWN,
    "hta_cpu_only_gloo_rank34.pt.trace.json.gz": UNKNOWN,
    # "Tesla V100-DGXS-32GB": the NVLink V100 of a DGX Station.
    "kineto_tbplugin_resnet50_v100_memory_shapes.pt.trace.json.gz": "v100_sxm2",
    "kineto_tbplugin_resnet50_autograd_api.pt.trace.json.gz": UNKNOWN,
    "kineto_plugin_resnet50_no_schema_version.pt.trace.json.gz": UNKNOWN,
    "kineto_tbplugin_gpu_metrics_input_computeProperties.json": "v100_sxm2",
    # "NVIDIA H100" with 132 SMs: SXM class.
    "kineto_docs_h100_cuda_sync_before_fix.json": "h100_sxm",
    "kineto_docs_h100_cuda_sync_after_fix.json": "h100_sxm",
    "tracelens_h100_qwen1.5_0.5b_inference.json.gz": "h100_sxm",
    "tracelens_h100_bert_small_inference.json.gz": "h100_sxm",
    "tracelens_h100_owlv2_large_inference.json.gz": "h100_sxm",
    "tracelens_h100_falconsai_vit_inference.json.gz": "h100_sxm",
    "tracelens_mi300xvf_qwen1.5_0.5b_inference.json.gz": "mi300x",
    "tracelens_mi300x_resnet_act_checkpoint_rank0_of8.json.gz": "mi300x",
    "tracelens_mi300x_ddp_resnet18_train.json.gz": "mi300x",
    "tracelens_mi300x_normalization_layers.json.gz": "mi300x",
    "tracelens_mi300x_torch_compile_triton.json.gz": "mi300x",
    "tracelens_mi300x_sglang_qwen3_8b_decode.json.gz": "mi300x",
    "tracelens_mi300x_xdit_sd3.5_large_inference.json.gz": "mi300x",
    # deviceProperties names are "" (vLLM): 304 CUs, 192 GB, gfx942 say MI300X.
    "tracelens_mi300x_vllm_cudagraph_decode_execution.json.gz": "mi300x",
}


def test_every_shared_kineto_trace_has_an_expectation() -> None:
    require_trace(KINETO)
    on_disk = {p.name for p in KINETO.iterdir() if p.name.endswith((".json", ".json.gz"))}
    assert on_disk == set(EXPECTED)


@pytest.mark.parametrize(("name", "key"), EXPECTED.items(), ids=list(EXPECTED))
def test_trace_resolves_to_its_gpu(name: str, key: str | None) -> None:
    trace = load(require_trace(KINETO / name)).trace
    hw = hardware_for_trace(trace)
    if key is None:
        assert hw.source == "unknown"
        assert "calibrate()" in hw.notes
    else:
        assert hw.source == "datasheet", hw.notes
        assert hw.name == specs()[key].device_name
        assert hw.peak_flops and hw.dram_bytes_per_s


def test_every_rank_of_a_multi_rank_run_resolves() -> None:
    run = require_trace(SHARED_TRACES / "kineto-distributed" / "param_dlrm_8xV100")
    trace = load(run).trace
    ranks = sorted(trace.meta.ranks)
    assert ranks == list(range(8))
    for rank in ranks:
        assert hardware_for_trace(trace, rank).name == specs()["v100_sxm2"].device_name


def test_a_rank_whose_kernels_ran_on_an_unlisted_device_says_so() -> None:
    path = KINETO / "tracelens_mi300x_sglang_qwen3_8b_decode.json.gz"
    hw = hardware_for_trace(load(require_trace(path)).trace)
    # PROVENANCE: one device listed (id 0); the kernels ran on HIP device 9.
    assert "device 9" in hw.notes
