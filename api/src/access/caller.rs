//! The one caller type every credential kind resolves into, and the role
//! rules handlers ask it.
use axum::{
    extract::FromRequestParts,
    http::{HeaderMap, header, request::Parts},
};
use catalog_shared::{AppError, auth::Role};
use uuid::Uuid;

/// A signed-in account.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct User {
    pub id: Uuid,
    pub role: Role,
    pub token_version: i32,
}

impl User {
    pub fn role(&self) -> Role {
        self.role
    }
    pub fn is_admin(&self) -> bool {
        self.role == Role::Admin
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyScope {
    Full,
    ReadOnly,
}

/// What a capability lets a request read whatever credential it carries
/// (rule 5): a signed tile template one dataset's tiles until its expiry
/// (Unix seconds), a signed asset link one dataset's download (checked
/// unexpired when resolved), an embed token a map and the datasets of its
/// layers, the metrics token the metrics and nothing else.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Capability {
    Tiles { dataset: Uuid, expires: i64 },
    Asset { dataset: Uuid },
    Embed { map_id: Uuid, datasets: Vec<Uuid> },
    Metrics,
}

/// The resolved identity of a request: anonymous or a user, whether it
/// came through an API key, and any capability it was served under.
#[derive(Clone, Debug, Default)]
pub struct Caller {
    pub user: Option<User>,
    pub key_scope: Option<KeyScope>,
    pub capability: Option<Capability>,
    /// The sign-in session of a bearer access token.
    pub session: Option<Uuid>,
}

impl Caller {
    pub fn user(&self) -> Option<&User> {
        self.user.as_ref()
    }
    pub fn user_id(&self) -> Option<Uuid> {
        self.user.as_ref().map(|u| u.id)
    }
    pub fn is_admin(&self) -> bool {
        self.user.as_ref().is_some_and(User::is_admin)
    }
    /// Whether a capability lets this request read the dataset.
    pub fn capability_reads_dataset(&self, id: Uuid) -> bool {
        match &self.capability {
            Some(Capability::Tiles { dataset, .. } | Capability::Asset { dataset }) => *dataset == id,
            Some(Capability::Embed { datasets, .. }) => datasets.contains(&id),
            Some(Capability::Metrics) | None => false,
        }
    }
    /// Whether a capability lets this request read the map.
    pub fn capability_reads_map(&self, id: Uuid) -> bool {
        matches!(&self.capability, Some(Capability::Embed { map_id, .. }) if *map_id == id)
    }
    /// Metrics are for admins and the scraper holding the metrics token.
    pub fn may_read_metrics(&self) -> Result<(), AppError> {
        if self.capability == Some(Capability::Metrics) {
            return Ok(());
        }
        self.admin().map(|_| ())
    }
    /// The user, or 401 for anonymous callers.
    pub fn signed_in(&self) -> Result<&User, AppError> {
        self.user()
            .ok_or_else(|| AppError::unauthorized("sign in or send an API key"))
    }
    /// The user when it may create and edit content (editor or admin).
    pub fn editor(&self) -> Result<&User, AppError> {
        let user = self.signed_in()?;
        if user.role() >= Role::Editor {
            Ok(user)
        } else {
            Err(AppError::forbidden("this needs the editor or admin role"))
        }
    }
    pub fn admin(&self) -> Result<&User, AppError> {
        let user = self.signed_in()?;
        if user.is_admin() {
            Ok(user)
        } else {
            Err(AppError::forbidden("this needs the admin role"))
        }
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = AppError;
    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(parts.extensions.get::<Caller>().cloned().unwrap_or_default())
    }
}

pub fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}
