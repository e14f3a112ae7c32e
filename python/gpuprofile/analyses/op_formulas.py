"""Our own FLOP and byte formulas, for the aten ops that torch.utils.flop_counter has none for.

torch's flop_registry covers matmuls, convolutions and attention; analyses/flops.py uses it for
those and never these. What is left and matters for a roofline is elementwise math,
reductions, softmax and normalization: cheap per element and nearly always memory-bound, so the
per-element constants below only have to put them on the right side of the ridge point. Each
constant is the count of the textbook expression, written next to it:

- elementwise arithmetic (add, mul, relu, ...): 1 FLOP per output element;
- one transcendental evaluation (exp, log, tanh, erf, sin, sigmoid, pow, ...): TRANSCENDENTAL = 4,
  a convention (the hardware evaluates them in a special-function unit plus a few fixups);
- reductions (sum, mean, amax, ...): 1 per input element (mean's final divide is per output
  element and left out); vector norms 2 (square and add);
- softmax / log_softmax: SOFTMAX = 8 per element (max 1, subtract 1, exp 4, sum 1, divide 1);
  their backward: 4 (multiply, sum, subtract, multiply);
- layer norm: statistics 4 (mean 1; variance: subtract, square, add) + normalize 2 (subtract,
  multiply by rstd) + 1 per affine weight + 1 per bias; rms norm: 2 (square, add) + 1 + weight;
  batch norm in training as layer norm, in eval normalize + affine only; group norm as layer norm;
- norm backward: NORM_BACKWARD = 10 per element for the input gradient (recompute the normalized
  input 2, grad times weight 1, two sums 3, combine 4) + 3 when there is a weight (its gradient
  2, the bias's 1), training-mode statistics assumed; rms norm backward 7 (normalized input 1,
  grad times weight 1, one sum 2, combine 3) + 2 for the weight's gradient;
- copies and fills: 0 FLOPs, only bytes.

Bytes are the minimal traffic: every tensor input read once and every output written once
(a copy_ does not read its destination, a fill_ only writes). Outputs that cannot be told from the
recorded inputs (a reduction's kept dims when no Concrete Inputs were recorded) are left out, so
bytes stay a lower bound. Statistics that norms also return (mean, rstd) are left out too.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from gpuprofile.trace.precisions import FLOATING, ITEMSIZE

TRANSCENDENTAL = 4
SOFTMAX = 8
SOFTMAX_BACKWARD = 4
NORM_STATS = 4
NORMALIZE = 2
RMS_STATS = 2
RMS_NORMALIZE = 1
NORM_BACKWARD = 10
NORM_PARAMS_BACKWARD = 3
RMS_NORM_BACKWARD = 7
RMS_PARAMS_BACKWARD = 2

MISSING: Any = object()  # a Concrete Inputs entry that was not recorded


@dataclass(frozen=True)
class Arg:
    """One recorded input of an op."""

    shape: tuple[int, ...] | None  # dims of a tensor; None when the input is no tensor
    dtype: str = ""  # our dtype name for a tensor, "" when unknown
    value: Any = MISSING  # the parsed Concrete Inputs entry, when recorded

    @property
    def numel(self) -> int:
        return math.prod(self.shape) if self.shape is not None else 0

    @property
    def nbytes(self) -> float:
        size = ITEMSIZE.get(self.dtype)
        return float(self.numel * size) if size is not None else math.nan


@dataclass(frozen=True)
class Estimate:
    flops: float
    bytes: float  # NaN when a dtype is unknown


def tensors(args: Sequence[Arg]) -> list[Arg]:
    return [a for a in args if a.shape is not None]


def dominant_dtype(args: Sequence[Arg]) -> str:
    """The dtype of the largest floating-point tensor input, else of the largest tensor input.

    Ties go to the first; a 0-dim tensor (a wrapped Python scalar) counts as 1 element.
    """
    found = tensors(args)
    floating = [a for a in found if a.dtype in FLOATING]
    pool = floating or found
    if not pool:
        return ""
    return max(pool, key=lambda a: a.numel).dtype


def traffic(reads: Sequence[Arg], writes: Sequence[tuple[tuple[int, ...], str]]) -> float:
    read = sum(a.nbytes for a in reads)
    written = sum(math.prod(shape) * ITEMSIZE.get(dtype, math.nan) for shape, dtype in writes)
    return float(read + written)


def broadcast(shapes: Sequence[tuple[int, ...]]) -> tuple[int, ...]:
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for shape in shapes:
        for i, d in enumerate(shape, start=ndim - len(shape)):
            if d != 1:
                out[i] = d
    return tuple(out)


def _elementwise(per_element: float) -> Callable[[Sequence[Arg]], Estimate | str]:
    def formula(args: Sequence[Arg]) -> Estimate | str:
        inputs = tensors(args)
        if not inputs:
            return "no tensor inputs recorded"
        shape = broadcast([a.shape for a in inputs if a.shape is not None])
        out = (shape, dominant_dtype(inputs))
        return Estimate(per_element * math.prod(shape), traffic(inputs, [out]))

    return formula


def _value(args: Sequence[Arg], index: int) -> Any:
    return args[index].value if index < len(args) else MISSING


def _reduced_shape(shape: tuple[int, ...], dims: Any, keepdim: Any) -> tuple[int, ...] | None:
    """Shape left after reducing dims (None or [] reduces all); None when dims are unknown."""
    if dims is MISSING or keepdim is MISSING:
        return None
    if dims is None or dims == []:
        dims = list(range(len(shape)))
    if isinstance(dims, int):
        dims = [dims]
    if not isinstance(dims, list) or not all(isinstance(d, int) for d in dims):
        return None
    axes = {d % len(shape) for d in dims} if shape else set()
    if keepdim:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _reduction(per_element: float, dim_at: int) -> Callable[[Sequence[Arg]], Estimate | str]:
    def formula(args: Sequence[Arg]) -> Estimate | str:
        inputs = tensors(args)
        if not inputs or args[0].shape is None:
            return "no tensor input recorded"
        if len(inputs) > 1:  # max(self, other) and min(self, other) are elementwise
            return _elementwise(1)(args)
        src = args[0]
        assert src.shape is not None
        if len(args) < dim_at + 2:  # an overload without dim and keepdim reduces everything
            out_shape: tuple[int, ...] | None = ()
        else:
            out_shape = _reduced_shape(src.shape, _value(args, dim_at), _value(args, dim_at + 1))
        writes = [] if out_shape is None else [(out_shape, src.dtype)]
        return Estimate(per_element * src.numel, traffic([src], writes))

    return formula


def _same_shape(per_element: float) -> Callable[[Sequence[Arg]], Estimate | str]:
    """Softmax-like ops: the output has the first input's shape and dtype."""

    def formula(args: Sequence[Arg]) -> Estimate | str:
        inputs = tensors(args)
        if not inputs or args[0].shape is None:
            return "no tensor input recorded"
        src = args[0]
        assert src.shape is not None
        return Estimate(per_element * src.numel, traffic(inputs, [(src.shape, src.dtype)]))

    return formula


def _normalization(
    stats: int, normalize: int, param_at: Sequence[int]
) -> Callable[[Sequence[Arg]], Estimate | str]:
    """Norms: per element stats + normalize + 1 per affine parameter present (weight, bias)."""

    def formula(args: Sequence[Arg]) -> Estimate | str:
        if not args or args[0].shape is None:
            return "no tensor input recorded"
        src = args[0]
        assert src.shape is not None
        params = sum(1 for i in param_at if i < len(args) and args[i].shape is not None)
        flops = (stats + normalize + params) * src.numel
        return Estimate(float(flops), traffic(tensors(args), [(src.shape, src.dtype)]))

    return formula


def _norm_backward(
    input_at: int, weight_at: int, per_element: int, per_weight: int, weight_grads: int
) -> Callable[[Sequence[Arg]], Estimate | str]:
    """Input gradient per element, + per_weight when a weight is present (its gradients too)."""

    def formula(args: Sequence[Arg]) -> Estimate | str:
        if len(args) <= input_at or args[input_at].shape is None:
            return "no input tensor recorded"
        src = args[input_at]
        assert src.shape is not None
        weight = args[weight_at] if weight_at < len(args) else Arg(None)
        writes = [(src.shape, src.dtype)]
        flops = per_element * src.numel
        if weight.shape is not None:
            flops += per_weight * src.numel
            writes += [(weight.shape, weight.dtype)] * weight_grads
        return Estimate(float(flops), traffic(tensors(args), writes))

    return formula


def _batch_norm(args: Sequence[Arg]) -> Estimate | str:
    # (input, weight, bias, running_mean, running_var, training, ...), except the no_stats
    # overload of _native_batch_norm_legit: (input, weight, bias, training, momentum, eps).
    training = _value(args, 3 if len(args) == 6 else 5)
    if not isinstance(training, bool):
        return "batch norm needs the training flag from Concrete Inputs"
    return _normalization(NORM_STATS if training else 0, NORMALIZE, (1, 2))(args)


def _batch_norm_eval(args: Sequence[Arg]) -> Estimate | str:
    return _normalization(0, NORMALIZE, (1, 2))(args)


def _copy(args: Sequence[Arg]) -> Estimate | str:
    # copy_(self, src): src is read, self only written.
    if len(args) < 2 or args[0].shape is None:
        return "no destination tensor recorded"
    dst = args[0]
    assert dst.shape is not None
    reads = [args[1]] if args[1].shape is not None else []
    return Estimate(0.0, traffic(reads, [(dst.shape, dst.dtype)]))


def _fill(args: Sequence[Arg]) -> Estimate | str:
    if not args or args[0].shape is None:
        return "no tensor recorded"
    dst = args[0]
    assert dst.shape is not None
    return Estimate(0.0, traffic([], [(dst.shape, dst.dtype)]))


_ARITHMETIC = (
    "add", "sub", "rsub", "mul", "div", "neg", "abs", "relu", "clamp", "clamp_min", "clamp_max",
    "maximum", "minimum", "reciprocal", "sqrt", "rsqrt", "square", "where", "threshold_backward",
)  # fmt: skip
_TRANSCENDENTAL = (
    "exp", "exp2", "expm1", "log", "log2", "log1p", "sin", "cos", "tanh", "sigmoid", "erf", "pow",
)  # fmt: skip

FORMULAS: dict[str, Callable[[Sequence[Arg]], Estimate | str]] = {
    **{name: _elementwise(1) for name in _ARITHMETIC},
    **{name: _elementwise(TRANSCENDENTAL) for name in _TRANSCENDENTAL},
    "silu": _elementwise(TRANSCENDENTAL + 1),  # x * sigmoid(x)
    "gelu": _elementwise(TRANSCENDENTAL + 4),  # 0.5 * x * (1 + erf(x / sqrt(2)))
    "sigmoid_backward": _elementwise(3),  # grad * y * (1 - y)
    "tanh_backward": _elementwise(3),  # grad * (1 - y * y)
    "silu_backward": _elementwise(TRANSCENDENTAL + 5),  # grad * s * (1 + x * (1 - s))
    # grad * (cdf + x * pdf): cdf = 0.5 * (1 + erf(x / sqrt 2)), pdf = exp(-x^2 / 2) / sqrt(2 pi)
    "gelu_backward": _elementwise(2 * TRANSCENDENTAL + 9),
    "sum": _reduction(1, 1),
    "mean": _reduction(1, 1),
    "amax": _reduction(1, 1),
    "amin": _reduction(1, 1),
    "max": _reduction(1, 1),
    "min": _reduction(1, 1),
    "prod": _reduction(1, 1),
    "linalg_vector_norm": _reduction(2, 2),
    "softmax": _same_shape(SOFTMAX),
    "_softmax": _same_shape(SOFTMAX),
    "log_softmax": _same_shape(SOFTMAX),
    "_log_softmax": _same_shape(SOFTMAX),
    "_softmax_backward_data": _same_shape(SOFTMAX_BACKWARD),
    "_log_softmax_backward_data": _same_shape(SOFTMAX_BACKWARD),
    "layer_norm": _normalization(NORM_STATS, NORMALIZE, (2, 3)),
    "native_layer_norm": _normalization(NORM_STATS, NORMALIZE, (2, 3)),
    "rms_norm": _normalization(RMS_STATS, RMS_NORMALIZE, (2,)),
    "_fused_rms_norm": _normalization(RMS_STATS, RMS_NORMALIZE, (2,)),
    "batch_norm": _batch_norm,
    "_batch_norm_impl_index": _batch_norm,
    "native_batch_norm": _batch_norm,
    "_native_batch_norm_legit": _batch_norm,
    "cudnn_batch_norm": _batch_norm,
    "miopen_batch_norm": _batch_norm,
    "_native_batch_norm_legit_no_training": _batch_norm_eval,
    "group_norm": _normalization(NORM_STATS, NORMALIZE, (2, 3)),
    "native_group_norm": _normalization(NORM_STATS, NORMALIZE, (1, 2)),
    "native_layer_norm_backward": _norm_backward(1, 5, NORM_BACKWARD, NORM_PARAMS_BACKWARD, 2),
    "native_batch_norm_backward": _norm_backward(1, 2, NORM_BACKWARD, NORM_PARAMS_BACKWARD, 2),
    "cudnn_batch_norm_backward": _norm_backward(0, 2, NORM_BACKWARD, NORM_PARAMS_BACKWARD, 2),
    "miopen_batch_norm_backward": _norm_backward(0, 2, NORM_BACKWARD, NORM_PARAMS_BACKWARD, 2),
    "native_group_norm_backward": _norm_backward(1, 4, NORM_BACKWARD, NORM_PARAMS_BACKWARD, 2),
    "_fused_rms_norm_backward": _norm_backward(1, 4, RMS_NORM_BACKWARD, RMS_PARAMS_BACKWARD, 1),
    "copy_": _copy,
    "fill_": _fill,
    "zero_": _fill,
}
# In-place variants (add_, mul_, ...) cost what the op does: self is read and written once.
_IN_PLACE = {
    f"{name}_": formula
    for name, formula in FORMULAS.items()
    if name in _ARITHMETIC or name in _TRANSCENDENTAL or name in ("silu", "gelu")
}
FORMULAS.update(_IN_PLACE)


def own_formula(name: str) -> Callable[[Sequence[Arg]], Estimate | str] | None:
    """Our formula for an aten op name ("aten::add_"), or None."""
    if not name.startswith("aten::"):
        return None
    return FORMULAS.get(name[6:])
