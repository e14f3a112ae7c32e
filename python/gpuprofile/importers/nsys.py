"""Nsight Systems: a SQLite export (``nsys export --type sqlite``), a ``.nsys-rep`` / ``.qdrep``
report (exported with ``nsys`` when it is on PATH), or an ``nsys stats`` CSV (nsys_stats.py).

Both schema generations are read: 2.x (metadata in ``EXPORT_META_DATA``, no ``ENUM_*`` tables)
and 3.x (``META_DATA_EXPORT``, enums); tables and columns are looked up, never assumed
(nsys_schema.py). Each process that ran GPU work is a rank, numbered in process-id order:
nsys writes one file per node (or per rank under ``mpirun nsys``) and does not record MPI
ranks, so the process is the unit the file itself tells apart. A process that ran no GPU work
beside one that did is a helper of the program, not a rank (``_ranks``). See
docs/formats/nsys.md.
"""

from __future__ import annotations

import math
import shutil
import subprocess
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from gpuprofile.errors import TraceFormatError
from gpuprofile.importers.nsys_schema import NsysDatabase
from gpuprofile.importers.nsys_stats import load_nsys_stats
from gpuprofile.importers.nsys_tables import (
    KERNEL_TABLE,
    MEMCPY_TABLE,
    MEMSET_TABLE,
    NVTX_TABLE,
    RUNTIME_TABLE,
    SYNC_TABLE,
    Columns,
    kernel_columns,
    memcpy_columns,
    memset_columns,
    nvtx_columns,
    runtime_columns,
    thread_names,
)
from gpuprofile.trace.links import launching_ops, with_nesting
from gpuprofile.trace.meta import RankMeta, Source, TraceMeta
from gpuprofile.trace.model import NO_ID, SCHEMA, Trace, make_table

_SQLITE_MAGIC = b"SQLite format 3\x00"
# As formats.py tells them (not imported from there: formats imports this module).
NSYS_REPORT_SUFFIXES = (".nsys-rep", ".qdrep")
GPU_TABLE = "TARGET_INFO_GPU"
SESSION_TABLE = "TARGET_INFO_SESSION_START_TIME"
EXPORT_TIMEOUT_S = 600


def load_nsys(path: str | Path) -> Trace:
    """Read an Nsight Systems file into a Trace.

    Parameters:
        path: a SQLite export, a ``.nsys-rep`` / ``.qdrep`` report, or an ``nsys stats`` CSV.

    Returns:
        The Trace; ``meta.source.format`` is "nsys".

    Raises:
        TraceFormatError: the file is damaged, not an nsys export, or a report that cannot be
            exported here (the message says how to export it).
    """
    path = Path(path)
    try:
        with path.open("rb") as file:
            head = file.read(len(_SQLITE_MAGIC))
    except OSError as exc:
        raise TraceFormatError(path, f"cannot read: {exc.strerror or exc}") from None
    if head == _SQLITE_MAGIC:
        return load_nsys_sqlite(path)
    if path.name.lower().endswith(NSYS_REPORT_SUFFIXES):
        return _load_report(path)
    return load_nsys_stats(path)


def load_nsys_sqlite(path: Path, source_path: Path | None = None) -> Trace:
    """An nsys SQLite export as a Trace (``source_path``: the report it was exported from)."""
    with NsysDatabase(path) as db:
        metadata = db.metadata()
        skipped: Counter[str] = Counter()
        notes: list[str] = []
        parts: dict[str, tuple[Columns, np.ndarray]] = {}
        if KERNEL_TABLE in db.tables:
            parts["kernels"] = kernel_columns(db, skipped)
        if MEMCPY_TABLE in db.tables:
            parts["memcpy"] = memcpy_columns(db, skipped)
        if MEMSET_TABLE in db.tables:
            parts["memset"] = memset_columns(db, skipped)
        if RUNTIME_TABLE in db.tables:
            parts["runtime"] = runtime_columns(db, skipped)
        if NVTX_TABLE in db.tables:
            parts["ops"] = nvtx_columns(db, skipped)
        if synced := db.count(SYNC_TABLE):
            # The call that waited (cudaDeviceSynchronize ...) is in the runtime table with
            # the same correlation id and span; the record adds only which kind of wait it was.
            skipped["CUDA synchronization records (their calls are runtime calls)"] += synced
        if KERNEL_TABLE not in db.tables or not len(parts["kernels"][1]):
            notes.append(_no_kernels_note(KERNEL_TABLE in db.tables))
        devices = _devices(db)
        session_start = _session_start(db)
        names = thread_names(db)
        host = _capture_host(db)
    shown = source_path or path
    return _trace(parts, devices, names, skipped, notes, metadata, session_start, shown, host)


def _trace(
    parts: dict[str, tuple[Columns, np.ndarray]],
    devices: tuple[dict[str, Any], ...],
    names: dict[str, str],
    skipped: Counter[str],
    notes: list[str],
    metadata: dict[str, str],
    session_start: int,
    path: Path,
    host: str | None,
) -> Trace:
    pids = sorted({int(p) for _, pid in parts.values() for p in np.unique(pid)})
    rank_of = _ranks(pids, parts, notes)
    starts = [cols["start_ns"] for cols, _ in parts.values() if len(cols["start_ns"])]
    t0 = int(min(int(s.min()) for s in starts)) if starts else 0
    tables = {}
    for table, (columns, pid) in parts.items():
        rank = np.fromiter((rank_of[int(p)] for p in pid), np.int32, len(pid))
        numbered = {**columns, "start_ns": columns["start_ns"] - t0, "rank": rank}
        numbered["id"] = np.arange(len(pid), dtype=np.int64)
        tables[table] = make_table(table, {k: v for k, v in numbered.items() if k in SCHEMA[table]})
    if "ops" in tables:
        tables["ops"] = with_nesting(tables["ops"])
        if {"kernels", "runtime"} <= tables.keys():
            # torch's emit_nvtx ranges are its ops (category cpu_op, nsys_nvtx.py): a kernel's
            # launching op is the innermost one around its launch call. Without them (plain
            # NVTX ranges are user_annotation) no kernel gets one, as before.
            kernels = tables["kernels"]
            kernels["op_id"] = launching_ops(tables["ops"], tables["runtime"], kernels)
    schema = metadata.get("EXPORT_SCHEMA_VERSION")
    product = metadata.get("EXPORT_PRODUCT_VERSION")
    version = " ".join(p for p in (product, f"(schema {schema})" if schema else None) if p)
    ranks = {
        rank: RankMeta(
            devices=devices,
            thread_names={
                k: v for k, v in names.items() if rank_of.get(int(k.split("/")[0])) == rank
            },
            files=(str(path),),
            schema_version=schema,
            versions={"nsys": product} if product else {},
            skipped=dict(skipped) if rank == 0 else {},
            host_name=host,
        )
        for rank in sorted(set(rank_of.values()))
    }
    meta = TraceMeta(
        source=Source(format="nsys", version=version or None, path=str(path), files=(str(path),)),
        origin_ns=session_start + t0,
        ranks=ranks,
        notes=tuple(notes),
    )
    return Trace(**tables, meta=meta)


def _ranks(
    pids: list[int], parts: dict[str, tuple[Columns, np.ndarray]], notes: list[str]
) -> dict[int, int]:
    """Each process's rank. A process that ran GPU work (kernels, copies, sets) is a rank, in
    process-id order; one that ran none beside one that did is a helper of that program (a
    compile worker, a launcher, a DataLoader worker), not a rank of a job: its events join the
    rank of the nearest process id and keep their own pid. Without GPU work anywhere, each
    process is a rank."""
    if not pids:
        return {NO_ID: 0}
    gpu = sorted(
        {
            int(p)
            for table in ("kernels", "memcpy", "memset")
            if table in parts
            for p in np.unique(parts[table][1])
        }
    )
    ranked = gpu or pids
    rank_of = {pid: rank for rank, pid in enumerate(ranked)}
    helpers = [p for p in pids if p not in rank_of]
    for pid in helpers:
        rank_of[pid] = rank_of[min(ranked, key=lambda g: (abs(g - pid), g))]
    if len(ranked) > 1:
        shown = ", ".join(f"pid {pid} -> rank {rank_of[pid]}" for pid in ranked)
        notes.append(
            f"{len(ranked)} processes ran GPU work; each is read as a rank, in process-id "
            f"order ({shown}): nsys does not record MPI ranks."
        )
    if helpers:
        shown = ", ".join(f"pid {pid} (with rank {rank_of[pid]})" for pid in helpers)
        notes.append(
            f"{len(helpers)} {'process' if len(helpers) == 1 else 'processes'} ran no GPU work "
            f"beside {'the one' if len(ranked) == 1 else 'those'} that did: read as helpers of "
            f"the program, not ranks: {shown}."
        )
    return rank_of


def _no_kernels_note(has_table: bool) -> str:
    where = "holds no rows" if has_table else "is absent"
    return (
        f"The Nsight Systems export's kernel table ({KERNEL_TABLE}) {where}: no CUDA kernel "
        "was recorded (CUDA tracing off, or no kernel ran), so the GPU profile is empty."
    )


def _devices(db: NsysDatabase) -> tuple[dict[str, Any], ...]:
    """TARGET_INFO_GPU's GPUs, under the names hardware/match.py reads. Their own row is kept
    in ``properties``, except that ``clockRate`` is in kHz there, as CUDA's device properties
    give it (nsys writes Hz; the Hz value stays as ``clockRateHz``)."""
    if "name" not in db.columns(GPU_TABLE):
        return ()
    frame = db.frame(GPU_TABLE, db.columns(GPU_TABLE))
    devices = []
    for record in frame.to_dict("records"):
        props = {str(k): _plain(v) for k, v in record.items()}
        if props.get("clockRate") is not None:
            props["clockRateHz"] = props["clockRate"]
            hz = _whole(props["clockRate"])
            # An unreadable clock is left unknown: the device's other facts still stand.
            props["clockRate"] = None if hz is None else hz // 1000
        major, minor = props.get("computeMajor"), props.get("computeMinor")
        devices.append(
            {
                "id": props.get("id"),
                "name": props.get("name") or "",
                "memory_bytes": props.get("totalMemory"),
                "sm_count": props.get("smCount"),
                "compute_capability": None if major is None else f"{major}.{minor or 0}",
                "memory_bandwidth": props.get("memoryBandwidth"),
                "properties": props,
            }
        )
    return tuple(sorted(devices, key=lambda d: (d["id"] is None, d["id"] or 0)))


def _plain(value: Any) -> Any:
    """A value of a SQLite row as plain Python (NULL, read as NaN, is None)."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, np.generic):
        return value.item()
    return value


def _session_start(db: NsysDatabase) -> int:
    """The absolute (UTC epoch) time nsys's timestamps count from; 0 where not recorded."""
    if "utcEpochNs" not in db.columns(SESSION_TABLE):
        return 0
    frame = db.frame(SESSION_TABLE, ("utcEpochNs",))
    values = [v for v in map(_whole, frame["utcEpochNs"]) if v is not None]
    return values[0] if values else 0


def _whole(value: Any) -> int | None:
    """A SQLite cell as a non-negative int64, None where it is not one (NULL, text, damage)."""
    if isinstance(value, bool) or not isinstance(value, int | float | np.number):
        return None
    if not (math.isfinite(value) and 0 <= value < 2**63):
        return None
    return int(value)


def _capture_host(db: NsysDatabase) -> str | None:
    if not {"name", "value"} <= set(db.columns("META_DATA_CAPTURE")):
        return None
    frame = db.frame("META_DATA_CAPTURE", ("name", "value"))
    hosts = frame.loc[frame["name"] == "DEVICE_DISPLAY_NAME", "value"]
    return str(hosts.iloc[0]) if len(hosts) else None


def _load_report(path: Path) -> Trace:
    """A .nsys-rep / .qdrep: nsys's own binary report. Exported with ``nsys export`` when nsys
    is on PATH (into a temporary directory, removed after reading), else an error that says
    how to export it."""
    nsys = shutil.which("nsys")
    command = f"nsys export --type sqlite --output {path.stem}.sqlite {path.name}"
    if nsys is None:
        raise TraceFormatError(
            path,
            f"is an Nsight Systems report; export it with `{command}` and load the .sqlite "
            "(nsys is not on PATH here)",
        )
    with tempfile.TemporaryDirectory(prefix="gpuprofile-nsys-") as tmp:
        out = Path(tmp) / f"{path.stem}.sqlite"
        try:
            done = subprocess.run(
                [nsys, "export", "--type", "sqlite", "--output", str(out), str(path)],
                capture_output=True,
                text=True,
                timeout=EXPORT_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise TraceFormatError(
                path, f"`nsys export` did not finish in {EXPORT_TIMEOUT_S} s; run `{command}`"
            ) from None
        except OSError as exc:
            raise TraceFormatError(path, f"cannot run {nsys}: {exc}") from None
        if done.returncode != 0 or not out.exists():
            said = (done.stderr or done.stdout).strip().splitlines()
            why = said[-1] if said else f"exit status {done.returncode}, no file written"
            raise TraceFormatError(path, f"`nsys export --type sqlite` failed: {why}")
        return load_nsys_sqlite(out, source_path=path)
