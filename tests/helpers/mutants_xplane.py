"""Mutants of a JAX/XLA XPlane protobuf (issue 16): bytes flipped, the file cut short, a length
prefix made too long or too short, a field's wire type changed, a submessage repeated. Every
choice comes from a ``random.Random``, so hypothesis can hand one in and shrink what fails."""

from __future__ import annotations

import random
from typing import Any


def _varint(data: bytes, at: int) -> tuple[int, int] | None:
    """The varint at ``at`` and the offset after it, or None where the bytes end first."""
    value, shift = 0, 0
    while at < len(data) and shift < 70:
        byte = data[at]
        value |= (byte & 0x7F) << shift
        at += 1
        if not byte & 0x80:
            return value, at
        shift += 7
    return None


def _encode(value: int) -> bytes:
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def length_prefixes(data: bytes, limit: int = 4096) -> list[tuple[int, int, int]]:
    """(where the prefix starts, where the payload starts, the payload's length) of the
    length-delimited fields met walking the message and its submessages, up to ``limit``."""
    return _walk(data, limit)[0]


def varints(data: bytes, limit: int = 4096) -> list[tuple[int, int]]:
    """(start, end) of the varint values (ids, times, int stats) met on the same walk."""
    return _walk(data, limit)[1]


def _walk(data: bytes, limit: int) -> tuple[list[tuple[int, int, int]], list[tuple[int, int]]]:
    found: list[tuple[int, int, int]] = []
    numbers: list[tuple[int, int]] = []
    stack = [(0, len(data))]
    while stack and len(found) < limit:
        at, end = stack.pop()
        while at < end and len(found) < limit:
            key = _varint(data, at)
            if key is None:
                break
            tag, after = key
            wire = tag & 7
            if wire == 0:
                skipped = _varint(data, after)
                if skipped is None:
                    break
                numbers.append((after, skipped[1]))
                at = skipped[1]
            elif wire == 1:
                at = after + 8
            elif wire == 5:
                at = after + 4
            elif wire == 2:
                size = _varint(data, after)
                if size is None or size[1] + size[0] > end:
                    break
                found.append((after, size[1], size[0]))
                stack.append((size[1], size[1] + size[0]))  # maybe a submessage
                at = size[1] + size[0]
            else:
                break
    return found, numbers


def _flip(data: bytearray, rng: random.Random) -> None:
    for _ in range(rng.choice((1, 4, 16))):
        data[rng.randrange(len(data))] = rng.randrange(256)


def _truncate(data: bytearray, rng: random.Random) -> None:
    del data[rng.randrange(len(data)) :]


def _break_length(data: bytearray, rng: random.Random) -> None:
    prefixes = length_prefixes(bytes(data))
    if not prefixes:
        return _flip(data, rng)
    start, payload, size = rng.choice(prefixes)
    new = rng.choice((0, size + 1, size - 1 if size else 1, size * 2 + 5, 2**31, 2**63))
    data[start:payload] = _encode(max(new, 0))


def _wire_type(data: bytearray, rng: random.Random) -> None:
    prefixes = length_prefixes(bytes(data))
    if prefixes:
        start = rng.choice(prefixes)[0]
        # The tag byte sits just before the length; a tag of one byte is the common case.
        if start > 0 and data[start - 1] < 0x80:
            data[start - 1] = (data[start - 1] & ~7) | rng.choice((0, 1, 3, 5, 7))


def _repeat(data: bytearray, rng: random.Random) -> None:
    prefixes = length_prefixes(bytes(data))
    if prefixes:
        start, payload, size = rng.choice(prefixes)
        tag_at = start - 1
        if tag_at >= 0 and data[tag_at] < 0x80:
            field = bytes(data[tag_at : payload + size])
            data[payload + size : payload + size] = field * rng.choice((1, 2))


# A message as a list of [field number, wire type, value]: an int (varint), bytes (fixed
# width), or a list (a length-delimited field that parses as a message) or bytes (one that
# does not: strings, packed numbers).
Message = list[list[Any]]


def _parse(data: bytes, depth: int = 0) -> Message | None:
    """``data`` as a message, or None where it is not one (then it is a string or bytes)."""
    out: Message = []
    at = 0
    while at < len(data):
        key = _varint(data, at)
        if key is None or key[0] >> 3 == 0:
            return None
        (tag, at), wire = key, key[0] & 7
        if wire == 0:
            value = _varint(data, at)
            if value is None:
                return None
            out.append([tag >> 3, 0, value[0]])
            at = value[1]
        elif wire in (1, 5):
            width = 8 if wire == 1 else 4
            if at + width > len(data):
                return None
            out.append([tag >> 3, wire, data[at : at + width]])
            at += width
        elif wire == 2:
            size = _varint(data, at)
            if size is None or size[1] + size[0] > len(data):
                return None
            payload = data[size[1] : size[1] + size[0]]
            inner = _parse(payload, depth + 1) if depth < 12 and payload else None
            out.append([tag >> 3, 2, payload if inner is None else inner])
            at = size[1] + size[0]
        else:
            return None
    return out


def _serialize(message: Message) -> bytes:
    out = bytearray()
    for number, wire, value in message:
        out += _encode(number << 3 | wire)
        if wire == 0:
            out += _encode(value)
        elif wire == 2:
            payload = value if isinstance(value, bytes) else _serialize(value)
            out += _encode(len(payload)) + payload
        else:
            out += value
    return bytes(out)


def _numbers(message: Message) -> list[list[Any]]:
    """Every varint field of the message and its submessages (ids, times, integer stats)."""
    found = []
    stack = [message]
    while stack:
        for field in stack.pop():
            if field[1] == 0:
                found.append(field)
            elif field[1] == 2 and isinstance(field[2], list):
                stack.append(field[2])
    return found


def _extreme(data: bytearray, rng: random.Random) -> None:
    """A few varint values (times, ids, integer stats) set to an extreme and the message
    written again, its lengths right: the file stays a valid protobuf, so the importer, not
    the decoder, meets the value."""
    message = _parse(bytes(data))
    fields = _numbers(message) if message is not None else []
    if not fields:
        return _flip(data, rng)
    for field in rng.sample(fields, k=min(len(fields), rng.choice((1, 3, 10)))):
        field[2] = rng.choice(EXTREMES)
    data[:] = _serialize(message or [])


EXTREMES = (0, 1, 2**31, 2**32 - 1, 2**53 + 1, 2**62, 2**63 - 1, 2**63, 2**64 - 1)
MUTATIONS = (_flip, _truncate, _break_length, _wire_type, _repeat, _extreme, _extreme, _extreme)


def mutate_xplane(data: bytes, rng: random.Random) -> bytes:
    """The bytes of one mutant of an XPlane protobuf.

    Parameters:
        data: the ``.xplane.pb`` file's bytes.
        rng: where every choice comes from.

    Returns:
        The mutant's bytes.
    """
    mutant = bytearray(data)
    for _ in range(rng.choice((1, 1, 2))):
        if mutant:
            rng.choice(MUTATIONS)(mutant, rng)
    return bytes(mutant)
