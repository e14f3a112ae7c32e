import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { totalCounts } from "./summary.js";

test("counts are summed over ranks, missing ranks and keys count as zero", () => {
  const summary = {
    ranks: [
      { rank: 0, counts: { kernels: 10, memcpy: 2, memset: 1, ops: 50, runtime: 12 } },
      { rank: 1, counts: { kernels: 5, ops: 7 } },
      { rank: 2 },
    ],
  };
  assert.deepEqual(totalCounts(summary), { kernels: 15, memcpy: 2, memset: 1, ops: 57, runtime: 12 });
  assert.deepEqual(totalCounts({}), { kernels: 0, memcpy: 0, memset: 0, ops: 0, runtime: 0 });
  assert.deepEqual(totalCounts(null).kernels, 0);
});

test("no source file assigns HTML strings (trace strings are untrusted)", () => {
  const root = join(dirname(fileURLToPath(import.meta.url)), "..");
  const files = [];
  const walk = (dir) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name.endsWith(".js") && !name.endsWith(".test.js")) files.push(path);
    }
  };
  walk(root);
  assert.ok(files.length >= 4, `found only ${files.length} source files`);
  for (const path of files) {
    const text = readFileSync(path, "utf8");
    assert.doesNotMatch(text, /innerHTML|outerHTML|insertAdjacentHTML|document\.write/, path);
  }
});

// Just enough of a DOM for renderSummary: elements with children, classes, text and dataset.
class FakeElement {
  constructor(tag) {
    this.tagName = tag.toUpperCase();
    this.children = [];
    this.className = "";
    this.dataset = {};
    this.title = "";
    this.ownText = "";
  }
  set textContent(v) {
    this.children = [];
    this.ownText = String(v);
  }
  get textContent() {
    return this.ownText + this.children.map((c) => c.textContent).join("");
  }
  appendChild(child) {
    this.children.push(child);
    return child;
  }
  insertRow() {
    return this.appendChild(new FakeElement("tr"));
  }
  insertCell() {
    return this.appendChild(new FakeElement("td"));
  }
  createTHead() {
    return this.appendChild(new FakeElement("thead"));
  }
  createTBody() {
    return this.appendChild(new FakeElement("tbody"));
  }
  get tBodies() {
    return this.children.filter((c) => c.tagName === "TBODY");
  }
  get rows() {
    return this.children.filter((c) => c.tagName === "TR");
  }
  *walk() {
    yield this;
    for (const c of this.children) yield* c.walk();
  }
}

test("the summary leaves hints to the hints panel and the text report to its own part", async () => {
  const saved = globalThis.document;
  globalThis.document = { createElement: (tag) => new FakeElement(tag) };
  try {
    const { renderSummary, renderTextReport } = await import("./summary.js");
    const hintTitle = "GPU idle 47% of the window, mostly waiting for the DataLoader";
    const root = renderSummary({
      ranks: [{ rank: 0, counts: { kernels: 3 }, wall_ns: 1e9, gpu: null, top_kernels: [], top_ops: [] }],
      hints: [{ kind: "gpu-idle", title: hintTitle, explanation: "x", fix: [] }],
      text: "text report body",
    });
    const nodes = [...root.walk()];
    assert.ok(!root.textContent.includes(hintTitle), "a hint title reached the summary");
    assert.ok(!nodes.some((n) => n.className === "gp-hints"));
    assert.ok(!root.textContent.includes("text report body"));
    const text = renderTextReport({ text: "text report body" });
    assert.equal(text.className, "gp-text");
    assert.ok(text.textContent.includes("text report body"));
    assert.equal(renderTextReport({}), null);
    // The counts header is still there.
    const kernels = nodes.find((n) => n.dataset.count === "kernels");
    assert.ok(kernels && kernels.textContent.startsWith("3"));
  } finally {
    globalThis.document = saved;
  }
});

test("every notice of the report is a banner, first, in the report's order and words", async () => {
  const saved = globalThis.document;
  globalThis.document = { createElement: (tag) => new FakeElement(tag) };
  try {
    const { renderSummary } = await import("./summary.js");
    const notices = [
      { kind: "partial", text: "the profiled code raised" },
      { kind: "steps", text: "recorded 4 of 12 steps" },
      { kind: "dropped", text: "2 recorded windows dropped, unread" },
      { kind: "incomplete", text: "<b>chunk 3</b> failed" },
    ];
    const root = renderSummary({ notices, ranks: [] });
    const banners = root.children.filter((n) => n.className === "gp-notice");
    assert.deepEqual(
      banners.map((b) => [b.dataset.notice, b.textContent]),
      notices.map((n) => [n.kind, `${n.kind.toUpperCase()}: ${n.text}`]),
    );
    assert.deepEqual(root.children.slice(0, notices.length), banners);
    assert.equal(renderSummary({ ranks: [] }).children.filter((n) => n.className === "gp-notice").length, 0);
  } finally {
    globalThis.document = saved;
  }
});

test("the workload line comes first, before the notices, as Python worded it, its evidence beneath", async () => {
  const saved = globalThis.document;
  globalThis.document = { createElement: (tag) => new FakeElement(tag) };
  try {
    const { renderSummary } = await import("./summary.js");
    const line = "workload: inference · engine vllm · parallelism tp · cuda-graphs · rocm";
    const evidence = ["engine vllm: <b>vllm::gemm</b>", "device rocm: hipLaunchKernel"];
    const root = renderSummary({
      workload_line: line,
      workload: { evidence },
      notices: [{ kind: "partial", text: "the profiled code raised" }],
      ranks: [],
    });
    assert.equal(root.children[0].className, "gp-workload");
    assert.equal(root.children[1].className, "gp-notice");
    const items = [...root.children[0].walk()].filter((n) => n.tagName === "LI");
    assert.deepEqual(items.map((n) => n.textContent), evidence);
    assert.ok(root.children[0].textContent.startsWith(line));
    assert.equal(renderSummary({ ranks: [] }).children.filter((n) => n.className === "gp-workload").length, 0);
  } finally {
    globalThis.document = saved;
  }
});

test("unknown numbers read as unknown, not 0; shares and copy bandwidths from the report's fields", async () => {
  const saved = globalThis.document;
  globalThis.document = { createElement: (tag) => new FakeElement(tag) };
  try {
    const { renderSummary } = await import("./summary.js");
    const root = renderSummary({
      ranks: [{
        rank: 0,
        wall_ns: null,
        gpu: { window_ns: 2e6, busy_ns: 1.5e6, busy_pct: 75, idle_ns: 5e5, compute_ns: null, non_compute_ns: undefined },
        top_kernels: [{ name: "a", count: 2, total_ns: null }, { name: "b", count: 1, total_ns: 1e6 }],
        top_ops: [],
        copies: [
          // 100 B in 1 ms: 100 kB/s, where Python's gbps, rounded to 3 decimals, is 0.
          { kind: "HtoD", count: 1, bytes: 100, total_ns: 1e6, gbps: 0 },
          { kind: "DtoH", count: 1, bytes: null, total_ns: 0, gbps: 0 },
          { kind: "DtoD", count: 1, bytes: 64, total_ns: null, gbps: 0 },
        ],
      }],
    });
    const nodes = [...root.walk()];
    const stat = (label) => {
      const s = nodes.find((n) => n.dataset.stat === label);
      return s && s.children.slice(1).map((c) => c.textContent);
    };
    assert.deepEqual(stat("wall"), ["–", "first to last event"]);
    assert.deepEqual(stat("GPU window"), ["2.00 ms"]);
    assert.deepEqual(stat("busy"), ["1.50 ms", "75.0%"]);
    assert.deepEqual(stat("idle"), ["500 µs", "25.0%"]);
    assert.equal(stat("compute"), undefined);
    assert.equal(stat("non-compute"), undefined);
    const bodies = nodes.filter((n) => n.tagName === "TBODY");
    const cells = (tbody) => tbody.rows.map((tr) => tr.children.map((td) => td.textContent));
    // Top kernels: name, count, total, % of busy.
    assert.deepEqual(cells(bodies[0]), [["a", "2", "–", "–"], ["b", "1", "1.00 ms", "66.7%"]]);
    // Copies: kind, count, bytes, total, bandwidth.
    assert.deepEqual(cells(bodies[1]), [
      ["HtoD", "1", "100 B", "1.00 ms", "100 kB/s"],
      ["DtoH", "1", "–", "0 ns", "–"],
      ["DtoD", "1", "64.0 B", "–", "–"],
    ]);
  } finally {
    globalThis.document = saved;
  }
});

test("a top kernel shows its short label, its full name on hover", async () => {
  const saved = globalThis.document;
  globalThis.document = { createElement: (tag) => new FakeElement(tag) };
  try {
    const { renderSummary } = await import("./summary.js");
    const full = "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<...> >(int, ...)";
    const root = renderSummary({
      ranks: [{
        rank: 0, wall_ns: 1e6, gpu: null, top_ops: [], copies: [],
        top_kernels: [{ name: full, label: "elementwise_kernel<MulFunctor<float>> [4, BFloat16]", count: 1, total_ns: 1e3 },
          { name: "saxpy", count: 1, total_ns: 1e3 }],
      }],
    });
    const cells = [...root.walk()].filter((n) => n.tagName === "TD" && n.className === "gp-name");
    assert.deepEqual(cells.map((c) => [c.textContent, c.title]), [
      ["elementwise_kernel<MulFunctor<float>> [4, BFloat16]", full],
      ["saxpy", "saxpy"],
    ]);
  } finally {
    globalThis.document = saved;
  }
});
