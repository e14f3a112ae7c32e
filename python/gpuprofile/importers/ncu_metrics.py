"""What one Nsight Compute launch measured, in base units: its time, DRAM bytes, FLOPs and the
speed-of-light figures, from the raw metric names (``--metrics``, ``--page raw``) or the
details page's display names ("Duration", "DRAM Throughput").

Units are read from each value's own unit, as ncu scales them unless ``--print-units base``:
"nsecond"/"usecond"/"msecond"/"second" (and "ns", "us", "ms"), "byte"/"Kbyte"/"Mbyte"/
"Gbyte" (decimal, as ncu writes them; "KiB"-style binary prefixes too), "cycle", rates such as
"cycle/nsecond", "Ghz" or "byte/second".

FLOPs are those the SASS op counts give: per precision add + mul + 2 * fma
(``smsp__sass_thread_inst_executed_op_{f,d,h}{add,mul,fma}_pred_on.sum``, or the same counts
under their SM-level names, ``sm__sass_...``), as Nsight Compute's own roofline counts them.
Tensor-core work is not in those counts: a launch whose tensor pipe was busy gets no FLOP
figure (NaN) rather than an undercount.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

from gpuprofile.importers.ncu_csv import Launch, Value
from gpuprofile.trace.precisions import NCU_PRECISIONS

_MISSING = frozenset({"", "n/a", "N/A", "NA", "-", "--", "nan", "(!)"})
_THOUSANDS = re.compile(r"^[-+]?\d{1,3}(,\d{3})+(\.\d*)?([eE][-+]?\d+)?$")
_PREFIX = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12, "p": 1e15}
_BINARY = {"ki": 2.0**10, "mi": 2.0**20, "gi": 2.0**30, "ti": 2.0**40}
_SECONDS = {"nsecond": 1e-9, "ns": 1e-9, "usecond": 1e-6, "us": 1e-6, "msecond": 1e-3,
            "ms": 1e-3, "second": 1.0, "s": 1.0}  # fmt: skip
_HERTZ = {"hz": 1.0, "khz": 1e3, "mhz": 1e6, "ghz": 1e9}
# Base units that take a decimal prefix ("Kbyte", "Mcycle", "Ginst"); others are counts.
_COUNTED = ("byte", "cycle", "inst", "warp", "sector", "request", "thread", "block", "flop")
_SASS = "smsp__sass_thread_inst_executed_op_{p}{op}_pred_on.sum"
# The same counts summed per SM, as some sections and hand-written --metrics lists name them.
_SASS_SM = "sm__sass_thread_inst_executed_op_{p}{op}_pred_on.sum"
# Above this tensor-pipe use the SASS counts miss the launch's matrix work.
_TENSOR_BUSY_PCT = 0.5


class UnreadableValue(ValueError):
    """A metric's value is not a number; carries the metric and the value for the message."""

    def __init__(self, metric: str, value: Value) -> None:
        self.metric = metric
        self.value = value
        super().__init__(
            f"line {value.line}: metric {metric!r}: value {value.text.strip()!r} is not a number"
        )


def number(text: str) -> float:
    """A value as ncu writes it: "823,404,288", "1.5", "n/a" (NaN). Raises ValueError."""
    cleaned = text.strip().strip('"').strip()
    if cleaned in _MISSING:
        return math.nan
    if _THOUSANDS.match(cleaned):
        cleaned = cleaned.replace(",", "")
    return float(cleaned)


def unit_scale(unit: str) -> tuple[float, str]:
    """The factor to base units and the base of a unit: "Mbyte" -> (1e6, "byte"),
    "usecond" -> (1e-6, "second"), "cycle/nsecond" -> (1e9, "cycle/second"), "%" -> (1, "%")."""
    if "/" in unit:
        top, bottom = unit.split("/", 1)
        top_scale, top_base = unit_scale(top)
        bottom_scale, bottom_base = unit_scale(bottom)
        return top_scale / bottom_scale, f"{top_base}/{bottom_base}"
    lowered = unit.strip().lower()
    if lowered in _SECONDS:
        return _SECONDS[lowered], "second"
    if lowered in _HERTZ:
        return _HERTZ[lowered], "hz"
    for base in _COUNTED:
        if lowered.endswith(base) or lowered.endswith(base + "s"):
            prefix = lowered[: lowered.rfind(base)]
            if prefix in _BINARY:
                return _BINARY[prefix], base
            if prefix in _PREFIX:
                return _PREFIX[prefix], base
    if lowered in ("b", "kb", "mb", "gb", "tb"):
        return _PREFIX[lowered[:-1]], "byte"
    return 1.0, lowered


@dataclass(frozen=True)
class Measured:
    """One launch's figures in base units (NaN: not in the file)."""

    duration_ns: float
    duration_from: str  # "time", "cycles / clock", or "" when neither is known
    dram_bytes: float
    flops: float
    metrics: dict[str, float]


class LaunchMetrics:
    """Numbers of one launch by metric name, in base units, parsed when first asked for."""

    def __init__(self, launch: Launch) -> None:
        self.launch = launch
        self._cache: dict[str, tuple[float, str]] = {}

    def get(self, *names: str, base: str | None = None) -> float:
        """The first of ``names`` the launch has (in base units), NaN if none. ``base``: take
        only values in that base unit ("second", "byte", "%", ...)."""
        for name in names:
            if name not in self.launch.metrics:
                continue
            value, unit = self.read(name)
            if base is not None and unit != base:
                continue
            if math.isfinite(value):
                return value
        return math.nan

    def read(self, name: str) -> tuple[float, str]:
        """A metric's value in base units and that base unit. Raises UnreadableValue."""
        if name not in self._cache:
            value = self.launch.metrics[name]
            try:
                raw = number(value.text)
            except ValueError:
                raise UnreadableValue(name, value) from None
            scale, base = unit_scale(value.unit)
            self._cache[name] = (raw * scale, base)
        return self._cache[name]

    def numbers(self) -> dict[str, float]:
        """Every metric whose value is a number, by name; text values (device names, cache
        configurations) are left out, unless a unit says a number was meant."""
        out: dict[str, float] = {}
        for name, value in self.launch.metrics.items():
            try:
                out[name] = self.read(name)[0]
            except UnreadableValue:
                if value.unit:
                    raise
        return {k: v for k, v in out.items() if math.isfinite(v)}


def measure(launch: Launch, device_clock_hz: float) -> Measured:
    """The duration, DRAM bytes, FLOPs and named metrics of a launch.

    Parameters:
        launch: the launch as read from the CSV.
        device_clock_hz: the device's SM clock, for a launch with cycles but no time (NaN:
            not known).

    Returns:
        Its figures; ``metrics`` holds the speed-of-light percentages, occupancy, tensor-pipe
        use and FLOPs per precision under short names, and every other numeric metric under
        its own name (in base units).

    Raises:
        UnreadableValue: a metric's value is not a number.
    """
    m = LaunchMetrics(launch)
    named: dict[str, float] = {}
    seconds = m.get("gpu__time_duration.sum", "gpu__time_duration.avg", "Duration", base="second")
    duration_from = "time" if math.isfinite(seconds) else ""
    cycles = m.get("sm__cycles_elapsed.avg", "sm__cycles_elapsed.max", "gpc__cycles_elapsed.max",
                   "Elapsed Cycles")  # fmt: skip
    clock = m.get("sm__cycles_elapsed.avg.per_second", "gpc__cycles_elapsed.avg.per_second",
                  "SM Frequency")  # fmt: skip
    if not math.isfinite(clock):
        clock = device_clock_hz
    if not math.isfinite(seconds) and math.isfinite(cycles) and clock > 0:
        seconds, duration_from = cycles / clock, "cycles / clock"
    named.update(cycles=cycles, sm_clock_hz=clock)

    dram = _dram_bytes(m, named, seconds)
    flops = _flops(m, named)
    named.update(
        sm_throughput_pct=m.get(
            "sm__throughput.avg.pct_of_peak_sustained_elapsed",
            "Compute (SM) Throughput",
            base="%",
        ),
        memory_throughput_pct=m.get(
            "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
            "Memory Throughput",
            base="%",
        ),
        dram_throughput_pct=m.get(
            "dram__throughput.avg.pct_of_peak_sustained_elapsed", "DRAM Throughput", base="%"
        ),
        achieved_occupancy_pct=m.get(
            "sm__warps_active.avg.pct_of_peak_sustained_active", "Achieved Occupancy", base="%"
        ),
        l2_hit_rate_pct=m.get("lts__t_sector_hit_rate.pct", "L2 Hit Rate", base="%"),
    )
    tensor = [
        m.get(name, base="%") for name in launch.metrics if "pipe_tensor" in name and "pct" in name
    ]
    tensor = [t for t in tensor if math.isfinite(t)]
    if tensor:
        named["tensor_pipe_pct"] = max(tensor)
        if max(tensor) > _TENSOR_BUSY_PCT:
            flops = math.nan  # the SASS counts hold no tensor-core math
    metrics = {**m.numbers(), **{k: v for k, v in named.items() if math.isfinite(v)}}
    return Measured(
        duration_ns=seconds * 1e9 if math.isfinite(seconds) else math.nan,
        duration_from=duration_from,
        dram_bytes=dram,
        flops=flops,
        metrics=metrics,
    )


def _dram_bytes(m: LaunchMetrics, named: dict[str, float], seconds: float) -> float:
    for read_name, write_name in (
        ("dram__bytes_read.sum", "dram__bytes_write.sum"),
        ("dram__bytes_op_read.sum", "dram__bytes_op_write.sum"),
    ):
        read, write = m.get(read_name, base="byte"), m.get(write_name, base="byte")
        if math.isfinite(read) or math.isfinite(write):
            named.update(dram_bytes_read=read, dram_bytes_write=write)
            return _sum(read, write)
    total = m.get("dram__bytes.sum", base="byte")
    if math.isfinite(total):
        return total
    rate = m.get("dram__bytes.sum.per_second", base="byte/second")
    return rate * seconds if math.isfinite(rate) and math.isfinite(seconds) else math.nan


def _flops(m: LaunchMetrics, named: dict[str, float]) -> float:
    total, any_counted = 0.0, False
    for letter, precision in NCU_PRECISIONS.items():
        add, mul, fma = (
            m.get(_SASS.format(p=letter, op=op), _SASS_SM.format(p=letter, op=op))
            for op in ("add", "mul", "fma")
        )
        if not any(math.isfinite(v) for v in (add, mul, fma)):
            continue
        flops = sum(0.0 if math.isnan(v) else v for v in (add, mul, fma, fma))
        named[f"{precision}_flops"] = flops
        total += flops
        any_counted = True
    return total if any_counted else math.nan


def _sum(a: float, b: float) -> float:
    """a + b, a missing one counted 0, NaN when both are missing."""
    if not (math.isfinite(a) or math.isfinite(b)):
        return math.nan
    return (a if math.isfinite(a) else 0.0) + (b if math.isfinite(b) else 0.0)


def dims(text: str) -> tuple[int, int, int] | None:
    """ "(1024, 1, 1)" -> (1024, 1, 1); None when it is not up to three whole numbers from 0
    to 2**31 - 1 (a launch dimension past that is damage, not a launch)."""
    parts = [p.strip() for p in text.strip().strip("()[]").split(",")]
    try:
        values = [int(p.replace(" ", "")) for p in parts if p]
    except ValueError:
        return None
    if not values or len(values) > 3 or not all(0 <= v < 2**31 for v in values):
        return None
    x, y, z = [*values, 1, 1][:3]
    return x, y, z


def device_properties(metrics: Mapping[str, Value]) -> dict[str, object]:
    """The ``device__attribute_*`` metrics of a launch, under their own names, values as
    numbers where they are numbers."""
    out: dict[str, object] = {}
    for name, value in metrics.items():
        if name.startswith("device__attribute_"):
            try:
                number_value = number(value.text)
            except ValueError:
                out[name] = value.text.strip()
                continue
            if math.isfinite(number_value):
                out[name] = int(number_value) if number_value.is_integer() else number_value
    return out
