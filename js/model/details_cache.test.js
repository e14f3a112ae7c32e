import { test } from "node:test";
import assert from "node:assert/strict";

import { createDetailsCache } from "./details_cache.js";

test("details cache: one request per id, failures retried, oldest dropped past the limit", async () => {
  const asked = [];
  const cache = createDetailsCache((id) => {
    asked.push(id);
    return id < 0 ? Promise.reject(new Error(`bad ${id}`)) : Promise.resolve({ id });
  }, 2);
  const [a, b] = await Promise.all([cache.fetch(1), cache.fetch(1)]);
  assert.deepEqual(asked, [1]);
  assert.equal(a, b);
  assert.equal(cache.get(1), a);
  await assert.rejects(cache.fetch(-1), /bad -1/);
  await assert.rejects(cache.fetch(-1), /bad -1/);
  assert.deepEqual(asked, [1, -1, -1]);
  assert.equal(cache.has(-1), false);
  await cache.fetch(2);
  await cache.fetch(3);
  assert.equal(cache.has(1), false);
  assert.ok(cache.has(2) && cache.has(3));
  await cache.fetch(3);
  assert.deepEqual(asked, [1, -1, -1, 2, 3]);
  await assert.rejects(createDetailsCache(null).fetch(1), /no details source/);
});
