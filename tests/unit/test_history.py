"""The history store: runs recorded by the magic, profile() and `report --save`, found by id,
prefix, label and `last`, listed, shown and pruned; diffs of stored runs equal diffs of their
traces; damaged, foreign and newer stores refused with how to recover, never a crashed cell;
four processes writing at once lose nothing.

Expected figures come from the Kineto documents' own events and from sqlite3 read directly.
"""

from __future__ import annotations

import hashlib
import html
import json
import sqlite3
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from IPython.core.interactiveshell import InteractiveShell

import gpuprofile
from gpuprofile.cli import main
from gpuprofile.errors import HistoryError
from gpuprofile.importers.formats import read_trace
from gpuprofile.store import History, history_path
from helpers.kineto_docs import cpu_op, document, kernel, runtime, write

US = 1000


def steps_doc(kernel_us: list[int], name: str = "gemm_kernel") -> dict[str, Any]:
    """One ProfilerStep per entry, each launching one kernel of that many microseconds."""
    events: list[dict[str, Any]] = []
    for n, dur in enumerate(kernel_us):
        t0 = n * 1000
        step_us = 400 + dur  # the step waits for its kernel
        events.append({**cpu_op(f"ProfilerStep#{n + 1}", t0, step_us), "cat": "user_annotation"})
        events.append(cpu_op("aten::mm", t0 + 10, 30))
        events.append(runtime("cudaLaunchKernel", t0 + 15, 2, n + 1))
        events.append(kernel(name, t0 + 100, dur, n + 1))
    return document(events)


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> History:
    path = tmp_path / "history.sqlite"
    monkeypatch.setenv("GPUPROFILE_HISTORY", str(path))
    return History(path)


@pytest.fixture
def traces(tmp_path: Path) -> tuple[Path, Path, dict[str, Any], dict[str, Any]]:
    a_doc, b_doc = steps_doc([100, 110, 90, 100]), steps_doc([200, 210, 190, 200])
    return write(tmp_path / "a.json", a_doc), write(tmp_path / "b.json", b_doc), a_doc, b_doc


def test_a_saved_run_is_found_by_id_prefix_label_and_last(store: History, traces: Any) -> None:
    a, b, a_doc, _ = traces
    first = gpuprofile.load(a).save(label="before")
    second = gpuprofile.load(b).save()
    assert store.get(first.id).id == first.id
    assert store.get(first.id[:5]).id == first.id
    assert store.get("before").id == first.id
    assert store.get("last").id == second.id
    assert [r.id for r in gpuprofile.runs()] == [second.id, first.id]
    # The summary against the document's own events.
    summary = store.get("before").summary
    steps = [e["dur"] * US for e in a_doc["traceEvents"] if e["name"].startswith("ProfilerStep")]
    assert summary["steps"]["count"] == len(steps)
    assert summary["steps"]["median_ns"] == pytest.approx(float(np.median(steps)))
    kernels = [e for e in a_doc["traceEvents"] if e.get("cat") == "kernel"]
    assert summary["top_kernels"][0] == {
        "name": "gemm_kernel",
        "count": len(kernels),
        "total_ns": sum(e["dur"] for e in kernels) * US,
    }
    # A label given twice names its newest run.
    third = gpuprofile.load(b).save(label="before")
    assert store.get("before").id == third.id


def test_the_store_is_sqlite_with_the_documented_columns(store: History, traces: Any) -> None:
    a, _, _, _ = traces
    run = gpuprofile.load(a).save(label="x")
    with sqlite3.connect(store.path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        row = db.execute("SELECT id, label, script, summary FROM runs").fetchone()
    assert row[:2] == (run.id, "x")
    assert json.loads(row[3])["wall_ns"] == run.summary["wall_ns"]


def test_a_stored_run_diffs_as_its_trace_does(store: History, traces: Any) -> None:
    a, b, _, _ = traces
    gpuprofile.load(a).save(label="a")
    gpuprofile.load(b).save(label="b")
    from_traces = gpuprofile.diff(a, b).to_dict()
    from_store = gpuprofile.diff("a", "b").to_dict()
    # The same diff, each side named by its run.
    assert (from_store["a"].pop("run")["label"], from_store["b"].pop("run")["label"]) == ("a", "b")
    assert from_traces["a"].pop("run") is None and from_traces["b"].pop("run") is None
    assert from_store == from_traces
    mixed = gpuprofile.diff("a", b).to_dict()
    assert mixed["b"].pop("run") is None and mixed["a"].pop("run")["label"] == "a"
    assert mixed == from_traces
    verdict = gpuprofile.compare.check("b", "a", 0.05)
    assert verdict.regressed and verdict.method == "bootstrap"


def test_unknown_and_ambiguous_references_say_so(store: History, traces: Any) -> None:
    a, _, _, _ = traces
    with pytest.raises(HistoryError, match="no runs recorded yet"):
        store.get("last")
    profile = gpuprofile.load(a)
    for run_id in ("abcd0001", "abcd0002"):
        store.record(profile.typed_report(), _digest(profile), run_id=run_id)
    with pytest.raises(HistoryError, match="start of several run ids"):
        store.get("abcd")
    with pytest.raises(HistoryError, match="no run id, label or trace path"):
        store.get("nope")


def test_a_stored_report_decodes_into_the_report_it_was(store: History, traces: Any) -> None:
    a, _, _, _ = traces
    profile = gpuprofile.load(a)
    run = store.record(profile.typed_report(), _digest(profile), run_id="abcd0009")
    assert run.report() == profile.report()
    assert run.typed_report() == profile.typed_report()
    # A report another version wrote, without a section this one requires: said, no crash.
    other = {k: v for k, v in profile.report().items() if k != "gauges"}
    with sqlite3.connect(store.path) as db:
        packed = zlib.compress(json.dumps(other).encode())
        db.execute("UPDATE runs SET report = ? WHERE id = ?", (packed, run.id))
    with pytest.raises(HistoryError, match="run abcd0009's report is not gpuprofile\\.report/1"):
        run.typed_report()
    assert "gauges" not in run.report()  # the JSON as it was stored stays readable


def _digest(profile: gpuprofile.Profile) -> dict[str, Any]:
    from gpuprofile.report.diff_side import digest

    return digest(profile.diff_side())


def test_prune_keeps_the_newest_and_their_traces_only(store: History, traces: Any) -> None:
    a, _, _, _ = traces
    runs = [gpuprofile.load(a).save(keep_trace=True) for _ in range(3)]
    assert all(Path(r.trace_path or "").exists() for r in runs)
    assert store.prune(keep=1) == 2
    assert [r.id for r in store.runs()] == [runs[-1].id]
    assert not Path(runs[0].trace_path or "").exists()
    assert Path(runs[-1].trace_path or "").exists()


def test_show_brings_a_kept_trace_back_and_a_report_otherwise(store: History, traces: Any) -> None:
    a, _, a_doc, _ = traces
    kept = gpuprofile.load(a).save(keep_trace=True, label="kept")
    gpuprofile.load(a).save(label="bare")
    shown = gpuprofile.show("kept")
    kernels = [e for e in a_doc["traceEvents"] if e.get("cat") == "kernel"]
    assert isinstance(shown, gpuprofile.Profile) and len(shown.trace.kernels) == len(kernels)
    assert shown.run is not None and shown.run.id == kept.id
    bare = gpuprofile.show("bare")
    assert "trace not kept" in repr(bare)
    assert "kept no trace" in bare._repr_mimebundle_()[0]["text/plain"]


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b"this is not a database, just text" * 100, "damaged"),
        (None, "not a gpuprofile history"),
        ("newer", "newer gpuprofile"),
    ],
)
def test_a_bad_store_is_one_error_that_says_how_to_recover(
    store: History, traces: Any, content: Any, says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    if content is None:
        with sqlite3.connect(store.path) as db:
            db.execute("CREATE TABLE other (x)")
    elif content == "newer":
        with sqlite3.connect(store.path) as db:
            db.execute("PRAGMA user_version = 99")
    else:
        store.path.write_bytes(content)
    a, _, _, _ = traces
    with pytest.raises(HistoryError, match=says):
        gpuprofile.load(a).save()
    if says == "damaged":
        with pytest.raises(HistoryError, match="Move it aside"):
            store.runs()
    assert main(["history"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gpuprofile: error:") and err.count("\n") == 1 and says in err


def test_a_damaged_store_never_breaks_the_cell(
    shell: InteractiveShell, store: History, capfd: pytest.CaptureFixture[str]
) -> None:
    store.path.write_bytes(b"garbage" * 1000)
    result = shell.run_cell("%%gpuprofile\nimport torch\nx = torch.ones(8) * 2\n")
    assert result.success and shell.user_ns["x"].sum().item() == 16
    err = capfd.readouterr().err
    assert "this run was not recorded in the history" in err and "Move it aside" in err
    assert gpuprofile.last().run is None


def test_the_magic_records_label_cell_code_and_keeps_the_trace(
    shell: InteractiveShell, store: History
) -> None:
    body = "import torch\ny = torch.ones(16, 16) @ torch.ones(16, 16)\n"
    result = shell.run_cell(f"%%gpuprofile --label mm16 --keep-trace\n{body}")
    assert result.success
    run = store.get("mm16")
    assert run.origin.code_hash == hashlib.sha256(body.encode()).hexdigest()[:16]
    assert run.torch_version == __import__("torch").__version__
    assert gpuprofile.last().run is not None and gpuprofile.last().run.id == run.id
    back = read_trace(Path(run.trace_path or ""))
    assert len(back.ops) == len(gpuprofile.last().trace.ops)


def test_profile_blocks_are_recorded_with_their_script(store: History) -> None:
    with gpuprofile.profile(label="block") as p:
        import torch

        torch.ones(4).sum()
    assert p.run is not None and store.get("block").id == p.run.id
    assert p.run.origin.script is not None


def test_history_off_records_nothing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GPUPROFILE_HISTORY", "off")
    assert history_path() is None
    with gpuprofile.profile() as p:
        pass
    assert p.run is None and gpuprofile.runs() == []
    assert main(["history"]) == 2 and "off" in capsys.readouterr().err


def test_the_default_store_is_in_the_user_data_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    import platformdirs

    monkeypatch.delenv("GPUPROFILE_HISTORY")
    expected = Path(platformdirs.user_data_dir("gpuprofile", appauthor=False)) / "history.sqlite"
    assert history_path() == expected


def test_cli_save_list_show_prune(
    store: History, traces: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b, _, _ = traces
    assert main(["report", str(a), "--label", "base"]) == 0
    assert main(["report", str(b), "--save"]) == 0
    assert "recorded run" in capsys.readouterr().err
    assert main(["history", "--format", "json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    with sqlite3.connect(store.path) as db:
        ids = [r[0] for r in db.execute("SELECT id FROM runs ORDER BY time DESC, rowid DESC")]
    assert [r["id"] for r in listed] == ids and listed[1]["label"] == "base"
    assert main(["history"]) == 0
    text = capsys.readouterr().out
    assert ids[0] in text and "base" in text
    assert main(["history", "show", "base"]) == 0
    assert f"run {ids[1]} (base)" in capsys.readouterr().out
    assert main(["check", "last", "--baseline", "base"]) == 1  # b's steps take longer
    assert capsys.readouterr().out.startswith("REGRESSION")
    assert main(["diff", "base", "last", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["schema"] == "gpuprofile.diff/1"
    assert main(["history", "prune", "--keep", "1"]) == 0
    with sqlite3.connect(store.path) as db:
        assert [r[0] for r in db.execute("SELECT id FROM runs")] == [ids[0]]
    assert main(["history", "show", "nope"]) == 2


_WRITER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    import gpuprofile
    trace, worker, gate = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    profile = gpuprofile.load(trace)
    profile.report()
    (gate / worker).touch()
    while len(list(gate.iterdir())) < 4:  # all four write at once
        time.sleep(0.002)
    for n in range(25):
        profile.save(label=f"w{worker}-{n}")
    """
)


def test_four_processes_writing_at_once_lose_nothing(
    store: History, traces: Any, tmp_path: Path
) -> None:
    a, _, _, _ = traces
    gate = tmp_path / "gate"
    gate.mkdir()
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(a), str(w), str(gate)],
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(4)
    ]
    errors = [p.communicate(timeout=120)[1] for p in writers]
    assert [p.returncode for p in writers] == [0, 0, 0, 0], errors
    with sqlite3.connect(store.path) as db:
        labels = sorted(r[0] for r in db.execute("SELECT label FROM runs"))
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert labels == sorted(f"w{w}-{n}" for w in range(4) for n in range(25))
    assert all(run.report()["schema"] == "gpuprofile.report/1" for run in store.runs(None)[:5])


def test_the_diff_says_whether_a_step_change_is_beyond_noise(tmp_path: Path) -> None:
    base = [100, 110, 90, 100, 105, 95]
    a = write(tmp_path / "a.json", steps_doc(base))
    slower = write(tmp_path / "b.json", steps_doc([k + 300 for k in base]))
    same = write(tmp_path / "c.json", steps_doc(list(reversed(base))))
    two = write(tmp_path / "d.json", steps_doc(base[:2]))
    step = gpuprofile.diff(a, slower).to_dict()["summary"]["step_ns"]
    medians = [float(np.median([400 + k for k in base])), float(np.median([700 + k for k in base]))]
    assert (step["a"], step["b"]) == (medians[0] * US, medians[1] * US)
    lo, hi = step["interval"]
    # Every b step is longer than every a step: every resample's ratio is above 1.
    assert 1 < lo <= step["ratio"] <= hi and step["count"] == {"a": 6, "b": 6}
    assert "slower" in gpuprofile.diff(a, slower).text()
    lo, hi = gpuprofile.diff(a, same).to_dict()["summary"]["step_ns"]["interval"]
    assert lo < 1 < hi
    assert gpuprofile.diff(a, two).to_dict()["summary"]["step_ns"]["interval"] is None
    assert "too few for a noise interval" in gpuprofile.diff(a, two).text()


def test_the_snapshot_names_the_run_to_show_again(shell: InteractiveShell, store: History) -> None:
    from gpuprofile.profiles import widget_outputs

    shell.run_cell("%%gpuprofile --label snap\nimport torch\ntorch.ones(4).sum()\n")
    run = store.get("snap")
    (_, _), (snapshot, metadata) = widget_outputs(gpuprofile.last())
    assert f'gpuprofile.show("{run.id}")' in html.unescape(snapshot["text/html"])
    assert metadata["gpuprofile"]["run_id"] == run.id
    data, _ = gpuprofile.show(run.id)._repr_mimebundle_()
    assert "kept no trace" in data["text/html"] and run.id in data["text/plain"]


def test_a_profile_block_in_a_notebook_records_its_cell_not_the_kernel_launcher(
    shell: InteractiveShell, store: History, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shell, "kernel", object(), raising=False)
    monkeypatch.setattr(shell, "parent_header", {"metadata": {"cellId": "cell-7"}}, raising=False)
    monkeypatch.setitem(shell.user_ns, "__session__", "/work/nb/train.ipynb")
    cell = (
        "import gpuprofile, torch\n"
        "with gpuprofile.profile(label='in-notebook', interval=0):\n"
        "    torch.ones(4).sum()\n"
    )
    assert shell.run_cell(cell, store_history=True).success
    origin = store.get("in-notebook").origin
    assert (origin.notebook, origin.cell_id, origin.script) == (
        "/work/nb/train.ipynb",
        "cell-7",
        None,
    )
    # The cell's text as IPython's history keeps it: without its last newline.
    assert origin.code_hash == hashlib.sha256(cell.rstrip("\n").encode()).hexdigest()[:16]


def test_a_store_busy_at_once_is_tried_again(
    store: History, traces: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite waits for a writer that holds the lock, but some busy moments fail at once (a
    WAL checkpointed and removed as one process closes while another opens, seen once in CI
    with four writers): the write is tried again instead of lost."""
    a, _, _, _ = traces
    profile = gpuprofile.load(a)
    real = History._prepare
    failures = iter([True, True])

    def busy_twice(self: History, db: Any) -> None:
        if next(failures, False):
            raise sqlite3.OperationalError("database is locked")
        real(self, db)

    monkeypatch.setattr(History, "_prepare", busy_twice)
    run = profile.save(label="after two busy moments", history=store)
    assert next(failures, None) is None  # both busy moments were met
    assert store.get(run.id).label == "after two busy moments"
