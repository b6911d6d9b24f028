-- The records of the `catalog` collection a caller may see, filtered.
-- $1 caller id, $2 admin, $3 full-text query, $4 bbox (float8[4]),
-- $5 record type, $6 ids, $7 updated at or after, $8 created at or before.
-- The visible records (as r), the two geometries, the order and the page
-- are filled in by format! (never a caller's text).
SELECT r.id, r.record_type, r.title, r.description, r.keywords, r.extent_bbox, r.properties,
       r.created_at, r.updated_at, count(*) OVER () AS total
FROM {records}
WHERE ($3::text IS NULL
       OR to_tsvector('simple', r.title || ' ' || coalesce(r.description, '') || ' ' || array_to_string(r.keywords, ' '))
          @@ websearch_to_tsquery('simple', $3))
  AND ($4::float8[] IS NULL OR (cardinality(r.extent_bbox) = 4 AND ST_Intersects({extent}, {bbox})))
  AND ($5::text IS NULL OR r.record_type = $5)
  AND ($6::uuid[] IS NULL OR r.id = ANY($6))
  AND ($7::timestamptz IS NULL OR r.updated_at >= $7)
  AND ($8::timestamptz IS NULL OR r.created_at <= $8)
ORDER BY {order} LIMIT {limit} OFFSET {offset}
