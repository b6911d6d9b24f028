//! Which account a sign-in opens: the allowed-domain rule, an existing
//! link, a verified email linking a local account, or a new account with
//! the provider's default role.

use catalog_shared::auth::{AccountStatus, Role};
use uuid::Uuid;

use super::{
    provider::Identity,
    refusal::{Refusal, refuse},
};
use crate::{
    auth::{
        api_keys,
        providers::{Provider, auth_settings},
    },
    state::AppState,
};

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
    role: Role,
    status: AccountStatus,
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
pub(super) async fn link_account(
    state: &AppState,
    provider: &Provider,
    identity: Identity,
) -> Result<(Uuid, i32), Refusal> {
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
        let exempt = account.role == Role::Admin;
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
    if account.status != AccountStatus::Active || !account.is_active {
        return Err(refuse(
            "account_inactive",
            format!(
                "the account is {}; it cannot sign in",
                if account.is_active {
                    account.status.as_str()
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
    .bind(provider.default_role)
    .bind(&provider.slug)
    .fetch_one(&mut *tx)
    .await?;
    tracing::info!(provider = %provider.slug, %username, "account created at single sign-on");
    Ok(account)
}

#[cfg(test)]
mod tests {
    use super::*;

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
