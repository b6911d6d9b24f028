//! The basemap's data: Natural Earth's 1:50m countries, embedded in the
//! binary (`scripts/basemap_data.sh` makes the file) and loaded into
//! PostGIS when the database holds other data or none, so a new release
//! with new data replaces the old at its first start.
use std::{io::Read, sync::LazyLock};

use sha2::{Digest, Sha256};
use sqlx::PgPool;

const COUNTRIES_GZ: &[u8] = include_bytes!("countries-50m.geojson.gz");
/// Any number, the same in every API process, that keeps two processes
/// starting at once from loading the data twice.
const LOAD_LOCK: i64 = 0x0062_6173_656d_6170;

/// The digest of the data and of the SQL that loads and cuts it: a
/// tile's cache key and ETag change with either.
pub static DIGEST: LazyLock<[u8; 16]> = LazyLock::new(|| {
    let mut digest = Sha256::new();
    digest.update(COUNTRIES_GZ);
    for sql in [
        include_str!("load.sql"),
        include_str!("borders.sql"),
        include_str!("tile.sql"),
    ] {
        digest.update(sql);
    }
    digest.finalize()[..16].try_into().expect("16 of SHA-256's 32 bytes")
});

/// Loads the embedded countries and their borders unless the database
/// already holds this very data; one transaction, so readers see the old
/// basemap or the new one.
pub async fn load(pool: &PgPool) -> anyhow::Result<()> {
    let digest: String = DIGEST.iter().map(|b| format!("{b:02x}")).collect();
    let mut tx = pool.begin().await?;
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(LOAD_LOCK)
        .execute(&mut *tx)
        .await?;
    let loaded: Option<String> = sqlx::query_scalar("SELECT digest FROM basemap.loaded")
        .fetch_optional(&mut *tx)
        .await?;
    if loaded.as_deref() == Some(digest.as_str()) {
        return Ok(());
    }
    let mut countries = String::new();
    flate2::read::GzDecoder::new(COUNTRIES_GZ).read_to_string(&mut countries)?;
    sqlx::raw_sql("TRUNCATE basemap.countries, basemap.borders")
        .execute(&mut *tx)
        .await?;
    sqlx::query(include_str!("load.sql"))
        .bind(countries)
        .execute(&mut *tx)
        .await?;
    sqlx::raw_sql(include_str!("borders.sql")).execute(&mut *tx).await?;
    sqlx::query(
        "INSERT INTO basemap.loaded (digest) VALUES ($1) ON CONFLICT (only_row) DO UPDATE SET digest = EXCLUDED.digest",
    )
    .bind(&digest)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    tracing::info!("basemap data loaded");
    Ok(())
}
