//! An identity provider for the single sign-on tests, on loopback: OpenID
//! Connect (discovery, authorization code with PKCE, RS256 ID tokens,
//! JWKS, userinfo) and the plain OAuth 2.0 shape of idp_b (`/user`,
//! `/user/emails`). It signs in whoever the test says is next.
use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{SystemTime, UNIX_EPOCH},
};

use axum::{
    Form, Json, Router,
    extract::{Query, State},
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Redirect, Response},
    routing::{get, post},
};
use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

pub const CLIENT_ID: &str = "catalog-test-client";
pub const CLIENT_SECRET: &str = "idp-client-secret-0123456789";

/// Who the provider signs in next.
#[derive(Clone, Debug, Default)]
pub struct Person {
    pub subject: String,
    pub email: Option<String>,
    /// `None` leaves the claim out.
    pub email_verified: Option<bool>,
    pub name: Option<String>,
    /// idp_b addresses: (email, primary, verified).
    pub addresses: Vec<(String, bool, bool)>,
}

struct Grant {
    person: Person,
    challenge: String,
    nonce: Option<String>,
    redirect_uri: String,
}

#[derive(Default)]
struct Inner {
    next: Person,
    grants: HashMap<String, Grant>,
    sessions: HashMap<String, Person>,
    authorize_requests: Vec<HashMap<String, String>>,
}

#[derive(Clone)]
pub struct Idp {
    pub base: String,
    inner: Arc<Mutex<Inner>>,
}

fn random() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

impl Idp {
    pub async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let idp = Idp {
            base,
            inner: Arc::default(),
        };
        let app = Router::new()
            .route("/.well-known/openid-configuration", get(discovery))
            .route("/authorize", get(authorize))
            .route("/token", post(token))
            .route("/jwks", get(jwks))
            .route("/userinfo", get(userinfo))
            .route("/user", get(github_user))
            .route("/user/emails", get(github_emails))
            .with_state(idp.clone());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        idp
    }

    /// host:port, for OUTBOUND_ALLOWED_HOSTS.
    pub fn host(&self) -> String {
        self.base.trim_start_matches("http://").to_string()
    }

    pub fn sign_in_next(&self, person: Person) {
        self.inner.lock().unwrap().next = person;
    }

    /// The query of every authorize request received.
    pub fn authorize_requests(&self) -> Vec<HashMap<String, String>> {
        self.inner.lock().unwrap().authorize_requests.clone()
    }
}

async fn discovery(State(idp): State<Idp>) -> Json<Value> {
    let base = &idp.base;
    Json(json!({
        "issuer": base,
        "authorization_endpoint": format!("{base}/authorize"),
        "token_endpoint": format!("{base}/token"),
        "userinfo_endpoint": format!("{base}/userinfo"),
        "jwks_uri": format!("{base}/jwks"),
        "response_types_supported": ["code"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256"],
        "code_challenge_methods_supported": ["S256"],
    }))
}

async fn authorize(State(idp): State<Idp>, Query(query): Query<HashMap<String, String>>) -> Response {
    let mut inner = idp.inner.lock().unwrap();
    inner.authorize_requests.push(query.clone());
    let (Some(redirect_uri), Some(state), Some(challenge)) = (
        query.get("redirect_uri"),
        query.get("state"),
        query.get("code_challenge"),
    ) else {
        return (
            StatusCode::BAD_REQUEST,
            "redirect_uri, state and code_challenge are required",
        )
            .into_response();
    };
    if query.get("client_id").map(String::as_str) != Some(CLIENT_ID)
        || query.get("code_challenge_method").map(String::as_str) != Some("S256")
    {
        return (StatusCode::BAD_REQUEST, "unknown client or no S256 challenge").into_response();
    }
    let code = random();
    let grant = Grant {
        person: inner.next.clone(),
        challenge: challenge.clone(),
        nonce: query.get("nonce").cloned(),
        redirect_uri: redirect_uri.clone(),
    };
    inner.grants.insert(code.clone(), grant);
    let mut location = url::Url::parse(redirect_uri).unwrap();
    location
        .query_pairs_mut()
        .append_pair("code", &code)
        .append_pair("state", state);
    Redirect::to(location.as_str()).into_response()
}

fn invalid_grant(why: &str) -> Response {
    (
        StatusCode::BAD_REQUEST,
        Json(json!({"error": "invalid_grant", "error_description": why})),
    )
        .into_response()
}

async fn token(State(idp): State<Idp>, Form(form): Form<HashMap<String, String>>) -> Response {
    let field = |name: &str| form.get(name).cloned().unwrap_or_default();
    if field("client_id") != CLIENT_ID || field("client_secret") != CLIENT_SECRET {
        return (StatusCode::UNAUTHORIZED, Json(json!({"error": "invalid_client"}))).into_response();
    }
    let mut inner = idp.inner.lock().unwrap();
    let Some(grant) = inner.grants.remove(&field("code")) else {
        return invalid_grant("unknown or used code");
    };
    if URL_SAFE_NO_PAD.encode(Sha256::digest(field("code_verifier").as_bytes())) != grant.challenge {
        return invalid_grant("the code verifier does not match the challenge");
    }
    if field("redirect_uri") != grant.redirect_uri {
        return invalid_grant("redirect_uri differs");
    }
    let access_token = random();
    inner.sessions.insert(access_token.clone(), grant.person.clone());
    let mut body = json!({"access_token": access_token, "token_type": "Bearer", "expires_in": 3600});
    if let Some(nonce) = grant.nonce {
        let person = &grant.person;
        let mut claims = json!({
            "iss": idp.base, "aud": CLIENT_ID, "sub": person.subject, "iat": now(), "exp": now() + 300,
            "nonce": nonce, "name": person.name,
        });
        if let Some(email) = &person.email {
            claims["email"] = json!(email);
        }
        if let Some(verified) = person.email_verified {
            claims["email_verified"] = json!(verified);
        }
        body["id_token"] = json!(sign(&claims));
    }
    Json(body).into_response()
}

fn sign(claims: &Value) -> String {
    let der = std::fs::read(crate::package_dir().join("fixtures/idp/signing-key.der")).unwrap();
    let key = jsonwebtoken::EncodingKey::from_rsa_der(&der);
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256);
    header.kid = Some("test-idp-1".into());
    jsonwebtoken::encode(&header, claims, &key).unwrap()
}

async fn jwks() -> Json<Value> {
    let jwks = std::fs::read(crate::package_dir().join("fixtures/idp/jwks.json")).unwrap();
    Json(serde_json::from_slice(&jwks).unwrap())
}

fn session(idp: &Idp, headers: &HeaderMap) -> Option<Person> {
    let token = headers.get("authorization")?.to_str().ok()?.strip_prefix("Bearer ")?;
    idp.inner.lock().unwrap().sessions.get(token).cloned()
}

async fn userinfo(State(idp): State<Idp>, headers: HeaderMap) -> Response {
    let Some(person) = session(&idp, &headers) else {
        return StatusCode::UNAUTHORIZED.into_response();
    };
    let mut info = json!({"sub": person.subject, "name": person.name});
    if let Some(email) = &person.email {
        info["email"] = json!(email);
    }
    if let Some(verified) = person.email_verified {
        info["email_verified"] = json!(verified);
    }
    Json(info).into_response()
}

async fn github_user(State(idp): State<Idp>, headers: HeaderMap) -> Response {
    let Some(person) = session(&idp, &headers) else {
        return StatusCode::UNAUTHORIZED.into_response();
    };
    let id: u64 = person.subject.parse().unwrap_or(1);
    Json(json!({"id": id, "login": person.name, "name": person.name, "email": person.email})).into_response()
}

async fn github_emails(State(idp): State<Idp>, headers: HeaderMap) -> Response {
    let Some(person) = session(&idp, &headers) else {
        return StatusCode::UNAUTHORIZED.into_response();
    };
    let list: Vec<Value> = person
        .addresses
        .iter()
        .map(|(email, primary, verified)| json!({"email": email, "primary": primary, "verified": verified}))
        .collect();
    Json(json!(list)).into_response()
}

/// What a browser ends with after a single sign-on round trip.
#[derive(Debug)]
pub struct SignIn {
    /// The web UI address the service sent the browser to.
    pub landing: url::Url,
    pub access_token: Option<String>,
    pub error: Option<String>,
    pub set_cookies: Vec<String>,
}

/// Follows the browser's path: our login route, the provider, our callback.
pub async fn browser_sign_in(service_base: &str, slug: &str) -> SignIn {
    let browser = crate::http_client()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let mut url = format!("{service_base}/api/auth/oauth/{slug}/login");
    let mut set_cookies: Vec<String> = Vec::new();
    for _ in 0..3 {
        // The browser sends back what the service set (name=value pairs).
        let mut request = browser.get(&url);
        if url.starts_with(service_base) && !set_cookies.is_empty() {
            let jar: Vec<&str> = set_cookies.iter().filter_map(|c| c.split(';').next()).collect();
            request = request.header("cookie", jar.join("; "));
        }
        let response = request.send().await.unwrap();
        // The service answers 302, as the specification says; the provider any redirect.
        if url.starts_with(service_base) {
            assert_eq!(response.status(), 302, "{url} answered {}", response.status());
        } else {
            assert!(
                response.status().is_redirection(),
                "{url} answered {}",
                response.status()
            );
        }
        set_cookies.extend(
            response
                .headers()
                .get_all("set-cookie")
                .iter()
                .map(|v| v.to_str().unwrap().to_string()),
        );
        url = response.headers()["location"].to_str().unwrap().to_string();
        if !url.contains("/authorize") && !url.contains("/api/auth/oauth/") {
            break;
        }
    }
    let landing = url::Url::parse(&url).unwrap();
    let fragment: HashMap<String, String> = url::form_urlencoded::parse(landing.fragment().unwrap_or("").as_bytes())
        .into_owned()
        .collect();
    let query: HashMap<String, String> = landing.query_pairs().into_owned().collect();
    SignIn {
        access_token: fragment.get("access_token").cloned(),
        error: query.get("error").cloned(),
        landing,
        set_cookies,
    }
}

/// The first two legs of a sign-in (our login route, the provider) as an
/// attacker would run them: the callback URL that would finish it.
pub async fn unfinished_sign_in(service_base: &str, slug: &str) -> String {
    let browser = crate::http_client()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let login = browser
        .get(format!("{service_base}/api/auth/oauth/{slug}/login"))
        .send()
        .await
        .unwrap();
    let authorize = login.headers()["location"].to_str().unwrap().to_string();
    let provider = browser.get(authorize).send().await.unwrap();
    provider.headers()["location"].to_str().unwrap().to_string()
}
