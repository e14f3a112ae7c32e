"""A profile's tables as Parquet files and its TraceMeta as JSON, in one directory
(``Profile.to_parquet``; layout in docs/data.md)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import msgspec
import pandas as pd

from gpuprofile.errors import GpuprofileError
from gpuprofile.report.tables import readable
from gpuprofile.trace.model import SCHEMA, Trace

# Trace tables written as they are (made readable), beside the kernels, ops and copies frames.
RAW_TABLES = ("memset", "runtime", "counters")
META_FILE = "meta.json"


def write_parquet(
    trace: Trace, frames: dict[str, pd.DataFrame], directory: str | os.PathLike[str]
) -> list[Path]:
    """Write ``frames`` (name -> DataFrame) and the trace's ``RAW_TABLES`` as ``NAME.parquet``,
    and the trace's meta as ``meta.json``, into ``directory`` (made if missing).

    Parameters:
        trace: the Trace whose raw tables and meta are written.
        frames: the user-facing frames (kernels, ops, copies) by file name.
        directory: where to write; existing files of the same names are replaced.

    Returns:
        The paths written, meta.json last.

    Raises:
        GpuprofileError: pyarrow is not installed, or the directory cannot be written.
    """
    if importlib.util.find_spec("pyarrow") is None:
        raise GpuprofileError(
            "writing Parquet needs pyarrow, which is not installed: "
            "pip install 'gpuprofile[parquet]'"
        )
    out = Path(directory)
    tables = dict(frames)
    for table in RAW_TABLES:
        tables[table] = readable(trace.table(table), SCHEMA[table])
    written: list[Path] = []
    try:
        out.mkdir(parents=True, exist_ok=True)
        for name, frame in tables.items():
            path = out / f"{name}.parquet"
            frame.to_parquet(path, engine="pyarrow", index=False)
            written.append(path)
        meta = out / META_FILE
        meta.write_bytes(msgspec.json.encode(trace.meta))
        written.append(meta)
    except OSError as exc:
        raise GpuprofileError(f"{out}: cannot write Parquet there: {exc.strerror or exc}") from exc
    return written
