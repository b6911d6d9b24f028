import { useRef, useState, type DragEvent } from "react";
import type { Map as MapLibreMap } from "maplibre-gl";
import { client, data, type Schemas } from "../../lib/api";
import { useLeaveGuard } from "../../lib/router";
import { ErrorNote, LoadFailed, SignedIn, useAction, useLoad, useTitle } from "../../components/common";
import { MapView } from "../../components/map/mapview";
import { BUILTIN_BASEMAP, isBuiltinBasemap } from "../../components/map/basemap";
import { Legend } from "../../components/map/legend";
import { DEFAULT_OUTLINE, QUALITATIVE, configOf, geometryOf, rasterConfigOf } from "../../components/map/layerstyle";
import { RasterLayerStyle } from "../../components/map/rasterstyle";
import { LayerStyleEditor, styleChange } from "./layerstyleeditor";
import { ShareDialog } from "./sharedialog";
import {
  DEFAULT_BACKGROUND,
  basemapDataset,
  basemapPlacement,
  drawsBasemap,
  extentOf,
  identifiedLayers,
  mapStyle,
  rasterBasemap,
  savedView,
} from "../../components/map/mapstyle";

type MapResponse = Schemas["MapResponse"];
type MapLayer = Schemas["MapLayerResponse"];
type Dataset = Schemas["Dataset"];
type BasemapConfig = Schemas["BasemapConfig"];

/** What the basemap is: none, the built-in one, a raster dataset of this catalog (its id), or another URL. */
const NONE = "";
const BUILTIN = "builtin";
const OTHER = "other";

/** The basemap's settings: its source, and how it is drawn. */
function BasemapSettings({
  map,
  rasters,
  onChange,
}: {
  map: MapResponse;
  rasters: Dataset[];
  onChange: (patch: Partial<MapResponse>) => void;
}) {
  const config = map.basemap_config;
  const [choice, setChoice] = useState(() => {
    const dataset = basemapDataset(map.basemap_style);
    if (!map.basemap_style) return NONE;
    if (isBuiltinBasemap(map.basemap_style)) return BUILTIN;
    return rasters.some((d) => d.id === dataset) ? dataset! : OTHER;
  });
  const undrawn = !!map.basemap_style && !drawsBasemap(map.basemap_style) && !isBuiltinBasemap(map.basemap_style);
  const configure = (patch: Partial<BasemapConfig>) => onChange({ basemap_config: { ...config, ...patch } });
  const choose = (value: string) => {
    setChoice(value);
    if (value === NONE) onChange({ basemap_style: "" });
    else if (value === BUILTIN) onChange({ basemap_style: BUILTIN_BASEMAP });
    else if (value !== OTHER) onChange({ basemap_style: rasterBasemap(value) });
  };
  return (
    <section aria-labelledby="basemap">
      <h2 id="basemap">Basemap</h2>
      <div className="row">
        <label className="grow">
          Basemap source
          <select value={choice} onChange={(e) => choose(e.target.value)}>
            <option value={NONE}>None: a plain background</option>
            <option value={BUILTIN}>This service's basemap: land, borders and country names</option>
            {rasters.map((d) => (
              <option key={d.id} value={d.id}>
                Raster dataset: {d.title}
              </option>
            ))}
            <option value={OTHER}>Another tile template or style URL</option>
          </select>
        </label>
        <label className="inline">
          Background colour
          <input
            type="color"
            value={config.background_color || DEFAULT_BACKGROUND}
            onChange={(e) => configure({ background_color: e.target.value })}
          />
        </label>
      </div>
      {choice === OTHER && (
        <label>
          Tile template ({"{z}/{x}/{y}"}) or style URL
          <input
            type="url"
            value={map.basemap_style}
            onChange={(e) => onChange({ basemap_style: e.target.value })}
            aria-describedby={undrawn ? "basemap-note" : undefined}
          />
        </label>
      )}
      {undrawn && (
        <p id="basemap-note" className="meta">
          The preview here draws only tile templates this service serves, since the app loads nothing from other
          sites; the saved map and its exported style use this basemap.
        </p>
      )}
      {choice !== NONE && (
        <div className="row">
          <label className="inline">
            Basemap opacity
            <input
              type="range"
              min={0}
              max={1}
              step={0.05}
              value={config.opacity ?? 1}
              onChange={(e) => configure({ opacity: Number(e.target.value) })}
            />
          </label>
          <label>
            Basemap tone
            <select
              value={config.land_water_tone ?? "default"}
              onChange={(e) => configure({ land_water_tone: e.target.value as BasemapConfig["land_water_tone"] })}
            >
              <option value="default">as it comes</option>
              <option value="muted">muted</option>
              <option value="contrast">more contrast</option>
              <option value="monochrome">monochrome</option>
            </select>
          </label>
          <label>
            Basemap position
            <select
              value={config.basemap_position ?? "bottom"}
              onChange={(e) => configure({ basemap_position: e.target.value as BasemapConfig["basemap_position"] })}
            >
              <option value="bottom">below the data</option>
              <option value="top">above the data</option>
            </select>
          </label>
        </div>
      )}
    </section>
  );
}

/** Saves a file the browser built (the style, fetched with the session). */
function saveFile(name: string, text: string) {
  const link = document.createElement("a");
  link.href = URL.createObjectURL(new Blob([text], { type: "application/json" }));
  link.download = name;
  link.click();
  URL.revokeObjectURL(link.href);
}

/** The view the map is showing, as saving keeps it (rounded: a centimetre and a hundredth of a zoom are enough). */
function cameraOf(map: MapLibreMap) {
  const centre = map.getCenter().wrap();
  const round = (value: number, digits: number) => Number(value.toFixed(digits));
  return {
    center_lng: round(centre.lng, 7),
    center_lat: round(centre.lat, 7),
    zoom: round(map.getZoom(), 2),
    bearing: round(map.getBearing(), 1),
    pitch: round(map.getPitch(), 1),
  };
}

/** What saving sends but the view: compared with the last save to tell unsaved changes. */
function saved(map: MapResponse, layers: MapLayer[]) {
  return JSON.stringify({
    name: map.name,
    description: map.description ?? "",
    notes: map.notes ?? "",
    basemap_style: map.basemap_style,
    basemap_config: map.basemap_config,
    layers: layers.map((l, i) => ({
      ...(l.id.startsWith("new-") ? {} : { id: l.id }),
      dataset_id: l.dataset_id,
      sort_order: i,
      visible: l.visible,
      opacity: l.opacity,
      paint: l.paint,
      style_config: l.style_config ?? null,
    })),
  });
}

function Editor({ initial }: { initial: MapResponse }) {
  const [map, setMap] = useState(initial);
  // Drawing order: the first layer is drawn first, at the bottom; the list shows the top first.
  const [layers, setLayers] = useState<MapLayer[]>(() => [...initial.layers].sort((a, b) => a.sort_order - b.sort_order));
  const [lastSaved, setLastSaved] = useState(() => saved(initial, [...initial.layers].sort((a, b) => a.sort_order - b.sort_order)));
  const [adding, setAdding] = useState("");
  const [dragged, setDragged] = useState<number | null>(null);
  const action = useAction();
  const [note, setNote] = useState<string | null>(null);
  const [sharing, setSharing] = useState(false);
  const datasets = useLoad(() => data(client.GET("/datasets", { params: { query: { limit: 1000 } } })), []);
  useTitle(`Map: ${map.name}`);
  const dirty = saved(map, layers) !== lastSaved;
  useLeaveGuard(() => (dirty ? "This map has unsaved changes. Leave without saving them?" : null));

  const change = (index: number, patch: Partial<MapLayer>) =>
    setLayers((now) => now.map((l, i) => (i === index ? { ...l, ...patch } : l)));
  const move = (from: number, to: number) =>
    setLayers((now) => {
      if (to < 0 || to >= now.length) return now;
      const next = [...now];
      const [layer] = next.splice(from, 1);
      next.splice(to, 0, layer);
      return next;
    });
  const add = () => {
    const d = datasets.value?.datasets.find((x) => x.id === adding);
    if (!d) return;
    setLayers((now) => {
      // A colour no other layer has yet.
      const used = new Set(now.map((l, i) => configOf(l, i).colour));
      const colour = QUALITATIVE.find((c) => !used.has(c)) ?? QUALITATIVE[now.length % QUALITATIVE.length];
      const layer = {
        id: `new-${crypto.randomUUID()}`,
        dataset_id: d.id,
        dataset_name: d.title,
        dataset_kind: d.kind,
        dataset_table_name: d.table_name,
        dataset_geometry_type: d.geometry_type,
        dataset_extent_bbox: d.extent_bbox,
        dataset_column_info: d.column_info,
        dataset_visibility: d.visibility,
        dataset_available: true,
        visible: true,
        opacity: geometryOf({ dataset_geometry_type: d.geometry_type }) === "fill" ? 0.8 : 1,
        paint: {},
        sort_order: now.length,
        show_in_legend: true,
      } as unknown as MapLayer;
      if (d.kind === "raster") return [...now, layer];
      const change = styleChange({ mode: "single", colour, outline: DEFAULT_OUTLINE }, layer);
      return [...now, { ...layer, ...change } as unknown as MapLayer];
    });
    setAdding("");
  };
  const view = useRef<MapLibreMap | null>(null);
  // The view it was opened with; a save does not move the map.
  const [opened] = useState(() => savedView(initial));
  const save = () => {
    setNote(null);
    action.run(async () => {
      // The map opens where its editor looked when it was saved.
      const body = { ...JSON.parse(saved(map, layers)), ...(view.current ? cameraOf(view.current) : {}) };
      const result = await data(client.PUT("/maps/{map_id}", { params: { path: { map_id: map.id } }, body }));
      const ordered = [...result.layers].sort((a, b) => a.sort_order - b.sort_order);
      setMap(result);
      setLayers(ordered);
      setLastSaved(saved(result, ordered));
      setNote("Map saved.");
    });
  };
  const exportStyle = () =>
    action.run(async () => {
      const style = await data(client.GET("/maps/{map_id}/style.json", { params: { path: { map_id: map.id } }, parseAs: "text" }));
      saveFile(`${map.name}.style.json`, style);
    });
  const zoomTo = (bounds: number[]) => {
    let [west, south, east, north] = bounds;
    if (west > east) east += 360; // across the antimeridian
    if (!view.current) return;
    view.current.fitBounds([west, south, east, north], { padding: 24, maxZoom: 14, duration: 0 });
    // The layer list runs below the map: bring the map into view to show the zoom.
    view.current.getContainer().scrollIntoView({ block: "nearest" });
  };
  const drop = (e: DragEvent, to: number) => {
    e.preventDefault();
    if (dragged !== null) move(dragged, to);
    setDragged(null);
  };
  const preview = { ...map, layers: layers.map((l, i) => ({ ...l, sort_order: i })) };
  const rasters = datasets.value?.datasets.filter((d) => d.kind === "raster") ?? [];
  // A map with no layer yet shows its basemap's extent, when the basemap is a dataset.
  const basemapExtent = rasters.find((d) => d.id === basemapDataset(map.basemap_style))?.extent_bbox;
  // Top first, as the map stacks them.
  const listed = layers.map((layer, index) => ({ layer, index })).reverse();

  return (
    <article>
      <h1>Edit map “{map.name}”</h1>
      <label className="title-field">
        Map name
        <input value={map.name} onChange={(e) => setMap({ ...map, name: e.target.value })} />
      </label>
      <label>
        Description
        <textarea
          rows={2}
          maxLength={2000}
          value={map.description ?? ""}
          onChange={(e) => setMap({ ...map, description: e.target.value })}
        />
      </label>
      <MapView
        style={mapStyle(preview)}
        bounds={extentOf(preview) ?? basemapExtent}
        view={opened}
        basemap={basemapPlacement(preview)}
        identify={identifiedLayers(preview)}
        onMap={(m) => (view.current = m)}
        label={`Map ${map.name}`}
      />
      <Legend layers={preview.layers} />
      <section aria-labelledby="layers">
        <h2 id="layers">Layers</h2>
        {layers.length === 0 && <p>No layer yet: add one from a dataset below.</p>}
        {layers.length > 1 && <p className="meta">The top of the list is drawn on top.</p>}
        <ol className="layers">
          {listed.map(({ layer: l, index: i }) => (
            <li
              key={l.id}
              draggable
              onDragStart={() => setDragged(i)}
              onDragOver={(e) => e.preventDefault()}
              onDrop={(e) => drop(e, i)}
              className="layer"
            >
              <span className="layer-name">{l.display_name || l.dataset_name}</span>
              <label className="inline">
                <input type="checkbox" checked={l.visible} onChange={(e) => change(i, { visible: e.target.checked })} />
                Visible
              </label>
              <label className="inline">
                Opacity of {l.dataset_name}
                <input
                  type="range"
                  min={0}
                  max={1}
                  step={0.05}
                  value={l.opacity}
                  onChange={(e) => change(i, { opacity: Number(e.target.value) })}
                />
              </label>
              <button type="button" onClick={() => move(i, i + 1)} disabled={i === layers.length - 1} aria-label={`Move ${l.dataset_name} up`}>
                Up
              </button>
              <button type="button" onClick={() => move(i, i - 1)} disabled={i === 0} aria-label={`Move ${l.dataset_name} down`}>
                Down
              </button>
              <button type="button" onClick={() => setLayers((now) => now.filter((_, j) => j !== i))} aria-label={`Remove ${l.dataset_name}`}>
                Remove
              </button>
              {l.dataset_extent_bbox && (
                <button type="button" className="link" onClick={() => zoomTo(l.dataset_extent_bbox!)} aria-label={`Zoom to ${l.dataset_name}`}>
                  Zoom to
                </button>
              )}
              {l.dataset_kind !== "raster" && l.dataset_available && (
                <LayerStyleEditor layer={l} index={i} onChange={(patch) => change(i, patch as unknown as Partial<MapLayer>)} />
              )}
              {l.dataset_kind === "raster" && l.dataset_available && (
                <RasterLayerStyle
                  layer={l}
                  config={rasterConfigOf(l)}
                  onChange={(config) => change(i, { style_config: config } as unknown as Partial<MapLayer>)}
                />
              )}
            </li>
          ))}
        </ol>
        <div className="row">
          <label className="grow">
            Dataset to add
            <select value={adding} onChange={(e) => setAdding(e.target.value)}>
              <option value="">Choose a dataset…</option>
              {datasets.value?.datasets.map((d) => (
                <option key={d.id} value={d.id}>
                  {d.title}
                </option>
              ))}
            </select>
          </label>
          <button type="button" onClick={add} disabled={!adding}>
            Add layer
          </button>
        </div>
      </section>
      {datasets.value && <BasemapSettings map={map} rasters={rasters} onChange={(patch) => setMap({ ...map, ...patch })} />}
      <label>
        Notes
        <textarea
          rows={4}
          maxLength={50000}
          value={map.notes ?? ""}
          onChange={(e) => setMap({ ...map, notes: e.target.value })}
        />
      </label>
      <div className="row actions">
        <button type="button" onClick={save} aria-describedby="save-view">
          Save map
        </button>
        <button type="button" onClick={exportStyle}>
          Export style JSON
        </button>
        <button type="button" onClick={() => setSharing(true)} aria-expanded={sharing}>
          Share
        </button>
        {dirty && (
          <span className="meta" role="status">
            Unsaved changes
          </span>
        )}
      </div>
      <p id="save-view" className="meta">
        Saving also keeps the map's view: it opens, shared and embedded too, where it is now.
      </p>
      <ErrorNote error={action.error} />
      {note && !dirty && <p role="status">{note}</p>}
      {sharing && (
        <ShareDialog
          map={map}
          layers={layers}
          dirty={dirty}
          onVisibility={(datasetId, visibility) =>
            setLayers((now) => now.map((l) => (l.dataset_id === datasetId ? ({ ...l, dataset_visibility: visibility } as MapLayer) : l)))
          }
          onClose={() => setSharing(false)}
        />
      )}
    </article>
  );
}

export function MapEditor({ id }: { id: string }) {
  const map = useLoad(() => data(client.GET("/maps/{map_id}", { params: { path: { map_id: id } } })), [id]);
  if (map.error) return <LoadFailed error={map.error} />;
  if (!map.value) return <p className="loading">Loading…</p>;
  return (
    <SignedIn>
      <Editor key={map.value.id} initial={map.value} />
    </SignedIn>
  );
}
