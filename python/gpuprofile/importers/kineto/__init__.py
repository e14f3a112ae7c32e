"""The PyTorch profiler / Kineto reader (its stages are this package's modules)."""

from gpuprofile.importers.kineto.trace import load_kineto, load_kineto_windows

__all__ = ["load_kineto", "load_kineto_windows"]
