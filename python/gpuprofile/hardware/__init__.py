"""Roofs of the machine a trace ran on: datasheet tables, estimates, or calibration."""

from gpuprofile.hardware.model import Hardware

__all__ = ["Hardware"]
