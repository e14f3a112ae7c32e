// @ts-check
// Event details fetched on demand, cached by event id. No DOM; unit-tested.

/**
 * Details by event id, fetched once through `fetchOne(id) -> Promise` and kept for the `limit`
 * most recently fetched ids; concurrent asks for one id share a request, failures are not kept.
 * @template T
 * @param {((id: number) => Promise<T>) | null} fetchOne null: no source, every fetch fails
 * @param {number} [limit]
 */
export function createDetailsCache(fetchOne, limit = 500) {
  /** @type {Map<number, T>} */
  const done = new Map();
  /** @type {Map<number, Promise<T>>} */
  const inflight = new Map();
  return {
    /** @param {number} id */
    has: (id) => done.has(id),
    /** @param {number} id */
    get: (id) => done.get(id),
    /**
     * @param {number} id
     * @returns {Promise<T>}
     */
    fetch(id) {
      if (done.has(id)) return Promise.resolve(/** @type {T} */ (done.get(id)));
      const asked = inflight.get(id);
      if (asked) return asked;
      if (!fetchOne) return Promise.reject(new Error("no details source"));
      const p = fetchOne(id).then(
        (d) => {
          inflight.delete(id);
          done.set(id, d);
          const oldest = done.keys().next();
          if (done.size > limit && !oldest.done) done.delete(oldest.value);
          return d;
        },
        /** @param {unknown} err */
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
