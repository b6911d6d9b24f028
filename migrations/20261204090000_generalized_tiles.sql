-- Generalized tiles (`docs/decisions.md`, Generalized tiles): a loaded
-- layer's complete zoom (the first whose tiles hold every feature they
-- meet within the tile bounds; 17 when even zoom 16's do not) and the
-- cells a tile side below it (a power of two). Null: the layer is not
-- generalized (a registered table, or loaded before this version), and its
-- tiles hold at most the bound's count of features at every zoom.
ALTER TABLE datasets
    ADD COLUMN complete_zoom smallint CHECK (complete_zoom BETWEEN 0 AND 17),
    ADD COLUMN thinning_cell_bits smallint CHECK (thinning_cell_bits BETWEEN 3 AND 6);
