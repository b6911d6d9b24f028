-- The built-in basemap's tile $1/$2/$3: land (earth), national borders
-- (boundary) and country names (place), simplified to the tile's pixel.
-- ($4, the layer name the tile connections bind for dataset tiles, is not
-- read: each layer is named here.) No data version: the tile's key holds
-- the basemap data's digest.
WITH tile AS (
  SELECT ST_TileEnvelope($1, $2, $3) AS envelope,
         ST_TileEnvelope($1, $2, $3, margin => 0.015625) AS area,
         40075016.68557849 / (4096 * 2 ^ $1) AS pixel
)
SELECT NULL::bigint, coalesce((
  SELECT ST_AsMVT(earth, 'earth', 4096, 'geom') FROM (
    SELECT c.name, ST_AsMVTGeom(ST_Simplify(c.geom, tile.pixel, true), tile.envelope, 4096, 64, true) AS geom
    FROM basemap.countries c, tile WHERE c.geom && tile.area
  ) earth WHERE geom IS NOT NULL), '')
  || coalesce((
  SELECT ST_AsMVT(boundary, 'boundary', 4096, 'geom') FROM (
    SELECT 2 AS admin_level, ST_AsMVTGeom(ST_Simplify(b.geom, tile.pixel), tile.envelope, 4096, 64, true) AS geom
    FROM basemap.borders b, tile WHERE b.geom && tile.area
  ) boundary WHERE geom IS NOT NULL), '')
  || coalesce((
  SELECT ST_AsMVT(place, 'place', 4096, 'geom') FROM (
    SELECT c.name, 'country' AS class, c.label_min_zoom AS min_zoom,
           ST_AsMVTGeom(c.label, tile.envelope, 4096, 64, true) AS geom
    FROM basemap.countries c, tile WHERE c.label && tile.area AND c.label_min_zoom <= $1
  ) place WHERE geom IS NOT NULL), '')
