-- Identity and access: token revocation, API keys, refresh-token rotation
-- and per-dataset grants.
ALTER TABLE users
    ADD COLUMN token_version integer NOT NULL DEFAULT 0,
    ADD COLUMN auth_provider text NOT NULL DEFAULT 'local';

ALTER TABLE refresh_tokens
    ADD COLUMN rotated_at timestamptz;

CREATE TABLE api_keys (
    id uuid PRIMARY KEY,
    user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    key_hash bytea NOT NULL UNIQUE,
    key_prefix text NOT NULL,
    name text,
    scope text NOT NULL CHECK (scope IN ('full', 'read_only')),
    expires_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    created_by uuid REFERENCES users (id) ON DELETE SET NULL,
    revoked_at timestamptz,
    last_used_at timestamptz
);
CREATE INDEX api_keys_user_idx ON api_keys (user_id);

CREATE TABLE dataset_grants (
    dataset_id uuid NOT NULL REFERENCES datasets (id) ON DELETE CASCADE,
    user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    permission text NOT NULL CHECK (permission IN ('read', 'write')),
    granted_by uuid REFERENCES users (id) ON DELETE SET NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (dataset_id, user_id)
);
CREATE INDEX dataset_grants_user_idx ON dataset_grants (user_id);
