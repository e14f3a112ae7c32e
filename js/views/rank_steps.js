// @ts-check
// The rank x step view of a multi-rank job: per rank (rows) and recorded step (columns) the
// shares of the step's window the rank spent computing, waiting in collectives, and not
// computing (its bubble), as a bar and as numbers, the cell tinted by the bubble; the mean over
// all steps last; the straggler's row marked. A click on a rank focuses the timeline on it.
// The grid is js/model/ranks.js's; text goes in through textContent only.

import "./rank_steps.css";
import { formatCount, formatTime } from "../model/format.js";
import { rankStepGrid, stragglerOf } from "../model/ranks.js";
import { button, node } from "./dom.js";

/**
 * @param {import("./report_types.js").Report | null | undefined} summary the report (its `distributed` field)
 * @param {{onFocusRank?: (rank: number) => void}} hooks
 * @returns {{el: HTMLElement | null, showFocused: (rank: number | null) => void, destroy: () => void}}
 */
export function createRankSteps(summary, hooks = {}) {
  const grid = rankStepGrid(summary);
  if (!grid) return { el: null, showFocused() {}, destroy() {} };
  const el = node("div", "gp-ranks");
  el.dataset.ranks = String(grid.ranks.length);
  el.dataset.steps = String(grid.totalSteps);
  el.dataset.straggler = grid.straggler === null ? "" : String(grid.straggler);

  const head = node("div", "gp-ranks-head");
  head.append(node("span", "gp-ranks-title", `${grid.ranks.length} ranks × ${formatCount(grid.totalSteps)} step${grid.totalSteps === 1 ? "" : "s"}`));
  head.append(
    node("span", "gp-ranks-key gp-ranks-compute"), node("span", "gp-muted", "compute /"),
    node("span", "gp-ranks-key gp-ranks-wait"), node("span", "gp-muted", "wait in collectives / bubble (not computing), shares of each step's window"),
    node("span", "gp-muted", ` · ${grid.clock} · click a rank to focus the timeline on it`),
  );
  el.append(head);
  const straggler = stragglerOf(summary);
  if (straggler) {
    const last = straggler.arrivedLast === null ? "" : `, arrived last in ${formatCount(straggler.arrivedLast)} collectives`;
    const cause = straggler.cause ? `: ${straggler.cause}` : "";
    el.append(node("div", "gp-ranks-straggler", `straggler: rank ${straggler.rank}, the others waited ${formatTime(straggler.waitCausedNs)} for it${last}${cause}`));
  }

  const scroll = node("div", "gp-ranks-scroll");
  const table = node("table", "gp-table gp-ranks-table");
  const thead = node("thead");
  const hr = node("tr");
  hr.append(node("th", "", "rank"));
  for (const s of grid.steps) hr.append(node("th", "", s.label));
  hr.append(node("th", "", grid.totalSteps > grid.steps.length ? `mean of ${formatCount(grid.totalSteps)}` : "mean"));
  thead.append(hr);
  const tbody = node("tbody");
  /** @type {Map<number, HTMLElement>} */
  const rowOf = new Map();
  grid.ranks.forEach((rank, i) => {
    const tr = node("tr");
    tr.dataset.rank = String(rank);
    const isStraggler = rank === grid.straggler;
    if (isStraggler) tr.classList.add("gp-ranks-is-straggler");
    const th = node("th");
    const b = button(`rank ${rank}`, `Focus the timeline on rank ${rank} (again: show every rank)`, "gp-button gp-ranks-rank");
    b.dataset.rank = String(rank);
    b.addEventListener("click", () => hooks.onFocusRank?.(rank));
    th.append(b);
    if (isStraggler) th.append(node("span", "gp-ranks-badge", "straggler"));
    tr.append(th);
    for (const c of [...grid.cells[i], grid.means[i]]) tr.append(cellEl(c));
    tbody.append(tr);
    rowOf.set(rank, tr);
  });
  table.append(thead, tbody);
  scroll.append(table);
  el.append(scroll);
  if (grid.totalSteps > grid.steps.length) {
    el.append(node("div", "gp-muted", `the first ${grid.steps.length} of ${formatCount(grid.totalSteps)} steps; the mean covers all`));
  }

  return {
    el,
    /** Mark the rank the timeline is focused on (null: none). */
    showFocused(rank) {
      el.dataset.focusedRank = rank === null ? "" : String(rank);
      for (const [r, tr] of rowOf) tr.classList.toggle("gp-ranks-focused", r === rank);
    },
    destroy() {
      el.remove();
    },
  };
}

/**
 * A cell: a bar of compute, wait and the rest of the bubble, the three shares, a tint by the bubble.
 * @param {import("../model/ranks.js").StepCell} c
 */
function cellEl(c) {
  const td = node("td", "gp-ranks-cell");
  td.title = c.title;
  if (c.bubble !== null) td.style.setProperty("--gp-bubble", String(c.bubble));
  const bar = node("div", "gp-ranks-bar");
  const compute = c.compute ?? 0;
  const wait = Math.min(c.wait ?? 0, Math.max(0, 1 - compute));
  /** @type {[string, number][]} */
  const shares = [["gp-ranks-compute", compute], ["gp-ranks-wait", wait]];
  for (const [cls, share] of shares) {
    const part = node("div", cls);
    part.style.width = `${(100 * share).toFixed(1)}%`;
    bar.append(part);
  }
  td.append(bar, node("div", "gp-ranks-num", c.text));
  return td;
}
