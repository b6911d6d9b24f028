-- The single-column integer primary key of table $2 in schema $1, if it
-- has one: what a registered table's features are paged by.
SELECT a.attname::text
FROM pg_index i
JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
WHERE i.indrelid = format('%I.%I', $1::text, $2::text)::regclass
  AND i.indisprimary
  AND i.indnatts = 1
  AND format_type(a.atttypid, a.atttypmod) IN ('integer', 'bigint', 'smallint')
