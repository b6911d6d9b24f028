import { useEffect, useState } from "react";
import { request } from "../lib/api";

/** A dataset's extent drawn on a small world outline: a preview that needs no tiles. */
export function ExtentPreview({ bbox }: { bbox?: number[] | null }) {
  const w = 120;
  const h = 60;
  const x = (lon: number) => ((lon + 180) / 360) * w;
  const y = (lat: number) => ((90 - lat) / 180) * h;
  let boxes: [number, number, number, number][] = [];
  if (bbox && bbox.length >= 4) {
    const [west, south, east, north] = bbox;
    // Across the antimeridian (RFC 7946): west > east, drawn as two boxes.
    boxes = west <= east ? [[west, south, east, north]] : [[west, south, 180, north], [-180, south, east, north]];
  }
  return (
    <svg className="extent" viewBox={`0 0 ${w} ${h}`} role="img" aria-label={bbox ? "extent on a world map" : "no extent"}>
      <rect width={w} height={h} className="sea" />
      <line x1={0} y1={h / 2} x2={w} y2={h / 2} className="grid" />
      <line x1={w / 2} y1={0} x2={w / 2} y2={h} className="grid" />
      {boxes.map(([a, b, c, d], i) => (
        <rect
          key={i}
          x={x(a)}
          y={y(d)}
          width={Math.max(1.5, x(c) - x(a))}
          height={Math.max(1.5, y(b) - y(d))}
          className="box"
        />
      ))}
    </svg>
  );
}

/** Where a dataset's picture is: a vector dataset's thumbnail (its data
 * over the land, drawn by the server); a raster's is made of its tiles
 * (`rasterPicture`), so none is named here. */
export function pictureOf(dataset: { id: string; kind?: string | null }): string | null {
  return dataset.kind === "raster" ? null : `/api/datasets/${dataset.id}/thumbnail.png`;
}

/** The picture's size, twice the card's 120 x 60 for sharp screens. */
const PICTURE = [240, 120];
const TILE = 256;

/** Web Mercator pixel coordinates at zoom `z` of a longitude and latitude. */
function pixelOf(lon: number, lat: number, z: number): [number, number] {
  const clamped = Math.max(-85.0511, Math.min(85.0511, lat));
  const s = Math.sin((clamped * Math.PI) / 180);
  const size = TILE * 2 ** z;
  return [((lon + 180) / 360) * size, (0.5 - Math.log((1 + s) / (1 - s)) / (4 * Math.PI)) * size];
}

/** A raster's picture framed on its extent: the tiles that cover it at the
 * deepest zoom where at most 2 x 2 do, cropped to the extent and centred in
 * the picture (its shape kept). Null when a tile cannot be read. */
async function rasterPicture(datasetId: string, bbox: number[]): Promise<Blob | null> {
  const [west, south, east, north] = bbox;
  if (!(west < east && south < north)) return null;
  let z = 0;
  for (let next = 1; next <= 18; next += 1) {
    const [left, top] = pixelOf(west, north, next);
    const [right, bottom] = pixelOf(east, south, next);
    if (Math.floor(right / TILE) - Math.floor(left / TILE) > 1 || Math.floor(bottom / TILE) - Math.floor(top / TILE) > 1) break;
    z = next;
  }
  const [left, top] = pixelOf(west, north, z);
  const [right, bottom] = pixelOf(east, south, z);
  const [x0, y0] = [Math.floor(left / TILE), Math.floor(top / TILE)];
  const [x1, y1] = [Math.min(Math.floor(right / TILE), 2 ** z - 1), Math.min(Math.floor(bottom / TILE), 2 ** z - 1)];
  const canvas = document.createElement("canvas");
  [canvas.width, canvas.height] = PICTURE;
  const ctx = canvas.getContext("2d");
  if (!ctx) return null;
  const tiles: Promise<void>[] = [];
  // The extent's box fitted inside the picture, centred.
  const scale = Math.min(PICTURE[0] / (right - left), PICTURE[1] / (bottom - top));
  const [dx, dy] = [(PICTURE[0] - (right - left) * scale) / 2, (PICTURE[1] - (bottom - top) * scale) / 2];
  for (let x = x0; x <= x1; x += 1) {
    for (let y = y0; y <= y1; y += 1) {
      tiles.push(
        request(`/api/tiles/${datasetId}/${z}/${x}/${y}.png`)
          .then((r) => r.blob())
          .then((blob) => createImageBitmap(blob))
          .then((image) => {
            ctx.drawImage(image, dx + (x * TILE - left) * scale, dy + (y * TILE - top) * scale, TILE * scale, TILE * scale);
          }),
      );
    }
  }
  try {
    await Promise.all(tiles);
  } catch {
    return null;
  }
  return new Promise((done) => canvas.toBlob(done, "image/png"));
}

/** A picture fetched with the session (a private dataset's needs it): the
 * one at `path`, or the framed picture of the raster `raster`; the extent
 * box until then, or when there is none. */
export function Thumbnail({
  path,
  raster,
  bbox,
  title,
}: {
  path: string | null;
  raster?: string;
  bbox?: number[] | null;
  title: string;
}) {
  const [src, setSrc] = useState<string | null>(null);
  const extent = bbox?.join(",");
  useEffect(() => {
    if (!path && !(raster && bbox && bbox.length >= 4)) return;
    let url: string | null = null;
    let cancelled = false;
    // By address: the callers name a thumbnail, read as a picture.
    const picture = path
      ? request(path).then((r) => (r.status === 200 ? r.blob() : null))
      : rasterPicture(raster!, bbox!);
    picture
      .then((blob) => {
        if (!blob || cancelled) return;
        url = URL.createObjectURL(blob);
        setSrc(url);
      })
      .catch(() => undefined);
    return () => {
      cancelled = true;
      if (url) URL.revokeObjectURL(url);
    };
  }, [path, raster, extent]);
  if (!src) return <ExtentPreview bbox={bbox} />;
  return <img className="extent thumbnail" src={src} alt={`Picture of ${title}`} width={120} height={60} />;
}
