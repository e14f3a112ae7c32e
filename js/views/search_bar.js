// The timeline's name search: a box (plain text or regex), previous/next stepping through the
// matches the source lists, and a status line. The names that match dim everything else on the
// canvas; the timeline reads them through `mask()` each frame.

import "./search_bar.css";
import { eventRow } from "../model/marks.js";
import { compileMatcher, maskFromIndexes, matchNames, matchStatus, stepMatch } from "../model/search.js";
import { button, node } from "./dom.js";

const SEARCH_DEBOUNCE_MS = 200;

/**
 * @param {{names: string[], source: {search?}|null, root: HTMLElement,
 *   onChange: () => void, onMatch: (ev) => void, isDestroyed: () => boolean}} opts
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

  let search = null; // {pattern, regex, mask, count, list, k, error, pendingStep}
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
    search = {
      pattern,
      regex,
      mask: matcher && !matcher.error ? matchNames(names, matcher).mask : null,
      count: null,
      list: null,
      k: -1,
      error: matcher?.error ?? null,
      pendingStep: 0,
    };
    if (!source?.search) {
      search.count = 0;
      if (!search.error) search.error = "search needs the kernel (no source)";
    } else {
      source.search(pattern, regex).then(
        (reply) => {
          if (isDestroyed() || mine !== token) return;
          search.count = Number(reply.count) || 0;
          search.list = reply.table ?? null;
          search.error = null;
          if (Array.isArray(reply.names)) search.mask = maskFromIndexes(names.length, reply.names);
          root.dataset.searchCount = String(search.count);
          const step = search.pendingStep;
          search.pendingStep = 0;
          if (step) stepTo(step);
          showStatus();
          onChange();
        },
        (err) => {
          if (isDestroyed() || mine !== token) return;
          search.error = err.message;
          search.count = 0;
          search.mask = null;
          root.dataset.searchCount = "0";
          showStatus();
          onChange();
        },
      );
    }
    showStatus();
    onChange();
  }

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
