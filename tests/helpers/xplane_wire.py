"""An XSpace read straight from the protobuf wire format, apart from gpuprofile and jaxlib.

The tests compute expected counts and times with it, so the importer's decoder (jaxlib) is
checked against a second reading. Field numbers are those of tsl/profiler/protobuf/xplane.proto
(XSpace.planes 1; XPlane id 1, name 2, lines 3, event_metadata 4, stat_metadata 5, stats 6;
XLine id 1, name 2, timestamp_ns 3, events 4; XEvent metadata_id 1, offset_ps 2, duration_ps 3,
stats 4; XStat metadata_id 1, double 2, uint64 3, int64 4, str 5, bytes 6, ref 7).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Event:
    metadata_id: int = 0
    offset_ps: int = 0
    duration_ps: int = 0
    stats: dict[int, Any] = field(default_factory=dict)  # stat metadata id -> value


@dataclass
class Line:
    id: int = 0
    name: str = ""
    timestamp_ns: int = 0
    events: list[Event] = field(default_factory=list)


@dataclass
class Plane:
    id: int = 0
    name: str = ""
    lines: list[Line] = field(default_factory=list)
    event_names: dict[int, str] = field(default_factory=dict)
    stat_names: dict[int, str] = field(default_factory=dict)
    stats: dict[int, Any] = field(default_factory=dict)

    def stat(self, stats: dict[int, Any], name: str) -> Any:
        """A stat's value by name; a reference value resolves to the name it points at."""
        for key, value in stats.items():
            if self.stat_names.get(key) == name:
                return self.stat_names[value.ref] if isinstance(value, Ref) else value
        return None

    def named_stats(self) -> dict[str, Any]:
        return {self.stat_names[k]: self.stat(self.stats, self.stat_names[k]) for k in self.stats}


@dataclass(frozen=True)
class Ref:
    ref: int


def read_space(data: bytes) -> list[Plane]:
    return [_plane(value) for number, value in _fields(data) if number == 1]


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7


def _fields(data: bytes) -> Iterator[tuple[int, Any]]:
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 1:
            value, pos = data[pos : pos + 8], pos + 8
        elif wire == 2:
            size, pos = _varint(data, pos)
            value, pos = data[pos : pos + size], pos + size
        elif wire == 5:
            value, pos = data[pos : pos + 4], pos + 4
        else:
            raise ValueError(f"wire type {wire} at byte {pos}")
        yield number, value


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _stat(data: bytes) -> tuple[int, Any]:
    key, value = 0, None
    for number, raw in _fields(data):
        if number == 1:
            key = _signed(raw)
        elif number == 2:
            value = struct.unpack("<d", raw)[0]
        elif number == 3:
            value = raw
        elif number == 4:
            value = _signed(raw)
        elif number == 5:
            value = raw.decode()
        elif number == 6:
            value = bytes(raw)
        elif number == 7:
            value = Ref(raw)
    return key, value


def _plane(data: bytes) -> Plane:
    plane = Plane()
    for number, raw in _fields(data):
        if number == 1:
            plane.id = _signed(raw)
        elif number == 2:
            plane.name = raw.decode()
        elif number == 3:
            plane.lines.append(_line(raw))
        elif number in (4, 5):
            entry = dict(_fields(raw))
            name = dict(_fields(entry.get(2, b""))).get(2, b"").decode()
            target = plane.event_names if number == 4 else plane.stat_names
            target[_signed(entry.get(1, 0))] = name
        elif number == 6:
            key, value = _stat(raw)
            plane.stats[key] = value
    return plane


def _line(data: bytes) -> Line:
    line = Line()
    for number, raw in _fields(data):
        if number == 1:
            line.id = _signed(raw)
        elif number == 2:
            line.name = raw.decode()
        elif number == 3:
            line.timestamp_ns = _signed(raw)
        elif number == 4:
            line.events.append(_event(raw))
    return line


def _event(data: bytes) -> Event:
    event = Event()
    for number, raw in _fields(data):
        if number == 1:
            event.metadata_id = _signed(raw)
        elif number == 2:
            event.offset_ps = _signed(raw)
        elif number == 3:
            event.duration_ps = _signed(raw)
        elif number == 4:
            key, value = _stat(raw)
            event.stats[key] = value
    return event
