//! Editing features: OGC API Features Part 4 on
//! `/api/collections/{id}/items` (POST creates, PUT replaces, PATCH
//! merges a JSON Merge Patch, DELETE removes), and the one write path the
//! older `POST /api/datasets/{id}/features` shares. Each write is one
//! transaction that changes the row, makes a version with the row before
//! and after (`catalog_shared::history`), rolls the data version (tiles
//! and counts are cached under it), and keeps the feature count, the
//! extent and the generalized tiles' first zooms true. Rows carry strong entity tags (a digest of the whole row);
//! PUT, PATCH and DELETE need `If-Match` (428 without, 412 when stale),
//! checked under the row's lock, so of two writers holding the same tag
//! one wins and the other gets 412.
use axum::{
    extract::State,
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use catalog_shared::{
    AppError,
    datasets::{ColumnInfo, ColumnType, DatasetKind, GeometryType, PublicationStatus},
    db::quote_ident,
    extent, generalize,
    history::{record_edit, row_etag, row_json},
};
use serde_json::{Map, Value};
use sqlx::PgConnection;
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

use crate::{
    access::{Caller, datasets::writable_dataset},
    dataset_record::{Dataset, published_columns},
    extract::{Json as JsonBody, Path},
    ogc::{
        crs::Crs,
        items::{feature_sql, in_storage_crs},
    },
    state::AppState,
};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_item))
        .routes(routes!(replace_item, patch_item, delete_item))
}

const SINGLE_TYPES: [&str; 6] = [
    "Point",
    "LineString",
    "Polygon",
    "MultiPoint",
    "MultiLineString",
    "MultiPolygon",
];

/// Checks the geometry against the dataset's type; answers whether it must
/// be promoted to the multi type.
pub(crate) fn check_geometry(geometry: &Value, dataset_type: GeometryType) -> Result<bool, AppError> {
    let kind = geometry["type"]
        .as_str()
        .ok_or_else(|| AppError::unprocessable("geometry needs a type"))?;
    if kind == "GeometryCollection" {
        let parts = geometry["geometries"]
            .as_array()
            .ok_or_else(|| AppError::unprocessable("a GeometryCollection needs geometries"))?;
        if parts.iter().any(|g| g["type"] == "GeometryCollection") {
            return Err(AppError::unprocessable("nested GeometryCollections are not accepted"));
        }
        if dataset_type != GeometryType::Geometry {
            return Err(AppError::unprocessable(format!(
                "a GeometryCollection fits only datasets of generic geometry type; this one holds {dataset_type}"
            )));
        }
        for part in parts {
            check_geometry(part, GeometryType::Geometry)?;
        }
        return Ok(false);
    }
    if !SINGLE_TYPES.contains(&kind) {
        return Err(AppError::unprocessable(format!(
            "{kind} is not a GeoJSON geometry type"
        )));
    }
    if !geometry["coordinates"].is_array() {
        return Err(AppError::unprocessable("geometry needs coordinates"));
    }
    let nesting = match kind {
        "Point" => 0,
        "LineString" | "MultiPoint" => 1,
        "Polygon" | "MultiLineString" => 2,
        _ => 3,
    };
    check_positions(&geometry["coordinates"], nesting, "coordinates")?;
    if dataset_type == GeometryType::Geometry || dataset_type.as_str() == kind {
        return Ok(false);
    }
    if dataset_type.as_str() == format!("Multi{kind}") {
        return Ok(true);
    }
    Err(AppError::unprocessable(format!(
        "a {kind} does not fit this dataset of {dataset_type}"
    )))
}

/// Checks that `coordinates` holds, `nesting` arrays deep, non-empty
/// lists down to positions of finite WGS 84 longitudes and latitudes
/// (`docs/decisions.md`, Values the service refuses); `at` names where
/// it stands, for the 422.
fn check_positions(coordinates: &Value, nesting: usize, at: &str) -> Result<(), AppError> {
    let Some(items) = coordinates.as_array() else {
        return Err(AppError::unprocessable(format!(
            "geometry.{at} must be {}, not {coordinates}",
            if nesting == 0 { "a position" } else { "a list" }
        )));
    };
    if nesting > 0 {
        if items.is_empty() {
            return Err(AppError::unprocessable(format!(
                "geometry.{at} is empty: an empty geometry is not stored (send null for none)"
            )));
        }
        for (i, item) in items.iter().enumerate() {
            check_positions(item, nesting - 1, &format!("{at}[{i}]"))?;
        }
        return Ok(());
    }
    if !(2..=4).contains(&items.len()) {
        return Err(AppError::unprocessable(format!(
            "geometry.{at} must be a position of 2 to 4 numbers, not {coordinates}"
        )));
    }
    let numbers: Vec<f64> = items
        .iter()
        .map(Value::as_f64)
        .collect::<Option<_>>()
        .filter(|n: &Vec<f64>| n.iter().all(|v| v.is_finite()))
        .ok_or_else(|| AppError::unprocessable(format!("geometry.{at} must hold finite numbers, not {coordinates}")))?;
    if !catalog_shared::wgs84::contains(numbers[0], numbers[1]) {
        return Err(AppError::unprocessable(format!(
            "geometry.{at} is {coordinates}: a WGS 84 longitude lies in [-180, 180] and a latitude in [-90, 90]"
        )));
    }
    Ok(())
}

/// The dataset behind a collection id, for a writer; 404 for anything the
/// caller may not see, 409 for data that is not an editable table.
async fn editable_collection(state: &AppState, caller: &Caller, id: &str) -> Result<(Dataset, String), AppError> {
    let missing = || AppError::not_found(format!("no collection {id}"));
    let uuid: Uuid = id.parse().map_err(|_| missing())?;
    let dataset = writable_dataset(state, caller, uuid).await.map_err(|e| {
        if e.status() == StatusCode::NOT_FOUND {
            missing()
        } else {
            e
        }
    })?;
    let table = editable(state, caller, &dataset).await?.table().to_string();
    Ok((dataset, table))
}

/// Whether the dataset's features can be edited: an ingested vector
/// table (a registered table is read in place and has no history),
/// published, and hot (an archived one is brought back first). Its data,
/// open for the write.
pub(crate) async fn editable<'s>(
    state: &'s AppState,
    caller: &Caller,
    dataset: &Dataset,
) -> Result<crate::read_gate::Data<'s>, AppError> {
    if dataset.kind != DatasetKind::Vector || dataset.is_registered {
        return Err(AppError::conflict(
            "only the features of an ingested vector dataset can be edited; a raster or a registered table cannot",
        ));
    }
    let data = crate::read_gate::open(state, caller, dataset).await?;
    if dataset.status != PublicationStatus::Ready {
        return Err(AppError::conflict(format!(
            "the dataset is {}, not ready",
            dataset.status
        )));
    }
    Ok(data)
}

/// What a write sets: columns and SQL values, with the text bound to each.
#[derive(Default)]
struct Assignments {
    columns: Vec<String>,
    values: Vec<String>,
    params: Vec<Option<String>>,
}

impl Assignments {
    fn bind(&mut self, column: String, value_sql: impl FnOnce(usize) -> String, param: Option<String>) {
        self.params.push(param);
        self.columns.push(column);
        self.values.push(value_sql(self.params.len()));
    }

    /// The geometry, checked against the dataset's type, from GeoJSON in
    /// WGS 84 into the dataset's CRS; `null` clears it.
    fn geometry(&mut self, dataset: &Dataset, geometry: &Value) -> Result<(), AppError> {
        let column = quote_ident(&dataset.geometry_column);
        if geometry.is_null() {
            self.bind(column, |n| format!("${n}::geometry"), None);
            return Ok(());
        }
        if !geometry.is_object() {
            return Err(AppError::unprocessable(
                "geometry must be a GeoJSON geometry object or null",
            ));
        }
        let promote = check_geometry(geometry, dataset.geometry_type.unwrap_or(GeometryType::Geometry))?;
        let dataset = dataset.clone();
        self.bind(
            column,
            move |n| {
                let sql = in_storage_crs(&dataset, &format!("ST_SetSRID(ST_GeomFromGeoJSON(${n}), 4326)"));
                if promote { format!("ST_Multi({sql})") } else { sql }
            },
            Some(geometry.to_string()),
        );
        Ok(())
    }

    /// A property by its published or source name, its value cast to the
    /// column's type; `null` clears it.
    fn property(&mut self, columns: &[ColumnInfo], name: &str, value: &Value) -> Result<(), AppError> {
        let column = columns
            .iter()
            .find(|c| c.name == name)
            .or_else(|| columns.iter().find(|c| c.original_name == name))
            .ok_or_else(|| AppError::unprocessable(format!("{name:?} is not a property of this collection")))?;
        if self.columns.contains(&quote_ident(&column.name)) {
            return Err(AppError::unprocessable(format!("{name:?} is given twice")));
        }
        let param = match value {
            Value::Null => None,
            Value::String(s) => Some(s.clone()),
            Value::Array(_) | Value::Object(_) if !matches!(column.pg_type, ColumnType::Jsonb | ColumnType::Json) => {
                return Err(AppError::unprocessable(format!(
                    "{name:?} holds {}, not an array or object",
                    column.sql_type()
                )));
            }
            other => Some(other.to_string()),
        };
        let pg_type = column.sql_type().to_string();
        self.bind(quote_ident(&column.name), |n| format!("${n}::{pg_type}"), param);
        Ok(())
    }
}

/// The columns a writer may set: the published ones but the key and the
/// geometry, which have their own members.
fn writable_columns(dataset: &Dataset) -> Vec<ColumnInfo> {
    published_columns(dataset)
        .into_iter()
        .filter(|c| c.name != dataset.key_column && c.name != dataset.geometry_column)
        .collect()
}

/// A sent feature's `geometry` and `properties`, each if present.
type FeatureParts<'a> = (Option<&'a Value>, Option<&'a Map<String, Value>>);

/// The `type`, `geometry` and `properties` of a feature a writer sent;
/// other members (`id`, `links`, `bbox`) are ignored: the key is the
/// service's.
fn feature_parts(body: &Value) -> Result<FeatureParts<'_>, AppError> {
    let object = body
        .as_object()
        .ok_or_else(|| AppError::unprocessable("the body must be a GeoJSON Feature"))?;
    if let Some(kind) = object.get("type")
        && kind != "Feature"
    {
        return Err(AppError::unprocessable("type must be Feature"));
    }
    let properties = match object.get("properties") {
        None | Some(Value::Null) => None,
        Some(Value::Object(p)) => Some(p),
        Some(_) => return Err(AppError::unprocessable("properties must be an object or null")),
    };
    Ok((object.get("geometry"), properties))
}

/// A database refusal of the values (a value that does not fit its
/// column's type, a null where none may be) is the writer's 422.
fn write_error(e: sqlx::Error) -> AppError {
    match &e {
        sqlx::Error::Database(db)
            if db
                .code()
                .is_some_and(|c| c.starts_with("22") || c.starts_with("XX") || c == "23502") =>
        {
            AppError::unprocessable(format!("the feature does not fit the dataset: {}", db.message()))
        }
        _ => e.into(),
    }
}

/// A feature as written: its GeoJSON (CRS84) and entity tag.
pub(crate) struct Written {
    pub key: i64,
    pub feature: String,
    pub etag: String,
}

impl Written {
    fn etag_header(&self) -> HeaderValue {
        HeaderValue::from_str(&format!("\"{}\"", self.etag)).expect("an md5 digest is a header value")
    }

    fn response(&self, status: StatusCode) -> Response {
        let mut response = (status, self.feature.clone()).into_response();
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/geo+json"));
        headers.insert(header::ETAG, self.etag_header());
        response
    }
}

/// The row `key` as the feature it is now, with its tag.
async fn written(tx: &mut PgConnection, (dataset, table): (&Dataset, &str), key: i64) -> Result<Written, AppError> {
    let sql = format!(
        "SELECT {}, {} FROM {} t WHERE t.{} = $1",
        feature_sql(dataset, &published_columns(dataset), Some(Crs::Crs84)),
        row_etag("t", &dataset.geometry_column),
        table,
        quote_ident(&dataset.key_column)
    );
    let (feature, etag): (String, String) = sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(key)
        .fetch_one(&mut *tx)
        .await?;
    Ok(Written { key, feature, etag })
}

/// A box `(west, south, east, north)` in WGS 84.
type Box = (f64, f64, f64, f64);

/// The WGS 84 boxes of a change's `before` and `after` geometries (hex
/// EWKB in the row JSON), measured as a load measures a table's
/// (`generalize`), so an edit takes away from a cluster cell what the
/// load counted in it.
async fn boxes_of(
    tx: &mut PgConnection,
    dataset: &Dataset,
    before: Option<&Value>,
    after: Option<&Value>,
) -> Result<[Option<Box>; 2], AppError> {
    let geometry_of = |row: Option<&Value>| {
        row.and_then(|r| r.get(&dataset.geometry_column))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let mut boxes = [None, None];
    for (slot, hex) in boxes.iter_mut().zip([geometry_of(before), geometry_of(after)]) {
        if let Some(hex) = hex {
            *slot = sqlx::query_as(
                "SELECT ST_XMin(w), ST_YMin(w), ST_XMax(w), ST_YMax(w)
                 FROM (SELECT ST_Transform(ST_SetSRID(g, CASE WHEN ST_SRID(g) = 0 THEN 4326 ELSE ST_SRID(g) END), 4326) AS w
                       FROM (SELECT $1::geometry AS g) x) y WHERE NOT ST_IsEmpty(w)",
            )
            .bind(hex)
            .fetch_optional(&mut *tx)
            .await?;
        }
    }
    Ok(boxes)
}

/// A dataset's generalization as an edit keeps it.
#[derive(Clone, Copy)]
struct Generalized {
    complete_zoom: u8,
    cell_bits: u8,
    /// Cluster tiles below this zoom are read from counted cells.
    cluster_cells_zoom: u8,
    /// What a tile of the complete zoom may hold; none for a layer ranked
    /// before it was recorded (its complete zoom then stays as loaded).
    budget: Option<u64>,
}

/// The dataset's generalization, read under the dataset row's lock at the
/// start of an edit: edits of one dataset rank its features one after
/// another, each from the other's result, and never lock each other's
/// rows in turn.
async fn lock_generalization(tx: &mut PgConnection, dataset: &Dataset) -> Result<Option<Generalized>, AppError> {
    let recorded: Option<GeneralizationRow> = sqlx::query_as(
        "SELECT complete_zoom, thinning_cell_bits, cluster_cells_zoom, tile_budget FROM datasets WHERE id = $1 FOR UPDATE",
    )
    .bind(dataset.id)
    .fetch_optional(&mut *tx)
    .await?;
    let zoom = |z: i16| u8::try_from(z).ok();
    Ok(recorded.and_then(|row| {
        let (complete_zoom, cell_bits) = zoom(row.complete_zoom?).zip(zoom(row.thinning_cell_bits?))?;
        Some(Generalized {
            complete_zoom,
            cell_bits,
            cluster_cells_zoom: row.cluster_cells_zoom.and_then(zoom).unwrap_or(0),
            budget: row.tile_budget.and_then(|b| u64::try_from(b).ok()),
        })
    }))
}

#[derive(sqlx::FromRow)]
struct GeneralizationRow {
    complete_zoom: Option<i16>,
    thinning_cell_bits: Option<i16>,
    cluster_cells_zoom: Option<i16>,
    tile_budget: Option<i32>,
}

/// The first zooms of the features around a change's `before` and `after`
/// boxes and the cluster cells it left and joined, in the change's
/// transaction, so the generalized and cluster tiles of the new data
/// version draw it as a load would (decisions: Generalized tiles).
/// A feature put where the complete zoom's tile already holds all a
/// complete tile may ranks the whole layer again, from the complete zoom
/// that now fits (decisions: computed at ingest and after each change).
/// Nothing else to do for a layer complete from zoom 0, or when the
/// geometry did not move (a first zoom and a cell depend on keys and
/// boxes only).
async fn keep_generalization(
    tx: &mut PgConnection,
    (dataset, table): (&Dataset, &str),
    generalization: Option<Generalized>,
    (key, boxes): (i64, &[Option<Box>; 2]),
) -> Result<(), AppError> {
    let Some(kept) = generalization else {
        return Ok(());
    };
    if boxes[0] == boxes[1] {
        return Ok(());
    }
    let centre = |&(w, s, e, n): &Box| ((w + e) / 2.0, (s + n) / 2.0);
    let columns = (table, dataset.key_column.as_str(), dataset.geometry_column.as_str());
    if let (Some(budget), Some(after)) = (kept.budget, &boxes[1])
        && generalize::overflows(tx, (table, columns.2), (kept.complete_zoom, budget), centre(after)).await?
    {
        let ranked = generalize::rank_on(tx, table).await?;
        ranked.record(tx, dataset.id).await?;
        tracing::info!(dataset_id = %dataset.id, from = kept.complete_zoom, to = ranked.complete_zoom,
                       "an edit filled a complete tile: the layer is ranked again");
        return Ok(());
    }
    let Generalized {
        complete_zoom,
        cell_bits,
        cluster_cells_zoom,
        ..
    } = kept;
    if complete_zoom == 0 {
        return Ok(());
    }
    let places: Vec<(f64, f64)> = boxes.iter().flatten().map(centre).collect();
    generalize::regeneralize_around(tx, columns, (complete_zoom, cell_bits), &places).await?;
    let feature = |b: &Option<Box>| {
        b.map(|(west, south, east, north)| generalize::Feature {
            key,
            west,
            south,
            east,
            north,
        })
    };
    let change = generalize::Move {
        key,
        before: feature(&boxes[0]),
        after: feature(&boxes[1]),
    };
    generalize::recount_clusters(
        tx,
        (dataset.id, table, columns.1, columns.2),
        cluster_cells_zoom,
        &change,
    )
    .await?;
    Ok(())
}

/// The extent after a change from the `before` to the `after` box:
/// counted again over the table only when the change can move it, a
/// geometry reaching past it or one that touched its edge; otherwise it
/// stands.
async fn keep_extent(
    tx: &mut PgConnection,
    (dataset, table): (&Dataset, &str),
    boxes: &[Option<Box>; 2],
) -> Result<(), AppError> {
    let current = dataset.extent_bbox.as_deref().filter(|b| b.len() == 4 && b[0] <= b[2]);
    let moves = match current {
        // No extent, or one across the antimeridian: counted again.
        None => boxes.iter().any(Option::is_some),
        Some(&[w, s, e, n]) => {
            let outside = boxes[1].is_some_and(|(x0, y0, x1, y1)| x0 < w || y0 < s || x1 > e || y1 > n);
            let touched = boxes[0].is_some_and(|(x0, y0, x1, y1)| x0 <= w || y0 <= s || x1 >= e || y1 >= n);
            outside || touched
        }
        Some(_) => true,
    };
    if !moves {
        return Ok(());
    }
    let counted = extent::of_table(&mut *tx, table, &dataset.geometry_column).await?;
    sqlx::query("UPDATE datasets SET extent_bbox = $2 WHERE id = $1")
        .bind(dataset.id)
        .bind(counted.bbox().map(|b| b.to_vec()))
        .execute(&mut *tx)
        .await?;
    Ok(())
}

/// Inserts a feature; answers it as written.
pub(crate) async fn insert_feature(
    state: &AppState,
    caller: &Caller,
    (dataset, table): (&Dataset, &str),
    geometry: &Value,
    properties: Option<&Map<String, Value>>,
) -> Result<Written, AppError> {
    let columns = writable_columns(dataset);
    let mut set = Assignments::default();
    set.geometry(dataset, geometry)?;
    for (name, value) in properties.into_iter().flatten() {
        set.property(&columns, name, value)?;
    }
    let sql = format!(
        "INSERT INTO {} AS t ({}) VALUES ({}) RETURNING t.{}::bigint, {}",
        table,
        set.columns.join(", "),
        set.values.join(", "),
        quote_ident(&dataset.key_column),
        row_json("t", &dataset.geometry_column),
    );
    let mut tx = state.pool.begin().await?;
    let generalization = lock_generalization(&mut tx, dataset).await?;
    admit_write(&mut tx, dataset, &set).await?;
    let mut query = sqlx::query_as::<_, (i64, Value)>(sqlx::AssertSqlSafe(sql));
    for p in &set.params {
        query = query.bind(p.as_deref());
    }
    let (key, after) = query.fetch_one(&mut *tx).await.map_err(write_error)?;
    let boxes = boxes_of(&mut tx, dataset, None, Some(&after)).await?;
    keep_extent(&mut tx, (dataset, table), &boxes).await?;
    keep_generalization(&mut tx, (dataset, table), generalization, (key, &boxes)).await?;
    record_edit(&mut tx, dataset.id, caller.user_id(), 1, &[(key, None, Some(after))]).await?;
    let written = written(&mut tx, (dataset, table), key).await?;
    tx.commit().await?;
    state.datasets.forget(dataset.id);
    Ok(written)
}

/// Admits a write against the dataset owner's storage quota, as an
/// upload is: the row and the history version it makes count, so a write
/// that would take the owner past the cap is a 422.
async fn admit_write(tx: &mut PgConnection, dataset: &Dataset, set: &Assignments) -> Result<(), AppError> {
    let Some(owner) = dataset.created_by else {
        return Ok(());
    };
    // The row as sent, twice over: once in the table, once in its version.
    let bytes: usize = set.params.iter().map(|p| p.as_ref().map_or(0, String::len) + 8).sum();
    let demand = crate::quotas::Demand {
        bytes: 2 * bytes as u64,
        datasets: 0,
    };
    crate::quotas::admit(tx, owner, demand).await
}

/// The tag `If-Match` names: 428 without one. `*` matches any current
/// row; a weak tag never matches (strong comparison).
fn if_match(headers: &HeaderMap) -> Result<Vec<String>, AppError> {
    let value = headers
        .get(header::IF_MATCH)
        .ok_or_else(|| {
            AppError::new(
                StatusCode::PRECONDITION_REQUIRED,
                "If-Match is required: send the ETag of the feature as you read it",
            )
        })?
        .to_str()
        .map_err(|_| AppError::bad_request("If-Match must be entity tags"))?;
    Ok(value.split(',').map(|t| t.trim().to_string()).collect())
}

fn stale() -> AppError {
    AppError::new(
        StatusCode::PRECONDITION_FAILED,
        "the feature changed since that ETag: read it again and reapply the change",
    )
}

/// How a feature is changed: replaced whole, merged, or removed.
enum Change<'a> {
    Replace(&'a Value),
    Merge(&'a Value),
    Delete,
}

/// Changes the row `key` if its tag is one `If-Match` names, under the
/// row's lock: a writer holding a stale tag gets 412, one naming no row
/// 404. Answers the row as written, `None` once deleted.
async fn change_feature(
    state: &AppState,
    caller: &Caller,
    (dataset, table): (&Dataset, &str),
    key: i64,
    tags: &[String],
    change: Change<'_>,
) -> Result<Option<Written>, AppError> {
    let columns = writable_columns(dataset);
    let mut set = Assignments::default();
    match &change {
        Change::Replace(body) => {
            let (geometry, properties) = feature_parts(body)?;
            let geometry = geometry.ok_or_else(|| AppError::unprocessable("a replacement needs its geometry"))?;
            set.geometry(dataset, geometry)?;
            let properties = properties.cloned().unwrap_or_default();
            for (name, value) in &properties {
                set.property(&columns, name, value)?;
            }
            // Replaced whole: what the feature does not name is cleared.
            for column in &columns {
                let named = properties.contains_key(&column.name) || properties.contains_key(&column.original_name);
                if !named {
                    set.property(&columns, &column.name, &Value::Null)?;
                }
            }
        }
        Change::Merge(body) => {
            let (geometry, properties) = feature_parts(body)?;
            if let Some(geometry) = geometry {
                set.geometry(dataset, geometry)?;
            }
            for (name, value) in properties.into_iter().flatten() {
                set.property(&columns, name, value)?;
            }
        }
        Change::Delete => {}
    }
    let key_column = quote_ident(&dataset.key_column);
    let mut tx = state.pool.begin().await?;
    let generalization = lock_generalization(&mut tx, dataset).await?;
    if !matches!(change, Change::Delete) {
        admit_write(&mut tx, dataset, &set).await?;
    }
    let current: Option<(Value, String)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {}, {} FROM {table} t WHERE t.{key_column} = $1 FOR UPDATE",
        row_json("t", &dataset.geometry_column),
        row_etag("t", &dataset.geometry_column),
    )))
    .bind(key)
    .fetch_optional(&mut *tx)
    .await?;
    let (before, etag) =
        current.ok_or_else(|| AppError::not_found(format!("no feature {key} in collection {}", dataset.id)))?;
    if !tags.iter().any(|t| t == "*" || *t == format!("\"{etag}\"")) {
        return Err(stale());
    }
    let after: Option<Value> = match change {
        Change::Delete => {
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "DELETE FROM {table} t WHERE t.{key_column} = $1"
            )))
            .bind(key)
            .execute(&mut *tx)
            .await?;
            None
        }
        _ if set.columns.is_empty() => Some(before.clone()),
        _ => {
            let assignments: Vec<String> = set
                .columns
                .iter()
                .zip(&set.values)
                .map(|(c, v)| format!("{c} = {v}"))
                .collect();
            let sql = format!(
                "UPDATE {table} AS t SET {} WHERE t.{key_column} = ${} RETURNING {}",
                assignments.join(", "),
                set.params.len() + 1,
                row_json("t", &dataset.geometry_column),
            );
            let mut query = sqlx::query_scalar::<_, Value>(sqlx::AssertSqlSafe(sql));
            for p in &set.params {
                query = query.bind(p.as_deref());
            }
            Some(query.bind(key).fetch_one(&mut *tx).await.map_err(write_error)?)
        }
    };
    let boxes = boxes_of(&mut tx, dataset, Some(&before), after.as_ref()).await?;
    keep_extent(&mut tx, (dataset, table), &boxes).await?;
    keep_generalization(&mut tx, (dataset, table), generalization, (key, &boxes)).await?;
    let added = if after.is_none() { -1 } else { 0 };
    record_edit(
        &mut tx,
        dataset.id,
        caller.user_id(),
        added,
        &[(key, Some(before), after.clone())],
    )
    .await?;
    let result = match after {
        Some(_) => Some(written(&mut tx, (dataset, table), key).await?),
        None => None,
    };
    tx.commit().await?;
    state.datasets.forget(dataset.id);
    Ok(result)
}

/// A change of the feature `feature_id` of collection `id`, by a writer
/// whose `If-Match` names its current tag.
async fn change_item(
    state: &AppState,
    caller: &Caller,
    (id, feature_id): (&str, &str),
    headers: &HeaderMap,
    change: Change<'_>,
) -> Result<Option<Written>, AppError> {
    let (dataset, table) = editable_collection(state, caller, id).await?;
    let key: i64 = feature_id
        .parse()
        .map_err(|_| AppError::not_found(format!("no feature {feature_id} in collection {id}")))?;
    let tags = if_match(headers)?;
    change_feature(state, caller, (&dataset, &table), key, &tags, change).await
}

/// Adds a feature to a collection (OGC API Features Part 4).
#[utoipa::path(post, path = "/api/collections/{collectionId}/items", tag = "ogc",
    params(("collectionId" = String, Path)),
    request_body(content = Object, description = "a GeoJSON Feature in CRS84; its `id` is ignored (the service assigns it)",
                 content_type = "application/geo+json"),
    responses((status = 201, description = "the created feature; `Location` is its URL and `ETag` its tag", content_type = "application/geo+json"),
              (status = 401, body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 403, description = "a reader who may not write", body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 404, body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 409, description = "a raster or registered table, or a dataset not ready", body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 422, description = "a geometry or value that does not fit the collection", body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn create_item(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<Value>,
) -> Result<Response, AppError> {
    let (dataset, table) = editable_collection(&state, &caller, &id).await?;
    let (geometry, properties) = feature_parts(&body)?;
    let geometry = geometry.ok_or_else(|| AppError::unprocessable("a feature needs its geometry (null for none)"))?;
    let written = insert_feature(&state, &caller, (&dataset, &table), geometry, properties).await?;
    let mut response = written.response(StatusCode::CREATED);
    let location = format!(
        "{}/api/collections/{}/items/{}",
        state.config.public_url, dataset.id, written.key
    );
    response.headers_mut().insert(
        header::LOCATION,
        HeaderValue::from_str(&location).map_err(AppError::internal)?,
    );
    Ok(response)
}

/// Replaces a feature whole: properties it does not name are cleared.
#[utoipa::path(put, path = "/api/collections/{collectionId}/items/{featureId}", tag = "ogc",
    params(("collectionId" = String, Path), ("featureId" = String, Path),
        ("If-Match" = String, Header, description = "the feature's ETag as read")),
    request_body(content = Object, description = "a GeoJSON Feature in CRS84", content_type = "application/geo+json"),
    responses((status = 200, description = "the feature as replaced, with its new `ETag`", content_type = "application/geo+json"),
              (status = 404, body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 409, body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 412, description = "the feature changed since that ETag", body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 422, body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 428, description = "no If-Match", body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn replace_item(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, feature_id)): Path<(String, String)>,
    headers: HeaderMap,
    JsonBody(body): JsonBody<Value>,
) -> Result<Response, AppError> {
    let written = change_item(&state, &caller, (&id, &feature_id), &headers, Change::Replace(&body)).await?;
    Ok(written.expect("a replaced feature exists").response(StatusCode::OK))
}

/// Changes part of a feature (JSON Merge Patch, RFC 7396): the geometry
/// if given, each property given (null clears it).
#[utoipa::path(patch, path = "/api/collections/{collectionId}/items/{featureId}", tag = "ogc",
    params(("collectionId" = String, Path), ("featureId" = String, Path),
        ("If-Match" = String, Header, description = "the feature's ETag as read")),
    request_body(content = Object, description = "a JSON Merge Patch of the feature: `geometry` and `properties` members",
                 content_type = "application/merge-patch+json"),
    responses((status = 200, description = "the feature as changed, with its new `ETag`", content_type = "application/geo+json"),
              (status = 404, body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 409, body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 412, description = "the feature changed since that ETag", body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 422, body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 428, description = "no If-Match", body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn patch_item(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, feature_id)): Path<(String, String)>,
    headers: HeaderMap,
    JsonBody(body): JsonBody<Value>,
) -> Result<Response, AppError> {
    let written = change_item(&state, &caller, (&id, &feature_id), &headers, Change::Merge(&body)).await?;
    Ok(written.expect("a merged feature exists").response(StatusCode::OK))
}

/// Removes a feature.
#[utoipa::path(delete, path = "/api/collections/{collectionId}/items/{featureId}", tag = "ogc",
    params(("collectionId" = String, Path), ("featureId" = String, Path),
        ("If-Match" = String, Header, description = "the feature's ETag as read")),
    responses((status = 204, description = "removed"),
              (status = 404, body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 409, body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 412, description = "the feature changed since that ETag", body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 428, description = "no If-Match", body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn delete_item(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, feature_id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<StatusCode, AppError> {
    change_item(&state, &caller, (&id, &feature_id), &headers, Change::Delete).await?;
    Ok(StatusCode::NO_CONTENT)
}
