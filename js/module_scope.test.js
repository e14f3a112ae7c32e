// ES modules are scoped to js/ (js/package.json), not to the whole repository: a root
// package.json saying "type": "module" made Node read every .js under .venv/ (JupyterLab's own
// CommonJS scripts) as an ES module, and `make lab` printed "require is not defined in ES module
// scope" before its URL.

import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = dirname(HERE);

test("a CommonJS script outside js/ runs as CommonJS", () => {
  // Directly under the root, as .venv/ is: only the root package.json is above it.
  const dir = mkdtempSync(join(ROOT, ".module-scope-"));
  try {
    const script = join(dir, "probe.js");
    writeFileSync(script, 'const util = require("util");\nprocess.stdout.write(util.format("%s", "ok"));\n');
    const run = spawnSync(process.execPath, [script], { encoding: "utf8" });
    assert.equal(run.status, 0, run.stderr);
    assert.equal(run.stdout, "ok");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("js/ is ES modules, and the root says nothing about module type", () => {
  assert.equal(JSON.parse(readFileSync(join(HERE, "package.json"), "utf8")).type, "module");
  assert.equal(JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).type, undefined);
});
