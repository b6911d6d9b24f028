//! Extractors whose rejections are problem documents. Handlers take their
//! input through these, never through axum's own extractors, whose
//! rejections are plain text (clippy's `disallowed-types` holds to that).
#![allow(clippy::disallowed_types)]
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::{Method, Uri, request::Parts};
use catalog_shared::AppError;

/// A JSON body of type `T`. An integer field also takes a number written
/// with a zero fraction (`2.0`): JSON Schema, and with it the OpenAPI 3.1
/// document, counts that as an integer, and so do clients that write every
/// number as a float.
pub struct Json<T>(pub T);

impl<T: serde::de::DeserializeOwned, S: Send + Sync> FromRequest<S> for Json<T> {
    type Rejection = AppError;
    async fn from_request(request: Request, state: &S) -> Result<Self, AppError> {
        let (parts, body) = request.into_parts();
        let bytes = Bytes::from_request(Request::from_parts(parts.clone(), body), state).await?;
        let again = Request::from_parts(parts, axum::body::Body::from(bytes.clone()));
        let value = match axum::Json::<T>::from_request(again, state).await {
            Ok(axum::Json(value)) => value,
            Err(axum::extract::rejection::JsonRejection::JsonDataError(refused)) => {
                match integral_numbers_as_integers(&bytes).and_then(|b| axum::Json::<T>::from_bytes(&b).ok()) {
                    Some(axum::Json(value)) => value,
                    None => return Err(axum::extract::rejection::JsonRejection::from(refused).into()),
                }
            }
            Err(refused) => return Err(refused.into()),
        };
        refuse_array(&bytes)?;
        Ok(Self(value))
    }
}

/// Every JSON body the API takes is an object; serde would also read a
/// struct from an array of its fields in order (`[null, null]`), which no
/// client means.
pub fn refuse_array(body: &[u8]) -> Result<(), AppError> {
    match body.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'[') => Err(AppError::unprocessable("the body must be a JSON object")),
        _ => Ok(()),
    }
}

/// The JSON text with every number that has a zero fraction (`2.0`, `1e3`)
/// written as an integer, or `None` when it has none (or is no JSON).
fn integral_numbers_as_integers(bytes: &[u8]) -> Option<Vec<u8>> {
    fn rewrite(value: &mut serde_json::Value) -> bool {
        match value {
            serde_json::Value::Number(n) if n.is_f64() => {
                let f = n.as_f64().unwrap_or(f64::NAN);
                // Exactly representable as i64 (2^63 itself is not).
                if f.fract() == 0.0 && (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&f) {
                    *value = serde_json::Value::from(f as i64);
                    true
                } else {
                    false
                }
            }
            serde_json::Value::Array(items) => rewrite_all(items.iter_mut()),
            serde_json::Value::Object(fields) => rewrite_all(fields.values_mut()),
            _ => false,
        }
    }
    // Every one rewritten, not only up to the first.
    fn rewrite_all<'a>(values: impl Iterator<Item = &'a mut serde_json::Value>) -> bool {
        let mut changed = false;
        for value in values {
            changed |= rewrite(value);
        }
        changed
    }
    let mut value: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    rewrite(&mut value).then(|| serde_json::to_vec(&value).ok()).flatten()
}

#[derive(FromRequestParts)]
#[from_request(via(axum::extract::Path), rejection(AppError))]
pub struct Path<T>(pub T);

/// The refusal of a query string that names a parameter twice, by its
/// decoded name (`limit=1&%6Cimit=2` names `limit` twice): no parameter of
/// this API is repeatable (lists are one comma-separated value), and which
/// of two a route would read is not the caller's to guess. `edge` asks it
/// of every request, so every route refuses alike, whether it reads its
/// query through `Query`, by hand or not at all.
pub fn refuse_repeated_parameters(query: Option<&str>) -> Result<(), AppError> {
    let Some(query) = query else {
        return Ok(());
    };
    let mut seen = std::collections::HashSet::new();
    for (name, _) in url::form_urlencoded::parse(query.as_bytes()) {
        if !seen.insert(name.clone()) {
            return Err(AppError::bad_request(format!(
                "the query parameter {name:?} is given more than once; no parameter is repeatable (a list is one comma-separated value)"
            )));
        }
    }
    Ok(())
}

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
    /// A query's pairs with the caller's credential among them, for links
    /// that repeat the request's own query.
    pub fn kept_in(&self, mut pairs: Vec<(String, String)>) -> Vec<(String, String)> {
        if let Some(key) = &self.0 {
            pairs.push(("api_key".into(), key.clone()));
        }
        pairs
    }

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

#[cfg(test)]
mod tests {
    use super::{integral_numbers_as_integers, refuse_repeated_parameters};

    #[test]
    fn a_parameter_named_twice_is_refused_by_its_decoded_name() {
        for query in [
            "limit=1&limit=2",
            "limit=1&limit=1",
            "limit=1&%6Cimit=2",
            "bbox=0,0,1,1&f=json&bbox=0,0,2,2",
            "filter=a&filter",
            "a+b=1&a%20b=2",
            "api_key=x&api_key=y",
        ] {
            let refused = refuse_repeated_parameters(Some(query)).err();
            assert_eq!(refused.map(|e| e.status().as_u16()), Some(400), "{query}");
        }
        for query in [
            None,
            Some(""),
            Some("limit=1&offset=2"),
            Some("a=1&A=2"),
            Some("a=1&&b=2"),
        ] {
            assert!(refuse_repeated_parameters(query).is_ok(), "{query:?}");
        }
    }

    #[test]
    fn numbers_with_a_zero_fraction_become_integers() {
        let rewritten =
            integral_numbers_as_integers(br#"{"port": 25.0, "a": [1e3, 1.5, -0.0], "b": {"c": 7}}"#).unwrap();
        let value: serde_json::Value = serde_json::from_slice(&rewritten).unwrap();
        assert_eq!(
            value,
            serde_json::json!({"port": 25, "a": [1000, 1.5, 0], "b": {"c": 7}})
        );
        assert!(
            integral_numbers_as_integers(br#"{"port": 25, "x": 1.5}"#).is_none(),
            "nothing to rewrite"
        );
        assert!(integral_numbers_as_integers(b"{not json").is_none());
        let huge = integral_numbers_as_integers(br#"[1e19]"#);
        assert!(huge.is_none(), "past i64 stays as it was");
    }
}
