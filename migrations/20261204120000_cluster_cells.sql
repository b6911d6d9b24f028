-- Cluster tiles below a layer's complete zoom (`docs/decisions.md`,
-- Generalized tiles): for each zoom below it, every non-empty cell of the
-- grid of 2^(zoom + 3) cells a side over the world, with the count of the
-- features whose centre is in it, the sum of those centres (EPSG:3857
-- metres) and the key of its only member. Written with the table they
-- were counted from, changed by each edit in its transaction.
CREATE TABLE cluster_cells (
    dataset_id uuid NOT NULL REFERENCES datasets (id) ON DELETE CASCADE,
    zoom smallint NOT NULL CHECK (zoom BETWEEN 0 AND 16),
    cell_column integer NOT NULL,
    cell_row integer NOT NULL,
    features bigint NOT NULL,
    sum_x double precision NOT NULL,
    sum_y double precision NOT NULL,
    lone bigint,
    PRIMARY KEY (dataset_id, zoom, cell_column, cell_row)
);

-- The zooms counted are those below `cluster_cells_zoom` (at most the
-- complete zoom: counting stops where cells would outnumber features).
ALTER TABLE datasets ADD COLUMN cluster_cells_zoom smallint CHECK (cluster_cells_zoom BETWEEN 0 AND 17);

-- Layers ranked before their cells were counted draw as ungeneralized
-- ones (bounded, not thinned) until they are loaded again.
UPDATE datasets SET complete_zoom = NULL, thinning_cell_bits = NULL WHERE complete_zoom > 0;
