import { useState, type FormEvent } from "react";
import type { StyleSpecification, LayerSpecification } from "maplibre-gl";
import { get, send, type Schemas } from "../api";
import { navigate } from "../router";
import { isAdmin, useSession } from "../session";
import { ErrorNote, LoadFailed, cellText, useAction, useLoad, when } from "./common";
import { EditableRow, History } from "./history";
import { MapView } from "./mapview";
import { Grants, Reupload } from "./reupload";
import { ServiceReupload } from "./services";

type Dataset = Schemas["Dataset"];
type Column = { name: string; type?: string };
type Items = { features: { id?: string | number; properties: Record<string, unknown> }[]; numberMatched?: number };

const ROWS = 10;
const COLOUR = "#c2410c";

/** The preview's style: the dataset alone (the MapView puts the service's own basemap under it). */
function previewStyle(d: Dataset): StyleSpecification {
  const tilejson = `${window.location.origin}/api/tiles/${d.id}/tilejson.json`;
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
  if (type.includes("polygon")) {
    layers.push({ id: "fill", type: "fill", ...common, paint: { "fill-color": COLOUR, "fill-opacity": 0.35 } });
    layers.push({ id: "outline", type: "line", ...common, paint: { "line-color": COLOUR, "line-width": 1 } });
  } else if (type.includes("line")) {
    layers.push({ id: "line", type: "line", ...common, paint: { "line-color": COLOUR, "line-width": 2 } });
  } else {
    layers.push({
      id: "point",
      type: "circle",
      ...common,
      paint: { "circle-color": COLOUR, "circle-radius": 4, "circle-stroke-color": "#fff", "circle-stroke-width": 1 },
    });
  }
  return { version: 8, sources: { data: { type: "vector", url: tilejson } }, layers };
}

/** The attribute table; a writer edits a row's values or deletes it. */
function AttributeTable({ dataset, editable, onEdited }: { dataset: Dataset; editable: boolean; onEdited: () => void }) {
  const [offset, setOffset] = useState(0);
  // The page shown keeps its own offset, so its caption never runs ahead of its rows.
  const items = useLoad(
    async () => ({
      offset,
      page: await get<Items>(`/api/collections/${dataset.id}/items?limit=${ROWS}&offset=${offset}`),
    }),
    // A change of the data (an edit, a reupload, a restore) shows at once.
    [dataset.id, dataset.updated_at, offset],
  );
  const shown = items.value?.offset ?? 0;
  const columnInfo = dataset.column_info as unknown as Column[];
  const columns = columnInfo.map((c) => c.name);
  const edited = () => {
    items.reload();
    onEdited();
  };
  const total = items.value?.page.numberMatched ?? dataset.feature_count ?? 0;
  return (
    <section aria-labelledby="attributes">
      <h2 id="attributes">Attributes</h2>
      <ErrorNote error={items.error} />
      <div className="table-scroll" tabIndex={0} role="region" aria-label="Attribute table">
        <table>
          <thead>
            <tr>
              {columns.map((c) => (
                <th key={c} scope="col">
                  {c}
                </th>
              ))}
              {editable && (
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              )}
            </tr>
          </thead>
          <tbody>
            {items.value?.page.features.map((f, i) =>
              editable ? (
                <EditableRow key={String(f.id ?? i)} dataset={dataset} columns={columnInfo} feature={f} onChanged={edited} />
              ) : (
                <tr key={String(f.id ?? i)}>
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
        <button type="button" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - ROWS))}>
          Previous rows
        </button>
        <span role="status">
          {!items.value ? "loading rows" : total === 0 ? "no rows" : `rows ${shown + 1}–${Math.min(shown + ROWS, total)} of ${total}`}
        </span>
        <button type="button" disabled={offset + ROWS >= total} onClick={() => setOffset(offset + ROWS)}>
          Next rows
        </button>
      </nav>
    </section>
  );
}

function Edit({ dataset, onSaved }: { dataset: Dataset; onSaved: (d: Dataset) => void }) {
  const [title, setTitle] = useState(dataset.title);
  const [summary, setSummary] = useState(dataset.summary ?? "");
  const [visibility, setVisibility] = useState(dataset.visibility);
  const [saved, setSaved] = useState(false);
  const action = useAction();
  const save = (e: FormEvent) => {
    e.preventDefault();
    setSaved(false);
    action.run(async () => {
      onSaved(await send<Dataset>("PATCH", `/api/datasets/${dataset.id}`, { title, summary, visibility }));
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
        <select value={visibility} onChange={(e) => setVisibility(e.target.value)}>
          <option value="private">private</option>
          <option value="restricted">restricted</option>
          <option value="public">public</option>
        </select>
      </label>
      <ErrorNote error={action.error} />
      {saved && <p role="status">Saved.</p>}
      <button type="submit">Save</button>
    </form>
  );
}

export function DatasetPage({ id }: { id: string }) {
  const { user } = useSession();
  const dataset = useLoad(() => get<Dataset>(`/api/datasets/${id}`), [id]);
  const action = useAction();
  if (dataset.error) return <LoadFailed error={dataset.error} />;
  const d = dataset.value;
  if (!d) return <p className="loading">Loading…</p>;
  const mayEdit = !!user && (isAdmin(user) || d.created_by === user.id);

  const download = () =>
    action.run(async () => {
      const grant = await send<Schemas["DownloadToken"]>("POST", `/api/auth/download-token/${d.id}`);
      window.location.assign(grant.download_url);
    });
  const remove = () => {
    if (!window.confirm(`Delete “${d.title}” and its data? This cannot be undone.`)) return;
    action.run(async () => {
      await send("DELETE", `/api/datasets/${d.id}`);
      navigate("/datasets", true);
    });
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
      {d.geometry_column || d.kind === "raster" ? (
        <MapView style={previewStyle(d)} bounds={d.extent_bbox} basemap={{}} label={`Map of ${d.title}`} />
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
            <dt>Source</dt>
            <dd>
              {d.source_filename ?? "—"} {d.source_format ? `(${d.source_format})` : ""}
            </dd>
            <dt>Coordinate system</dt>
            <dd>{d.srid ? `EPSG:${d.srid}` : "unknown"}</dd>
            <dt>Keywords</dt>
            <dd>{d.keywords.length ? d.keywords.join(", ") : "—"}</dd>
            <dt>Created</dt>
            <dd>{when(d.created_at)}</dd>
            <dt>Updated</dt>
            <dd>{when(d.updated_at)}</dd>
          </dl>
        </section>
        <section aria-labelledby="links">
          <h2 id="links">Links</h2>
          <ul>
            {d.kind !== "raster" && (
              <>
                <li>
                  <a href={`/api/collections/${d.id}`}>OGC API collection</a>
                </li>
                <li>
                  <a href={`/api/collections/${d.id}/items`}>OGC API items</a>
                </li>
              </>
            )}
            <li>
              <a href={`/api/tiles/${d.id}/tilejson.json`}>TileJSON</a>
            </li>
            <li>
              <a href={`/api/tiles/${d.id}/style.json`}>MapLibre style</a>
            </li>
            <li>
              <button type="button" className="link" onClick={download}>
                Download
              </button>
            </li>
          </ul>
          <ErrorNote error={action.error} />
        </section>
      </div>
      {d.kind !== "raster" && (
        <AttributeTable dataset={d} editable={mayEdit && !d.is_registered} onEdited={dataset.reload} />
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
