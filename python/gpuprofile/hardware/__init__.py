"""Roofs of the machine a trace ran on: datasheet tables, estimates, or calibration."""

from gpuprofile.hardware.match import hardware_for_device, hardware_for_trace
from gpuprofile.hardware.model import Hardware
from gpuprofile.hardware.tables import datasheet, user_hardware

__all__ = ["Hardware", "datasheet", "hardware_for_device", "hardware_for_trace", "user_hardware"]
