// @ts-check
// Event fill colors: a fixed palette, so a frame batches its fills per palette entry. No DOM;
// unit-tested.
//
// Each kind has its own band: kernels take the blue-green-yellow part of the hue wheel at full
// saturation, memcpy the reds, memset the magentas, CPU ops pastel tones over the whole wheel,
// runtime calls grey-blues. A name's hash picks an entry inside its kind's band.

/**
 * Stable 32-bit FNV-1a hash of a string.
 * @param {string} s
 * @returns {number}
 */
export function hashString(s) {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

const BANDS = [
  { kind: "kernel", hue: [45, 265], sat: 62, light: [50, 60], size: 40 },
  { kind: "op", hue: [0, 360], sat: 42, light: [70, 77], size: 40 },
  { kind: "runtime", hue: [195, 250], sat: 20, light: [60, 68], size: 8 },
  { kind: "memcpy", hue: [348, 378], sat: 72, light: [52, 60], size: 8 },
  { kind: "memset", hue: [280, 325], sat: 55, light: [56, 64], size: 8 },
];
/** @type {Map<string, number>} */
const BAND_OFFSET = new Map();
let paletteSize = 0;
for (const band of BANDS) {
  BAND_OFFSET.set(band.kind, paletteSize);
  paletteSize += band.size;
}
/** Palette index of the muted fill used for events that do not match an active search. */
export const DIM_COLOR = paletteSize;
export const PALETTE_SIZE = paletteSize + 1;

/**
 * Palette index for an event name of a kind ("kernel", "op", ...; unknown kinds as kernels).
 * @param {unknown} name
 * @param {string} [kind]
 * @returns {number}
 */
export function colorIndex(name, kind = "kernel") {
  const band = BANDS.find((b) => b.kind === kind) ?? BANDS[0];
  return (BAND_OFFSET.get(band.kind) ?? 0) + (hashString(String(name)) % band.size);
}

/**
 * The hue, saturation and lightness of a palette entry (dark themes get darker fills).
 * @param {number} i
 * @param {boolean} [dark]
 * @returns {[number, number, number]}
 */
export function paletteHsl(i, dark = false) {
  if (i === DIM_COLOR) return dark ? [0, 0, 32] : [0, 0, 84];
  let at = 0;
  for (const band of BANDS) {
    if (i < at + band.size) {
      const j = i - at;
      const hue = (band.hue[0] + ((j + 0.5) * (band.hue[1] - band.hue[0])) / band.size) % 360;
      const light = band.light[j % 2] - (dark ? 10 : 0);
      return [Math.round(hue), band.sat - (dark ? 6 : 0), light];
    }
    at += band.size;
  }
  return [0, 0, 50];
}

/** @type {Map<boolean, string[]>} */
const paletteCache = new Map();
/**
 * CSS colors for every palette index.
 * @param {boolean} [dark]
 * @returns {string[]}
 */
export function palette(dark = false) {
  let out = paletteCache.get(dark);
  if (!out) {
    out = [];
    for (let i = 0; i < PALETTE_SIZE; i++) {
      const [h, s, l] = paletteHsl(i, dark);
      out.push(`hsl(${h}, ${s}%, ${l}%)`);
    }
    paletteCache.set(dark, out);
  }
  return out;
}

/**
 * Palette index per name index of a names table, memoised: `kindOf(nameIdx)` picks the band.
 * Out-of-range indexes get the color of an empty kernel name.
 * @param {ArrayLike<unknown>} names
 * @param {(nameIdx: number) => string} kindOf
 * @returns {(nameIdx: number) => number}
 */
export function nameColors(names, kindOf) {
  const memo = new Int16Array(names.length).fill(-1);
  return (nameIdx) => {
    if (!(nameIdx >= 0 && nameIdx < memo.length)) return colorIndex("", "kernel");
    if (memo[nameIdx] < 0) memo[nameIdx] = colorIndex(names[nameIdx], kindOf(nameIdx));
    return memo[nameIdx];
  };
}

/**
 * Whether a CSS color ("#rgb", "#rrggbb", "rgb(...)", "rgba(...)") is dark; false if unreadable.
 * @param {string} css
 * @returns {boolean}
 */
export function colorIsDark(css) {
  const hex = /^#([0-9a-f]{3}|[0-9a-f]{6})$/i.exec(css);
  const rgb = /^rgba?\(\s*(\d+)[,\s]+(\d+)[,\s]+(\d+)/i.exec(css);
  let channels;
  if (hex) {
    const h = hex[1].length === 3 ? hex[1].replace(/./g, "$&$&") : hex[1];
    channels = [0, 2, 4].map((i) => parseInt(h.slice(i, i + 2), 16));
  } else if (rgb) {
    channels = [rgb[1], rgb[2], rgb[3]].map(Number);
  } else return false;
  const [r, g, b] = channels;
  return 0.2126 * r + 0.7152 * g + 0.0722 * b < 128;
}
