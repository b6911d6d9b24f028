-- The built-in basemap (Natural Earth 1:50m countries), in Web Mercator,
-- in a schema of its own (no user table, so never offered for
-- registration). The API fills these tables from the data it embeds
-- whenever that data differs from what `basemap.loaded` records
-- (api/src/basemap/data.rs).
CREATE SCHEMA basemap;

CREATE TABLE basemap.countries (
  id integer PRIMARY KEY,
  name text NOT NULL,
  geom geometry(MultiPolygon, 3857) NOT NULL,
  -- Where the name goes: the centre of the largest part's widest circle.
  label geometry(Point, 3857) NOT NULL,
  -- The zoom from which the name shows: big countries first.
  label_min_zoom integer NOT NULL
);
CREATE INDEX countries_geom ON basemap.countries USING gist (geom);

-- Borders between countries (coasts are the edges of `countries`).
CREATE TABLE basemap.borders (geom geometry(MultiLineString, 3857) NOT NULL);
CREATE INDEX borders_geom ON basemap.borders USING gist (geom);

-- The digest of the data loaded, one row.
CREATE TABLE basemap.loaded (
  only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
  digest text NOT NULL
);

-- New maps sit on the built-in basemap (relative, so a new PUBLIC_URL
-- keeps it); existing maps keep what they have.
ALTER TABLE maps ALTER COLUMN basemap_style SET DEFAULT '/api/basemap/style.json';
