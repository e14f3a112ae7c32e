"""%%gpuprofile: run a cell exactly as it would run, under the profiler, then show what it found."""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display

from gpuprofile.errors import ProfilerBusyError
from gpuprofile.hardware.model import Hardware
from gpuprofile.result import Profile, in_kernel, remember


@magics_class
class GpuprofileMagics(Magics):
    @magic_arguments()
    @argument("--memory", action="store_true", help="record allocator events (profile_memory)")
    @argument("--stack", action="store_true", help="record Python stacks (with_stack; ~2x slower)")
    @argument("--no-shapes", action="store_true", help="do not record input shapes")
    @argument("--export", metavar="PATH", help="also write a Chrome trace (Perfetto, HTA)")
    @argument(
        "--interval",
        metavar="SECONDS",
        type=float,
        default=0.1,
        help="seconds between gauge samples (GPU, CPU, memory); 0 disables (default 0.1)",
    )
    @argument(
        "--steps",
        metavar="WAIT,ACTIVE[,REPEAT]",
        help="record only some steps (gpuprofile.step() or optimizer.step()): skip WAIT, warm "
        "up 1, record ACTIVE, REPEAT times (default 0: until the cell ends); each recorded "
        "window reaches the widget while the cell runs",
    )
    @argument(
        "--max-events",
        metavar="N",
        type=int,
        default=None,
        help="with --steps: drop later windows once N timeline events are kept "
        "(default: min(5 M, available memory / 2 KB))",
    )
    @argument(
        "--hardware",
        metavar="NAME",
        help="a variable holding the roofs to use, e.g. hw = gpuprofile.calibrate()",
    )
    @cell_magic
    def gpuprofile(self, line: str, cell: str) -> None:
        """Profile this cell with torch.profiler (CPU, and CUDA where present).

        The cell runs in the notebook's namespace as it would without the magic; its
        exceptions propagate with their own traceback after the profiler has stopped. The
        widget and a plain-text report are displayed; ``gpuprofile.last()`` returns the Profile.
        """
        from gpuprofile.capture.session import CaptureOptions, capture, profiler_running
        from gpuprofile.capture.steps import parse_steps

        args = parse_argstring(self.gpuprofile, line)
        if args.interval < 0:
            raise UsageError(f"--interval {args.interval}: must be 0 (off) or positive")
        try:
            steps = parse_steps(args.steps) if args.steps is not None else None
        except ValueError as error:
            raise UsageError(str(error)) from None
        if args.max_events is not None and args.max_events < 1:
            raise UsageError(f"--max-events {args.max_events}: must be positive")
        try:
            options = CaptureOptions(
                record_shapes=not args.no_shapes,
                profile_memory=args.memory,
                with_stack=args.stack,
                export=args.export,
                interval_s=args.interval or None,
                steps=steps,
                max_events=args.max_events,
            )
        except ValueError as error:
            raise UsageError(str(error)) from None
        if profiler_running():
            # One clear line, not a traceback; the cell does not run.
            raise UsageError(str(ProfilerBusyError.running()))
        shell: Any = self.shell
        hardware = _hardware_variable(shell, args.hardware)
        code = shell.transform_cell(cell)
        # IPython has already counted this cell: name it as its prompt shows (In [N]).
        filename = shell.compile.cache(code, max(shell.execution_count - 1, 0))
        compiled = shell.compile(code, filename, "exec")
        result = Profile(hardware=hardware)
        # In a notebook the widget shows at once and its live panel moves while the cell runs;
        # a terminal gets the text report at the end.
        live = _LiveOutput(_cell_id(shell)) if in_kernel() else None
        # IPython leaves this frame out of tracebacks: the user sees their cell's own lines.
        __tracebackhide__ = True
        hooks = live.feed.hooks(hardware) if live is not None else {}
        try:
            with capture(options, result, **hooks):
                try:
                    exec(compiled, shell.user_ns)
                finally:
                    # Live refills stop before the profile is made: it replaces them.
                    if live is not None:
                        live.feed.cell_ended()
        finally:
            try:
                if result._trace is not None:
                    remember(result)
                    if live is not None:
                        live.become(result)
                    else:
                        display(result)
            finally:
                # Only now "finished": until the profile is in the widget, it is being built.
                if live is not None:
                    live.feed.finish()


# The widget each notebook cell showed last. ipywidgets keep a widget, and the profile it
# holds, alive until it is closed, long after a re-run replaced its output: a re-run of the
# cell closes the one before (34-134 MB a re-run otherwise, with profiles of 100-200k events).
_widget_of_cell: dict[str, Any] = {}


def _cell_id(shell: Any) -> str | None:
    """The running cell's id, which JupyterLab and Notebook 7 send with each execution."""
    parent = getattr(shell, "parent_header", None) or {}
    cell = (parent.get("metadata") or {}).get("cellId")
    return cell if isinstance(cell, str) else None


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
        self.handle: Any = display(self.feed.widget, display_id=True)

    def become(self, result: Profile) -> None:
        """The output becomes the profile's: the same widget, filled, plus the text report for
        notebooks read without widgets (nbconvert, CI logs)."""
        result.fill_widget(self.feed.widget)
        self.handle.update(result)


def _hardware_variable(shell: Any, name: str | None) -> Hardware | None:
    if name is None:
        return None
    value = shell.user_ns.get(name)
    if not isinstance(value, Hardware):
        raise UsageError(
            f"--hardware {name}: expected a gpuprofile Hardware, got {type(value).__name__}"
        )
    return value
