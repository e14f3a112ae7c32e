"""The history: every profiled run remembered in a SQLite file (docs/history.md)."""

from gpuprofile.store.history import History, StoredRun, open_history
from gpuprofile.store.location import history_path
from gpuprofile.store.origin import Origin

__all__ = ["History", "Origin", "StoredRun", "history_path", "open_history"]
