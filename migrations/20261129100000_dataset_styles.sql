-- The styles a GeoPackage brought (its `layer_styles` rows, as QGIS
-- writes them: QML and SLD), kept as they came, and the MapLibre paint the
-- default one became, which map layers start from (docs/decisions.md,
-- Styles kept).
CREATE TABLE dataset_styles (
    id uuid PRIMARY KEY,
    dataset_id uuid NOT NULL REFERENCES datasets (id) ON DELETE CASCADE,
    name text NOT NULL,
    description text,
    is_default boolean NOT NULL DEFAULT false,
    qml text,
    sld text,
    created_at timestamptz NOT NULL DEFAULT now(),
    CHECK (qml IS NOT NULL OR sld IS NOT NULL)
);
CREATE INDEX dataset_styles_by_dataset ON dataset_styles (dataset_id);

ALTER TABLE datasets ADD COLUMN default_paint jsonb;
