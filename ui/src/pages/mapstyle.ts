// A map as MapLibre draws it, from the API's map record: its style, its
// extent and where the built-in basemap goes. No screen here: the
// embeddable view (`embed.tsx`) draws maps with these alone.
import type { LayerSpecification, RasterLayerSpecification, SourceSpecification, StyleSpecification } from "maplibre-gl";
import type { Schemas } from "../api";
import { isBuiltinBasemap, type BasemapPlacement } from "./basemap";

type MapResponse = Schemas["MapResponse"];
type MapLayer = Schemas["MapLayerResponse"];

export const DEFAULT_COLOUR = "#c2410c";

/** The colour a layer is drawn in: the first colour of its paint. */
export function layerColour(layer: { paint?: unknown }): string {
  const paint = (layer.paint ?? {}) as Record<string, unknown>;
  for (const key of ["fill-color", "line-color", "circle-color"]) {
    if (typeof paint[key] === "string") return paint[key] as string;
  }
  return DEFAULT_COLOUR;
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
  for (const layer of ordered as MapLayer[]) {
    if (!layer.dataset_available) continue;
    const id = `layer-${layer.id}`;
    const url = `${window.location.origin}/api/tiles/${layer.dataset_id}/tilejson.json`;
    const visibility: "visible" | "none" = layer.visible ? "visible" : "none";
    if (layer.dataset_kind === "raster") {
      sources[id] = { type: "raster", url, tileSize: 256 };
      layers.push({ id, type: "raster", source: id, layout: { visibility }, paint: { "raster-opacity": layer.opacity } });
      continue;
    }
    sources[id] = { type: "vector", url };
    const common = { source: id, "source-layer": layer.dataset_table_name, layout: { visibility } };
    const type = (layer.dataset_geometry_type ?? "").toLowerCase();
    const colour = layerColour(layer);
    if (type.includes("polygon"))
      layers.push({ id, type: "fill", ...common, paint: { "fill-color": colour, "fill-opacity": 0.4 * layer.opacity } });
    else if (type.includes("line"))
      layers.push({ id, type: "line", ...common, paint: { "line-color": colour, "line-opacity": layer.opacity } });
    else
      layers.push({ id, type: "circle", ...common, paint: { "circle-color": colour, "circle-opacity": layer.opacity } });
  }
  const above = config.basemap_position === "top";
  return { version: 8, sources, layers: [background, ...(above ? [...layers, ...basemap] : [...basemap, ...layers])] };
}

/** Where a map draws the built-in basemap, if its basemap is that one. */
export function basemapPlacement(map: MapResponse): BasemapPlacement | null {
  if (!isBuiltinBasemap(map.basemap_style)) return null;
  return { above: map.basemap_config.basemap_position === "top", opacity: map.basemap_config.opacity ?? 1 };
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
