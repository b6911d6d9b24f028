//! Single sign-on by the authorization-code flow with PKCE (S256) for
//! every provider type. The login route sends the browser to the provider;
//! the callback exchanges the code, learns who signed in (a verified OIDC
//! ID token, or the userinfo endpoint of plain OAuth 2.0), applies the
//! allowed-domain and linking rules, and sends the browser to the web UI's
//! `/oauth/callback` with a session. The `oauth2` crate runs the protocol
//! (state, PKCE, code exchange); `openidconnect` reads discovery documents,
//! key sets and claims, and verifies ID tokens. Every request to a provider
//! goes through the outbound guard.
use std::{pin::Pin, time::Duration};

use axum::{
    extract::State,
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use catalog_shared::{AppError, outbound::OutboundPolicy, secrets::unseal};
use chrono::{TimeDelta, Utc};
use oauth2::{
    AsyncHttpClient, AuthType, AuthUrl, AuthorizationCode, ClientId, ClientSecret, CsrfToken, EndpointNotSet,
    EndpointSet, ExtraTokenFields, HttpRequest, HttpResponse, PkceCodeChallenge, PkceCodeVerifier, RedirectUrl,
    RequestTokenError, Scope, StandardRevocableToken, StandardTokenResponse, TokenResponse, TokenUrl,
    basic::{BasicErrorResponse, BasicRevocationErrorResponse, BasicTokenIntrospectionResponse, BasicTokenType},
};
use openidconnect::{
    AdditionalClaims, EndUserEmail, EndUserName, EndUserUsername, IssuerUrl, JsonWebKeySetUrl, LocalizedClaim, Nonce,
    StandardClaims, SubjectIdentifier,
    core::{
        CoreGenderClaim, CoreIdTokenVerifier, CoreJsonWebKeySet, CoreJweContentEncryptionAlgorithm,
        CoreJwsSigningAlgorithm, CoreProviderMetadata,
    },
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use url::Url;
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

use super::{
    api_keys,
    providers::{PROVIDER_COLUMNS, Provider, auth_settings},
    tokens::{mint_pair, set_session_cookies},
};
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
/// How far the provider's clock may run ahead of ours when an ID token expires.
const CLOCK_SKEW: TimeDelta = TimeDelta::seconds(60);
/// Providers sign ID tokens with their published keys; a shared-secret
/// algorithm would let a token be made from public material.
const PUBLISHED_KEY_ALGORITHMS: [CoreJwsSigningAlgorithm; 9] = [
    CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha256,
    CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha384,
    CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha512,
    CoreJwsSigningAlgorithm::RsaSsaPssSha256,
    CoreJwsSigningAlgorithm::RsaSsaPssSha384,
    CoreJwsSigningAlgorithm::RsaSsaPssSha512,
    CoreJwsSigningAlgorithm::EcdsaP256Sha256,
    CoreJwsSigningAlgorithm::EcdsaP384Sha384,
    CoreJwsSigningAlgorithm::EdDsa,
];
/// Multi-tenant directories publish an issuer template that each ID token
/// fills with its own tenant (`tid`).
const TENANT_PLACEHOLDER: &str = "{tenantid}";

/// A sign-in refused or failed after the provider answered: the browser
/// goes back to the web UI with an error code it can explain.
#[derive(Debug)]
struct Refusal {
    code: &'static str,
    detail: String,
}

fn refuse(code: &'static str, detail: impl Into<String>) -> Refusal {
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

fn callback_url(state: &AppState, slug: &str) -> String {
    format!("{}/api/auth/oauth/{slug}/callback", state.config.public_url)
}

/// Where a provider's endpoints are: its discovery document, or the URLs
/// configured (plain OAuth 2.0, or OIDC without discovery); a configured
/// URL wins over a discovered one.
struct Endpoints {
    authorize: AuthUrl,
    token: TokenUrl,
    userinfo: Option<String>,
    /// Known from a discovery document only: without it, userinfo alone
    /// says who signed in.
    signer: Option<Signer>,
}

/// Who issues a provider's ID tokens and where its signing keys are.
struct Signer {
    issuer: IssuerUrl,
    keys: JsonWebKeySetUrl,
}

async fn fetch_json(request: reqwest::RequestBuilder) -> Result<Value, String> {
    let response = request
        .header(header::ACCEPT, "application/json")
        .send()
        .await
        .map_err(|e| format!("the provider could not be reached: {e}"))?;
    let status = response.status();
    let body = response
        .bytes()
        .await
        .map_err(|e| format!("the provider's answer broke off: {e}"))?;
    if !status.is_success() {
        return Err(format!("the provider answered {status}"));
    }
    serde_json::from_slice(&body).map_err(|_| "the provider's answer is not JSON".to_string())
}

async fn endpoints(http: &reqwest::Client, policy: &OutboundPolicy, p: &Provider) -> Result<Endpoints, String> {
    // The guarded resolver sees host names only: every URL the service
    // itself calls (not the browser's authorize URL) is checked here too.
    let allowed = |url: &str| {
        let parsed = Url::parse(url).map_err(|_| format!("{url} is not a URL"))?;
        policy
            .check_url(&parsed)
            .map_err(|why| format!("the provider's URL {url} is refused: {why}"))
    };
    let configured = |url: &Option<String>| url.clone().filter(|u| !u.is_empty());
    let discovered = match configured(&p.discovery_url) {
        Some(url) => Some({
            allowed(&url)?;
            serde_json::from_value::<CoreProviderMetadata>(fetch_json(http.get(&url)).await?)
                .map_err(|e| format!("the discovery document is not usable: {e}"))?
        }),
        None => None,
    };
    let document = discovered.as_ref();
    let authorize = configured(&p.authorize_url)
        .or(document.map(|d| d.authorization_endpoint().to_string()))
        .ok_or("no authorize_url configured")?;
    let token = match (configured(&p.token_url), document) {
        (Some(url), _) => url,
        (None, Some(d)) => d
            .token_endpoint()
            .ok_or("the discovery document names no token_endpoint")?
            .to_string(),
        (None, None) => return Err("no token_url configured".into()),
    };
    allowed(&token)?;
    let userinfo = configured(&p.userinfo_url).or(document.and_then(|d| d.userinfo_endpoint()).map(|u| u.to_string()));
    if let Some(url) = &userinfo {
        allowed(url)?;
    }
    if let Some(d) = document {
        allowed(d.jwks_uri().as_str())?;
    }
    Ok(Endpoints {
        authorize: AuthUrl::new(authorize).map_err(|_| "the provider's authorize URL is not a URL")?,
        token: TokenUrl::new(token).map_err(|_| "the provider's token URL is not a URL")?,
        userinfo,
        signer: discovered.map(|d| Signer {
            issuer: d.issuer().clone(),
            keys: d.jwks_uri().clone(),
        }),
    })
}

/// The ID token as the token endpoint sent it: read and verified on its own,
/// so that a malformed one is refused as such rather than as a broken answer.
#[derive(Debug, Deserialize, Serialize)]
struct IdTokenField {
    id_token: Option<String>,
}

impl ExtraTokenFields for IdTokenField {}

type ProviderTokens = StandardTokenResponse<IdTokenField, BasicTokenType>;

type ProviderClient = oauth2::Client<
    BasicErrorResponse,
    ProviderTokens,
    BasicTokenIntrospectionResponse,
    StandardRevocableToken,
    BasicRevocationErrorResponse,
    EndpointSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointSet,
>;

fn oauth_client(state: &AppState, provider: &Provider, endpoints: &Endpoints) -> Result<ProviderClient, AppError> {
    let callback = RedirectUrl::new(callback_url(state, &provider.slug)).map_err(AppError::internal)?;
    Ok(oauth2::Client::new(ClientId::new(provider.client_id.clone()))
        .set_auth_uri(endpoints.authorize.clone())
        .set_token_uri(endpoints.token.clone())
        .set_redirect_uri(callback)
        // The secret travels in the form body, which every provider type takes.
        .set_auth_type(AuthType::RequestBody))
}

/// The HTTP client the `oauth2` crate calls: ours, policy-checked and with
/// our timeouts, rather than one of the crate's own.
struct Outbound<'a>(&'a reqwest::Client);

impl<'c> AsyncHttpClient<'c> for Outbound<'_> {
    type Error = reqwest::Error;
    type Future = Pin<Box<dyn Future<Output = reqwest::Result<HttpResponse>> + Send + 'c>>;

    fn call(&'c self, request: HttpRequest) -> Self::Future {
        Box::pin(async move {
            let response = self.0.execute(request.try_into()?).await?;
            let mut answer = HttpResponse::new(Vec::new());
            *answer.status_mut() = response.status();
            *answer.headers_mut() = response.headers().clone();
            *answer.body_mut() = response.bytes().await?.into();
            Ok(answer)
        })
    }
}

/// Why a code exchange failed, never with the provider's answer itself (it
/// may hold tokens).
fn exchange_failure(e: RequestTokenError<reqwest::Error, BasicErrorResponse>) -> String {
    match e {
        RequestTokenError::ServerResponse(answer) => format!("the provider answered {}", answer.error()),
        RequestTokenError::Request(e) => format!("the provider could not be reached: {e}"),
        RequestTokenError::Parse(..) => "the provider's answer is not a token response".into(),
        RequestTokenError::Other(why) => why,
    }
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

/// Who signed in, as the provider says.
#[derive(Debug, Default)]
struct Identity {
    subject: String,
    email: Option<String>,
    email_verified: bool,
    name: Option<String>,
}

impl Identity {
    /// From the standard claims of an ID token or of userinfo.
    fn from_claims(
        subject: &SubjectIdentifier,
        email: Option<&EndUserEmail>,
        email_verified: Option<bool>,
        preferred_username: Option<&EndUserUsername>,
        name: Option<&LocalizedClaim<EndUserName>>,
    ) -> Self {
        Identity {
            subject: subject.to_string(),
            email: email.map(|e| e.to_string()),
            email_verified: email_verified.unwrap_or(false),
            name: preferred_username
                .map(|u| u.to_string())
                .or_else(|| name.and_then(|n| n.get(None)).map(|n| n.to_string())),
        }
    }
}

/// `verified` and `primary` are booleans, but some providers send strings.
fn truthy(v: &Value) -> bool {
    v.as_bool().unwrap_or_else(|| v.as_str() == Some("true"))
}

async fn sign_in(
    state: &AppState,
    slug: &str,
    code: &str,
    verifier: &str,
    nonce: &str,
) -> Result<(Uuid, i32), Refusal> {
    let provider = enabled_provider(state, slug).await?;
    let secret = unseal(&state.config.jwt_secret, &provider.client_secret)?;
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

/// The identity in a verified ID token, completed from userinfo when the
/// token carries no email; userinfo alone when no ID token came.
async fn oidc_identity(
    http: &reqwest::Client,
    provider: &Provider,
    endpoints: &Endpoints,
    tokens: &ProviderTokens,
    nonce: &str,
) -> Result<Identity, Refusal> {
    let mut identity = match (&tokens.extra_fields().id_token, &endpoints.signer) {
        (Some(id_token), Some(signer)) => id_token_identity(http, provider, signer, id_token, nonce).await?,
        _ => Identity::default(),
    };
    if identity.email.is_none() || identity.subject.is_empty() {
        let Some(userinfo) = &endpoints.userinfo else {
            return Ok(identity);
        };
        let info = fetch_json(http.get(userinfo).bearer_auth(tokens.access_token().secret()))
            .await
            .map_err(|why| refuse("provider_error", format!("userinfo: {why}")))?;
        let from_userinfo = userinfo_identity(info)?;
        if identity.subject.is_empty() {
            identity = from_userinfo;
        } else if from_userinfo.subject == identity.subject {
            identity.email = from_userinfo.email;
            identity.email_verified = from_userinfo.email_verified;
        }
    }
    Ok(identity)
}

fn userinfo_identity(info: Value) -> Result<Identity, Refusal> {
    let claims: StandardClaims<CoreGenderClaim> = serde_json::from_value(info)
        .map_err(|_| refuse("provider_error", "userinfo: the provider's answer names no subject"))?;
    Ok(Identity::from_claims(
        claims.subject(),
        claims.email(),
        claims.email_verified(),
        claims.preferred_username(),
        claims.name(),
    ))
}

/// The tenant claim that fills a multi-tenant directory's issuer template.
#[derive(Debug, Deserialize, Serialize)]
struct Tenant {
    tid: Option<String>,
}

impl AdditionalClaims for Tenant {}

type IdToken =
    openidconnect::IdToken<Tenant, CoreGenderClaim, CoreJweContentEncryptionAlgorithm, CoreJwsSigningAlgorithm>;

/// Who an ID token says signed in, checked against the provider's keys.
async fn id_token_identity(
    http: &reqwest::Client,
    provider: &Provider,
    signer: &Signer,
    id_token: &str,
    nonce: &str,
) -> Result<Identity, Refusal> {
    let keys: CoreJsonWebKeySet = serde_json::from_value(
        fetch_json(http.get(signer.keys.as_str()))
            .await
            .map_err(|why| refuse("provider_error", format!("the provider's keys: {why}")))?,
    )
    .map_err(|_| refuse("invalid_id_token", "the provider's key set is malformed"))?;
    verify_id_token(id_token, keys, &signer.issuer, &provider.client_id, nonce)
}

/// The identity in an ID token whose signature (by one of `keys`), issuer,
/// audience, expiry and nonce check out.
fn verify_id_token(
    id_token: &str,
    keys: CoreJsonWebKeySet,
    issuer: &IssuerUrl,
    client_id: &str,
    nonce: &str,
) -> Result<Identity, Refusal> {
    let invalid = |why: String| refuse("invalid_id_token", why);
    let id_token: IdToken = id_token
        .parse()
        .map_err(|_| invalid("the ID token is malformed".into()))?;
    let issuer_template = issuer.contains(TENANT_PLACEHOLDER);
    let verifier = CoreIdTokenVerifier::new_public_client(ClientId::new(client_id.to_string()), issuer.clone(), keys)
        .set_allowed_algs(PUBLISHED_KEY_ALGORITHMS)
        .require_issuer_match(!issuer_template)
        // Our client id must be among the audiences; others beside it are
        // accepted, as they always were here.
        .set_other_audience_verifier_fn(|_| true)
        .set_time_fn(|| Utc::now() - CLOCK_SKEW);
    let claims = id_token
        .claims(&verifier, &Nonce::new(nonce.to_string()))
        .map_err(|e| invalid(format!("the ID token does not verify: {e}")))?;
    if issuer_template {
        let tenant = claims.additional_claims().tid.as_deref().unwrap_or_default();
        if tenant.is_empty() || claims.issuer().as_str() != issuer.replace(TENANT_PLACEHOLDER, tenant) {
            return Err(invalid("the ID token's issuer does not match the provider".into()));
        }
    }
    Ok(Identity::from_claims(
        claims.subject(),
        claims.email(),
        claims.email_verified(),
        claims.preferred_username(),
        claims.name(),
    ))
}

/// The identity of a plain OAuth 2.0 provider (idp_b): its user record,
/// and of its addresses only the primary, verified one.
async fn oauth2_identity(
    client: &reqwest::Client,
    endpoints: &Endpoints,
    access_token: &str,
) -> Result<Identity, Refusal> {
    let userinfo = endpoints
        .userinfo
        .as_ref()
        .ok_or_else(|| refuse("provider_error", "no userinfo_url configured"))?;
    let user = fetch_json(client.get(userinfo).bearer_auth(access_token))
        .await
        .map_err(|why| refuse("provider_error", format!("user record: {why}")))?;
    let subject = match &user["id"] {
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.clone(),
        _ => String::new(),
    };
    let emails = fetch_json(
        client
            .get(format!("{}/emails", userinfo.trim_end_matches('/')))
            .bearer_auth(access_token),
    )
    .await
    .unwrap_or(Value::Null);
    let primary = emails.as_array().and_then(|list| {
        list.iter()
            .find(|e| truthy(&e["primary"]) && truthy(&e["verified"]))
            .and_then(|e| e["email"].as_str())
    });
    Ok(Identity {
        subject,
        email: primary.map(String::from),
        email_verified: primary.is_some(),
        name: user["login"].as_str().or(user["name"].as_str()).map(String::from),
    })
}

fn domain_of(email: &str) -> Option<String> {
    email.rsplit_once('@').map(|(_, d)| d.to_ascii_lowercase())
}

/// A username from the email's local part or the provider's display name:
/// lower-case letters, digits, '.', '_' and '-', at most 40 characters.
fn username_base(identity: &Identity) -> String {
    let source = identity
        .email
        .as_deref()
        .filter(|_| identity.email_verified)
        .and_then(|e| e.split('@').next())
        .or(identity.name.as_deref())
        .unwrap_or("user");
    let base: String = source
        .to_lowercase()
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect::<String>()
        .trim_matches(|c| c == '-' || c == '.')
        .chars()
        .take(40)
        .collect();
    if base.is_empty() { "user".into() } else { base }
}

#[derive(sqlx::FromRow)]
struct Account {
    id: Uuid,
    email: Option<String>,
    role: String,
    status: String,
    is_active: bool,
    token_version: i32,
    auth_provider: String,
}

const ACCOUNT_COLUMNS: &str = "id, email, role, status, is_active, token_version, auth_provider";

/// The allowed-domain rule and the linking rules, in the order of the
/// specification: an existing link signs in its account; else a verified
/// email links to the local account holding it (a conversion: its API keys
/// die); an unverified email that a local account holds is refused; else a
/// new account with the provider's default role.
async fn link_account(state: &AppState, provider: &Provider, identity: Identity) -> Result<(Uuid, i32), Refusal> {
    let mut tx = state.pool.begin().await?;
    let settings = auth_settings(&mut *tx).await?;
    let allowed = |email: &str| {
        settings.allowed_email_domains.is_empty()
            || domain_of(email).is_some_and(|d| settings.allowed_email_domains.contains(&d))
    };
    let verified_email = identity.email.clone().filter(|_| identity.email_verified);
    let linked: Option<Account> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {ACCOUNT_COLUMNS} FROM users WHERE id = (
            SELECT user_id FROM oauth_accounts WHERE provider_id = $1 AND subject = $2)"
    )))
    .bind(provider.id)
    .bind(&identity.subject)
    .fetch_optional(&mut *tx)
    .await?;
    let account = if let Some(account) = linked {
        let exempt = account.role == "admin";
        let address = verified_email.clone().or(account.email.clone());
        if !exempt && !address.as_deref().is_some_and(allowed) {
            return Err(refuse(
                "domain_not_allowed",
                "the account's email domain is not among the allowed domains",
            ));
        }
        account
    } else {
        if !verified_email.as_deref().is_some_and(allowed) && !settings.allowed_email_domains.is_empty() {
            return Err(refuse(
                "domain_not_allowed",
                "a verified email address in an allowed domain is needed to sign in",
            ));
        }
        link_new_identity(&mut tx, provider, &identity, verified_email.as_deref()).await?
    };
    if account.status != "active" || !account.is_active {
        return Err(refuse(
            "account_inactive",
            format!(
                "the account is {}; it cannot sign in",
                if account.is_active {
                    &account.status
                } else {
                    "deactivated"
                }
            ),
        ));
    }
    sqlx::query("UPDATE oauth_accounts SET last_login_at = now() WHERE provider_id = $1 AND subject = $2")
        .bind(provider.id)
        .bind(&identity.subject)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok((account.id, account.token_version))
}

/// The account an identity signing in for the first time is linked to:
/// the account holding its email when the provider verified it (a local
/// one moves to the provider, its API keys revoked), else a new one.
async fn link_new_identity(
    tx: &mut sqlx::PgConnection,
    provider: &Provider,
    identity: &Identity,
    verified_email: Option<&str>,
) -> Result<Account, Refusal> {
    let holder: Option<Account> = match &identity.email {
        Some(email) => {
            sqlx::query_as(sqlx::AssertSqlSafe(format!(
                "SELECT {ACCOUNT_COLUMNS} FROM users WHERE lower(email) = lower($1)"
            )))
            .bind(email)
            .fetch_optional(&mut *tx)
            .await?
        }
        None => None,
    };
    let account = match (holder, identity.email_verified) {
        (Some(holder), true) if holder.auth_provider != "local" && holder.auth_provider != provider.slug => {
            return Err(refuse(
                "email_in_use",
                "an account with this email signs in with another provider; sign in there",
            ));
        }
        (Some(holder), true) => {
            if holder.auth_provider != provider.slug {
                sqlx::query("UPDATE users SET auth_provider = $2, updated_at = now() WHERE id = $1")
                    .bind(holder.id)
                    .bind(&provider.slug)
                    .execute(&mut *tx)
                    .await?;
                api_keys::revoke_all(&mut *tx, holder.id).await?;
            }
            holder
        }
        (Some(_), false) => {
            return Err(refuse(
                "email_not_verified",
                "an account with this email exists, but the provider did not verify the address",
            ));
        }
        (None, _) => create_account(tx, provider, identity, verified_email).await?,
    };
    sqlx::query("INSERT INTO oauth_accounts (id, provider_id, subject, user_id, email) VALUES ($1, $2, $3, $4, $5)")
        .bind(Uuid::now_v7())
        .bind(provider.id)
        .bind(&identity.subject)
        .bind(account.id)
        .bind(verified_email)
        .execute(&mut *tx)
        .await?;
    Ok(account)
}

async fn create_account(
    tx: &mut sqlx::PgConnection,
    provider: &Provider,
    identity: &Identity,
    email: Option<&str>,
) -> Result<Account, Refusal> {
    let base = username_base(identity);
    let taken: Vec<String> =
        sqlx::query_scalar("SELECT lower(username) FROM users WHERE lower(username) LIKE lower($1) || '%'")
            .bind(&base)
            .fetch_all(&mut *tx)
            .await?;
    let username = std::iter::once(base.clone())
        .chain((2..).map(|n| format!("{base}{n}")))
        .find(|candidate| !taken.contains(candidate))
        .unwrap_or(base);
    let account = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "INSERT INTO users (id, username, email, role, auth_provider) VALUES ($1, $2, $3, $4, $5)
         RETURNING {ACCOUNT_COLUMNS}"
    )))
    .bind(Uuid::now_v7())
    .bind(&username)
    .bind(email)
    .bind(&provider.default_role)
    .bind(&provider.slug)
    .fetch_one(&mut *tx)
    .await?;
    tracing::info!(provider = %provider.slug, %username, "account created at single sign-on");
    Ok(account)
}

#[cfg(test)]
mod tests {
    use super::*;

    use openidconnect::{
        Audience, EndUserEmail, IdTokenClaims, JsonWebKeyId, PrivateSigningKey,
        core::{CoreEdDsaPrivateSigningKey, CoreHmacKey},
    };
    use serde_json::json;

    /// A key made for these tests only.
    const TEST_KEY: &str = "-----BEGIN PRIVATE KEY-----
MC4CAQAwBQYDK2VwBCIEIHtagT5qZ6pPiDAC2+t4HKy6oaAKLg3ikv+EuST/P7Rh
-----END PRIVATE KEY-----";
    const CLIENT: &str = "catalog";
    const NONCE: &str = "nonce-of-this-sign-in";

    fn key() -> CoreEdDsaPrivateSigningKey {
        CoreEdDsaPrivateSigningKey::from_ed25519_pem(TEST_KEY, Some(JsonWebKeyId::new("k1".into()))).unwrap()
    }

    fn published_keys() -> CoreJsonWebKeySet {
        CoreJsonWebKeySet::new(vec![key().as_verification_key()])
    }

    fn issuer(url: &str) -> IssuerUrl {
        IssuerUrl::new(url.into()).unwrap()
    }

    /// Claims that verify for `CLIENT` and `NONCE`, from `iss`, expiring `expires_in` from now.
    fn claims(iss: &str, tenant: Option<&str>, expires_in: TimeDelta) -> IdTokenClaims<Tenant, CoreGenderClaim> {
        IdTokenClaims::new(
            issuer(iss),
            vec![Audience::new(CLIENT.into()), Audience::new("another-app".into())],
            Utc::now() + expires_in,
            Utc::now(),
            StandardClaims::new(SubjectIdentifier::new("sub-1".into()))
                .set_email(Some(EndUserEmail::new("a@example.org".into())))
                .set_email_verified(Some(true)),
            Tenant {
                tid: tenant.map(String::from),
            },
        )
        .set_nonce(Some(Nonce::new(NONCE.into())))
    }

    fn signed(claims: IdTokenClaims<Tenant, CoreGenderClaim>) -> String {
        IdToken::new(claims, &key(), CoreJwsSigningAlgorithm::EdDsa, None, None)
            .unwrap()
            .to_string()
    }

    fn verify(token: &str, iss: &str, nonce: &str) -> Result<Identity, &'static str> {
        verify_id_token(token, published_keys(), &issuer(iss), CLIENT, nonce).map_err(|r| r.code)
    }

    const ISSUER: &str = "https://idp.example.org";

    #[test]
    fn id_tokens_verify_with_the_published_keys_issuer_audience_and_nonce() {
        let token = signed(claims(ISSUER, None, TimeDelta::minutes(5)));
        let identity = verify(&token, ISSUER, NONCE).unwrap();
        assert_eq!(identity.subject, "sub-1");
        assert_eq!(identity.email.as_deref(), Some("a@example.org"));
        assert!(identity.email_verified);
        assert_eq!(
            verify(&token, "https://other.example.org", NONCE).err(),
            Some("invalid_id_token")
        );
        assert_eq!(verify(&token, ISSUER, "another-nonce").err(), Some("invalid_id_token"));
        assert_eq!(verify("not.a.token", ISSUER, NONCE).err(), Some("invalid_id_token"));
        let elsewhere = CoreJsonWebKeySet::new(Vec::new());
        assert!(verify_id_token(&token, elsewhere, &issuer(ISSUER), CLIENT, NONCE).is_err());
    }

    #[test]
    fn expired_id_tokens_are_refused_past_the_clock_skew() {
        let lately = signed(claims(ISSUER, None, TimeDelta::seconds(-30)));
        assert!(verify(&lately, ISSUER, NONCE).is_ok(), "within the skew");
        let long_ago = signed(claims(ISSUER, None, TimeDelta::seconds(-120)));
        assert_eq!(verify(&long_ago, ISSUER, NONCE).err(), Some("invalid_id_token"));
    }

    #[test]
    fn shared_secret_signatures_are_refused() {
        // Anyone can make an HMAC signature from material the client holds.
        let hmac = CoreHmacKey::new(b"the client secret".to_vec());
        let token = IdToken::new(
            claims(ISSUER, None, TimeDelta::minutes(5)),
            &hmac,
            CoreJwsSigningAlgorithm::HmacSha256,
            None,
            None,
        )
        .unwrap()
        .to_string();
        assert_eq!(verify(&token, ISSUER, NONCE).err(), Some("invalid_id_token"));
    }

    #[test]
    fn issuer_templates_are_filled_with_the_token_tenant() {
        let template = "https://login.example.org/{tenantid}/v2.0";
        let own = signed(claims(
            "https://login.example.org/t1/v2.0",
            Some("t1"),
            TimeDelta::minutes(5),
        ));
        assert!(verify(&own, template, NONCE).is_ok());
        let borrowed = signed(claims(
            "https://login.example.org/t1/v2.0",
            Some("t2"),
            TimeDelta::minutes(5),
        ));
        assert_eq!(verify(&borrowed, template, NONCE).err(), Some("invalid_id_token"));
        let untenanted = signed(claims("https://login.example.org/t1/v2.0", None, TimeDelta::minutes(5)));
        assert_eq!(verify(&untenanted, template, NONCE).err(), Some("invalid_id_token"));
    }

    #[test]
    fn userinfo_claims_take_string_booleans_and_need_a_subject() {
        let identity = userinfo_identity(json!({"sub": "7", "email": "b@example.org", "email_verified": "true",
            "name": "Bea"}))
        .unwrap();
        assert!(identity.email_verified);
        assert_eq!(identity.name.as_deref(), Some("Bea"));
        let named = userinfo_identity(json!({"sub": "7", "preferred_username": "bea", "name": "Bea"})).unwrap();
        assert_eq!(named.name.as_deref(), Some("bea"));
        assert!(!named.email_verified);
        assert_eq!(
            userinfo_identity(json!({"email": "b@example.org"}))
                .err()
                .map(|r| r.code),
            Some("provider_error")
        );
    }

    #[test]
    fn usernames_come_from_the_verified_email_or_the_name() {
        let mut identity = Identity {
            subject: "1".into(),
            email: Some("Jane.Doe+x@Example.org".into()),
            email_verified: true,
            name: Some("Jane Doe".into()),
        };
        assert_eq!(username_base(&identity), "jane.doe-x");
        identity.email_verified = false;
        assert_eq!(username_base(&identity), "jane-doe");
        identity.name = None;
        assert_eq!(username_base(&identity), "user");
    }
}
