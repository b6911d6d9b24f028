//! The two cookies of cookie mode: the refresh token (httpOnly) and the
//! CSRF value a script reads and echoes in `X-CSRF-Token`.
use axum::http::{HeaderMap, HeaderValue, header};

pub const REFRESH_COOKIE: &str = "refresh_token";
pub const CSRF_COOKIE: &str = "csrf_token";
pub const AUTH_MODE_HEADER: &str = "x-service-auth-mode";
pub const CSRF_HEADER: &str = "x-csrf-token";

pub fn cookie_mode(headers: &HeaderMap) -> bool {
    headers
        .get(AUTH_MODE_HEADER)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("cookie"))
}

pub fn get(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_string())
}

/// Set-Cookie values for a fresh refresh token and CSRF value; an empty
/// refresh token with `max_age` 0 clears both.
pub fn set(headers: &mut HeaderMap, refresh_token: &str, csrf: &str, max_age_secs: i64, secure: bool) {
    let secure = if secure { "; Secure" } else { "" };
    let refresh = format!(
        "{REFRESH_COOKIE}={refresh_token}; HttpOnly; SameSite=Strict; Path=/api/auth; Max-Age={max_age_secs}{secure}"
    );
    let csrf = format!("{CSRF_COOKIE}={csrf}; SameSite=Strict; Path=/; Max-Age={max_age_secs}{secure}");
    for value in [refresh, csrf] {
        if let Ok(v) = HeaderValue::from_str(&value) {
            headers.append(header::SET_COOKIE, v);
        }
    }
}
