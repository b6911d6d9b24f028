//! Single sign-on by the authorization-code flow with PKCE (S256) for
//! every provider type. The login route sends the browser to the provider;
//! the callback exchanges the code, learns who signed in (a verified OIDC
//! ID token, or the userinfo endpoint of plain OAuth 2.0), applies the
//! allowed-domain and linking rules, and sends the browser to the web UI's
//! `/oauth/callback` with a session. The `oauth2` crate runs the protocol
//! (state, PKCE, code exchange); `openidconnect` reads discovery documents,
//! key sets and claims, and verifies ID tokens. Every request to a provider
//! goes through the outbound guard.
use std::time::Duration;

use axum::{
    extract::State,
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use catalog_shared::{AppError, secrets::unseal};
use oauth2::{AuthorizationCode, ClientSecret, CsrfToken, PkceCodeChallenge, PkceCodeVerifier, Scope, TokenResponse};
use openidconnect::Nonce;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use url::Url;
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

use super::{
    providers::{PROVIDER_COLUMNS, Provider},
    tokens::{mint_pair, set_session_cookies},
};
use linking::link_account;
use provider::{Outbound, endpoints, exchange_failure, oauth_client, oauth2_identity, oidc_identity};
use refusal::{Refusal, refuse};

mod linking;
mod provider;
mod refusal;
use crate::{
    extract::{Path, Query},
    state::AppState,
};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(oauth_login))
        .routes(routes!(oauth_callback))
}

/// How long a sign-in may take between leaving for the provider and coming back.
const LOGIN_WINDOW_MINUTES: i32 = 10;
const PROVIDER_TIMEOUT: Duration = Duration::from_secs(20);

fn redirect(location: &str, headers: HeaderMap) -> Response {
    let mut response = (StatusCode::FOUND, headers).into_response();
    if let Ok(value) = HeaderValue::from_str(location) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    response
}

async fn enabled_provider(state: &AppState, slug: &str) -> Result<Provider, AppError> {
    let sql = format!("SELECT {PROVIDER_COLUMNS} FROM oauth_providers WHERE slug = $1 AND enabled");
    sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(slug)
        .fetch_optional(&state.pool)
        .await?
        .ok_or_else(|| AppError::not_found(format!("no enabled sign-in provider {slug:?}")))
}

/// Sends the browser to the provider (authorization code, PKCE S256, state).
#[utoipa::path(get, path = "/api/auth/oauth/{slug}/login", tag = "auth", params(("slug" = String, Path)),
    responses((status = 302, description = "to the provider's authorize endpoint"),
              (status = 404, body = catalog_shared::Problem, content_type = "application/problem+json"),
              (status = 502, body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn oauth_login(State(state): State<AppState>, Path(slug): Path<String>) -> Result<Response, AppError> {
    let provider = enabled_provider(&state, &slug).await?;
    let http = state.outbound.client(PROVIDER_TIMEOUT).map_err(AppError::internal)?;
    let endpoints = endpoints(&http, &state.outbound, &provider)
        .await
        .map_err(|why| AppError::new(StatusCode::BAD_GATEWAY, format!("sign-in provider {slug}: {why}")))?;
    let client = oauth_client(&state, &provider, &endpoints)?;
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let nonce = Nonce::new_random();
    let mut request = client
        .authorize_url(|| CsrfToken::new_random_len(32))
        .add_scopes(provider.scopes.split_whitespace().map(|s| Scope::new(s.into())))
        .set_pkce_challenge(challenge);
    if provider.is_oidc() {
        request = request.add_extra_param("nonce", nonce.secret());
    }
    let (authorize, login_state) = request.url();
    sqlx::query("DELETE FROM oauth_logins WHERE created_at < now() - make_interval(mins => $1)")
        .bind(LOGIN_WINDOW_MINUTES)
        .execute(&state.pool)
        .await?;
    sqlx::query("INSERT INTO oauth_logins (state, provider_id, code_verifier, nonce) VALUES ($1, $2, $3, $4)")
        .bind(login_state.secret())
        .bind(provider.id)
        .bind(verifier.secret())
        .bind(nonce.secret())
        .execute(&state.pool)
        .await?;
    // The state is bound to this browser: the callback must come back with
    // this cookie, so a sign-in started by someone else cannot be finished
    // in a victim's browser (login CSRF).
    let mut headers = HeaderMap::new();
    let secure = if state.config.public_url.starts_with("https://") {
        "; Secure"
    } else {
        ""
    };
    let cookie = format!(
        "{LOGIN_COOKIE}={}; HttpOnly; SameSite=Lax; Path=/api/auth/oauth/; Max-Age={}{secure}",
        browser_binding(login_state.secret()),
        LOGIN_WINDOW_MINUTES * 60
    );
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        headers.insert(header::SET_COOKIE, value);
    }
    Ok(redirect(authorize.as_str(), headers))
}

const LOGIN_COOKIE: &str = "oauth_login";

/// What the browser keeps of a sign-in it started: a digest of the state.
fn browser_binding(login_state: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(format!("oauth-login:{login_state}").as_bytes()))
}

#[derive(Deserialize, utoipa::IntoParams)]
struct CallbackQuery {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
}

/// Back from the provider: on success the browser goes to the web UI's
/// `/oauth/callback` with the access token in the fragment and the refresh
/// token in cookies (as in cookie mode); on refusal with `error` and
/// `error_description` in the query.
#[utoipa::path(get, path = "/api/auth/oauth/{slug}/callback", tag = "auth", params(("slug" = String, Path), CallbackQuery),
    responses((status = 302, description = "to the web UI's /oauth/callback"),
              (status = 400, body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn oauth_callback(
    State(state): State<AppState>,
    Path(slug): Path<String>,
    Query(query): Query<CallbackQuery>,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let login_state = query
        .state
        .ok_or_else(|| AppError::bad_request("the sign-in came back without its state"))?;
    if super::cookies::get(&headers, LOGIN_COOKIE).as_deref() != Some(browser_binding(&login_state).as_str()) {
        return Err(AppError::bad_request(
            "this sign-in was started in another browser (or its cookie was blocked); start again",
        ));
    }
    let started: Option<(String, String, Uuid)> = sqlx::query_as(
        "DELETE FROM oauth_logins l USING oauth_providers p
         WHERE l.state = $1 AND p.id = l.provider_id AND p.slug = $2
           AND l.created_at > now() - make_interval(mins => $3)
         RETURNING l.code_verifier, l.nonce, p.id",
    )
    .bind(&login_state)
    .bind(&slug)
    .bind(LOGIN_WINDOW_MINUTES)
    .fetch_optional(&state.pool)
    .await?;
    let (verifier, nonce, _) = started.ok_or_else(|| {
        AppError::bad_request("this sign-in was not started here, was already used, or expired; start again")
    })?;
    let ui = format!("{}/oauth/callback", state.config.public_url);
    let outcome = match (query.error, query.code) {
        (Some(error), _) => Err(refuse(
            "access_denied",
            format!(
                "the provider refused the sign-in: {error}{}",
                query.error_description.map(|d| format!(" ({d})")).unwrap_or_default()
            ),
        )),
        (None, None) => Err(refuse("invalid_request", "the provider sent no authorization code")),
        (None, Some(code)) => sign_in(&state, &slug, &code, &verifier, &nonce).await,
    };
    match outcome {
        Ok((user_id, token_version)) => {
            let (access, refresh) = mint_pair(&state, user_id, token_version, None).await?;
            let mut headers = HeaderMap::new();
            set_session_cookies(&state, &mut headers, &refresh);
            let ttl = state.config.access_token_ttl.as_secs();
            Ok(redirect(
                &format!("{ui}#access_token={access}&token_type=bearer&expires_in={ttl}"),
                headers,
            ))
        }
        Err(refusal) => {
            tracing::info!(provider = %slug, code = refusal.code, detail = %refusal.detail, "single sign-on refused");
            let mut location = Url::parse(&ui).map_err(AppError::internal)?;
            location
                .query_pairs_mut()
                .append_pair("error", refusal.code)
                .append_pair("error_description", &refusal.detail);
            Ok(redirect(location.as_str(), HeaderMap::new()))
        }
    }
}

async fn sign_in(
    state: &AppState,
    slug: &str,
    code: &str,
    verifier: &str,
    nonce: &str,
) -> Result<(Uuid, i32), Refusal> {
    let provider = enabled_provider(state, slug).await?;
    let secret = unseal(&state.config.jwt_secret, &provider.client_secret).map_err(AppError::from)?;
    // The exchange sends the client secret in its body, which a 307 or 308
    // would carry on: no redirect may leave the provider's origin.
    let http = state
        .outbound
        .client_for_credentials(PROVIDER_TIMEOUT)
        .map_err(AppError::internal)?;
    let upstream = |why: String| refuse("provider_error", why);
    let endpoints = endpoints(&http, &state.outbound, &provider).await.map_err(upstream)?;
    let tokens = oauth_client(state, &provider, &endpoints)?
        .set_client_secret(ClientSecret::new(secret))
        .exchange_code(AuthorizationCode::new(code.to_string()))
        .set_pkce_verifier(PkceCodeVerifier::new(verifier.to_string()))
        .request_async(&Outbound(&http))
        .await
        .map_err(|e| upstream(format!("the code exchange failed: {}", exchange_failure(e))))?;
    let identity = if provider.is_oidc() {
        oidc_identity(&http, &provider, &endpoints, &tokens, nonce).await?
    } else {
        oauth2_identity(&http, &endpoints, tokens.access_token().secret()).await?
    };
    if identity.subject.is_empty() {
        return Err(refuse("provider_error", "the provider did not say who signed in"));
    }
    link_account(state, &provider, identity).await
}
