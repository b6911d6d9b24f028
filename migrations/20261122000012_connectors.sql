-- Credentials connectors present to the providers they fetch from. The
-- secret part (token, password or header value) is sealed by the service.
CREATE TABLE connector_credentials (
    id uuid PRIMARY KEY,
    name text NOT NULL,
    owner_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    method text NOT NULL CHECK (method IN ('bearer', 'basic', 'header')),
    username text,
    header_name text,
    secret bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX connector_credentials_owner_idx ON connector_credentials (owner_id);
