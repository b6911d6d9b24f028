-- The SQL sandbox now logs in as catalog_sandbox itself (its own pool), so
-- a statement has no other role to switch to. The role may log in, is a
-- member of nothing, and starts every session read-only with a timeout.
-- Grants of SELECT on dataset tables are made by the API as datasets
-- become readable; which of them a caller may read is checked per query.
DO $$
DECLARE
    membership record;
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'catalog_sandbox')
       AND EXISTS (SELECT 1 FROM pg_roles WHERE rolname = current_user AND (rolsuper OR rolcreaterole)) THEN
        ALTER ROLE catalog_sandbox LOGIN NOINHERIT NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS
            CONNECTION LIMIT 64;
        ALTER ROLE catalog_sandbox SET default_transaction_read_only = on;
        ALTER ROLE catalog_sandbox SET statement_timeout = '5s';
        ALTER ROLE catalog_sandbox SET idle_in_transaction_session_timeout = '10s';
        ALTER ROLE catalog_sandbox SET search_path = data, public;
        FOR membership IN
            SELECT r.rolname FROM pg_auth_members m JOIN pg_roles r ON r.oid = m.roleid
             WHERE m.member = (SELECT oid FROM pg_roles WHERE rolname = 'catalog_sandbox')
        LOOP
            EXECUTE format('REVOKE %I FROM catalog_sandbox', membership.rolname);
        END LOOP;
    END IF;
END
$$;
