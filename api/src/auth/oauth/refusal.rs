//! How a sign-in ends when it does not: the error code the web UI explains.
use catalog_shared::AppError;

/// A sign-in refused or failed after the provider answered: the browser
/// goes back to the web UI with an error code it can explain.
#[derive(Debug)]
pub(super) struct Refusal {
    pub(super) code: &'static str,
    pub(super) detail: String,
}

pub(super) fn refuse(code: &'static str, detail: impl Into<String>) -> Refusal {
    Refusal {
        code,
        detail: detail.into(),
    }
}

impl From<AppError> for Refusal {
    fn from(e: AppError) -> Self {
        refuse("server_error", e.to_string())
    }
}

impl From<sqlx::Error> for Refusal {
    fn from(e: sqlx::Error) -> Self {
        AppError::from(e).into()
    }
}
