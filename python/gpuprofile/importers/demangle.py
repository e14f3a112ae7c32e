"""Itanium-mangled C++ names (``_ZN5aiter24add_rmsnorm_quant_kernelI...``), which ROCm's tracer
writes for some kernels, as the demangled signatures CUDA traces carry.

binutils' ``c++filt`` demangles them, once per trace for all its mangled names. libstdc++'s own
``__cxa_demangle`` (what the ``cxxfilt`` package calls through ctypes) rejects manglings newer
than it, such as ``DF16b`` (``std::bfloat16_t``), which ROCm's kernels use; c++filt's libiberty
reads them. A name c++filt cannot read (a name the tracer cut short) stays as written; so do
all of them where c++filt is absent or fails: the names are then only harder to read.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterable

MANGLED_PREFIX = "_Z"
# c++filt answers thousands of names in milliseconds; past this it is stuck, not slow.
TIMEOUT_S = 30


def demangled(names: Iterable[str]) -> dict[str, str]:
    """{mangled name: its demangled signature} for the names c++filt reads; {} without it."""
    mangled = sorted(
        {n for n in names if n.startswith(MANGLED_PREFIX) and not any(c.isspace() for c in n)}
    )
    tool = shutil.which("c++filt") if mangled else None
    if tool is None:
        return {}
    try:
        done = subprocess.run(
            [tool],
            input="\n".join(mangled) + "\n",
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            check=True,
        )
    except (OSError, subprocess.SubprocessError, UnicodeError):
        return {}
    lines = done.stdout.splitlines()
    if len(lines) != len(mangled):
        return {}
    return {m: d for m, d in zip(mangled, lines, strict=True) if d and d != m}
