import { test } from "node:test";
import assert from "node:assert/strict";

import { groupLayout, hitEntry } from "./lanes.js";
import { collectiveLinks, collectiveRows, initiallyCollapsed, laneRanks, rankStepGrid, stragglerOf } from "./ranks.js";
import { createTimelineState } from "./timeline_state.js";
import { buildSegmentIndex } from "./segments.js";
import { segmentTable } from "./segment_fixtures.js";

/**
 * Lanes as widget/timeline.py lays out a job: per rank GPU streams, CPU threads, counters. The
 * group keys here are opaque on purpose: headers must say group_label, never parse the key.
 */
function jobLanes(ranks, { streams = 2, threads = 1, counters = 1 } = {}) {
  const lanes = [];
  for (let r = 0; r < ranks; r++) {
    for (let s = 0; s < streams; s++) lanes.push({ id: lanes.length, rank: r, kind: "gpu", group: `key-${r}-gpu`, group_label: `GPU ${r}`, label: `stream ${s}`, rows: 1 });
    for (let t = 0; t < threads; t++) lanes.push({ id: lanes.length, rank: r, kind: "cpu", group: `key-${r}-cpu`, group_label: "CPU", label: `thread ${t}`, rows: 3 });
    for (let c = 0; c < counters; c++) lanes.push({ id: lanes.length, rank: r, kind: "counter", group: `key-${r}-counters`, group_label: "counters", label: "memory" });
  }
  return lanes;
}

const dims = { rowH: 10, pad: 2, headerH: 15, counterH: 30 };

test("ranks of the lanes, and group names under a rank's header", () => {
  assert.deepEqual(laneRanks(jobLanes(3)), [0, 1, 2]);
  assert.deepEqual(laneRanks([{ id: 0 }, { id: 1, rank: 5 }]), [5]);
});

test("a job's layout: a header per rank over its groups; a collapsed rank is one row of its GPU lanes", () => {
  const lanes = jobLanes(2);
  const open = groupLayout(lanes, new Set(), dims);
  // rank, GPU header, 2 streams, CPU header, thread, counters header, counter: per rank.
  const perRank = ["rank", "header", "lane", "lane", "header", "lane", "header", "lane"];
  assert.deepEqual(open.entries.map((e) => e.kind), [...perRank, ...perRank]);
  assert.deepEqual(open.entries.filter((e) => e.kind === "header").map((e) => e.label), ["GPU 0", "CPU", "counters", "GPU 1", "CPU", "counters"]);
  assert.deepEqual(open.entries.filter((e) => e.kind === "rank").map((e) => [e.rank, e.label, e.lanes.length]), [[0, "rank 0", 4], [1, "rank 1", 4]]);
  const rankH = 15 + (15 + 14 + 14) + (15 + 34) + (15 + 30);
  assert.equal(open.total, 2 * rankH);
  assert.equal(open.entries[8].y, rankH); // rank 1's header

  const shut = groupLayout(lanes, new Set(), dims, new Set([0]));
  assert.deepEqual(shut.entries.map((e) => e.kind), ["rank", "summary", ...perRank]);
  const summary = shut.entries[1];
  assert.deepEqual(summary.lanes.map((l) => l.id), [0, 1]); // the GPU streams only
  assert.equal(summary.label, "2 GPU streams");
  assert.equal(summary.h, 2 * 2 + 10);
  assert.equal(shut.entryOfLane.get(0), summary);
  assert.equal(shut.entryOfLane.get(2), shut.entries[0]); // the CPU thread: on the rank's header
  assert.equal(shut.total, 15 + 14 + rankH);
  // A rank without GPU lanes collapses to its CPU threads.
  const cpuOnly = groupLayout(jobLanes(2, { streams: 0 }), new Set(), dims, new Set([0, 1]));
  assert.equal(cpuOnly.entries[1].label, "1 CPU thread");
  // One rank: no rank headers, group names as Python gives them.
  const single = groupLayout(jobLanes(1), new Set(), dims, new Set([0]));
  assert.deepEqual(single.entries.map((e) => e.kind), ["header", "lane", "lane", "header", "lane", "header", "lane"]);
  assert.equal(single.entries[0].label, "GPU 0");
});

test("a collapsed rank's row hits the events of all its GPU streams", () => {
  const lanes = jobLanes(2);
  const index = buildSegmentIndex(segmentTable([
    { lane: 0, start: 0, dur: 10 },
    { lane: 1, start: 20, dur: 10 },
    { lane: 4, start: 20, dur: 10 },
  ]).table);
  const shut = groupLayout(lanes, new Set(), dims, new Set([0, 1]));
  const rank0 = shut.entries[1];
  assert.equal(index.start[hitEntry(index, rank0, 0, 25)], 20); // stream 1's kernel
  assert.equal(index.start[hitEntry(index, rank0, 0, 5)], 0); // stream 0's
  assert.equal(hitEntry(index, shut.entries[3], 0, 5), -1); // rank 1 ran nothing then
});

test("256 ranks lay out quickly, collapsed and expanded", () => {
  const lanes = jobLanes(256, { streams: 8, threads: 4 });
  const all = new Set(laneRanks(lanes));
  const t0 = performance.now();
  let layout;
  for (let i = 0; i < 20; i++) layout = groupLayout(lanes, new Set(), dims, i % 2 ? all : new Set());
  const ms = (performance.now() - t0) / 20;
  assert.equal(layout.entries.filter((e) => e.kind === "rank").length, 256);
  assert.equal(layout.entries.length, 256 * 2);
  assert.ok(ms < 50, `${ms.toFixed(1)} ms per layout of ${lanes.length} lanes`);
});

test("a job of more than 8 ranks starts with every rank collapsed", () => {
  assert.deepEqual(initiallyCollapsed([0, 1, 2, 3, 4, 5, 6, 7]), []);
  assert.deepEqual(initiallyCollapsed([...Array(9).keys()]), [...Array(9).keys()]);
  assert.deepEqual(initiallyCollapsed([]), []);
});

test("focus on a rank: the others collapse; again: all expand", () => {
  const s = createTimelineState({ span: 100 });
  const ranks = [0, 1, 2, 3];
  assert.equal(s.focusRank(2, ranks), 2);
  assert.deepEqual([...s.collapsedRanks].sort(), [0, 1, 3]);
  assert.equal(s.focusedRank, 2);
  assert.equal(s.focusRank(1, ranks), 1); // another rank: focus moves
  assert.deepEqual([...s.collapsedRanks].sort(), [0, 2, 3]);
  assert.equal(s.focusRank(1, ranks), null);
  assert.equal(s.collapsedRanks.size, 0);
  assert.equal(s.focusedRank, null);
  s.collapseRanks(ranks);
  assert.equal(s.collapsedRanks.size, 4);
  s.toggleRank(3);
  assert.equal(s.collapsedRanks.has(3), false);
  assert.equal(s.expandRank(0), true);
  assert.equal(s.expandRank(0), false);
});

// A report's distributed part, by hand: two steps of 1000 ns and 2000 ns on three ranks.
const report = {
  distributed: {
    world_size: 3,
    ranks_present: [0, 1, 2],
    missing_ranks: [],
    clock: { method: "collective ends", residual_ns: 1500 },
    stragglers: [
      { rank: 2, wait_caused_ns: 2500, arrived_last: 4, cause: "aten::mm takes 2.1x the median rank's time" },
      { rank: 0, wait_caused_ns: 0, arrived_last: 0, cause: "" },
    ],
    steps: [
      { step: 7, start_ns: 0, end_ns: 1000, ranks: [
        { rank: 0, compute_ns: 600, wait_ns: 300, bubble_fraction: 0.4 },
        { rank: 1, compute_ns: 500, wait_ns: 400, bubble_fraction: 0.5 },
        { rank: 2, compute_ns: 1000, wait_ns: 0, bubble_fraction: 0.0 },
      ] },
      { step: 8, start_ns: 1000, end_ns: 3000, ranks: [
        { rank: 0, compute_ns: 1000, wait_ns: 800, bubble_fraction: 0.5 },
        { rank: 2, compute_ns: 1800, wait_ns: 0, bubble_fraction: 0.1 },
      ] },
    ],
  },
};

test("rank x step grid: shares of each step's window, the mean over steps, the straggler", () => {
  const g = rankStepGrid(report);
  assert.deepEqual(g.ranks, [0, 1, 2]);
  assert.deepEqual(g.steps.map((s) => [s.label, s.windowNs]), [["step 7", 1000], ["step 8", 2000]]);
  const c = g.cells[0][0];
  assert.deepEqual([c.compute, c.wait, c.bubble], [0.6, 0.3, 0.4]);
  assert.equal(c.text, "60% / 30% / 40%");
  assert.match(c.title, /rank 0, step 7: compute 60\.0% \(600 ns\), wait 30\.0% \(300 ns\), bubble 40\.0% of 1\.00 µs/);
  // Rank 1 has no row in step 8: unknown there, and its mean is unknown.
  assert.equal(g.cells[1][1].compute, null);
  assert.equal(g.cells[1][1].text, "– / – / –");
  // Rank 0's mean: (600 + 1000) / 3000 computing, (300 + 800) / 3000 waiting, bubble (0.4 + 0.5) / 2.
  const m = g.means[0];
  assert.ok(Math.abs(m.compute - 1600 / 3000) < 1e-12);
  assert.ok(Math.abs(m.wait - 1100 / 3000) < 1e-12);
  assert.ok(Math.abs(m.bubble - 0.45) < 1e-12);
  assert.equal(g.straggler, 2);
  assert.equal(g.totalSteps, 2);
  assert.equal(g.clock, "clocks: collective ends, residual 1.50 µs");
  // More steps than columns: the first ones shown, the mean of all.
  const few = rankStepGrid(report, 1);
  assert.equal(few.steps.length, 1);
  assert.equal(few.totalSteps, 2);
  assert.ok(Math.abs(few.means[2].compute - 2800 / 3000) < 1e-12);
  // One rank, or no steps: no grid. A step without a number is the whole trace.
  assert.equal(rankStepGrid({ distributed: null }), null);
  assert.equal(rankStepGrid({}), null);
  const whole = rankStepGrid({ distributed: { steps: [{ step: null, start_ns: 0, end_ns: 10, ranks: [{ rank: 0, compute_ns: 5, wait_ns: 0, bubble_fraction: 0.5 }] }] } });
  assert.equal(whole.steps[0].label, "trace");
});

test("the straggler is the first rank listed, when it caused any wait", () => {
  assert.deepEqual(stragglerOf(report), { rank: 2, waitCausedNs: 2500, arrivedLast: 4, cause: "aten::mm takes 2.1x the median rank's time" });
  assert.equal(stragglerOf({ distributed: { stragglers: [{ rank: 1, wait_caused_ns: 0 }] } }), null);
  assert.equal(stragglerOf({ distributed: { stragglers: [] } }), null);
  assert.equal(stragglerOf({ distributed: null }), null);
});

// One all-reduce on three ranks, as widget/collectives.py replies: rank 1 arrives last.
const info = {
  instance: 4, group: "0", name: "allreduce", bytes: 4096, last_rank: 1, max_wait_ns: 3000,
  ranks: [
    { rank: 2, id: 30, lane: 9, row: 0, start_ns: 2000, dur_ns: 3000, arrival_ns: 2000, end_ns: 5000, wait_ns: 1000, last: false },
    { rank: 0, id: 10, lane: 1, row: 0, start_ns: 0, dur_ns: 5000, arrival_ns: 0, end_ns: 5000, wait_ns: 3000, last: false },
    { rank: 1, id: 20, lane: 5, row: 1, start_ns: 3000, dur_ns: 2000, arrival_ns: 3000, end_ns: 5000, wait_ns: 0, last: true },
    { rank: 3, id: -1, lane: -1, row: 0, start_ns: null, dur_ns: null, arrival_ns: 2500, end_ns: 5000, wait_ns: 500, last: false },
  ],
};

test("a collective on every rank: rows by rank with arrival and wait, links to the last rank", () => {
  const view = collectiveRows(info);
  assert.equal(view.heading, "allreduce in 0: 4 ranks; rank 1 arrived last, 3.00 µs after the first");
  assert.deepEqual(view.rows.map((r) => r.text), ["rank 0", "rank 1 (last)", "rank 2", "rank 3"]);
  assert.equal(view.rows[2].meta, "arrived 2.000 µs (+2.00 µs) · waited 1.00 µs");
  assert.deepEqual(view.rows[1].ev, { id: 20, lane: 5, row: 1, start_ns: 3000, dur_ns: 2000 });
  assert.equal(view.rows[3].ev, null); // not on the timeline: nothing to jump to or link
  const links = collectiveLinks(info);
  assert.deepEqual(links.map(([a, b]) => [a.id, b.id]), [[10, 20], [30, 20]]);
  // No last rank known: a chain by rank.
  const chain = collectiveLinks({ ...info, last_rank: null, ranks: info.ranks.map((r) => ({ ...r, last: false })) });
  assert.deepEqual(chain.map(([a, b]) => [a.id, b.id]), [[10, 20], [20, 30]]);
  assert.equal(collectiveRows(null), null);
  assert.deepEqual(collectiveLinks({ ...info, ranks: [] }), []);
});
