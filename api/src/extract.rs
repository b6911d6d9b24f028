//! Extractors whose rejections are problem documents.
use axum::extract::FromRequest;
use axum::extract::FromRequestParts;
use catalog_shared::AppError;

#[derive(FromRequest)]
#[from_request(via(axum::Json), rejection(AppError))]
pub struct Json<T>(pub T);

#[derive(FromRequestParts)]
#[from_request(via(axum::extract::Path), rejection(AppError))]
pub struct Path<T>(pub T);

#[derive(FromRequestParts)]
#[from_request(via(axum::extract::Query), rejection(AppError))]
pub struct Query<T>(pub T);

#[derive(FromRequest)]
#[from_request(via(axum::Form), rejection(AppError))]
pub struct Form<T>(pub T);

/// `limit` (1..=max, `default` when absent) and `offset` (not negative) of
/// a paged list; out of range is a 400.
pub fn page(limit: Option<i64>, offset: Option<i64>, default: i64, max: i64) -> Result<(i64, i64), AppError> {
    let limit = limit.unwrap_or(default);
    if !(1..=max).contains(&limit) {
        return Err(AppError::bad_request(format!("limit must be from 1 to {max}")));
    }
    let offset = offset.unwrap_or(0);
    if offset < 0 {
        return Err(AppError::bad_request("offset must not be negative"));
    }
    Ok((limit, offset))
}
