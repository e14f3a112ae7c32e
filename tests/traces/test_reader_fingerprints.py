"""The reader and the analyses reproduce, exactly, the tables, metadata and report every shared
Kineto trace gave when tests/traces/kineto_fingerprints.json was recorded (before the reader was
made faster for issue 15). A change that alters a result on purpose re-records the file
(``python tests/helpers/fingerprint.py``) and says why in its commit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gpuprofile.importers.kineto import decode as kineto_decode
from gpuprofile.importers.kineto import direct
from helpers.fingerprint import RECORD, fingerprint
from traces.conftest import TRACES


@pytest.fixture(scope="module")
def recorded() -> dict[str, Any]:
    result: dict[str, Any] = json.loads(RECORD.read_text())
    return result


def changed(expected: dict[str, Any], actual: dict[str, Any], where: str = "") -> list[str]:
    """The paths (table.column, report.section) whose fingerprints differ."""
    out = []
    for key in sorted(set(expected) | set(actual)):
        a, b = expected.get(key), actual.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            out += changed(a, b, f"{where}{key}.")
        elif a != b:
            out.append(f"{where}{key}: recorded {a}, now {b}")
    return out


def test_every_case_recorded(kineto_path: Path, recorded: dict[str, Any]) -> None:
    assert kineto_path.name in recorded, (
        f"{kineto_path.name} has no recorded fingerprint: record it before changing the reader"
    )


def test_reproduces_recorded_results(kineto_path: Path, recorded: dict[str, Any]) -> None:
    expected = recorded.get(kineto_path.name)
    if expected is None:
        pytest.skip("not recorded (test_every_case_recorded says so)")
    differences = changed(expected, fingerprint(kineto_path, TRACES))
    assert not differences, "\n".join(differences)


def test_read_without_the_compiled_core_reproduces_recorded_results(
    kineto_path: Path, recorded: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every file read as where no C compiler built the core: msgspec's decode, whole up to
    PART_BYTES (with the core, every file is read in parts)."""
    expected = recorded.get(kineto_path.name)
    if expected is None:
        pytest.skip("not recorded (test_every_case_recorded says so)")
    monkeypatch.setattr(direct, "scanned", None)
    differences = changed(expected, fingerprint(kineto_path, TRACES))
    assert not differences, "\n".join(differences)


def test_read_in_parts_reproduces_recorded_results(
    kineto_path: Path, recorded: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every file read a part of 5,000 events at a time, as files over PART_BYTES are."""
    expected = recorded.get(kineto_path.name)
    if expected is None:
        pytest.skip("not recorded (test_every_case_recorded says so)")
    monkeypatch.setattr(kineto_decode, "PART_BYTES", 0)
    monkeypatch.setattr(kineto_decode, "PART_EVENTS", 5000)
    differences = changed(expected, fingerprint(kineto_path, TRACES))
    assert not differences, "\n".join(differences)
