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
