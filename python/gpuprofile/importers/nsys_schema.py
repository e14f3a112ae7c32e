"""An Nsight Systems SQLite export opened read-only, as the file has it: which tables and
columns it holds (``PRAGMA table_info``, never a fixed list: columns come and go between
schema versions), its string table, its enums and its metadata.

Every read goes through ``NsysDatabase.frame`` so that a damaged file raises
TraceFormatError naming it, whichever query meets the damage first.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from gpuprofile.errors import TraceFormatError

# The metadata table of schema 2.x exports, then of 3.x exports.
METADATA_TABLES = ("EXPORT_META_DATA", "META_DATA_EXPORT")
STRINGS_TABLE = "StringIds"
_HEADER_BYTES = 100
_DAMAGED = "damaged or truncated SQLite file"


class NsysDatabase:
    """One export, opened read-only; ``close`` when done (or use it as a context manager).

    Parameters:
        path: the ``.sqlite`` file ``nsys export --type sqlite`` wrote.

    Raises:
        TraceFormatError: the file is damaged or truncated, or is a SQLite database that is
            not an Nsight Systems export (the missing table is named).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        _check_size(path)
        try:
            self._connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        except sqlite3.Error as exc:
            raise TraceFormatError(path, f"{_DAMAGED} ({exc})") from None
        try:
            names = self._rows("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")
            self.tables = frozenset(str(name) for (name,) in names)
            self.metadata_table = next((t for t in METADATA_TABLES if t in self.tables), None)
            if self.metadata_table is None:
                raise TraceFormatError(
                    path,
                    "a SQLite database but not an Nsight Systems export: it has no "
                    f"{' or '.join(METADATA_TABLES)} table",
                )
            if STRINGS_TABLE not in self.tables:
                raise TraceFormatError(
                    path,
                    "a SQLite database but not an Nsight Systems export: it has no "
                    f"{STRINGS_TABLE} table",
                )
        except TraceFormatError:
            self.close()
            raise
        self._columns: dict[str, tuple[str, ...]] = {}
        self._strings: dict[int, str] | None = None

    def close(self) -> None:
        self._connection.close()

    def __enter__(self) -> NsysDatabase:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def columns(self, table: str) -> tuple[str, ...]:
        """The columns of a table as the file declares them (() when it has no such table)."""
        if table not in self.tables:
            return ()
        if table not in self._columns:
            rows = self._rows(f"PRAGMA table_info({_quoted(table)})")
            self._columns[table] = tuple(str(row[1]) for row in rows)
        return self._columns[table]

    def frame(self, table: str, wanted: Iterable[str], where: str = "") -> pd.DataFrame:
        """The columns of ``wanted`` that the table has (those it lacks are left out: the
        caller decides what a missing column means), in file order.

        Parameters:
            table: a table the file holds.
            wanted: column names.
            where: an SQL condition on the table's own columns, or "".

        Returns:
            A DataFrame; NULLs are NaN (numbers) or None (text).
        """
        present = [c for c in wanted if c in self.columns(table)]
        if not present:
            return pd.DataFrame(index=pd.RangeIndex(self.count(table)))
        sql = f"SELECT {', '.join(map(_quoted, present))} FROM {_quoted(table)}"
        if where:
            sql += f" WHERE {where}"
        try:
            return pd.read_sql_query(sql, self._connection)
        except (sqlite3.Error, pd.errors.DatabaseError) as exc:
            raise TraceFormatError(
                self.path, f"{_DAMAGED}: reading {table} failed ({exc})"
            ) from None

    def count(self, table: str) -> int:
        if table not in self.tables:
            return 0
        ((n,),) = self._rows(f"SELECT count(*) FROM {_quoted(table)}")
        return int(n)

    def require(self, table: str, columns: Sequence[str]) -> None:
        """Raise TraceFormatError naming the first of ``columns`` the table lacks."""
        for column in columns:
            if column not in self.columns(table):
                raise TraceFormatError(
                    self.path, f"table {table} has no column {column!r}, which gpuprofile needs"
                )

    def strings(self) -> dict[int, str]:
        """StringIds: id -> text (kernel, runtime call, NVTX and thread names refer to it)."""
        if self._strings is None:
            self.require(STRINGS_TABLE, ("id", "value"))
            rows = self._rows(f"SELECT id, value FROM {STRINGS_TABLE}")
            self._strings = {int(i): str(v) for i, v in rows if i is not None}
        return self._strings

    def enum(self, table: str, column: str = "name") -> dict[int, str] | None:
        """An ``ENUM_*`` table as id -> its ``column``; None where the export has none
        (schema 2.x exports have no enum tables: the caller falls back to CUPTI's values)."""
        if table not in self.tables or not {"id", column} <= set(self.columns(table)):
            return None
        rows = self._rows(f"SELECT id, {_quoted(column)} FROM {_quoted(table)}")
        return {int(i): str(v) for i, v in rows if i is not None and v is not None}

    def metadata(self) -> dict[str, str]:
        """The export's metadata (name -> value; the first value of a repeated name)."""
        assert self.metadata_table is not None
        self.require(self.metadata_table, ("name", "value"))
        found: dict[str, str] = {}
        for name, value in self._rows(f"SELECT name, value FROM {self.metadata_table}"):
            found.setdefault(str(name), str(value))
        return found

    def _rows(self, sql: str) -> list[tuple[Any, ...]]:
        try:
            return self._connection.execute(sql).fetchall()
        except sqlite3.Error as exc:
            raise TraceFormatError(self.path, f"{_DAMAGED} ({exc})") from None


def _quoted(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def _check_size(path: Path) -> None:
    """A file shorter than its header's page count says was cut off: SQLite might read the
    pages that remain without complaint, so a truncated export would pass for a short one."""
    try:
        with path.open("rb") as file:
            header = file.read(_HEADER_BYTES)
        size = path.stat().st_size
    except OSError as exc:
        raise TraceFormatError(path, f"cannot read: {exc.strerror or exc}") from None
    if len(header) < _HEADER_BYTES:
        raise TraceFormatError(path, f"{_DAMAGED}: {size} bytes, shorter than a SQLite header")
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    # The page count is valid only while the change counter matches "version-valid-for"
    # (https://www.sqlite.org/fileformat.html#in_header_database_size).
    valid = pages > 0 and header[24:28] == header[92:96]
    if valid and size < pages * page_size:
        raise TraceFormatError(
            path,
            f"{_DAMAGED}: its header says {pages * page_size} bytes but the file has {size} "
            "(cut off while copying?)",
        )
