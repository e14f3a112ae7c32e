"""gpuprofile."""
