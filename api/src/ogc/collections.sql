-- The dataset collections a caller may see, filtered as records are.
-- $1 caller id, $2 admin, $3 full-text query, $4 bbox (float8[4]),
-- $5 updated at or after, $6 created at or before; the page's
-- $7 limit and $8 offset. The visibility rule, the two geometries and
-- whether a page or the count is asked are filled in by format! (never a
-- caller's text).
SELECT {select}
FROM datasets
WHERE {visible} AND status = '{ready}'
  AND ($3::text IS NULL
       OR to_tsvector('simple', title || ' ' || coalesce(summary, '') || ' ' || array_to_string(keywords, ' '))
          @@ websearch_to_tsquery('simple', $3))
  AND ($4::float8[] IS NULL OR (cardinality(extent_bbox) = 4 AND ST_Intersects({extent}, {bbox})))
  AND ($5::timestamptz IS NULL OR updated_at >= $5)
  AND ($6::timestamptz IS NULL OR created_at <= $6)
{page}
