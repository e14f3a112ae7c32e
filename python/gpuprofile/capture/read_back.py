"""A torch.profiler capture read as a Trace.

The capture is exported as a Chrome trace and read back by the Kineto importer, so a profile
made here and a trace shared by someone else go through exactly the same analysis.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from torch.profiler import profile as torch_profile

from gpuprofile.importers.kineto import load_kineto
from gpuprofile.trace.meta import RankMeta, Source, TraceMeta
from gpuprofile.trace.model import Trace


def read_back(prof: torch_profile, export: str | None) -> Trace:
    """The profiler's capture as a Trace, through the Chrome trace written to ``export`` (the
    path the user asked for, kept as its source), or to a temporary file when None."""
    if export:
        trace = _export_and_load(prof, Path(export))
    else:
        with tempfile.TemporaryDirectory(prefix="gpuprofile-") as tmp:
            trace = _export_and_load(prof, Path(tmp) / "capture.pt.trace.json")
    return trace.with_meta(source=Source(format="capture", path=export))


def empty_capture(started_ns: int) -> Trace:
    """No window was recorded (fewer steps than wait + warmup): a trace with no events."""
    return Trace(
        meta=TraceMeta(
            source=Source(format="capture"),
            origin_ns=started_ns,
            ranks={0: RankMeta()},
        )
    )


def _export_and_load(prof: torch_profile, path: Path) -> Trace:
    prof.export_chrome_trace(str(path))
    _release_results(prof)
    return load_kineto(path)


def _release_results(prof: torch_profile) -> None:
    """Let torch's in-memory results go once written: a torch profile sits in reference
    cycles (its action map holds its own bound methods), so they would otherwise be freed by
    whichever garbage collection comes next: 0.2-0.5 s for 10^5 events, inside the report
    being built or the user's next cell."""
    inner = getattr(prof, "profiler", None)
    if inner is not None and hasattr(inner, "kineto_results"):
        inner.kineto_results = None
