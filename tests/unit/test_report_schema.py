"""The report contract (report/schema.py), the diff's (report/diff_schema.py) and the files
generated from them: the JSON Schemas in docs/ and the widget's types in js/model/ are what the
Structs give, a report survives JSON and back unchanged, and a real diff's JSON follows its
schema (checked by jsonschema, not by msgspec)."""

from __future__ import annotations

import inspect
import json
import re
import shutil
from pathlib import Path

import jsonschema
import msgspec
import pytest

import gpuprofile
from gpuprofile.analyses import memory_failure, memory_moments, memory_use
from gpuprofile.profiles import Profile
from gpuprofile.report import diff_schema, schema
from gpuprofile.report.build import plain_report
from gpuprofile.report.schema import decode_report, report_json, to_report
from gpuprofile.report.schema_gen import (
    DIFF_SCHEMA_FILE,
    REPO,
    SCHEMA_FILE,
    TYPES_FILE,
    generated,
    stale,
)
from gpuprofile.report.widget_summary import SummaryExtras
from gpuprofile.trace import allocator
from helpers.baseline_pair import write_pair
from helpers.synthetic import synthetic_trace


def _structs(module: object) -> dict[str, type[msgspec.Struct]]:
    return {
        name: value
        for name, value in vars(module).items()
        if inspect.isclass(value)
        and issubclass(value, msgspec.Struct)
        and value.__module__ == getattr(module, "__name__", None)
    }


DIFF_STRUCTS = _structs(diff_schema)
# A report's baseline is a diff: the report's JSON Schema holds the diff's Structs too, and
# the memory view's and the allocator snapshot's, defined where they are computed.
STRUCTS = {
    **_structs(schema),
    **DIFF_STRUCTS,
    **_structs(memory_use),
    **_structs(memory_moments),
    **_structs(memory_failure),
    **_structs(allocator),
}
# What the widget's summary adds beside the report (report/widget_summary.py), and its lanes:
# typed in the .d.ts, absent from the report's JSON Schema.
EXTRAS = {
    "SummaryExtras": ["text", "roofline_layout", "module_layout", "memory_layout", "step_noise",
                      "workload_line"],
    "MemoryLayout": ["rank", "title", "width", "height", "plot", "areas", "x_ticks", "y_ticks",
                     "markers"],
    "Area": ["category", "colour", "points", "legend", "swatch"],
    "Marker": ["x", "top", "label", "kind"],
    "MemoryTick": ["at", "label"],
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
    "ModuleLayout": ["width", "bar_x", "bar_w", "row_h", "trees"],
    "ModuleTree": ["rank", "height", "rows", "more", "scale_ns"],
    "ModulePlace": ["index", "path", "level", "y", "label", "forward", "backward", "value",
                    "title"],
    "Bar": ["x", "width"],
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
    for path in (SCHEMA_FILE, DIFF_SCHEMA_FILE, TYPES_FILE):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / path, tmp_path / path)
    assert stale(tmp_path) == []
    types = tmp_path / TYPES_FILE
    types.write_text(types.read_text().replace("  wall_ns: number;\n", "", 1))
    assert stale(tmp_path) == [TYPES_FILE]
    (tmp_path / SCHEMA_FILE).unlink()
    assert stale(tmp_path) == [SCHEMA_FILE, TYPES_FILE]
    diff_file = tmp_path / DIFF_SCHEMA_FILE
    diff_file.write_text(diff_file.read_text().replace('"b_name"', '"b_label"'))
    assert stale(tmp_path) == [SCHEMA_FILE, DIFF_SCHEMA_FILE, TYPES_FILE]


def test_every_struct_and_field_is_in_both_files() -> None:
    files = generated()
    document = json.loads(files[SCHEMA_FILE])
    interfaces = _interfaces(files[TYPES_FILE])
    assert set(document["$defs"]) == set(STRUCTS)
    diff_document = json.loads(files[DIFF_SCHEMA_FILE])
    assert diff_document["title"] == "gpuprofile.diff/1"
    assert diff_document["$ref"] == "#/$defs/DiffDocument"
    assert set(diff_document["$defs"]) == set(DIFF_STRUCTS)
    for name, struct in DIFF_STRUCTS.items():
        names = [f.encode_name for f in msgspec.structs.fields(struct)]
        assert list(diff_document["$defs"][name]["properties"]) == names, name
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
    assert "  baseline?: DiffDocument;\n" in interfaces  # absent without one
    assert "  step_ns: DiffStepChange | null;\n" in interfaces  # None without steps on a side
    assert '  matched_by: "name" | "only in a" | "only in b" | "position" | "role";\n' in interfaces


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


@pytest.fixture(scope="module")
def baselined(tmp_path_factory: pytest.TempPathFactory) -> Profile:
    """after.json against before.json (helpers/baseline_pair.py): two Kineto traces whose
    diff has a fixed hint, moved kernels and ops."""
    before, after = write_pair(tmp_path_factory.mktemp("pair"))
    return gpuprofile.load(after).with_baseline(gpuprofile.load(before))


def _validator(path: Path) -> jsonschema.protocols.Validator:
    document = json.loads(generated()[path])
    validator_class = jsonschema.validators.validator_for(document)
    validator_class.check_schema(document)
    return validator_class(document)


def test_a_real_diff_follows_the_diff_schema(baselined: Profile) -> None:
    diff = json.loads(json.dumps(baselined.report()["baseline"]))
    assert diff["kernels"] and diff["ops"] and diff["hints"]["fixed"]
    validator = _validator(DIFF_SCHEMA_FILE)
    validator.validate(diff)

    # What the schema must refuse: a missing key, a matched_by it does not list, a string count.
    del diff["summary"]["wall_ns"]["ratio"]
    diff["kernels"][0]["matched_by"] = "by luck"
    diff["ops"][0]["a_count"] = "3"
    errors = {tuple(e.absolute_path): e.validator for e in validator.iter_errors(diff)}
    assert errors == {
        ("summary", "wall_ns"): "required",
        ("kernels", 0, "matched_by"): "enum",
        ("ops", 0, "a_count"): "type",
    }


def test_a_report_with_a_baseline_follows_the_report_schema(baselined: Profile) -> None:
    report = json.loads(json.dumps(baselined.report()))
    assert report["baseline"]["schema"] == "gpuprofile.diff/1"
    _validator(SCHEMA_FILE).validate(report)


def test_jsonable_gives_plain_json_types() -> None:
    """What the report's JSON holds, whatever the analyses left in it: numpy scalars as
    Python numbers, tuples as lists, keys as text, NaN and infinities as null; text the
    encoder refuses (a lone surrogate, read from a trace) kept as it is, not an error."""
    import numpy as np

    value = {
        "ints": (np.int64(3), np.int32(-2), 7),
        "floats": [np.float64(0.5), np.float32(1.5), float("nan"), np.float64("inf")],
        "flag": np.bool_(True),
        1: {"nested": (1, (2, 3))},
        "source": schema.Source(path=None, format="kineto", version="1"),
    }
    expected = {
        "ints": [3, -2, 7],
        "floats": [0.5, 1.5, None, None],
        "flag": True,
        "1": {"nested": [1, [2, 3]]},
        "source": {"path": None, "format": "kineto", "version": "1"},
    }
    plain = schema.jsonable(value)
    assert plain == expected
    assert type(plain["ints"][0]) is int and type(plain["floats"][1]) is float
    assert schema.jsonable({"name": "a\ud800b", "x": (float("nan"),)}) == {
        "name": "a\ud800b",
        "x": [None],
    }
