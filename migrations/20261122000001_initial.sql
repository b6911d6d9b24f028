-- Catalog schema: accounts, datasets and the job records that track queued work.
-- Ingested dataset tables live in their own schema so they never mix with the catalog.
CREATE EXTENSION IF NOT EXISTS postgis;
CREATE SCHEMA IF NOT EXISTS data;

CREATE TABLE users (
    id uuid PRIMARY KEY,
    username text NOT NULL,
    email text,
    password_hash text,
    role text NOT NULL CHECK (role IN ('viewer', 'editor', 'admin')),
    status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'pending', 'suspended', 'deactivated')),
    is_active boolean NOT NULL DEFAULT true,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX users_username_key ON users (lower(username));
CREATE UNIQUE INDEX users_email_key ON users (lower(email)) WHERE email IS NOT NULL;

CREATE TABLE jobs (
    id uuid PRIMARY KEY,
    kind text NOT NULL,
    status text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
    step text,
    progress_done bigint,
    progress_total bigint,
    error jsonb,
    payload jsonb NOT NULL,
    dataset_id uuid,
    dataset_ids uuid[] NOT NULL DEFAULT '{}',
    attempts integer NOT NULL DEFAULT 0,
    queue_task_id text NOT NULL,
    created_by uuid REFERENCES users (id) ON DELETE SET NULL,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    started_at timestamptz,
    finished_at timestamptz,
    updated_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX jobs_created_by_idx ON jobs (created_by, created_at DESC);
CREATE INDEX jobs_status_idx ON jobs (status) WHERE status IN ('queued', 'running');

CREATE TABLE datasets (
    id uuid PRIMARY KEY,
    title text NOT NULL,
    summary text,
    schema_name text NOT NULL,
    table_name text NOT NULL,
    geometry_column text NOT NULL DEFAULT 'geom',
    key_column text NOT NULL DEFAULT 'gid',
    geometry_type text,
    srid integer NOT NULL DEFAULT 4326,
    source_srid integer,
    extent_bbox double precision[],
    feature_count bigint NOT NULL DEFAULT 0,
    column_info jsonb NOT NULL DEFAULT '[]',
    sample_values jsonb NOT NULL DEFAULT '{}',
    visibility text NOT NULL DEFAULT 'private' CHECK (visibility IN ('private', 'restricted', 'internal', 'public')),
    status text NOT NULL DEFAULT 'ready',
    publication_version integer NOT NULL DEFAULT 1,
    source_format text,
    source_filename text,
    source_layer text,
    is_registered boolean NOT NULL DEFAULT false,
    job_id uuid REFERENCES jobs (id) ON DELETE SET NULL,
    created_by uuid REFERENCES users (id) ON DELETE SET NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (schema_name, table_name)
);
-- A retried job never publishes the same source layer twice.
CREATE UNIQUE INDEX datasets_job_layer_key ON datasets (job_id, source_layer) WHERE job_id IS NOT NULL;
CREATE INDEX datasets_created_by_idx ON datasets (created_by);

CREATE TABLE refresh_tokens (
    id uuid PRIMARY KEY,
    user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    token_hash bytea NOT NULL UNIQUE,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    revoked_at timestamptz
);
CREATE INDEX refresh_tokens_user_idx ON refresh_tokens (user_id);
