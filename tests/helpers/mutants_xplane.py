"""Mutants of a JAX/XLA XPlane protobuf (issue 16): bytes flipped, the file cut short, a length
prefix made too long or too short, a field's wire type changed, a submessage repeated. Every
choice comes from a ``random.Random``, so hypothesis can hand one in and shrink what fails."""

from __future__ import annotations

import random


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
    found: list[tuple[int, int, int]] = []
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
    return found


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


MUTATIONS = (_flip, _truncate, _break_length, _break_length, _wire_type, _repeat)


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
