-- Fills the basemap's countries from $1, a GeoJSON FeatureCollection in
-- EPSG:4326: parts that cross the antimeridian cut there (the source joins
-- Chukotka, Wrangel Island and a Fijian island across it into rings that
-- would span the whole globe, a band of land across every ocean), clipped
-- to Web Mercator's latitudes, made valid, each with a label point and the
-- zoom from which its name shows (about zoom 1 for Russia, 4 for Belgium,
-- 6 for Monaco). Antarctica's ring round the pole is left as it is.
WITH source AS (
  SELECT ordinality::int AS id, f->'properties'->>'name' AS name,
         ST_SetSRID(ST_GeomFromGeoJSON(f->'geometry'), 4326) AS geom
  FROM json_array_elements($1::json->'features') WITH ORDINALITY AS t(f, ordinality)
  WHERE json_typeof(f->'geometry') = 'object'
), features AS (
  SELECT id, name, ST_CollectionExtract(ST_Collect(ARRAY(
           SELECT CASE WHEN ST_XMax(d.geom) - ST_XMin(d.geom) > 180 AND ST_YMin(d.geom) > -89
                       THEN ST_WrapX(ST_ShiftLongitude(d.geom), 180, -360) ELSE d.geom END
           FROM ST_Dump(geom) d)), 3) AS geom
  FROM source
), mercator AS (
  SELECT id, coalesce(name, '') AS name,
         ST_Multi(ST_CollectionExtract(ST_MakeValid(ST_Transform(
           ST_ClipByBox2D(geom, ST_MakeEnvelope(-180, -85.0511, 180, 85.0511, 4326)), 3857)), 3)) AS geom
  FROM features
)
INSERT INTO basemap.countries (id, name, geom, label, label_min_zoom)
SELECT id, name, geom,
       (ST_MaximumInscribedCircle(largest.part)).center,
       least(6, greatest(1, floor(8.5 - log(greatest(ST_Area(geography(ST_Transform(geom, 4326))) / 1e6, 1)))))::int
FROM mercator,
LATERAL (SELECT d.geom AS part FROM ST_Dump(mercator.geom) d ORDER BY ST_Area(d.geom) DESC LIMIT 1) largest
WHERE NOT ST_IsEmpty(mercator.geom)
