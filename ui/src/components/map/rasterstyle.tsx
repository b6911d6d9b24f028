// A raster's rendering: the band shown, its stretch (the values mapped from
// dark to light, from the band's own range at first) and a colour map, for
// a map layer and for the raster's own page. The tile routes draw it.
import { client, data, type Schemas } from "../../lib/api";
import { useLoad } from "../common";
import { COLORMAPS, type RasterConfig } from "./layerstyle";

type Band = { index: number; data_type?: string; min?: number | null; max?: number | null; color_interpretation?: string };
export type RasterFacts = { band_count?: number; bands?: Band[] };

export function RasterStyleEditor({
  name,
  raster,
  config,
  onChange,
}: {
  name: string;
  raster: RasterFacts | null;
  config: RasterConfig;
  onChange: (config: RasterConfig) => void;
}) {
  const bands = raster?.bands ?? [];
  const single = bands.length === 1 || !!config.bidx;
  const band = bands.find((b) => b.index === (config.bidx ?? 1));
  const [low, high] = config.rescale ?? [band?.min ?? 0, band?.max ?? 255];
  const setStretch = (value: [number, number]) =>
    onChange({ ...config, rescale: Number.isFinite(value[0]) && Number.isFinite(value[1]) && value[0] < value[1] ? value : undefined });
  return (
    <div className="style-editor" role="group" aria-label={`Rendering of ${name}`}>
      {bands.length > 1 && (
        <label>
          Band of {name}
          <select
            value={config.bidx ?? ""}
            onChange={(e) => onChange({ ...config, bidx: e.target.value ? Number(e.target.value) : undefined, colormap: e.target.value ? config.colormap : undefined })}
          >
            <option value="">All bands as colour</option>
            {bands.map((b) => (
              <option key={b.index} value={b.index}>
                Band {b.index} ({b.color_interpretation ?? b.data_type})
              </option>
            ))}
          </select>
        </label>
      )}
      {single && (
        <label>
          Colour map of {name}
          <select value={config.colormap ?? ""} onChange={(e) => onChange({ ...config, colormap: e.target.value || undefined })}>
            <option value="">Greys as stored</option>
            {Object.keys(COLORMAPS).map((c) => (
              <option key={c}>{c}</option>
            ))}
          </select>
        </label>
      )}
      <label>
        Stretch from ({name})
        <input type="number" value={low} step="any" onChange={(e) => setStretch([Number(e.target.value), high])} />
      </label>
      <label>
        Stretch to ({name})
        <input type="number" value={high} step="any" onChange={(e) => setStretch([low, Number(e.target.value)])} />
      </label>
    </div>
  );
}

/** A map layer's raster rendering, with the raster's bands read from its dataset. */
export function RasterLayerStyle({
  layer,
  config,
  onChange,
}: {
  layer: Schemas["MapLayerResponse"];
  config: RasterConfig;
  onChange: (config: RasterConfig) => void;
}) {
  const dataset = useLoad(
    () => data(client.GET("/datasets/{dataset_id}", { params: { path: { dataset_id: layer.dataset_id } } })),
    [layer.dataset_id],
  );
  if (!dataset.value) return null;
  return (
    <RasterStyleEditor
      name={layer.display_name || layer.dataset_name}
      raster={dataset.value.raster as unknown as RasterFacts}
      config={config}
      onChange={onChange}
    />
  );
}
