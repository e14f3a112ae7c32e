"""Capturing a profile with torch.profiler: the only package that imports torch at import time."""
