"""`gpuprofile doctor`: checks that this machine can profile, and says what to fix."""

from gpuprofile.doctor.checks import Check
from gpuprofile.doctor.facts import Facts, NvmlDevice, NvmlFacts, TorchFacts, machine_facts
from gpuprofile.doctor.run import exit_code, render_text, run_checks, to_json

__all__ = [
    "Check",
    "Facts",
    "NvmlDevice",
    "NvmlFacts",
    "TorchFacts",
    "exit_code",
    "machine_facts",
    "render_text",
    "run_checks",
    "to_json",
]
