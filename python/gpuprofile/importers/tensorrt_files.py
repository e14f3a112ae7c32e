"""The files trtexec writes about one engine, each told by its content and checked as read.

- ``--exportProfile`` (``X.profile.json``): a list, ``{"count": N}`` (the inferences the layer
  times were averaged over) then one record per layer ``{name, timeMs, averageMs, medianMs,
  percentage}`` in execution order.
- ``--exportTimes`` (``X.timing.json``): a list of per-inference records (``startEnqMs``,
  ``endEnqMs``, ``startH2dMs`` ... ``latencyMs``; TensorRT 7 spelled the copies ``In``/``Out``).
- ``--exportLayerInfo`` (``X.graph.json``): ``{"Layers": [...], "Bindings": [...]}``.
- TREx's ``X.profile.metadata.json``: what TREx parsed from trtexec's log, the device included.
- trtexec's build log (``X.build.log`` or ``X.log``, its ``--verbose`` output): where each layer
  runs, read from its "Layers Running on DLA" and "... on GPU" lists (``[DlaLayer]`` /
  ``[GpuLayer]`` lines; newer TensorRT writes ``[GpuLayer] SHUFFLE: name``, older ``[GpuLayer]
  name``).

A file of one kind names its siblings by the stem they share; any of them may be given.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuprofile.errors import TraceFormatError
from gpuprofile.importers.source import read_trace_bytes

PROFILE, TIMING, GRAPH, METADATA = "profile", "timing", "graph", "metadata"
BUILD_LOG = "build log"
LOG_SUFFIXES = (".build.log", ".log")
_PLACED = re.compile(r"\[(Dla|Gpu)Layer\]\s*(.*?)\s*,?\s*$")
_LAYER_TYPE = re.compile(r"^[A-Z][A-Z_]*:\s+")
# The names TREx gives the exports of one engine ("resnet.onnx.engine" + suffix), gzip or not.
SUFFIXES = {
    PROFILE: ".profile.json",
    TIMING: ".timing.json",
    GRAPH: ".graph.json",
    METADATA: ".profile.metadata.json",
}
# Per-inference fields of --exportTimes: (start key, end key) per phase, newer spelling first.
PHASES = {
    "enqueue": (("startEnqMs",), ("endEnqMs",)),
    "h2d": (("startH2dMs", "startInMs"), ("endH2dMs", "endInMs")),
    "compute": (("startComputeMs",), ("endComputeMs",)),
    "d2h": (("startD2hMs", "startOutMs"), ("endD2hMs", "endOutMs")),
}
REQUIRED_TIMES = ("latencyMs", "computeMs", "startComputeMs", "endComputeMs")
LAYER_FIELDS = ("averageMs", "medianMs", "timeMs", "percentage")
# A time past a year (in ms) is damage, not a measurement; it would wrap int64 nanoseconds.
MAX_MS = 365 * 24 * 3600 * 1e3


@dataclass(frozen=True)
class LayerTime:
    """One layer record of --exportProfile, in milliseconds as written."""

    name: str
    average_ms: float
    median_ms: float | None
    total_ms: float | None  # timeMs: summed over the profiled inferences
    percentage: float | None


@dataclass(frozen=True)
class Profile:
    count: int | None  # inferences the layer times were averaged over
    layers: tuple[LayerTime, ...]


@dataclass(frozen=True)
class Inference:
    """One record of --exportTimes: per phase its (start, end) in ms on trtexec's clock."""

    phases: dict[str, tuple[float, float]]
    latency_ms: float
    compute_ms: float


@dataclass(frozen=True)
class Engine:
    """Everything read about one engine, and the files it came from."""

    profile: Profile | None = None
    timing: tuple[Inference, ...] | None = None
    graph: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    # From the build log: the layers the builder placed on the DLA and on the GPU.
    placement: dict[str, tuple[str, ...]] | None = None
    files: dict[str, Path] = field(default_factory=dict)


def read_engine(path: Path) -> Engine:
    """The file at ``path`` and its siblings (the other exports of its stem) where they exist.

    Raises:
        TraceFormatError: a file that is not valid JSON, or not of the shape its kind has.
    """
    document = read_json(path)
    given = kind_of(document)
    if given is None:
        what = "--exportProfile, --exportTimes or --exportLayerInfo"
        raise TraceFormatError(path, f"not a trtexec export ({what}) nor TREx metadata")
    files = {given: path}
    stem = _stem(path.name, given)
    for kind, suffix in SUFFIXES.items():
        if kind == given or stem is None:
            continue
        for candidate in (path.with_name(stem + suffix), path.with_name(stem + suffix + ".gz")):
            if candidate.is_file():
                files[kind] = candidate
                break
    documents = {kind: document if kind == given else read_json(p) for kind, p in files.items()}
    log = next(
        (
            path.with_name(stem + suffix)
            for suffix in LOG_SUFFIXES
            if stem is not None and path.with_name(stem + suffix).is_file()
        ),
        None,
    )
    for kind, doc in documents.items():
        if kind_of(doc) != kind:
            raise TraceFormatError(files[kind], f"named as a {kind} file but does not hold one")
    return Engine(
        profile=profile(files[PROFILE], documents[PROFILE]) if PROFILE in files else None,
        timing=timing(files[TIMING], documents[TIMING]) if TIMING in files else None,
        graph=graph(files[GRAPH], documents[GRAPH]) if GRAPH in files else None,
        metadata=documents.get(METADATA),
        placement=placement(log) if log is not None else None,
        files={**files, BUILD_LOG: log} if log is not None else files,
    )


def placement(path: Path) -> dict[str, tuple[str, ...]] | None:
    """The layers a build log lists as running on the DLA and on the GPU ({"dla": names,
    "gpu": names}), the GPU's without their type prefix; None when it lists none (a build
    without --verbose, or a log of something else)."""
    text = read_trace_bytes(path).decode("utf-8", errors="replace")
    found: dict[str, list[str]] = {"dla": [], "gpu": []}
    for line in text.splitlines():
        match = _PLACED.search(line)
        if match and match.group(2):
            name = match.group(2)
            found[match.group(1).lower()].append(
                name if match.group(1) == "Dla" else _LAYER_TYPE.sub("", name)
            )
    if not found["dla"] and not found["gpu"]:
        return None
    return {device: tuple(names) for device, names in found.items()}


def read_json(path: Path) -> Any:
    """A JSON document, gzip or not (read as every trace is: source.read_trace_bytes)."""
    raw = read_trace_bytes(path)
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        where = (
            f" at line {exc.lineno} column {exc.colno}"
            if isinstance(exc, json.JSONDecodeError)
            else ""
        )
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        raise TraceFormatError(path, f"not valid JSON ({reason}{where}), truncated?") from None


def kind_of(document: Any) -> str | None:
    """Which export a decoded document is, by its keys; None when none."""
    if isinstance(document, dict):
        if "Layers" in document:
            return GRAPH
        if "device_information" in document or "performance_summary" in document:
            return METADATA
        return None
    if not isinstance(document, list):
        return None
    records = [r for r in document[:3] if isinstance(r, dict)]
    if any("startComputeMs" in r or "latencyMs" in r for r in records):
        return TIMING
    if any("averageMs" in r or "count" in r for r in records) or records:
        return PROFILE  # its shape is checked by profile(), which names what is wrong
    return None


def _stem(name: str, kind: str) -> str | None:
    """The engine's stem in a file name: TREx's suffix of its kind removed, or for a renamed
    file its ``.json``/``.gz`` ending; None when nothing is left."""
    for ending in (SUFFIXES[kind] + ".gz", SUFFIXES[kind], ".json.gz", ".json", ".gz"):
        if name.endswith(ending) and len(name) > len(ending):
            return name[: -len(ending)]
    return None


def profile(path: Path, document: Any) -> Profile:
    """The layer records of --exportProfile, each checked: a name and finite, non-negative
    times."""
    if not isinstance(document, list):
        raise TraceFormatError(path, "a layer profile is a JSON list of records")
    count: int | None = None
    records = list(enumerate(document))
    if records and isinstance(records[0][1], dict) and "name" not in records[0][1]:
        head: Any = records[0][1].get("count")
        if not _is_number(head):
            raise TraceFormatError(path, 'record [0] is neither a layer nor {"count": N}')
        count = int(head)
        records = records[1:]
    if not records:
        raise TraceFormatError(path, "the layer profile holds no layer records")
    layers = []
    for index, record in records:
        if not isinstance(record, dict):
            raise TraceFormatError(path, f"record [{index}] is not an object")
        name = record.get("name")
        if not isinstance(name, str):
            raise TraceFormatError(path, f"record [{index}] lacks a string 'name'")
        if "averageMs" not in record:
            raise TraceFormatError(path, f"record [{index}] ({name!r}) lacks 'averageMs'")
        values: dict[str, float | None] = {}
        for key in LAYER_FIELDS:
            if key not in record:
                values[key] = None
                continue
            value = record[key]
            # "percentage" is a share, the rest are times: none of them past a year's worth.
            if not _is_number(value) or not 0 <= value <= MAX_MS:
                raise TraceFormatError(
                    path,
                    f"record [{index}] ({name!r}) field {key!r} is not a number from 0 to "
                    f"{MAX_MS:.0f}: {json.dumps(value)[:40]}",
                )
            values[key] = float(value)
        layers.append(
            LayerTime(
                name=name,
                average_ms=float(values["averageMs"] or 0.0),
                median_ms=values["medianMs"],
                total_ms=values["timeMs"],
                percentage=values["percentage"],
            )
        )
    if sum(layer.average_ms for layer in layers) > MAX_MS:
        raise TraceFormatError(path, "the layers' 'averageMs' add up to more than a year")
    return Profile(count=count, layers=tuple(layers))


def timing(path: Path, document: Any) -> tuple[Inference, ...]:
    """The per-inference records of --exportTimes, each with its compute span and latency."""
    if not isinstance(document, list) or not document:
        raise TraceFormatError(path, "a times export is a non-empty JSON list of records")
    out = []
    for index, record in enumerate(document):
        if not isinstance(record, dict):
            raise TraceFormatError(path, f"record [{index}] is not an object")
        for key in REQUIRED_TIMES:
            if not _is_number(record.get(key)):
                raise TraceFormatError(
                    path, f"record [{index}] field {key!r} is missing or not a number"
                )
        for key, value in record.items():
            if _is_number(value) and not -MAX_MS <= value <= MAX_MS:
                raise TraceFormatError(
                    path, f"record [{index}] field {key!r} is past a year in ms: {value:g}"
                )
        phases = {}
        for phase, (starts, ends) in PHASES.items():
            start = next((record[k] for k in starts if _is_number(record.get(k))), None)
            end = next((record[k] for k in ends if _is_number(record.get(k))), None)
            if start is not None and end is not None:
                if end < start:
                    raise TraceFormatError(path, f"record [{index}]: {phase} ends before it starts")
                phases[phase] = (float(start), float(end))
        out.append(
            Inference(
                phases=phases,
                latency_ms=float(record["latencyMs"]),
                compute_ms=float(record["computeMs"]),
            )
        )
    return tuple(out)


def graph(path: Path, document: Any) -> dict[str, Any]:
    """The engine graph of --exportLayerInfo: its layers by name (TensorRT writes names only
    with ``--profilingVerbosity=detailed``; otherwise the layers are bare strings)."""
    layers = document.get("Layers") if isinstance(document, dict) else None
    if not isinstance(layers, list):
        raise TraceFormatError(path, "an engine graph's 'Layers' is a JSON list")
    by_name = {}
    for layer in layers:
        if isinstance(layer, dict) and isinstance(layer.get("Name"), str):
            by_name[layer["Name"]] = layer
    return by_name


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
