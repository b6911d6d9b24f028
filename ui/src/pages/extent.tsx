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
