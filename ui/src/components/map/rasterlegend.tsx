// A raster layer's entry in a legend: its colour map's ramp and stretch.
// Apart from the raster controls, so the embeddable view, which draws
// legends, takes none of the app's screens with it.
import { COLORMAPS, type RasterConfig } from "./layerstyle";

/** A colour map's ramp with the values at its ends (and their unit, for
 * heights), for legends; without a stretch the ends are the band's own. */
export function RasterLegend({ config, unit }: { config: RasterConfig; unit?: string }) {
  const band = `band ${config.bidx ?? 1}`;
  if (!config.colormap || !COLORMAPS[config.colormap])
    return <span className="meta">{config.rescale ? `image, ${band} stretched ${ends(config.rescale, unit)}` : "image, its own colours"}</span>;
  const colours = COLORMAPS[config.colormap];
  const [low, high] = config.rescale ? config.rescale.map((v) => valueText(v, unit)) : [`lowest of ${band}`, `highest`];
  return (
    <span className="raster-legend">
      <span className="legend-end">{low}</span>
      <span className="legend-ramp" role="img" aria-label={`${config.colormap} colours from ${low} to ${high}`} style={{ background: `linear-gradient(to right, ${colours.join(", ")})` }} />
      <span className="legend-end">{high}</span>
    </span>
  );
}

function valueText(value: number, unit?: string): string {
  return unit ? `${value.toLocaleString()} ${unit}` : value.toLocaleString();
}

function ends([low, high]: [number, number], unit?: string): string {
  return `from ${valueText(low, unit)} to ${valueText(high, unit)}`;
}
