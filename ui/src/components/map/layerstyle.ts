// How a map layer is drawn, as the map editor sets it: one colour, a colour
// per category, colour classes of a number column, or (points) symbols
// sized by a number. The editor keeps its choice in the layer's
// `style_config` and writes the MapLibre paint it makes into `paint`, which
// the API's exported style draws too; the legend is read from the choice.
import type { Schemas } from "../../lib/api";

type MapLayer = Schemas["MapLayerResponse"];
export type Geometry = "fill" | "line" | "circle";
export type Mode = "single" | "categories" | "classes" | "proportional";
export type Value = string | number | boolean;

export type StyleConfig = {
  mode: Mode;
  /** One colour (single, proportional) and the colour of values no rule names. */
  colour: string;
  /** Polygons' outline. */
  outline: string;
  column?: string;
  /** categories: each value's colour. */
  categories?: { value: Value; colour: string }[];
  /** classes: the ramp, the class breaks (ascending) and a colour per class (one more than breaks). */
  ramp?: string;
  breaks?: number[];
  colours?: string[];
  /** proportional: the values at the smallest and largest symbol. */
  min?: number;
  max?: number;
  /** What the column's numbers count ("people", "km²"), as the map maker typed it; legends name it. */
  unit?: string;
};

/** Colours told apart at a glance (ColorBrewer's Dark2 and Paired, reordered). */
export const QUALITATIVE = [
  "#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02",
  "#1f78b4", "#a6761d", "#b15928", "#6a3d9a", "#33a02c", "#e31a1c",
];
export const OTHER_COLOUR = "#9ca3af";
export const DEFAULT_OUTLINE = "#1f2933";
/** Categories past this many share the "other" colour. */
export const MAX_CATEGORIES = QUALITATIVE.length;

/** Sequential and diverging ramps, light to dark (ColorBrewer, viridis). */
export const RAMPS: Record<string, string[]> = {
  Oranges: ["#feedde", "#fdbe85", "#fd8d3c", "#e6550d", "#a63603"],
  Blues: ["#eff3ff", "#bdd7e7", "#6baed6", "#3182bd", "#08519c"],
  Greens: ["#edf8e9", "#bae4b3", "#74c476", "#31a354", "#006d2c"],
  Purples: ["#f2f0f7", "#cbc9e2", "#9e9ac8", "#756bb1", "#54278f"],
  Viridis: ["#440154", "#3b528b", "#21918c", "#5ec962", "#fde725"],
  "Red to blue": ["#ca0020", "#f4a582", "#f7f7f7", "#92c5de", "#0571b0"],
};

export const SMALLEST_SYMBOL = 3;
export const LARGEST_SYMBOL = 24;

function hex(colour: string): [number, number, number] {
  const n = Number.parseInt(colour.slice(1), 16);
  return [(n >> 16) & 255, (n >> 8) & 255, n & 255];
}

/** `count` colours evenly along a ramp. */
export function rampColours(ramp: string, count: number): string[] {
  const stops = RAMPS[ramp] ?? RAMPS.Oranges;
  if (count === 1) return [stops[stops.length - 1]];
  return Array.from({ length: count }, (_, i) => {
    const at = (i / (count - 1)) * (stops.length - 1);
    const low = Math.floor(at);
    const high = Math.min(stops.length - 1, low + 1);
    const [a, b] = [hex(stops[low]), hex(stops[high])];
    const mix = a.map((c, k) => Math.round(c + (b[k] - c) * (at - low)));
    return `#${mix.map((c) => c.toString(16).padStart(2, "0")).join("")}`;
  });
}

export function geometryOf(layer: { dataset_geometry_type?: string | null }): Geometry {
  const type = (layer.dataset_geometry_type ?? "").toLowerCase();
  return type.includes("polygon") ? "fill" : type.includes("line") ? "line" : "circle";
}

function colourIn(paint: unknown): string | null {
  const p = (paint ?? {}) as Record<string, unknown>;
  for (const key of ["fill-color", "line-color", "circle-color"]) {
    const value = p[key];
    if (typeof value === "string" && /^#[0-9a-f]{6}$/i.test(value)) return value;
  }
  return null;
}

/** The layer's style settings: as saved, or one colour read from its paint
 * (its own, then its dataset's default), or a colour of its own place in the map. */
export function configOf(layer: MapLayer, index = 0): StyleConfig {
  const saved = layer.style_config as Partial<StyleConfig> | null | undefined;
  if (saved?.mode && typeof saved.colour === "string") return { outline: DEFAULT_OUTLINE, ...saved } as StyleConfig;
  const colour = colourIn(layer.paint) ?? colourIn(layer.dataset_default_paint) ?? QUALITATIVE[index % QUALITATIVE.length];
  return { mode: "single", colour, outline: DEFAULT_OUTLINE };
}

/** Labels of a `match` must be all strings or all numbers: other values match as text. */
function matchInput(config: StyleConfig, values: Value[]): { input: unknown; labels: (string | number)[] } {
  const get = ["get", config.column];
  if (values.every((v) => typeof v === "string")) return { input: get, labels: values as string[] };
  if (values.every((v) => typeof v === "number" && Number.isInteger(v))) return { input: get, labels: values as number[] };
  return { input: ["to-string", get], labels: values.map(String) };
}

/** The colour a feature is drawn in, as a MapLibre expression. */
export function colourExpression(config: StyleConfig): unknown {
  if (config.mode === "categories" && config.column && config.categories?.length) {
    const { input, labels } = matchInput(config, config.categories.map((c) => c.value));
    const branches = labels.flatMap((label, i) => [label, config.categories![i].colour]);
    return ["match", input, ...branches, config.colour];
  }
  if (config.mode === "classes" && config.column && config.colours?.length) {
    const breaks = config.breaks ?? [];
    const steps = breaks.flatMap((b, i) => [b, config.colours![i + 1]]);
    const value = ["get", config.column];
    // Features without a value take the "other" colour, not the first class's.
    return ["case", ["==", value, null], config.colour, ["step", ["to-number", value], config.colours[0], ...steps]];
  }
  return config.colour;
}

/** A point's radius: by area for a number column (proportional symbols). */
export function radiusExpression(config: StyleConfig): unknown {
  if (config.mode !== "proportional" || !config.column || config.min === undefined || config.max === undefined) return 5;
  const [low, high] = [Math.max(0, config.min), Math.max(0, config.max)];
  if (!(high > low)) return SMALLEST_SYMBOL;
  const size = ["sqrt", ["max", 0, ["to-number", ["get", config.column], 0]]];
  return ["interpolate", ["linear"], size, Math.sqrt(low), SMALLEST_SYMBOL, Math.sqrt(high), LARGEST_SYMBOL];
}

/** The paint a layer's settings make (opacity stays the layer's own). */
export function paintOf(config: StyleConfig, geometry: Geometry): Record<string, unknown> {
  const colour = colourExpression(config);
  if (geometry === "fill") return { "fill-color": colour, "fill-outline-color": config.outline };
  if (geometry === "line") return { "line-color": colour, "line-width": 2 };
  return {
    "circle-color": colour,
    "circle-radius": radiusExpression(config),
    "circle-stroke-color": "#ffffff",
    "circle-stroke-width": 1,
  };
}

export type LegendEntry = { colour: string; label: string; radius?: number };

function number(n: number): string {
  return Math.abs(n) >= 1e6 || Number.isInteger(n)
    ? n.toLocaleString(undefined, { maximumFractionDigits: 0 })
    : n.toLocaleString(undefined, { maximumSignificantDigits: 4 });
}

/** What the legend says of a layer: a swatch and a label per rule. */
export function legendOf(config: StyleConfig, name: string): LegendEntry[] {
  if (config.mode === "categories" && config.categories?.length) {
    return [
      ...config.categories.map((c) => ({ colour: c.colour, label: String(c.value) })),
      { colour: config.colour, label: "Other" },
    ];
  }
  if (config.mode === "classes" && config.colours?.length) {
    const breaks = config.breaks ?? [];
    if (!breaks.length) return [{ colour: config.colours[0], label: "every value" }];
    return config.colours.map((colour, i) => ({
      colour,
      label:
        i === 0 ? `below ${number(breaks[0] ?? Number.NaN)}` : i === breaks.length ? `${number(breaks[i - 1])} or more` : `${number(breaks[i - 1])} to ${number(breaks[i])}`,
    }));
  }
  if (config.mode === "proportional" && config.min !== undefined && config.max !== undefined) {
    const [low, high] = [Math.max(0, config.min), Math.max(0, config.max)];
    const middle = (low + high) / 2;
    const radius = (v: number) =>
      high > low ? SMALLEST_SYMBOL + ((Math.sqrt(v) - Math.sqrt(low)) / (Math.sqrt(high) - Math.sqrt(low))) * (LARGEST_SYMBOL - SMALLEST_SYMBOL) : SMALLEST_SYMBOL;
    return [high, middle, low].map((v) => ({ colour: config.colour, label: number(v), radius: radius(v) }));
  }
  return [{ colour: config.colour, label: name }];
}

/** A column's summary, its values narrowed to what a category holds (the
 * document leaves a value's type open). */
export type ColumnSummary = Omit<Schemas["ColumnSummary"], "values"> & { values: { value: Value; count: number }[] };

/** Categories from a column's most common values, each its own colour. */
export function categoriesFrom(summary: ColumnSummary): StyleConfig["categories"] {
  const shown = summary.distinct > MAX_CATEGORIES ? MAX_CATEGORIES - 1 : MAX_CATEGORIES;
  return summary.values.slice(0, shown).map((v, i) => ({ value: v.value, colour: QUALITATIVE[i % QUALITATIVE.length] }));
}

/** Classes from a column's breaks: equal counts, repeated breaks merged. */
export function classesFrom(summary: ColumnSummary, ramp: string): Pick<StyleConfig, "breaks" | "colours"> {
  const breaks = [...new Set(summary.breaks ?? [])].filter((b) => Number.isFinite(b)).sort((a, b) => a - b);
  return { breaks, colours: rampColours(ramp, breaks.length + 1) };
}

/** A raster layer's rendering (its `style_config`), as the tile routes take it. */
export type RasterConfig = { mode: "raster"; bidx?: number; rescale?: [number, number]; colormap?: string };

/** The service's colour maps, their colours as the tile routes paint them. */
export const COLORMAPS: Record<string, string[]> = {
  viridis: ["#440154", "#3b528b", "#21918c", "#5ec962", "#fde725"],
  magma: ["#000004", "#51127c", "#b73779", "#fc8961", "#fcfdbf"],
  terrain: ["#333399", "#0099ff", "#00cc66", "#ffff99", "#805c54", "#ffffff"],
  greys: ["#ffffff", "#000000"],
  rdylgn: ["#a50026", "#f46d43", "#fee08b", "#d9ef8b", "#66bd63", "#006837"],
};

export function rasterConfigOf(layer: { style_config?: unknown }): RasterConfig {
  const saved = (layer.style_config ?? {}) as Partial<RasterConfig>;
  return { ...saved, mode: "raster" };
}

/** A raster rendering as a tile query (`bidx=1&rescale=0,500&colormap=terrain`), empty for the default. */
export function rasterQuery(config: Partial<RasterConfig>): string {
  const query = new URLSearchParams();
  if (config.bidx) query.set("bidx", String(config.bidx));
  if (config.rescale) query.set("rescale", config.rescale.join(","));
  if (config.colormap) query.set("colormap", config.colormap);
  return query.toString();
}
