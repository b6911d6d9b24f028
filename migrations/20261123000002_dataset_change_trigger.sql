-- Every change to a dataset record is announced on `dataset_changed` (the
-- channel every API process's dataset cache follows) by the database
-- itself, so no code path that writes a dataset can forget to: publishes
-- and replacements by workers, edits, visibility changes, features added
-- through the API, deletes. NOTIFY is sent at commit, one per id.
CREATE FUNCTION announce_dataset_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('dataset_changed', coalesce(NEW.id, OLD.id)::text);
    RETURN NULL;
END
$$;

CREATE TRIGGER datasets_announce_change
    AFTER INSERT OR UPDATE OR DELETE ON datasets
    FOR EACH ROW EXECUTE FUNCTION announce_dataset_change();
