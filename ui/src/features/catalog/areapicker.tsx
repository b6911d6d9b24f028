// The catalog's "search a map area": a map of the built-in basemap to pan
// and zoom, whose view becomes the search's bbox.
import { useRef } from "react";
import type { Map as MapLibreMap, StyleSpecification } from "maplibre-gl";
import { MapView } from "../../components/map/mapview";
import { DEFAULT_BACKGROUND } from "../../components/map/mapstyle";

/** The map a search area is picked on: the built-in basemap alone. */
const AREA_STYLE: StyleSpecification = {
  version: 8,
  sources: {},
  layers: [{ id: "background", type: "background", paint: { "background-color": DEFAULT_BACKGROUND } }],
};

/** A longitude brought into -180..180 (a map scrolled past the antimeridian reads beyond it). */
const wrapped = (lng: number) => ((((lng + 180) % 360) + 360) % 360) - 180;

/** The map's view as the API's bbox: west,south,east,north, the whole world when it shows all of it. */
function areaOf(map: MapLibreMap): string {
  const b = map.getBounds();
  const [south, north] = [Math.max(-90, b.getSouth()), Math.min(90, b.getNorth())];
  const [west, east] = b.getEast() - b.getWest() >= 360 ? [-180, 180] : [wrapped(b.getWest()), wrapped(b.getEast())];
  return [west, south, east, north].map((v) => v.toFixed(4)).join(",");
}

/** A map to pan and zoom, and a button that searches what it shows. */
export default function AreaPicker({ onPick }: { onPick: (bbox: string) => void }) {
  const map = useRef<MapLibreMap | null>(null);
  return (
    <div className="small-map">
      <MapView style={AREA_STYLE} basemap={{}} bounds={[-170, -60, 170, 75]} label="Map to search in" onMap={(m) => (map.current = m)} />
      <button type="button" onClick={() => map.current && onPick(areaOf(map.current))}>
        Search this map area
      </button>
    </div>
  );
}

