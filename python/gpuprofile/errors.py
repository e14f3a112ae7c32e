"""Errors a user can act on: each names the file and, where known, the place in it."""

from __future__ import annotations


class GpuprofileError(Exception):
    """Base class of every error gpuprofile raises on purpose."""

    def _render_traceback_(self) -> list[str]:
        """What IPython and Jupyter show instead of a traceback: the error is in the user's
        input (a file, an option), and gpuprofile's call stack would bury the line that
        says what to change."""
        return [f"{type(self).__name__}: {self}"]


class TraceFormatError(GpuprofileError):
    """A trace file is missing, unreadable, or not the format it claims to be."""

    def __init__(self, path: object, problem: str) -> None:
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


class OptionError(GpuprofileError, ValueError):
    """An option of ``gpuprofile.profile()`` or ``%%gpuprofile`` cannot work, found before the
    profiled code runs; ``option`` is its keyword, ``value`` what was given."""

    def __init__(self, option: str, value: object, problem: str) -> None:
        self.option = option
        self.value = value
        self.problem = problem
        super().__init__(f"{option}={value!r}: {problem}")


class ProfilerBusyError(GpuprofileError):
    """Another torch.profiler session is already recording in this process."""

    @classmethod
    def running(cls) -> ProfilerBusyError:
        return cls(
            "a torch.profiler session is already recording in this process (a nested "
            "%%gpuprofile, or your own torch.profiler.profile); stop it first"
        )

    @classmethod
    def inside(cls) -> ProfilerBusyError:
        return cls(
            "gpuprofile is recording this block, and torch records with one profiler at a time: "
            "a torch.profiler started inside it would end gpuprofile's recording. Remove it "
            "from the block, or run the block without gpuprofile"
        )


class WorkerError(GpuprofileError):
    """Worker processes or a Dask cluster could not do the per-rank work: a worker died, or the
    scheduler cannot be reached or has no workers."""


class HistoryError(GpuprofileError):
    """The history store cannot be read or written (damaged, locked, not a gpuprofile store),
    or a run reference names no run in it."""


def failure_text(error: BaseException, limit: int = 2000) -> str:
    """An exception as one line of text, "Type: message", cut at ``limit`` characters: how a
    capture and a sweep keep the error that ended the code."""
    return f"{type(error).__name__}: {error}"[:limit]
