// @ts-check
// The timeline's name search: a box (plain text or regex), previous/next stepping through the
// matches the source lists, and a status line. The names that match dim everything else on the
// canvas; the timeline reads them through `mask()` each frame.

import "./search_bar.css";
import { eventRow } from "../model/marks.js";
import { compileMatcher, maskFromIndexes, matchNames, matchStatus, stepMatch } from "../model/search.js";
import { button, node } from "./dom.js";

const SEARCH_DEBOUNCE_MS = 200;

/** @typedef {import("../model/decode.js").WireTable<"event_list">} EventList */
/** @typedef {import("../model/marks.js").EventRow} EventRow */
/**
 * The search under way: its pattern, the names it matches (mask), how many events match and the
 * list the source sent (null until it answers), the match stepped to, an error, and a step asked
 * for before the list came.
 * @typedef {{pattern: string, regex: boolean, mask: Uint8Array | null, count: number | null,
 *   list: EventList | null, k: number, error: string | null, pendingStep: number}} Search
 */

/**
 * @param {{names: ArrayLike<unknown>, source: Pick<import("./timeline/timeline.js").TimelineSource, "search"> | null,
 *   root: HTMLElement, onChange: () => void, onMatch: (ev: EventRow) => void, isDestroyed: () => boolean}} opts
 *   root carries data-search-count; onMatch gets the stepped-to event {id, lane, row, start_ns, dur_ns}
 */
export function createSearchBar({ names, source, root, onChange, onMatch, isDestroyed }) {
  const el = node("span", "gp-search");
  const input = node("input", "gp-search-input");
  input.type = "search";
  input.placeholder = "search names";
  input.setAttribute("aria-label", "Search event names");
  const regexLabel = node("label", "gp-search-regex");
  const regexBox = node("input");
  regexBox.type = "checkbox";
  regexLabel.append(regexBox, document.createTextNode("regex"));
  const prevButton = button("‹", "Previous match (shift+Enter)");
  const nextButton = button("›", "Next match (Enter)");
  const status = node("span", "gp-search-status");
  el.append(input, regexLabel, prevButton, nextButton, status);

  /** @type {Search | null} */
  let search = null;
  let token = 0;
  let timer = 0;

  function showStatus() {
    if (!search) {
      status.textContent = "";
      status.classList.remove("gp-bad");
      return;
    }
    const bad = Boolean(search.error);
    status.classList.toggle("gp-bad", bad);
    if (bad) status.textContent = search.error;
    else if (search.count === null) status.textContent = "searching…";
    else status.textContent = matchStatus(search.k, search.count, search.list?.n ?? 0);
  }

  function run() {
    clearTimeout(timer);
    const pattern = input.value;
    const regex = regexBox.checked;
    const mine = ++token;
    if (!pattern) {
      search = null;
      root.dataset.searchCount = "0";
      showStatus();
      onChange();
      return;
    }
    const matcher = compileMatcher(pattern, regex);
    const error = matcher && "error" in matcher ? matcher.error : null;
    /** @type {Search} */
    const started = {
      pattern,
      regex,
      mask: matcher && !error ? matchNames(names, matcher).mask : null,
      count: null,
      list: null,
      k: -1,
      error,
      pendingStep: 0,
    };
    search = started;
    if (!source?.search) {
      started.count = 0;
      if (!started.error) started.error = "search needs the kernel (no source)";
    } else {
      source.search(pattern, regex).then(
        (reply) => {
          if (isDestroyed() || mine !== token) return;
          started.count = Number(reply.count) || 0;
          started.list = reply.table ?? null;
          started.error = null;
          if (Array.isArray(reply.names)) started.mask = maskFromIndexes(names.length, reply.names);
          root.dataset.searchCount = String(started.count);
          const step = started.pendingStep;
          started.pendingStep = 0;
          if (step) stepTo(step);
          showStatus();
          onChange();
        },
        (err) => {
          if (isDestroyed() || mine !== token) return;
          started.error = err.message;
          started.count = 0;
          started.mask = null;
          root.dataset.searchCount = "0";
          showStatus();
          onChange();
        },
      );
    }
    showStatus();
    onChange();
  }

  /** @param {number} dir 1: the next match, -1: the previous */
  function stepTo(dir) {
    if (!search || search.pattern !== input.value || search.regex !== regexBox.checked) {
      run();
      if (search) search.pendingStep = dir;
      return;
    }
    if (!search.list) {
      search.pendingStep = dir;
      return;
    }
    const listed = search.list.n;
    if (!listed) return;
    search.k = stepMatch(search.k, listed, dir);
    onMatch(eventRow(search.list.columns, search.k));
    showStatus();
  }

  /** @param {KeyboardEvent} e */
  function onKey(e) {
    if (e.key === "Enter") {
      e.preventDefault();
      stepTo(e.shiftKey ? -1 : 1);
    } else if (e.key === "Escape") {
      e.preventDefault();
      input.value = "";
      run();
    }
    e.stopPropagation();
  }

  input.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(run, SEARCH_DEBOUNCE_MS);
  });
  input.addEventListener("keydown", onKey);
  regexBox.addEventListener("change", run);
  prevButton.addEventListener("click", () => stepTo(-1));
  nextButton.addEventListener("click", () => stepTo(1));

  return {
    el,
    /** Per-name match flags of the active search (null: no search, nothing dimmed). */
    mask: () => search?.mask ?? null,
    destroy: () => clearTimeout(timer),
  };
}
