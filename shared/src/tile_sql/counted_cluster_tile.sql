-- One clustered tile below the zoom to which the layer's cells are
-- counted, from the cells counted at load and kept by edits
-- (`generalize::clusters`), `$5` being
-- the dataset: the tile's cells and the ring around them, whose clusters
-- may fall in the buffer. A cluster sits at the centre of its members
-- (of their boxes), a lone point where it is.
WITH cells AS (
  SELECT c.features, c.lone, c.sum_x / c.features AS x, c.sum_y / c.features AS y
  FROM cluster_cells c
  WHERE c.dataset_id = $5 AND c.zoom = $1
    AND c.cell_column = ANY (ARRAY(SELECT generate_series($2 * {grid} - 1, $2 * {grid} + {grid})))
    AND c.cell_row BETWEEN $3 * {grid} - 1 AND $3 * {grid} + {grid}
)
SELECT ST_AsMVT(tile.*, $4, {extent}, '__mvt_geom') FROM (
  SELECT cells.features AS point_count, cells.features > 1 AS cluster, cells.lone AS gid,
         ST_AsMVTGeom(coalesce({lone_position}, ST_SetSRID(ST_MakePoint(cells.x, cells.y), 3857)),
                      ST_TileEnvelope($1, $2, $3), {extent}, {buffer}, true) AS __mvt_geom
  FROM cells
) tile
WHERE tile.__mvt_geom IS NOT NULL
