-- Primary key, unique and check constraints of table $2 in schema $1.
SELECT c.conname::text AS name, pg_get_constraintdef(c.oid) AS definition
FROM pg_constraint c
WHERE c.conrelid = format('%I.%I', $1::text, $2::text)::regclass AND c.contype IN ('p', 'u', 'c')
ORDER BY c.contype DESC, c.conname
