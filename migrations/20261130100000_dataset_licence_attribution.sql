-- What other catalogs and map credits read of a dataset: its licence (an
-- SPDX identifier, a URL or words) and the attribution maps show with it.
ALTER TABLE datasets ADD COLUMN license text, ADD COLUMN attribution text;
