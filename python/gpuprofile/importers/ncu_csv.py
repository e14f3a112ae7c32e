"""The rows of an Nsight Compute CSV (``ncu --csv``), in any of the shapes ncu writes.

- long (``--page details``, the default, and what ``--metrics`` writes): one row per (launch,
  metric) with "Metric Name", "Metric Unit", "Metric Value" (and "Section Name");
- wide (``--page raw``): one row per launch, one column per metric, the units in a second row
  under the header.

Files met in the wild carry the profiled program's stdout before the header (and ncu's own
``==PROF==`` lines), a UTF-8 BOM, CRLF line ends, thousands separators ("823,404,288") and
"n/a" for values a metric did not have. The header is found by its known column names, not by
its position. Values stay text here, each with its line number; ncu_metrics.py reads numbers.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from gpuprofile.errors import TraceFormatError

# Columns that say which launch a row belongs to (or describe the launch), never a metric.
IDENTITY_COLUMNS = frozenset(
    {
        "ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Kernel Time",
        "Context", "Stream", "Block Size", "Grid Size", "Device", "CC", "Device Name",
        "Function Name", "Demangled Name", "Section Name", "Metric Name", "Metric Unit",
        "Metric Value", "Rule Name", "Rule Type", "Rule Description",
        "Estimated Speedup Type", "Estimated Speedup",
    }
)  # fmt: skip
_LONG_COLUMNS = ("Metric Name", "Metric Unit", "Metric Value")
_HEADER_SCAN_LINES = 200


@dataclass(frozen=True)
class Value:
    """One metric's value as written, its unit and the file line it is on (1-based)."""

    text: str
    unit: str
    line: int


@dataclass
class Launch:
    """One profiled kernel launch: its identity columns and its metrics by name."""

    key: str  # the "ID" column (or, without one, the launch's order in the file)
    line: int  # the line of its first row
    identity: dict[str, str]
    metrics: dict[str, Value] = field(default_factory=dict)


@dataclass(frozen=True)
class NcuTable:
    shape: str  # "long" or "wide"
    launches: list[Launch]
    preamble: list[str]  # the lines before the header, as written


def read_ncu_csv(path: Path) -> NcuTable:
    """The launches of an ncu CSV file, in file order.

    Parameters:
        path: the CSV file.

    Returns:
        Its shape, its launches (metrics as text with units and line numbers) and the lines
        before its header.

    Raises:
        TraceFormatError: the file cannot be read, has no ncu header, or has no metrics.
    """
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except OSError as exc:
        raise TraceFormatError(path, f"cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise TraceFormatError(path, f"not UTF-8 text (byte {exc.start})") from None
    lines = text.splitlines()
    at, header = _header(path, lines)
    rows = csv.reader(lines[at + 1 :])
    numbered = ((at + 2 + i, row) for i, row in enumerate(rows))
    if all(column in header for column in _LONG_COLUMNS):
        launches = _long(header, numbered)
        shape = "long"
    else:
        missing = [c for c in _LONG_COLUMNS if c not in header]
        if not [c for c in header if c not in IDENTITY_COLUMNS]:
            raise TraceFormatError(
                path,
                f"line {at + 1}: an Nsight Compute CSV header without metrics: no columns "
                f"{', '.join(repr(c) for c in missing)} (details page) and no metric columns "
                "(raw page)",
            )
        launches = _wide(header, numbered)
        shape = "wide"
    if not launches:
        raise TraceFormatError(path, f"line {at + 1}: the header is followed by no launches")
    return NcuTable(shape=shape, launches=launches, preamble=lines[:at])


def _header(path: Path, lines: list[str]) -> tuple[int, list[str]]:
    """The index and cells of the header line: the first with both "ID" and "Kernel Name"."""
    for at, line in enumerate(lines[:_HEADER_SCAN_LINES]):
        if "Kernel Name" not in line:
            continue
        cells = [c.strip() for c in next(csv.reader([line]), [])]
        if "Kernel Name" in cells and "ID" in cells:
            return at, cells
    raise TraceFormatError(
        path,
        "not an Nsight Compute CSV: no header line with the columns 'ID' and 'Kernel Name' "
        f"in its first {_HEADER_SCAN_LINES} lines",
    )


def _identity(header: list[str], row: list[str]) -> dict[str, str]:
    return {
        c: row[i].strip() for i, c in enumerate(header) if c in IDENTITY_COLUMNS and i < len(row)
    }


def _long(header: list[str], rows: Iterable[tuple[int, list[str]]]) -> list[Launch]:
    index = {c: i for i, c in enumerate(header)}
    name_at, unit_at, value_at = (index[c] for c in _LONG_COLUMNS)
    # A metric's row may stop after its value: ncu leaves the rule columns ("Rule Name" ...
    # "Estimated Speedup") off the rows that carry no rule.
    needed = max(name_at, unit_at, value_at, index["ID"]) + 1
    by_key: dict[str, Launch] = {}
    for line, row in rows:
        if len(row) < needed or not any(cell.strip() for cell in row):
            continue  # a blank line, or the program's output after the table
        metric = row[name_at].strip()
        if not metric:
            continue  # a rule's row (details page): advice, no metric
        key = row[index["ID"]].strip()
        launch = by_key.get(key)
        if launch is None:
            launch = by_key[key] = Launch(key=key, line=line, identity=_identity(header, row))
        launch.metrics.setdefault(metric, Value(row[value_at], row[unit_at].strip(), line))
    return list(by_key.values())


def _wide(header: list[str], rows: Iterable[tuple[int, list[str]]]) -> list[Launch]:
    metrics = [(i, c) for i, c in enumerate(header) if c not in IDENTITY_COLUMNS]
    id_at = header.index("ID")
    name_at = header.index("Kernel Name")
    units: dict[int, str] = {}
    launches: list[Launch] = []
    for line, row in rows:
        if len(row) < len(header) or not any(cell.strip() for cell in row):
            continue
        if not launches and not units and not row[id_at].strip() and not row[name_at].strip():
            units = {i: row[i].strip() for i, _ in metrics}  # the unit row under the header
            continue
        launch = Launch(
            key=row[id_at].strip() or str(len(launches)),
            line=line,
            identity=_identity(header, row),
        )
        for i, metric in metrics:
            launch.metrics[metric] = Value(row[i], units.get(i, ""), line)
        launches.append(launch)
    return launches
