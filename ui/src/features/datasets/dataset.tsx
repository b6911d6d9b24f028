import { useRef, useState, type FormEvent } from "react";
import type { StyleSpecification, LayerSpecification, Map as MapLibreMap } from "maplibre-gl";
import { client, data, type Schemas } from "../../lib/api";
import { Link, navigate, replaceQuery, useLocation } from "../../lib/router";
import { isAdmin, useSession } from "../../lib/session";
import { ApiLink } from "../../components/apilink";
import { QuarantineLink } from "../../components/quarantine";
import { rasterQuery, type RasterConfig } from "../../components/map/layerstyle";
import { RasterStyleEditor } from "../../components/map/rasterstyle";
import { ErrorNote, LoadFailed, cellText, useAction, useLoad, useTitle, when } from "../../components/common";
import { EditableRow, History } from "./history";
import { MapView } from "../../components/map/mapview";
import { Grants, Reupload } from "./reupload";
import { ServiceReupload } from "./services";

type Dataset = Schemas["Dataset"];
type Column = Schemas["ColumnInfo"];
type Items = {
  features: { id?: string | number; properties: Record<string, unknown>; geometry?: unknown }[];
  numberMatched?: number;
};

const ROWS = 10;
const COLOUR = "#c2410c";

/** The most features of a filter the map marks; past it the map says it marks the first ones. */
const MARKED_MAX = 10_000;
const UNMATCHED = "#9ca3af";

/** The ids of the features the table's filter matches (at most `MARKED_MAX`), null without a filter. */
function useMatched(d: Dataset | null, filter: string) {
  const vector = !!d && d.kind !== "raster" && !!d.geometry_column;
  return useLoad(async () => {
    if (!d || !filter || !vector) return null;
    const query = new URLSearchParams({ filter, "filter-lang": "cql2-text", skipGeometry: "true", properties: "", limit: String(MARKED_MAX) });
    const page = (await data(
      client.GET("/collections/{collectionId}/items", {
        params: { path: { collectionId: d.id } },
        querySerializer: () => query.toString(),
      }),
    )) as Items;
    return { ids: page.features.map((f) => f.id as number), matched: page.numberMatched ?? page.features.length };
  }, [d?.id, d?.updated_at, filter, vector]);
}

/** The preview's style: the dataset alone (the MapView puts the service's own basemap under it); with
 * `marked`, the features of the table's filter in the layer's colour over the others in grey. */
function previewStyle(d: Dataset, rendering: RasterConfig, marked: number[] | null = null): StyleSpecification {
  const query = rasterQuery(rendering);
  const tilejson = `${window.location.origin}/api/tiles/${d.id}/tilejson.json${d.kind === "raster" && query ? `?${query}` : ""}`;
  const layers: LayerSpecification[] = [{ id: "background", type: "background", paint: { "background-color": "#eef2f5" } }];
  if (d.kind === "raster") {
    return {
      version: 8,
      sources: { data: { type: "raster", url: tilejson, tileSize: 256 } },
      layers: [...layers, { id: "raster", type: "raster", source: "data" }],
    };
  }
  const common = { source: "data", "source-layer": d.table_name };
  const type = (d.geometry_type ?? "").toLowerCase();
  // A filter marks its features: the layer's colour for them, grey for the rest.
  const colour = marked ? ["case", ["in", ["id"], ["literal", marked]], COLOUR, UNMATCHED] : COLOUR;
  const order = marked ? { "fill-sort-key": ["case", ["in", ["id"], ["literal", marked]], 1, 0] } : {};
  if (type.includes("polygon")) {
    layers.push({ id: "fill", type: "fill", ...common, layout: order, paint: { "fill-color": colour, "fill-opacity": 0.35 } } as LayerSpecification);
    layers.push({ id: "outline", type: "line", ...common, paint: { "line-color": colour, "line-width": 1 } } as LayerSpecification);
  } else if (type.includes("line")) {
    layers.push({ id: "line", type: "line", ...common, paint: { "line-color": colour, "line-width": 2 } } as LayerSpecification);
  } else {
    layers.push({
      id: "point",
      type: "circle",
      ...common,
      paint: { "circle-color": colour, "circle-radius": 4, "circle-stroke-color": "#fff", "circle-stroke-width": 1 },
    } as LayerSpecification);
  }
  return { version: 8, sources: { data: { type: "vector", url: tilejson } }, layers };
}

/** The smallest box around a GeoJSON geometry: [west, south, east, north]. */
function boundsOf(geometry: unknown): number[] | null {
  const xs: number[] = [];
  const ys: number[] = [];
  const walk = (c: unknown) => {
    if (Array.isArray(c) && typeof c[0] === "number") {
      xs.push(c[0]);
      ys.push(c[1] as number);
    } else if (Array.isArray(c)) c.forEach(walk);
  };
  const g = geometry as { coordinates?: unknown; geometries?: { coordinates?: unknown }[] } | null;
  walk(g?.coordinates ?? g?.geometries?.map((x) => x.coordinates));
  if (!xs.length) return null;
  return [Math.min(...xs), Math.min(...ys), Math.max(...xs), Math.max(...ys)];
}

type Sort = { column: string; descending: boolean } | null;

function sortOf(value: string | null): Sort {
  if (!value) return null;
  return value.startsWith("-") ? { column: value.slice(1), descending: true } : { column: value.replace(/^\+/, ""), descending: false };
}

/** The attribute table: sorted by a column (click its heading), filtered
 * by a CQL2 expression, both kept in the address; a row's zoom button
 * moves the map to it; a writer edits a row's values or deletes it. */
function AttributeTable({
  dataset,
  editable,
  onEdited,
  onZoom,
}: {
  dataset: Dataset;
  editable: boolean;
  onEdited: () => void;
  onZoom: (bounds: number[]) => void;
}) {
  const location = useLocation();
  const params = location.searchParams;
  const sort = sortOf(params.get("sortby"));
  const filter = params.get("filter") ?? "";
  const offset = Math.max(0, Number(params.get("offset") ?? 0) || 0);
  const [typed, setTyped] = useState(filter);
  const setParams = (change: Record<string, string | null>) => {
    const next = new URLSearchParams(params);
    for (const [k, v] of Object.entries(change)) {
      if (v) next.set(k, v);
      else next.delete(k);
    }
    replaceQuery(next);
  };
  // The table shows attributes only: geometries (1.9 MB for a page of world
  // countries) are fetched one feature at a time, when asked to zoom.
  const query = new URLSearchParams({ limit: String(ROWS), offset: String(offset), skipGeometry: "true" });
  if (sort) query.set("sortby", `${sort.descending ? "-" : "+"}${sort.column}`);
  if (filter) {
    query.set("filter", filter);
    query.set("filter-lang", "cql2-text");
  }
  // The page shown keeps its own offset, so its caption never runs ahead of its rows.
  const items = useLoad(
    async () => {
      // The query as URLSearchParams writes it; GeoJSON, whose features the document leaves open.
      const page = await data(
        client.GET("/collections/{collectionId}/items", {
          params: { path: { collectionId: dataset.id } },
          querySerializer: () => query.toString(),
        }),
      );
      return { offset, page: page as Items };
    },
    // A change of the data (an edit, a reupload, a restore) shows at once.
    [dataset.id, dataset.updated_at, query.toString()],
  );
  const shown = items.value?.offset ?? 0;
  const columnInfo = dataset.column_info as unknown as Column[];
  const columns = columnInfo.map((c) => c.name);
  const edited = () => {
    items.reload();
    onEdited();
  };
  const total = items.value?.page.numberMatched ?? (filter ? 0 : (dataset.feature_count ?? 0));
  const toggle = (column: string) => {
    const next = sort?.column !== column ? `+${column}` : sort.descending ? null : `-${column}`;
    setParams({ sortby: next, offset: null });
  };
  const applyFilter = (e: FormEvent) => {
    e.preventDefault();
    setParams({ filter: typed.trim() || null, offset: null });
  };
  const zooming = useAction();
  const lastZoom = useRef(0);
  const zoomTo = (featureId: string | number) =>
    zooming.run(async () => {
      // Only the last click zooms, whichever answer comes first.
      const click = ++lastZoom.current;
      const feature = await data(
        client.GET("/collections/{collectionId}/items/{featureId}", {
          params: { path: { collectionId: dataset.id, featureId: String(featureId) } },
        }),
      );
      const bounds = boundsOf((feature as { geometry?: unknown }).geometry);
      if (click !== lastZoom.current) return;
      if (!bounds) throw new Error(`Feature ${featureId} has no geometry to zoom to.`);
      onZoom(bounds);
    });
  const zoomCell = (f: Items["features"][number]) => {
    const id = f.id;
    return (
      <td>
        {dataset.geometry_column && id !== undefined && (
          <button type="button" className="link" onClick={() => void zoomTo(id)} aria-label={`Zoom to feature ${id}`}>
            Zoom
          </button>
        )}
      </td>
    );
  };
  return (
    <section aria-labelledby="attributes">
      <h2 id="attributes">Attributes</h2>
      <form className="row" onSubmit={applyFilter} role="search" aria-label="Filter the attributes">
        <label className="grow">
          Filter (CQL2, for example <code>pop_est &gt; 1000000 AND continent = 'Asia'</code>)
          <input value={typed} onChange={(e) => setTyped(e.target.value)} />
        </label>
        <button type="submit">Apply filter</button>
        {filter && (
          <button
            type="button"
            onClick={() => {
              setTyped("");
              setParams({ filter: null, offset: null });
            }}
          >
            Clear filter
          </button>
        )}
      </form>
      <ErrorNote error={items.error} />
      <ErrorNote error={zooming.error} />
      <div className="table-scroll" tabIndex={0} role="region" aria-label="Attribute table">
        <table>
          <thead>
            <tr>
              <th scope="col">
                <span className="visually-hidden">Zoom</span>
              </th>
              {columns.map((c) => (
                <th
                  key={c}
                  scope="col"
                  aria-sort={sort?.column === c ? (sort.descending ? "descending" : "ascending") : undefined}
                >
                  <button type="button" className="link" onClick={() => toggle(c)}>
                    {c}
                    {sort?.column === c ? (sort.descending ? " ▼" : " ▲") : ""}
                  </button>
                </th>
              ))}
              {editable && (
                <th scope="col" className="row-actions">
                  <span className="visually-hidden">Actions</span>
                </th>
              )}
            </tr>
          </thead>
          <tbody>
            {items.value?.page.features.map((f, i) =>
              editable ? (
                <EditableRow
                  key={String(f.id ?? i)}
                  dataset={dataset}
                  columns={columnInfo}
                  feature={f}
                  onChanged={edited}
                  lead={zoomCell(f)}
                />
              ) : (
                <tr key={String(f.id ?? i)}>
                  {zoomCell(f)}
                  {columns.map((c) => (
                    <td key={c}>{cellText(f.properties?.[c])}</td>
                  ))}
                </tr>
              ),
            )}
          </tbody>
        </table>
      </div>
      <nav aria-label="Attribute pages" className="row">
        <button type="button" disabled={offset === 0} onClick={() => setParams({ offset: String(Math.max(0, offset - ROWS)) })}>
          Previous rows
        </button>
        <span role="status">
          {!items.value ? "loading rows" : total === 0 ? "no rows" : `rows ${shown + 1}–${Math.min(shown + ROWS, total)} of ${total}`}
        </span>
        <button type="button" disabled={offset + ROWS >= total} onClick={() => setParams({ offset: String(offset + ROWS) })}>
          Next rows
        </button>
      </nav>
    </section>
  );
}

function Edit({ dataset, onSaved }: { dataset: Dataset; onSaved: (d: Dataset) => void }) {
  const [title, setTitle] = useState(dataset.title);
  const [summary, setSummary] = useState(dataset.summary ?? "");
  const [visibility, setVisibility] = useState(dataset.visibility as Schemas["DatasetVisibility"]);
  const [keywords, setKeywords] = useState(dataset.keywords.join(", "));
  const [license, setLicense] = useState(dataset.license ?? "");
  const [attribution, setAttribution] = useState(dataset.attribution ?? "");
  const [temporal, setTemporal] = useState(dataset.temporal_column ?? "");
  const [saved, setSaved] = useState(false);
  const timeColumns = (dataset.column_info as unknown as Column[]).filter((c) => ["date", "timestamp", "timestamptz"].includes(c.type ?? ""));
  const action = useAction();
  const save = (e: FormEvent) => {
    e.preventDefault();
    setSaved(false);
    action.run(async () => {
      const words = keywords.split(",").map((k) => k.trim()).filter(Boolean);
      onSaved(
        await data(
          client.PATCH("/datasets/{dataset_id}", {
            params: { path: { dataset_id: dataset.id } },
            body: {
              title,
              summary,
              visibility,
              keywords: words,
              license,
              attribution,
              ...(dataset.kind === "raster" ? {} : { temporal_column: temporal || null }),
            },
          }),
        ),
      );
      setSaved(true);
    });
  };
  return (
    <form onSubmit={save} className="stack" aria-labelledby="edit">
      <h2 id="edit">Edit</h2>
      <label>
        Title
        <input value={title} onChange={(e) => setTitle(e.target.value)} required />
      </label>
      <label>
        Summary
        <textarea value={summary} onChange={(e) => setSummary(e.target.value)} rows={3} />
      </label>
      <label>
        Visibility
        <select value={visibility} onChange={(e) => setVisibility(e.target.value as typeof visibility)}>
          <option value="private">private</option>
          <option value="restricted">restricted</option>
          <option value="internal">internal</option>
          <option value="public">public</option>
        </select>
      </label>
      <label>
        Keywords (separated by commas)
        <input value={keywords} onChange={(e) => setKeywords(e.target.value)} />
      </label>
      <label>
        Licence (an identifier such as CC-BY-4.0, or a link)
        <input value={license} onChange={(e) => setLicense(e.target.value)} maxLength={500} />
      </label>
      <label>
        Attribution (shown with the data on maps)
        <input value={attribution} onChange={(e) => setAttribution(e.target.value)} maxLength={1000} />
      </label>
      {timeColumns.length > 0 && (
        <label>
          Time of each feature
          <select value={temporal} onChange={(e) => setTemporal(e.target.value)}>
            <option value="">none</option>
            {timeColumns.map((c) => (
              <option key={c.name} value={c.name}>
                {c.name}
              </option>
            ))}
          </select>
        </label>
      )}
      {dataset.temporal_extent && dataset.temporal_extent.length >= 2 && (
        <p className="meta">
          Features from {dataset.temporal_extent[0] ?? "…"} to {dataset.temporal_extent[1] ?? "…"}
        </p>
      )}
      <ErrorNote error={action.error} />
      {saved && <p role="status">Saved.</p>}
      <button type="submit">Save</button>
    </form>
  );
}

const FORMATS: [string, string][] = [
  ["gpkg", "GeoPackage"],
  ["geojson", "GeoJSON"],
  ["csv", "CSV (geometry as WKT)"],
  ["shp", "Shapefile (zipped)"],
  ["fgb", "FlatGeobuf"],
];

/** A download in the format chosen: the whole dataset, or the rows the table's filter shows. */
function Download({ dataset }: { dataset: Dataset }) {
  const [format, setFormat] = useState("gpkg");
  const [filtered, setFiltered] = useState(false);
  const [building, setBuilding] = useState(false);
  const filter = useLocation().searchParams.get("filter");
  // Only a generalized layer has a tile pyramid to archive.
  const formats: [string, string][] = dataset.complete_zoom != null ? [...FORMATS, ["pmtiles", `PMTiles (vector tiles, zoom 0 to ${dataset.complete_zoom})`]] : FORMATS;
  const action = useAction();
  const raster = dataset.kind === "raster";
  const download = () =>
    action.run(async () => {
      const grant = await data(client.POST("/auth/download-token/{dataset_id}", { params: { path: { dataset_id: dataset.id } } }));
      const url = new URL(grant.download_url);
      if (!raster) url.searchParams.set("format", format);
      if (!raster && format !== "pmtiles" && filtered && filter) {
        url.searchParams.set("filter", filter);
        url.searchParams.set("filter-lang", "cql2-text");
      }
      // The tile archive is made by a job first (202): ask for its first
      // byte until it is kept, then download it.
      try {
        while (format === "pmtiles") {
          const probe = await fetch(url, { headers: { Range: "bytes=0-0" } });
          if (probe.status === 206 || probe.status === 200) break;
          if (probe.status !== 202) throw new Error((await probe.json().catch(() => null))?.detail ?? `HTTP ${probe.status}`);
          setBuilding(true);
          await new Promise((resolve) => setTimeout(resolve, 2000));
        }
      } finally {
        setBuilding(false);
      }
      window.location.assign(url.toString());
    });
  return (
    <section aria-labelledby="download">
      <h2 id="download">Download</h2>
      {raster ? (
        <p>The raster as a Cloud-Optimized GeoTIFF.</p>
      ) : (
        <div className="row">
          <label>
            Format
            <select value={format} onChange={(e) => setFormat(e.target.value)}>
              {formats.map(([value, label]) => (
                <option key={value} value={value}>
                  {label}
                </option>
              ))}
            </select>
          </label>
          {filter && format !== "pmtiles" && (
            <label className="inline">
              <input type="checkbox" checked={filtered} onChange={(e) => setFiltered(e.target.checked)} />
              Only the rows of the filter <code>{filter}</code>
            </label>
          )}
        </div>
      )}
      <button type="button" onClick={download} disabled={action.busy}>
        Download
      </button>
      {building && <p role="status">Making the tile archive; the download starts when it is ready.</p>}
      <ErrorNote error={action.error} />
    </section>
  );
}

type RasterFacts = {
  width?: number;
  height?: number;
  band_count?: number;
  resolution?: number[];
  bands?: { index: number; data_type: string; nodata?: number | null; min?: number | null; max?: number | null; color_interpretation?: string }[];
  size_bytes?: number;
};

/** A raster's size, cell size and bands. */
function RasterFactList({ raster }: { raster: RasterFacts }) {
  return (
    <>
      <dt>Size</dt>
      <dd>
        {raster.width?.toLocaleString()} × {raster.height?.toLocaleString()} cells
      </dd>
      {raster.resolution && (
        <>
          <dt>Cell size</dt>
          <dd>{raster.resolution.map((r) => Math.abs(r).toPrecision(4)).join(" × ")}</dd>
        </>
      )}
      <dt>Bands</dt>
      <dd>
        <ul className="plain">
          {raster.bands?.map((b) => (
            <li key={b.index}>
              {b.index}: {b.color_interpretation ?? "band"}, {b.data_type}
              {b.min != null && b.max != null ? `, ${b.min.toLocaleString()} to ${b.max.toLocaleString()}` : ""}
              {b.nodata != null ? `, no data ${b.nodata}` : ""}
            </li>
          ))}
        </ul>
      </dd>
    </>
  );
}

type Contact = Schemas["Contact"];

/** The people and organisations to ask about a dataset (its record's contacts), which DCAT and the OGC pages list. */
function Contacts({ dataset, editable }: { dataset: Dataset; editable: boolean }) {
  const contacts = useLoad(
    () => data(client.GET("/records/{record_id}/contacts", { params: { path: { record_id: dataset.id } } })),
    [dataset.id],
  );
  const [form, setForm] = useState({ name: "", organization: "", email: "", role: "" });
  const action = useAction();
  const add = (e: FormEvent) => {
    e.preventDefault();
    action.run(async () => {
      // The name is required by the form, so it is never null here.
      const body = Object.fromEntries(Object.entries(form).map(([k, v]) => [k, v.trim() || null])) as Schemas["ContactInput"];
      await client.POST("/records/{record_id}/contacts", { params: { path: { record_id: dataset.id } }, body });
      setForm({ name: "", organization: "", email: "", role: "" });
      contacts.reload();
    });
  };
  const remove = (c: Contact) =>
    action.run(async () => {
      await client.DELETE("/records/{record_id}/contacts/{contact_id}", {
        params: { path: { record_id: dataset.id, contact_id: c.id } },
      });
      contacts.reload();
    });
  if (!editable && !contacts.value?.length) return null;
  return (
    <section aria-labelledby="contacts">
      <h2 id="contacts">Contacts</h2>
      <ErrorNote error={contacts.error} />
      <ul className="link-list">
        {contacts.value?.map((c) => (
          <li key={c.id}>
            <span>
              {c.name}
              {c.organization ? `, ${c.organization}` : ""}
              {c.role ? ` (${c.role})` : ""}
            </span>
            {c.email && <a href={`mailto:${c.email}`}>{c.email}</a>}
            {editable && (
              <button type="button" className="link" onClick={() => remove(c)} aria-label={`Remove contact ${c.name}`}>
                Remove
              </button>
            )}
          </li>
        ))}
      </ul>
      {editable && (
        <form onSubmit={add} className="stack" aria-label="Add a contact">
          <div className="row">
            <label className="grow">
              Contact name
              <input value={form.name} onChange={(e) => setForm({ ...form, name: e.target.value })} required maxLength={255} />
            </label>
            <label className="grow">
              Organisation
              <input value={form.organization} onChange={(e) => setForm({ ...form, organization: e.target.value })} />
            </label>
          </div>
          <div className="row">
            <label className="grow">
              Contact email
              <input type="email" value={form.email} onChange={(e) => setForm({ ...form, email: e.target.value })} />
            </label>
            <label className="grow">
              Role (for example publisher, custodian)
              <input value={form.role} onChange={(e) => setForm({ ...form, role: e.target.value })} />
            </label>
          </div>
          <ErrorNote error={action.error} />
          <button type="submit" disabled={action.busy}>
            Add contact
          </button>
        </form>
      )}
    </section>
  );
}

export function DatasetPage({ id }: { id: string }) {
  const { user } = useSession();
  const dataset = useLoad(() => data(client.GET("/datasets/{dataset_id}", { params: { path: { dataset_id: id } } })), [id]);
  const action = useAction();
  const map = useRef<MapLibreMap | null>(null);
  const [rendering, setRendering] = useState<RasterConfig>({ mode: "raster" });
  const matched = useMatched(dataset.value, useLocation().searchParams.get("filter") ?? "");
  useTitle(dataset.value?.title ?? "Dataset");
  if (dataset.error) return <LoadFailed error={dataset.error} />;
  const d = dataset.value;
  if (!d) return <p className="loading">Loading…</p>;
  const mayEdit = !!user && (isAdmin(user) || d.created_by === user.id);
  const open = d.visibility === "public";
  const raster = d.raster as unknown as RasterFacts | null;

  const remove = () => {
    if (!window.confirm(`Delete “${d.title}” and its data? This cannot be undone.`)) return;
    action.run(async () => {
      await client.DELETE("/datasets/{dataset_id}", { params: { path: { dataset_id: d.id } } });
      navigate("/datasets", true);
    });
  };
  const zoom = (bounds: number[]) => {
    if (!map.current) return;
    map.current.fitBounds(bounds as [number, number, number, number], { padding: 48, maxZoom: 14, duration: 0 });
    // The table sits below the map: the zoom is seen only with the map in view.
    map.current.getContainer().scrollIntoView({ block: "nearest" });
  };

  return (
    <article>
      <h1>{d.title}</h1>
      {d.summary && <p className="summary">{d.summary}</p>}
      <p className="meta">
        <span className="tag">{d.kind === "raster" ? "raster" : (d.geometry_type ?? "table")}</span>
        <span className="tag">{d.visibility}</span>
        <span className="tag">{d.status}</span>
      </p>
      {d.quarantined_count > 0 && (
        <p className="warning" role="note">
          {d.quarantined_count.toLocaleString()} {d.quarantined_count === 1 ? "row was" : "rows were"} kept aside at load.{" "}
          <QuarantineLink datasetId={d.id}>Download them (GeoJSON)</QuarantineLink>
          {mayEdit && d.job_id && (
            <>
              {" · "}
              <Link href={`/jobs/${d.job_id}`}>See why in the load report</Link>
            </>
          )}
        </p>
      )}
      {raster && <RasterStyleEditor name={d.title} raster={raster} config={rendering} onChange={setRendering} />}
      {d.geometry_column || d.kind === "raster" ? (
        <MapView
          style={previewStyle(d, rendering, matched.value?.ids ?? null)}
          bounds={d.extent_bbox}
          basemap={{}}
          identify={d.kind === "raster" ? undefined : { fill: d.title, line: d.title, point: d.title }}
          onMap={(m) => (map.current = m)}
          label={`Map of ${d.title}`}
        />
      ) : null}
      {matched.value && (
        <p className="meta" role="status">
          The map marks the {matched.value.matched.toLocaleString()} {matched.value.matched === 1 ? "feature" : "features"} of the
          table's filter in colour, the others in grey
          {matched.value.matched > matched.value.ids.length ? ` (the first ${matched.value.ids.length.toLocaleString()} of them)` : ""}.
        </p>
      )}
      {d.complete_zoom ? (
        <p className="meta" role="note">
          Below zoom {d.complete_zoom} the map draws an even selection of the features, one in each 8-pixel cell that
          holds any; from zoom {d.complete_zoom} on, every feature.
        </p>
      ) : null}
      <div className="columns">
        <section aria-labelledby="about">
          <h2 id="about">About</h2>
          <dl className="facts">
            {d.feature_count != null && (
              <>
                <dt>Features</dt>
                <dd>{d.feature_count.toLocaleString()}</dd>
              </>
            )}
            {d.complete_zoom ? (
              <>
                <dt>Drawn in full</dt>
                <dd>from zoom {d.complete_zoom} (thinned below it)</dd>
              </>
            ) : null}
            {raster && <RasterFactList raster={raster} />}
            <dt>Source</dt>
            <dd>
              {d.source_filename ?? "—"} {d.source_format ? `(${d.source_format})` : ""}
            </dd>
            <dt>Coordinate system</dt>
            <dd>{d.srid ? `EPSG:${d.srid}` : "unknown"}</dd>
            <dt>Keywords</dt>
            <dd>{d.keywords.length ? d.keywords.join(", ") : "—"}</dd>
            {d.license && (
              <>
                <dt>Licence</dt>
                <dd>{/^https?:\/\//.test(d.license) ? <a href={d.license}>{d.license}</a> : d.license}</dd>
              </>
            )}
            {d.attribution && (
              <>
                <dt>Attribution</dt>
                <dd>{d.attribution}</dd>
              </>
            )}
            <dt>Created</dt>
            <dd>{when(d.created_at)}</dd>
            <dt>Updated</dt>
            <dd>{when(d.updated_at)}</dd>
          </dl>
        </section>
        <section aria-labelledby="links">
          <h2 id="links">Links</h2>
          {!open && <p className="meta">This dataset is not public: its links open here with your sign-in.</p>}
          <ul>
            {d.kind !== "raster" && (
              <>
                <li>
                  <ApiLink path={`/api/collections/${d.id}`} open={open}>
                    OGC API collection
                  </ApiLink>
                </li>
                <li>
                  <ApiLink path={`/api/collections/${d.id}/items`} open={open}>
                    OGC API items
                  </ApiLink>
                </li>
              </>
            )}
            <li>
              <ApiLink path={`/api/tiles/${d.id}/tilejson.json`} open={open}>
                TileJSON
              </ApiLink>
            </li>
            <li>
              <ApiLink path={`/api/tiles/${d.id}/style.json`} open={open}>
                MapLibre style
              </ApiLink>
            </li>
          </ul>
          <Download dataset={d} />
        </section>
      </div>
      <Contacts dataset={d} editable={mayEdit} />
      {d.kind !== "raster" && (
        <AttributeTable dataset={d} editable={mayEdit && !d.is_registered} onEdited={dataset.reload} onZoom={zoom} />
      )}
      {mayEdit && d.kind !== "raster" && !d.is_registered && <History dataset={d} onRestored={dataset.reload} />}
      {mayEdit && (
        <div className="columns">
          {/* Rasters take a new GeoTIFF through the API; registered tables are changed in place. */}
          {d.kind !== "raster" && !d.is_registered && (
            <>
              <Reupload dataset={d} onReplaced={dataset.reload} />
              <ServiceReupload dataset={d} onReplaced={dataset.reload} />
            </>
          )}
          <Grants dataset={d} />
        </div>
      )}
      {mayEdit && (
        <div className="columns">
          <Edit dataset={d} onSaved={(saved) => dataset.setValue(saved)} />
          <section aria-labelledby="danger">
            <h2 id="danger">Delete</h2>
            <p>Deleting removes the dataset, its table and its files.</p>
            <button type="button" className="danger" onClick={remove}>
              Delete dataset
            </button>
          </section>
        </div>
      )}
    </article>
  );
}
