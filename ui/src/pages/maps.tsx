import { useState, type FormEvent } from "react";
import type { LayerSpecification, SourceSpecification, StyleSpecification } from "maplibre-gl";
import { ApiError, get, send, type Schemas } from "../api";
import { Link, navigate } from "../router";
import { ErrorNote, LoadFailed, SignedIn, useLoad, when } from "./common";
import { MapView } from "./mapview";

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

/** A map's layers as a MapLibre style over a plain background: each dataset from this service's tiles. */
export function mapStyle(map: MapResponse): StyleSpecification {
  const sources: Record<string, SourceSpecification> = {};
  const layers: LayerSpecification[] = [{ id: "background", type: "background", paint: { "background-color": "#eef2f5" } }];
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
  return { version: 8, sources, layers };
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

export function Maps() {
  const maps = useLoad(() => get<Schemas["MapList"]>("/api/maps?limit=100"), []);
  const [name, setName] = useState("");
  const [error, setError] = useState<unknown>(null);
  const create = async (e: FormEvent) => {
    e.preventDefault();
    setError(null);
    try {
      const created = await send<MapResponse>("POST", "/api/maps", { name });
      navigate(`/maps/${created.id}`);
    } catch (err) {
      setError(err);
    }
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
        <ErrorNote error={error} />
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
      <MapView style={mapStyle(m)} bounds={extentOf(m)} label={`Map ${m.name}`} />
    </article>
  );
}
