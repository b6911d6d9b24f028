// MapLibre GL JS, loaded only by the pages that draw a map. Requests to
// this service's own API carry the session's token. While data loads the
// map says so; clicking a feature of a named layer shows its attributes.
import { useEffect, useRef, useState } from "react";
import type { Map as MapLibreMap, StyleSpecification, LngLatBoundsLike, MapMouseEvent } from "maplibre-gl";
import { authHeaders } from "../../lib/api";
import { builtinBasemap, withBasemap, type BasemapPlacement } from "./basemap";
import { cellText } from "../text";
import type { MapCamera } from "./mapstyle";

export type MapViewProps = {
  style: StyleSpecification;
  bounds?: number[] | null;
  /** A saved view to open on instead of fitting the bounds. */
  view?: MapCamera | null;
  label: string;
  /** Where the built-in basemap goes, if the map draws it. */
  basemap?: BasemapPlacement | null;
  /** The style layers whose features a click identifies, with the names people know them by. */
  identify?: Record<string, string>;
  onMap?: (map: MapLibreMap) => void;
};

/** A feature's attributes as a small table, built as text (never as HTML). */
function attributeTable(layerName: string, properties: Record<string, unknown>): HTMLElement {
  const box = document.createElement("div");
  box.className = "identify";
  const title = document.createElement("strong");
  title.textContent = layerName;
  box.append(title);
  const table = document.createElement("table");
  for (const [key, value] of Object.entries(properties)) {
    const row = table.insertRow();
    const name = document.createElement("th");
    name.scope = "row";
    name.textContent = key;
    row.append(name);
    row.insertCell().textContent = cellText(value);
  }
  box.append(table);
  return box;
}

/** MapLibre's tiles are 512 px a side at zoom 0: below this zoom a map this wide shows the world more than once. */
function worldOnceZoom(width: number): number {
  return Math.log2(width / 512);
}

export function MapView({ style, bounds, view, label, basemap, identify, onMap }: MapViewProps) {
  const container = useRef<HTMLDivElement>(null);
  const [error, setError] = useState<string | null>(null);
  const [loading, setLoading] = useState(true);
  const named = useRef(identify);
  named.current = identify;
  // The style changes in place (a colour picked, a layer moved): the view stays where it is.
  const drawn = useRef<{ map: MapLibreMap; base: StyleSpecification | null } | null>(null);
  const latest = useRef(style);
  latest.current = style;
  const styleKey = JSON.stringify(style);
  useEffect(() => {
    const now = drawn.current;
    if (!now) return;
    now.map.setStyle(now.base && basemap ? withBasemap(style, now.base, basemap) : style, { diff: true });
  }, [styleKey]);
  useEffect(() => {
    let map: MapLibreMap | undefined;
    let cancelled = false;
    setLoading(true);
    (async () => {
      const [maplibre, worker, , base] = await Promise.all([
        import("maplibre-gl"),
        // The worker is a file of its own, which the bundler copies only when named.
        import("maplibre-gl/dist/maplibre-gl-worker.mjs?url"),
        import("maplibre-gl/dist/maplibre-gl.css"),
        // Without its basemap the map still draws its data.
        basemap ? builtinBasemap().catch(() => null) : null,
      ]);
      maplibre.setWorkerUrl(worker.default);
      if (cancelled || !container.current) return;
      const current = latest.current;
      map = new maplibre.Map({
        container: container.current,
        style: base && basemap ? withBasemap(current, base, basemap) : current,
        attributionControl: { compact: true },
        // Saved maps may be tilted as far as the API allows.
        maxPitch: 85,
        ...(view ?? {}),
        transformRequest: (url) =>
          url.startsWith(`${window.location.origin}/api/`) ? { url, headers: authHeaders() } : { url },
      });
      map.addControl(new maplibre.NavigationControl({ showCompass: false }));
      map.on("error", (e) => setError(e.error?.message ?? "the map could not load a part of itself"));
      map.on("dataloading", () => setLoading(true));
      map.on("idle", () => setLoading(false));
      const popup = new maplibre.Popup({ maxWidth: "320px", closeButton: true });
      map.on("click", (e: MapMouseEvent) => {
        const names = named.current ?? {};
        const layers = Object.keys(names).filter((id) => map?.getLayer(id));
        if (!map || !layers.length) return;
        const [feature] = map.queryRenderedFeatures(e.point, { layers });
        if (!feature) {
          popup.remove();
          return;
        }
        popup.setLngLat(e.lngLat).setDOMContent(attributeTable(names[feature.layer.id], feature.properties)).addTo(map);
      });
      if (!view && bounds && bounds.length >= 4) {
        let [west, south, east, north] = bounds;
        if (west > east) east += 360; // across the antimeridian
        map.fitBounds([west, south, east, north] as LngLatBoundsLike, { padding: 24, animate: false, maxZoom: 16 });
        // A world-wide extent fits by its height and leaves copies of the world at its sides: one world fills the width instead.
        const once = worldOnceZoom(map.getContainer().clientWidth);
        if (map.getZoom() < once) map.setZoom(once);
      }
      drawn.current = { map, base };
      onMap?.(map);
    })();
    return () => {
      cancelled = true;
      drawn.current = null;
      map?.remove();
    };
    // A new map only when the extent, view or basemap changes in content, not when a render builds equal objects.
  }, [JSON.stringify(bounds), JSON.stringify(view), JSON.stringify(basemap)]);
  return (
    <div className="mapbox">
      <div ref={container} className="map" role="region" aria-label={label} aria-busy={loading} />
      {loading && (
        <p className="map-loading" role="status">
          Loading map data…
        </p>
      )}
      {error && <p className="error">{error}</p>}
    </div>
  );
}
