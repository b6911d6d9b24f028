-- Saved maps: layered views over datasets, exported as MapLibre styles.
CREATE TABLE maps (
    id uuid PRIMARY KEY,
    name text NOT NULL,
    description text,
    notes text,
    center_lng double precision,
    center_lat double precision,
    zoom double precision,
    bearing double precision NOT NULL DEFAULT 0,
    pitch double precision NOT NULL DEFAULT 0,
    basemap_style text NOT NULL DEFAULT '',
    show_basemap_labels boolean NOT NULL DEFAULT true,
    basemap_config jsonb NOT NULL DEFAULT '{}',
    terrain_config jsonb,
    visibility text NOT NULL DEFAULT 'private' CHECK (visibility IN ('private', 'internal', 'public')),
    thumbnail_url text,
    og_image_url text,
    plugins text[] NOT NULL DEFAULT '{}',
    legend_title text,
    forked_from_id uuid REFERENCES maps (id) ON DELETE SET NULL,
    created_by uuid REFERENCES users (id) ON DELETE SET NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX maps_created_by_idx ON maps (created_by);

CREATE TABLE map_layers (
    id uuid PRIMARY KEY,
    map_id uuid NOT NULL REFERENCES maps (id) ON DELETE CASCADE,
    dataset_id uuid NOT NULL REFERENCES datasets (id) ON DELETE CASCADE,
    sort_order integer NOT NULL DEFAULT 0,
    visible boolean NOT NULL DEFAULT true,
    opacity double precision NOT NULL DEFAULT 1,
    paint jsonb NOT NULL DEFAULT '{}',
    layout jsonb NOT NULL DEFAULT '{}',
    display_name text,
    filter jsonb,
    label_config jsonb,
    popup_config jsonb,
    style_config jsonb,
    layer_type text NOT NULL DEFAULT 'vector_service',
    show_in_legend boolean NOT NULL DEFAULT true
);
CREATE INDEX map_layers_map_idx ON map_layers (map_id, sort_order);

CREATE TABLE map_shares (
    token text PRIMARY KEY,
    map_id uuid NOT NULL REFERENCES maps (id) ON DELETE CASCADE,
    created_by uuid REFERENCES users (id) ON DELETE SET NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    revoked_at timestamptz
);
CREATE INDEX map_shares_map_idx ON map_shares (map_id);
