//! A vector dataset's history, as both processes keep it: workers make a
//! version with each new table (load, reupload, restore), the API with
//! each edit. A version lives in an era, the table a load, reupload or
//! restore made; edits change it in place and record each changed row
//! before and after, so a version costs its changed rows. An era's table,
//! once replaced, is kept as it was at the era's end in the `history`
//! schema (`docs/decisions.md`, Editing and history).
use sqlx::PgConnection;
use uuid::Uuid;

use crate::{
    db::{quote_ident, quote_literal},
    ingest_report::QUARANTINE_SCHEMA,
    text_enum::text_enum,
};

text_enum! {
    /// What made a version (`dataset_versions.kind`).
    #[derive(utoipa::ToSchema)]
    pub enum VersionKind {
        Load = "load",
        Reupload = "reupload",
        Edit = "edit",
        Restore = "restore",
    }
}

/// The schema ended eras' tables are kept in.
pub const SCHEMA: &str = "history";

/// What an ended era's table is called in `SCHEMA`.
pub fn era_table(dataset_id: Uuid, era: i32) -> String {
    format!("e{era}_{}", dataset_id.simple())
}

/// A row of a dataset table as JSON, exactly: every column as `to_jsonb`
/// gives it, the geometry as hex EWKB (its JSON cast would round it), but
/// not the tiles' first zoom (the service's, not the data's: a restore
/// ranks its rows anew). `jsonb_populate_record` reads it back to the same
/// row.
pub fn row_json(alias: &str, geometry_column: &str) -> String {
    let geometry = quote_ident(geometry_column);
    let key = quote_literal(geometry_column);
    let first_zoom = quote_literal(crate::generalize::FIRST_ZOOM_COLUMN);
    format!(
        "((to_jsonb({alias}) - {key} - {first_zoom}) || jsonb_build_object({key}, encode(ST_AsEWKB({alias}.{geometry}), 'hex')))"
    )
}

/// The first version of a dataset just published (its row written), a
/// load, in era 1.
pub async fn record_load(tx: &mut PgConnection, dataset_id: Uuid, actor: Option<Uuid>) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO dataset_versions (dataset_id, version, kind, era, created_by, feature_count, extent_bbox)
         SELECT id, 1, 'load', 1, $2, coalesce(feature_count, 0), extent_bbox FROM datasets WHERE id = $1",
    )
    .bind(dataset_id)
    .bind(actor)
    .execute(&mut *tx)
    .await?;
    sqlx::query("INSERT INTO dataset_eras (dataset_id, era) VALUES ($1, 1)")
        .bind(dataset_id)
        .execute(&mut *tx)
        .await?;
    Ok(())
}

/// The era of the dataset's current version.
pub async fn current_era(tx: &mut PgConnection, dataset_id: Uuid) -> Result<i32, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT v.era FROM datasets d JOIN dataset_versions v ON v.dataset_id = d.id AND v.version = d.version
         WHERE d.id = $1",
    )
    .bind(dataset_id)
    .fetch_one(tx)
    .await
}

/// Ends the live era: the dataset's table (`data.<table>`) moves to
/// `SCHEMA` as it is, its indexes and key sequence renamed after it so
/// that the next era's keep their names, and the era keeps the dataset
/// row's description of it. Call under the dataset row's lock, before its
/// new table takes the name.
pub async fn retire_table(tx: &mut PgConnection, dataset_id: Uuid, table: &str) -> Result<(), sqlx::Error> {
    let era = current_era(tx, dataset_id).await?;
    let kept = era_table(dataset_id, era);
    let qualified = format!("data.{}", quote_ident(table));
    let dependents: Vec<(String, String)> = sqlx::query_as(
        "SELECT c.relname::text, c.relkind::text FROM pg_class c
         WHERE c.relkind IN ('i', 'S')
           AND (c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid = $1::regclass)
                OR c.oid IN (SELECT objid FROM pg_depend WHERE refobjid = $1::regclass
                             AND classid = 'pg_class'::regclass AND deptype IN ('a', 'i')))
         ORDER BY c.relname",
    )
    .bind(&qualified)
    .fetch_all(&mut *tx)
    .await?;
    for (i, (name, relkind)) in dependents.iter().enumerate() {
        let what = if relkind == "S" { "SEQUENCE" } else { "INDEX" };
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "ALTER {what} data.{} RENAME TO {}",
            quote_ident(name),
            quote_ident(&format!("{kept}_{i}"))
        )))
        .execute(&mut *tx)
        .await?;
    }
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "ALTER TABLE {qualified} SET SCHEMA {SCHEMA}; ALTER TABLE {SCHEMA}.{} RENAME TO {}",
        quote_ident(table),
        quote_ident(&kept)
    )))
    .execute(&mut *tx)
    .await?;
    sqlx::query(
        "UPDATE dataset_eras e SET table_name = $3, retired_at = now(),
                shape = (SELECT jsonb_build_object(
                    'geometry_type', d.geometry_type, 'source_srid', d.source_srid,
                    'column_info', d.column_info, 'sample_values', d.sample_values,
                    'geometry_info', d.geometry_info, 'temporal_column', d.temporal_column,
                    'source_format', d.source_format, 'source_filename', d.source_filename,
                    'source_layer', d.source_layer)
                  FROM datasets d WHERE d.id = e.dataset_id)
         WHERE e.dataset_id = $1 AND e.era = $2",
    )
    .bind(dataset_id)
    .bind(era)
    .bind(&kept)
    .execute(&mut *tx)
    .await?;
    Ok(())
}

/// A new version that starts an era (a reupload or a restore, whose new
/// table is the dataset's now); answers its number.
pub async fn begin_era(
    tx: &mut PgConnection,
    dataset_id: Uuid,
    kind: VersionKind,
    actor: Option<Uuid>,
    restored_from: Option<i32>,
) -> Result<i32, sqlx::Error> {
    let version: i32 = sqlx::query_scalar("UPDATE datasets SET version = version + 1 WHERE id = $1 RETURNING version")
        .bind(dataset_id)
        .fetch_one(&mut *tx)
        .await?;
    sqlx::query(
        "INSERT INTO dataset_versions (dataset_id, version, kind, era, created_by, restored_from, feature_count, extent_bbox)
         SELECT $1, $2, $3, $2, $4, $5, coalesce(feature_count, 0), extent_bbox FROM datasets WHERE id = $1",
    )
    .bind(dataset_id)
    .bind(version)
    .bind(kind)
    .bind(actor)
    .bind(restored_from)
    .execute(&mut *tx)
    .await?;
    sqlx::query("INSERT INTO dataset_eras (dataset_id, era) VALUES ($1, $2)")
        .bind(dataset_id)
        .bind(version)
        .execute(&mut *tx)
        .await?;
    Ok(version)
}

/// Where a version's rows are: its era and that era's table (qualified),
/// or `None` when the version is not kept.
pub async fn version_source(
    tx: &mut PgConnection,
    dataset_id: Uuid,
    version: i32,
) -> Result<Option<(i32, String)>, sqlx::Error> {
    let found: Option<(i32, Option<String>, String)> = sqlx::query_as(
        "SELECT v.era, e.table_name, d.table_name FROM dataset_versions v
         JOIN dataset_eras e ON e.dataset_id = v.dataset_id AND e.era = v.era
         JOIN datasets d ON d.id = v.dataset_id
         WHERE v.dataset_id = $1 AND v.version = $2",
    )
    .bind(dataset_id)
    .bind(version)
    .fetch_optional(&mut *tx)
    .await?;
    Ok(found.map(|(era, kept, live)| match kept {
        Some(kept) => (era, format!("{SCHEMA}.{}", quote_ident(&kept))),
        None => (era, format!("data.{}", quote_ident(&live))),
    }))
}

/// The rows of `version` as a query: its era's table, each row changed by
/// a later version of the era taken as it was before the first such change
/// (left out if it did not exist then). Values are inlined (numbers and a
/// uuid), so the query can feed `CREATE TABLE AS`.
pub fn state_sql(dataset_id: Uuid, version: i32, era: i32, source: &str) -> String {
    format!(
        "WITH later AS (
            SELECT DISTINCT ON (c.gid) c.gid, c.before FROM feature_changes c
            JOIN dataset_versions v ON v.dataset_id = c.dataset_id AND v.version = c.version
            WHERE c.dataset_id = '{dataset_id}' AND v.era = {era} AND c.version > {version}
            ORDER BY c.gid, c.id)
         SELECT s.* FROM {source} s WHERE NOT EXISTS (SELECT 1 FROM later l WHERE l.gid = s.gid)
         UNION ALL
         SELECT r.* FROM later l CROSS JOIN LATERAL jsonb_populate_record(NULL::{source}, l.before) r
         WHERE l.before IS NOT NULL"
    )
}

/// A version for a column added to the live era's table, naming it.
pub async fn record_added_column(
    tx: &mut PgConnection,
    dataset_id: Uuid,
    actor: Option<Uuid>,
    column: &str,
) -> Result<i32, sqlx::Error> {
    let version = record_edit(tx, dataset_id, actor, 0, &[]).await?;
    sqlx::query("UPDATE dataset_versions SET added_column = $3 WHERE dataset_id = $1 AND version = $2")
        .bind(dataset_id)
        .bind(version)
        .bind(column)
        .execute(&mut *tx)
        .await?;
    Ok(version)
}

/// The columns later versions of `version`'s era added: the era's table
/// has them, the version did not.
pub async fn columns_added_after(
    tx: &mut PgConnection,
    dataset_id: Uuid,
    era: i32,
    version: i32,
) -> Result<Vec<String>, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT added_column FROM dataset_versions
         WHERE dataset_id = $1 AND era = $2 AND version > $3 AND added_column IS NOT NULL ORDER BY version",
    )
    .bind(dataset_id)
    .bind(era)
    .bind(version)
    .fetch_all(&mut *tx)
    .await
}

/// Drops the kept tables of a dataset's ended eras and every era's
/// quarantine (before its record goes, which takes its versions and
/// changes with it).
pub async fn drop_kept_tables(tx: &mut PgConnection, dataset_id: Uuid) -> Result<(), sqlx::Error> {
    let kept: Vec<(Option<String>, Option<String>)> = sqlx::query_as(
        "SELECT table_name, quarantine_table FROM dataset_eras
         WHERE dataset_id = $1 AND (table_name IS NOT NULL OR quarantine_table IS NOT NULL)",
    )
    .bind(dataset_id)
    .fetch_all(&mut *tx)
    .await?;
    for (table, quarantine) in kept {
        drop_era_tables(tx, table.as_deref(), quarantine.as_deref()).await?;
    }
    Ok(())
}

async fn drop_era_tables(
    tx: &mut PgConnection,
    table: Option<&str>,
    quarantine: Option<&str>,
) -> Result<(), sqlx::Error> {
    let qualified = table
        .map(|t| format!("{SCHEMA}.{}", quote_ident(t)))
        .into_iter()
        .chain(quarantine.map(|q| format!("{QUARANTINE_SCHEMA}.{}", quote_ident(q))));
    for table in qualified {
        sqlx::query(sqlx::AssertSqlSafe(format!("DROP TABLE IF EXISTS {table}")))
            .execute(&mut *tx)
            .await?;
    }
    Ok(())
}

/// Forgets versions older than `retention` (never a dataset's current
/// one), their changes, and the kept tables no remaining version lives
/// in; answers how many versions went.
pub async fn forget_old_versions(tx: &mut PgConnection, retention: std::time::Duration) -> Result<u64, sqlx::Error> {
    let forgotten = sqlx::query(
        "DELETE FROM dataset_versions v USING datasets d
         WHERE d.id = v.dataset_id AND v.version < d.version
           AND v.created_at < now() - make_interval(secs => $1)",
    )
    .bind(retention.as_secs_f64())
    .execute(&mut *tx)
    .await?
    .rows_affected();
    let ended: Vec<(String, Option<String>)> = sqlx::query_as(
        "DELETE FROM dataset_eras e
         WHERE e.table_name IS NOT NULL
           AND NOT EXISTS (SELECT 1 FROM dataset_versions v WHERE v.dataset_id = e.dataset_id AND v.era = e.era)
         RETURNING e.table_name, e.quarantine_table",
    )
    .fetch_all(&mut *tx)
    .await?;
    for (table, quarantine) in ended {
        drop_era_tables(tx, Some(&table), quarantine.as_deref()).await?;
    }
    Ok(forgotten)
}

/// A row's entity tag: a digest of its exact JSON (`row_json`), so any
/// change of any value changes it.
pub fn row_etag(alias: &str, geometry_column: &str) -> String {
    format!("md5({}::text)", row_json(alias, geometry_column))
}

/// An edit's version, under the dataset row's lock until the transaction
/// ends (versions are numbered in commit order): the data version rolls
/// (tiles and counts are cached under it), the feature count moves by
/// `added`, and each changed row is recorded before and after. Call it
/// once the extent is kept: the version keeps it.
pub async fn record_edit(
    tx: &mut PgConnection,
    dataset_id: Uuid,
    actor: Option<Uuid>,
    added: i64,
    changes: &[(i64, Option<serde_json::Value>, Option<serde_json::Value>)],
) -> Result<i32, sqlx::Error> {
    let version: i32 = sqlx::query_scalar(
        "UPDATE datasets SET version = version + 1, data_version = data_version + 1,
                feature_count = coalesce(feature_count, 0) + $2, updated_at = now()
         WHERE id = $1 RETURNING version",
    )
    .bind(dataset_id)
    .bind(added)
    .fetch_one(&mut *tx)
    .await?;
    sqlx::query(
        "INSERT INTO dataset_versions (dataset_id, version, kind, era, created_by, feature_count, extent_bbox)
         SELECT $1, $2, 'edit',
                coalesce((SELECT era FROM dataset_versions WHERE dataset_id = $1 AND version = $2 - 1), $2),
                $3, coalesce(feature_count, 0), extent_bbox
         FROM datasets WHERE id = $1",
    )
    .bind(dataset_id)
    .bind(version)
    .bind(actor)
    .execute(&mut *tx)
    .await?;
    for (gid, before, after) in changes {
        sqlx::query(
            "INSERT INTO feature_changes (dataset_id, version, gid, before, after, changed_by)
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(dataset_id)
        .bind(version)
        .bind(gid)
        .bind(before)
        .bind(after)
        .bind(actor)
        .execute(&mut *tx)
        .await?;
    }
    Ok(version)
}
