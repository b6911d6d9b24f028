-- Catalog search: dataset keywords and saved searches.
ALTER TABLE datasets ADD COLUMN keywords text[] NOT NULL DEFAULT '{}';

CREATE TABLE saved_searches (
    id uuid PRIMARY KEY,
    user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name text NOT NULL,
    query jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX saved_searches_user_idx ON saved_searches (user_id);
