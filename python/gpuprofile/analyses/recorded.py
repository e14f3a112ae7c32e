"""What an op recorded (Input Dims, Input type, Concrete Inputs), read the one way analyses may.

The ops table keeps these as JSON text, as the trace wrote them; any importer or a capture can
fill them, and a hand-edited or hostile trace can put anything there. Every analysis that reads
them goes through here: text that does not decode is None, and a shape is a shape only when it
is a list of whole numbers of zero or more whose product a tensor could have. Anything else is
"not a shape", never handed to a formula (torch raises on negative or huge dimensions).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import msgspec
import numpy as np
import pandas as pd

# More elements than any tensor holds (2**53 fp8 bytes is 8 PiB), and the limit below which
# element counts, byte counts and FLOPs stay exact in float64 and int64.
MAX_ELEMENTS = 2**53


def decode(text: Any) -> Any:
    """The value of a JSON text; None when it is no text or does not decode."""
    if not isinstance(text, str | bytes) or not text:
        return None
    try:
        return msgspec.json.decode(text)
    except (msgspec.DecodeError, RecursionError):
        return None


def decoded_list(text: Any) -> list[Any] | None:
    """A JSON text that holds a list (Input Dims, Input type, Concrete Inputs), else None."""
    value = decode(text)
    return value if isinstance(value, list) else None


def is_number_list(value: Any) -> bool:
    """A non-empty list of numbers: meant as a tensor's dims, whether or not they are valid.
    (Nested lists are a TensorList's shapes; [] is a scalar.)"""
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(d, int | float) for d in value)  # bools are ints here: caught below
    )


def shape(value: Any) -> tuple[int, ...] | None:
    """A tensor's dims: a list of whole numbers of zero or more (no bools) whose product is at
    most MAX_ELEMENTS; None for anything else."""
    if not isinstance(value, list):
        return None
    if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in value):
        return None
    if any(d > MAX_ELEMENTS for d in value) or math.prod(value) > MAX_ELEMENTS:
        return None
    return tuple(value)


def dims(entry: Any) -> tuple[bool, tuple[int, ...] | None]:
    """Whether an Input Dims entry is meant as a tensor's dims (is_number_list, or []), and
    its shape where it is one (shape): a list of ints, the usual entry, checked in one pass."""
    if type(entry) is list and all(type(d) is int for d in entry):
        if entry and (min(entry) < 0 or max(entry) > MAX_ELEMENTS):
            return True, None
        return True, tuple(entry) if math.prod(entry) <= MAX_ELEMENTS else None
    flat = is_number_list(entry) or entry == []
    return flat, shape(entry) if flat else None


def number(value: Any) -> float | None:
    """A finite number (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        result = float(value)
    except OverflowError:  # an int past float's range
        return None
    return result if math.isfinite(result) else None


def tensor_shape(entry: Any) -> tuple[int, ...] | None:
    """The dims of one Input Dims entry that is a tensor with at least one dim; None for a
    scalar ([]), a TensorList, a value that is no shape, or no entry."""
    dims = shape(entry)
    return dims if dims else None


@dataclass(frozen=True)
class RecordedInputs:
    """Every op's Input Dims, Input type and Concrete Inputs, decoded once per distinct text.

    ``codes[column]`` holds, per ops row, the position of its text among the column's distinct
    texts (-1: none recorded); ``values[column]`` (an object array) each distinct text's list
    (None: it is not a JSON list), then a None that code -1 reads. The columns are
    "input_dims", "input_types" and "concrete_inputs". Made once per trace by
    ``Analysis.recorded_inputs``: flops and attention read these lists rather than decoding
    the texts again.
    """

    codes: Mapping[str, np.ndarray]
    values: Mapping[str, np.ndarray]

    def of(self, column: str, row: int) -> list[Any] | None:
        """The row's decoded list; None when it recorded none or it is not a JSON list."""
        value: list[Any] | None = self.values[column][self.codes[column][row]]
        return value

    def rows_of(self, column: str, rows: np.ndarray) -> np.ndarray:
        """of() for each of rows, as an object array."""
        return np.asarray(self.values[column][self.codes[column][rows]])

    def recorded(self, column: str, row: int) -> bool:
        """Whether the row recorded this column at all (a text, decodable or not)."""
        return bool(self.codes[column][row] >= 0)


INPUT_COLUMNS = ("input_dims", "input_types", "concrete_inputs")


def recorded_inputs(ops: pd.DataFrame) -> RecordedInputs:
    """The ops table's recorded inputs, each distinct text decoded once (see RecordedInputs)."""
    codes: dict[str, np.ndarray] = {}
    values: dict[str, np.ndarray] = {}
    for column in INPUT_COLUMNS:
        texts = ops[column].to_numpy() if column in ops.columns else np.full(len(ops), None)
        labels, uniques = pd.factorize(texts)
        decoded = np.full(len(uniques) + 1, None, dtype=object)  # the last: code -1
        for i, text in enumerate(uniques.tolist()):
            decoded[i] = decoded_list(text)  # one by one: numpy would nest lists into arrays
        for array in (labels, decoded):
            array.flags.writeable = False
        codes[column], values[column] = labels, decoded
    return RecordedInputs(codes, values)
