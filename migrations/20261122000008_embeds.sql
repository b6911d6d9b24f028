-- Embed tokens: capabilities a map's owner hands to a web page so it can
-- show the map and read its layers' data with no user credential.
CREATE TABLE map_embed_tokens (
    id uuid PRIMARY KEY,
    map_id uuid NOT NULL REFERENCES maps (id) ON DELETE CASCADE,
    token_hash bytea NOT NULL UNIQUE,
    label text,
    created_by uuid REFERENCES users (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz,
    revoked_at timestamptz
);
CREATE INDEX map_embed_tokens_map_idx ON map_embed_tokens (map_id);

-- Publication status of a dataset: published (ready) or withdrawn.
ALTER TABLE datasets ADD CONSTRAINT datasets_status_check CHECK (status IN ('ready', 'unpublished'));
