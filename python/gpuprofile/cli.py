"""The command line: `gpuprofile report PATH`, `gpuprofile diff A B`, `gpuprofile check RUN
--baseline REF`, `gpuprofile history`, `gpuprofile demo`, `gpuprofile calibrate`,
`gpuprofile doctor`.

Exit status: 0 done; 1 `check` found a regression; 2 bad input or usage (one line on stderr
naming the file and the problem); 3 an internal error (one line naming the input, and where
its traceback was saved); 130 interrupted (Ctrl-C)."""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from pathlib import Path

from gpuprofile.errors import GpuprofileError
from gpuprofile.importers.source import MAX_BYTES_ENV, byte_limit, parse_size
from gpuprofile.profiles import Profile, resolve_side
from gpuprofile.units import format_bytes, format_count, printable

EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gpuprofile", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    report = commands.add_parser("report", help="analyse a trace file or a directory of ranks")
    report.add_argument(
        "path",
        nargs="+",
        help="Kineto / PyTorch profiler trace (.json, .json.gz); a job: a directory, its "
        "files, or a glob pattern (quoted)",
    )
    report.add_argument(
        "--rank-regex",
        metavar="REGEX",
        help="the rank in a file name, one group of digits, for traces that do not declare "
        "it (default: rank3, rank-3, worker3)",
    )
    report.add_argument(
        "--workers",
        metavar="N",
        type=_count,
        default=None,
        help="processes reading a job's ranks (default: the cores; small jobs: 1)",
    )
    report.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        default=None,
        help="read the ranks on this Dask scheduler (tcp://host:8786); needs gpuprofile[dask]",
    )
    report.add_argument(
        "--ncu",
        metavar="CSV",
        default=None,
        help="an Nsight Compute CSV (ncu --csv) of the same program: its measured FLOPs and "
        "DRAM bytes go to the trace's kernels of the same name, in launch order",
    )
    report.add_argument(
        "--export-trace",
        metavar="FILE",
        default=None,
        help="also write the trace as a Chrome / Perfetto trace (gzip when FILE ends in .gz): "
        "ranks as processes, streams as threads",
    )
    report.add_argument(
        "--html",
        metavar="FILE",
        default=None,
        help="also write a standalone HTML report (opens offline): summary, gauges, kernel "
        "timeline, roofline, hints",
    )
    report.add_argument(
        "--baseline",
        metavar="REF",
        default=None,
        help="compare with this run (a trace path, or a run id, label or last of the history): "
        "the report, text, JSON and HTML hold the diff against it",
    )
    report.add_argument(
        "--save",
        action="store_true",
        help="record the run in the history (gpuprofile history lists it)",
    )
    report.add_argument("--label", metavar="NAME", help="record it under NAME (implies --save)")
    report.add_argument(
        "--keep-trace",
        action="store_true",
        help="keep the trace in the history too (implies --save)",
    )
    diff = commands.add_parser("diff", help="compare two runs: b against a (the baseline)")
    diff.add_argument("a", help=f"the baseline: {_REF}")
    diff.add_argument("b", help=f"the run to compare with it: {_REF}")
    check = commands.add_parser(
        "check", help="CI gate: exit 1 when RUN is slower than the baseline beyond noise"
    )
    check.add_argument("run", help=f"the run checked: {_REF}")
    check.add_argument("--baseline", required=True, metavar="REF", help=_REF)
    check.add_argument(
        "--max-regression",
        metavar="LIMIT",
        default="5%",
        help="the slowdown allowed: 5%% or 0.05 (default 5%%)",
    )
    demo = commands.add_parser("demo", help="profile a small transformer block and report it")
    doctor = commands.add_parser(
        "doctor", help="check this machine: torch, CUDA, CUPTI, counters, NVML, tools, widgets"
    )
    history = commands.add_parser("history", help="the runs recorded: list, show one, prune")
    history.add_argument("--limit", metavar="N", type=_count, default=20, help="newest N (20)")
    actions = history.add_subparsers(dest="action")
    show = actions.add_parser("show", help="one run in full: origin, summary, hints")
    show.add_argument("ref", help="a run id (or a unique prefix), a label, or last")
    prune = actions.add_parser("prune", help="delete all but the newest runs")
    prune.add_argument("--keep", metavar="N", type=_whole, required=True, help="runs to keep")
    for sub in (report, diff, check, demo, doctor, history, show):
        sub.add_argument("--format", choices=("text", "json"), default="text")
    for sub in (report, diff, check):
        sub.add_argument(
            "--max-bytes",
            metavar="SIZE",
            type=_size,
            default=None,
            help="the most bytes one trace file may hold, uncompressed: 16G, 16GiB, 500MB or "
            f"bytes (default: ${MAX_BYTES_ENV}, else 4GiB)",
        )
    calibrate = commands.add_parser(
        "calibrate", help="measure this machine's roofs: matmul FLOP/s, copy bandwidths"
    )
    calibrate.add_argument("--seconds", type=_positive, default=15.0, help="time budget (15)")
    calibrate.add_argument("--json", action="store_true", help="print JSON, not a table")
    return parser


_REF = "a trace path, or a run of the history: its id, its label, or last"


def _positive(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, not {text}")
    return value


def _whole(text: str, *, minimum: int = 0) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, not {text}") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"must be {minimum} or more, not {text}")
    return value


def _count(text: str) -> int:
    return _whole(text, minimum=1)


def _size(text: str) -> int:
    try:
        return parse_size(text)
    except GpuprofileError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _calibrate(seconds: float, as_json: bool) -> None:
    from gpuprofile.capture.calibrate import calibrate, compare, datasheet_for_this_device

    # Asked for on the command line, so measured now; the result refreshes the cache.
    measured = calibrate(seconds, refresh=True)
    sheet = datasheet_for_this_device()
    if as_json:
        doc = {"calibrated": measured.to_dict(), "datasheet": sheet.to_dict() if sheet else None}
        _say(json.dumps(doc, indent=2))
    else:
        _say(compare(measured, sheet))


def _doctor(fmt: str) -> int:
    from gpuprofile.doctor import exit_code, render_text, run_checks, to_json

    checks = run_checks()
    _say(json.dumps(to_json(checks), indent=2) if fmt == "json" else render_text(checks))
    return exit_code(checks)


def _save(job: Profile, label: str | None, keep_trace: bool) -> None:
    from gpuprofile.store.origin import Origin, git_commit

    path = job.trace.meta.source.path
    origin = Origin(script=os.path.abspath(path) if path else None, git_commit=git_commit(Path()))
    run = job.save(label=label, keep_trace=keep_trace, origin=origin)
    named = f" as {label!r}" if label else ""
    _stderr(f"gpuprofile: recorded run {run.id}{named} in {run.history.path}")


def _history(args: argparse.Namespace) -> None:
    from gpuprofile.errors import HistoryError
    from gpuprofile.store import open_history
    from gpuprofile.store.text import render_run, render_runs

    store = open_history()
    if store is None:
        raise HistoryError("the history is off (GPUPROFILE_HISTORY=off)")
    if args.action == "show":
        run = store.get(args.ref)
        if args.format == "json":
            _say(json.dumps({**run.to_dict(), "report": run.report()}, indent=2))
        else:
            _say(render_run(run), end="")
    elif args.action == "prune":
        deleted = store.prune(args.keep)
        _say(f"gpuprofile: deleted {format_count(deleted, 'run')}; kept the newest {args.keep}")
    else:
        runs = store.runs(args.limit)
        if args.format == "json":
            _say(json.dumps([run.to_dict() for run in runs], indent=2))
        else:
            _say(render_runs(runs, str(store.path)), end="")


def _emit(profile: Profile, fmt: str) -> None:
    if fmt == "json":
        _say(json.dumps(profile.report(), indent=2))
    else:
        _say(profile.text())


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit status (see the module's docstring)."""
    # Text from traces is escaped where it is printed (units.printable); what no encoder can
    # write (a terminal set to ASCII) still prints, as escapes.
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    args = _parser().parse_args(argv)
    try:
        with byte_limit(getattr(args, "max_bytes", None)):
            return _run(args)
    except GpuprofileError as exc:
        _stderr(f"gpuprofile: error: {exc}")
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`| head`): no traceback, and none when Python flushes stdout
        # at exit either.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except OSError as exc:
        if exc.filename is None:
            return _internal_error(args, exc, argv)
        # A file of the user's that cannot be written (disk full, read-only): their input.
        _stderr(f"gpuprofile: error: {exc.filename}: {exc.strerror or exc}")
        return EXIT_BAD_INPUT
    except Exception as exc:  # the last line of defence: one line, never a traceback
        return _internal_error(args, exc, argv)


def _say(text: str, end: str = "\n") -> None:
    """Print to stdout, trace text that reached the output escaped (``units.printable``)."""
    print(printable(text, lines=True), end=end)


def _stderr(line: str) -> None:
    """One line on stderr, whatever the text in it (a path with a newline, escapes)."""
    print(printable(line), file=sys.stderr)


def _inputs(args: argparse.Namespace) -> str:
    """What the command read, as the user named it."""
    fields = {"report": ("path",), "diff": ("a", "b"), "check": ("run", "baseline")}
    named: list[object] = []
    for field in fields.get(args.command, ("ref",)):
        value = getattr(args, field, None)
        named += value if isinstance(value, list) else [value]
    return ", ".join(str(n) for n in named if n is not None)


def _internal_error(
    args: argparse.Namespace, exc: BaseException, argv: Sequence[str] | None
) -> int:
    """Say that gpuprofile failed (not the input), on one line, and keep the traceback in a
    file for the bug report."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        release = version("gpuprofile")
    except PackageNotFoundError:  # run from a source tree
        release = "(not installed)"
    try:
        fd, saved = tempfile.mkstemp(prefix="gpuprofile-crash-", suffix=".txt")
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as file:
            file.write(
                f"gpuprofile {release}, Python {platform.python_version()}, "
                f"{platform.platform()}, {time.strftime('%Y-%m-%dT%H:%M:%S%z')}\n"
                f"command: gpuprofile {' '.join(map(str, argv or sys.argv[1:]))}\n\n"
            )
            file.write("".join(traceback.format_exception(exc)))
        where = f"traceback saved in {saved}"
    except OSError as failed:
        where = f"its traceback could not be saved ({failed.strerror or failed})"
    reading = _inputs(args)
    about = f" reading {reading}" if reading else f" in 'gpuprofile {args.command}'"
    message = str(exc)
    message = message if len(message) <= 200 else message[:199] + "…"
    _stderr(
        f"gpuprofile: internal error{about}: {type(exc).__name__}: {message}; {where}; "
        "please report it with that file"
    )
    return EXIT_INTERNAL


def _run(args: argparse.Namespace) -> int:
    """The command's work; errors are main's to turn into one line and an exit status."""
    if args.command == "report":
        from gpuprofile.load import load

        path = args.path[0] if len(args.path) == 1 else args.path
        from gpuprofile.report.chrome_trace import check_writable

        # Before reading a job of many ranks: a mistyped directory fails at once.
        for target in (args.export_trace, args.html):
            if target is not None:
                check_writable(Path(target))
        baseline = resolve_side(args.baseline) if args.baseline is not None else None
        job = load(
            path,
            rank_regex=args.rank_regex,
            workers=args.workers,
            scheduler=args.scheduler,
            ncu=args.ncu,
        )
        if baseline is not None:
            job = job.with_baseline(baseline)
        if args.export_trace is not None:
            events = job.export_trace(args.export_trace)
            written = format_count(events, "event")
            _stderr(f"gpuprofile: wrote {args.export_trace} ({written})")
        if args.html is not None:
            size = job.save_html(args.html)
            _stderr(f"gpuprofile: wrote {args.html} ({format_bytes(size)})")
        if args.save or args.label is not None or args.keep_trace:
            _save(job, args.label, args.keep_trace)
        _emit(job, args.format)
    elif args.command == "history":
        _history(args)
    elif args.command == "diff":
        from gpuprofile.compare import diff

        changes = diff(args.a, args.b)
        if args.format == "json":
            _say(json.dumps(changes.to_dict(), indent=2))
        else:
            _say(changes.text(), end="")
    elif args.command == "check":
        from gpuprofile.compare import check as check_run

        verdict = check_run(args.run, args.baseline, args.max_regression)
        _say(json.dumps(verdict.to_dict(), indent=2) if args.format == "json" else str(verdict))
        return 1 if verdict.regressed else 0
    elif args.command == "calibrate":
        _calibrate(args.seconds, args.json)
    elif args.command == "doctor":
        return _doctor(args.format)
    else:
        from gpuprofile.capture.demo import transformer_block_steps

        _emit(Profile(transformer_block_steps()), args.format)
    return 0


if __name__ == "__main__":
    sys.exit(main())
