// A raster layer's entry in a legend: its colour map's ramp and stretch.
// Apart from the raster controls, so the embeddable view, which draws
// legends, takes none of the app's screens with it.
import { COLORMAPS, type RasterConfig } from "./layerstyle";

/** A colour map's ramp with its stretch's ends, for legends. */
export function RasterLegend({ config }: { config: RasterConfig }) {
  if (!config.colormap || !COLORMAPS[config.colormap]) return <span className="meta">raster image</span>;
  const colours = COLORMAPS[config.colormap];
  return (
    <span className="raster-legend">
      <span className="legend-ramp" aria-hidden="true" style={{ background: `linear-gradient(to right, ${colours.join(", ")})` }} />
      <span>
        {config.rescale ? `${config.rescale[0].toLocaleString()} to ${config.rescale[1].toLocaleString()}` : config.colormap}
      </span>
    </span>
  );
}
