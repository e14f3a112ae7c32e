"""Fingerprints of a Trace's tables and of its report, to show a change of reader or of an
analysis reproduces what the recorded one gave, column by column and section by section.

    python tests/helpers/fingerprint.py    # record tests/traces/kineto_fingerprints.json

Recording is a deliberate act: it is run once, before a change that must not alter results, and
the change is then held to it (tests/traces/test_reader_fingerprints.py).
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[2]
RECORD = REPO / "tests" / "traces" / "kineto_fingerprints.json"
TRACE_SUFFIXES = (".json", ".json.gz")


def column_digest(series: pd.Series) -> str:
    """The column's values, in row order, as a short sha256: numbers by their bytes (every NaN
    alike), names and texts by their characters (None apart from "")."""
    h = hashlib.sha256(str(series.dtype).encode())
    if isinstance(series.dtype, pd.CategoricalDtype) or series.dtype == object:
        for value in series.tolist():
            h.update(b"\x01" if value is None else b"\x02" + str(value).encode() + b"\x00")
    else:
        values = series.to_numpy()
        if values.dtype.kind == "f":
            values = np.where(np.isnan(values), np.nan, values)
        h.update(np.ascontiguousarray(values).tobytes())
    return h.hexdigest()[:16]


def trace_fingerprint(trace: Any) -> dict[str, dict[str, Any]]:
    """{table: {"rows": n, column: digest, ...}} for every table of a Trace."""
    from gpuprofile.trace.model import SCHEMA

    out: dict[str, dict[str, Any]] = {}
    for table in SCHEMA:
        frame = trace.table(table)
        out[table] = {"rows": len(frame)}
        out[table].update({c: column_digest(frame[c]) for c in frame.columns})
    return out


def report_fingerprint(report: dict[str, Any], root: Path) -> dict[str, str]:
    """{section: digest} of a report dict, paths under ``root`` written relative to it."""
    out = {}
    for key, value in report.items():
        text = json.dumps(value, sort_keys=True, default=str).replace(str(root), "<root>")
        out[key] = hashlib.sha256(text.encode()).hexdigest()[:16]
    return out


def fingerprint(path: Path, root: Path) -> dict[str, Any]:
    import gpuprofile

    profile = gpuprofile.load(path)
    facts = msgspec.to_builtins(profile.trace.meta, str_keys=True)
    meta = json.dumps(facts, sort_keys=True, default=str)
    return {
        "meta": hashlib.sha256(meta.replace(str(root), "<root>").encode()).hexdigest()[:16],
        "tables": trace_fingerprint(profile.trace),
        "report": report_fingerprint(profile.report(), root),
    }


def cases(traces: Path) -> list[Path]:
    """Every shared Kineto file and multi-rank run folder, as the trace tests take them."""
    kineto, distributed = traces / "kineto", traces / "kineto-distributed"
    files = sorted(p for p in kineto.iterdir() if p.name.endswith(TRACE_SUFFIXES))
    return [*files, *sorted(p for p in distributed.iterdir() if p.is_dir())]


def main() -> int:
    traces = REPO.parent / "shared" / "traces"
    record = {p.name: fingerprint(p, traces) for p in cases(traces)}
    RECORD.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    print(f"recorded {len(record)} traces in {RECORD}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
