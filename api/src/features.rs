//! Feature-level access to one dataset: an offset-paged GeoJSON list,
//! creating a feature, and adding a typed column.
use axum::{
    Json,
    extract::State,
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use catalog_shared::{
    AppError,
    datasets::{ColumnInfo, ColumnType, GeometryType},
    db::quote_ident,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sqlx::{Row, types::Json as SqlJson};
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

use crate::page::{Limit, Offset};
use crate::{
    access::{
        Caller,
        datasets::{cached_visible_dataset, writable_dataset},
    },
    bbox::Bbox,
    dataset_record::{Dataset, published_columns},
    editing::{check_geometry, editable, insert_feature},
    extract::{Json as JsonBody, LinkCredential, Path, Query},
    ogc::{
        crs::Crs,
        items::{feature_sql, in_storage_crs},
    },
    state::AppState,
};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_features, create_feature))
        .routes(routes!(add_column))
}

fn geojson(status: StatusCode, body: String) -> Response {
    let mut response = (status, body).into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/geo+json"));
    response
}

#[derive(Deserialize, utoipa::IntoParams)]
struct FeatureListQuery {
    #[serde(default)]
    #[param(value_type = Option<i64>, minimum = 1, maximum = 200, default = 10)]
    limit: Limit<10, 200>,
    #[serde(default)]
    #[param(value_type = Option<i64>, minimum = 0, default = 0)]
    offset: Offset,
    /// minx,miny,maxx,maxy
    #[param(value_type = Option<Vec<f64>>)]
    bbox: Option<String>,
    include_geometry: Option<bool>,
}

/// Features of a dataset by offset, ordered by gid. Rows may skip or repeat
/// across pages under concurrent writes; the OGC items route pages by key.
#[utoipa::path(get, path = "/api/datasets/{dataset_id}/features", tag = "features", params(("dataset_id" = Uuid, Path), FeatureListQuery),
    responses((status = 200, description = "GeoJSON FeatureCollection", content_type = "application/geo+json"),
              (status = 422, body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn list_features(
    State(state): State<AppState>,
    caller: Caller,
    credential: LinkCredential,
    Path(id): Path<Uuid>,
    Query(q): Query<FeatureListQuery>,
) -> Result<Response, AppError> {
    let dataset = cached_visible_dataset(&state, &caller, id).await?;
    let (limit, offset) = (q.limit.get(), q.offset.get());
    let bounds = q
        .bbox
        .as_deref()
        .map(|b| b.parse::<Bbox>().map(Bbox::to_array))
        .transpose()?;
    // Only a well-formed request restores an archived dataset.
    let data = crate::read_gate::open(&state, &caller, &dataset).await?;
    let columns = published_columns(&dataset);
    let geom = quote_ident(&dataset.geometry_column);
    let condition = if bounds.is_some() {
        format!(
            "ST_Intersects(t.{geom}, {})",
            in_storage_crs(&dataset, &crate::bbox::sql_geometry("ARRAY[$1, $2, $3, $4]::float8[]"))
        )
    } else {
        "TRUE".into()
    };
    let sql = format!(
        "SELECT {}, count(*) OVER () FROM {} t WHERE {condition} ORDER BY t.{} LIMIT {limit} OFFSET {offset}",
        feature_sql(
            &dataset,
            &columns,
            q.include_geometry.unwrap_or(true).then_some(Crs::Crs84)
        ),
        data.table(),
        quote_ident(&dataset.key_column),
    );
    let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
    if let Some(b) = bounds {
        query = query.bind(b[0]).bind(b[1]).bind(b[2]).bind(b[3]);
    }
    let reads = data.reader().await.pool;
    let rows = query.fetch_all(reads).await?;
    let matched: i64 = match rows.first() {
        Some(row) => row.get(1),
        // Past the last page the window is empty; count the matches alone.
        None if bounds.is_none() => dataset.feature_count.unwrap_or(0),
        None => {
            let sql = format!("SELECT count(*) FROM {} t WHERE {condition}", data.table());
            let b = bounds.unwrap_or_default();
            sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
                .bind(b[0])
                .bind(b[1])
                .bind(b[2])
                .bind(b[3])
                .fetch_one(reads)
                .await?
        }
    };
    let features: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
    // A page link repeats the request (filters and the caller's credential).
    let page_link = |rel: &str, offset: i64| {
        let mut query = url::form_urlencoded::Serializer::new(String::new());
        query
            .append_pair("limit", &limit.to_string())
            .append_pair("offset", &offset.to_string());
        if let Some(bbox) = &q.bbox {
            query.append_pair("bbox", bbox);
        }
        if let Some(include) = q.include_geometry {
            query.append_pair("include_geometry", &include.to_string());
        }
        let href = format!(
            "{}/api/datasets/{id}/features?{}",
            state.config.public_url,
            query.finish()
        );
        json!({"rel": rel, "href": credential.on(href), "type": "application/geo+json"})
    };
    let mut links = vec![page_link("self", offset)];
    if offset.saturating_add(limit) < matched {
        links.push(page_link("next", offset + limit));
    }
    let body = format!(
        r#"{{"type":"FeatureCollection","numberMatched":{matched},"numberReturned":{},"features":[{}],"links":{}}}"#,
        features.len(),
        features.join(","),
        Value::Array(links)
    );
    Ok(geojson(StatusCode::OK, body))
}

#[derive(Deserialize, utoipa::ToSchema)]
struct NewFeature {
    /// `Feature`, or left out.
    #[serde(rename = "type")]
    #[schema(value_type = Option<FeatureType>)]
    kind: Option<String>,
    #[schema(value_type = Object)]
    geometry: Value,
    #[schema(value_type = Object)]
    #[serde(default)]
    properties: serde_json::Map<String, Value>,
}

/// `Feature`, the one type a feature has.
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
enum FeatureType {
    Feature,
}

/// Adds one feature. Writes never retire tile links.
#[utoipa::path(post, path = "/api/datasets/{dataset_id}/features", tag = "features", params(("dataset_id" = Uuid, Path)), request_body = NewFeature,
    responses((status = 201, description = "the created feature", content_type = "application/geo+json"),
              (status = 422, body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn create_feature(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
    JsonBody(body): JsonBody<NewFeature>,
) -> Result<Response, AppError> {
    let dataset = writable_dataset(&state, &caller, id).await?;
    // A malformed feature is refused before an archived dataset is restored for it.
    if body.kind.as_deref().is_some_and(|k| k != "Feature") {
        return Err(AppError::unprocessable("type must be Feature"));
    }
    check_geometry(&body.geometry, dataset.geometry_type.unwrap_or(GeometryType::Geometry))?;
    let data = editable(&state, &caller, &dataset).await?;
    let written = insert_feature(
        &state,
        &caller,
        (&dataset, data.table()),
        &body.geometry,
        Some(&body.properties),
    )
    .await?;
    Ok(geojson(StatusCode::CREATED, written.feature))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct ColumnRequest {
    #[schema(value_type = NewColumn)]
    column: ColumnDefinition,
}

/// A column to add, as `add_column` takes it.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct NewColumn {
    /// 1 to 63 characters of a-z, 0-9 and _, not starting with a digit
    /// (blanks around it are dropped).
    #[schema(
        pattern = r"^[\t-\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]*[a-z_][a-z0-9_]{0,62}[\t-\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]*$"
    )]
    name: String,
    /// The column's type, in any letter case.
    #[serde(rename = "type")]
    #[schema(value_type = ColumnTypeName, inline)]
    kind: String,
}

/// The names `pg_type_of` knows.
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
enum ColumnTypeName {
    #[schema(rename = "text")]
    Text,
    #[schema(rename = "string")]
    String,
    #[schema(rename = "varchar")]
    Varchar,
    #[schema(rename = "integer")]
    Integer,
    #[schema(rename = "int")]
    Int,
    #[schema(rename = "int4")]
    Int4,
    #[schema(rename = "bigint")]
    Bigint,
    #[schema(rename = "int8")]
    Int8,
    #[schema(rename = "double precision")]
    DoublePrecision,
    #[schema(rename = "double")]
    Double,
    #[schema(rename = "float")]
    Float,
    #[schema(rename = "float8")]
    Float8,
    #[schema(rename = "real")]
    Real,
    #[schema(rename = "number")]
    Number,
    #[schema(rename = "numeric")]
    Numeric,
    #[schema(rename = "boolean")]
    Boolean,
    #[schema(rename = "bool")]
    Bool,
    #[schema(rename = "date")]
    Date,
    #[schema(rename = "timestamp")]
    Timestamp,
    #[schema(rename = "timestamptz")]
    Timestamptz,
    #[schema(rename = "datetime")]
    Datetime,
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct ColumnDefinition {
    name: String,
    #[serde(rename = "type")]
    kind: String,
}

/// A column of the dataset after the change.
#[derive(Serialize, utoipa::ToSchema)]
struct ListedColumn {
    name: String,
    #[serde(rename = "type")]
    kind: ColumnType,
}

#[derive(Serialize, utoipa::ToSchema)]
struct ColumnList {
    columns: Vec<ListedColumn>,
}

/// Column types a new column may have, with the names users write for them.
fn pg_type_of(kind: &str) -> Option<ColumnType> {
    Some(match kind.to_ascii_lowercase().as_str() {
        "text" | "string" | "varchar" => ColumnType::Text,
        "integer" | "int" | "int4" => ColumnType::Integer,
        "bigint" | "int8" => ColumnType::BigInt,
        "double precision" | "double" | "float" | "float8" | "real" | "number" | "numeric" => ColumnType::Double,
        "boolean" | "bool" => ColumnType::Boolean,
        "date" => ColumnType::Date,
        "timestamp" | "timestamptz" | "datetime" => ColumnType::TimestampTz,
        _ => return None,
    })
}

/// Adds a typed column to a dataset's table.
#[utoipa::path(post, path = "/api/layers/{dataset_id}/columns", tag = "features", params(("dataset_id" = Uuid, Path)), request_body = ColumnRequest,
    responses((status = 200, body = ColumnList), (status = 409, description = "the column exists, or the dataset is a raster, a registered table or not ready", body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn add_column(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
    JsonBody(body): JsonBody<ColumnRequest>,
) -> Result<Json<ColumnList>, AppError> {
    let dataset: Dataset = writable_dataset(&state, &caller, id).await?;
    let name = body.column.name.trim().to_string();
    let valid = (1..=63).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if !valid {
        return Err(AppError::unprocessable(
            "name must be 1 to 63 characters of a-z, 0-9 and _, not starting with a digit",
        ));
    }
    let pg_type = pg_type_of(&body.column.kind).ok_or_else(|| {
        AppError::unprocessable("type must be text, integer, bigint, double precision, boolean, date or timestamp")
    })?;
    // Only a well-formed column restores an archived dataset; a raster or a
    // registered table (read in place) has no columns to add here.
    let data = editable(&state, &caller, &dataset).await?;
    let mut columns = published_columns(&dataset);
    if name == dataset.key_column
        || name == dataset.geometry_column
        || name == catalog_shared::generalize::FIRST_ZOOM_COLUMN
        || columns.iter().any(|c| c.name == name)
    {
        return Err(AppError::conflict(format!("the dataset already has a column {name}")));
    }
    let mut tx = state.pool.begin().await?;
    let alter = format!(
        "ALTER TABLE {} ADD COLUMN {} {pg_type}",
        data.table(),
        quote_ident(&name)
    );
    sqlx::query(sqlx::AssertSqlSafe(alter)).execute(&mut *tx).await?;
    let added = ColumnInfo {
        name: name.clone(),
        original_name: name,
        pg_type,
        source_type: "added".into(),
    };
    sqlx::query("UPDATE datasets SET column_info = column_info || jsonb_build_array($2::jsonb) WHERE id = $1")
        .bind(id)
        .bind(SqlJson(&added))
        .execute(&mut *tx)
        .await?;
    catalog_shared::history::record_added_column(&mut tx, id, caller.user_id(), &added.name).await?;
    tx.commit().await?;
    state.datasets.forget(id);
    columns.push(added);
    Ok(Json(ColumnList {
        columns: columns
            .into_iter()
            .map(|c| ListedColumn {
                name: c.name,
                kind: c.pg_type,
            })
            .collect(),
    }))
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_column_type_the_document_names_is_known() {
        let schema = serde_json::to_value(<super::ColumnTypeName as utoipa::PartialSchema>::schema()).unwrap();
        let names = schema["enum"].as_array().unwrap();
        assert_eq!(names.len(), 21);
        for name in names {
            assert!(super::pg_type_of(name.as_str().unwrap()).is_some(), "{name}");
        }
    }
}
