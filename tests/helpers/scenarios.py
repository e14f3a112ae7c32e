"""Running the scenario notebooks headless and reading what each profiled cell found."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parents[2] / "example_notebooks"

# Appended to the notebook in memory only: the hints, op counts and step durations (every
# ProfilerStep#N op, as recorded) of the `before` and `after` profiles, and the step summary of
# the after profile's diff against its baseline.
_READ_BACK = """
import json
import re
result = {
    label: {
        "hints": {h["kind"]: h for h in profile.report()["hints"]},
        "ops": {name: int(count) for name, count in
                profile.trace.ops["name"].astype(str).value_counts().items()},
        "hardware": profile.report()["hardware"]["source"],
        "wall_ns": profile.report()["ranks"][0]["wall_ns"],
        "steps": [
            int(op.dur_ns) for op in profile.trace.ops.itertuples()
            if re.fullmatch(r"ProfilerStep#[0-9]+", str(op.name))
        ],
    }
    for label, profile in (("before", before), ("after", after))
}
result["step_ns"] = after.report()["baseline"]["summary"]["step_ns"]
# A notebook that ends with a sweep (attention_scaling): its report.
result["sweep"] = scaling.report() if "scaling" in globals() else None
print("SCENARIO " + json.dumps(result))
"""


def run_scenario(name: str, cache_dir: Path) -> dict[str, Any]:
    notebook = nbformat.read(NOTEBOOKS / name, as_version=4)
    notebook.cells.append(nbformat.v4.new_code_cell(_READ_BACK))
    env_before = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(cache_dir)  # calibrate() caches here, not in ~
    try:
        NotebookClient(notebook, timeout=300, kernel_name="python3").execute()
    finally:
        if env_before is None:
            os.environ.pop("XDG_CACHE_HOME", None)
        else:
            os.environ["XDG_CACHE_HOME"] = env_before
    printed = "".join(o.get("text", "") for o in notebook.cells[-1].outputs)
    line = next(x for x in printed.splitlines() if x.startswith("SCENARIO "))
    result: dict[str, Any] = json.loads(line.removeprefix("SCENARIO "))
    return result
