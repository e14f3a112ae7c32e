"""torch.utils.flop_counter's formulas applied to the shapes a trace recorded.

Each formula is called the way FlopCounterMode calls it: tensor arguments as (meta) tensors of
the recorded shapes, scalars from Concrete Inputs, keyword-only arguments (addmm's beta and
alpha) as keywords, and ``out_val`` the output we derive from the inputs (2-D for mm, the
convolution arithmetic for convolutions, ...). The output shapes also give the bytes written.

Adaptations, each because the recorded call does not match what the formula reads:
- cudnn_convolution and _slow_conv2d_forward are not used: their arguments come in another
  order than the formula reads (it would take dilation for ``transposed``); the
  aten::convolution above them is counted instead.
- _flash_attention_* and _efficient_attention_* receive [batch, seq, heads, dim] tensors
  (ATen's layout for them, see torch/_meta_registrations.py) where the formula reads
  [batch, heads, seq, dim]: they are passed to it with dims 1 and 2 swapped.
- Convolutions need stride, padding, dilation and ``transposed``, and convolution_backward its
  output_mask: only Concrete Inputs hold them (the ops table's ``concrete_inputs`` column).
Unlike torch's formulas, attention FLOPs honour causal masking (``_causal_share``): a causal
call computes the scores under the mask alone, about half of them (S(S+1)/2 of S^2 for a square
mask), and flash kernels skip the rest, so counting all would double its FLOPs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from gpuprofile.analyses.op_formulas import MISSING, Arg, Estimate, dominant_dtype, traffic

# Registry keys not used (see above).
_UNUSED = ("aten::cudnn_convolution", "aten::_slow_conv2d_forward")


@functools.cache
def registry() -> dict[str, Callable[..., int]]:
    """torch's formulas by aten op name ("aten::mm")."""
    from torch.utils.flop_counter import flop_registry

    formulas = {}
    for key, formula in flop_registry.items():
        qualified = getattr(key, "_qualified_op_name", "")
        if qualified.startswith("aten::") and qualified not in _UNUSED:
            formulas[qualified] = formula
    return formulas


def estimate(name: str, args: Sequence[Arg], formula: Callable[..., int]) -> Estimate | str:
    """torch's FLOPs and our bytes for one op's recorded inputs, or why there are none.

    Any exception torch raises on the inputs (negative or huge dims it refuses, arguments a
    formula does not expect) makes this op's FLOPs unknown with the reason: the roofline's
    coverage counts it, and the rest of the report stands.
    """
    try:
        plan = _plan(name[6:], args)
    except (ArithmeticError, ValueError, TypeError, IndexError) as exc:  # stride 0, ...
        return f"the recorded inputs do not fit {name}'s arguments: {_first_line(exc)}"
    if isinstance(plan, str):
        return plan
    call_args, outputs = plan
    import torch

    def meta(shape: tuple[int, ...]) -> Any:
        return torch.empty(shape, device="meta")

    try:
        call = [meta(a) if isinstance(a, tuple) else a for a in call_args]
        keywords = _keyword_names(name, len(call))
        positional = [v for v, k in zip(call, keywords) if k is None]
        named = {k: v for v, k in zip(call, keywords) if k is not None}
        out = tuple(meta(shape) if shape is not None else None for shape, _ in outputs)
        flops = formula(*positional, **named, out_val=out[0] if len(out) == 1 else out)
    except Exception as exc:  # any: said as the op's reason (unknown FLOPs), never swallowed
        return f"torch's formula rejected the recorded inputs: {_first_line(exc)}"
    writes = [(shape, dtype) for shape, dtype in outputs if shape is not None]
    # An out= tensor (mm.out from compiled graphs) is written, which the outputs count, not read.
    reads = [a for a, k in zip(args, keywords) if a.shape is not None and k != "out"]
    return Estimate(float(flops) * _causal_share(name, args), traffic(reads, writes))


# The attention ops whose tensors are [batch, seq, heads, dim] (the others: heads before seq).
_SEQ_FIRST = ("aten::_flash_attention", "aten::_efficient_attention")


def _causal_share(name: str, args: Sequence[Arg]) -> float:
    """The share of the score matrix a causal attention call computes (1 when it is no causal
    call): ``is_causal`` (SDPA and flash: the mask's upper-left corner on the diagonal) or
    ``custom_mask_type`` (memory-efficient attention: 1 upper-left, 2 lower-right)."""
    if "attention" not in name:
        return 1.0
    names = _argument_names(name)[: len(args)]
    flag = args[names.index("is_causal")].value if "is_causal" in names else None
    mask = args[names.index("custom_mask_type")].value if "custom_mask_type" in names else None
    if flag is not True and mask not in (1, 2):
        return 1.0
    if "query" not in names or "key" not in names:
        return 1.0
    query, key = args[names.index("query")].shape, args[names.index("key")].shape
    if query is None or key is None or len(query) != 4 or len(key) != 4:
        return 1.0  # nested (packed) sequences: their lengths are not in the shapes
    seq = 1 if name.startswith(_SEQ_FIRST) else 2
    rows, cols = query[seq], key[seq]
    if rows <= 0 or cols <= 0:
        return 1.0
    import numpy as np

    # Keys row i sees: i + 1 from the upper-left corner; from the lower-right, cols - rows + i + 1.
    first = 1 if mask != 2 else cols - rows + 1
    seen = np.clip(np.arange(rows, dtype=np.int64) + first, 0, cols)
    return float(seen.sum()) / (rows * cols)


@functools.cache
def _argument_names(name: str) -> tuple[str, ...]:
    """The op's argument names, by its default schema. Versions of torch add arguments at the
    end (a trace from an older torch records fewer), so the leading names hold for both."""
    import torch

    packet = getattr(torch.ops.aten, name[6:], None)
    if packet is None or "default" not in packet.overloads():
        return ()
    return tuple(a.name for a in packet.default._schema.arguments)


def _first_line(exc: BaseException) -> str:
    # torch's messages go on with a C++ stack ("Exception raised from ...").
    return (str(exc).splitlines() or [type(exc).__name__])[0]


@functools.cache
def _keyword_names(name: str, count: int) -> tuple[str | None, ...]:
    """Per recorded input, its name when the op's schema makes it keyword-only, else None.

    The profiler records keyword-only arguments (addmm's beta and alpha) after the positional
    ones; FlopCounterMode hands them to the formula as keywords, and so do we.
    """
    import torch

    packet = getattr(torch.ops.aten, name[6:])
    overloads = sorted(packet.overloads(), key=lambda o: o != "default")
    for overload in overloads:
        arguments = getattr(packet, overload)._schema.arguments
        if len(arguments) == count:
            return tuple(a.name if a.kwarg_only else None for a in arguments)
    return (None,) * count


_Plan = tuple[list[Any], list[tuple[tuple[int, ...] | None, str]]]


def _plan(op: str, args: Sequence[Arg]) -> _Plan | str:
    """Arguments for a registry formula (shapes as tuples, scalars as values) and the outputs."""
    call: list[Any] = [a.shape if a.shape is not None else _scalar(a) for a in args]
    dtype = dominant_dtype(args)

    def shape(i: int, ndim: int | None = None) -> tuple[int, ...]:
        s = args[i].shape if i < len(args) else None
        if s is None or (ndim is not None and len(s) != ndim):
            kind = f"{ndim}-d tensor" if ndim is not None else "tensor"
            raise _Unplannable(f"input {i} is not a {kind}")
        return s

    try:
        if op in ("mm", "addmm", "_scaled_mm"):
            a, b = (shape(0, 2), shape(1, 2)) if op != "addmm" else (shape(1, 2), shape(2, 2))
            return call, [((a[0], b[1]), dtype)]
        if op in ("bmm", "baddbmm"):
            a, b = (shape(0, 3), shape(1, 3)) if op == "bmm" else (shape(1, 3), shape(2, 3))
            return call, [((a[0], a[1], b[2]), dtype)]
        if op in ("convolution", "_convolution", "convolution_overrideable"):
            return call, [(_conv_output(args, shape(0), shape(1)), dtype)]
        if op == "convolution_backward":
            mask = args[10].value if len(args) > 10 else MISSING
            if not (isinstance(mask, list) and len(mask) == 3):
                raise _Unplannable("convolution_backward needs output_mask from Concrete Inputs")
            bias = args[3].value if isinstance(args[3].value, list) else [shape(2)[0]]
            grads = (shape(1), shape(2), tuple(bias))
            return call, [(g if m else None, dtype) for g, m in zip(grads, mask)]
        if op.startswith("_scaled_dot_product_") and op.endswith("_backward"):
            return call, [(shape(i, 4), dtype) for i in (1, 2, 3)]
        if op.startswith("_scaled_dot_product_"):
            q, v = shape(0, 4), shape(2, 4)
            return call, [((*q[:3], v[3]), dtype)]
        if op in ("_flash_attention_forward", "_efficient_attention_forward"):
            q, v = shape(0), shape(2)
            nested = args[3 if op.startswith("_flash") else 4].shape is not None
            if not nested:
                call[:3] = [_heads_first(shape(i, 4)) for i in range(3)]
            return call, [((*q[:-1], v[-1]), dtype)]
        if op in ("_flash_attention_backward", "_efficient_attention_backward"):
            if args[6].shape is None:
                call[:4] = [_heads_first(shape(i, 4)) for i in range(4)]
            return call, [(shape(i), dtype) for i in (1, 2, 3)]
    except _Unplannable as exc:
        return str(exc)
    return f"no argument plan for {op}"


class _Unplannable(Exception):
    pass


def _scalar(arg: Arg) -> Any:
    return None if arg.value is MISSING else arg.value


def _heads_first(shape: tuple[int, ...]) -> tuple[int, ...]:
    # [batch, seq, heads, dim] (ATen's layout for these ops) -> [batch, heads, seq, dim].
    return (shape[0], shape[2], shape[1], shape[3])


def _conv_output(args: Sequence[Arg], x: tuple[int, ...], w: tuple[int, ...]) -> tuple[int, ...]:
    values = [a.value for a in args[3:9]]
    if len(values) < 6 or any(v is MISSING or v is None for v in values):
        raise _Unplannable("convolution needs stride, padding, dilation from Concrete Inputs")
    stride, padding, dilation, transposed, output_padding, groups = values
    spatial = len(x) - 2
    stride, padding, dilation, output_padding = (
        _per_dim(v, spatial) for v in (stride, padding, dilation, output_padding)
    )
    kernel = w[2:]
    if transposed:
        out = [
            (x[2 + i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (kernel[i] - 1)
            + output_padding[i] + 1
            for i in range(spatial)
        ]  # fmt: skip
        return (x[0], w[1] * int(groups), *out)
    out = [
        (x[2 + i] + 2 * padding[i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1
        for i in range(spatial)
    ]
    return (x[0], w[0], *out)


def _per_dim(value: Any, n: int) -> list[int]:
    if isinstance(value, int):
        return [value] * n
    if isinstance(value, list) and all(isinstance(v, int) for v in value):
        return value * n if len(value) == 1 else value
    raise _Unplannable(f"convolution argument {value!r} is not a list of ints")
