import { test } from "node:test";
import assert from "node:assert/strict";

import { colorIndex, colorIsDark, DIM_COLOR, nameColors, palette, paletteHsl, PALETTE_SIZE } from "./colors.js";

test("colors: stable per name, banded per kind, one palette", () => {
  const names = Array.from({ length: 50 }, (_, k) => `kernel_${k}`);
  assert.ok(new Set(names.map((n) => colorIndex(n, "kernel"))).size > 10);
  const hueOf = (name, kind) => paletteHsl(colorIndex(name, kind))[0];
  for (const n of names) {
    const memcpy = hueOf(n, "memcpy");
    assert.ok(memcpy >= 348 || memcpy <= 18, `memcpy hue ${memcpy}`);
    const memset = hueOf(n, "memset");
    assert.ok(memset >= 280 && memset <= 325);
    const kernel = hueOf(n, "kernel");
    assert.ok(kernel >= 45 && kernel <= 265);
    assert.ok(paletteHsl(colorIndex(n, "op"))[2] > paletteHsl(colorIndex(n, "kernel"))[2]); // ops lighter
    assert.ok(paletteHsl(colorIndex(n, "runtime"))[1] < 30); // runtime greyish
    assert.ok(colorIndex(n, "op") < PALETTE_SIZE && colorIndex(n, "nonsense") < PALETTE_SIZE);
  }
  assert.notEqual(colorIndex("x", "kernel"), DIM_COLOR);
  assert.ok(paletteHsl(colorIndex("x"), true)[2] < paletteHsl(colorIndex("x"), false)[2]);
  assert.match(palette(false)[colorIndex("x", "memcpy")], /^hsl\(\d+, \d+%, \d+%\)$/);
});

test("dark colors by luminance", () => {
  // Rec. 709 luma against the midpoint, computed here by hand.
  assert.equal(colorIsDark("#000"), true);
  assert.equal(colorIsDark("#ffffff"), false);
  assert.equal(colorIsDark("#1e1e1e"), true);
  assert.equal(colorIsDark("rgb(200, 200, 200)"), false);
  assert.equal(colorIsDark("rgba(10,20,30,0.5)"), true);
  // Pure green is bright (0.7152 * 255 = 182), pure blue dark (0.0722 * 255 = 18).
  assert.equal(colorIsDark("#0f0"), false);
  assert.equal(colorIsDark("#0000ff"), true);
  assert.equal(colorIsDark("white"), false);
  assert.equal(colorIsDark(""), false);
});

test("name colors: per name and its kind, memoised, junk indexes as an empty kernel name", () => {
  const names = ["sgemm", "aten::mm", "cudaLaunchKernel"];
  const kinds = ["kernel", "op", "runtime"];
  const asked = [];
  const colorOf = nameColors(names, (i) => {
    asked.push(i);
    return kinds[i];
  });
  for (let i = 0; i < names.length; i++) assert.equal(colorOf(i), colorIndex(names[i], kinds[i]));
  colorOf(1);
  colorOf(1);
  assert.deepEqual(asked, [0, 1, 2]);
  assert.equal(colorOf(-1), colorIndex("", "kernel"));
  assert.equal(colorOf(3), colorIndex("", "kernel"));
});
