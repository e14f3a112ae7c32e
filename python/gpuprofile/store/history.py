"""The history store: one SQLite file (WAL) of runs, each with its report, a summary for
listing, and the digest a diff or the CI gate reads; the trace too when asked.

Every call opens its own connection and holds the write lock only for one short transaction,
so several kernels and scripts can record at once: a writer waits up to BUSY_TIMEOUT_S for
another, and loses nothing. A file that is not a readable store is a HistoryError saying how
to recover, never a crash of the cell being recorded.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import sqlite3
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from gpuprofile.errors import HistoryError
from gpuprofile.report.schema import Report, decode_report, report_json
from gpuprofile.store.location import history_path
from gpuprofile.store.origin import Origin
from gpuprofile.store.summary import hint_rows, run_summary

SCHEMA_VERSION = 1
BUSY_TIMEOUT_S = 60.0
T = TypeVar("T")
# Shortest id prefix taken as an id (shorter text is only a label).
MIN_PREFIX = 4
LAST = "last"

_CREATE = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    time REAL NOT NULL,
    label TEXT,
    notebook TEXT,
    cell_id TEXT,
    script TEXT,
    code_hash TEXT,
    git_commit TEXT,
    device TEXT,
    torch_version TEXT,
    cuda_version TEXT,
    summary TEXT NOT NULL,
    hints TEXT NOT NULL,
    report BLOB NOT NULL,
    digest BLOB NOT NULL,
    trace_path TEXT
);
CREATE INDEX IF NOT EXISTS runs_time ON runs (time);
CREATE INDEX IF NOT EXISTS runs_label ON runs (label, time);
"""
# What a listing reads: everything but the report and the digest.
_LISTED = (
    "id, time, label, notebook, cell_id, script, code_hash, git_commit, device, "
    "torch_version, cuda_version, summary, hints, trace_path"
)


@dataclass(frozen=True)
class StoredRun:
    """One run of the history (docs/history.md has each field).

    Parameters:
        id: 8 hex digits; any unique prefix of 4 or more names it too.
        time: when it was recorded (seconds since the epoch).
        label: the name given with ``--label`` / ``label=``; None without one.
        origin: notebook and cell, or script; code hash; git commit.
        device, torch_version, cuda_version: what it ran on (None: unknown).
        summary: wall, GPU busy and idle by cause, step-time distribution, top kernels
            and ops (``store/summary.py``).
        hints: each hint's kind, title, severity and gain_ns, ranked.
        trace_path: the kept trace (``--keep-trace``); None when not kept.
        history: the store it came from.
    """

    id: str
    time: float
    label: str | None
    origin: Origin
    device: str | None
    torch_version: str | None
    cuda_version: str | None
    summary: dict[str, Any]
    hints: list[dict[str, Any]]
    trace_path: str | None
    history: History = field(repr=False, compare=False)

    def report(self) -> dict[str, Any]:
        """The run's full report (gpuprofile.report/1), as it was when recorded."""
        return self.history._blob(self.id, "report")

    def typed_report(self) -> Report:
        """``report()`` decoded into the Structs the views read.

        Raises:
            HistoryError: a report this version cannot read (recorded by another one), or a
                damaged history.
        """
        return self.history._report(self.id)

    def digest(self) -> dict[str, Any]:
        """What a diff and the CI gate read of the run (gpuprofile.digest/1)."""
        return self.history._blob(self.id, "digest")

    def name(self) -> dict[str, Any]:
        """How a diff names the run: {"id", "label", "time"}."""
        return {"id": self.id, "label": self.label, "time": self.time}

    def to_dict(self) -> dict[str, Any]:
        """The run without its report, as plain JSON types (``history --format json``)."""
        return {
            "id": self.id,
            "time": self.time,
            "label": self.label,
            "notebook": self.origin.notebook,
            "cell_id": self.origin.cell_id,
            "script": self.origin.script,
            "code_hash": self.origin.code_hash,
            "git_commit": self.origin.git_commit,
            "device": self.device,
            "torch_version": self.torch_version,
            "cuda_version": self.cuda_version,
            "summary": self.summary,
            "hints": self.hints,
            "trace_path": self.trace_path,
        }


class History:
    """A history file; nothing is opened until a call needs it.

    Parameters:
        path: the SQLite file (made, with its folder, on the first record).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"<gpuprofile History {str(self.path)!r}>"

    @property
    def traces(self) -> Path:
        """The folder of kept traces, beside the file."""
        return self.path.with_name(self.path.stem + "-traces")

    def new_id(self) -> str:
        """A fresh run id (8 hex digits), for a trace kept before its run is recorded."""
        return secrets.token_hex(4)

    def record(
        self,
        report: Report,
        digest: dict[str, Any],
        *,
        run_id: str | None = None,
        label: str | None = None,
        origin: Origin | None = None,
        framework: dict[str, str] | None = None,
        trace_path: str | None = None,
    ) -> StoredRun:
        """Add a run.

        Parameters:
            report: its report (gpuprofile.report/1).
            digest: its diff digest (report/diff_side.py ``digest``).
            run_id: the id to give it (``new_id()``); None: a new one.
            label: a name to find it by (``gpuprofile diff before after``).
            origin: where it came from.
            framework: versions the trace recorded ({"torch": ..., "cuda": ...}).
            trace_path: where its trace was kept, if it was.

        Returns:
            The StoredRun.

        Raises:
            HistoryError: the store is damaged, not a gpuprofile store, or stays locked.
        """
        framework = framework or {}
        origin = origin or Origin()
        summary = run_summary(report, digest)
        hints = hint_rows(report)
        run_id = run_id or self.new_id()
        row = (
            run_id,
            time.time(),
            label,
            origin.notebook,
            origin.cell_id,
            origin.script,
            origin.code_hash,
            origin.git_commit,
            summary.get("device"),
            framework.get("torch"),
            framework.get("cuda"),
            json.dumps(summary),
            json.dumps(hints),
            _pack(report_json(report)),
            _pack(digest),
            trace_path,
        )
        self._write(
            lambda db: db.execute(f"INSERT INTO runs VALUES ({', '.join('?' * len(row))})", row)
        )
        return self._run((*row[:13], trace_path))

    def runs(self, limit: int | None = None) -> list[StoredRun]:
        """The runs, newest first; at most ``limit`` (None: all)."""
        if not self.path.exists():
            return []
        with self._connection() as db:
            rows = db.execute(
                f"SELECT {_LISTED} FROM runs ORDER BY time DESC, rowid DESC LIMIT ?",
                (-1 if limit is None else limit,),
            ).fetchall()
        return [self._run(r) for r in rows]

    def get(self, ref: str) -> StoredRun:
        """The run ``ref`` names: ``last`` (the newest), an id or a unique prefix of one (4+
        hex digits), or a label (its newest run).

        Raises:
            HistoryError: no run, or a prefix that names several.
        """
        if not self.path.exists():
            raise HistoryError(f"{ref!r}: no runs recorded yet (history {self.path})")
        with self._connection() as db:
            if ref == LAST:
                rows = db.execute(
                    f"SELECT {_LISTED} FROM runs ORDER BY time DESC, rowid DESC LIMIT 1"
                ).fetchall()
                if not rows:
                    raise HistoryError(f"'last': no runs recorded yet (history {self.path})")
                return self._run(rows[0])
            rows = db.execute(f"SELECT {_LISTED} FROM runs WHERE id = ?", (ref,)).fetchall()
            if not rows:
                rows = db.execute(
                    f"SELECT {_LISTED} FROM runs WHERE label = ? "
                    "ORDER BY time DESC, rowid DESC LIMIT 1",
                    (ref,),
                ).fetchall()
            if not rows and len(ref) >= MIN_PREFIX and _is_hex(ref):
                rows = db.execute(
                    f"SELECT {_LISTED} FROM runs WHERE id LIKE ? LIMIT 3",
                    (ref + "%",),  # hex digits only: nothing to escape; LIKE ignores case
                ).fetchall()
                if len(rows) > 1:
                    ids = ", ".join(r[0] for r in rows)
                    raise HistoryError(f"{ref!r} is the start of several run ids ({ids}...)")
        if not rows:
            raise HistoryError(
                f"{ref!r} is no run id, label or trace path (history {self.path}; "
                "`gpuprofile history` lists the runs)"
            )
        return self._run(rows[0])

    def prune(self, keep: int) -> int:
        """Delete all but the ``keep`` newest runs, and their kept traces.

        Returns:
            How many runs were deleted.
        """
        if keep < 0:
            raise HistoryError(f"--keep {keep}: expected 0 or more runs to keep")
        if not self.path.exists():
            return 0

        def prune(db: sqlite3.Connection) -> list[Any]:
            doomed = db.execute(
                "SELECT id, trace_path FROM runs ORDER BY time DESC, rowid DESC LIMIT -1 OFFSET ?",
                (keep,),
            ).fetchall()
            db.executemany("DELETE FROM runs WHERE id = ?", [(d[0],) for d in doomed])
            return doomed

        doomed = self._write(prune)
        for _, trace in doomed:
            if trace:
                with contextlib.suppress(OSError):
                    Path(trace).unlink()
        return len(doomed)

    def _blob(self, run_id: str, column: str) -> dict[str, Any]:
        try:
            value: dict[str, Any] = json.loads(self._json(run_id, column))
        except ValueError as error:
            raise self._damaged(f"run {run_id}'s {column} cannot be read ({error})") from None
        return value

    def _report(self, run_id: str) -> Report:
        try:
            return decode_report(self._json(run_id, "report"))
        except msgspec.ValidationError as error:
            raise HistoryError(
                f"run {run_id}'s report is not gpuprofile.report/1 as this version reads it "
                f"({error})"
            ) from None
        except msgspec.DecodeError as error:
            raise self._damaged(f"run {run_id}'s report cannot be read ({error})") from None

    def _json(self, run_id: str, column: str) -> bytes:
        """The JSON text of a run's report or digest, as stored (compressed)."""
        with self._connection() as db:
            row = db.execute(f"SELECT {column} FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            raise HistoryError(f"run {run_id} is no longer in the history {self.path}")
        try:
            return zlib.decompress(row[0])
        except zlib.error as error:
            raise self._damaged(f"run {run_id}'s {column} cannot be read ({error})") from None

    def _run(self, row: tuple[Any, ...]) -> StoredRun:
        try:
            summary, hints = json.loads(row[11]), json.loads(row[12])
        except ValueError as error:
            raise self._damaged(f"run {row[0]}'s summary cannot be read ({error})") from None
        return StoredRun(
            id=row[0],
            time=row[1],
            label=row[2],
            origin=Origin(*row[3:8]),
            device=row[8],
            torch_version=row[9],
            cuda_version=row[10],
            summary=summary,
            hints=hints,
            trace_path=row[13],
            history=self,
        )

    def _write(self, change: Callable[[sqlite3.Connection], T]) -> T:
        """``change`` in one write transaction, tried again while the store is busy, until
        ``BUSY_TIMEOUT_S`` has passed. SQLite's own wait covers a writer holding the lock, but
        not every busy moment of processes opening and closing the store at once (a WAL being
        checkpointed and removed as one closes while another opens): those fail at once."""
        deadline = time.monotonic() + BUSY_TIMEOUT_S
        pause = 0.01
        while True:
            try:
                with self._connection(write=True) as db:
                    return change(db)
            except _Busy:
                if time.monotonic() + pause > deadline:
                    raise
                time.sleep(pause)
                pause = min(pause * 2, 0.5)

    @contextlib.contextmanager
    def _connection(self, *, write: bool = False) -> Iterator[sqlite3.Connection]:
        if write:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as error:
                raise HistoryError(f"cannot make the history's folder: {error}") from None
        try:
            db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        except sqlite3.Error as error:
            raise HistoryError(f"{self.path}: cannot open the history ({error})") from None
        try:
            self._prepare(db)
            if write:
                db.execute("BEGIN IMMEDIATE")
            yield db
            if write:
                db.execute("COMMIT")
        except sqlite3.OperationalError as error:
            if "locked" in str(error) or "busy" in str(error):
                raise _Busy(
                    f"{self.path}: the history stayed locked for {BUSY_TIMEOUT_S:.0f} s by "
                    "another process; try again"
                ) from None
            raise self._damaged(str(error)) from None
        except sqlite3.DatabaseError as error:
            raise self._damaged(str(error)) from None
        finally:
            if db.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    db.execute("ROLLBACK")
            db.close()

    def _prepare(self, db: sqlite3.Connection) -> None:
        """WAL, and the table, made once; a store written by another program or a newer
        gpuprofile is refused."""
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if version == SCHEMA_VERSION:
            return
        if version > SCHEMA_VERSION:
            raise HistoryError(
                f"{self.path}: written by a newer gpuprofile (store version {version}); "
                f"upgrade gpuprofile, or set GPUPROFILE_HISTORY to another file"
            )
        tables = db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
        if tables and ("runs",) not in tables:
            raise HistoryError(
                f"{self.path}: a SQLite file, but not a gpuprofile history; set "
                "GPUPROFILE_HISTORY to another file"
            )
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("BEGIN IMMEDIATE")  # two first writers at once: the second waits, then finds it
        for statement in _CREATE.split(";"):
            if statement.strip():
                db.execute(statement)
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        db.execute("COMMIT")

    def _damaged(self, problem: str) -> HistoryError:
        return HistoryError(
            f"{self.path}: the history is damaged ({problem}). Move it aside (mv '{self.path}' "
            f"'{self.path}.bad'): gpuprofile starts a new one; `sqlite3 '{self.path}.bad' "
            ".recover | sqlite3 recovered.sqlite` may save its runs"
        )


class _Busy(HistoryError):
    """The store stayed locked (or was busy) past what SQLite waits."""


def open_history(path: str | Path | None = None) -> History | None:
    """The history at ``path``; None: where ``history_path()`` says (None when it is off)."""
    chosen = Path(path) if path is not None else history_path()
    return History(chosen) if chosen is not None else None


def _pack(document: dict[str, Any]) -> bytes:
    return zlib.compress(json.dumps(document, separators=(",", ":")).encode(), 6)


def _is_hex(text: str) -> bool:
    return all(c in "0123456789abcdefABCDEF" for c in text)
