-- OGC API Records: metadata records beside the record every dataset has,
-- and contacts attached to either kind.
CREATE TABLE records (
    id uuid PRIMARY KEY,
    record_type text NOT NULL DEFAULT 'metadata',
    title text NOT NULL,
    description text,
    keywords text[] NOT NULL DEFAULT '{}',
    extent_bbox double precision[],
    properties jsonb NOT NULL DEFAULT '{}',
    created_by uuid REFERENCES users (id) ON DELETE SET NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE record_contacts (
    id uuid PRIMARY KEY,
    record_id uuid NOT NULL,
    name text NOT NULL,
    organization text,
    email text,
    role text,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX record_contacts_record_idx ON record_contacts (record_id);
