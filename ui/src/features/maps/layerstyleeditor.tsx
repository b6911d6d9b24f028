// A map layer's style controls: one colour, categories of a column,
// classes of a number column with a colour ramp, or (points) symbols sized
// by a number. Choosing a column reads its summary from the API, so
// categories and class breaks are the whole table's, not one page's.
import { useState } from "react";
import { client, data, type Schemas } from "../../lib/api";
import { ErrorNote, useAction } from "../../components/common";
import {
  OTHER_COLOUR,
  QUALITATIVE,
  RAMPS,
  categoriesFrom,
  classesFrom,
  configOf,
  geometryOf,
  paintOf,
  type ColumnSummary,
  type Mode,
  type StyleConfig,
} from "../../components/map/layerstyle";

type MapLayer = Schemas["MapLayerResponse"];
type Column = Schemas["ColumnInfo"];

const NUMBER_TYPES = ["integer", "bigint", "smallint", "double precision", "real", "numeric"];

export type StyleChange = { style_config: StyleConfig; paint: Record<string, unknown> };

export function styleChange(config: StyleConfig, layer: MapLayer): StyleChange {
  return { style_config: config, paint: paintOf(config, geometryOf(layer)) };
}

export function LayerStyleEditor({
  layer,
  index,
  onChange,
}: {
  layer: MapLayer;
  index: number;
  onChange: (change: StyleChange) => void;
}) {
  const config = configOf(layer, index);
  const name = layer.display_name || layer.dataset_name;
  const geometry = geometryOf(layer);
  const columns = (layer.dataset_column_info ?? []) as unknown as Column[];
  const numbers = columns.filter((c) => NUMBER_TYPES.includes(c.type ?? ""));
  const [classes, setClasses] = useState(config.colours?.length || 5);
  const action = useAction();
  const set = (next: StyleConfig) => onChange(styleChange(next, layer));

  /** The settings for a mode and column, from the column's summary. */
  const build = (mode: Mode, column: string | undefined, ramp = config.ramp ?? "Oranges", count = classes) =>
    action.run(async () => {
      // A rule-based style draws values no rule names in grey; one colour keeps the layer's own.
      const own = config.mode === "single" || config.mode === "proportional" ? config.colour : QUALITATIVE[index % QUALITATIVE.length];
      const base: StyleConfig = {
        mode,
        colour: mode === "categories" || mode === "classes" ? OTHER_COLOUR : own,
        outline: config.outline,
        // The unit belongs to its column: another column's numbers count something else.
        unit: column === config.column ? config.unit : undefined,
      };
      if (mode === "single" || !column) return set({ ...base, mode: "single" });
      const summary = (await data(
        client.GET("/datasets/{dataset_id}/columns/{column}/summary", {
          params: { path: { dataset_id: layer.dataset_id, column }, query: { classes: count } },
        }),
      )) as ColumnSummary;
      if (mode === "categories") return set({ ...base, column, categories: categoriesFrom(summary) });
      if (mode === "classes") return set({ ...base, column, ramp, ...classesFrom(summary, ramp) });
      set({ ...base, column, min: summary.min ?? 0, max: summary.max ?? 0 });
    });
  const columnsFor = (mode: Mode) => (mode === "categories" ? columns : numbers);
  const chooseMode = (mode: Mode) => build(mode, mode === "single" ? undefined : (columnsFor(mode).find((c) => c.name === config.column) ?? columnsFor(mode)[0])?.name);

  return (
    <div className="style-editor" aria-label={`Style settings of ${name}`} role="group">
      <label>
        Style of {name}
        <select value={config.mode} onChange={(e) => chooseMode(e.target.value as Mode)} disabled={action.busy}>
          <option value="single">One colour</option>
          {columns.length > 0 && <option value="categories">A colour per category</option>}
          {numbers.length > 0 && <option value="classes">Colour classes of a number</option>}
          {numbers.length > 0 && geometry === "circle" && <option value="proportional">Symbols sized by a number</option>}
        </select>
      </label>
      {config.mode !== "single" && (
        <label>
          Column for {name}
          <select value={config.column ?? ""} onChange={(e) => build(config.mode, e.target.value)} disabled={action.busy}>
            {columnsFor(config.mode).map((c) => (
              <option key={c.name} value={c.name}>
                {c.original_name ?? c.name}
              </option>
            ))}
          </select>
        </label>
      )}
      {config.mode === "classes" && (
        <>
          <label>
            Colour ramp of {name}
            <select value={config.ramp ?? "Oranges"} onChange={(e) => build("classes", config.column, e.target.value)} disabled={action.busy}>
              {Object.keys(RAMPS).map((ramp) => (
                <option key={ramp}>{ramp}</option>
              ))}
            </select>
          </label>
          <label>
            Classes of {name}
            <select
              value={classes}
              onChange={(e) => {
                const count = Number(e.target.value);
                setClasses(count);
                build("classes", config.column, config.ramp, count);
              }}
              disabled={action.busy}
            >
              {[3, 4, 5, 6, 7].map((n) => (
                <option key={n}>{n}</option>
              ))}
            </select>
          </label>
        </>
      )}
      {(config.mode === "classes" || config.mode === "proportional") && (
        <label>
          Unit of the numbers of {name} (optional)
          <input
            value={config.unit ?? ""}
            placeholder="e.g. people, km²"
            maxLength={40}
            onChange={(e) => set({ ...config, unit: e.target.value || undefined })}
          />
        </label>
      )}
      <label className="inline">
        {config.mode === "categories" || config.mode === "classes" ? `Colour of other values of ${name}` : `Colour of ${name}`}
        <input type="color" value={config.colour} onChange={(e) => set({ ...config, colour: e.target.value })} />
      </label>
      {geometry === "fill" && (
        <label className="inline">
          Outline of {name}
          <input type="color" value={config.outline} onChange={(e) => set({ ...config, outline: e.target.value })} />
        </label>
      )}
      {config.mode === "categories" &&
        config.categories?.map((c, i) => (
          <label className="inline" key={String(c.value)}>
            Colour of {String(c.value)}
            <input
              type="color"
              value={c.colour}
              onChange={(e) =>
                set({ ...config, categories: config.categories!.map((x, j) => (j === i ? { ...x, colour: e.target.value } : x)) })
              }
            />
          </label>
        ))}
      {action.busy && <span role="status">Reading the column…</span>}
      <ErrorNote error={action.error} />
    </div>
  );
}
