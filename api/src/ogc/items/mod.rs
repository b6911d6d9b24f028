//! The items of a collection: features rendered to GeoJSON inside
//! PostgreSQL, paged by key (`after_gid`), sort cursor or legacy offset,
//! filtered by bbox, time, property values and CQL2, all combined with
//! AND. As tipg does, reading the request (`request`), building and
//! running its SQL (`query`) and writing the page (`page`) are apart.
use axum::{
    extract::State,
    http::{HeaderValue, header},
    response::Response,
};
use catalog_shared::{AppError, db::quote_ident};
use serde_json::{Value, json};

use super::crs::{self, Crs};
use crate::{
    access::Caller,
    dataset_record::published_columns,
    extract::{LinkCredential, Path, Query},
    ogc_html::{self, Format, FormatQuery, alternate_link, page::PageContext},
    read_gate,
    state::AppState,
};

mod conditions;
mod page;
mod query;
mod request;

pub(crate) use conditions::in_storage_crs;
pub(crate) use query::feature_sql;
pub(super) use query::geometry_as;
pub(crate) use query::query_error;
pub(super) use request::parse_request;

/// Features of a collection.
#[utoipa::path(get, path = "/api/collections/{collectionId}/items", tag = "ogc",
    params(("collectionId" = String, Path), FormatQuery,
        ("limit" = Option<i64>, Query, minimum = 1, description = "default 10; larger values are clamped to OGC_ITEMS_MAX_PAGE_SIZE"),
        ("offset" = Option<i64>, Query, minimum = 0, description = "legacy offset paging"),
        ("after_gid" = Option<i64>, Query, description = "keyset cursor: features with a larger key"),
        ("bbox" = Option<Vec<f64>>, Query,
            description = "four (or six, with heights) numbers in bbox-crs, its axes in that CRS's order: in CRS84 (the default) west,south,east,north"),
        ("datetime" = Option<String>, Query,
            description = "features whose time (the collection's `temporal_column`) is in the interval: an RFC 3339 instant or date, or an interval start/end whose open ends are `..` or empty, the start not after the end; ignored by a collection with no time axis"),
        ("include_geometry" = Option<bool>, Query),
        ("skipGeometry" = Option<bool>, Query, description = "true: features without geometry"),
        ("properties" = Option<Vec<String>>, Query, description = "the properties each feature carries, in this order (an empty list: none)"),
        ("sortby" = Option<String>, Query,
            description = "queryables to sort by, comma separated, each `+name` (or `name`) ascending or `-name` descending; pages stay exact (follow `next`)"),
        ("cursor" = Option<String>, Query, description = "where a sorted page starts: only as a `next` link gives it"),
        ("filter" = Option<String>, Query, description = "CQL2 expression over the collection's queryables"),
        ("filter-lang" = inline(Option<crate::ogc::cql::Lang>), Query, description = "cql2-text (default), cql2-json, or cql-text (CQL2 text)"),
        ("filter-crs" = inline(Option<crate::openapi::names::Crs84>), Query, description = "only CRS84"),
        ("bbox-crs" = Option<String>, Query, pattern = r"^http://www\.opengis\.net/def/crs/(OGC/1\.3/CRS84|EPSG/0/[1-9][0-9]{0,8})$",
            description = "the CRS of bbox, one of the collection's `crs` (default CRS84)"),
        ("crs" = Option<String>, Query, pattern = r"^http://www\.opengis\.net/def/crs/(OGC/1\.3/CRS84|EPSG/0/[1-9][0-9]{0,8})$",
            description = "the CRS of the coordinates, one of the collection's `crs` (default CRS84); the answer's Content-Crs names it")),
    responses((status = 200, description = "GeoJSON FeatureCollection, or its page. `numberMatched` is exact; \
                  with filters it is left out when counting the matches takes longer than 2 s",
                  content(("application/geo+json"), (String = "text/html"))),
              (status = 400, body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 404, body = catalog_shared::Problem, content_type = "application/problem+json")))]
pub async fn items(
    State(state): State<AppState>,
    caller: Caller,
    credential: LinkCredential,
    format: Format,
    Path(id): Path<String>,
    Query(pairs): Query<Vec<(String, String)>>,
) -> Result<Response, AppError> {
    let dataset = super::common::feature_collection(&state, &caller, &id).await?;
    let columns = published_columns(&dataset);
    let offered = crs::collection_crs(&dataset, &state.config.extra_crs);
    let request = parse_request(
        &pairs,
        &dataset,
        &columns,
        state.config.ogc_items_max_page_size,
        &offered,
    )?;
    // The page links are built from the request's own query, which the
    // extractor gave without the caller's key: it rides along again.
    let pairs = credential.kept_in(pairs);
    // Only a well-formed request restores an archived dataset.
    let data = read_gate::open(&state, &caller, &dataset).await?;
    let reader = data.reader().await;
    let source = (reader.pool, data.table());
    // The page and the count run side by side on two connections.
    let (page, matched) = tokio::try_join!(
        query::fetch_page(source, &dataset, &request),
        query::number_matched(&state, source, &dataset, &request)
    )?;
    let collection = format!("{}/api/collections/{}", state.config.public_url, dataset.id);
    let base = format!("{collection}/items");
    let mut links = page::links((&base, &collection), &pairs, &request, &page);
    if let (Format::Html, Some(after)) = (format, request.after_key()) {
        // Only pages for people look back; JSON clients page forward by `next`.
        if let Some(cursor) = query::previous_cursor(source, &dataset, &request, after).await? {
            links.push(page::previous_by_key(&base, &pairs, cursor));
        }
    }
    let body = page::feature_collection(&page, matched, links);
    Ok(match format {
        Format::Json => {
            let digest = crate::tile_cache::recipe_digest(&body);
            let etag: String = digest.iter().map(|b| format!("{b:02x}")).collect();
            let mut response = ogc_html::json_answer(page::geojson_response(body, request.crs));
            if let Ok(value) = HeaderValue::from_str(&format!("\"{etag}\"")) {
                response.headers_mut().insert(header::ETAG, value);
            }
            response
        }
        Format::Html => {
            let document: Value = serde_json::from_str(&body).map_err(AppError::internal)?;
            let context = PageContext {
                base: &state.config.public_url,
                credential: &credential,
            };
            let id = dataset.id.to_string();
            ogc_html::page_answer(ogc_html::features::items(&context, &dataset.title, &id, &document))
        }
    })
}

/// The query of a single feature: the CRS of its coordinates.
#[derive(serde::Deserialize)]
pub struct ItemQuery {
    crs: Option<String>,
}

/// One feature by its key.
#[utoipa::path(get, path = "/api/collections/{collectionId}/items/{featureId}", tag = "ogc",
    params(("collectionId" = String, Path), ("featureId" = String, Path), FormatQuery,
        ("crs" = Option<String>, Query, pattern = r"^http://www\.opengis\.net/def/crs/(OGC/1\.3/CRS84|EPSG/0/[1-9][0-9]{0,8})$",
            description = "the CRS of the coordinates, one of the collection's `crs` (default CRS84); the answer's Content-Crs names it")),
    responses((status = 200, description = "GeoJSON Feature, or its page", content(("application/geo+json"), (String = "text/html"))),
              (status = 400, description = "an unknown `f`, or a CRS the collection does not offer", body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 404, body = catalog_shared::Problem, content_type = "application/problem+json")))]
pub async fn item(
    State(state): State<AppState>,
    caller: Caller,
    credential: LinkCredential,
    format: Format,
    Path((id, feature_id)): Path<(String, String)>,
    Query(query): Query<ItemQuery>,
) -> Result<Response, AppError> {
    let dataset = super::common::feature_collection(&state, &caller, &id).await?;
    let output_crs = match &query.crs {
        Some(value) => crs::requested("crs", value, &crs::collection_crs(&dataset, &state.config.extra_crs))?,
        None => Crs::Crs84,
    };
    let data = read_gate::open(&state, &caller, &dataset).await?;
    let missing = || AppError::not_found(format!("no feature {feature_id} in collection {id}"));
    let key: i64 = feature_id.parse().map_err(|_| missing())?;
    let columns = published_columns(&dataset);
    let sql = format!(
        "SELECT {}, {} FROM {} t WHERE t.{} = $1",
        feature_sql(&dataset, &columns, Some(output_crs)),
        catalog_shared::history::row_etag("t", &dataset.geometry_column),
        data.table(),
        quote_ident(&dataset.key_column)
    );
    let reader = data.reader().await;
    let found: Option<(String, String)> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(key)
        .fetch_optional(reader.pool)
        .await?;
    let (feature, etag) = found.ok_or_else(missing)?;
    let mut feature: Value = serde_json::from_str(&feature).map_err(AppError::internal)?;
    let base = &state.config.public_url;
    let self_href = format!("{base}/api/collections/{}/items/{key}", dataset.id);
    feature["links"] = json!([
        page::link(self_href.clone(), "self", "application/geo+json"),
        alternate_link(&self_href),
        page::link(
            format!("{base}/api/collections/{}", dataset.id),
            "collection",
            "application/json"
        ),
    ]);
    let context = PageContext {
        base,
        credential: &credential,
    };
    let collection_id = dataset.id.to_string();
    // The row's tag, whatever its representation: what a writer sends
    // back in If-Match (`editing`).
    let mut response = format.answer(
        || page::geojson_response(feature.to_string(), output_crs),
        || ogc_html::features::item(&context, &dataset.title, &collection_id, &feature),
    );
    if let Ok(value) = HeaderValue::from_str(&format!("\"{etag}\"")) {
        response.headers_mut().insert(header::ETAG, value);
    }
    Ok(response)
}
