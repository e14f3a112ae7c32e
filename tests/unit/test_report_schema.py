"""The report contract (report/schema.py) and the files generated from it: the JSON Schema in
docs/ and the widget's types in js/model/ are what the Structs give, and a report survives
JSON and back unchanged."""

from __future__ import annotations

import inspect
import json
import re
import shutil
from pathlib import Path

import msgspec
import pytest

from gpuprofile.profiles import Profile
from gpuprofile.report import schema
from gpuprofile.report.build import plain_report
from gpuprofile.report.schema import decode_report, report_json, to_report
from gpuprofile.report.schema_gen import REPO, SCHEMA_FILE, TYPES_FILE, generated, stale
from gpuprofile.report.widget_summary import SummaryExtras
from helpers.synthetic import synthetic_trace

STRUCTS = {
    name: value
    for name, value in vars(schema).items()
    if inspect.isclass(value)
    and issubclass(value, msgspec.Struct)
    and value.__module__ == schema.__name__
}
# What the widget's summary adds beside the report (report/widget_summary.py), and its lanes:
# typed in the .d.ts, absent from the report's JSON Schema.
EXTRAS = {
    "SummaryExtras": ["text", "roofline_layout", "step_noise"],
    "StepNoise": ["verdict", "text"],
    "RooflineLayout": ["width", "height", "plot", "x", "y", "roofs", "memory_label",
                       "memory_line", "ridges", "points", "levels", "empty", "roofs_missing",
                       "roofs_text", "unplotted"],
    "Plot": ["left", "top", "right", "bottom"],
    "Axis": ["domain", "ticks", "title"],
    "Tick": ["value", "at", "label"],
    "Label": ["text", "x", "y", "anchor", "angle", "font", "box"],
    "Roof": ["key", "peak", "ridge", "line", "path", "title", "label"],
    "Ridge": ["roof", "intensity", "peak", "at", "drop", "title", "label"],
    "PointPlace": ["plotted", "reason", "x", "y", "r", "bound", "level", "note"],
    # The widget's lanes trait (report/lanes.py).
    "Lane": ["id", "rank", "kind", "group", "group_label", "label", "title", "rows", "device",
             "stream", "pid", "tid", "unit", "min", "max"],
}  # fmt: skip


def _interfaces(types: str) -> dict[str, list[str]]:
    """Each interface of the .d.ts with its keys, in order."""
    return {
        name: [line.strip().split(":")[0].rstrip("?").strip('"') for line in body.splitlines()]
        for name, body in re.findall(r"export interface (\w+) \{\n(.*?)\n\}", types, re.S)
    }


def test_the_generated_files_are_up_to_date() -> None:
    assert not stale(), "regenerate: python -m gpuprofile.report.schema_gen --write"


def test_a_changed_or_missing_file_is_stale(tmp_path: Path) -> None:
    for path in (SCHEMA_FILE, TYPES_FILE):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / path, tmp_path / path)
    assert stale(tmp_path) == []
    types = tmp_path / TYPES_FILE
    types.write_text(types.read_text().replace("  wall_ns: number;\n", "", 1))
    assert stale(tmp_path) == [TYPES_FILE]
    (tmp_path / SCHEMA_FILE).unlink()
    assert stale(tmp_path) == [SCHEMA_FILE, TYPES_FILE]


def test_every_struct_and_field_is_in_both_files() -> None:
    files = generated()
    document = json.loads(files[SCHEMA_FILE])
    interfaces = _interfaces(files[TYPES_FILE])
    assert set(document["$defs"]) == set(STRUCTS)
    assert set(interfaces) == set(STRUCTS) | set(EXTRAS)
    for name, struct in STRUCTS.items():
        # The JSON names (TopKernel.kind is "class" in JSON), read off the Struct itself.
        names = [f.encode_name for f in msgspec.structs.fields(struct)]
        assert list(document["$defs"][name]["properties"]) == names, name
        assert interfaces[name] == names, name
    for name, keys in EXTRAS.items():
        assert sorted(interfaces[name]) == sorted(keys), name


def test_the_widget_summary_is_the_report_and_its_typed_extras() -> None:
    types = generated()[TYPES_FILE]
    assert "export type Summary = Partial<Report> & SummaryExtras;\n" in types
    assert "  step_noise?: StepNoise | null;\n" in types  # None without a baseline's steps
    assert '  anchor: "end" | "middle" | "start";\n' in types  # a Literal, spelled out
    assert "  drop: [[number, number], [number, number]];\n" in types


def test_nullable_fields_are_nullable_in_typescript() -> None:
    interfaces = generated()[TYPES_FILE]
    assert "  gpu: GpuTime | null;\n" in interfaces
    assert "  coverage: number | null;\n" in interfaces
    assert "  windows: [number, number][];\n" in interfaces  # an evidence window's [start, end)
    assert '  "class": string;\n' in interfaces or "  class: string;\n" in interfaces
    assert "  baseline?: Record<string, unknown>;\n" in interfaces  # absent without one


@pytest.fixture(scope="module")
def profile() -> Profile:
    return Profile(synthetic_trace(2_000, streams=2))


def test_a_report_survives_json_and_back(profile: Profile) -> None:
    text = json.dumps(profile.report())
    assert json.loads(text) == profile.report()  # plain JSON types: lists, never tuples
    again = report_json(decode_report(text))
    assert json.dumps(again) == text  # key by key, ints stay ints and floats floats
    assert decode_report(text) == profile.typed_report()


def test_the_report_json_follows_the_schema_by_hand(profile: Profile) -> None:
    """Each key of the JSON is a property of its section in the JSON Schema, and the reverse,
    walked here over the plain dicts (not through msgspec)."""
    document = json.loads(generated()[SCHEMA_FILE])
    definitions = document["$defs"]

    def walk(value: object, spec: dict[str, object]) -> None:
        if "$ref" in spec:
            walk(value, definitions[str(spec["$ref"]).rsplit("/", 1)[-1]])
        elif "anyOf" in spec:
            options = [s for s in spec["anyOf"] if isinstance(s, dict)]
            refs = [s for s in options if "$ref" in s]
            if isinstance(value, dict) and refs:
                walk(value, refs[0])
        elif spec.get("type") == "object" and "properties" in spec:
            assert isinstance(value, dict)
            properties = spec["properties"]
            assert isinstance(properties, dict)
            required = set(spec.get("required", []))  # type: ignore[call-overload]
            assert required <= set(value) <= set(properties), set(value) ^ set(properties)
            for key, item in value.items():
                walk(item, properties[key])
        elif spec.get("type") == "array":
            assert isinstance(value, list)  # a JSON array, never a tuple
            fixed = spec.get("prefixItems")  # a tuple: [start_ns, end_ns]
            if isinstance(fixed, list):
                assert len(value) == len(fixed)
                for item, item_spec in zip(value, fixed):
                    walk(item, item_spec)
            else:
                for item in value:
                    walk(item, spec["items"])  # type: ignore[arg-type]

    report = profile.report()
    assert report["ranks"] and report["roofline"]["points"] and report["gauges"]
    assert any(e["windows"] for h in report["hints"] for e in h["evidence"])
    walk(report, document)

    # The widget's summary: the report, then the extras following their own types.
    summary = json.loads(json.dumps(profile.widget().summary))
    extras = {key: summary.pop(key) for key in EXTRAS["SummaryExtras"]}
    assert summary == report
    assert extras["roofline_layout"]["points"]  # the synthetic trace has no roofs
    (extras_spec,), definitions = msgspec.json.schema_components([SummaryExtras])
    walk(extras, extras_spec)


def test_the_structs_keep_every_key_build_report_gathers(profile: Profile) -> None:
    """A key the detectors or analyses add but report/schema.py lacks would vanish in the
    Structs: the gathered sections and the report's JSON must read the same."""
    plain = plain_report(profile.analysis)
    assert json.dumps(report_json(to_report(plain))) == json.dumps(plain)
    plain["hints"][0]["new_field"] = 1  # what a new field without its Struct field gives
    assert json.dumps(report_json(to_report(plain))) != json.dumps(plain)
