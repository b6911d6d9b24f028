//! What a download selects: the items parameters that choose features
//! (`bbox`, `filter`, `datetime`, property values), their properties and
//! order (`properties`, `sortby`, `skipGeometry`) and the CRS (`crs`), the
//! same engine as items, written as one query with its values inlined for
//! GDAL, which reads it through a cursor.
use catalog_raster::export::ID_COLUMN;
use catalog_shared::{AppError, datasets::GeometryType, db::quote_ident};

use super::{
    crs::{self, Crs},
    items::{geometry_as, parse_request, query_error},
    params::{inlined, query_with},
};
use crate::dataset_record::{Dataset, published_columns};
use crate::read_gate::Data;

/// Items parameters that page or choose a page's format: a download is
/// every matching feature, in the format it names.
const PAGING: [&str; 5] = ["limit", "offset", "after_gid", "cursor", "f"];

pub(crate) struct ExportQuery {
    pub sql: String,
    /// The same selection in no particular order (a writer that orders
    /// features its own way, e.g. spatially).
    pub unordered_sql: String,
    /// The CRS of the coordinates (east first, as files keep them).
    pub crs: Crs,
    /// Whether the features' order was asked for (`sortby`).
    pub ordered: bool,
    /// The geometry type the file declares (GDAL's name, `Z` for heights):
    /// a query's computed column tells GDAL none, and clients (QGIS) take
    /// an undeclared type for "Unknown". None: no geometry, or mixed.
    pub geometry_type: Option<String>,
    /// The name of the selection's geometry column, if it has one.
    pub geometry_column: Option<String>,
}

/// The query of a download. `keeps_ids`: the format keeps the key as each
/// feature's id (`ID_COLUMN`); otherwise a download of every property
/// carries the key as its first column, as the source did. Named
/// properties are exactly those, in their order, under their source names.
pub(crate) async fn export_query(
    pool: &sqlx::PgPool,
    data: &Data<'_>,
    pairs: &[(String, String)],
    dataset: &Dataset,
    extra_crs: &[u32],
    keeps_ids: bool,
) -> Result<ExportQuery, AppError> {
    if let Some((name, _)) = pairs.iter().find(|(name, _)| PAGING.contains(&name.as_str())) {
        return Err(AppError::bad_request(format!(
            "{name} is not a download parameter: a download holds every matching feature"
        )));
    }
    let columns = published_columns(dataset);
    let offered = crs::collection_crs(dataset, extra_crs);
    let request = parse_request(pairs, dataset, &columns, i64::MAX, &offered)?;
    let key = quote_ident(&dataset.key_column);
    let named = pairs.iter().any(|(name, _)| name == "properties");
    let clashes = |name: &str| columns.iter().any(|c| c.original_name == name);
    let mut select = Vec::new();
    if keeps_ids && !clashes(ID_COLUMN) {
        select.push(format!("t.{key} AS {ID_COLUMN}"));
    } else if !named {
        select.push(format!("t.{key}"));
    }
    select.extend(
        request
            .columns
            .iter()
            .filter(|c| c.name != dataset.key_column && c.name != dataset.geometry_column)
            .map(|c| format!("t.{} AS {}", quote_ident(&c.name), quote_ident(&c.original_name))),
    );
    if request.include_geometry {
        let geometry = geometry_as(dataset, request.crs.srid());
        select.push(format!("{geometry} AS {}", quote_ident(&dataset.geometry_column)));
    }
    let unordered_sql = format!(
        "SELECT {} FROM {} t WHERE {}",
        select.join(", "),
        data.table(),
        request.where_sql(),
    );
    let sql = format!("{unordered_sql} ORDER BY {}", request.order_sql(dataset));
    // Planned first with its values bound: a filter that does not fit the
    // column types is the caller's 400 here, not an error inside GDAL.
    query_with(format!("EXPLAIN {sql}"), &request.binds)
        .fetch_all(pool)
        .await
        .map_err(query_error)?;
    let geometry_type = match dataset.geometry_type {
        Some(kind) if request.include_geometry && kind != GeometryType::Geometry => {
            // One row tells: a layer is loaded with one dimension.
            // ST_Zmflag: 2 or 3 when the row has heights (1 is M alone).
            let probe = format!(
                "SELECT ST_Zmflag({geometry}) FROM {} WHERE {geometry} IS NOT NULL LIMIT 1",
                data.table(),
                geometry = quote_ident(&dataset.geometry_column),
            );
            let dims: Option<i16> = sqlx::query_scalar(sqlx::AssertSqlSafe(probe))
                .fetch_optional(pool)
                .await?;
            Some(format!("{kind}{}", if dims.is_some_and(|d| d >= 2) { "Z" } else { "" }))
        }
        _ => None,
    };
    Ok(ExportQuery {
        sql: inlined(&sql, &request.binds)?,
        unordered_sql: inlined(&unordered_sql, &request.binds)?,
        crs: request.crs,
        ordered: request.is_sorted(),
        geometry_type,
        geometry_column: request.include_geometry.then(|| dataset.geometry_column.clone()),
    })
}
