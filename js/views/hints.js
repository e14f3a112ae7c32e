// @ts-check
// The hints panel: report["hints"] in their ranked order, each a <details> that opens on its
// explanation, numbers, fix steps, fix code (with a Copy button), how the gain was estimated, and
// its evidence as buttons that take the timeline there. Hint texts go through textContent only.
//
// For browser tests: the root carries data-hints (count) and data-active-evidence ("i:j");
// each hint data-hint (index in summary.hints) and data-severity; evidence buttons data-evidence
// ("i:j"); copy buttons data-copy (hint index) and data-copied ("yes" | "failed") after a click;
// a hint that names its module or line has a chip .gp-hl-where with data-module / data-line.

import "./hints.css";
import { evidenceText, formatHintNumber, formatTime, hintNumberLabel } from "../model/format.js";
import { whereRows } from "../model/modules.js";
import { button, node } from "./dom.js";

const COPIED_MS = 1500;

/** @typedef {import("./report_types.js").Report} Report */
/** A hint as the report has it, fields possibly missing (older saved reports). @typedef {Partial<import("../model/report_types.js").Hint>} Hint */
/** @typedef {import("../model/report_types.js").Evidence} Evidence */

/**
 * Copy text: the async clipboard API where the page may use it, else a selected textarea.
 * @param {string} text
 */
async function copyText(text) {
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text);
      return true;
    }
  } catch {
    // Denied (no focus, permissions): the textarea route below may still work.
  }
  const area = document.createElement("textarea");
  area.value = text;
  area.setAttribute("readonly", "");
  area.style.position = "fixed";
  area.style.top = "-1000px";
  area.style.opacity = "0";
  document.body.appendChild(area);
  area.select();
  let ok = false;
  try {
    ok = document.execCommand("copy");
  } catch {
    ok = false;
  }
  area.remove();
  return ok;
}

const LEVELS = ["high", "medium", "low"]; // severities and confidences alike

/** @param {Hint} hint */
function severityOf(hint) {
  const s = (hint && hint.severity) ?? "";
  return LEVELS.includes(s) ? s : "low";
}

/**
 * Returns {el, open(i), destroy}; open(i) expands hint i from code without calling the hooks.
 * @param {Report | null | undefined} summary the report (summary trait)
 * @param {{onEvidence?: (i: number, j: number) => void, onSelectHint?: (i: number) => void}} [hooks]
 *   onSelectHint when the user opens hint i, onEvidence when they click evidence j of hint i.
 */
export function createHints(summary, hooks = {}) {
  summary = summary || {};
  const hints = Array.isArray(summary.hints) ? summary.hints : [];
  const multiRank = (summary.ranks || []).length > 1;
  /** @type {Set<ReturnType<typeof setTimeout>>} */
  const timers = new Set();
  /** @type {Set<number>} hints open() expanded: their next toggle event calls no hook */
  const quiet = new Set();

  const root = node("div", "gp-hintlist");
  root.dataset.hints = String(hints.length);
  root.dataset.activeEvidence = "";
  root.appendChild(node("div", "gp-panel-title", hints.length ? `Hints (${hints.length}), largest gain first` : "Hints"));
  if (!hints.length) {
    const why = typeof summary.no_findings === "string" && summary.no_findings ? ` ${summary.no_findings}` : "";
    root.appendChild(node("div", "gp-muted", `No hints: nothing in this trace crossed a threshold.${why}`));
  }

  const list = node("ol", "gp-hl-list");
  /** @type {HTMLDetailsElement[]} */
  const items = [];
  hints.forEach((/** @type {Hint | null} */ hint, /** @type {number} */ i) => {
    hint = hint || {};
    const li = node("li", "gp-hl-item");
    li.dataset.hint = String(i);
    li.dataset.severity = severityOf(hint);
    const details = node("details", "gp-hl-details");

    const head = node("summary", "gp-hl-summary");
    head.appendChild(node("span", "gp-hl-rank", `#${i + 1}`));
    head.appendChild(node("span", `gp-hl-severity gp-hl-severity-${severityOf(hint)}`, severityOf(hint)));
    head.appendChild(node("span", "gp-hl-title", hint.title ?? hint.kind ?? "hint"));
    const gain = node("span", "gp-hl-gain", `up to ${formatTime(hint.gain_ns)}`);
    gain.title = "estimated time a fix gives back";
    head.appendChild(gain);
    const confidence = LEVELS.includes(hint.confidence ?? "") ? hint.confidence : "unknown";
    head.appendChild(node("span", `gp-hl-confidence gp-hl-confidence-${confidence}`, `${confidence} confidence`));
    // Where in the user's program, seen without opening the card: its module and its line.
    const where = whereRows(hint);
    if (where.length) {
      const chip = node("span", "gp-hl-chip gp-hl-where", where.map(([, text]) => text).join(" · "));
      chip.title = where.map(([label, text]) => `${label}: ${text}`).join("\n");
      for (const [label, text] of where) chip.dataset[label === "module" ? "module" : "line"] = text;
      head.appendChild(chip);
    }
    if (multiRank && hint.rank !== null && hint.rank !== undefined) {
      head.appendChild(node("span", "gp-hl-chip", `rank ${hint.rank}`));
    }
    details.appendChild(head);

    const body = node("div", "gp-hl-body");
    if (hint.explanation) body.appendChild(node("p", "gp-hl-explanation", hint.explanation));

    const numbers = Object.entries(hint.numbers || {});
    if (numbers.length) {
      const t = node("table", "gp-hl-numbers");
      const tb = t.createTBody();
      for (const [key, value] of numbers) {
        const tr = tb.insertRow();
        tr.appendChild(node("th", "", hintNumberLabel(key)));
        tr.appendChild(node("td", "", formatHintNumber(key, value)));
      }
      body.appendChild(t);
    }

    const fix = Array.isArray(hint.fix) ? hint.fix : [];
    if (fix.length) {
      body.appendChild(node("div", "gp-hl-subtitle", "Fix"));
      const steps = node("ol", "gp-hl-fix");
      for (const step of fix) steps.appendChild(node("li", "", step));
      body.appendChild(steps);
    }

    if (hint.code) {
      // Copy sits on a bar above the code, never over it: code lines run wider than the card
      // and scroll sideways under anything laid on top of them.
      const block = node("div", "gp-hl-code");
      const bar = node("div", "gp-hl-code-bar");
      const pre = node("pre", "");
      pre.appendChild(node("code", "", hint.code));
      const copy = button("Copy", undefined, "gp-button gp-hl-copy");
      copy.dataset.copy = String(i);
      copy.addEventListener("click", async () => {
        const ok = await copyText(String(hint.code));
        copy.textContent = ok ? "copied" : "copy failed: select the code";
        copy.dataset.copied = ok ? "yes" : "failed";
        const timer = setTimeout(() => {
          timers.delete(timer);
          copy.textContent = "Copy";
        }, COPIED_MS);
        timers.add(timer);
      });
      bar.appendChild(copy);
      block.append(bar, pre);
      body.appendChild(block);
    }

    if (hint.gain_method) {
      const p = node("p", "gp-hl-method");
      p.appendChild(node("span", "gp-hl-method-label", "How the gain was estimated: "));
      p.appendChild(document.createTextNode(String(hint.gain_method)));
      body.appendChild(p);
    }

    const related = Array.isArray(hint.related) ? hint.related.length : 0;
    if (related) {
      const what = `Concerns ${related} roofline ${related === 1 ? "point" : "points"}.`;
      body.appendChild(node("div", "gp-muted", what));
    }

    const evidence = Array.isArray(hint.evidence) ? hint.evidence : [];
    if (evidence.length) {
      body.appendChild(node("div", "gp-hl-subtitle", "Evidence"));
      const row = node("div", "gp-hl-evidence");
      evidence.forEach((/** @type {Evidence | null} */ e, /** @type {number} */ j) => {
        const b = button(evidenceText(e), undefined, "gp-button gp-hl-evidence-button");
        b.dataset.evidence = `${i}:${j}`;
        const where = [e && e.table, e && e.rank != null && multiRank ? `rank ${e.rank}` : null].filter(Boolean);
        b.title = `show on the timeline${where.length ? ` (${where.join(", ")})` : ""}`;
        b.addEventListener("click", () => {
          for (const other of root.querySelectorAll(".gp-hl-evidence-active")) {
            other.classList.remove("gp-hl-evidence-active");
          }
          b.classList.add("gp-hl-evidence-active");
          root.dataset.activeEvidence = `${i}:${j}`;
          if (typeof hooks.onEvidence === "function") hooks.onEvidence(i, j);
        });
        row.appendChild(b);
      });
      body.appendChild(row);
    }
    details.appendChild(body);

    details.addEventListener("toggle", () => {
      li.classList.toggle("gp-hl-open", details.open);
      if (quiet.delete(i)) return;
      if (details.open && typeof hooks.onSelectHint === "function") hooks.onSelectHint(i);
    });
    li.appendChild(details);
    list.appendChild(li);
    items.push(details);
  });
  root.appendChild(list);

  return {
    el: root,
    /** @param {number} i */
    open(i) {
      const details = items[i];
      if (!details) return;
      if (!details.open) {
        // The toggle event fires later, as a task: mark it as ours.
        quiet.add(i);
        details.open = true;
      }
      details.scrollIntoView({ block: "nearest" });
    },
    destroy() {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      root.remove();
    },
  };
}
