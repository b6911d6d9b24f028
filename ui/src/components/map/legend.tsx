// A map's legend, read from each layer's style settings (`layerstyle.ts`):
// top layer first, as the map stacks them; hidden layers and layers the
// reader may not see are left out.
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

/** `layers` in drawing order (bottom first), as maps keep them. */
export function Legend({ layers, title = "Legend" }: { layers: MapLayer[]; title?: string }) {
  const shown = [...layers]
    .sort((a, b) => a.sort_order - b.sort_order)
    .map((layer, index) => ({ layer, index }))
    .filter(({ layer }) => layer.visible && layer.show_in_legend !== false && layer.dataset_available)
    .reverse();
  if (!shown.length) return null;
  return (
    <section className="legend" aria-label={title}>
      <h2 className="legend-title">{title}</h2>
      {shown.map(({ layer, index }) => {
        const name = layer.display_name || layer.dataset_name;
        if (layer.dataset_kind === "raster")
          return (
            <div key={layer.id} className="legend-layer">
              <strong>{name}</strong> <RasterLegend config={rasterConfigOf(layer)} />
            </div>
          );
        const geometry = geometryOf(layer);
        const entries = legendOf(configOf(layer, index), name);
        // Below this zoom the layer's tiles draw an even selection.
        const thinnedBelow = layer.dataset_complete_zoom ?? 0;
        return (
          <div key={layer.id} className="legend-layer">
            {(entries.length > 1 || thinnedBelow > 0) && <strong>{name}</strong>}
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
