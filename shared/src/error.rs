use axum::{
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use serde::{Deserialize, Serialize};

/// An RFC 9457 problem document: the body of every error the service gives,
/// and the `error` member of a failed job.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct Problem {
    #[serde(rename = "type")]
    pub kind: String,
    pub title: String,
    pub status: u16,
    pub detail: String,
}

impl Problem {
    pub fn new(status: StatusCode, detail: impl Into<String>) -> Self {
        Self {
            kind: "about:blank".into(),
            title: status.canonical_reason().unwrap_or("Error").into(),
            status: status.as_u16(),
            detail: detail.into(),
        }
    }
}

/// The one error type of the service; it renders as `application/problem+json`.
/// A server error keeps its cause out of the body; the response carries it
/// (as `ServerErrorCause`) to the one place that logs it, the API's trace
/// middleware, with the request id.
#[derive(Debug)]
pub struct AppError {
    pub problem: Problem,
    headers: Vec<(header::HeaderName, HeaderValue)>,
    /// Boxed: every `Result` carries this type, so it stays small.
    extra: Option<Box<Extra>>,
}

/// What few errors carry.
#[derive(Debug, Default)]
struct Extra {
    /// Why, for the log only.
    cause: Option<String>,
    /// A JSON answer sent instead of the problem: a read that cannot be
    /// served yet leaves its handler the way an error does.
    answer: Option<serde_json::Value>,
    /// The database could not serve the statement (a replica cancelled it,
    /// a server went away): a read may be tried again elsewhere.
    database_unavailable: bool,
}

/// Why a request answered 5xx, for the log line and never for the caller.
#[derive(Clone, Debug)]
pub struct ServerErrorCause(pub String);

/// On a response whose database could not serve the statement
/// (`is_unavailable`): a read may succeed on another server.
#[derive(Clone, Copy, Debug)]
pub struct DatabaseUnavailable;

pub type AppResult<T> = Result<T, AppError>;

impl AppError {
    pub fn new(status: StatusCode, detail: impl Into<String>) -> Self {
        Self {
            problem: Problem::new(status, detail),
            headers: Vec::new(),
            extra: None,
        }
    }
    pub fn bad_request(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, detail)
    }
    pub fn unauthorized(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, detail)
            .with_header(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"))
    }
    pub fn forbidden(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, detail)
    }
    pub fn not_found(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, detail)
    }
    pub fn conflict(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, detail)
    }
    pub fn unprocessable(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, detail)
    }
    /// A 422 whose detail starts with the field it is about.
    pub fn invalid_field(field: &str, why: &str) -> Self {
        Self::unprocessable(format!("{field}: {why}"))
    }
    pub fn payload_too_large(limit: u64) -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the upload is larger than the limit of {limit} bytes (MAX_UPLOAD_BYTES)"),
        )
    }
    pub fn unavailable(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, detail)
            .with_header(header::RETRY_AFTER, HeaderValue::from_static("5"))
    }
    pub fn too_many_requests(retry_after_secs: u64) -> Self {
        Self::new(
            StatusCode::TOO_MANY_REQUESTS,
            format!("too many requests from this address; try again in {retry_after_secs} s"),
        )
        .with_header(header::RETRY_AFTER, HeaderValue::from(retry_after_secs))
    }
    pub fn internal(cause: impl std::fmt::Display) -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the server could not complete the request; it has been logged",
        )
        .with_cause(cause)
    }
    /// Records why (logged with the response, never shown to the caller).
    pub fn with_cause(mut self, cause: impl std::fmt::Display) -> Self {
        self.extra.get_or_insert_default().cause = Some(cause.to_string());
        self
    }
    /// The cause recorded for the log, if any.
    pub fn cause(&self) -> Option<&str> {
        self.extra.as_ref()?.cause.as_deref()
    }
    /// 202 with `answer` as the body: the request is taken, its result
    /// comes later (a cold dataset being rehydrated), retry after
    /// `retry_after_secs`.
    pub fn accepted(answer: serde_json::Value, retry_after_secs: u64) -> Self {
        let mut error = Self::new(StatusCode::ACCEPTED, "the request is taken; retry later").with_header(
            header::RETRY_AFTER,
            HeaderValue::from_str(&retry_after_secs.to_string()).expect("digits"),
        );
        error.extra.get_or_insert_default().answer = Some(answer);
        error
    }
    pub fn with_header(mut self, name: header::HeaderName, value: HeaderValue) -> Self {
        self.headers.push((name, value));
        self
    }
    pub fn status(&self) -> StatusCode {
        StatusCode::from_u16(self.problem.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }
}

impl std::fmt::Display for AppError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {}: {}",
            self.problem.status, self.problem.title, self.problem.detail
        )
    }
}

impl std::error::Error for AppError {}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        let status = self.status();
        let extra = self.extra.map(|e| *e).unwrap_or_default();
        let mut response = match extra.answer {
            Some(answer) => (status, axum::Json(answer)).into_response(),
            None => {
                let mut response = (status, axum::Json(self.problem)).into_response();
                response.headers_mut().insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/problem+json"),
                );
                response
            }
        };
        let headers = response.headers_mut();
        for (name, value) in self.headers {
            headers.insert(name, value);
        }
        if let Some(cause) = extra.cause {
            response.extensions_mut().insert(ServerErrorCause(cause));
        }
        if extra.database_unavailable {
            response.extensions_mut().insert(DatabaseUnavailable);
        }
        response
    }
}

/// True when the error means the database could not be reached, as opposed
/// to a query that is wrong.
pub fn is_unavailable(e: &sqlx::Error) -> bool {
    matches!(
        e,
        sqlx::Error::PoolTimedOut | sqlx::Error::Io(_) | sqlx::Error::PoolClosed | sqlx::Error::Tls(_)
    ) || matches!(e, sqlx::Error::Database(db) if db.code().is_some_and(|c| is_unavailable_code(&c)))
}

/// SQLSTATEs that say the server cannot serve right now rather than that
/// the statement is wrong: connection failures (08), operator shutdowns
/// (57P), exhausted resources (53), connections refused to a database
/// that is not accepting them (55000, 3D000), and a read replica cancelling
/// a query that conflicts with what it replays (40001; the service runs
/// no serializable transactions, where it would mean anything else).
fn is_unavailable_code(code: &str) -> bool {
    code.starts_with("08")
        || code.starts_with("57P")
        || code.starts_with("53")
        || code == "55000"
        || code == "3D000"
        || code == "40001"
}

impl From<sqlx::Error> for AppError {
    fn from(e: sqlx::Error) -> Self {
        if is_unavailable(&e) {
            let mut error =
                Self::unavailable("the database could not serve the request; try again shortly").with_cause(e);
            error.extra.get_or_insert_default().database_unavailable = true;
            return error;
        }
        match e {
            sqlx::Error::RowNotFound => Self::not_found("not found"),
            // Class 22, data exception: a value the request brought that
            // PostgreSQL cannot hold (a NUL character, a number out of
            // range), so the caller's to fix.
            sqlx::Error::Database(db) if db.code().is_some_and(|c| c.starts_with("22")) => {
                Self::unprocessable(format!("a value in the request cannot be stored: {}", db.message()))
            }
            other => Self::internal(other),
        }
    }
}

impl From<object_store::Error> for AppError {
    fn from(e: object_store::Error) -> Self {
        match e {
            object_store::Error::NotFound { .. } => Self::not_found("stored object not found"),
            full if crate::storage::is_out_of_space(&full) => Self::new(
                StatusCode::INSUFFICIENT_STORAGE,
                "the object store is full: nothing was kept; an operator must free space",
            )
            .with_cause(full),
            refused if crate::storage::is_refused(&refused) => Self::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the object store refused this service access (permission denied, a read-only file system or rejected credentials): nothing was kept; an operator must fix the store's permissions",
            )
            .with_cause(refused),
            other => {
                Self::unavailable("the object store could not serve the request; try again shortly").with_cause(other)
            }
        }
    }
}

// Axum's own rejections, rendered as problems like every other error.
macro_rules! rejection_into_problem {
    ($($rejection:ty),*) => {$(
        impl From<$rejection> for AppError {
            fn from(r: $rejection) -> Self {
                // The extractors answer 5xx only when reading the body
                // failed: the client hung up or stopped sending, which is
                // not the server's failure (nor an alert's business).
                if r.status().is_server_error() {
                    return Self::bad_request(format!(
                        "the request body could not be read to its end: {}",
                        r.body_text()
                    ));
                }
                Self::new(r.status(), r.body_text())
            }
        }
    )*};
}

rejection_into_problem!(
    axum::extract::rejection::JsonRejection,
    axum::extract::rejection::QueryRejection,
    axum::extract::rejection::FormRejection,
    axum::extract::rejection::BytesRejection,
    axum::extract::multipart::MultipartRejection,
    axum::extract::multipart::MultipartError
);

impl From<axum::extract::rejection::PathRejection> for AppError {
    fn from(r: axum::extract::rejection::PathRejection) -> Self {
        use axum::extract::path::ErrorKind;
        use axum::extract::rejection::PathRejection;
        // A malformed id in the path names no resource. Said in words a
        // person mistyping an address acts on, not the parser's.
        let detail = match &r {
            PathRejection::FailedToDeserializePathParams(e) => match e.kind() {
                ErrorKind::ParseErrorAtKey { key, value, .. } | ErrorKind::DeserializeError { key, value, .. } => {
                    Some(mistyped(value, key))
                }
                ErrorKind::ParseErrorAtIndex {
                    value, expected_type, ..
                }
                | ErrorKind::ParseError { value, expected_type } => Some(mistyped(value, expected_type)),
                _ => None,
            },
            _ => None,
        };
        Self::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            detail.unwrap_or_else(|| r.body_text()),
        )
    }
}

/// What a mistyped part of an address should have been, from the name of
/// its parameter or type: an id, or a whole number (a tile's z, x, y, a
/// version).
fn mistyped(value: &str, name: &str) -> String {
    let value: String = value.chars().take(80).collect();
    let name = name.to_ascii_lowercase();
    let wanted = if name.ends_with("_id") || name.ends_with("id") || name.contains("uuid") {
        "an id: ids are 36 characters of hex digits and dashes, like 0f8fad5b-d9cb-469f-a165-70867728950e"
    } else if [
        "u8", "u16", "u32", "u64", "i32", "i64", "usize", "z", "x", "y", "version",
    ]
    .iter()
    .any(|n| name == *n || name.ends_with(&format!("::{n}")))
    {
        "a whole number"
    } else {
        "what this address takes there"
    };
    format!("the address holds {value:?}, which is not {wanted}; check the link or what was typed")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mistyped_address_is_named_in_words() {
        assert!(mistyped("datasets-abc", "dataset_id").contains("is not an id"));
        assert!(mistyped("1e3", "z").contains("not a whole number"));
        assert!(mistyped("1e3", "u32").contains("not a whole number"));
        let long = "x".repeat(500);
        assert!(mistyped(&long, "map_id").len() < 250, "a long value is cut");
    }

    fn store_error(kind: std::io::ErrorKind) -> object_store::Error {
        object_store::Error::Generic {
            store: "LocalFileSystem",
            source: Box::new(std::io::Error::from(kind)),
        }
    }

    #[test]
    fn a_full_store_answers_507_a_refusing_one_500_and_other_store_failures_503() {
        for kind in [std::io::ErrorKind::StorageFull, std::io::ErrorKind::QuotaExceeded] {
            let error = AppError::from(store_error(kind));
            assert_eq!(error.status(), StatusCode::INSUFFICIENT_STORAGE, "{kind:?}");
            assert!(error.problem.detail.contains("full"), "{}", error.problem.detail);
        }
        for kind in [
            std::io::ErrorKind::PermissionDenied,
            std::io::ErrorKind::ReadOnlyFilesystem,
        ] {
            let error = AppError::from(store_error(kind));
            assert_eq!(error.status(), StatusCode::INTERNAL_SERVER_ERROR, "{kind:?}");
            assert!(error.problem.detail.contains("refused"), "{}", error.problem.detail);
        }
        let denied_by_s3 = object_store::Error::PermissionDenied {
            path: "uploads/x".into(),
            source: "403 AccessDenied".into(),
        };
        assert_eq!(AppError::from(denied_by_s3).status(), StatusCode::INTERNAL_SERVER_ERROR);
        for kind in [std::io::ErrorKind::ConnectionRefused, std::io::ErrorKind::TimedOut] {
            let error = AppError::from(store_error(kind));
            assert_eq!(error.status(), StatusCode::SERVICE_UNAVAILABLE, "{kind:?}");
        }
    }
}
