//! The collections, paged (OGC API Common Part 2): every client reads this
//! list first, so it is never the whole catalog in one document. The
//! catalog's own records collection comes first, on the first page of an
//! unfiltered list; `q`, `bbox` and `datetime` filter the datasets as the
//! records search does.
use axum::{
    Json,
    extract::State,
    response::{IntoResponse, Response},
};
use catalog_shared::{AppError, datasets::PublicationStatus};
use serde::Deserialize;
use serde_json::json;
use sqlx::{FromRow, Row};

use super::{collection::collection_json, common::link};
use crate::{
    access::{Caller, policy::visible_to_caller},
    bbox::Bbox,
    dataset_record::{DATASET_COLUMNS, Dataset},
    extract::{LinkCredential, Query},
    interval::Interval,
    ogc_html::{self, Format, FormatQuery, alternate_link, page::PageContext},
    page::{Limit, Offset},
    state::AppState,
};

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub(super) struct CollectionsQuery {
    #[serde(default)]
    #[param(value_type = Option<i64>, minimum = 1, maximum = 10000, default = 1000)]
    limit: Limit<1000, 10000>,
    #[serde(default)]
    #[param(value_type = Option<i64>, minimum = 0, default = 0)]
    offset: Offset,
    /// Words of the title, description or keywords.
    q: Option<String>,
    /// minx,miny,maxx,maxy in CRS84: collections whose extent meets it.
    #[param(value_type = Option<Vec<f64>>)]
    bbox: Option<String>,
    /// An RFC 3339 instant or date, or an interval start/end: collections
    /// updated since its start and created before its end.
    datetime: Option<String>,
    /// Read by `Format` (and documented by `FormatQuery`).
    #[allow(dead_code)]
    #[param(ignore)]
    f: Option<String>,
}

/// The collections the caller may see, a page at a time.
#[utoipa::path(get, path = "/api/collections", tag = "ogc", params(CollectionsQuery, FormatQuery),
    responses((status = 200, description = "a page of the collections: `numberMatched` in all, `next` and `prev` links", content(("application/json"), (String = "text/html"))),
              (status = 400, description = "an unknown parameter or `f`, a bad page, bbox or datetime", body = catalog_shared::Problem, content_type = "application/problem+json")))]
pub(super) async fn collections(
    State(state): State<AppState>,
    caller: Caller,
    credential: LinkCredential,
    format: Format,
    Query(query): Query<CollectionsQuery>,
) -> Result<Response, AppError> {
    let (limit, offset) = (query.limit.get(), query.offset.get());
    // An empty value filters nothing, as an absent one.
    let given = |value: &Option<String>| value.clone().filter(|v| !v.trim().is_empty());
    let (q, bbox_text, datetime) = (given(&query.q), given(&query.bbox), given(&query.datetime));
    let text = q.as_deref();
    let bbox = bbox_text
        .as_deref()
        .map(|b| b.parse::<Bbox>().map(|b| b.to_array().to_vec()))
        .transpose()?;
    let interval = datetime
        .as_deref()
        .map(Interval::parse)
        .transpose()?
        .unwrap_or_default();
    // The records collection is the list's first entry, while nothing filters it.
    let with_catalog = text.is_none() && bbox.is_none() && datetime.is_none();
    let catalog_here = with_catalog && offset == 0;
    let dataset_offset = offset - i64::from(with_catalog && offset > 0);
    let dataset_limit = limit - i64::from(catalog_here);

    let sql = |select: &str, page: &str| {
        format!(
            include_str!("collections.sql"),
            select = select,
            visible = visible_to_caller("datasets"),
            ready = PublicationStatus::Ready,
            extent = crate::bbox::sql_geometry("extent_bbox"),
            bbox = crate::bbox::sql_geometry("$4"),
            page = page,
        )
    };
    let reader = state.db.reader(caller.user_id(), 0).await.pool;
    let filtered = |sql: String| {
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(caller.user_id())
            .bind(caller.is_admin())
            .bind(text)
            .bind(bbox.clone())
            .bind(interval.start)
            .bind(interval.end)
    };
    let rows = filtered(sql(
        &format!("{DATASET_COLUMNS}, count(*) OVER () AS total"),
        "ORDER BY title, id LIMIT $7 OFFSET $8",
    ))
    .bind(dataset_limit)
    .bind(dataset_offset)
    .fetch_all(reader)
    .await?;
    // Past the last page no row carries the count.
    let datasets_matched: i64 = match rows.first() {
        Some(row) => row.try_get("total")?,
        None => filtered(sql("count(*)", "")).fetch_one(reader).await?.try_get(0)?,
    };
    let datasets = rows.iter().map(Dataset::from_row).collect::<Result<Vec<_>, _>>()?;

    let base = &state.config.public_url;
    let mut collections = Vec::with_capacity(datasets.len() + 1);
    if catalog_here {
        collections.push(crate::records::catalog_collection_json(base, &credential));
    }
    collections.extend(
        datasets
            .iter()
            .map(|d| collection_json(&state, &caller, d, &credential)),
    );
    let matched = datasets_matched + i64::from(with_catalog);
    let returned = collections.len() as i64;
    let page = |offset: i64| {
        let mut pairs = url::form_urlencoded::Serializer::new(String::new());
        for (key, value) in [("q", &q), ("bbox", &bbox_text), ("datetime", &datetime)] {
            if let Some(value) = value {
                pairs.append_pair(key, value);
            }
        }
        pairs.append_pair("limit", &limit.to_string());
        if offset > 0 {
            pairs.append_pair("offset", &offset.to_string());
        }
        credential.on(format!("{base}/api/collections?{}", pairs.finish()))
    };
    let href = page(offset);
    let mut links = vec![
        link(href.clone(), "self", "application/json", "this page of the collections"),
        alternate_link(&href),
    ];
    if offset + returned < matched {
        links.push(link(page(offset + limit), "next", "application/json", "the next page"));
    }
    if offset > 0 {
        links.push(link(
            page((offset - limit).max(0)),
            "prev",
            "application/json",
            "the previous page",
        ));
    }
    let document = json!({
        "collections": collections,
        "numberMatched": matched,
        "numberReturned": returned,
        "links": links,
    });
    let context = PageContext {
        base,
        credential: &credential,
    };
    Ok(format.answer(
        || Json(&document).into_response(),
        || ogc_html::features::collections(&context, &document),
    ))
}
