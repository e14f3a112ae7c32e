"""Which notebook cell each of ipykernel's temporary code files holds, for naming the frames
of a ``--stack`` capture ``cell [5] line 12`` instead of ``/tmp/ipykernel_<pid>/<hash>.py``.

IPython's compiler (``shell.compile``, ipykernel's ``XCachingCompiler``) names each cell's code
file and records, in ``_filename_map``, the execution count it ran as; the capture keeps a copy.
"""

from __future__ import annotations

import sys


def running_cells() -> dict[str, int]:
    """File name -> execution count of the cells the running IPython kernel compiled; empty
    outside IPython, or where its compiler keeps no such map."""
    ipython = sys.modules.get("IPython")  # never import it: outside a kernel there is none
    get_ipython = getattr(ipython, "get_ipython", None)
    shell = get_ipython() if callable(get_ipython) else None
    names = getattr(getattr(shell, "compile", None), "_filename_map", None)
    if not isinstance(names, dict):
        return {}
    return {
        str(name): count
        for name, count in names.items()
        if isinstance(name, str) and isinstance(count, int) and not isinstance(count, bool)
    }
