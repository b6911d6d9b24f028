// The service's built-in basemap (land, borders and country names from its
// own tiles and glyphs), drawn under previews so data has a place to sit.
import type { LayerSpecification, StyleSpecification } from "maplibre-gl";
import { client, data } from "../../lib/api";

/** The basemap_style naming the built-in basemap, as new maps get it. */
export const BUILTIN_BASEMAP = "/api/basemap/style.json";

export function isBuiltinBasemap(basemapStyle: string): boolean {
  return basemapStyle === BUILTIN_BASEMAP || basemapStyle === `${window.location.origin}${BUILTIN_BASEMAP}`;
}

let loading: Promise<StyleSpecification> | null = null;

/** The built-in basemap's style, fetched once per page load. */
export function builtinBasemap(): Promise<StyleSpecification> {
  loading ??= data<StyleSpecification>(client.GET("/basemap/style.json")).catch((error) => {
    loading = null;
    throw error;
  });
  return loading;
}

/** How the basemap joins a style: over the data (its background left out,
 * which would hide everything) or under it, at an opacity. */
export type BasemapPlacement = { above?: boolean; opacity?: number };

const OPACITY: Record<string, string[]> = {
  background: ["background-opacity"],
  fill: ["fill-opacity"],
  line: ["line-opacity"],
  symbol: ["text-opacity"],
};

/** `style` with the basemap's sources, glyphs and layers: under its own
 * layers (after its background), or over them. */
export function withBasemap(style: StyleSpecification, basemap: StyleSpecification, placement: BasemapPlacement): StyleSpecification {
  const sources = { ...style.sources };
  for (const [id, source] of Object.entries(basemap.sources)) sources[`basemap-${id}`] = source;
  const opacity = placement.opacity ?? 1;
  const layers = basemap.layers
    .filter((l) => !(placement.above && l.type === "background"))
    .map((l) => {
      const layer = { ...l, id: `basemap-${l.id}` } as LayerSpecification & { source?: string; paint?: Record<string, unknown> };
      if ("source" in l && typeof l.source === "string") layer.source = `basemap-${l.source}`;
      if (opacity < 1) {
        layer.paint = { ...(l.paint as Record<string, unknown>) };
        for (const property of OPACITY[l.type] ?? []) layer.paint[property] = opacity;
      }
      return layer as LayerSpecification;
    });
  const own = style.layers;
  const background = own[0]?.type === "background" ? [own[0]] : [];
  const rest = own.slice(background.length);
  return {
    ...style,
    glyphs: style.glyphs ?? basemap.glyphs,
    sources,
    layers: placement.above ? [...background, ...rest, ...layers] : [...background, ...layers, ...rest],
  };
}
