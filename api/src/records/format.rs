//! The representations the records routes answer: their JSON, their page
//! (`ogc_html::Format`), or DCAT-AP 3 in JSON-LD (`f=jsonld`, or an
//! `Accept` that ranks `application/ld+json` above JSON and HTML).
use axum::{extract::FromRequestParts, http::request::Parts};
use catalog_shared::AppError;

use crate::{
    extract::Query,
    ogc_html::{Format, quality},
};

pub const JSON_LD: &str = "application/ld+json";

pub enum RecordFormat {
    Other(Format),
    JsonLd,
}

/// The `f` of the records routes, for the document (the extractor reads
/// the query itself).
#[derive(serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct RecordFormatQuery {
    /// `json`, `html` or `jsonld` (DCAT-AP 3); without it, `Accept` decides
    #[param(inline)]
    f: Option<RecordFormatName>,
}

#[derive(serde::Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
enum RecordFormatName {
    Json,
    Html,
    Jsonld,
}

impl<S: Send + Sync> FromRequestParts<S> for RecordFormat {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, AppError> {
        let Query(pairs) = Query::<Vec<(String, String)>>::from_request_parts(parts, state).await?;
        match pairs.iter().rev().find(|(name, _)| name == "f") {
            Some((_, f)) if f == "jsonld" || f == JSON_LD => return Ok(Self::JsonLd),
            Some(_) => {}
            None => {
                let accept = parts
                    .headers
                    .get_all(axum::http::header::ACCEPT)
                    .iter()
                    .filter_map(|v| v.to_str().ok())
                    .collect::<Vec<_>>()
                    .join(",");
                let others = ["application/json", "application/geo+json", "text/html"]
                    .iter()
                    .map(|t| quality(&accept, t))
                    .fold(0.0, f32::max);
                if quality(&accept, JSON_LD) > others {
                    return Ok(Self::JsonLd);
                }
            }
        }
        Ok(Self::Other(Format::from_request_parts(parts, state).await?))
    }
}
