//! Notification channels: SMTP mail and a webhook (JSON POST, signed with
//! HMAC-SHA256 when a secret is set). Their settings live in the database;
//! passwords and signing secrets are sealed. Sending never fails the work
//! that triggered it: each channel's outcome is reported, with an error
//! text that names no secret.
use std::time::Duration;

use hmac::{Hmac, KeyInit, Mac};
use lettre::{
    AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor,
    message::{Mailbox, header::ContentType},
    transport::smtp::{authentication::Credentials, client::Tls, client::TlsParameters},
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::Sha256;
use sqlx::PgExecutor;

use crate::{
    outbound::{OutboundPolicy, Refused},
    secrets::unseal,
};

const SEND_TIMEOUT: Duration = Duration::from_secs(15);

/// Sent by workers when a job fails or succeeds; admins choose which in
/// the API, so both use these names.
pub const JOB_FAILED: &str = "job_failed";
pub const JOB_SUCCEEDED: &str = "job_succeeded";

/// The events that may be sent to the channels.
pub const EVENTS: [&str; 2] = [JOB_FAILED, JOB_SUCCEEDED];

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SmtpSecurity {
    /// Plain connection upgraded with STARTTLS (port 587).
    Starttls,
    /// TLS from the first byte (port 465).
    Tls,
    /// No encryption (a relay on a trusted network).
    None,
}

/// SMTP settings as stored (the password apart, sealed).
#[derive(Clone, Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SmtpSettings {
    pub host: String,
    pub port: u16,
    pub security: SmtpSecurity,
    pub username: Option<String>,
    pub from: String,
    pub to: Vec<String>,
}

/// Every channel's settings, secrets still sealed.
#[derive(Clone, Debug, Default, sqlx::FromRow)]
pub struct Channels {
    pub smtp: Option<sqlx::types::Json<SmtpSettings>>,
    pub smtp_password: Option<Vec<u8>>,
    pub webhook_url: Option<String>,
    pub webhook_secret: Option<Vec<u8>>,
    pub events: Vec<String>,
}

pub async fn channels(db: impl PgExecutor<'_>) -> Result<Channels, sqlx::Error> {
    sqlx::query_as("SELECT smtp, smtp_password, webhook_url, webhook_secret, events FROM notification_settings")
        .fetch_one(db)
        .await
}

/// What one channel did with a notification.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct ChannelOutcome {
    pub channel: &'static str,
    pub ok: bool,
    pub error: Option<String>,
}

/// A notification: an event name, a subject line and a text, and details
/// for machines (the webhook's JSON).
pub struct Notification {
    pub event: String,
    pub subject: String,
    pub text: String,
    pub details: Value,
}

/// Sends through every configured channel; the outcome of each.
pub async fn send(
    channels: &Channels,
    jwt_secret: &str,
    outbound: &OutboundPolicy,
    notification: &Notification,
) -> Vec<ChannelOutcome> {
    let mut outcomes = Vec::new();
    if let Some(smtp) = &channels.smtp {
        let result = send_mail(
            &smtp.0,
            channels.smtp_password.as_deref(),
            jwt_secret,
            &smtp.0.to,
            notification,
        )
        .await;
        outcomes.push(outcome("smtp", result));
    }
    if let Some(url) = &channels.webhook_url {
        let result = post_webhook(
            url,
            channels.webhook_secret.as_deref(),
            jwt_secret,
            outbound,
            notification,
        )
        .await;
        outcomes.push(outcome("webhook", result));
    }
    outcomes
}

/// Why a notification did not reach a channel. The admin testing the
/// channel reads it, so it names neither a secret nor the webhook URL
/// (which may carry a token).
#[derive(Debug, thiserror::Error)]
enum DeliveryError {
    #[error("the sender address is not valid")]
    Sender,
    #[error("the recipient {0} is not valid")]
    Recipient(String),
    #[error("the message could not be built: {0}")]
    Message(#[from] lettre::error::Error),
    #[error("TLS could not be set up")]
    Tls,
    #[error("the stored {0} cannot be read")]
    Unsealing(&'static str),
    // lettre's errors name the server and the SMTP reply, never the password.
    #[error("the mail server refused or could not be reached: {0}")]
    Smtp(#[from] lettre::transport::smtp::Error),
    #[error("the webhook URL is not valid")]
    WebhookUrl,
    #[error("the webhook URL is refused: {0}")]
    Refused(#[from] Refused),
    #[error("no HTTP client could be made")]
    Client,
    #[error("the webhook did not answer in time")]
    Timeout,
    #[error("the webhook could not be reached")]
    Unreachable,
    #[error("the webhook answered {0}")]
    Status(reqwest::StatusCode),
}

fn outcome(channel: &'static str, result: Result<(), DeliveryError>) -> ChannelOutcome {
    match result {
        Ok(()) => ChannelOutcome {
            channel,
            ok: true,
            error: None,
        },
        Err(error) => ChannelOutcome {
            channel,
            ok: false,
            error: Some(error.to_string()),
        },
    }
}

/// Mails one person (a password reset link) through the configured mail
/// server; false when no mail server is configured. The error names no secret.
pub async fn mail_person(
    channels: &Channels,
    jwt_secret: &str,
    to: &str,
    subject: &str,
    text: &str,
) -> Result<bool, String> {
    let Some(smtp) = &channels.smtp else {
        return Ok(false);
    };
    let notification = Notification {
        event: String::new(),
        subject: subject.to_string(),
        text: text.to_string(),
        details: Value::Null,
    };
    send_mail(
        &smtp.0,
        channels.smtp_password.as_deref(),
        jwt_secret,
        &[to.to_string()],
        &notification,
    )
    .await
    .map(|()| true)
    .map_err(|e| e.to_string())
}

async fn send_mail(
    smtp: &SmtpSettings,
    sealed_password: Option<&[u8]>,
    jwt_secret: &str,
    recipients: &[String],
    notification: &Notification,
) -> Result<(), DeliveryError> {
    let from: Mailbox = smtp.from.parse().map_err(|_| DeliveryError::Sender)?;
    let mut message = Message::builder()
        .from(from)
        .subject(&notification.subject)
        .header(ContentType::TEXT_PLAIN);
    for to in recipients {
        message = message.to(to.parse().map_err(|_| DeliveryError::Recipient(to.clone()))?);
    }
    let message = message.body(notification.text.clone())?;
    let tls = || TlsParameters::new(smtp.host.clone()).map_err(|_| DeliveryError::Tls);
    let mut transport = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(&smtp.host)
        .port(smtp.port)
        .timeout(Some(SEND_TIMEOUT))
        .tls(match smtp.security {
            SmtpSecurity::Starttls => Tls::Required(tls()?),
            SmtpSecurity::Tls => Tls::Wrapper(tls()?),
            SmtpSecurity::None => Tls::None,
        });
    if let (Some(username), Some(sealed)) = (&smtp.username, sealed_password) {
        let password = unseal(jwt_secret, sealed).map_err(|_| DeliveryError::Unsealing("SMTP password"))?;
        transport = transport.credentials(Credentials::new(username.clone(), password));
    }
    transport.build().send(message).await?;
    Ok(())
}

async fn post_webhook(
    url: &str,
    sealed_secret: Option<&[u8]>,
    jwt_secret: &str,
    outbound: &OutboundPolicy,
    notification: &Notification,
) -> Result<(), DeliveryError> {
    let body = json!({
        "event": notification.event,
        "subject": notification.subject,
        "message": notification.text,
        "details": notification.details,
        "sent_at": chrono::Utc::now().to_rfc3339(),
    })
    .to_string();
    let parsed = url::Url::parse(url).map_err(|_| DeliveryError::WebhookUrl)?;
    outbound.check_resolved(&parsed).await?;
    let client = outbound.client(SEND_TIMEOUT).map_err(|_| DeliveryError::Client)?;
    let mut request = client
        .post(parsed)
        .header("content-type", "application/json")
        .header("x-catalog-event", &notification.event);
    if let Some(sealed) = sealed_secret {
        let secret = unseal(jwt_secret, sealed).map_err(|_| DeliveryError::Unsealing("webhook secret"))?;
        let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes a key of any length");
        mac.update(body.as_bytes());
        let signature: String = mac.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect();
        request = request.header("x-catalog-signature", format!("sha256={signature}"));
    }
    // Errors are described without the URL, which may carry a token.
    let response = request.body(body).send().await.map_err(|e| {
        if e.is_timeout() {
            DeliveryError::Timeout
        } else {
            DeliveryError::Unreachable
        }
    })?;
    if response.status().is_success() {
        Ok(())
    } else {
        Err(DeliveryError::Status(response.status()))
    }
}
