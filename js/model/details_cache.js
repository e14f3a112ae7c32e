// Event details fetched on demand, cached by event id. No DOM; unit-tested.

/**
 * Details by event id, fetched once through `fetchOne(id) -> Promise` and kept for the `limit`
 * most recently fetched ids; concurrent asks for one id share a request, failures are not kept.
 */
export function createDetailsCache(fetchOne, limit = 500) {
  const done = new Map();
  const inflight = new Map();
  return {
    has: (id) => done.has(id),
    get: (id) => done.get(id),
    fetch(id) {
      if (done.has(id)) return Promise.resolve(done.get(id));
      if (inflight.has(id)) return inflight.get(id);
      if (!fetchOne) return Promise.reject(new Error("no details source"));
      const p = fetchOne(id).then(
        (d) => {
          inflight.delete(id);
          done.set(id, d);
          if (done.size > limit) done.delete(done.keys().next().value);
          return d;
        },
        (err) => {
          inflight.delete(id);
          throw err;
        },
      );
      inflight.set(id, p);
      return p;
    },
  };
}
