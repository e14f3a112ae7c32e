import os

# Before torch is imported anywhere: torch's default of 2 threads on a shared 2-core box makes
# tiny workloads 100x slower when another process runs.
os.environ.setdefault("OMP_NUM_THREADS", "1")
