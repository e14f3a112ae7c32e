// @ts-check
// Types the views share, for the type check only (JSDoc; nothing here runs).
//
// The report arrives as the `summary` trait: Python's `gpuprofile.report/1` as JSON. Until its
// typedefs are generated from the Python Structs, it is typed loosely here, in this one place,
// and each view checks the values it reads (Number(...), ?? "", Array.isArray) as it always has.

/** The report dict (`Profile.report()`), possibly empty. @typedef {Record<string, any>} Report */

/** What a panel of the widget gives back: its element (null: nothing to show) and its teardown. @typedef {{el: HTMLElement | null, destroy: () => void}} Panel */

export {};
