"""%%gpuprofile: run a cell exactly as it would run, under the profiler, then show what it found."""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display

from gpuprofile.capture.options import OPTIONS, CaptureOptions
from gpuprofile.errors import GpuprofileError, OptionError, ProfilerBusyError
from gpuprofile.profiles import (
    Profile,
    in_kernel,
    record,
    remember,
    resolve_side,
    snapshot_output,
    widget_output,
)
from gpuprofile.report.diff_side import DiffSide
from gpuprofile.store.origin import cell_id, cell_origin

_FLAGS = {option.name: option.flag for option in OPTIONS}


def _with_options(func: Any) -> Any:
    """The magic's arguments, one per row of the options table, in its order, then the
    history's (how the run is recorded) and --baseline."""
    func = argument(
        "--keep-trace",
        dest="keep_trace",
        action="store_true",
        help="keep the trace in the history too, so gpuprofile.show(RUN) brings the timeline back",
    )(func)
    func = argument(
        "--label",
        dest="label",
        metavar="NAME",
        default=None,
        help="record the run in the history under NAME (gpuprofile diff NAME other)",
    )(func)
    func = argument(
        "--at",
        metavar="V",
        default=None,
        help="with --sweep: project the fitted growth to NAME=V",
    )(func)
    func = argument(
        "--warmup",
        metavar="N",
        default=None,
        help="with --sweep: unprofiled runs of the cell per value first (default 1)",
    )(func)
    func = argument(
        "--repeat",
        metavar="N",
        default=None,
        help="with --sweep: profiled runs per value (default 3)",
    )(func)
    func = argument(
        "--sweep",
        metavar="NAME=V1,V2,...",
        default=None,
        help="run the cell with NAME bound to each value, profiled, and fit how each module's "
        "time, FLOPs and memory grow with it (gpuprofile.sweep)",
    )(func)
    func = argument(
        "--baseline",
        metavar="REF",
        default=None,
        help="compare with this run (a label, run id or last of the history, or a trace path): "
        "the profile shows the diff beside it",
    )(func)
    for option in reversed(OPTIONS):  # argument decorators apply innermost first
        if option.metavar is None:
            func = argument(
                option.flag,
                dest=option.name,
                action="store_const",
                const=not option.default,
                default=option.default,
                help=option.help,
            )(func)
        else:
            default = f" (default {option.default})" if option.default is not None else ""
            func = argument(
                option.flag,
                dest=option.name,
                metavar=option.metavar,
                default=None,
                help=option.help + default,
            )(func)
    return magic_arguments()(func)


@magics_class
class GpuprofileMagics(Magics):
    @line_magic
    def gpuprofile_doctor(self, line: str) -> None:
        """Check this machine and kernel for profiling (``gpuprofile doctor``): one line per
        check, with what to fix."""
        from gpuprofile.doctor import render_text, run_checks

        if line.strip():
            raise UsageError(f"%gpuprofile_doctor takes no arguments, not {line.strip()!r}")
        print(render_text(run_checks()))

    @cell_magic
    @_with_options
    def gpuprofile(self, line: str, cell: str) -> None:
        """Profile this cell with torch.profiler (CPU, and CUDA where present).

        The cell runs in the notebook's namespace as it would without the magic; its
        exceptions propagate with their own traceback after the profiler has stopped. The
        widget and a plain-text report are displayed; ``gpuprofile.last()`` returns the Profile.
        """
        from gpuprofile.capture.guard import profiler_running
        from gpuprofile.capture.session import capture

        shell: Any = self.shell
        args = parse_argstring(self.gpuprofile, line)
        options = _options(args, shell.user_ns)
        baseline = _baseline(args.baseline)
        if profiler_running():
            # One clear line, not a traceback; the cell does not run.
            raise _refused()
        if options.distributed:
            _require_job()
        code = shell.transform_cell(cell)
        # IPython has already counted this cell: name it as its prompt shows (In [N]).
        filename = shell.compile.cache(code, max(shell.execution_count - 1, 0))
        compiled = shell.compile(code, filename, "exec")
        if args.sweep is not None:
            display(_run_sweep(args, options, compiled, shell.user_ns))
            return
        # In a notebook the widget shows at once and its live panel moves while the cell runs;
        # a terminal gets the text report at the end.
        live = _LiveOutput(cell_id(shell)) if in_kernel() else None
        # IPython leaves this frame out of tracebacks: the user sees their cell's own lines.
        __tracebackhide__ = True
        hooks = live.feed.hooks(options.hardware) if live is not None else {}
        recording = None
        nested = False
        try:
            with capture(options, **hooks) as recording:
                try:
                    exec(compiled, shell.user_ns)
                except UsageError as error:
                    # A %%gpuprofile inside this cell, refused: the cell is this one line of
                    # error, not a profile of nothing marked PARTIAL.
                    nested = getattr(error, _REFUSED, False)
                    raise
                finally:
                    # Live refills stop before the profile is made: it replaces them.
                    if live is not None:
                        live.feed.cell_ended()
        finally:
            try:
                if nested:
                    if live is not None:
                        live.withdraw()
                elif recording is not None and recording.done:
                    result = Profile(recording.trace, hardware=options.hardware, baseline=baseline)
                    remember(result)
                    origin = cell_origin(shell, cell)
                    # Before it is shown: the snapshot names the run it was recorded as.
                    record(result, label=args.label, keep_trace=args.keep_trace, origin=origin)
                    if live is not None:
                        live.become(result)
                    else:
                        display(result)
            finally:
                # Only now "finished": until the profile is in the widget, it is being built.
                if live is not None:
                    live.feed.finish()


def _options(args: Any, namespace: dict[str, Any]) -> CaptureOptions:
    """The parsed arguments as CaptureOptions; a problem is one line naming the option as
    typed, raised before the cell runs."""
    typed: dict[str, str] = {}
    values: dict[str, Any] = {}
    try:
        for option in OPTIONS:
            given = getattr(args, option.name)
            if option.metavar is None:
                values[option.name] = given
            elif given is not None:
                typed[option.name] = given
                values[option.name] = option.parse(given)
        if "hardware" in values:
            name = values["hardware"]
            if name not in namespace:
                raise OptionError("hardware", name, f"there is no variable {name!r}")
            values["hardware"] = namespace[name]
        return CaptureOptions(**values)
    except OptionError as error:
        given = typed.get(error.option, error.value)
        raise UsageError(f"{_FLAGS[error.option]} {given}: {error.problem}") from None


def _run_sweep(args: Any, options: CaptureOptions, compiled: Any, namespace: dict[str, Any]) -> Any:
    """``--sweep NAME=V1,V2``: the cell run with NAME bound to each value (gpuprofile.sweep)."""
    from gpuprofile.profiles.sweep import sweep, sweep_options

    name, values = _sweep_values(args.sweep)
    try:
        counts = [_count(flag, given, least) for flag, given, least in (
            ("--repeat", args.repeat or "3", 1), ("--warmup", args.warmup or "1", 0),
        )]  # fmt: skip
        at = None if args.at is None else _number("--at", args.at)
        kwargs = sweep_options(options)
    except OptionError as error:
        raise UsageError(
            f"{_FLAGS.get(error.option, '--' + error.option)}: {error.problem}"
        ) from None

    def run(value: float) -> None:
        namespace[name] = int(value) if float(value).is_integer() else value
        exec(compiled, namespace)

    try:
        return sweep(
            run, values, name=name, repeat=counts[0], warmup=counts[1], at=at,
            label=args.label, **kwargs,
        )  # fmt: skip
    except OptionError as error:
        raise UsageError(f"--sweep {args.sweep}: {error.problem}") from None


def _sweep_values(text: str) -> tuple[str, list[float]]:
    name, sep, listed = text.partition("=")
    if not sep or not name.isidentifier():
        raise UsageError(f"--sweep {text}: expected NAME=V1,V2,... (NAME a Python name)")
    values = [_number("--sweep", v) for v in listed.split(",") if v.strip()]
    if len(set(values)) < 2:
        raise UsageError(f"--sweep {text}: two different values or more")
    return name, values


def _number(flag: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"{flag} {text}: not a number") from None
    if not (value > 0 and value != float("inf")):
        raise UsageError(f"{flag} {text}: a power law needs values above 0")
    return value


def _count(flag: str, text: str, least: int) -> int:
    if not text.isdigit() or int(text) < least:
        raise UsageError(f"{flag} {text}: a whole number, at least {least}")
    return int(text)


def _baseline(ref: str | None) -> DiffSide | None:
    """The --baseline run, read before the cell runs; one that cannot be is one line."""
    if ref is None:
        return None
    try:
        return resolve_side(ref)
    except GpuprofileError as error:
        # A path's error names it already ("PATH: no such file or directory").
        text = str(error)
        text = text if text.startswith(ref) else f"{ref}: {text}"
        raise UsageError(f"--baseline {text}") from None


def _require_job() -> None:
    """--distributed in a process that joined no torch.distributed job: one line, before the
    cell runs."""
    from gpuprofile.capture.distributed import require_job

    try:
        require_job()
    except OptionError as error:
        raise UsageError(f"{_FLAGS[error.option]}: {error.problem}") from None


_REFUSED = "gpuprofile_refused"


def _refused() -> UsageError:
    """%%gpuprofile refused because a profiler already records (a nested %%gpuprofile). A
    plain UsageError, marked: IPython prints only that exact class without a traceback."""
    error = UsageError(str(ProfilerBusyError.running()))
    setattr(error, _REFUSED, True)
    return error


# The widget each notebook cell showed last. ipywidgets keep a widget, and the profile it
# holds, alive until it is closed, long after a re-run replaced its output: a re-run of the
# cell closes the one before (34-134 MB a re-run otherwise, with profiles of 100-200k events).
_widget_of_cell: dict[str, Any] = {}


class _LiveOutput:
    """The running cell's widget, on screen from the start, fed by the sampler."""

    def __init__(self, cell: str | None) -> None:
        from gpuprofile.widget.live import LiveFeed
        from gpuprofile.widget.widget import ProfileWidget

        widget = ProfileWidget()
        if cell is not None:
            previous = _widget_of_cell.pop(cell, None)
            if previous is not None:
                previous.close()
            _widget_of_cell[cell] = widget
        self.feed = LiveFeed(widget)
        self.feed.start()
        # Shown as it will stay: become() fills this widget and never updates the output.
        data, metadata = widget_output(widget)
        self.handle: Any = display(data, metadata=metadata, raw=True, display_id=True)

    def withdraw(self) -> None:
        """Nothing to show after all: the widget goes, and the output with it."""
        self.feed.widget.close()
        self.handle.update({"text/plain": ""}, raw=True)

    def become(self, result: Profile) -> None:
        """The output becomes the profile's: the same widget, filled in the view on the page
        (the user's zoom and selection stay); then a second output, the static snapshot that a
        saved notebook keeps (naming the run the history recorded), with the text report for
        notebooks read without widgets (nbconvert, CI logs)."""
        result.fill_widget(self.feed.widget)
        snapshot, metadata = snapshot_output(result)
        display(snapshot, metadata=metadata, raw=True)
