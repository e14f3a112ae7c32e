"""Mutants of an Nsight Systems SQLite export (issue 16): the damage a half-written, hand-edited
or other-version export shows, made with sqlite3 on a copy of a real export.

Only the tables gpuprofile reads are touched (the activity tables, strings, metadata, devices):
a mutation of a table nothing reads would test nothing. ``mutate_sqlite`` draws every choice
from a ``random.Random``, so hypothesis can hand one in and shrink what fails.
"""

from __future__ import annotations

import contextlib
import random
import sqlite3
from pathlib import Path
from typing import Any

TABLES = (
    "CUPTI_ACTIVITY_KIND_KERNEL",
    "CUPTI_ACTIVITY_KIND_MEMCPY",
    "CUPTI_ACTIVITY_KIND_MEMSET",
    "CUPTI_ACTIVITY_KIND_RUNTIME",
    "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
    "NVTX_EVENTS",
    "StringIds",
    "TARGET_INFO_GPU",
    "TARGET_INFO_SESSION_START_TIME",
    "META_DATA_CAPTURE",
    "EXPORT_META_DATA",
    "META_DATA_EXPORT",
    "ThreadNames",
)
VALUES: tuple[Any, ...] = (
    None, -1, 0, 2**63 - 1, -(2**63), 1e308, -1e308, float("nan"), float("inf"), 0.5,
    "x", "", "1e400", "\x1b[2Jgone", b"\xff\xfe", 2**31,
)  # fmt: skip


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _present(db: sqlite3.Connection) -> list[str]:
    rows = db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    return [name for (name,) in rows if name in TABLES]


def _columns(db: sqlite3.Connection, table: str) -> list[str]:
    return [row[1] for row in db.execute(f"PRAGMA table_info({_quoted(table)})")]


def _set_values(db: sqlite3.Connection, table: str, rng: random.Random) -> None:
    """A few cells of one column get a NULL, a value of another type or an extreme."""
    column = rng.choice(_columns(db, table))
    value = rng.choice(VALUES)
    where = rng.choice(("", " WHERE rowid % 3 = 0", " WHERE rowid = (SELECT min(rowid) FROM t)"))
    where = where.replace("FROM t", f"FROM {_quoted(table)}")
    db.execute(f"UPDATE {_quoted(table)} SET {_quoted(column)} = ?{where}", (value,))


def _duplicate_rows(db: sqlite3.Connection, table: str, rng: random.Random) -> None:
    for _ in range(rng.choice((1, 2))):
        db.execute(f"INSERT INTO {_quoted(table)} SELECT * FROM {_quoted(table)}")


def _drop_column(db: sqlite3.Connection, table: str, rng: random.Random) -> None:
    columns = _columns(db, table)
    if len(columns) > 1:
        db.execute(f"ALTER TABLE {_quoted(table)} DROP COLUMN {_quoted(rng.choice(columns))}")


def _drop_table(db: sqlite3.Connection, table: str, rng: random.Random) -> None:
    db.execute(f"DROP TABLE {_quoted(table)}")


def _delete_rows(db: sqlite3.Connection, table: str, rng: random.Random) -> None:
    db.execute(f"DELETE FROM {_quoted(table)} WHERE rowid % ? = 0", (rng.choice((1, 2, 5)),))


def _swap_columns(db: sqlite3.Connection, table: str, rng: random.Random) -> None:
    """Two columns' values exchanged: starts after ends, ids where times belong."""
    columns = _columns(db, table)
    if len(columns) > 1:
        a, b = rng.sample(columns, 2)
        db.execute(
            f"UPDATE {_quoted(table)} SET {_quoted(a)} = {_quoted(b)}, {_quoted(b)} = {_quoted(a)}"
        )


MUTATIONS = (_set_values, _set_values, _set_values, _duplicate_rows, _drop_column, _drop_table)
MUTATIONS += (_delete_rows, _swap_columns)


def mutate_sqlite(path: Path, rng: random.Random) -> None:
    """Change the export at ``path`` in place: one to three mutations of the tables gpuprofile
    reads, then sometimes the file cut short.

    Parameters:
        path: a copy of an Nsight Systems SQLite export (it is changed).
        rng: where every choice comes from.
    """
    db = sqlite3.connect(path, isolation_level=None)
    try:
        tables = _present(db)
        for _ in range(rng.choice((1, 1, 2, 3))):
            if not tables:
                break
            table = rng.choice(tables)
            # A constraint or an index in the way: this mutation does not apply.
            with contextlib.suppress(sqlite3.Error):
                rng.choice(MUTATIONS)(db, table, rng)
            tables = _present(db)
        db.execute("VACUUM")
    finally:
        db.close()
    if rng.random() < 0.1:  # a copy cut short, as an interrupted transfer leaves it
        data = path.read_bytes()
        path.write_bytes(data[: rng.randrange(len(data))])
