//! Credential primitives: password hashes and signed access tokens.
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use argon2::{Argon2, PasswordHash, PasswordHasher, PasswordVerifier, password_hash::SaltString};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::text_enum::text_enum;

text_enum! {
    /// The kind of a single sign-on provider (`oauth_providers.provider_type`):
    /// three with known endpoints, or any OpenID Connect provider.
    #[derive(utoipa::ToSchema)]
    pub enum ProviderType {
        IdpA = "idp_a",
        IdpB = "idp_b",
        IdpC = "idp_c",
        Oidc = "oidc",
    }
}

text_enum! {
    /// Where an account stands (`users.status`).
    #[derive(utoipa::ToSchema)]
    pub enum AccountStatus {
        Active = "active",
        Pending = "pending",
        Suspended = "suspended",
        Deactivated = "deactivated",
    }
}

text_enum! {
    /// What a grant allows on a restricted dataset
    /// (`dataset_grants.permission`).
    #[derive(utoipa::ToSchema)]
    pub enum Permission {
        Read = "read",
        Write = "write",
    }
}

text_enum! {
    /// What a user may do: `users.role`; each includes the ones before it.
    #[derive(PartialOrd, Ord, utoipa::ToSchema)]
    pub enum Role {
        Viewer = "viewer",
        Editor = "editor",
        Admin = "admin",
    }
}

pub fn hash_password(password: &str) -> anyhow::Result<String> {
    let mut salt_bytes = [0u8; 16];
    rand::RngCore::fill_bytes(&mut rand::rng(), &mut salt_bytes);
    let salt = SaltString::encode_b64(&salt_bytes).map_err(|e| anyhow::anyhow!("salt: {e}"))?;
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| anyhow::anyhow!("hashing failed: {e}"))
}

pub fn verify_password(password: &str, hash: &str) -> bool {
    PasswordHash::new(hash)
        .map(|parsed| Argon2::default().verify_password(password.as_bytes(), &parsed).is_ok())
        .unwrap_or(false)
}

/// A sign-in's password check. Without a hash (no such account, or one
/// that signs in only through single sign-on) it still verifies, against
/// a dummy hash, and answers false: the refusal then takes as long as a
/// wrong password, so timing does not tell which usernames exist.
pub fn verify_sign_in(password: &str, hash: Option<&str>) -> bool {
    static DUMMY: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        hash_password("the password of no account").expect("argon2 hashes a fixed password")
    });
    match hash {
        Some(hash) => verify_password(password, hash),
        None => {
            verify_password(password, &DUMMY);
            false
        }
    }
}

/// Claims of an access token. `ver` is the account's token version at
/// issue; signing out everywhere bumps it, retiring every earlier token.
#[derive(Debug, Serialize, Deserialize)]
pub struct AccessClaims {
    pub sub: Uuid,
    pub typ: String,
    pub iat: u64,
    pub exp: u64,
    #[serde(default)]
    pub ver: i32,
    /// The sign-in (session) the token belongs to; none for tokens made
    /// outside a sign-in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sid: Option<Uuid>,
}

/// Claims of a download token: one dataset, two minutes.
#[derive(Debug, Serialize, Deserialize)]
pub struct DownloadClaims {
    pub sub: Option<Uuid>,
    pub typ: String,
    pub scope: String,
    pub iat: u64,
    pub exp: u64,
}

impl DownloadClaims {
    /// Whether the token opens this dataset.
    pub fn is_for(&self, dataset_id: Uuid) -> bool {
        self.scope == format!("dataset:{dataset_id}")
    }
}

pub const ACCESS_TOKEN_TYPE: &str = "access";
pub const DOWNLOAD_TOKEN_TYPE: &str = "download";
pub const DOWNLOAD_TOKEN_TTL: Duration = Duration::from_secs(120);

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

#[derive(Clone)]
pub struct TokenKeys {
    encoding: EncodingKey,
    decoding: DecodingKey,
}

impl TokenKeys {
    pub fn new(secret: &str) -> Self {
        Self {
            encoding: EncodingKey::from_secret(secret.as_bytes()),
            decoding: DecodingKey::from_secret(secret.as_bytes()),
        }
    }

    pub fn issue_access(&self, user_id: Uuid, token_version: i32, ttl: Duration) -> anyhow::Result<String> {
        self.issue_session_access(user_id, token_version, ttl, None)
    }

    /// An access token of one sign-in session.
    pub fn issue_session_access(
        &self,
        user_id: Uuid,
        token_version: i32,
        ttl: Duration,
        session: Option<Uuid>,
    ) -> anyhow::Result<String> {
        let now = now_secs();
        let claims = AccessClaims {
            sub: user_id,
            typ: ACCESS_TOKEN_TYPE.into(),
            iat: now,
            exp: now + ttl.as_secs(),
            ver: token_version,
            sid: session,
        };
        Ok(jsonwebtoken::encode(
            &Header::new(Algorithm::HS256),
            &claims,
            &self.encoding,
        )?)
    }

    /// The claims of a validly signed access token; expired ones only when
    /// `allow_expired` (signing out accepts a dead access token).
    pub fn verify_access(&self, token: &str, allow_expired: bool) -> Option<AccessClaims> {
        let mut validation = Validation::new(Algorithm::HS256);
        validation.leeway = 0;
        validation.validate_exp = !allow_expired;
        let data = jsonwebtoken::decode::<AccessClaims>(token, &self.decoding, &validation).ok()?;
        (data.claims.typ == ACCESS_TOKEN_TYPE).then_some(data.claims)
    }

    pub fn issue_download(&self, user_id: Option<Uuid>, dataset_id: Uuid) -> anyhow::Result<String> {
        let now = now_secs();
        let claims = DownloadClaims {
            sub: user_id,
            typ: DOWNLOAD_TOKEN_TYPE.into(),
            scope: format!("dataset:{dataset_id}"),
            iat: now,
            exp: now + DOWNLOAD_TOKEN_TTL.as_secs(),
        };
        Ok(jsonwebtoken::encode(
            &Header::new(Algorithm::HS256),
            &claims,
            &self.encoding,
        )?)
    }

    /// The claims of a valid, unexpired download token (for any dataset:
    /// see `DownloadClaims::is_for`).
    pub fn verify_download(&self, token: &str) -> Option<DownloadClaims> {
        let mut validation = Validation::new(Algorithm::HS256);
        validation.leeway = 0;
        let data = jsonwebtoken::decode::<DownloadClaims>(token, &self.decoding, &validation).ok()?;
        (data.claims.typ == DOWNLOAD_TOKEN_TYPE).then_some(data.claims)
    }
}

/// Why a new password is refused, or `None` when it meets the policy: at
/// least 12 characters, at least 3 of the 4 classes (lower case, upper
/// case, digits, symbols), at most 72 bytes in UTF-8.
pub fn password_policy_violation(password: &str) -> Option<String> {
    if password.chars().count() < 12 {
        return Some("the password must have at least 12 characters".into());
    }
    if password.len() > 72 {
        return Some("the password must be at most 72 bytes in UTF-8".into());
    }
    let classes = [
        password.chars().any(char::is_lowercase),
        password.chars().any(char::is_uppercase),
        password.chars().any(|c| c.is_numeric()),
        password.chars().any(|c| !c.is_alphanumeric()),
    ];
    if classes.iter().filter(|c| **c).count() < 3 {
        return Some(
            "the password must mix at least 3 of: lower-case letters, upper-case letters, digits, symbols".into(),
        );
    }
    None
}

/// What every API key starts with; access tokens (JWTs) never do, so a
/// bearer credential says which of the two it is.
pub const API_KEY_PREFIX: &str = "sdc_";

/// A new random secret: 32 bytes as hex, with a prefix saying what it is.
pub fn random_secret(prefix: &str) -> String {
    let mut bytes = [0u8; 32];
    rand::RngCore::fill_bytes(&mut rand::rng(), &mut bytes);
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("{prefix}{hex}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn password_policy_edges() {
        assert!(password_policy_violation("Abcdefghij1").is_some(), "11 characters");
        assert!(
            password_policy_violation("Abcdefghij12").is_none(),
            "12 characters, 3 classes"
        );
        assert!(password_policy_violation("abcdefghijkl").is_some(), "one class");
        assert!(password_policy_violation("abcdefghij12").is_some(), "two classes");
        let max = format!("Aa1{}", "x".repeat(69));
        assert_eq!(max.len(), 72);
        assert!(password_policy_violation(&max).is_none(), "72 bytes");
        let over = format!("Aa1{}", "x".repeat(70));
        assert!(password_policy_violation(&over).is_some(), "73 bytes");
        // The euro sign takes 3 bytes: 23 of them fit in 72 bytes, 24 do not.
        let fits = format!("Aa1{}", "€".repeat(23));
        assert_eq!(fits.len(), 72);
        assert!(password_policy_violation(&fits).is_none());
        let over = format!("Aa1{}", "€".repeat(24));
        assert!(password_policy_violation(&over).is_some());
    }

    #[test]
    fn tokens_round_trip_and_expire() {
        let keys = TokenKeys::new("0123456789abcdef0123456789abcdef");
        let id = Uuid::now_v7();
        let token = keys.issue_access(id, 3, Duration::from_secs(60)).unwrap();
        let claims = keys.verify_access(&token, false).unwrap();
        assert_eq!((claims.sub, claims.ver), (id, 3));
        let dead = keys.issue_access(id, 3, Duration::from_secs(0)).unwrap();
        std::thread::sleep(Duration::from_millis(1100));
        assert!(keys.verify_access(&dead, false).is_none());
        assert!(keys.verify_access(&dead, true).is_some());
        let other = TokenKeys::new("another-secret-another-secret-123");
        assert!(other.verify_access(&token, true).is_none());
        let dataset = Uuid::now_v7();
        let download = keys.issue_download(None, dataset).unwrap();
        assert!(keys.verify_download(&download).is_some_and(|c| c.is_for(dataset)));
        assert!(!keys.verify_download(&download).unwrap().is_for(Uuid::now_v7()));
        assert!(
            keys.verify_access(&download, false).is_none(),
            "a download token is no session"
        );
    }
}
