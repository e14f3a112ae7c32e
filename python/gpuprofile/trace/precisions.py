"""The precisions every layer names, and the recorded dtypes they come from: one vocabulary.

A precision is the name a roof, a kernel's dtype and an op's dtype share ("fp32", "bf16", ...).
It lives at the trace layer because importers (Nsight Compute's counts per precision), the
hardware tables (a roof per precision) and analyses (an op's dtype) all speak it, and trace is
the one layer all of them may import.
"""

from __future__ import annotations

# Dense peak FLOP/s by math unit. Tensor-core rates under "tf32", "fp16", "bf16", "fp8",
# "int8" (ops/s); "fp32" and "fp64" are the vector (non-tensor-core) rates.
PRECISIONS = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8")
VECTOR_PRECISIONS = ("fp64", "fp32")
TENSOR_CORE_PRECISIONS = tuple(p for p in PRECISIONS if p not in VECTOR_PRECISIONS)
# Storage dtypes that tensor cores take as they are (TF32 is a mode of fp32, not a dtype).
LOW_PRECISIONS = ("bf16", "fp16", "fp8", "int8")
# Dtypes an op's math is done in (int and bool tensors are indices and masks).
FLOATING = ("fp64", "fp32", "bf16", "fp16", "fp8")
# The precisions Nsight Compute counts executed FLOPs of, by the letter its SASS metric names
# carry (smsp__sass_thread_inst_executed_op_{letter}add_pred_on.sum, ...).
NCU_PRECISIONS = {"f": "fp32", "d": "fp64", "h": "fp16"}

# Kineto's "Input type" strings for tensors -> (precision or integer dtype, bytes per element).
INPUT_TYPES: dict[str, tuple[str, int]] = {
    "float": ("fp32", 4),
    "double": ("fp64", 8),
    "c10::Half": ("fp16", 2),
    "c10::BFloat16": ("bf16", 2),
    "c10::Float8_e4m3fn": ("fp8", 1),
    "c10::Float8_e5m2": ("fp8", 1),
    "c10::Float8_e4m3fnuz": ("fp8", 1),
    "c10::Float8_e5m2fnuz": ("fp8", 1),
    "c10::Float8_e8m0fnu": ("fp8", 1),
    "signed char": ("int8", 1),
    "unsigned char": ("uint8", 1),
    "short int": ("int16", 2),
    "int": ("int32", 4),
    "long int": ("int64", 8),
    "long": ("int64", 8),  # older Kineto versions
    "bool": ("bool", 1),
    "c10::complex<c10::Half>": ("complex32", 4),
    "c10::complex<float>": ("complex64", 8),
    "c10::complex<double>": ("complex128", 16),
}
# Bytes per element of each dtype name above.
ITEMSIZE = {name: size for name, size in INPUT_TYPES.values()}
# c10 ScalarType names (record_param_comms' "dtype") -> the dtype names above.
SCALAR_TYPES = {
    "Float": "fp32", "Double": "fp64", "Half": "fp16", "BFloat16": "bf16", "Int": "int32",
    "Long": "int64", "Short": "int16", "Char": "int8", "Byte": "uint8", "Bool": "bool",
    "ComplexFloat": "complex64", "ComplexDouble": "complex128", "ComplexHalf": "complex32",
    "Float8_e4m3fn": "fp8", "Float8_e5m2": "fp8", "Float8_e4m3fnuz": "fp8",
    "Float8_e5m2fnuz": "fp8",
}  # fmt: skip
