-- One clustered tile: the features of the tile's buffered area grouped by
-- a grid of cells, one point per cell at the centre of its members, with
-- the count, whether it is a cluster, and the id of a lone feature.
WITH bounds AS (SELECT ST_TileEnvelope($1, $2, $3) AS env),
points AS (
  SELECT t.{key}::bigint AS id, ST_PointOnSurface({geometry}) AS p
  FROM {table} t
  WHERE t.{geom} && {area} AND NOT ST_IsEmpty(t.{geom})
),
cells AS (
  SELECT count(*) AS point_count, min(points.id) AS id, ST_Centroid(ST_Collect(points.p)) AS centre
  FROM points, bounds
  GROUP BY floor((ST_X(points.p) - ST_XMin(bounds.env)) / (ST_XMax(bounds.env) - ST_XMin(bounds.env)) * {grid}),
           floor((ST_Y(points.p) - ST_YMin(bounds.env)) / (ST_YMax(bounds.env) - ST_YMin(bounds.env)) * {grid})
)
SELECT ST_AsMVT(tile.*, $4, {extent}, '__mvt_geom') FROM (
  SELECT cells.point_count, cells.point_count > 1 AS cluster,
         CASE WHEN cells.point_count = 1 THEN cells.id END AS gid,
         ST_AsMVTGeom(cells.centre, bounds.env, {extent}, {buffer}, true) AS __mvt_geom
  FROM cells, bounds
) tile
WHERE tile.__mvt_geom IS NOT NULL
