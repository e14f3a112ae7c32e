"""FLOPs and bytes per op and per kernel, from the shapes a trace recorded.

Where the FLOPs come from, per op (``flops_source``):
- "measured": the trace's own count (``ops.flops``, e.g. torch.profiler's with_flops);
- "computed": torch.utils.flop_counter's formula for the op (mm, addmm, bmm, baddbmm,
  _scaled_mm, convolution, convolution_backward, SDPA flash/efficient/cudnn and their backward,
  _flash/_efficient_attention forward and backward) applied to the recorded shapes
  (analyses/torch_flops.py says how), or else our formula from analyses/op_formulas.py;
- "unknown": neither; ``unknown_reason`` says why (no formula, no shapes recorded, a formula
  that needs Concrete Inputs the trace lacks, or a formula that rejected the shapes), or the op
  ran while torch.compile compiled (on fake tensors: none of the program's work).

Bytes are the minimal traffic: every tensor input read once, every output written once, at the
recorded dtypes. NaN when unknown (no FLOP formula, or a dtype we cannot size).

Nested ops are counted once, at the OUTERMOST op that has FLOPs: aten::linear has no formula,
so its aten::addmm counts; aten::convolution counts and its aten::_convolution and backend
children are covered by it, as are the copies and clones an aten::mm or aten::addmm runs inside.
Counting outside-in keeps the work an op does through helper children (a bias copy, a dtype
cast) with the op that caused it. ``counted_at`` is the id of the op whose FLOPs include this op's
work (the op itself when ``counted``; NO_ID when nothing in its ancestry has FLOPs): sum
``flops`` over ``counted`` rows only. Every op still shows its own formula's FLOPs.

Kernels inherit the costs of the op counted_at their launching op: the launcher itself, or the
ancestor that covers it. An op's FLOPs and bytes are split among the kernels it owns in
proportion to their durations (equally when all durations are 0). A kernel whose source
measured its FLOPs or DRAM bytes (``kernels.flops``/``kernels.bytes``, Nsight Compute) takes
those instead, its FLOPs then "measured", its dtype the precision that did most of them.

Tensor cores (columns matmul_like, dims_aligned, tensor_core_eligible, tensor_core_roof):
- matmul_like: the op is a matrix multiply, a convolution or attention;
- dims_aligned: its GEMM dims are multiples of 16 bytes' worth of elements (8 for fp16/bf16,
  4 for fp32 as TF32, 16 for fp8/int8; NVIDIA's Tensor Core requirements). The dims checked
  are those that set the operands' row strides: K and N of a matmul (not M, the row count),
  input and output channels per group of a convolution (weight dims 0 and 1), the head dims of
  attention;
- tensor_core_eligible: matmul_like, in fp16/bf16/fp32/fp8/int8, and dims_aligned;
- tensor_core_roof: the tensor-core precision the op runs on under PyTorch's defaults (or
  "tf32" for an fp32 op whose kernels are TF32 tensor-op kernels: TF32 was on), "" when
  none: bf16/fp16/fp8/int8 matmul-like ops -> their dtype (cuBLAS and cuDNN use tensor cores
  for unaligned dims too, only slower); fp32 convolutions -> "tf32"
  (torch.backends.cudnn.allow_tf32 is True by default); fp32 matmuls and attention -> ""
  (torch.backends.cuda.matmul.allow_tf32 is False by default).

Coverage is the share of compute-kernel time (Analysis.kernel_classes: collectives, copies and
syncs excluded) whose FLOPs are known; on a trace without kernels, the share of the inclusive
time of outermost aten ops (cpu_ops with no cpu_op ancestor) spent inside counted ops.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from gpuprofile.analyses import recorded, torch_flops
from gpuprofile.analyses.compiled import compiling_ops
from gpuprofile.analyses.kernel_kind import COMPUTE
from gpuprofile.analyses.lookups import Lookups, outermost_with, read_only
from gpuprofile.analyses.names import category_texts, matches, strings, text_column
from gpuprofile.analyses.names import codes as category_codes
from gpuprofile.analyses.op_formulas import (
    MISSING,
    Arg,
    Estimate,
    dominant_dtype,
    own_formula,
)
from gpuprofile.trace.codes import first_seen_codes
from gpuprofile.trace.model import NO_ID, Trace
from gpuprofile.trace.precisions import (
    INPUT_TYPES,
    ITEMSIZE,
    LOW_PRECISIONS,
    NCU_PRECISIONS,
    PRECISIONS,
)

# fp32 reaches tensor cores as TF32; the low precisions as they are.
_TENSOR_CORE_DTYPES = ("fp32", *LOW_PRECISIONS)


@dataclass(frozen=True)
class _Cost:
    dtype: str
    flops: float
    bytes: float
    source: str
    reason: str
    matmul_like: bool
    dims_aligned: bool
    tensor_core_eligible: bool
    tensor_core_roof: str


def op_costs(facts: Lookups, inputs: recorded.RecordedInputs | None = None) -> pd.DataFrame:
    """Per op, index-aligned by op id: FLOPs, bytes, dtype and tensor-core facts (see above).

    facts: the trace and its lookups (an Analysis). inputs: the ops' recorded inputs decoded
    (``Analysis.recorded_inputs``); None: decode them here."""
    trace = facts.trace
    ops = trace.ops
    codes, described = _describe_rows(
        ops, inputs if inputs is not None else recorded.recorded_inputs(ops)
    )

    def values(field: str, dtype: Any) -> np.ndarray:
        return np.asarray(np.array([getattr(c, field) for c in described], dtype=dtype)[codes])

    def category(field: str) -> pd.Categorical:
        labels, uniques = pd.factorize(np.array([getattr(c, field) for c in described], object))
        return pd.Categorical.from_codes(labels[codes], categories=pd.Index(uniques, dtype=object))

    flops = values("flops", np.float64)
    source = category("source")
    reason = category("reason")
    counted = ops["flops"].to_numpy()
    # A trace's own count is used when it is one (finite, not negative); else the formula's.
    measured = _is_amount(counted)
    if measured.any():
        flops = np.where(measured, counted, flops)
        source, reason = (
            _with_label(source, measured, "measured"),
            _with_label(reason, measured, ""),
        )

    bytes_ = values("bytes", np.float64)
    compiling = compiling_ops(ops["name"], facts.op_parents)
    if compiling.any():  # torch.compile's tracing: fake tensors, no work of the program's
        flops = np.where(compiling, np.nan, flops)
        bytes_ = np.where(compiling, np.nan, bytes_)
        source = _with_label(source, compiling, "unknown")
        reason = _with_label(reason, compiling, COMPILING_REASON)

    ids = ops["id"].to_numpy()
    top = outermost_with(np.isfinite(flops), facts.op_parents)
    index = pd.Index(ids, name="op_id")
    counted_at = np.where(top >= 0, ids[np.maximum(top, 0)], NO_ID).astype(np.int64)
    tc_roof = _tf32_by_kernels(
        trace, index, counted_at, category("dtype"), category("tensor_core_roof")
    )
    return pd.DataFrame(
        {
            "op_id": ids,
            "rank": ops["rank"].to_numpy(),
            "name": ops["name"].array,
            "shapes": pd.Series(ops["input_dims"].to_numpy(), index=index, dtype=object),
            "dtype": category("dtype"),
            "flops": flops,
            "bytes": bytes_,
            "flops_source": source,
            "unknown_reason": reason,
            "counted": top == np.arange(len(ops)),
            "counted_at": counted_at,
            "matmul_like": values("matmul_like", bool),
            "dims_aligned": values("dims_aligned", bool),
            "tensor_core_eligible": values("tensor_core_eligible", bool),
            "tensor_core_roof": tc_roof,
        },
        index=index,
    )


# Kernels that run fp32 matmuls on TF32 tensor cores: CUTLASS's fp32-input tensor-op kernels
# (tensorop_s1688gemm with no f16/bf16 input type in the name) and any kernel naming tf32.
TF32_KERNEL = re.compile(r"tf32|tensorop_s1688(gemm|fprop|dgrad|wgrad)(?!.*f16)", re.IGNORECASE)


def _tf32_by_kernels(
    trace: Trace,
    index: pd.Index,
    counted_at: np.ndarray,
    dtype: pd.Categorical,
    roof: pd.Categorical,
) -> pd.Categorical:
    """The ops' tensor-core roofs, "tf32" for an fp32 op (with no roof of its own) whose work
    ran TF32 tensor-op kernels: allow_tf32 was on, whatever PyTorch's default says, and the
    op is held to the TF32 roof, not the fp32 one it outran."""
    kernels = trace.kernels
    if not len(kernels) or not len(index):
        return roof
    tf32 = matches(kernels["name"], TF32_KERNEL)
    if not tf32.any():
        return roof
    launcher = index.get_indexer(pd.Index(kernels["op_id"].to_numpy()[tf32]))
    owners = counted_at[launcher[launcher >= 0]]
    rows = index.get_indexer(pd.Index(np.unique(owners[owners != NO_ID])))
    rows = rows[rows >= 0]
    rows = rows[(np.asarray(dtype)[rows] == "fp32") & (np.asarray(roof)[rows] == "")]
    if not len(rows):
        return roof
    out = roof.add_categories(["tf32"]) if "tf32" not in roof.categories else roof.copy()
    out[rows] = "tf32"
    return out


COMPILING_REASON = "ran while torch.compile compiled (fake tensors)"


def _with_label(column: pd.Categorical, rows: np.ndarray, label: str) -> pd.Categorical:
    if label not in column.categories:
        column = column.add_categories([label])
    column[rows] = label
    return column


def _describe_rows(
    ops: pd.DataFrame, inputs: recorded.RecordedInputs
) -> tuple[np.ndarray, list[_Cost]]:
    """Per op, the position of its description in the list; each distinct description once.

    Traces repeat a few thousand (name, shapes) combinations over and over, and most ops (python
    functions) record no shapes at all: those are described by their name alone.
    """
    names = ops["name"].cat
    name_codes = names.codes.to_numpy().astype(np.int64)
    shaped = np.flatnonzero(inputs.codes["input_dims"] >= 0)
    # torch (about 1 s to import) only when some op recorded shapes for a formula to use.
    with_torch = bool(len(shaped))
    registry = torch_flops.registry() if with_torch else {}
    # A name that is no aten op and has no torch formula (a Python function's, most of a
    # trace's names) is described alike: once, not once per name.
    plain = _describe("", None, with_torch)
    described = [
        _describe(n, None, with_torch) if n.startswith("aten::") or n in registry else plain
        for n in category_texts(ops["name"]).tolist()
    ]
    codes = name_codes.copy()
    if not len(shaped):
        return codes, described
    columns = [inputs.codes[column][shaped] for column in recorded.INPUT_COLUMNS]
    key = first_seen_codes(name_codes[shaped], *columns)
    first = np.unique(key, return_index=True)[1]
    rows = shaped[first]
    # Many names share one set of recorded inputs: each set is parsed once.
    inputs_key = first_seen_codes(*(column[first] for column in columns))
    parsed: dict[int, list[Arg] | str | None] = {}
    # An op with no formula and no tensor-core family (most ops that record shapes) is
    # described by its inputs' dtype alone: one description per dtype.
    unmeasured: dict[str, _Cost] = {}
    for n, row, k in zip(
        strings(ops["name"], rows=rows), rows.tolist(), inputs_key.tolist(), strict=True
    ):
        if k not in parsed:
            parsed[k] = _parse_args(inputs, row)
        name, args = str(n), parsed[k]
        if name in registry or own_formula(name) is not None or _family(name) is not None:
            described.append(_describe(name, args, with_torch))
            continue
        dtype = dominant_dtype(args) if isinstance(args, list) else ""
        if dtype not in unmeasured:
            unmeasured[dtype] = _describe(name, args, with_torch)
        described.append(unmeasured[dtype])
    codes[shaped] = len(names.categories) + key
    return codes, described


def kernel_costs(trace: Trace, op_costs: pd.DataFrame) -> pd.DataFrame:
    """Per kernel: the FLOPs and bytes it inherits from the op counted at its launcher."""
    kernels = trace.kernels
    dur = kernels["dur_ns"].to_numpy()
    launcher = op_costs.index.get_indexer(pd.Index(kernels["op_id"].to_numpy()))
    owner_id = _take(op_costs["counted_at"].to_numpy(), launcher, NO_ID).astype(np.int64)
    owner = np.where(owner_id == NO_ID, -1, op_costs.index.get_indexer(pd.Index(owner_id)))
    has = owner >= 0
    owned_dur = np.bincount(owner[has], weights=dur[has], minlength=len(op_costs))
    owned_count = np.bincount(owner[has], minlength=len(op_costs))
    total = _take(owned_dur, owner, 0.0)
    count = _take(owned_count, owner, 1)
    share = np.where(total > 0, dur / np.where(total > 0, total, 1), 1.0 / np.maximum(count, 1))
    share = np.where(has, share, np.nan)

    def inherit(column: str, default: Any) -> np.ndarray:
        return _take(op_costs[column].to_numpy(), owner, default)

    def inherit_text(column: str, default: str) -> tuple[list[str], np.ndarray]:
        """A text column (op_costs keeps them categorical) inherited as (texts, per kernel
        its position among them, -1 for a missing text): read through the codes, for
        text_column, since to_numpy() would list every op's text and a frame would check
        each kernel's."""
        values = op_costs[column]
        if not len(values):
            return [default], np.zeros(len(owner), np.int64)
        texts = category_texts(values).tolist()
        picked = category_codes(values)[np.maximum(owner, 0)]
        return [*texts, default], np.where(owner >= 0, picked, len(texts))

    # What a source measured on the kernel itself (Nsight Compute) wins over what it inherits.
    measured_flops = kernels["flops"].to_numpy()
    measured_bytes = kernels["bytes"].to_numpy()
    has_flops, has_bytes = _is_amount(measured_flops), _is_amount(measured_bytes)
    flops = inherit("flops", np.nan).astype(np.float64) * share
    nbytes = inherit("bytes", np.nan).astype(np.float64) * share
    sources, source_at = inherit_text("flops_source", "unknown")
    dtypes, dtype_at = inherit_text("dtype", "")
    dtype: pd.api.extensions.ExtensionArray | np.ndarray = text_column(dtypes, dtype_at)
    if has_flops.any() or has_bytes.any():
        flops = np.where(has_flops, measured_flops, flops)
        nbytes = np.where(has_bytes, measured_bytes, nbytes)
        source_at = np.where(has_flops, len(sources), source_at)
        sources.append("measured")
        inherited = np.array([*dtypes, np.nan], object)[dtype_at]  # -1: a missing one, NaN
        dtype = _measured_dtypes(kernels["metrics"].to_numpy(), has_flops, inherited)
    bytes_at = np.where(has_bytes, 0, np.where(np.isfinite(nbytes), 1, 2))
    return pd.DataFrame(
        {
            "kernel_id": kernels["id"].to_numpy(),
            "rank": kernels["rank"].to_numpy(),
            "name": kernels["name"].array,
            "dur_ns": dur,
            "flops": flops,
            "bytes": nbytes,
            "flops_source": text_column(sources, source_at),
            "bytes_source": text_column(["measured", "computed", "unknown"], bytes_at),
            "dtype": dtype,
            "op_id": kernels["op_id"].to_numpy(),
            "cost_op_id": owner_id,
            "share": share,
            "matmul_like": inherit("matmul_like", False).astype(bool),
            "tensor_core_eligible": inherit("tensor_core_eligible", False).astype(bool),
            "tensor_core_roof": text_column(*inherit_text("tensor_core_roof", "")),
        }
    )


def _is_amount(values: np.ndarray) -> np.ndarray:
    """Per value: a count a source measured, finite and not negative (NaN: none measured)."""
    values = np.asarray(values, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        return np.asarray(np.isfinite(values) & (values >= 0))


# In PRECISIONS order: a tie goes to the wider precision.
_MEASURED = tuple(p for p in PRECISIONS if p in NCU_PRECISIONS.values())


def _measured_dtypes(metrics: np.ndarray, measured: np.ndarray, dtype: np.ndarray) -> np.ndarray:
    """Per kernel, the precision that did most of its measured FLOPs (``metrics``' "fp64_flops",
    "fp32_flops", "fp16_flops"), where it inherits none; the inherited dtype elsewhere."""
    out = np.asarray(dtype, dtype=object).copy()
    for i in np.flatnonzero(measured):
        counts = metrics[i] if isinstance(metrics[i], dict) else {}
        per = {p: recorded.number(counts.get(f"{p}_flops")) or 0.0 for p in _MEASURED}
        if not out[i] and any(v > 0 for v in per.values()):
            out[i] = max(per, key=lambda p: per[p])
    return out


def _take(values: np.ndarray, positions: np.ndarray, default: Any) -> np.ndarray:
    """values[positions], with default where a position is -1."""
    if not len(values):
        return np.full(len(positions), default, dtype=values.dtype)
    return np.asarray(np.where(positions >= 0, values[np.maximum(positions, 0)], default))


def coverage(facts: Lookups, op_costs: pd.DataFrame, kernel_costs: pd.DataFrame) -> float:
    """Share of compute-kernel time with known FLOPs; without kernels, of outermost-op time.

    NaN when there is no such time at all.
    """
    if len(kernel_costs):
        compute = facts.kernel_classes.kinds_of(kernel_costs["name"]) == COMPUTE
        dur = kernel_costs["dur_ns"].to_numpy().astype(np.float64)[compute]
        known = np.isfinite(kernel_costs["flops"].to_numpy()[compute])
        total = dur.sum()
        return float(dur[known].sum() / total) if total > 0 else math.nan
    ops = facts.trace.ops
    roots = facts.outermost_cpu_ops
    dur = ops["dur_ns"].to_numpy().astype(np.float64)
    total = dur[roots].sum()
    counted = op_costs["counted"].to_numpy()
    return float(dur[counted].sum() / total) if total > 0 else math.nan


def outermost_cpu_ops(trace: Trace, parents: np.ndarray) -> np.ndarray:
    """Per ops row: is it an aten op (category cpu_op) with no aten op around it? The ops a
    user wrote, not the ones they call, nor annotations or Python frames around them.
    parents: op_parents of the trace. Read-only: ``Analysis.outermost_cpu_ops`` shares it
    between coverage, each rank's communication hint and range requests."""
    is_op = (trace.ops["category"] == "cpu_op").to_numpy()
    return read_only(outermost_with(is_op, parents) == np.arange(len(is_op)))


# --- one distinct (name, shapes, types, concrete inputs) ------------------------------------


def _describe(name: str, parsed: list[Arg] | str | None, with_torch: bool) -> _Cost:
    """One distinct (name, recorded inputs): parsed is _parse_args' answer (None: no shapes)."""
    registry = torch_flops.registry() if with_torch else {}
    args = parsed if isinstance(parsed, list) else None
    dtype = dominant_dtype(args) if args is not None else ""
    family, gemm = _gemm_dims(name, args or [])
    aligned = gemm is not None and _aligned(gemm, dtype)
    tc_roof = _tensor_core_roof(family, dtype)
    estimate: Estimate | str
    formula = registry.get(name)
    own = own_formula(name)
    if formula is None and own is None and with_torch:
        estimate = "no formula"
    elif isinstance(parsed, str):
        estimate = parsed
    elif args is None:  # without any shapes torch is not loaded: formula is unknown then
        estimate = "no shapes recorded"
    elif formula is not None:
        estimate = torch_flops.estimate(name, args, formula)
    else:
        assert own is not None
        estimate = _own_estimate(own, args)
    if isinstance(estimate, Estimate):
        estimate = _checked(estimate)
    eligible = family is not None and aligned and dtype in _TENSOR_CORE_DTYPES
    if isinstance(estimate, str):
        flops, nbytes, source, reason = math.nan, math.nan, "unknown", estimate
    else:
        flops, nbytes, source, reason = estimate.flops, estimate.bytes, "computed", ""
    return _Cost(
        dtype=dtype,
        flops=float(flops),
        bytes=float(nbytes),
        source=source,
        reason=reason,
        matmul_like=family is not None,
        dims_aligned=aligned,
        tensor_core_eligible=eligible,
        tensor_core_roof=tc_roof,
    )


def _own_estimate(
    formula: Callable[[Sequence[Arg]], Estimate | str], args: Sequence[Arg]
) -> Estimate | str:
    """Our formula on the recorded inputs; a reason instead when it fails on them (inputs
    the formula's arithmetic does not expect make this op's FLOPs unknown, not the report)."""
    try:
        return formula(args)
    except (ArithmeticError, ValueError, TypeError, IndexError) as exc:
        return f"the FLOP formula rejected the recorded inputs: {type(exc).__name__}: {exc}"


def _checked(estimate: Estimate) -> Estimate | str:
    """FLOPs must be a finite count of zero or more; bytes too, else unknown (NaN)."""
    if not (math.isfinite(estimate.flops) and estimate.flops >= 0):
        return f"the FLOP formula gave {estimate.flops} FLOPs for the recorded inputs"
    if math.isfinite(estimate.bytes) and estimate.bytes >= 0:
        return estimate
    return Estimate(estimate.flops, math.nan)


def _parse_args(inputs: recorded.RecordedInputs, row: int) -> list[Arg] | str | None:
    """The row's recorded inputs; None when no shapes were recorded, a reason when an input's
    dims are not a shape a tensor can have (analyses/recorded.py)."""
    if not inputs.recorded("input_dims", row):
        return None
    shapes = inputs.of("input_dims", row)
    if shapes is None:
        return "the recorded Input Dims are not a JSON list"
    kinds = inputs.of("input_types", row)
    values = inputs.of("concrete_inputs", row)
    args = []
    for i, dims_i in enumerate(shapes):
        kind = kinds[i] if kinds is not None and i < len(kinds) else None
        if kind is not None and not isinstance(kind, str):
            kind = ""  # recorded, but no dtype name: not a tensor we can size
        flat, checked = recorded.dims(dims_i)
        if flat and checked is None:
            return f"input {i}'s dims {_clipped(dims_i)} are not a tensor's shape"
        # Without "Input type", a non-empty list of ints is taken for a tensor's dims.
        tensor = checked is not None and (
            kind in INPUT_TYPES if kind is not None else bool(checked)
        )
        value = _concrete(values[i]) if values is not None and i < len(values) else MISSING
        if tensor:
            assert checked is not None
            dtype = INPUT_TYPES[kind][0] if kind else ""
            args.append(Arg(checked, dtype, value))
        else:
            args.append(Arg(None, "", value))
    return args


def _clipped(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _concrete(entry: Any) -> Any:
    """A Concrete Inputs entry: "" is None, "[2, 2]" a list, "False" a bool, "1e-05" a float."""
    return _concrete_text(entry) if isinstance(entry, str) else entry


def _concrete_text(text: str) -> Any:
    if text == "":
        return None
    value = recorded.decode(text.replace("True", "true").replace("False", "false"))
    return text if value is None and text != "null" else value


# --- tensor cores -----------------------------------------------------------------------------

_MATMUL = {
    "mm": (0, 1), "addmm": (1, 2), "_scaled_mm": (0, 1), "_int_mm": (0, 1), "bmm": (0, 1),
    "baddbmm": (1, 2), "matmul": (0, 1), "linear": (0, 1),
}  # fmt: skip
_CONV = {
    "convolution": 1, "_convolution": 1, "convolution_overrideable": 1, "conv1d": 1,
    "conv2d": 1, "conv3d": 1, "conv_transpose1d": 1, "conv_transpose2d": 1, "conv_transpose3d": 1,
    "cudnn_convolution": 1, "cudnn_convolution_transpose": 1, "miopen_convolution": 1,
    "mkldnn_convolution": 1, "_slow_conv2d_forward": 1, "convolution_backward": 2,
}  # fmt: skip
_ATTENTION = {
    "scaled_dot_product_attention": (0, 2), "_scaled_dot_product_flash_attention": (0, 2),
    "_scaled_dot_product_efficient_attention": (0, 2),
    "_scaled_dot_product_cudnn_attention": (0, 2), "_flash_attention_forward": (0, 2),
    "_efficient_attention_forward": (0, 2),
    "_scaled_dot_product_flash_attention_backward": (1, 3),
    "_scaled_dot_product_efficient_attention_backward": (1, 3),
    "_scaled_dot_product_cudnn_attention_backward": (1, 3), "_flash_attention_backward": (1, 3),
    "_efficient_attention_backward": (1, 3),
}  # fmt: skip


def _family(name: str) -> str | None:
    """_gemm_dims' family of an op name."""
    op = name[6:] if name.startswith("aten::") else ""
    if op in _MATMUL:
        return "matmul"
    if op in _CONV:
        return "conv"
    return "attention" if op in _ATTENTION else None


def _gemm_dims(name: str, args: Sequence[Arg]) -> tuple[str | None, tuple[int, ...] | None]:
    """The op's family ("matmul", "conv", "attention" or None) and the dims to check."""
    family = _family(name)
    op = name[6:]  # a family's ops are aten ops

    def dims(i: int) -> tuple[int, ...] | None:
        return args[i].shape if i < len(args) and args[i].shape else None

    if family == "matmul":
        a, b = (dims(i) for i in _MATMUL[op])
        if a is None or b is None:
            return "matmul", None
        n = b[0] if op == "linear" else b[-1]  # linear's weight is [N, K]
        return "matmul", (a[-1], n) if len(b) >= 2 else (a[-1],)
    if family == "conv":
        w = dims(_CONV[op])
        return "conv", (w[0], w[1]) if w is not None and len(w) >= 2 else None
    if family == "attention":
        q, v = (dims(i) for i in _ATTENTION[op])
        return "attention", (q[-1], v[-1]) if q is not None and v is not None else None
    return None, None


def _aligned(dims: tuple[int, ...], dtype: str) -> bool:
    size = ITEMSIZE.get(dtype)
    if size is None or size > 16:
        return False
    return all(d % (16 // size) == 0 for d in dims)


def _tensor_core_roof(family: str | None, dtype: str) -> str:
    if family is None:
        return ""
    if dtype in LOW_PRECISIONS:
        return dtype
    return "tf32" if dtype == "fp32" and family == "conv" else ""
