// A map as MapLibre draws it, from the API's map record: its style, its
// extent and where the built-in basemap goes. No screen here: the
// embeddable view (`embed.tsx`) draws maps with these alone.
import type { LayerSpecification, RasterLayerSpecification, SourceSpecification, StyleSpecification } from "maplibre-gl";
import type { Schemas } from "../../lib/api";
import { isBuiltinBasemap, type BasemapPlacement } from "./basemap";
import { DEFAULT_OUTLINE, QUALITATIVE, geometryOf, rasterConfigOf, rasterQuery, type Geometry } from "./layerstyle";

type MapResponse = Schemas["MapResponse"];
type MapLayer = Schemas["MapLayerResponse"];

/** The paint a layer starts from, before its dataset's default style and
 * its own paint go over it (as the API's exported style does): each layer
 * a colour of its own, by its place in the map. */
function basePaint(geometry: Geometry, index: number): Record<string, unknown> {
  const colour = QUALITATIVE[index % QUALITATIVE.length];
  if (geometry === "fill") return { "fill-color": colour, "fill-outline-color": DEFAULT_OUTLINE };
  if (geometry === "line") return { "line-color": colour, "line-width": 2 };
  return { "circle-color": colour, "circle-radius": 5, "circle-stroke-color": "#ffffff", "circle-stroke-width": 1 };
}

/** A vector layer's paint: its start, its dataset's default, its own, and its opacity. */
export function vectorPaint(layer: MapLayer, index: number): Record<string, unknown> {
  const geometry = geometryOf(layer);
  const paint: Record<string, unknown> = {
    ...basePaint(geometry, index),
    ...((layer.dataset_default_paint ?? {}) as object),
    ...((layer.paint ?? {}) as object),
  };
  paint[`${geometry}-opacity`] ??= layer.opacity;
  return paint;
}

/** The background of a map without one of its own, as in the exported style. */
export const DEFAULT_BACKGROUND = "#f4f4f2";
const TILE_PATH = "/{z}/{x}/{y}.png";

/** The basemap_style of a raster dataset of this catalog: its tile template. */
export function rasterBasemap(datasetId: string): string {
  return `${window.location.origin}/api/tiles/${datasetId}${TILE_PATH}`;
}

/** The catalog raster a basemap_style names, if it names one. */
export function basemapDataset(basemapStyle: string): string | null {
  const prefix = `${window.location.origin}/api/tiles/`;
  if (!basemapStyle.startsWith(prefix) || !basemapStyle.endsWith(TILE_PATH)) return null;
  return basemapStyle.slice(prefix.length, -TILE_PATH.length);
}

/** Whether the preview may draw the basemap: a tile template served by this
 * service (the UI loads nothing from another site; the exported style does). */
export function drawsBasemap(basemapStyle: string): boolean {
  return basemapStyle.startsWith(`${window.location.origin}/`) && basemapStyle.includes("{z}");
}

/** A raster basemap's layer, toned as the API's export tones it. */
function basemapLayer(config: Schemas["BasemapConfig"]): RasterLayerSpecification {
  const paint: RasterLayerSpecification["paint"] = { "raster-opacity": config.opacity ?? 1 };
  if (config.land_water_tone === "muted") paint["raster-saturation"] = -0.5;
  if (config.land_water_tone === "monochrome") paint["raster-saturation"] = -1;
  if (config.land_water_tone === "contrast") paint["raster-contrast"] = 0.3;
  return { id: "basemap", type: "raster", source: "basemap", paint };
}

/** A map as a MapLibre style: its background, its basemap when this service
 * serves it, and each dataset from this service's tiles. */
export function mapStyle(map: MapResponse): StyleSpecification {
  const config = map.basemap_config;
  const sources: Record<string, SourceSpecification> = {};
  const background: LayerSpecification = {
    id: "background",
    type: "background",
    paint: { "background-color": config.background_color || DEFAULT_BACKGROUND },
  };
  const basemap: LayerSpecification[] = [];
  if (drawsBasemap(map.basemap_style)) {
    sources.basemap = { type: "raster", tiles: [map.basemap_style], tileSize: 256 };
    basemap.push(basemapLayer(config));
  }
  const layers: LayerSpecification[] = [];
  const ordered = [...map.layers].sort((a, b) => a.sort_order - b.sort_order);
  for (const [index, layer] of (ordered as MapLayer[]).entries()) {
    if (!layer.dataset_available) continue;
    const id = `layer-${layer.id}`;
    const url = `${window.location.origin}/api/tiles/${layer.dataset_id}/tilejson.json`;
    const visibility: "visible" | "none" = layer.visible ? "visible" : "none";
    if (layer.dataset_kind === "raster") {
      const rendering = rasterQuery(rasterConfigOf(layer));
      sources[id] = { type: "raster", url: rendering ? `${url}?${rendering}` : url, tileSize: 256 };
      layers.push({ id, type: "raster", source: id, layout: { visibility }, paint: { "raster-opacity": layer.opacity } });
      continue;
    }
    sources[id] = { type: "vector", url };
    const common = { source: id, "source-layer": layer.dataset_table_name, layout: { visibility } };
    const geometry = geometryOf(layer);
    const paint = vectorPaint(layer, index);
    layers.push({ id, type: geometry, ...common, paint } as LayerSpecification);
    // Polygons keep a crisp outline whatever their fill's opacity.
    if (geometry === "fill")
      layers.push({
        id: `${id}-outline`,
        type: "line",
        ...common,
        paint: { "line-color": (paint["fill-outline-color"] as string) ?? DEFAULT_OUTLINE, "line-width": 1, "line-opacity": layer.opacity },
      });
  }
  const above = config.basemap_position === "top";
  return { version: 8, sources, layers: [background, ...(above ? [...layers, ...basemap] : [...basemap, ...layers])] };
}

/** The map's data layers a click identifies, by the names people know them by. */
export function identifiedLayers(map: MapResponse): Record<string, string> {
  return Object.fromEntries(
    (map.layers as MapLayer[])
      .filter((l) => l.dataset_available && l.dataset_kind !== "raster")
      .map((l) => [`layer-${l.id}`, l.display_name || l.dataset_name]),
  );
}

/** Where a map draws the built-in basemap, if its basemap is that one. */
export function basemapPlacement(map: MapResponse): BasemapPlacement | null {
  if (!isBuiltinBasemap(map.basemap_style)) return null;
  return { above: map.basemap_config.basemap_position === "top", opacity: map.basemap_config.opacity ?? 1 };
}

/** Where a map looks when it opens: MapLibre's camera. */
export type MapCamera = { center: [number, number]; zoom: number; bearing: number; pitch: number };

/** The view the map was saved with, if its editor saved one. */
export function savedView(map: MapResponse): MapCamera | null {
  if (map.center_lng == null || map.center_lat == null || map.zoom == null) return null;
  return { center: [map.center_lng, map.center_lat], zoom: map.zoom, bearing: map.bearing, pitch: map.pitch };
}

export function extentOf(map: MapResponse): number[] | null {
  const boxes = (map.layers as MapLayer[]).map((l) => l.dataset_extent_bbox).filter((b): b is number[] => !!b && b.length >= 4);
  if (!boxes.length) return null;
  return [
    Math.min(...boxes.map((b) => b[0])),
    Math.min(...boxes.map((b) => b[1])),
    Math.max(...boxes.map((b) => b[2])),
    Math.max(...boxes.map((b) => b[3])),
  ];
}
