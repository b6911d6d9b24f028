-- The columns of table $2 in schema $1, in order, with their exact types.
SELECT a.attname::text AS name, format_type(a.atttypid, a.atttypmod) AS pg_type, a.attnotnull AS not_null
FROM pg_attribute a
WHERE a.attrelid = format('%I.%I', $1::text, $2::text)::regclass AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attnum
