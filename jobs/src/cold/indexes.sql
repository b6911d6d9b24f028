-- Indexes of table $2 in schema $1 that back no constraint, as statements.
SELECT pg_get_indexdef(i.indexrelid)
FROM pg_index i
WHERE i.indrelid = format('%I.%I', $1::text, $2::text)::regclass
  AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)
ORDER BY i.indexrelid
