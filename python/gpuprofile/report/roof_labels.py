"""Text boxes on the roofline chart, so that no label covers another label or a line: a label's
box as a polygon, an overlap test, and a spread of wanted positions that keeps labels apart.
Pure: used by ``roofline_layout``, whose result every renderer draws.

Units: px of the chart (y down). Text is measured by estimate, generously: a label takes
``font * CHAR_EM`` per character and ``font * (ASCENT + DESCENT)`` of height.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

CHAR_EM = 0.66
ASCENT = 0.95
DESCENT = 0.25
PAD = 1.0  # px of air kept around every label

Pt = tuple[float, float]
Anchor = Literal["start", "middle", "end"]


def text_width(text: str, font: float) -> float:
    """The estimated width in px of ``text`` at ``font`` px."""
    return len(text) * font * CHAR_EM


@dataclass(frozen=True)
class Label:
    """A label as SVG draws it: text, baseline anchor (x, y), text-anchor, rotation in degrees
    about the anchor, font size in px; ``box`` is its padded box's corners on the chart."""

    text: str
    x: float
    y: float
    anchor: Anchor
    angle: float
    font: float
    box: tuple[Pt, ...]


def label(text: str, x: float, y: float, anchor: Anchor = "start", angle: float = 0.0,
          font: float = 10.0) -> Label:  # fmt: skip
    """A Label with its box: the text's extent along its baseline and from its ascent to its
    descent, padded, rotated about the anchor."""
    w = text_width(text, font)
    u0 = {"start": 0.0, "middle": -w / 2, "end": -w}[anchor] - PAD
    u1 = u0 + w + 2 * PAD
    v0, v1 = -font * ASCENT - PAD, font * DESCENT + PAD
    a = math.radians(angle)
    cos, sin = math.cos(a), math.sin(a)
    corners = ((u0, v0), (u1, v0), (u1, v1), (u0, v1))
    box = tuple((x + u * cos - v * sin, y + u * sin + v * cos) for u, v in corners)
    return Label(text, x, y, anchor, angle, font, box)


def overlap(a: Sequence[Pt], b: Sequence[Pt]) -> bool:
    """Whether two convex polygons (a segment is one of two points) overlap; touching is not
    overlapping. Separating axes: no edge normal of either separates them."""
    for poly in (a, b):
        for i in range(len(poly)):
            (x0, y0), (x1, y1) = poly[i], poly[(i + 1) % len(poly)]
            nx, ny = y0 - y1, x1 - x0
            if nx == 0 and ny == 0:
                continue
            da = [x * nx + y * ny for x, y in a]
            db = [x * nx + y * ny for x, y in b]
            eps = 1e-9 * (abs(nx) + abs(ny))
            if max(da) <= min(db) + eps or max(db) <= min(da) + eps:
                return False
    return True


def inside(box: Sequence[Pt], left: float, top: float, right: float, bottom: float) -> bool:
    """Whether every corner of ``box`` lies within the rectangle."""
    return all(
        left - 1e-9 <= x <= right + 1e-9 and top - 1e-9 <= y <= bottom + 1e-9 for x, y in box
    )


def spread(wanted: Sequence[float], gap: float, lo: float, hi: float) -> list[float]:
    """Positions as close to ``wanted`` as they can be, in the same order, each at least ``gap``
    from the next and all within [lo, hi] when they fit: positions that would come closer than
    ``gap`` form a cluster centred on what its members want, and clusters merge until none do."""
    order = sorted(range(len(wanted)), key=lambda i: wanted[i])
    clusters: list[tuple[list[int], float]] = []

    def start_of(members: list[int]) -> float:
        # The start that puts the members, gap apart, nearest (least squares) to what they want.
        mean = sum(wanted[i] - k * gap for k, i in enumerate(members)) / len(members)
        return min(max(mean, lo), max(lo, hi - (len(members) - 1) * gap))

    for i in order:
        members = [i]
        start = start_of(members)
        while clusters:
            before, before_start = clusters[-1]
            if before_start + len(before) * gap <= start:
                break
            clusters.pop()
            members = before + members
            start = start_of(members)
        clusters.append((members, start))
    out = [0.0] * len(wanted)
    for members, start in clusters:
        for k, i in enumerate(members):
            out[i] = start + k * gap
    return out


Clear = Callable[[tuple[Pt, ...]], bool]


def along_slope(text: str, slope: Sequence[Pt], clear: Clear, font: float) -> Label | None:
    """A label along a rising line (the memory roof, from its lower end): above it, else below
    it, at the first place from where it enters the plot that ``clear`` accepts; else None."""
    (ax, ay), (bx, by) = slope
    length = math.hypot(bx - ax, by - ay)
    ux, uy = (bx - ax) / length, (by - ay) / length  # along the line
    nx, ny = uy, -ux  # its normal, pointing up
    angle = math.degrees(math.atan2(uy, ux))
    # Above the line the baseline clears it by the descent, below by the ascent.
    for side, shift in ((1.0, 4 + font * DESCENT + PAD), (-1.0, 4 + font * ASCENT + PAD)):
        for k in range(40):
            along = 6 + k * length / 40
            x, y = ax + along * ux + side * nx * shift, ay + along * uy + side * ny * shift
            candidate = label(text, x, y, angle=angle, font=font)
            if clear(candidate.box):
                return candidate
    return None


def beside_drop(text: str, at: Pt, bottom: float, clear: Clear, font: float) -> Label | None:
    """A ridge's label: up its drop line from the x axis (``bottom``), left of the line, else
    right of it; else level under the roof, right of the ridge; else None."""
    candidates = [
        label(text, at[0] - font * DESCENT - PAD - 2, bottom - 4, angle=-90, font=font),
        label(text, at[0] + font * ASCENT + PAD + 2, bottom - 4, angle=-90, font=font),
        label(text, at[0] + 4, at[1] + 4 + font * ASCENT + PAD, font=font),
    ]
    return next((c for c in candidates if clear(c.box)), None)
