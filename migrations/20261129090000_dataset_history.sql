-- History of a vector dataset's data (docs/decisions.md, Editing and
-- history). Every load, reupload, edit and restore makes a version. A
-- version lives in an era: the table a load, reupload or restore made.
-- Edits change the era's table in place and record each changed row
-- before and after (`feature_changes`), so a version costs its changed
-- rows; a table replaced by a reupload or restore is kept, as it was at
-- the end of its era, in the `history` schema.
CREATE SCHEMA IF NOT EXISTS history;

ALTER TABLE datasets ADD COLUMN version integer NOT NULL DEFAULT 1;

CREATE TABLE dataset_versions (
    dataset_id uuid NOT NULL REFERENCES datasets (id) ON DELETE CASCADE,
    version integer NOT NULL CHECK (version > 0),
    kind text NOT NULL CHECK (kind IN ('load', 'reupload', 'edit', 'restore')),
    -- The version that made the table this version's rows are in.
    era integer NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    created_by uuid REFERENCES users (id) ON DELETE SET NULL,
    -- A restore's source version.
    restored_from integer,
    -- The dataset's count and extent as this version left them, which a
    -- restore puts back without counting again.
    feature_count bigint NOT NULL DEFAULT 0,
    extent_bbox double precision[],
    PRIMARY KEY (dataset_id, version),
    CHECK (era <= version)
);

CREATE TABLE dataset_eras (
    dataset_id uuid NOT NULL REFERENCES datasets (id) ON DELETE CASCADE,
    era integer NOT NULL,
    -- In schema `history` once the era ended; null while its table is the
    -- dataset's own.
    table_name text,
    -- The dataset row's description of the data at the era's end
    -- (columns, geometry type, ...), which a restore puts back.
    shape jsonb,
    retired_at timestamptz,
    PRIMARY KEY (dataset_id, era)
);

CREATE TABLE feature_changes (
    id bigserial PRIMARY KEY,
    dataset_id uuid NOT NULL,
    version integer NOT NULL,
    gid bigint NOT NULL,
    -- The whole row (`to_jsonb`), null when the feature did not exist.
    before jsonb,
    after jsonb,
    changed_by uuid REFERENCES users (id) ON DELETE SET NULL,
    changed_at timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (dataset_id, version) REFERENCES dataset_versions (dataset_id, version) ON DELETE CASCADE,
    CHECK (before IS NOT NULL OR after IS NOT NULL)
);
CREATE INDEX feature_changes_by_version ON feature_changes (dataset_id, version, id);

-- Every ingested vector dataset so far is version 1, a load.
INSERT INTO dataset_versions (dataset_id, version, kind, era, created_at, created_by, feature_count, extent_bbox)
SELECT id, 1, 'load', 1, created_at, created_by, coalesce(feature_count, 0), extent_bbox
FROM datasets WHERE kind = 'vector' AND NOT is_registered;
INSERT INTO dataset_eras (dataset_id, era)
SELECT id, 1 FROM datasets WHERE kind = 'vector' AND NOT is_registered;

-- Kept versions count in their owner's storage: the tables of ended eras
-- and the recorded changes.
CREATE OR REPLACE FUNCTION catalog_usage(owner uuid, OUT bytes_used bigint, OUT dataset_count bigint)
LANGUAGE sql STABLE AS $$
    SELECT
        coalesce((SELECT sum(coalesce(pg_total_relation_size(to_regclass(format('%I.%I', d.schema_name, d.table_name))), 0)
                             + d.stored_bytes)
                  FROM datasets d WHERE d.created_by = owner AND NOT d.is_registered), 0)::bigint
        + coalesce((SELECT sum(coalesce(pg_total_relation_size(to_regclass(format('history.%I', e.table_name))), 0))
                    FROM dataset_eras e JOIN datasets d ON d.id = e.dataset_id
                    WHERE d.created_by = owner AND e.table_name IS NOT NULL), 0)::bigint
        + coalesce((SELECT sum(pg_column_size(c.before) + pg_column_size(c.after) + 64)
                    FROM feature_changes c JOIN datasets d ON d.id = c.dataset_id
                    WHERE d.created_by = owner), 0)::bigint
        + coalesce((SELECT sum(j.upload_bytes) FROM jobs j
                    WHERE j.created_by = owner AND j.status IN ('queued', 'running')), 0)::bigint,
        (SELECT count(*) FROM datasets d WHERE d.created_by = owner)
$$;
