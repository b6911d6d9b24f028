// MapLibre GL JS, loaded only by the pages that draw a map. Requests to
// this service's own API carry the session's token.
import { useEffect, useRef, useState } from "react";
import type { Map as MapLibreMap, StyleSpecification, LngLatBoundsLike } from "maplibre-gl";
import { authHeaders } from "../api";
import { builtinBasemap, withBasemap, type BasemapPlacement } from "./basemap";

export type MapViewProps = {
  style: StyleSpecification;
  bounds?: number[] | null;
  label: string;
  /** Where the built-in basemap goes, if the map draws it. */
  basemap?: BasemapPlacement | null;
  onMap?: (map: MapLibreMap) => void;
};

export function MapView({ style, bounds, label, basemap, onMap }: MapViewProps) {
  const container = useRef<HTMLDivElement>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let map: MapLibreMap | undefined;
    let cancelled = false;
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
      map = new maplibre.Map({
        container: container.current,
        style: base && basemap ? withBasemap(style, base, basemap) : style,
        attributionControl: { compact: true },
        transformRequest: (url) =>
          url.startsWith(`${window.location.origin}/api/`) ? { url, headers: authHeaders() } : { url },
      });
      map.addControl(new maplibre.NavigationControl({ showCompass: false }));
      map.on("error", (e) => setError(e.error?.message ?? "the map could not load a part of itself"));
      if (bounds && bounds.length >= 4) {
        let [west, south, east, north] = bounds;
        if (west > east) east += 360; // across the antimeridian
        map.fitBounds([west, south, east, north] as LngLatBoundsLike, { padding: 24, animate: false, maxZoom: 16 });
      }
      onMap?.(map);
    })();
    return () => {
      cancelled = true;
      map?.remove();
    };
    // A new map only when the style or extent changes in content, not when a render builds equal objects.
  }, [JSON.stringify(style), JSON.stringify(bounds), JSON.stringify(basemap)]);
  return (
    <div className="mapbox">
      <div ref={container} className="map" role="region" aria-label={label} />
      {error && <p className="error">{error}</p>}
    </div>
  );
}
