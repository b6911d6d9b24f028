// A dataset's quarantined rows on a small map, in a warning colour and
// fitted to them (rows without a geometry JSON can hold are listed in the
// report only), with the link that saves them all as GeoJSON.
import type { FilterSpecification, GeoJSONSourceSpecification, StyleSpecification } from "maplibre-gl";
import { useLoad, ErrorNote } from "../../components/common";
import { MapView } from "../../components/map/mapview";
import { QuarantineLink, quarantinedRows, type QuarantinedRow } from "../../components/quarantine";

/** At most this many rows are drawn. */
const DRAWN = 1000;
const WARNING = "#d97706";
const EDGE = "#78350f";

const family = (...types: string[]): FilterSpecification => ["in", ["geometry-type"], ["literal", types]];

function quarantineStyle(rows: QuarantinedRow[]): StyleSpecification {
  return {
    version: 8,
    // The rows as the API sent them: GeoJSON features.
    sources: { rows: { type: "geojson", data: { type: "FeatureCollection", features: rows } as unknown as GeoJSONSourceSpecification["data"] } },
    layers: [
      { id: "background", type: "background", paint: { "background-color": "#eef2f5" } },
      {
        id: "fill",
        type: "fill",
        source: "rows",
        filter: family("Polygon", "MultiPolygon"),
        paint: { "fill-color": WARNING, "fill-opacity": 0.35 },
      },
      {
        id: "line",
        type: "line",
        source: "rows",
        filter: family("Polygon", "MultiPolygon", "LineString", "MultiLineString"),
        paint: { "line-color": WARNING, "line-width": 2 },
      },
      {
        id: "point",
        type: "circle",
        source: "rows",
        filter: family("Point", "MultiPoint"),
        paint: { "circle-color": WARNING, "circle-radius": 5, "circle-stroke-color": EDGE, "circle-stroke-width": 1 },
      },
    ],
  };
}

/** The box around the rows' finite positions, within what a web map shows. */
function boundsOf(rows: QuarantinedRow[]): number[] | null {
  let [west, south, east, north] = [Infinity, Infinity, -Infinity, -Infinity];
  const walk = (c: unknown) => {
    if (Array.isArray(c) && typeof c[0] === "number") {
      const [x, y] = c as number[];
      if (!Number.isFinite(x) || !Number.isFinite(y)) return;
      const lon = Math.max(-180, Math.min(180, x));
      const lat = Math.max(-85, Math.min(85, y));
      west = Math.min(west, lon);
      east = Math.max(east, lon);
      south = Math.min(south, lat);
      north = Math.max(north, lat);
    } else if (Array.isArray(c)) c.forEach(walk);
  };
  const walkGeometry = (g: unknown) => {
    const geometry = g as { coordinates?: unknown; geometries?: unknown[] } | null;
    walk(geometry?.coordinates);
    geometry?.geometries?.forEach(walkGeometry);
  };
  rows.forEach((r) => walkGeometry(r.geometry));
  return west <= east ? [west, south, east, north] : null;
}

export function QuarantineMap({ datasetId, title, count }: { datasetId: string; title: string; count: number }) {
  const rows = useLoad(() => quarantinedRows(datasetId, DRAWN), [datasetId]);
  const drawn = rows.value?.features.filter((f) => f.geometry !== null) ?? [];
  const fetched = rows.value?.features.length ?? 0;
  return (
    <section aria-label={`Rows kept aside from ${title}`} className="quarantine">
      <h3>{title}</h3>
      <p>
        {count.toLocaleString()} {count === 1 ? "row was" : "rows were"} kept aside.{" "}
        <QuarantineLink datasetId={datasetId}>Download quarantined rows (GeoJSON)</QuarantineLink>
      </p>
      <ErrorNote error={rows.error} />
      {rows.value && (
        <>
          {drawn.length > 0 ? (
            <div className="small-map">
              <MapView
                style={quarantineStyle(drawn)}
                bounds={boundsOf(drawn)}
                basemap={{}}
                identify={{ fill: "Row kept aside", line: "Row kept aside", point: "Row kept aside" }}
                label={`Map of the rows kept aside from ${title}`}
              />
            </div>
          ) : (
            <p className="meta">None of these rows has a geometry to draw.</p>
          )}
          <p className="meta">
            {count > fetched ? `The map shows the first ${fetched.toLocaleString()} rows. ` : ""}
            {fetched > drawn.length
              ? `${(fetched - drawn.length).toLocaleString()} of them ${fetched - drawn.length === 1 ? "has" : "have"} no geometry to draw (no position, or one that is not a number).`
              : ""}
          </p>
        </>
      )}
    </section>
  );
}
