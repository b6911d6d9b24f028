import { useState, type FormEvent } from "react";
import type { LayerSpecification, RasterLayerSpecification, SourceSpecification, StyleSpecification } from "maplibre-gl";
import { ApiError, get, send, type Schemas } from "../api";
import { Link, navigate } from "../router";
import { ErrorNote, LoadFailed, SignedIn, useAction, useLoad, when } from "./common";
import { MapView } from "./mapview";
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

/** A style JSON document (a MapLibre style, such as an exported one) becomes a new map. */
function ImportStyle() {
  const [file, setFile] = useState<File | null>(null);
  const action = useAction();
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (!file) return;
    action.run(async () => {
      let style: unknown;
      try {
        style = JSON.parse(await file.text());
      } catch {
        throw new Error(`${file.name} is not a JSON document.`);
      }
      const created = await send<MapResponse>("POST", "/api/maps/import", style);
      navigate(`/maps/${created.id}`);
    });
  };
  return (
    <section aria-labelledby="import-style">
      <h2 id="import-style">Import a style</h2>
      <p>A MapLibre style document, such as one exported here, becomes a new map; its layers drawn from this catalog's datasets come with it.</p>
      <form onSubmit={submit} className="row">
        <label className="grow">
          Style JSON file
          <input type="file" accept=".json,application/json" onChange={(e) => setFile(e.target.files?.[0] ?? null)} />
        </label>
        <button type="submit" disabled={!file || action.busy}>
          Import style
        </button>
      </form>
      <ErrorNote error={action.error} />
    </section>
  );
}

export function Maps() {
  const maps = useLoad(() => get<Schemas["MapList"]>("/api/maps?limit=100"), []);
  const [name, setName] = useState("");
  const action = useAction();
  const create = (e: FormEvent) => {
    e.preventDefault();
    action.run(async () => {
      const created = await send<MapResponse>("POST", "/api/maps", { name });
      navigate(`/maps/${created.id}`);
    });
  };
  return (
    <SignedIn>
      <section>
        <h1>Maps</h1>
        <ErrorNote error={maps.error} />
        <ul className="cards">
          {maps.value?.maps.map((m) => (
            <li key={m.id} className="card">
              <div>
                <h2>
                  <Link href={`/maps/${m.id}`}>{m.name}</Link>
                </h2>
                <p className="meta">
                  <span>{m.layer_count} layers</span> <span>updated {when(m.updated_at)}</span>
                </p>
              </div>
            </li>
          ))}
        </ul>
        {maps.value?.maps.length === 0 && <p>No map yet.</p>}
        <form onSubmit={create} className="row">
          <label className="grow">
            New map name
            <input value={name} onChange={(e) => setName(e.target.value)} required />
          </label>
          <button type="submit">Create map</button>
        </form>
        <ErrorNote error={action.error} />
        <ImportStyle />
      </section>
    </SignedIn>
  );
}

/** A shared map, for anyone with its link. */
export function SharedMap({ token }: { token: string }) {
  const map = useLoad(() => get<MapResponse>(`/api/maps/shared/${encodeURIComponent(token)}`), [token]);
  if (map.error instanceof ApiError && map.error.status === 410)
    return (
      <section>
        <h1>This link was revoked</h1>
        <p>{map.error.message}</p>
      </section>
    );
  if (map.error) return <LoadFailed error={map.error} />;
  const m = map.value;
  if (!m) return <p className="loading">Loading…</p>;
  return (
    <article>
      <h1>{m.name}</h1>
      {m.description && <p className="summary">{m.description}</p>}
      <MapView style={mapStyle(m)} bounds={extentOf(m)} basemap={basemapPlacement(m)} label={`Map ${m.name}`} />
    </article>
  );
}
