// @ts-check
// Canvas colors from JupyterLab's CSS variables (with fallbacks), read where the canvas lives so a
// theme switch shows on the next frame.

import { colorIsDark } from "../model/colors.js";

/**
 * @param {CSSStyleDeclaration} style
 * @param {string} name
 * @param {string} fallback
 */
function cssVar(style, name, fallback) {
  const v = style.getPropertyValue(name).trim();
  return v || fallback;
}

/**
 * Dark theme: JupyterLab says so on <body>; otherwise judge by the background's luminance.
 * @param {string} bg
 */
function isDark(bg) {
  const flag = document.body?.dataset?.jpThemeLight;
  if (flag === "false") return true;
  if (flag === "true") return false;
  return colorIsDark(bg);
}

/** @typedef {ReturnType<typeof themeColors>} Theme */

/** @param {Element} el */
export function themeColors(el) {
  const st = getComputedStyle(el);
  const bg = cssVar(st, "--jp-layout-color0", "#ffffff");
  const dark = isDark(bg);
  return {
    dark,
    bg,
    bgAlt: cssVar(st, "--jp-layout-color1", dark ? "#1e1e1e" : "#f7f7f7"),
    labelBg: cssVar(st, "--jp-layout-color2", dark ? "#2a2a2a" : "#eeeeee"),
    headerBg: cssVar(st, "--jp-layout-color3", dark ? "#3a3a3a" : "#e0e0e0"),
    border: cssVar(st, "--jp-border-color2", dark ? "#555" : "#d0d0d0"),
    grid: cssVar(st, "--jp-border-color3", dark ? "#333" : "#e8e8e8"),
    text: cssVar(st, "--jp-ui-font-color1", dark ? "#e0e0e0" : "#1f1f1f"),
    strong: cssVar(st, "--jp-ui-font-color0", dark ? "#ffffff" : "#000000"),
    muted: cssVar(st, "--jp-ui-font-color2", dark ? "#aaaaaa" : "#616161"),
    cpu: cssVar(st, "--jp-brand-color1", "#1976d2"),
    gpu: cssVar(st, "--jp-accent-color1", "#388e3c"),
    counter: cssVar(st, "--jp-brand-color2", "#64b5f6"),
    highlight: cssVar(st, "--jp-warn-color1", "#f57c00"),
    flow: cssVar(st, "--jp-error-color1", "#d32f2f"),
    // The straggler's mark (not the highlight's colour: tests count highlighted pixels).
    straggler: cssVar(st, "--jp-error-color0", "#b71c1c"),
    range: cssVar(st, "--jp-brand-color1", "#1976d2"),
    onBox: dark ? "#0b0b0b" : "#111111",
    fontFamily: cssVar(st, "--jp-ui-font-family", "system-ui, -apple-system, 'Segoe UI', sans-serif"),
  };
}
