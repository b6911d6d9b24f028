-- What a tile of a dataset's complete zoom may hold, as its generalization
-- counted it: an edit that puts more in one raises the complete zoom.
-- Null for layers ranked before (their complete zoom stays as loaded).
ALTER TABLE datasets ADD COLUMN tile_budget integer;
