// @ts-check
// Types the views share, for the type check only (JSDoc; nothing here runs).
//
// The report arrives as the `summary` trait: Python's `gpuprofile.report/1` as JSON, with what
// the widget adds, typed by js/model/report_types.d.ts (generated from the Python Structs).
// Every field optional: a timeline alone, and older saved reports, lack some.

/** The summary trait (`Profile.report()` and its extras), possibly empty. @typedef {import("../model/report_types.js").Summary} Report */

/** What a panel of the widget gives back: its element (null: nothing to show) and its teardown. @typedef {{el: HTMLElement | null, destroy: () => void}} Panel */

export {};
