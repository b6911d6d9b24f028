-- Borders: the edges two countries share (the source's shared arcs are
-- identical, so their intersection is exactly the border).
INSERT INTO basemap.borders (geom)
SELECT border FROM (
  SELECT ST_Multi(ST_LineMerge(ST_CollectionExtract(ST_Intersection(a.geom, b.geom), 2))) AS border
  FROM basemap.countries a JOIN basemap.countries b ON a.id < b.id AND ST_Intersects(a.geom, b.geom)
) shared
WHERE NOT ST_IsEmpty(border)
