//! Extractors whose rejections are problem documents. Handlers take their
//! input through these, never through axum's own extractors, whose
//! rejections are plain text (clippy's `disallowed-types` holds to that).
#![allow(clippy::disallowed_types)]
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::{Method, Uri, request::Parts};
use catalog_shared::AppError;

#[derive(FromRequest)]
#[from_request(via(axum::Json), rejection(AppError))]
pub struct Json<T>(pub T);

#[derive(FromRequestParts)]
#[from_request(via(axum::extract::Path), rejection(AppError))]
pub struct Path<T>(pub T);

/// A query string's typed parameters. The `api_key` credential is read
/// by `edge` (`access::credentials`) and left out here, so no route with
/// `deny_unknown_fields` refuses it as unknown.
pub struct Query<T>(pub T);

impl<T: serde::de::DeserializeOwned, S: Send + Sync> FromRequestParts<S> for Query<T> {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, AppError> {
        let without_key = match parts.uri.query() {
            Some(query) if url::form_urlencoded::parse(query.as_bytes()).any(|(k, _)| k == "api_key") => {
                let rest = url::form_urlencoded::Serializer::new(String::new())
                    .extend_pairs(url::form_urlencoded::parse(query.as_bytes()).filter(|(k, _)| k != "api_key"))
                    .finish();
                Some(
                    Uri::builder()
                        .path_and_query(format!("/?{rest}"))
                        .build()
                        .map_err(AppError::internal)?,
                )
            }
            _ => None,
        };
        let uri = without_key.as_ref().unwrap_or(&parts.uri);
        Ok(Self(axum::extract::Query::try_from_uri(uri)?.0))
    }
}

#[derive(FromRequest)]
#[from_request(via(axum::Form), rejection(AppError))]
pub struct Form<T>(pub T);

/// A `multipart/form-data` body; anything else is a 400 problem.
pub struct Multipart(axum::extract::Multipart);

impl<S: Send + Sync> FromRequest<S> for Multipart {
    type Rejection = AppError;
    async fn from_request(request: Request, state: &S) -> Result<Self, AppError> {
        Ok(Self(axum::extract::Multipart::from_request(request, state).await?))
    }
}

impl Multipart {
    /// The next part; a malformed or oversized stream is a problem.
    pub async fn next_field(&mut self) -> Result<Option<axum::extract::multipart::Field<'_>>, AppError> {
        Ok(self.0.next_field().await?)
    }
}

/// The raw body, for routes that read it themselves; a body over the
/// size limit is a 413 problem.
pub struct Body(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for Body {
    type Rejection = AppError;
    async fn from_request(request: Request, state: &S) -> Result<Self, AppError> {
        Ok(Self(Bytes::from_request(request, state).await?))
    }
}

/// The caller's query-string credential (`api_key`, a credential on reads
/// only). Every link written for that caller carries it on, so a client
/// that follows links keeps its access; no other parameter rides along.
#[derive(Clone, Default)]
pub struct LinkCredential(Option<String>);

impl<S: Send + Sync> FromRequestParts<S> for LinkCredential {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let reads = matches!(parts.method, Method::GET | Method::HEAD);
        let key = reads
            .then(|| url::form_urlencoded::parse(parts.uri.query()?.as_bytes()).find(|(k, _)| k == "api_key"))
            .flatten()
            .map(|(_, v)| v.into_owned());
        Ok(Self(key))
    }
}

impl LinkCredential {
    /// The link with the caller's credential added to its query.
    pub fn on(&self, href: String) -> String {
        let Some(key) = &self.0 else {
            return href;
        };
        let separator = if href.contains('?') { '&' } else { '?' };
        let pair = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("api_key", key)
            .finish();
        format!("{href}{separator}{pair}")
    }
}
