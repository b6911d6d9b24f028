-- STAC item search over the datasets a caller may see, one page after a
-- keyset cursor on (created_at, id), or, sorted, at an offset; the count
-- is over every match. The datasets are seen through a projection whose
-- columns are named as the items' members and properties, which a filter
-- names (`filter.rs`).
-- $1 caller id, $2 admin, $3 bbox (float8[4], west > east across the
-- antimeridian), $4 intersects (GeoJSON text), $5 ids, $6 updated at or
-- after, $7 created at or before, $8 and $9 the cursor, $10 the kinds
-- (collections) searched.
-- The column list, the visibility condition, the published status, the
-- extent geometry, the filter (its values inlined as literals), the order,
-- the page size and offset are filled in by format! (never a caller's
-- text).
SELECT * FROM (
  SELECT {columns}, count(*) OVER () AS total_count
    FROM (SELECT d.*, d.kind AS collection, d.updated_at AS datetime, d.created_at AS created,
                 d.updated_at AS updated, d.summary AS description, {extent} AS geometry
            FROM datasets d) d
   WHERE {visible} AND d.status = '{ready}'
     AND ($3::float8[] IS NULL OR (d.extent_bbox IS NOT NULL AND ST_Intersects({extent},
          CASE WHEN $3[1] <= $3[3]
               THEN ST_SetSRID(ST_MakeBox2D(ST_Point($3[1], $3[2]), ST_Point($3[3], $3[4]))::geometry, 4326)
               ELSE ST_Collect(ST_SetSRID(ST_MakeBox2D(ST_Point($3[1], $3[2]), ST_Point(180, $3[4]))::geometry, 4326),
                               ST_SetSRID(ST_MakeBox2D(ST_Point(-180, $3[2]), ST_Point($3[3], $3[4]))::geometry, 4326)) END)))
     AND ($4::text IS NULL OR (d.extent_bbox IS NOT NULL AND ST_Intersects({extent}, ST_SetSRID(ST_GeomFromGeoJSON($4), 4326))))
     AND ($5::uuid[] IS NULL OR cardinality($5) = 0 OR d.id = ANY($5))
     AND ($6::timestamptz IS NULL OR d.updated_at >= $6)
     AND ($7::timestamptz IS NULL OR d.created_at <= $7)
     AND d.kind = ANY($10::text[])
     AND ({filter})
) d
WHERE $8::timestamptz IS NULL OR (d.created_at, d.id) > ($8, $9::uuid)
ORDER BY {order} LIMIT {limit} OFFSET {offset}
