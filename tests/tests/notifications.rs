//! Notification channels: settings with write-only secrets, the test
//! notification through a real SMTP server (aiosmtpd) and a webhook on
//! loopback (signed), failures reported per channel and never as 5xx, and
//! job events sent by the workers.
use std::{
    process::{Child, Command, Stdio},
    sync::{
        Arc, Mutex,
        atomic::{AtomicU16, Ordering},
    },
    time::Duration,
};

use catalog_tests::{Api, App, Stack, StackOptions, free_port};
use hmac::{Hmac, KeyInit, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

const WEBHOOK_SECRET: &str = "Webhook-Signing-Secret-77";
const SMTP_PASSWORD: &str = "Smtp-Password-Secret-88";

/// A delivery: "valid" when its signature checked out, and its body.
type Delivery = (Option<String>, Value);

/// A webhook receiver: what it was sent, and the status it answers.
#[derive(Clone, Default)]
struct Receiver {
    seen: Arc<Mutex<Vec<Delivery>>>,
    status: Arc<AtomicU16>,
}

async fn webhook_receiver() -> (String, Receiver) {
    let receiver = Receiver::default();
    receiver.status.store(200, Ordering::SeqCst);
    let state = receiver.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: axum::http::HeaderMap, body: String| {
            let state = state.clone();
            async move {
                let signature = headers
                    .get("x-catalog-signature")
                    .map(|v| v.to_str().unwrap().to_string());
                let mut mac = Hmac::<Sha256>::new_from_slice(WEBHOOK_SECRET.as_bytes()).unwrap();
                mac.update(body.as_bytes());
                let expected: String = mac.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect();
                let valid = signature.as_deref() == Some(format!("sha256={expected}").as_str());
                state
                    .seen
                    .lock()
                    .unwrap()
                    .push((valid.then(|| "valid".to_string()), serde_json::from_str(&body).unwrap()));
                axum::http::StatusCode::from_u16(state.status.load(Ordering::SeqCst)).unwrap()
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, receiver)
}

/// A real SMTP server that prints what it receives into `out`.
fn smtp_server(port: u16, out: &std::path::Path) -> Child {
    let python = std::env::var("CATALOG_PYTHON").expect("CATALOG_PYTHON (set by scripts/test.sh)");
    Command::new(python)
        .args([
            "-m",
            "aiosmtpd",
            "-n",
            "-l",
            &format!("127.0.0.1:{port}"),
            "-c",
            "aiosmtpd.handlers.Debugging",
        ])
        .env("PYTHONUNBUFFERED", "1")
        .stdout(std::fs::File::create(out).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

async fn wait_for_port(port: u16) {
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("nothing listens on {port}");
}

async fn put_settings(api: &impl Api, admin: &str, body: &Value) -> (u16, Value) {
    let response = api
        .send(
            api.http()
                .put(api.url("/api/settings/notifications"))
                .bearer_auth(admin)
                .json(body),
        )
        .await;
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

async fn test_send(stack: &Stack, admin: &str) -> Value {
    let response = stack
        .http
        .post(stack.url("/api/settings/notifications/test"))
        .bearer_auth(admin)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "always 200");
    response.json().await.unwrap()
}

#[tokio::test]
async fn notifications_go_out_through_each_channel_and_failures_are_reported() {
    let (hook_url, receiver) = webhook_receiver().await;
    let hook_host = hook_url.split('/').nth(2).unwrap().to_string();
    let smtp_port = free_port();
    let mail = tempfile::NamedTempFile::new().unwrap();
    let mut smtp = smtp_server(smtp_port, mail.path());
    wait_for_port(smtp_port).await;
    let stack = Stack::start_with(StackOptions::workers(1).env("OUTBOUND_ALLOWED_HOSTS", &hook_host)).await;
    let admin = stack.admin_token().await;

    let (status, settings) = stack.get_json(Some(&admin), "/api/settings/notifications").await;
    assert_eq!(status, 200);
    assert_eq!(
        settings,
        json!({"smtp": null, "webhook": null, "events": ["job_failed"]})
    );
    let empty = test_send(&stack, &admin).await;
    assert_eq!(empty["sent"], false);
    assert_eq!(empty["channels"], json!([]));

    let body = json!({
        "smtp": {"host": "127.0.0.1", "port": smtp_port, "security": "none", "username": "mailer",
                 "password": SMTP_PASSWORD, "from": "catalog@example.org", "to": ["ops@example.org"]},
        "webhook": {"url": hook_url, "secret": WEBHOOK_SECRET},
        "events": ["job_failed", "job_succeeded"]
    });
    let (status, saved) = put_settings(&stack, &admin, &body).await;
    assert_eq!(status, 200, "{saved}");
    assert_eq!(saved["smtp"]["password_set"], true);
    assert_eq!(saved["webhook"]["secret_set"], true);
    let shown = saved.to_string();
    assert!(
        !shown.contains(SMTP_PASSWORD) && !shown.contains(WEBHOOK_SECRET),
        "{shown}"
    );
    for bad in [
        json!({"smtp": {"host": "h", "port": 25, "security": "none", "from": "not an address", "to": ["a@example.org"]}, "webhook": null, "events": []}),
        json!({"smtp": {"host": "h", "port": 25, "security": "none", "from": "a@example.org", "to": []}, "webhook": null, "events": []}),
        json!({"smtp": {"host": "h", "port": 25, "security": "sometimes", "from": "a@example.org", "to": ["b@example.org"]}, "webhook": null, "events": []}),
        json!({"smtp": null, "webhook": {"url": "http://10.1.2.3/hook"}, "events": []}),
        json!({"smtp": null, "webhook": null, "events": ["dataset_exploded"]}),
    ] {
        let (status, problem) = put_settings(&stack, &admin, &bad).await;
        assert_eq!(status, 422, "{bad} → {problem}");
    }

    // The SMTP server has no authentication to offer: the mail channel
    // reports that, the webhook takes the message, and it is still a 200.
    let result = test_send(&stack, &admin).await;
    assert_eq!(result["sent"], true, "{result}");
    let smtp_outcome = &result["channels"][0];
    assert_eq!(smtp_outcome["channel"], "smtp");
    assert_eq!(smtp_outcome["ok"], false);
    assert!(!result.to_string().contains(SMTP_PASSWORD));
    assert_eq!(
        result["channels"][1],
        json!({"channel": "webhook", "ok": true, "error": null})
    );
    let (signature, payload) = receiver.seen.lock().unwrap()[0].clone();
    assert_eq!(signature.as_deref(), Some("valid"), "signed with the secret");
    assert_eq!(payload["event"], "test");

    // Without credentials the mail goes out; the webhook failing is reported.
    let mut body = body.clone();
    body["smtp"].as_object_mut().unwrap().remove("username");
    body["smtp"].as_object_mut().unwrap().remove("password");
    body["webhook"].as_object_mut().unwrap().remove("secret");
    let (status, kept) = put_settings(&stack, &admin, &body).await;
    assert_eq!(status, 200);
    assert_eq!(kept["webhook"]["secret_set"], true, "an omitted secret is kept");
    receiver.status.store(500, Ordering::SeqCst);
    let result = test_send(&stack, &admin).await;
    assert_eq!(
        result["channels"][0],
        json!({"channel": "smtp", "ok": true, "error": null}),
        "{result}"
    );
    assert_eq!(result["channels"][1]["ok"], false);
    assert!(result["channels"][1]["error"].as_str().unwrap().contains("500"));
    assert!(
        !result.to_string().contains(&hook_url),
        "no URL (it may hold a token) in errors"
    );
    let mut delivered = String::new();
    for _ in 0..50 {
        delivered = std::fs::read_to_string(mail.path()).unwrap();
        if delivered.contains("test notification") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        delivered.contains("Subject: Spatial Data Catalog: test notification"),
        "{delivered}"
    );

    // Workers send job events.
    receiver.status.store(200, Ordering::SeqCst);
    let job = stack.upload_ok(&admin, "plain.csv", b"a,b\n1,2\n".to_vec(), &[]).await;
    assert_eq!(stack.wait_job(&admin, &job).await["status"], "failed");
    let mut event = None;
    for _ in 0..50 {
        event = receiver
            .seen
            .lock()
            .unwrap()
            .iter()
            .find(|(_, p)| p["event"] == "job_failed")
            .cloned();
        if event.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (_, payload) = event.expect("a job_failed event");
    assert_eq!(payload["details"]["job_id"], json!(job));
    assert!(
        payload["message"].as_str().unwrap().contains("coordinates"),
        "{payload}"
    );
    assert!(!stack.logs().contains(SMTP_PASSWORD) && !stack.logs().contains(WEBHOOK_SECRET));
    smtp.kill().unwrap();
    smtp.wait().unwrap();
}

/// A forgotten password, with a mail server: asking by username or address
/// mails a one-time link to the account's own address, answering the same
/// whether or not an account matched; a repeated ask within minutes sends
/// no second mail; the mailed link sets the password.
#[tokio::test]
async fn a_forgotten_password_is_reset_through_a_mailed_link() {
    let app = App::start_with(&[("OUTBOUND_ALLOWED_HOSTS", "127.0.0.1")]).await;
    let admin = app.admin_token().await;
    let smtp_port = free_port();
    let mail = tempfile::NamedTempFile::new().unwrap();
    let mut smtp = smtp_server(smtp_port, mail.path());
    wait_for_port(smtp_port).await;
    let (status, _) = put_settings(
        &app,
        &admin,
        &json!({"smtp": {"host": "127.0.0.1", "port": smtp_port, "security": "none",
                         "from": "catalog@example.org", "to": ["ops@example.org"]},
                "webhook": null, "events": []}),
    )
    .await;
    assert_eq!(status, 200);
    let (_, config) = app.get_json(None, "/api/auth/config").await;
    assert_eq!(config["password_reset_by_mail"], true);
    sqlx::query(
        "INSERT INTO users (id, username, email, password_hash, role) VALUES ($1, 'walker', 'walker@example.org', $2, 'editor')",
    )
    .bind(uuid::Uuid::now_v7())
    .bind(catalog_shared::auth::hash_password("Old-Password-123").unwrap())
    .execute(&app.pool)
    .await
    .unwrap();
    let ask = |account: &str| {
        app.send(
            app.http()
                .post(app.url("/api/auth/password-reset/request"))
                .json(&json!({"account": account})),
        )
    };
    assert_eq!(
        ask("nobody-at-all").await.status(),
        202,
        "the same answer for no account"
    );
    assert_eq!(ask("WALKER@example.org").await.status(), 202);
    // The mail as a mail reader shows it: quoted-printable undone.
    let received = || {
        std::fs::read_to_string(mail.path())
            .unwrap()
            .replace("=\r\n", "")
            .replace("=\n", "")
            .replace("=3D", "=")
    };
    let mut text = String::new();
    for _ in 0..100 {
        text = received();
        if text.contains("/reset-password#token=") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        text.contains("walker@example.org"),
        "mailed to the account's address: {text}"
    );
    let link = text
        .split_whitespace()
        .find(|w| w.contains("/reset-password#token="))
        .expect("the mail holds the link")
        .to_string();
    assert!(link.starts_with(&app.url("/reset-password#token=pr_")), "{link}");
    assert_eq!(ask("walker").await.status(), 202);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let after = received();
    assert_eq!(
        after.matches("/reset-password#token=").count(),
        1,
        "one mail within minutes: {after}"
    );
    let token = link.split("#token=").nth(1).unwrap();
    let reset = app
        .send(
            app.http()
                .post(app.url("/api/auth/password-reset"))
                .json(&json!({"token": token, "new_password": "New-Password-456"})),
        )
        .await;
    assert_eq!(reset.status(), 204);
    let signed_in = app
        .send(
            app.http()
                .post(app.url("/api/auth/login"))
                .form(&[("username", "walker"), ("password", "New-Password-456")]),
        )
        .await;
    assert_eq!(signed_in.status(), 200);
    smtp.kill().unwrap();
    smtp.wait().unwrap();
}
