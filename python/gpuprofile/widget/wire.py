"""The widget's binary tables (GPT1, encoding.py), defined once: each table's columns in order
and the dtypes each may have. ``encode_wire`` refuses a table that differs from its definition,
and ``js/model/wire_tables.js`` (the JS column types and the list the decoder checks a table
against) is generated from it:

    python -m gpuprofile.widget.wire --write    # regenerate js/model/wire_tables.js
    python -m gpuprofile.widget.wire --check    # exit 1 when it is stale

tests/unit/test_wire_tables.py fails when the file differs from what this gives.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from gpuprofile.report.schema_gen import REPO, run_generator
from gpuprofile.widget.encoding import encode_table

TABLES_FILE = Path("js") / "model" / "wire_tables.js"
# Names and rows are numbered in the narrowest unsigned type that holds them (smallest_uint).
_CODES = ("uint8", "uint16", "uint32")
_EVENT_LIST: dict[str, tuple[str, ...]] = {
    "id": ("uint32",),
    "lane": ("uint16",),
    "row": ("uint16",),
    "start_ns": ("float64",),
    "dur_ns": ("float32",),
}
# Each table: what it is, then each column with the dtypes it may have. A name ending in "?"
# is a column some tables of the kind lack.
TABLES: dict[str, tuple[str, dict[str, tuple[str, ...]]]] = {
    "events": (
        "The `events` trait and each window: real events lane by lane (meta.segments), or "
        "coverage boxes with their count of events (meta.merged).",
        {
            "start_ns": ("float64",),
            "dur_ns": ("float32",),
            "name": _CODES,
            "row": _CODES,
            "count?": ("uint32",),
        },
    ),
    "counters": (
        "The `counters` trait: each counter lane's samples (meta.segments).",
        {"time_ns": ("float64",), "value": ("float64",)},
    ),
    "marks": (
        "The `marks` trait: the events of each hint's evidence and roofline point, group by "
        "group (meta.groups).",
        {"group": ("uint32",), **_EVENT_LIST, "name": ("uint32",)},
    ),
    "event_list": (
        "A list of events in reply to a request (search hits, a roofline point's events).",
        _EVENT_LIST,
    ),
}
_ARRAYS = {
    "float64": "Float64Array",
    "float32": "Float32Array",
    "int32": "Int32Array",
    "uint32": "Uint32Array",
    "int16": "Int16Array",
    "uint16": "Uint16Array",
    "int8": "Int8Array",
    "uint8": "Uint8Array",
}


def encode_wire(
    kind: str, columns: Mapping[str, np.ndarray], meta: Mapping[str, Any] | None = None
) -> bytes:
    """The GPT1 bytes of a table of this kind (TABLES), after checking its columns: the JS
    types and decoder know only what TABLES says.

    Raises:
        ValueError: a column missing, unknown, out of order or of another dtype.
    """
    _, spec = TABLES[kind]
    expected = [name for name in spec if not (name.endswith("?") and name[:-1] not in columns)]
    if list(columns) != [name.rstrip("?") for name in expected]:
        raise ValueError(f"{kind} table: columns {list(columns)}, not {list(spec)} (wire.py)")
    for name in expected:
        column = name.rstrip("?")
        dtype = np.asarray(columns[column]).dtype.name
        if dtype not in spec[name]:
            raise ValueError(f"{kind} table: column {column!r} is {dtype}, not one of {spec[name]}")
    return encode_table(columns, meta)


def javascript() -> str:
    """wire_tables.js: a typedef of each table's columns (typed arrays) and WIRE_TABLES, the
    column names and dtypes the decoder checks a table against."""
    out = [
        "// @ts-check",
        "// Generated from python/gpuprofile/widget/wire.py by",
        "// `python -m gpuprofile.widget.wire --write`: do not edit by hand.",
    ]
    kinds = []
    for kind, (about, spec) in TABLES.items():
        name = "".join(part.title() for part in kind.split("_")) + "Columns"
        kinds.append(f"{kind}: {name}")
        out += ["", "/**", f" * {about}", f" * @typedef {{object}} {name}"]
        for column, dtypes in spec.items():
            arrays = " | ".join(_ARRAYS[d] for d in dtypes)
            field = f"[{column[:-1]}]" if column.endswith("?") else column
            out.append(f" * @property {{{arrays}}} {field}")
        out.append(" */")
    out += ["", f"/** @typedef {{{{{', '.join(kinds)}}}}} WireColumns */", ""]
    out.append(
        "/** Each table's columns in order (name?: some lack it), with the dtypes each may have. */"
    )
    out.append("export const WIRE_TABLES = {")
    for kind, (_, spec) in TABLES.items():
        out.append(f"  {kind}: {{")
        out += [f"    {json.dumps(column)}: {json.dumps(list(d))}," for column, d in spec.items()]
        out.append("  },")
    out.append("};")
    return "\n".join(out) + "\n"


def generated() -> dict[Path, str]:
    """The generated file (relative to the repository) with the text it should hold."""
    return {TABLES_FILE: javascript()}


if __name__ == "__main__":
    sys.exit(run_generator(sys.argv[1:], generated(), REPO, __doc__ or ""))
