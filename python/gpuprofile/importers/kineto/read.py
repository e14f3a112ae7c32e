"""The Kineto reader's read stage: a job's trace files and their ranks, from a directory, a list
or a glob; ranks as the traces declare them, else as their file names say. Each file's text is
read by source.read_trace_bytes, which every format shares."""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Sequence
from pathlib import Path

from gpuprofile.errors import TraceFormatError
from gpuprofile.importers.source import reading
from gpuprofile.trace.model import Trace
from gpuprofile.units import format_time

# "rank3", "rank-3", "rank_3.json", "worker3_step_12...": the rank a file name gives.
DEFAULT_RANK_REGEX = r"(?:rank|worker)[-_]?(\d+)"
# Traces of one job are recorded within seconds of each other; further apart they are two runs.
SAME_JOB_WITHIN_NS = 3600 * 10**9
_GLOB = re.compile(r"[*?\[]")
TRACE_SUFFIXES = (".json", ".json.gz")


def job_files(path: str | Path | Sequence[str | Path]) -> tuple[list[Path], str | None]:
    """(the files, the job's path as given: a directory or pattern, None for one file)."""
    if isinstance(path, str | Path):
        text = str(path)
        if not Path(text).exists() and _GLOB.search(text):
            found = sorted(Path(p) for p in glob.glob(text) if Path(p).is_file())
            if not found:
                raise TraceFormatError(Path(text), "the pattern matches no file")
            return found, text
        single = Path(text)
        if single.is_dir():
            return trace_files(single), text
        return [single], None
    files = [Path(p) for p in path]
    if not files:
        raise TraceFormatError(Path("."), "no trace files given")
    for file in files:
        if file.is_dir():
            raise TraceFormatError(file, "is a directory: give the directory alone, or its files")
    return files, None if len(files) == 1 else ", ".join(str(f) for f in files)


def job_ranks(
    files: Sequence[Path], declared: Sequence[int | None], rank_regex: str | None
) -> tuple[list[int], list[str]]:
    """The rank of each file, and notices about how ranks were chosen."""
    try:
        pattern = re.compile(rank_regex or DEFAULT_RANK_REGEX, re.IGNORECASE)
    except re.error as exc:
        raise TraceFormatError(
            Path(rank_regex or ""), f"--rank-regex is not valid: {exc}"
        ) from None
    if rank_regex is not None and pattern.groups != 1:
        raise TraceFormatError(
            Path(rank_regex), "--rank-regex needs exactly one group (the rank's digits)"
        )
    ranks: list[int | None] = []
    sources: list[str] = []  # where each file's rank comes from: its trace, its name, or none
    for file, rank in zip(files, declared, strict=True):
        source = "its trace (distributedInfo.rank)"
        if rank is None:
            match = pattern.search(file.name)
            digits = match.group(1) if match else ""
            # A rank of more than 7 digits is no rank (and would not fit the rank column).
            rank = int(digits) if digits.isdigit() and len(digits) < 8 else None
            source = "its name" if rank is not None else ""
        ranks.append(rank)
        sources.append(source)
    seen: dict[int, int] = {}
    for i, rank in enumerate(ranks):
        if rank is None:
            continue
        if rank in seen:
            j = seen[rank]
            said = (
                ""
                if sources[i] == sources[j]
                else f" ({files[j].name} by {sources[j]}, {files[i].name} by {sources[i]})"
            )
            raise TraceFormatError(
                files[i], f"rank {rank} appears twice: {files[j].name} and {files[i].name}{said}"
            )
        seen[rank] = i
    notes = []
    mixed = None in declared and any(r is not None for r in declared)
    named = [
        (f, r) for f, r, d, s in zip(files, ranks, declared, sources, strict=True)
        if d is None and s == "its name"
    ]  # fmt: skip
    if mixed and named:
        notes.append(
            "rank of "
            + ", ".join(f"{f.name} (rank {r})" for f, r in named)
            + " taken from its file name: its trace declares none (distributedInfo.rank), "
            "while the other files' traces do"
        )
    free = (r for r in range(len(files) + len(seen)) if r not in seen)
    unnamed = [file for file, rank in zip(files, ranks, strict=True) if rank is None]
    chosen = []
    for rank in ranks:
        chosen.append(rank if rank is not None else next(free))
    if unnamed:
        given = [r for f, r in zip(files, chosen, strict=True) if f in unnamed]
        notes.append(
            "rank of "
            + ", ".join(f"{f.name} (rank {r})" for f, r in zip(unnamed, given, strict=True))
            + " taken from file order: neither its trace nor its name says it (--rank-regex)"
        )
    return chosen, notes


def same_job(files: Sequence[Path], traces: Sequence[Trace]) -> None:
    """Raise when the traces cannot be one job: they declare different world sizes, or (where
    every one has a base time) they were recorded over an hour apart."""
    sizes: dict[int, Path] = {}
    for file, trace in zip(files, traces, strict=True):
        for facts in trace.meta.ranks.values():
            size = (facts.distributed or {}).get("world_size")
            if isinstance(size, int) and not isinstance(size, bool):
                sizes.setdefault(size, file)
    if len(sizes) > 1:
        described = ", ".join(f"{f.name} says {s}" for s, f in sorted(sizes.items()))
        raise TraceFormatError(
            files[0].parent, f"traces of different jobs: their world sizes differ ({described})"
        )
    bases = [facts.base_time_ns for t in traces for facts in t.meta.ranks.values()]
    if all(b is not None for b in bases) and traces:
        origins = [t.meta.origin_ns for t in traces]
        first, last = origins.index(min(origins)), origins.index(max(origins))
        if origins[last] - origins[first] > SAME_JOB_WITHIN_NS:
            apart = format_time(origins[last] - origins[first])
            raise TraceFormatError(
                files[0].parent,
                f"traces of different runs: {files[first].name} and {files[last].name} were "
                f"recorded {apart} apart",
            )


def trace_files(directory: Path) -> list[Path]:
    """The trace files in a directory (one per rank), sorted by name: every entry named like
    one but a directory, so that a FIFO or a link to nowhere among them is refused by name
    when read, not passed over."""
    with reading(directory):
        entries = list(os.scandir(directory))
        files = sorted(
            Path(e.path) for e in entries if e.name.endswith(TRACE_SUFFIXES) and not e.is_dir()
        )
    if not files:
        raise TraceFormatError(directory, "directory holds no trace files (*.json, *.json.gz)")
    return files
