//! Rows a load keeps aside (`docs/decisions.md`, Ingest report and
//! quarantine): a staging table next to the layer's, filled as the reader
//! finds them and by the geometry repair after the COPY, then moved to the
//! `quarantine` schema as the table of the era the load begins.
use catalog_shared::ingest_report::{Example, IngestReport, QUARANTINE_SCHEMA, Reason};
use serde_json::Value;
use uuid::Uuid;

use crate::{
    columns::quote,
    context::{JobContext, JobError},
    plan::{FieldPlan, GeomTarget},
    reader::{QuarantinedRow, postgis_type_name},
};

/// The quarantine staging table of a layer's staging table.
pub fn staging_of(staging: &str) -> String {
    format!("{staging}_q")
}

/// What the quarantine table of a dataset's era is called.
pub fn era_table(dataset_id: Uuid, era: i32) -> String {
    format!("q{era}_{}", dataset_id.simple())
}

pub async fn create(ctx: &JobContext, staging: &str) -> Result<(), JobError> {
    let table = format!("data.{}", quote(&staging_of(staging)));
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "DROP TABLE IF EXISTS {table};
         CREATE TABLE {table} (source_row bigint NOT NULL, fid bigint, reason text NOT NULL, field text, value text,
                               message text NOT NULL, geometry jsonb, properties jsonb NOT NULL)"
    )))
    .execute(&ctx.deps.pool)
    .await?;
    Ok(())
}

/// Stores rows the reader kept aside.
pub async fn keep(ctx: &JobContext, staging: &str, rows: Vec<QuarantinedRow>) -> Result<(), JobError> {
    let sql = format!(
        "INSERT INTO data.{} (source_row, fid, reason, field, value, message, geometry, properties)
         SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[],
                              $7::jsonb[], $8::jsonb[])",
        quote(&staging_of(staging))
    );
    let mut columns = (
        Vec::with_capacity(rows.len()),
        Vec::with_capacity(rows.len()),
        Vec::with_capacity(rows.len()),
        Vec::with_capacity(rows.len()),
        Vec::with_capacity(rows.len()),
        Vec::with_capacity(rows.len()),
        Vec::with_capacity(rows.len()),
        Vec::with_capacity(rows.len()),
    );
    for row in rows {
        columns.0.push(row.source_row);
        columns.1.push(row.fid);
        columns.2.push(row.reason.as_str());
        columns.3.push(row.field.map(|t| without_nul(&t)));
        columns.4.push(row.value.map(|t| without_nul(&t)));
        columns.5.push(without_nul(&row.message));
        columns.6.push(row.geometry);
        columns.7.push(Value::Object(row.properties));
    }
    sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(columns.0)
        .bind(columns.1)
        .bind(columns.2)
        .bind(columns.3)
        .bind(columns.4)
        .bind(columns.5)
        .bind(columns.6)
        .bind(columns.7)
        .execute(&ctx.deps.pool)
        .await?;
    Ok(())
}

/// PostgreSQL text holds no NUL; a value read with one says so in words.
fn without_nul(text: &str) -> String {
    text.replace('\0', "\\0")
}

/// An invalid geometry `repair_geometries.sql` found, among the first of
/// its outcome, and how many had that outcome.
#[derive(sqlx::FromRow)]
struct InvalidRow {
    gid: i64,
    why: String,
    x: Option<f64>,
    y: Option<f64>,
    kept_aside: bool,
    total: i64,
    /// The row's rings were closed as it was read, which counted it as
    /// repaired already.
    closed: bool,
    /// How many rows of this outcome had been counted so.
    total_closed: i64,
}

/// Repairs the invalid geometries of a loaded staging table and keeps
/// aside those ST_MakeValid cannot make valid, counting both in `report`;
/// answers how many rows left the table. Points have no validity to check
/// beyond their coordinates, which the reader checked.
pub async fn repair_geometries(
    ctx: &JobContext,
    staging: &str,
    layer: &str,
    target: GeomTarget,
    fields: &[FieldPlan],
    closed_rows: &[i64],
    report: &mut IngestReport,
) -> Result<u64, JobError> {
    let fix = match target {
        GeomTarget::Fixed(t) if matches!(postgis_type_name(t), "Point" | "MultiPoint") => return Ok(0),
        GeomTarget::Fixed(t) if postgis_type_name(t) == "MultiPolygon" => {
            "ST_Multi(ST_CollectionExtract(ST_MakeValid(s.geom, 'method=structure'), 3))"
        }
        GeomTarget::Fixed(t) if postgis_type_name(t) == "MultiLineString" => {
            "ST_Multi(ST_CollectionExtract(ST_MakeValid(s.geom), 2))"
        }
        _ => "ST_MakeValid(s.geom)",
    };
    // jsonb_build_object takes at most 100 arguments: 50 columns a call.
    let properties: Vec<String> = fields
        .chunks(50)
        .map(|chunk| {
            let pairs: Vec<String> = chunk
                .iter()
                .map(|f| {
                    format!(
                        "{}, m.{}",
                        catalog_shared::db::quote_literal(&f.original),
                        quote(&f.name)
                    )
                })
                .collect();
            format!("jsonb_build_object({})", pairs.join(", "))
        })
        .collect();
    let properties = if properties.is_empty() {
        "'{}'::jsonb".to_string()
    } else {
        properties.join(" || ")
    };
    let sql = include_str!("repair_geometries.sql")
        .replace("{table}", &quote(staging))
        .replace("{quarantine}", &quote(&staging_of(staging)))
        .replace("{fix}", fix)
        .replace("{properties}", &properties);
    let shown: Vec<InvalidRow> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(closed_rows)
        .fetch_all(&ctx.deps.pool)
        .await?;
    let mut moved = 0;
    for kept_aside in [true, false] {
        let reason = if kept_aside {
            Reason::InvalidGeometry
        } else {
            Reason::RepairedGeometry
        };
        let rows: Vec<&InvalidRow> = shown.iter().filter(|r| r.kept_aside == kept_aside).collect();
        let total = rows.first().map_or(0, |r| r.total as u64);
        // A row counts once: one the reader counted as repaired (its rings
        // closed) stays so when PostGIS repairs it too, and is counted
        // again only as quarantined, no longer as repaired.
        let closed = rows.first().map_or(0, |r| r.total_closed as u64);
        if kept_aside {
            report.uncount_repaired(closed, rows.iter().filter(|r| r.closed).map(|r| r.gid as u64));
        }
        let counted_before = if kept_aside { 0 } else { closed };
        for InvalidRow { gid, why, x, y, .. } in rows.iter().copied().filter(|r| kept_aside || !r.closed) {
            let place = match (x, y) {
                (Some(x), Some(y)) => format!("({x:?}, {y:?})"),
                _ => "an unknown place".into(),
            };
            let message = if kept_aside {
                format!("{why} at {place}; ST_MakeValid made nothing of its kind of it")
            } else {
                format!("{why} at {place}; repaired with ST_MakeValid")
            };
            report.count(Example {
                reason,
                layer: layer.to_string(),
                row: Some(*gid as u64),
                fid: None,
                field: None,
                value: Some(place),
                message,
            });
        }
        // Past the rows shown, the rest are counted only.
        let shown_closed = rows.iter().filter(|r| r.closed).count() as u64;
        let to_count = total - counted_before;
        let shown_here = if kept_aside {
            rows.len() as u64
        } else {
            rows.len() as u64 - shown_closed
        };
        for _ in shown_here..to_count {
            report.count_only(reason);
        }
        if kept_aside {
            moved = total;
        }
    }
    Ok(moved)
}

/// Moves a published layer's quarantine table into the `quarantine`
/// schema as its era's, or drops it when it is empty; records the count
/// on the era and the dataset. Runs in the publishing transaction.
pub async fn adopt(
    tx: &mut sqlx::PgConnection,
    staging: &str,
    dataset_id: Uuid,
    quarantined: u64,
) -> Result<(), JobError> {
    let table = staging_of(staging);
    let era = catalog_shared::history::current_era(tx, dataset_id).await?;
    if quarantined == 0 {
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "DROP TABLE IF EXISTS data.{}",
            quote(&table)
        )))
        .execute(&mut *tx)
        .await?;
    } else {
        let kept = era_table(dataset_id, era);
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
            "ALTER TABLE data.{} SET SCHEMA {QUARANTINE_SCHEMA}; ALTER TABLE {QUARANTINE_SCHEMA}.{} RENAME TO {}",
            quote(&table),
            quote(&table),
            quote(&kept)
        )))
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "UPDATE dataset_eras SET quarantine_table = $3, quarantined_count = $4 WHERE dataset_id = $1 AND era = $2",
        )
        .bind(dataset_id)
        .bind(era)
        .bind(&kept)
        .bind(quarantined as i64)
        .execute(&mut *tx)
        .await?;
    }
    sqlx::query("UPDATE datasets SET quarantined_count = $2 WHERE id = $1")
        .bind(dataset_id)
        .bind(quarantined as i64)
        .execute(&mut *tx)
        .await?;
    Ok(())
}
