//! Notification settings (SMTP and webhook channels, and which events go
//! to them) and the canned test notification, for admins. Passwords and
//! signing secrets are write-only: sent to set or rotate them, kept sealed,
//! never shown.
use axum::{Json, extract::State};
use catalog_shared::{
    AppError,
    notify::{self, ChannelOutcome, EVENTS, Notification, SmtpSecurity, SmtpSettings},
    secrets::seal,
};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::{access::Caller, extract::Json as JsonBody, state::AppState};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(get_settings, put_settings))
        .routes(routes!(test_notification))
}

const URL_MAX: usize = 2048;
const TEXT_MAX: usize = 255;
const RECIPIENTS_MAX: usize = 50;

#[derive(Serialize, utoipa::ToSchema)]
struct SmtpView {
    #[serde(flatten)]
    settings: SmtpSettings,
    password_set: bool,
}

#[derive(Serialize, utoipa::ToSchema)]
struct WebhookView {
    url: String,
    secret_set: bool,
}

/// The channels as shown: no password or secret, only whether one is set.
#[derive(Serialize, utoipa::ToSchema)]
struct NotificationSettings {
    smtp: Option<SmtpView>,
    webhook: Option<WebhookView>,
    events: Vec<String>,
}

async fn current(state: &AppState) -> Result<NotificationSettings, AppError> {
    let channels = notify::channels(&state.pool).await?;
    Ok(NotificationSettings {
        smtp: channels.smtp.map(|s| SmtpView {
            settings: s.0,
            password_set: channels.smtp_password.is_some(),
        }),
        webhook: channels.webhook_url.map(|url| WebhookView {
            url,
            secret_set: channels.webhook_secret.is_some(),
        }),
        events: channels.events,
    })
}

#[utoipa::path(get, path = "/api/settings/notifications", tag = "settings",
    responses((status = 200, body = NotificationSettings)))]
async fn get_settings(State(state): State<AppState>, caller: Caller) -> Result<Json<NotificationSettings>, AppError> {
    caller.admin()?;
    Ok(Json(current(&state).await?))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct SmtpInput {
    /// A host name: 1 to 255 characters, not only blanks.
    #[schema(
        max_length = 255,
        pattern = r"[^\t-\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]"
    )]
    host: String,
    #[schema(minimum = 1, maximum = 65535)]
    port: u16,
    security: SmtpSecurity,
    #[schema(max_length = 255)]
    username: Option<String>,
    /// Write-only; omit to keep the stored one.
    password: Option<String>,
    #[schema(format = Email)]
    from: String,
    /// 1 to 50 addresses.
    #[schema(min_items = 1, max_items = 50, value_type = Vec<EmailAddress>)]
    to: Vec<String>,
}

/// An email address.
#[derive(utoipa::ToSchema)]
#[schema(format = Email)]
#[allow(dead_code)]
struct EmailAddress(String);

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct WebhookInput {
    /// An http(s) URL that passes the outbound rules.
    #[schema(max_length = 2048, pattern = r"^[hH][tT][tT][pP][sS]?://[^/?#\s]")]
    url: String,
    /// Write-only signing secret; omit to keep the stored one, "" to drop it.
    secret: Option<String>,
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct NotificationInput {
    /// null switches mail off.
    smtp: Option<SmtpInput>,
    /// null switches the webhook off.
    webhook: Option<WebhookInput>,
    #[schema(value_type = Vec<crate::openapi::names::NotificationEvent>)]
    events: Vec<String>,
}

fn check_address(field: &str, address: &str) -> Result<(), AppError> {
    address
        .parse::<lettre::Address>()
        .map(|_| ())
        .map_err(|_| AppError::invalid_field(field, &format!("{address:?} is not an email address")))
}

fn check_smtp(smtp: &SmtpInput) -> Result<(), AppError> {
    if smtp.host.trim().is_empty() || smtp.host.chars().count() > TEXT_MAX {
        return Err(AppError::invalid_field(
            "smtp.host",
            "must be a host name of 1 to 255 characters",
        ));
    }
    if smtp.port == 0 {
        return Err(AppError::invalid_field("smtp.port", "must be 1 to 65535"));
    }
    if smtp.username.as_ref().is_some_and(|u| u.chars().count() > TEXT_MAX) {
        return Err(AppError::invalid_field("smtp.username", "at most 255 characters"));
    }
    check_address("smtp.from", &smtp.from)?;
    if smtp.to.is_empty() || smtp.to.len() > RECIPIENTS_MAX {
        return Err(AppError::invalid_field("smtp.to", "give 1 to 50 recipients"));
    }
    for to in &smtp.to {
        check_address("smtp.to", to)?;
    }
    Ok(())
}

/// Replaces the notification settings. A password or secret left out is
/// kept; the webhook URL must pass the outbound rules.
#[utoipa::path(put, path = "/api/settings/notifications", tag = "settings", request_body = NotificationInput,
    responses((status = 200, body = NotificationSettings), (status = 422, body = catalog_shared::Problem, content_type = "application/problem+json")))]
async fn put_settings(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(input): JsonBody<NotificationInput>,
) -> Result<Json<NotificationSettings>, AppError> {
    caller.admin()?;
    if let Some(smtp) = &input.smtp {
        check_smtp(smtp)?;
    }
    if let Some(webhook) = &input.webhook {
        let url = url::Url::parse(&webhook.url)
            .map_err(|_| AppError::invalid_field("webhook.url", "must be an absolute URL"))?;
        if !matches!(url.scheme(), "https" | "http") || webhook.url.chars().count() > URL_MAX {
            return Err(AppError::invalid_field(
                "webhook.url",
                "must be an http(s) URL of at most 2048 characters",
            ));
        }
        state
            .outbound
            .check_url(&url)
            .map_err(|why| AppError::invalid_field("webhook.url", &format!("is refused: {why}")))?;
    }
    if let Some(event) = input.events.iter().find(|e| !EVENTS.contains(&e.as_str())) {
        return Err(AppError::invalid_field(
            "events",
            &format!("{event:?} is not one of {}", EVENTS.join(", ")),
        ));
    }
    let secret = &state.config.jwt_secret;
    let mut tx = state.pool.begin().await?;
    let stored = notify::channels(&mut *tx).await?;
    let smtp_password = match &input.smtp {
        None => None,
        Some(SmtpInput { password: Some(p), .. }) if !p.is_empty() => Some(seal(secret, p)?),
        Some(SmtpInput { password: Some(_), .. }) => None,
        Some(SmtpInput { password: None, .. }) => stored.smtp_password,
    };
    let webhook_secret = match &input.webhook {
        None => None,
        Some(WebhookInput { secret: Some(s), .. }) if !s.is_empty() => Some(seal(secret, s)?),
        Some(WebhookInput { secret: Some(_), .. }) => None,
        Some(WebhookInput { secret: None, .. }) => stored.webhook_secret,
    };
    let smtp = input.smtp.map(|s| {
        sqlx::types::Json(SmtpSettings {
            host: s.host.trim().to_string(),
            port: s.port,
            security: s.security,
            username: s.username.filter(|u| !u.is_empty()),
            from: s.from,
            to: s.to,
        })
    });
    let mut events = input.events;
    events.sort();
    events.dedup();
    sqlx::query(
        "UPDATE notification_settings SET smtp = $1, smtp_password = $2, webhook_url = $3, webhook_secret = $4,
                events = $5, updated_at = now()",
    )
    .bind(smtp)
    .bind(smtp_password)
    .bind(input.webhook.map(|w| w.url))
    .bind(webhook_secret)
    .bind(&events)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(Json(current(&state).await?))
}

/// The outcome of a test notification.
#[derive(Serialize, utoipa::ToSchema)]
struct TestResult {
    /// Whether at least one channel took the message.
    sent: bool,
    channels: Vec<ChannelOutcome>,
    message: String,
}

/// Sends a canned test notification through each configured channel.
/// Always 200: a channel's failure is reported in `channels`.
#[utoipa::path(post, path = "/api/settings/notifications/test", tag = "settings",
    responses((status = 200, body = TestResult)))]
async fn test_notification(State(state): State<AppState>, caller: Caller) -> Result<Json<TestResult>, AppError> {
    let admin = caller.admin()?.clone();
    let channels = notify::channels(&state.pool).await?;
    let notification = Notification {
        event: "test".into(),
        subject: "Spatial Data Catalog: test notification".into(),
        text: "This is a test notification from the Spatial Data Catalog. If you can read it, this channel works."
            .into(),
        details: json!({"requested_by": admin.id}),
    };
    let outcomes = notify::send(&channels, &state.config.jwt_secret, &state.outbound, &notification).await;
    let sent = outcomes.iter().any(|o| o.ok);
    let message = match (outcomes.len(), outcomes.iter().filter(|o| o.ok).count()) {
        (0, _) => "no notification channel is configured".to_string(),
        (n, ok) if ok == n => format!("the test notification went out through {n} channel(s)"),
        (n, ok) => format!("{ok} of {n} channel(s) took the test notification; see channels for the errors"),
    };
    Ok(Json(TestResult {
        sent,
        channels: outcomes,
        message,
    }))
}
