-- Geometries PostGIS finds invalid: those ST_MakeValid turns into a valid
-- geometry of their family are replaced by it (repaired, loaded); the rest
-- move to the layer's quarantine table. Answers how many of each there
-- were, and the first 100 of each, by key, with PostGIS's reason and place. Placeholders: {table} and {quarantine}
-- (staging tables in `data`), {fix} (the repair of `s.geom`), {properties}
-- (the row's attributes as jsonb, by the source's names, of `m`); $1 the
-- keys of rows whose rings the reader closed (already counted repaired).
WITH invalid AS MATERIALIZED (
    SELECT s.gid, d.reason AS why, ST_X(d.location) AS x, ST_Y(d.location) AS y, {fix} AS fixed
    FROM data.{table} s CROSS JOIN LATERAL ST_IsValidDetail(s.geom) AS d
    WHERE s.geom IS NOT NULL AND NOT d.valid
),
repaired AS (
    UPDATE data.{table} s SET geom = i.fixed
    FROM invalid i
    WHERE s.gid = i.gid AND i.fixed IS NOT NULL AND NOT ST_IsEmpty(i.fixed)
    RETURNING s.gid
),
moved AS (
    DELETE FROM data.{table} s
    USING invalid i
    WHERE s.gid = i.gid AND (i.fixed IS NULL OR ST_IsEmpty(i.fixed))
    RETURNING s.*
),
kept_aside AS (
    INSERT INTO data.{quarantine} (source_row, reason, value, message, geometry, properties)
    SELECT m.gid, 'invalid_geometry', format('(%s, %s)', i.x, i.y),
           format('%s at (%s, %s); ST_MakeValid made nothing of its kind of it', i.why, i.x, i.y),
           ST_AsGeoJSON(m.geom)::jsonb, {properties}
    FROM moved m JOIN invalid i USING (gid)
    RETURNING source_row
),
outcomes AS (
    SELECT gid, why, x, y, fixed IS NULL OR ST_IsEmpty(fixed) AS kept_aside, gid = ANY($1::bigint[]) AS closed
    FROM invalid
),
numbered AS (
    SELECT o.*, count(*) OVER (PARTITION BY kept_aside) AS total,
           count(*) FILTER (WHERE closed) OVER (PARTITION BY kept_aside) AS total_closed,
           row_number() OVER (PARTITION BY kept_aside ORDER BY closed, gid) AS n
    FROM outcomes o
)
SELECT gid, why, x, y, kept_aside, total, closed, total_closed FROM numbered WHERE n <= 100 ORDER BY gid
