"""PyTorch profiler / Kineto Chrome-trace JSON (also written by vLLM, HTA's tests, TraceLens, ...).

msgspec decodes only the fields we use into typed structs, so a trace is never materialised as
Python dicts; unknown keys are skipped by the decoder. Every variant seen in the wild maps onto
the same tables: old capitalized categories (``Kernel``, ``Runtime``, ``Operator``), top-level
list documents, ``computeProperties``, absolute and ``baseTimeNanoseconds``-relative time, int
and float ``ts``, AMD/HIP names, and CUPTI range-profiler traces (which hold no kernel timeline).

The reader is one pipeline; each module is a stage and imports only the stages before it
(tests/unit/test_kineto_stages.py holds it to that):

1. ``read``: a job's files and their ranks (each file's text: ``source.read_trace_bytes``,
   shared with the other formats);
2. ``format``: the structs of the fields read, Kineto's category names, counter names;
3. ``decode``: a file's text as its header and typed events, whole or a part at a time;
4. ``check``: what reaches the tables is valid, and what could not be used is counted;
5. ``header``: the header's values checked (devices, distributedInfo, versions);
6. ``columns``: each table's events as typed columns;
7. ``direct``: a part of a large file from its events' JSON texts straight to columns, in C,
   where every event is one it reads exactly as the stages above would (else they read it);
8. ``capture_ranges``: a capture's own ranges: module calls as annotations, line ranges
   (``--stack``) as each op's line;
9. ``trace``: the stages run for each file of a rank, into one Trace; a job's ranks merged;
10. ``extent``: a file's timeline extent without a Trace (the capture's recorder asks it).
"""

from gpuprofile.importers.kineto.extent import scan_extent
from gpuprofile.importers.kineto.format import (
    GPU_CATEGORY,
    PROFILER_MARKERS,
    RANGE_PROFILER,
    counter_name,
)
from gpuprofile.importers.kineto.trace import load_kineto, load_kineto_windows

__all__ = [
    "GPU_CATEGORY",
    "PROFILER_MARKERS",
    "RANGE_PROFILER",
    "counter_name",
    "load_kineto",
    "load_kineto_windows",
    "scan_extent",
]
