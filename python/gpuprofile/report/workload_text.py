"""The workload in words, worded once: the text report, the HTML page and the widget (its
``summary.workload_line``) all show this line first, with the evidence beneath it."""

from __future__ import annotations

from gpuprofile.report.schema import Workload


def workload_line(workload: Workload) -> str:
    """One line: ``workload: training · parallelism dp · eager · cuda`` (an engine after the
    phase where one was seen)."""
    parts = [workload.phase]
    if workload.engine:
        parts.append(f"engine {workload.engine}")
    parallel = " + ".join(workload.parallelism) if workload.parallelism else "none seen"
    parts += [f"parallelism {parallel}", workload.execution, workload.device]
    return "workload: " + " · ".join(parts)
