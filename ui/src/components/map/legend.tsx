// A map's legend, read from each layer's style settings (`layerstyle.ts`):
// top layer first, as the map stacks them; hidden layers and layers the
// reader may not see are left out.
import { useState } from "react";
import type { Schemas } from "../../lib/api";
import { configOf, geometryOf, legendOf, rasterConfigOf, type Geometry, type LegendEntry } from "./layerstyle";
import { RasterLegend } from "./rasterlegend";
import "./legend.css";

type MapLayer = Schemas["MapLayerResponse"];

function Swatch({ geometry, entry }: { geometry: Geometry; entry: LegendEntry }) {
  const size = entry.radius ? Math.round(entry.radius * 2) : undefined;
  return (
    <span
      className={`legend-swatch ${geometry}`}
      aria-hidden="true"
      data-colour={entry.colour}
      style={{ background: entry.colour, ...(size ? { width: size, height: size } : {}) }}
    />
  );
}

/** What a styled layer's classes are of: the column as the file named it,
 * and the unit the map maker gave it. */
function byColumn(layer: MapLayer, column: string | undefined, unit: string | undefined): string | null {
  if (!column) return null;
  const info = (layer.dataset_column_info ?? []).find((c) => c.name === column);
  const named = info?.original_name ?? column;
  return unit ? `${named}, in ${unit}` : named;
}

/** `layers` in drawing order (bottom first), as maps keep them. A
 * `collapsible` legend (over a small map) folds behind its title, open at
 * first when `startOpen`. */
export function Legend({
  layers,
  title = "Legend",
  collapsible = false,
  startOpen = true,
}: {
  layers: MapLayer[];
  title?: string;
  collapsible?: boolean;
  startOpen?: boolean;
}) {
  const [open, setOpen] = useState(startOpen);
  const shown = [...layers]
    .sort((a, b) => a.sort_order - b.sort_order)
    .map((layer, index) => ({ layer, index }))
    .filter(({ layer }) => layer.visible && layer.show_in_legend !== false && layer.dataset_available)
    .reverse();
  if (!shown.length) return null;
  return (
    <section className={`legend${open ? "" : " folded"}`} aria-label={title}>
      <h2 className="legend-title">
        {collapsible ? (
          <button type="button" className="legend-toggle" aria-expanded={open} onClick={() => setOpen(!open)}>
            {title}
          </button>
        ) : (
          title
        )}
      </h2>
      {open && shown.map(({ layer, index }) => {
        const name = layer.display_name || layer.dataset_name;
        if (layer.dataset_kind === "raster")
          return (
            <div key={layer.id} className="legend-layer">
              <strong>{name}</strong>{" "}
              <RasterLegend config={rasterConfigOf(layer)} unit={layer.is_dem ? (layer.dem_vertical_units ?? undefined) : undefined} />
            </div>
          );
        const geometry = geometryOf(layer);
        const config = configOf(layer, index);
        const entries = legendOf(config, name);
        const by = config.mode === "single" ? null : byColumn(layer, config.column, config.unit);
        // Below this zoom the layer's tiles draw an even selection.
        const thinnedBelow = layer.dataset_complete_zoom ?? 0;
        return (
          <div key={layer.id} className="legend-layer">
            {(entries.length > 1 || thinnedBelow > 0 || by) && <strong>{name}</strong>}
            {by && <p className="legend-note">by {by}</p>}
            {thinnedBelow > 0 && <p className="legend-note">Thinned below zoom {thinnedBelow}</p>}
            <ul>
              {entries.map((entry, i) => (
                <li key={i}>
                  <Swatch geometry={geometry} entry={entry} />
                  <span>{entry.label}</span>
                </li>
              ))}
            </ul>
          </div>
        );
      })}
    </section>
  );
}
