"""What an Inductor kernel's name says: its backend, its kind and the ATen ops fused into it.

Inductor names a generated kernel ``{triton|cpp}_{kind}_fused_{ops}_{index}`` (a CPU kernel
profiled with ``torch._inductor.config.cpp.enable_kernel_profile`` as
``graph_{G}_cpp_fused_{ops}_{index}``): ``ops`` are the distinct ATen op names of the nodes it
fuses (``descriptive_names="original_aten"``, the default), sorted and joined by "_". Op names
hold underscores themselves (``native_layer_norm``, ``_unsafe_view``), so the list is split
against the multi-word names below, longest first; a word left alone that sorts before the one
it follows (impossible in a sorted list) is glued to it, which mends names this list lacks.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

# "triton_poi_fused_add_cos_sin_0", "graph_0_cpp_fused_add_mul_relu_threshold_backward_0".
_KERNEL = re.compile(
    r"(?:graph_\d+_)?(?P<backend>triton|cpp)_(?:(?P<kind>[a-z]+)_)?fused_(?P<ops>.+?)(?:_\d+)?"
)
KINDS = {
    "poi": "pointwise",
    "red": "reduction",
    "per": "persistent reduction",
    "tem": "template",
    "for": "foreach",
}
# ATen and prims op names with underscores that Inductor's nodes come from most often. Words
# without one need no entry.
MULTI_WORD = (
    "_adaptive_avg_pool2d",
    "_adaptive_avg_pool2d_backward",
    "_log_softmax",
    "_log_softmax_backward_data",
    "_native_batch_norm_legit",
    "_native_batch_norm_legit_functional",
    "_native_batch_norm_legit_no_training",
    "_scaled_dot_product_cudnn_attention",
    "_scaled_dot_product_efficient_attention",
    "_scaled_dot_product_flash_attention",
    "_scaled_dot_product_flash_attention_for_cpu",
    "_scaled_mm",
    "_softmax",
    "_softmax_backward_data",
    "_to_copy",
    "_unsafe_index",
    "_unsafe_index_put",
    "_unsafe_view",
    "adaptive_avg_pool2d",
    "avg_pool2d",
    "avg_pool2d_backward",
    "bitwise_and",
    "bitwise_not",
    "bitwise_or",
    "clamp_max",
    "clamp_min",
    "constant_pad_nd",
    "convert_element_type",
    "convolution_backward",
    "cumsum",
    "embedding_dense_backward",
    "empty_like",
    "empty_strided",
    "full_like",
    "gelu_backward",
    "grid_sampler_2d",
    "hardtanh_backward",
    "index_add",
    "index_put",
    "index_select",
    "leaky_relu",
    "leaky_relu_backward",
    "logical_and",
    "logical_not",
    "logical_or",
    "masked_fill",
    "max_pool2d_with_indices",
    "max_pool2d_with_indices_backward",
    "native_batch_norm",
    "native_batch_norm_backward",
    "native_dropout",
    "native_dropout_backward",
    "native_group_norm",
    "native_group_norm_backward",
    "native_layer_norm",
    "native_layer_norm_backward",
    "new_empty",
    "new_ones",
    "new_zeros",
    "nll_loss_backward",
    "nll_loss_forward",
    "ones_like",
    "rand_like",
    "randn_like",
    "reflection_pad2d",
    "repeat_interleave",
    "scatter_add",
    "scatter_reduce",
    "select_backward",
    "select_scatter",
    "sigmoid_backward",
    "silu_backward",
    "slice_backward",
    "slice_scatter",
    "split_with_sizes",
    "tanh_backward",
    "threshold_backward",
    "upsample_bilinear2d",
    "upsample_nearest2d",
    "var_mean",
    "view_as_complex",
    "view_as_real",
    "zeros_like",
)
_LONGEST_FIRST = tuple(sorted(MULTI_WORD, key=len, reverse=True))


@dataclass(frozen=True)
class KernelName:
    backend: str  # "triton" or "cpp"
    kind: str  # "pointwise", "reduction", ..., or "" (a CPU kernel's name has none)
    ops: tuple[str, ...]  # the fused ATen ops, as the name lists them


@functools.lru_cache(maxsize=4096)
def parse_kernel_name(name: str) -> KernelName | None:
    """The backend, kind and fused ops of an Inductor kernel's name; None for any other name."""
    found = _KERNEL.fullmatch(name.strip())
    if found is None:
        return None
    kind = found["kind"] or ""
    return KernelName(
        backend=found["backend"], kind=KINDS.get(kind, kind), ops=split_ops(found["ops"])
    )


def split_ops(text: str) -> tuple[str, ...]:
    """``_unsafe_view_add_native_layer_norm`` -> (_unsafe_view, add, native_layer_norm)."""
    words: list[str] = []
    at = 0
    while at < len(text):
        word = next(
            (
                known
                for known in _LONGEST_FIRST
                if text.startswith(known, at)
                and (at + len(known) == len(text) or text[at + len(known)] == "_")
            ),
            None,
        )
        if word is None:  # one word, with its leading underscore if it has one
            end = text.find("_", at + 1)
            word = text[at:] if end < 0 else text[at:end]
        if words and word < words[-1] and words[-1] not in MULTI_WORD:
            words[-1] = f"{words[-1]}_{word}"  # out of order: one op this list lacks
        else:
            words.append(word)
        at += len(word) + 1
    return tuple(w for w in words if w.strip("_"))
