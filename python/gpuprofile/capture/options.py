"""The capture's options, written once.

``OPTIONS`` gives ``%%gpuprofile`` its arguments, ``gpuprofile.profile()`` the documentation of
its parameters and the README its table of options; ``CaptureOptions`` is the one place their
values are checked. No torch here: the magic reads this module to build its arguments.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuprofile.errors import OptionError
from gpuprofile.hardware.model import Hardware

# Steps of warmup before each recorded window: the first traced step carries the profiler's own
# start-up (Kineto/CUPTI activation, first-call allocations), which would inflate the first
# recorded step; torch warns that warmup=0 "can skew profiler results".
WARMUP = 1
# (wait, active, repeat) as checked; repeat 0 means until the capture ends.
StepSchedule = tuple[int, int, int]


def parse_steps(text: str) -> tuple[int, ...]:
    """``"WAIT,ACTIVE[,REPEAT]"`` as numbers (checked by CaptureOptions)."""
    parts = [p.strip() for p in text.split(",")]
    if len(parts) not in (2, 3) or not all(p.isdigit() for p in parts):
        raise OptionError("steps", text, "expected WAIT,ACTIVE[,REPEAT] as whole numbers")
    return tuple(int(p) for p in parts)


def _number(name: str, text: str, *, kind: type[int] | type[float]) -> Any:
    try:
        return kind(text)
    except ValueError:
        raise OptionError(
            name, text, f"expected {'a whole' if kind is int else 'a'} number"
        ) from None


@dataclass(frozen=True)
class Option:
    """One option, in both spellings: ``name`` (a keyword of ``gpuprofile.profile()``, a field
    of ``CaptureOptions``) and ``flag`` (``%%gpuprofile``'s). A switch (no ``metavar``) sets the
    opposite of its default."""

    name: str
    flag: str
    metavar: str | None
    help: str  # what setting it does, in the words of both spellings
    # The flag's text as a value (checked by CaptureOptions); raises OptionError.
    parse: Callable[[str], Any] = str

    @property
    def default(self) -> Any:
        return CaptureOptions.__dataclass_fields__[self.name].default


OPTIONS: tuple[Option, ...] = (
    Option(
        "profile_memory",
        "--memory",
        None,
        "record allocator events: memory by category and module, the peak, an out-of-memory "
        "post-mortem; on CUDA the allocator's snapshot too",
    ),
    Option("with_stack", "--stack", None, "record Python stacks (about 2x overhead)"),
    Option("record_shapes", "--no-shapes", None, "do not record input shapes (no FLOPs then)"),
    Option(
        "modules",
        "--no-modules",
        None,
        "do not record nn.Module calls (no time per module then; a call costs 8-25 us on a "
        "CPU); with --stack torch records them itself",
    ),
    Option(
        "export",
        "--export",
        "PATH",
        "also write the capture as a Chrome trace (.json or .json.gz) with the gauge "
        "readings; Perfetto and HTA open it, gpuprofile.load reads it back",
    ),
    Option(
        "hardware",
        "--hardware",
        "NAME",
        "the roofs to measure against: a Hardware (in the magic, the name of a variable "
        "holding one: hw = gpuprofile.calibrate()); none: the device's datasheet",
    ),
    Option(
        "interval",
        "--interval",
        "SECONDS",
        "seconds between gauge readings (GPU and memory use, power, process CPU); 0: none",
        functools.partial(_number, "interval", kind=float),
    ),
    Option(
        "steps",
        "--steps",
        "WAIT,ACTIVE[,REPEAT]",
        "record only some steps (gpuprofile.step() or optimizer.step() calls): skip WAIT, warm "
        "up 1, record ACTIVE; REPEAT times (0: until the end); windows show while it runs",
        parse_steps,
    ),
    Option(
        "max_events",
        "--max-events",
        "N",
        "with steps: once the kept windows hold more than N events, later ones are dropped "
        "(none: min(5 M, available memory / 2 KB))",
        functools.partial(_number, "max_events", kind=int),
    ),
    Option(
        "distributed",
        "--distributed",
        None,
        "record every rank of the torch.distributed job (each runs the block; call it on all "
        "ranks): rank 0's profile covers all ranks, the others' their own; export then names "
        "a folder, where each rank writes rank{R}.json.gz",
    ),
)


@dataclass(frozen=True)
class CaptureOptions:
    """What to record, checked before the profiled code runs: a minutes-long cell must not end
    in an error the options already held. Raises ``OptionError`` naming the option."""

    profile_memory: bool = False
    with_stack: bool = False
    record_shapes: bool = True
    # Each nn.Module call as a range (capture/modules.py).
    modules: bool = True
    export: str | None = None
    hardware: Hardware | None = None
    interval: float = 0.1
    # (wait, active) or (wait, active, repeat): a torch.profiler schedule, each recorded window
    # read apart; held as (wait, active, repeat).
    steps: tuple[int, ...] | None = None
    max_events: int | None = None
    # Every rank of the torch.distributed job records; rank 0 gathers (capture/distributed.py).
    distributed: bool = False

    def __post_init__(self) -> None:
        if self.export is not None:
            object.__setattr__(self, "export", os.fspath(self.export))
            folder = Path(self.export).parent
            if self.distributed:
                # The rank's folder, or the one it is made in (each rank makes its own: no
                # shared file system is assumed).
                _check_export_folder(Path(self.export))
                folder = Path(self.export) if Path(self.export).is_dir() else folder
            if not folder.is_dir():
                raise OptionError("export", self.export, f"there is no folder {folder}")
            if not os.access(folder, os.W_OK):
                raise OptionError("export", self.export, f"folder {folder} is not writable")
        if self.hardware is not None and not isinstance(self.hardware, Hardware):
            raise OptionError(
                "hardware",
                self.hardware,
                f"expected a gpuprofile Hardware, got {type(self.hardware).__name__}",
            )
        if not isinstance(self.interval, int | float) or self.interval < 0:
            raise OptionError("interval", self.interval, "must be 0 (off) or positive seconds")
        object.__setattr__(self, "interval", float(self.interval))
        if self.steps is not None:
            object.__setattr__(self, "steps", _checked_steps(self.steps))
        if self.max_events is not None:
            if self.steps is None:
                raise OptionError(
                    "max_events",
                    self.max_events,
                    "applies to steps (whole windows are dropped); without steps every event "
                    "is recorded",
                )
            if self.max_events < 1:
                raise OptionError("max_events", self.max_events, "must be positive")

    def export_file(self, rank: int | None) -> str | None:
        """Where this capture's Chrome trace is written: ``export`` itself, or with
        ``distributed`` the rank's file in the ``export`` folder (None: not exported)."""
        if self.export is None or not self.distributed:
            return self.export
        return os.path.join(self.export, f"rank{rank}.json.gz")

    @property
    def module_ranges(self) -> bool:
        """Whether the capture's module wrapper runs (capture/modules.py). Not with
        ``with_stack``: torch then records each module call itself (``nn.Module: Class_N``),
        and its Python tracer would record the wrapper's own calls around each range, so the
        range would nest under the wrapper's frame, not around the module's work, at 5-10x the
        cost. A lighter hook names torch's events by path then (capture/module_names.py)."""
        return self.modules and not self.with_stack

    @property
    def schedule(self) -> StepSchedule | None:
        """(wait, active, repeat), or None when every step is recorded."""
        if self.steps is None:
            return None
        wait, active, repeat = self.steps
        return wait, active, repeat


def _check_export_folder(path: Path) -> None:
    """With ``distributed``, ``export`` names a folder (made when missing, in a folder that
    exists): a file name there would hold one rank of many."""
    if path.name.endswith((".json", ".json.gz")):
        raise OptionError(
            "export",
            str(path),
            "with distributed, export names a folder: each rank writes rank{R}.json.gz in it",
        )
    if path.exists() and not path.is_dir():
        raise OptionError("export", str(path), "is a file: with distributed, name a folder")


def _checked_steps(steps: Any) -> StepSchedule:
    try:
        values = tuple(int(s) for s in steps)
    except (TypeError, ValueError):
        values = ()
    if len(values) == 2:
        values = (*values, 0)
    if len(values) != 3:
        raise OptionError("steps", steps, "expected (WAIT, ACTIVE) or (WAIT, ACTIVE, REPEAT)")
    wait, active, repeat = values
    if wait < 0 or repeat < 0:
        raise OptionError("steps", steps, "WAIT and REPEAT must be 0 or more")
    if active < 1:
        raise OptionError("steps", steps, "ACTIVE (steps recorded per window) must be at least 1")
    return wait, active, repeat


def options_doc() -> str:
    """The options as ``gpuprofile.profile()``'s docstring lists them."""
    lines = []
    for option in OPTIONS:
        value = option.default if option.metavar else not option.default
        lines.append(f"    {option.name}: {option.help}" + _default_text(option, value))
    return "\n".join(lines)


def options_table() -> str:
    """The options as the README's markdown table (a test holds the README to it)."""
    rows = [
        "| `%%gpuprofile` | `profile()` | default | what it does |",
        "|---|---|---|---|",
    ]
    for option in OPTIONS:
        if option.metavar is None:
            flag, keyword, default = (
                f"`{option.flag}`",
                f"`{option.name}={not option.default}`",
                "off",
            )
        else:
            flag, keyword = f"`{option.flag} {option.metavar}`", f"`{option.name}=`"
            default = "-" if option.default is None else f"`{option.default}`"
        rows.append(f"| {flag} | {keyword} | {default} | {option.help} |")
    return "\n".join(rows)


def _default_text(option: Option, value: Any) -> str:
    if option.metavar is None:
        return f" (``{option.name}={value}``)"
    return f" (default {value!r})" if value is not None else ""
