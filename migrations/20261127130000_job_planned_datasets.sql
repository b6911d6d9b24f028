-- How many datasets a job means to publish, reserved against its owner's
-- dataset cap once its worker has read the source (a GeoPackage or a zip
-- may hold several layers); null until then, when the job counts as one.
ALTER TABLE jobs ADD COLUMN planned_datasets integer;
