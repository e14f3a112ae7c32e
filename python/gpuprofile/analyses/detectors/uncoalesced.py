"""Global loads or stores that touch more 32-byte sectors per request than the access needs:
a warp's threads reading or writing addresses far apart (a column of a row-major matrix, a
stride between threads), so each request moves many sectors for few useful bytes.

Read from Nsight Compute's memory counters on each launch:
``l1tex__t_sectors_pipe_lsu_mem_global_op_{ld,st}.sum`` over
``l1tex__t_requests_pipe_lsu_mem_global_op_{ld,st}.sum``. A warp of 32 threads each moving
4 bytes needs 4 sectors a request when its addresses are consecutive; 16-byte vector accesses
need 16. The counters do not say the access width, so the ideal is the kernel's own better
direction (a transpose reads coalesced and writes strided, both in one element type), held
between 4 and 16; with one direction counted, 16, the widest. A direction is uncoalesced when
it moves at least UNCOALESCED_FACTOR times its ideal: then at least half of what it fetched
was not used.

Gain: half the kernel's time times the share of all its global sectors that are excess
(sectors beyond requests x ideal). Moving them costs DRAM or L2 time the kernel would not
spend if coalesced; half, because restaging through shared memory (the usual fix) has its own
cost. On the shared transpose pair, the naive kernel's gain is 63 us of 163; the tiled kernel
ran in 85.8 us, 77 us less.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from gpuprofile.analyses.claims import frame_claim
from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.hints import Hint, heaviest_events
from gpuprofile.analyses.thresholds import worth_reporting
from gpuprofile.units import format_count, format_time

SECTORS = "l1tex__t_sectors_pipe_lsu_mem_global_op_{}.sum"
REQUESTS = "l1tex__t_requests_pipe_lsu_mem_global_op_{}.sum"
DIRECTIONS = {"ld": "loads", "st": "stores"}
# A coalesced request of 32 threads: 4 sectors with 4-byte accesses, 16 with 16-byte ones.
SECTORS_NARROWEST, SECTORS_WIDEST = 4.0, 16.0
UNCOALESCED_FACTOR = 2.0
ACHIEVABLE = 0.5

FIX = (
    "Make a warp's 32 threads touch consecutive addresses: index the fastest-moving thread "
    "(threadIdx.x) along the contiguous dimension of each array it reads and writes.",
    "Where one side must be strided (a transpose, a gather by column), stage through shared "
    "memory: read a tile coalesced into __shared__, sync, write it out coalesced along the other "
    "dimension (pad the tile to [32][33] so the column reads do not conflict on banks).",
    "Change the layout instead of the access: store the array in the order it is read (a "
    "structure of arrays, or the transposed matrix once), so every pass is contiguous.",
)


def detect(analysis: Analysis) -> list[Hint]:
    found = (_hint(analysis, rank, _launches(analysis, rank)) for rank in analysis.trace.ranks)
    return [hint for hint in found if hint is not None]


def _launches(analysis: Analysis, rank: int) -> pd.DataFrame:
    """Per measured launch with an uncoalesced direction: its sectors, requests, ideal and the
    excess share of its global sectors."""
    kernels = analysis.rank_table("kernels", rank)
    measured = kernels[kernels["metrics"].notna()]
    rows: list[dict[str, Any]] = []
    for at, metrics in enumerate(measured["metrics"].tolist()):
        counted: dict[str, tuple[float, float]] = {}
        for direction in DIRECTIONS:
            sectors = metrics.get(SECTORS.format(direction))
            requests = metrics.get(REQUESTS.format(direction))
            if sectors is not None and requests and requests > 0 and sectors >= 0:
                counted[direction] = (float(sectors), float(requests))
        if not counted:
            continue
        ratios = [s / r for s, r in counted.values()]
        ideal = (
            min(max(min(ratios), SECTORS_NARROWEST), SECTORS_WIDEST)
            if len(counted) == 2
            else SECTORS_WIDEST
        )
        total = sum(s for s, _ in counted.values())
        bad = {d: (s, r) for d, (s, r) in counted.items() if s / r >= UNCOALESCED_FACTOR * ideal}
        if not bad or total <= 0:
            continue
        excess = sum(s - r * ideal for s, r in bad.values())
        rows.append(
            {
                "id": int(measured["id"].iloc[at]),
                "name": str(measured["name"].iloc[at]),
                "start_ns": int(measured["start_ns"].iloc[at]),
                "dur_ns": int(measured["dur_ns"].iloc[at]),
                "ideal": ideal,
                "directions": "; ".join(
                    f"{DIRECTIONS[d]} {s / r:.0f} sectors a request "
                    f"({format_count(int(s), 'sector')} for {format_count(int(r), 'request')})"
                    for d, (s, r) in bad.items()
                ),
                "excess_share": excess / total,
            }
        )
    return pd.DataFrame(rows)


def _hint(analysis: Analysis, rank: int, table: pd.DataFrame) -> Hint | None:
    if table.empty:
        return None
    dur = table["dur_ns"].to_numpy(np.float64)
    gain = round(float((dur * table["excess_share"].to_numpy() * ACHIEVABLE).sum()))
    wall = analysis.wall_ns(rank)
    if not worth_reporting("uncoalesced-access", gain, wall):
        return None
    heaviest = table.sort_values("dur_ns", ascending=False).iloc[0]
    time_ns = int(dur.sum())
    return Hint(
        kind="uncoalesced-access",
        subject="uncoalesced global memory accesses",
        title=(
            f"{format_count(len(table))} kernel launch{'' if len(table) == 1 else 'es'} with "
            f"uncoalesced global memory accesses ({format_time(time_ns)})"
        ),
        basis_ns=wall,
        gain_ns=gain,
        claim=frame_claim(table),
        gain_method=(
            "Per launch, half its time times the share of its global sectors beyond requests x "
            "the ideal sectors a request (Nsight Compute's l1tex sector and request counters): "
            "the traffic coalescing removes; half, because restaging has its own cost."
        ),
        confidence="medium",
        explanation=(
            f"Heaviest: {analysis.kernel_label(str(heaviest['name']))}, "
            f"{format_time(int(heaviest['dur_ns']))}: {heaviest['directions']}, where "
            f"{heaviest['ideal']:.0f} a request is coalesced (the kernel's other direction, or "
            f"16 for the widest access). {heaviest['excess_share']:.0%} of its global sectors "
            "carried bytes no thread asked for."
        ),
        numbers={
            "launches": len(table),
            "time_ns": time_ns,
            "heaviest_ideal_sectors_per_request": float(heaviest["ideal"]),
            "heaviest_excess_sector_share": round(float(heaviest["excess_share"]), 3),
        },
        fix=FIX,
        code="",
        evidence=(heaviest_events(table, "kernels", rank, "uncoalesced launches, longest first"),),
        rank=rank,
    )
