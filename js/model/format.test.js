import { test } from "node:test";
import assert from "node:assert/strict";

import {
  evidenceText,
  formatBytes,
  formatBytesPerS,
  formatReading,
  formatCount,
  formatFlopsPerS,
  formatFraction,
  formatHintNumber,
  formatInstant,
  formatIntensity,
  formatPercent,
  formatSI,
  formatTime,
  gaugeReading,
  gaugesByRank,
  hintNumberLabel,
  num,
  UNKNOWN,
} from "./format.js";

test("unknown numbers are unknown, not zero", () => {
  for (const x of [null, undefined, "", NaN, Infinity, "abc", true]) {
    assert.equal(num(x), null, String(x));
    assert.equal(formatSI(x, "B"), UNKNOWN);
    assert.equal(formatTime(x), UNKNOWN);
    assert.equal(formatPercent(x), UNKNOWN);
  }
  assert.equal(num("12.5"), 12.5);
  assert.equal(num(0), 0);
});

test("SI prefixes pick the largest unit that keeps the value >= 1, 3 significant digits", () => {
  // H100 SXM datasheet figures.
  assert.equal(formatBytesPerS(3.35e12), "3.35 TB/s");
  assert.equal(formatFlopsPerS(989.5e12), "990 TFLOP/s"); // 989.5 rounds to 990 at 3 digits
  assert.equal(formatFlopsPerS(1.979e15), "1.98 PFLOP/s");
  assert.equal(formatBytes(85018279936), "85.0 GB");
  assert.equal(formatBytes(512), "512 B");
  assert.equal(formatBytes(0), "0 B");
  assert.equal(formatBytes(0.5), "0.500 B");
  assert.equal(formatSI(12345, ""), "12.3 k");
  // Rounding can carry into the next prefix: 999.96e9 is 1.00e12 at 3 digits.
  assert.equal(formatSI(999.96e9, "B"), "1.00 TB");
  assert.equal(formatSI(-2.5e6, "B"), "-2.50 MB");
  // Beyond P the prefix stays P.
  assert.equal(formatSI(5e18, "FLOP"), "5000 PFLOP");
  // Rounding can carry into the next decade too: still 3 digits, no exponents.
  assert.equal(formatSI(99.95e3, "B"), "100 kB");
  assert.equal(formatSI(9.9951e6, "B"), "10.0 MB");
  assert.equal(formatTime(99_950), "100 µs");
  assert.equal(formatSI(1.5e-7, "B"), "0.000000150 B");
});

test("durations pick their unit after rounding", () => {
  assert.equal(formatTime(0), "0 ns");
  assert.equal(formatTime(850), "850 ns");
  assert.equal(formatTime(12_345), "12.3 µs");
  assert.equal(formatTime(1_500_000), "1.50 ms");
  assert.equal(formatTime(2e9), "2.00 s");
  assert.equal(formatTime(999_960), "1.00 ms");
  assert.equal(formatTime(502_581_291), "503 ms");
  assert.equal(formatTime(3600e9), "3600 s");
  assert.equal(formatTime(250e6), "250 ms");
});

test("points in time keep the decimals their resolution needs", () => {
  assert.equal(formatInstant(100236733, 1), "100.236733 ms");
  assert.equal(formatInstant(100236733, 1e5), "100.2 ms");
  assert.equal(formatInstant(100236733, 1e6), "100 ms");
  assert.equal(formatInstant(5.3e9 + 1234, 1), "5.300001234 s");
  assert.equal(formatInstant(850, 1), "850 ns");
  assert.equal(formatInstant(0, 1), "0 ns");
  assert.equal(formatInstant(NaN), UNKNOWN);
  assert.equal(formatInstant(null), UNKNOWN);
});

test("percentages, fractions, counts, intensity", () => {
  assert.equal(formatPercent(47.44), "47.4%");
  assert.equal(formatPercent(47.44, 0), "47%");
  assert.equal(formatFraction(0.474), "47.4%");
  assert.equal(formatCount(1234567.4), "1,234,567");
  assert.equal(formatIntensity(2), "2.00 FLOP/B");
  assert.equal(formatIntensity(0.0046263), "0.00463 FLOP/B");
  assert.equal(formatIntensity(707.4), "707 FLOP/B");
});

test("a gauge fills only when value and roof are both known", () => {
  const dram = gaugeReading({ key: "dram-bandwidth", unit: "B/s", value: 1.675e12, roof: 3.35e12 });
  assert.equal(dram.known, true);
  assert.equal(dram.fraction, 1.675 / 3.35);
  assert.equal(dram.fill, 0.5);
  assert.equal(dram.valueText, "1.68 TB/s");
  assert.equal(dram.roofText, "3.35 TB/s");
  assert.equal(dram.percentText, "50.0%");

  // The report's own fraction wins over value / roof (it may be computed over another basis).
  assert.equal(gaugeReading({ unit: "%", value: 40, roof: 100, fraction: 0.41 }).fraction, 0.41);

  // Past the roof: the fraction is kept, the fill is clipped, `over` says so.
  const over = gaugeReading({ unit: "B/s", value: 4e12, roof: 2e12 });
  assert.equal(over.fraction, 2);
  assert.equal(over.fill, 1);
  assert.equal(over.over, true);

  const noRoof = gaugeReading({ unit: "FLOP/s", value: 5e13, roof: null, note: "no peak" });
  assert.equal(noRoof.known, false);
  assert.equal(noRoof.fill, null);
  assert.equal(noRoof.valueKnown, true);
  assert.equal(noRoof.roofText, "unknown");

  const noValue = gaugeReading({ unit: "B", value: null, roof: 8e10 });
  assert.equal(noValue.known, false);
  assert.equal(noValue.fill, null);
  assert.equal(noValue.valueText, "unknown");

  // A zero roof is no roof (no division by zero, no full bar).
  assert.equal(gaugeReading({ unit: "B/s", value: 1, roof: 0 }).known, false);
});

test("gauges group run-wide first, then by rank ascending, keeping order within a group", () => {
  const gauges = [
    { key: "gpu-busy", rank: 1 },
    { key: "memory", rank: 0 },
    { key: "host-link", rank: null },
    { key: "compute", rank: 1 },
  ];
  const groups = gaugesByRank(gauges);
  assert.deepEqual(
    groups.map((g) => [g.rank, g.gauges.map((x) => x.key)]),
    [
      [null, ["host-link"]],
      [0, ["memory"]],
      [1, ["gpu-busy", "compute"]],
    ],
  );
  assert.deepEqual(gaugesByRank(undefined), []);
});

test("evidence reads as label and counts", () => {
  assert.equal(
    evidenceText({ label: "DataLoader calls", event_ids: [1, 2, 3], windows: [[0, 1]] }),
    "DataLoader calls · 3 events · 1 window",
  );
  assert.equal(evidenceText({ label: "gaps", event_ids: [], windows: [] }), "gaps · nothing to show");
  assert.equal(evidenceText({ table: "kernels", event_ids: [7] }), "kernels · 1 event");
});

test("hint numbers are formatted by their key", () => {
  assert.equal(formatHintNumber("idle_ns", 511528902), "512 ms");
  assert.equal(formatHintNumber("idle_pct", 47.4), "47.4%");
  assert.equal(formatHintNumber("bytes", 2.0647e11), "206 GB");
  assert.equal(formatHintNumber("achieved_bytes_per_s", 7.8e11), "780 GB/s");
  assert.equal(formatHintNumber("gaps", 5164), "5,164");
  assert.equal(formatHintNumber("ratio", 0.123456), "0.123");
  assert.equal(formatHintNumber("dominant_cause", "data-loading"), "data-loading");
  assert.equal(formatHintNumber("x", null), UNKNOWN);
});

test("hint number labels drop the unit suffix the value already shows", () => {
  assert.equal(hintNumberLabel("idle_ns"), "idle");
  assert.equal(hintNumberLabel("mean_batch_ns"), "mean batch");
  assert.equal(hintNumberLabel("idle_pct"), "idle");
  assert.equal(hintNumberLabel("data-loading_ns"), "data-loading");
  assert.equal(hintNumberLabel("gaps"), "gaps");
  assert.equal(hintNumberLabel("bytes_per_s"), "bytes per s");
});

test("a duration named in the middle of its key reads as a duration", () => {
  assert.equal(formatHintNumber("launch_ns_for_small_kernels", 2500000), formatTime(2500000));
  assert.equal(hintNumberLabel("launch_ns_for_small_kernels"), "launch for small kernels");
});

test("readings read alike in the live panel and the counter lanes, in their own unit", () => {
  assert.equal(formatReading(1.5e9, "B"), "1.50 GB");
  assert.equal(formatReading(512, "B"), "512 B");
  assert.equal(formatReading(12.04e9, "B/s"), "12.0 GB/s");
  assert.equal(formatReading(73.24, "%"), "73.2%");
  assert.equal(formatReading(12345, ""), "12.3 k");
  // No SI prefix glued onto a unit that already has one.
  assert.equal(formatReading(1500, "MHz"), "1500 MHz");
  assert.equal(formatReading(251.37, "W"), "251.4 W");
  assert.equal(formatReading(33.9e9, "FLOP/s"), "33.9 GFLOP/s");
  assert.equal(formatReading(999.96e9, "B/s"), "1.00 TB/s");
  assert.equal(formatReading(0, "B"), "0 B");
  // Below 1, and halves: the text report (units.format_reading) must round these alike.
  assert.equal(formatReading(0.5, ""), "0.500");
  assert.equal(formatReading(0.004, "B"), "0.00400 B");
  assert.equal(formatReading(0.9996, ""), "1.00");
  assert.equal(formatReading(250.5, "B"), "251 B");
  assert.equal(formatReading(-100.5, "B"), "-100 B");
  assert.equal(formatReading(10.25, ""), "10.3");
  assert.equal(formatReading(1.005, ""), "1.00");
  assert.equal(formatReading(NaN, "B"), "–");
  assert.equal(formatReading(null, "%"), "–");
});
