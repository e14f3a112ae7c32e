"""Short kernel names (analyses/kernel_names.py): the function a demangled name calls, with the
template argument that tells a generic wrapper's kernels apart. Expected names are read off
the signatures by hand."""

from __future__ import annotations

import pytest

from gpuprofile.analyses.kernel_names import short_kernel_name, short_kernel_names


@pytest.mark.parametrize(
    ("name", "short"),
    [
        (
            "void (anonymous namespace)::multimem_all_reduce_kernel<__nv_bfloat16, 8>"
            "(__nv_bfloat16*, unsigned long)",
            "multimem_all_reduce_kernel",
        ),
        (
            "std::enable_if<!(false), void>::type internal::gemvx::kernel<int, int, float, "
            "float, float, float, false, true>(cublasGemvParamsEx<int, float const*>)",
            "internal::gemvx::kernel",
        ),
        ("saxpy(double *, double *, double, int)", "saxpy"),
        (
            "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
            "ncclDevKernel_AllReduce_Sum_bf16_RING_LL",
        ),
        (
            "void at::native::vectorized_elementwise_kernel<4, at::native::AbsFunctor<long>, "
            "std::array<char*, 2ul> >(int, at::native::AbsFunctor<long>, std::array<char*, 2ul>)",
            "at::native::vectorized_elementwise_kernel<AbsFunctor<long>>",
        ),
        (
            "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl<at::native::"
            "BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> > >"
            "(at::TensorIteratorBase&, ...)::{lambda(int)#1}>(int, ...)",
            "at::native::elementwise_kernel<MulFunctor<float>>",
        ),
        (
            "void ck_tile::kentry<ck_tile::gfx950_t, 1, ck_tile::FmhaBwdDQDKDVKernel<ck_tile::"
            "BlockFmhaBwdDQDKDVPipeline<int> > >(ck_tile::FmhaBwdDQDKDVKernel<int>::Kargs)",
            "ck_tile::kentry<FmhaBwdDQDKDVKernel>",
        ),
        ("triton_poi_fused_add_cos_sin_0", "triton_poi_fused_add_cos_sin_0"),
        # Nsight Compute's CSV writes the anonymous namespace "<unnamed>", its "<" cut off.
        ("void unnamed>::gemm_naive_kernel(float const*, int)", "gemm_naive_kernel"),
        ("void <unnamed>::transpose_tiled_kernel(float*)", "transpose_tiled_kernel"),
        # A TensorRT layer is no signature: only shortened, head and tail kept.
        ("Conv__435 + resnet50/conv1_relu/Relu", "Conv__435 + resnet50/conv1_relu/Relu"),
    ],
)
def test_short_names(name: str, short: str) -> None:
    assert short_kernel_name(name) == short


def test_two_cutlass_configurations_read_apart() -> None:
    a = "void cutlass::Kernel<cutlass_80_simt_sgemm_128x32_8x5_nn_align1>(Params)"
    b = "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_16x6_tn_align4>(Params)"
    assert short_kernel_name(a) != short_kernel_name(b)
    assert short_kernel_name(a) == "cutlass::Kernel<cutlass_80_simt_sgemm_128x32_8x5_nn_align1>"


def test_names_that_read_alike_get_what_only_they_have() -> None:
    """The same elementwise kernel at two vector widths and element types, two CatArray
    copies, two long names cut in their middle: each short name gets the words only its full
    name has (read off the names by hand), so none reads like another."""
    bf16 = (
        "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::"
        "native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::"
        "binary_internal::MulFunctor<float> > >(at::TensorIteratorBase&, ...)::{lambda(int)#1}>"
        "(int, ...)"
    )
    fp32 = bf16.replace("128, 4,", "128, 2,").replace("c10::BFloat16", "float")
    cat2 = "void at::native::CatArrayBatchedCopy<OpaqueType<2u>, unsigned int, 4, 64, 64>(...)"
    cat4 = "void at::native::CatArrayBatchedCopy<OpaqueType<4u>, unsigned int, 3, 64, 64>(...)"
    head, tail = "split_embedding_backward_codegen_", "_unweighted_kernel_cta_per_row_1"
    sgd, adagrad = f"{head}sgd{tail}", f"{head}adagrad{tail}"
    alone = "saxpy(double *, double *, double, int)"
    labels = short_kernel_names([bf16, fp32, cat2, cat4, sgd, adagrad, alone], limit=40)
    assert labels[bf16] == "elementwise_kernel<MulFunctor<float>> [4, BFloat16]"
    assert labels[fp32] == "elementwise_kernel<MulFunctor<float>> [2, float]"
    assert labels[cat2] == "at::native::CatArrayBatchedCopy [2u, 4]"
    assert labels[cat4] == "at::native::CatArrayBatchedCopy [4u, 3]"
    assert labels[sgd].endswith(" [sgd]") and labels[adagrad].endswith(" [adagrad]")
    assert labels[alone] == "saxpy"  # nothing alike: the short name alone
    assert len(set(labels.values())) == len(labels)


def test_names_alike_to_the_last_word_are_numbered() -> None:
    a = "void k<A::x>(int)"
    b = "void k<B::x>(int)"  # namespaces dropped: the same words
    labels = short_kernel_names([b, a])
    assert (labels[a], labels[b]) == ("k [#1]", "k [#2]")


def test_a_long_name_loses_its_namespace_then_its_middle() -> None:
    config = "cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x1_tn_align8"
    short = short_kernel_name(f"void cutlass::Kernel2<{config}>({config}::Params)")
    assert len(short) == 60
    assert short.startswith("Kernel2<cutlass_80_wmma_tens") and short.endswith("tn_align8>")


@pytest.mark.parametrize(
    ("mangled", "function"),
    [
        # <length><identifier> pairs of the nested name, by hand; template arguments elided.
        ("_ZN7sgl_hip10activation18act_and_mul_kernelI14__hip_bfloat16EEvPS2_i",
         "sgl_hip::activation::act_and_mul_kernel<…>"),
        ("_ZN2ck12_GLOBAL__N_16kernelEv", "ck::(anonymous namespace)::kernel"),
        ("_ZNK3foo3barEv", "foo::bar"),  # a const member function
        ("_ZN2ck16tensor_operati", None),  # cut short inside an identifier
        ("_Z3fooi", None),  # not a nested name: c++filt's to read
        ("ampere_sgemm_32x32", None),
    ],
)  # fmt: skip
def test_the_function_of_a_name_left_mangled(mangled: str, function: str | None) -> None:
    from gpuprofile.analyses.kernel_names import mangled_function

    assert mangled_function(mangled) == function
    if function is not None:
        # Shortened as a demangled name is: no anonymous namespace, no template arguments.
        expected = function.split("<", 1)[0].replace("(anonymous namespace)::", "")
        assert short_kernel_name(mangled) == expected


def test_c_plus_plus_filt_demangles_what_libstdcxx_cannot(monkeypatch: pytest.MonkeyPatch) -> None:
    """ROCm kernels mangle std::bfloat16_t as DF16b, which libstdc++'s __cxa_demangle rejects;
    binutils' c++filt reads it. Without c++filt, names stay as written."""
    import shutil

    from gpuprofile.importers import demangle

    if shutil.which("c++filt") is None:
        pytest.skip("binutils' c++filt is not installed")
    names = ["_ZN2ns6kernelIfEEvPT_i", "_ZN5aiter1kIDF16bEEvv", "_ZN2ck16tensor_operati", "gemm"]
    # Demangled by hand, per the Itanium C++ ABI.
    assert demangle.demangled(names) == {
        "_ZN2ns6kernelIfEEvPT_i": "void ns::kernel<float>(float*, int)",
        "_ZN5aiter1kIDF16bEEvv": "void aiter::k<std::bfloat16_t>()",
    }
    monkeypatch.setattr(demangle.shutil, "which", lambda _: None)
    assert demangle.demangled(names) == {}


def test_parts_per_name_reads_each_name_of_a_column() -> None:
    """parts_per_name: per category, then for a missing name, (the readable name, the
    qualified function), what short_kernel_name (unclipped) and qualified_function say of it,
    as str() spells the name ("nan" for a missing one)."""
    import pandas as pd

    from gpuprofile.analyses.kernel_names import parts_per_name, qualified_function

    texts = [
        "void at::native::vectorized_elementwise_kernel<4, at::native::AbsFunctor<long>, "
        "std::array<char*, 2ul> >(int, at::native::AbsFunctor<long>, std::array<char*, 2ul>)",
        "saxpy(double *, double *, double, int)",
        "volta_sgemm_128x64_nn",
        "_ZN2ck12_GLOBAL__N_16kernelEv",
        "k<4, F<int>>",
    ]
    column = pd.Series(pd.Categorical([*texts, None, texts[0]]))
    found = parts_per_name(column).tolist()
    categories = [str(c) for c in column.cat.categories] + ["nan"]
    assert len(found) == len(categories)
    for text, parts in zip(categories, found, strict=True):
        assert tuple(parts) == (short_kernel_name(text, 10**6), qualified_function(text))
    # By hand, not from the functions above (which share kernel_name_parts with it):
    assert found[categories.index("k<4, F<int>>")] == ["k<4, F<int>>", "k"]
    assert found[categories.index(texts[0])] == [
        "at::native::vectorized_elementwise_kernel<AbsFunctor<long>>",
        "at::native::vectorized_elementwise_kernel",
    ]
    assert found[-1] == ["nan", "nan"]  # the missing name
