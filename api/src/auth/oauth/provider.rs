//! What a sign-in provider says, by the protocol: where its endpoints are
//! (discovery or configuration), the code exchange through the outbound
//! guard, and who signed in (a verified OIDC ID token, completed from
//! userinfo, or a plain OAuth 2.0 user record).

use std::pin::Pin;

use axum::http::header;
use catalog_shared::{AppError, outbound::OutboundPolicy};
use chrono::{TimeDelta, Utc};
use oauth2::{
    AsyncHttpClient, AuthType, AuthUrl, ClientId, EndpointNotSet, EndpointSet, ExtraTokenFields, HttpRequest,
    HttpResponse, RedirectUrl, RequestTokenError, StandardRevocableToken, StandardTokenResponse, TokenResponse,
    TokenUrl,
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
use url::Url;

use super::refusal::{Refusal, refuse};
use crate::{auth::providers::Provider, state::AppState};

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

/// Where a provider's endpoints are: its discovery document, or the URLs
/// configured (plain OAuth 2.0, or OIDC without discovery); a configured
/// URL wins over a discovered one.
pub(super) struct Endpoints {
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

pub(super) async fn endpoints(
    http: &reqwest::Client,
    policy: &OutboundPolicy,
    p: &Provider,
) -> Result<Endpoints, String> {
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
pub(super) struct IdTokenField {
    id_token: Option<String>,
}

impl ExtraTokenFields for IdTokenField {}

pub(super) type ProviderTokens = StandardTokenResponse<IdTokenField, BasicTokenType>;

pub(super) type ProviderClient = oauth2::Client<
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

/// Where the provider sends the browser back.
pub(super) fn callback_url(state: &AppState, slug: &str) -> String {
    format!("{}/api/auth/oauth/{slug}/callback", state.config.public_url)
}

pub(super) fn oauth_client(
    state: &AppState,
    provider: &Provider,
    endpoints: &Endpoints,
) -> Result<ProviderClient, AppError> {
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
pub(super) struct Outbound<'a>(pub(super) &'a reqwest::Client);

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
pub(super) fn exchange_failure(e: RequestTokenError<reqwest::Error, BasicErrorResponse>) -> String {
    match e {
        RequestTokenError::ServerResponse(answer) => format!("the provider answered {}", answer.error()),
        RequestTokenError::Request(e) => format!("the provider could not be reached: {e}"),
        RequestTokenError::Parse(..) => "the provider's answer is not a token response".into(),
        RequestTokenError::Other(why) => why,
    }
}

/// Who signed in, as the provider says.
#[derive(Debug, Default)]
pub(super) struct Identity {
    pub(super) subject: String,
    pub(super) email: Option<String>,
    pub(super) email_verified: bool,
    pub(super) name: Option<String>,
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

/// The identity in a verified ID token, completed from userinfo when the
/// token carries no email; userinfo alone when no ID token came.
pub(super) async fn oidc_identity(
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
pub(super) async fn oauth2_identity(
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
}
