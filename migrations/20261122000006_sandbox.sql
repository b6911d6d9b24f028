-- The SQL sandbox runs callers' queries under this role, which owns nothing
-- and is granted, inside each request's transaction only, SELECT on the
-- tables of the datasets that caller may see. Creating a role needs the
-- CREATEROLE privilege; without it the sandbox stays off (503).
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'catalog_sandbox') THEN
        IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = current_user AND (rolsuper OR rolcreaterole)) THEN
            CREATE ROLE catalog_sandbox NOLOGIN NOINHERIT;
        END IF;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'catalog_sandbox') THEN
        EXECUTE format('GRANT catalog_sandbox TO %I', current_user);
        GRANT USAGE ON SCHEMA data TO catalog_sandbox;
    END IF;
END
$$;
