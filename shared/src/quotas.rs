//! Per-user quotas as both processes read them: the API admits requests
//! against them, and a job that finds several layers in its file reserves
//! a dataset for each before publishing any (`docs/decisions.md`, Quotas).
use sqlx::PgConnection;
use uuid::Uuid;

/// A user's caps (null: unlimited) and what counts against them.
#[derive(sqlx::FromRow)]
pub struct Standing {
    pub storage_cap: Option<i64>,
    pub count_cap: Option<i64>,
    pub bytes_used: i64,
    pub dataset_count: i64,
    /// Datasets unfinished jobs may still create.
    pub pending_datasets: i64,
}

/// The owner's standing, once every other check of the same owner's
/// quota has finished (a transaction-scoped lock, so what one admits
/// counts for the next); `None` when the owner is gone. `except`: a job
/// whose own reservation is being decided.
pub async fn standing(
    tx: &mut PgConnection,
    owner: Uuid,
    except: Option<Uuid>,
) -> Result<Option<Standing>, sqlx::Error> {
    sqlx::query("SELECT pg_advisory_xact_lock(hashtext('catalog_quota'), hashtext($1::text))")
        .bind(owner)
        .execute(&mut *tx)
        .await?;
    sqlx::query_as(include_str!("quotas/standing.sql"))
        .bind(owner)
        .bind(except)
        .fetch_optional(&mut *tx)
        .await
}

/// Why a quota refuses: the quota by name, its limit and the usage.
pub fn exceeded(quota: &str, limit: i64, usage: i64, unit: &str) -> String {
    format!(
        "the {quota} quota would be exceeded: limit {limit}, usage {usage} ({unit}); delete data or ask an admin to raise the quota"
    )
}
