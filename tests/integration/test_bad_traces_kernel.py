"""Bad traces in a real notebook kernel (nbclient), as a user meets them (issue 16): each load
of a bad trace is an error output whose text names the file and the problem in one line (no
page of traceback), displaying a profile whose analyses meet odd values shows something, and
the kernel is alive and well for the good trace after them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient

SETUP = r"""
import json, os, gzip
import gpuprofile
def events(**change):
    dims = {"Input Dims": [[64, 64], [64, 64]], "Input type": ["float", "float"]}
    out = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 40,
         "args": {"External id": 1, **dims}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
         "ts": 5, "dur": 10, "args": {"correlation": 7}},
        {"ph": "X", "cat": "kernel", "name": "sgemm", "pid": 0, "tid": 7, "ts": 20, "dur": 30,
         "args": {"device": 0, "stream": 7, "correlation": 7, "External id": 1}},
    ]
    out[0]["args"].update(change)
    return out
def save(name, doc):
    with open(name, "w") as f:
        json.dump(doc, f)
    return name
props = [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "numSms": 132}]
open("empty.json", "wb").close()
open("cut.json", "w").write(json.dumps({"traceEvents": events()})[:90])
open("deep.json", "w").write('{"traceEvents": [' + "[" * 100000 + "]" * 100000 + "]}")
os.mkdir("folder.json")
save("odd_args.json", {"traceEvents": events(**{"Input type": {"a": 1}, "Input Dims": [[-1, 4]]}),
                       "deviceProperties": [{**props[0], "numSms": True, "id": "True"}]})
save("good.json", {"traceEvents": events(), "deviceProperties": props})
print("SETUP DONE")
"""
BAD = ("empty.json", "cut.json", "deep.json", "folder.json", "missing.json")
CELLS = (
    SETUP,
    *(f'gpuprofile.load("{name}")' for name in BAD),
    'gpuprofile.show("empty.json")',
    'gpuprofile.load("odd_args.json")',
    'p = gpuprofile.load("good.json")\nprint("GOOD", p.report()["ranks"][0]["counts"]["kernels"])',
)


def _text(output: dict[str, Any]) -> str:
    if output["output_type"] == "error":
        return "\n".join([output["ename"], output["evalue"], *output["traceback"]])
    if output["output_type"] == "stream":
        return str(output["text"])
    return json.dumps(output.get("data", {}))


def test_bad_traces_leave_the_kernel_well(tmp_path: Path) -> None:
    notebook = nbformat.v4.new_notebook()
    notebook.cells.extend(nbformat.v4.new_code_cell(source) for source in CELLS)
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    client = NotebookClient(
        notebook, timeout=120, allow_errors=True, resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()
    cells = notebook.cells
    assert "SETUP DONE" in "".join(_text(o) for o in cells[0].outputs), cells[0].outputs
    # The kernel lived through all of it: the good trace's cell ran, last.
    printed = "".join(_text(o) for o in cells[-1].outputs)
    assert "GOOD 1" in printed, cells[-1].outputs

    for name, cell in zip((*BAD, "empty.json"), cells[1 : len(BAD) + 2], strict=True):
        (output,) = cell.outputs  # one output: the error, nothing else, no blank cell
        assert output["output_type"] == "error", (name, output)
        assert output["ename"] in ("TraceFormatError", "GpuprofileError"), (name, output)
        assert name in output["evalue"], (name, output["evalue"])
        # GpuprofileError renders as one line (_render_traceback_), not gpuprofile's stack.
        assert len(output["traceback"]) == 1, (name, output["traceback"])

    shown = cells[-2].outputs
    assert shown, "displaying a profile of odd values showed nothing"
    said = "\n".join(_text(o) for o in shown)
    assert "Traceback" not in said and "most recent call last" not in said, said[-3000:]
    for output in shown:
        if output["output_type"] == "error":
            assert "odd_args.json" in output["evalue"] and len(output["traceback"]) == 1, output
        elif output["output_type"] == "display_data":
            assert any(str(v).strip() for v in output["data"].values()), output
