-- The identity column of table $2 in schema $1, its sequence's name, and
-- the next value it would hand out.
SELECT a.attname::text AS column,
       s.relname::text AS sequence,
       coalesce(pg_sequence_last_value(s.oid) + 1, ps.seqstart)::bigint AS next
FROM pg_attribute a
JOIN pg_class s ON s.oid = pg_get_serial_sequence(format('%I.%I', $1::text, $2::text), a.attname)::regclass
JOIN pg_sequence ps ON ps.seqrelid = s.oid
WHERE a.attrelid = format('%I.%I', $1::text, $2::text)::regclass AND a.attidentity <> ''
LIMIT 1
