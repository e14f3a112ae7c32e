"""Run every check in order, and render the verdicts as text or JSON."""

from __future__ import annotations

from typing import Any

from gpuprofile.doctor.checks import (
    Check,
    TorchRead,
    check_container,
    check_cuda,
    check_cupti,
    check_frontend,
    check_gpu_counters,
    check_jupyter,
    check_nvml,
    check_profiler,
    check_reader_core,
    check_tool,
    check_torch,
)
from gpuprofile.doctor.facts import Facts, machine_facts

SCHEMA = "gpuprofile.doctor/1"


def run_checks(facts: Facts | None = None) -> list[Check]:
    """Check the machine.

    Args:
        facts: where each fact is read from; None: this machine and process.

    Returns:
        One Check per subject, in a fixed order: torch, torch.profiler, cuda, cupti,
        gpu counters, nvml, container, nsys, ncu, jupyter, widget frontend, reader core.
    """
    facts = facts or machine_facts()
    torch: TorchRead
    try:
        torch = facts.torch()
    except Exception as error:
        # A broken install raises anything from ImportError to OSError (a missing .so).
        torch = error
    return [
        check_torch(torch),
        check_profiler(torch),
        check_cuda(torch),
        check_cupti(torch),
        check_gpu_counters(facts),
        check_nvml(facts),
        check_container(facts),
        check_tool(facts, "nsys", torch),
        check_tool(facts, "ncu", torch),
        check_jupyter(facts),
        check_frontend(facts),
        check_reader_core(facts),
    ]


def healthy(checks: list[Check]) -> bool:
    """Whether gpuprofile can profile here: no check failed (only torch and torch.profiler
    can)."""
    return all(check.status != "fail" for check in checks)


def exit_code(checks: list[Check]) -> int:
    """1 when a check failed, else 0: warnings limit features, they do not break profiling."""
    return 0 if healthy(checks) else 1


def render_text(checks: list[Check]) -> str:
    """One line per check (status, name, detail), its fix indented below where it has one."""
    width = max(len(check.name) for check in checks)
    lines = []
    for check in checks:
        lines.append(f"{check.status:<4} {check.name:<{width}}  {check.detail}")
        if check.fix:
            lines.append(f"     {'':<{width}}  fix: {check.fix}")
    return "\n".join(lines)


def to_json(checks: list[Check]) -> dict[str, Any]:
    """The verdicts as ``gpuprofile.doctor/1``: {schema, checks: [{name, status, detail,
    fix}], ok}."""
    return {
        "schema": SCHEMA,
        "checks": [
            {"name": c.name, "status": c.status, "detail": c.detail, "fix": c.fix} for c in checks
        ],
        "ok": healthy(checks),
    }
