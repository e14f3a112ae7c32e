import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

import {
  evidenceText,
  formatBytes,
  formatBytesPerS,
  formatReading,
  formatCount,
  formatDeltaTime,
  formatFlops,
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
  ratio,
  UNKNOWN,
} from "./format.js";

// The plain cases (arguments in, text out) are a table that Python's tests read too, so the
// text report (gpuprofile/units.py) spells numbers as the widget does.
const TABLE = JSON.parse(readFileSync(new URL("./format.cases.json", import.meta.url), "utf8"));
const FNS = {
  time: formatTime,
  delta_time: formatDeltaTime,
  si: formatSI,
  bytes: formatBytes,
  bytes_per_s: formatBytesPerS,
  flops: formatFlops,
  flops_per_s: formatFlopsPerS,
  reading: formatReading,
  percent: formatPercent,
  fraction: formatFraction,
  count: formatCount,
  intensity: formatIntensity,
};

test("format.cases.json: a sentence and cases of known functions with JSON arguments", () => {
  assert.deepEqual(Object.keys(TABLE).sort(), ["about", "cases"]);
  assert.equal(typeof TABLE.about, "string");
  for (const c of TABLE.cases) {
    assert.deepEqual(Object.keys(c), ["fn", "args", "text"], JSON.stringify(c));
    assert.ok(Object.hasOwn(FNS, c.fn), c.fn);
    assert.ok(Array.isArray(c.args) && c.args.every((a) => a === null || typeof a === "number" || typeof a === "string"), JSON.stringify(c));
    assert.equal(typeof c.text, "string");
    // Microseconds are "µs" with U+00B5, never "us" nor the Greek mu U+03BC.
    assert.doesNotMatch(c.text, /\bus\b|\u03bc/, JSON.stringify(c));
  }
  for (const fn of Object.keys(FNS)) assert.ok(TABLE.cases.some((c) => c.fn === fn), `no case for ${fn}`);
  assert.ok(TABLE.cases.filter((c) => c.fn === "reading").length >= 10);
});

test("format.cases.json: every case reads as the table says", async (t) => {
  for (const { fn, args, text } of TABLE.cases) {
    await t.test(`${fn}(${args.map((a) => JSON.stringify(a)).join(", ")}) = ${text}`, () => {
      assert.equal(FNS[fn](...args), text);
    });
  }
});

test("unknown numbers are unknown, not zero", () => {
  for (const x of [null, undefined, "", NaN, Infinity, "abc", true]) {
    assert.equal(num(x), null, String(x));
    assert.equal(formatSI(x, "B"), UNKNOWN);
    assert.equal(formatTime(x), UNKNOWN);
    assert.equal(formatPercent(x), UNKNOWN);
    assert.equal(formatReading(x, "B"), UNKNOWN);
  }
  assert.equal(num("12.5"), 12.5);
  assert.equal(num(0), 0);
});

test("a ratio of report fields is unknown where either is, or the whole is not positive", () => {
  assert.equal(ratio(1, 4), 0.25);
  assert.equal(ratio("3", 4, 100), 75);
  // Bytes over ns as bytes per second: a slow copy is slow, not 0.
  assert.equal(ratio(1000, 1e6, 1e9), 1e6);
  assert.equal(formatBytesPerS(ratio(1000, 1e6, 1e9)), "1.00 MB/s");
  assert.equal(ratio(0, 5), 0);
  for (const [part, whole] of [[null, 4], [1, null], [undefined, 4], [1, 0], [1, -2], ["abc", 4], [1, NaN]]) {
    assert.equal(ratio(part, whole), null, `${part} / ${whole}`);
  }
  assert.equal(formatFraction(ratio(null, 4)), UNKNOWN);
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

