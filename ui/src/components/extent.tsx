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

/** The deepest Web Mercator tile that holds the whole extent (zoom 0 for
 * an extent across the antimeridian), as STAC's raster thumbnails use. */
export function enclosingTile(bbox: number[]): [number, number, number] {
  const [west, south, east, north] = bbox;
  const column = (lon: number, z: number) => Math.min(2 ** z - 1, Math.floor(((lon + 180) / 360) * 2 ** z));
  const row = (lat: number, z: number) => {
    const clamped = Math.max(-85.0511, Math.min(85.0511, lat));
    const s = Math.sin((clamped * Math.PI) / 180);
    return Math.min(2 ** z - 1, Math.floor((0.5 - Math.log((1 + s) / (1 - s)) / (4 * Math.PI)) * 2 ** z));
  };
  let found: [number, number, number] = [0, 0, 0];
  if (west > east) return found;
  for (let z = 1; z <= 18; z += 1) {
    const [x, y] = [column(west, z), row(north, z)];
    if (x !== column(east, z) || y !== row(south, z)) break;
    found = [z, x, y];
  }
  return found;
}

/** Where a dataset's picture is: a raster's enclosing tile, a vector
 * dataset's thumbnail (its data over the land, drawn by the server). */
export function pictureOf(dataset: { id: string; kind?: string | null; extent_bbox?: number[] | null }): string | null {
  if (dataset.kind !== "raster") return `/api/datasets/${dataset.id}/thumbnail.png`;
  if (!dataset.extent_bbox || dataset.extent_bbox.length < 4) return null;
  const [z, x, y] = enclosingTile(dataset.extent_bbox);
  return `/api/tiles/${dataset.id}/${z}/${x}/${y}.png`;
}

/** A picture fetched with the session (a private dataset's needs it); the
 * extent box until then, or when there is none. */
export function Thumbnail({ path, bbox, title }: { path: string | null; bbox?: number[] | null; title: string }) {
  const [src, setSrc] = useState<string | null>(null);
  useEffect(() => {
    if (!path) return;
    let url: string | null = null;
    let cancelled = false;
    // By address: the callers name a thumbnail or a tile, read as a picture.
    request(path)
      .then((r) => (r.status === 200 ? r.blob() : null))
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
  }, [path]);
  if (!src) return <ExtentPreview bbox={bbox} />;
  return <img className="extent thumbnail" src={src} alt={`Picture of ${title}`} width={120} height={60} />;
}
