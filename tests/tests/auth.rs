//! Identity and access: sessions, cookie mode, sign-out, API keys and
//! their invalidation, accounts, grants, CORS, download tokens, and no
//! secret in the logs.
use std::time::Duration;

use catalog_shared::auth::TokenKeys;
use catalog_tests::{ADMIN_PASSWORD, Api, App, JWT_SECRET, Stack, StackOptions};
use reqwest::{Method, header};
use serde_json::{Value, json};
use uuid::Uuid;

async fn login(stack: &impl Api, username: &str, password: &str) -> Value {
    let response = stack
        .send(
            stack
                .http()
                .post(stack.url("/api/auth/login"))
                .form(&[("username", username), ("password", password)]),
        )
        .await;
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}

async fn refresh(stack: &impl Api, refresh_token: &str) -> reqwest::Response {
    stack
        .send(
            stack
                .http()
                .post(stack.url("/api/auth/refresh"))
                .json(&json!({"refresh_token": refresh_token})),
        )
        .await
}

/// A browser's sign-in as the admin, in cookie mode.
async fn cookie_login(stack: &impl Api) -> reqwest::Response {
    stack
        .send(
            stack
                .http()
                .post(stack.url("/api/auth/login"))
                .header("X-Service-Auth-Mode", "cookie")
                .form(&[("username", "admin"), ("password", ADMIN_PASSWORD)]),
        )
        .await
}

async fn me_status(stack: &impl Api, token: &str) -> u16 {
    stack
        .send(stack.http().get(stack.url("/api/auth/me")).bearer_auth(token))
        .await
        .status()
        .as_u16()
}

async fn key_status(stack: &impl Api, key: &str) -> u16 {
    stack
        .send(stack.http().get(stack.url("/api/auth/me")).header("X-Api-Key", key))
        .await
        .status()
        .as_u16()
}

async fn create_key(stack: &impl Api, token: &str, body: Value) -> Value {
    let response = stack
        .send(
            stack
                .http()
                .post(stack.url("/api/auth/api-keys"))
                .bearer_auth(token)
                .json(&body),
        )
        .await;
    assert_eq!(response.status(), 201);
    response.json().await.unwrap()
}

fn expired_token(user_id: Uuid) -> String {
    let token = TokenKeys::new(JWT_SECRET)
        .issue_access(user_id, 0, Duration::from_secs(0))
        .unwrap();
    std::thread::sleep(Duration::from_millis(1100));
    token
}

#[tokio::test]
async fn refresh_tokens_rotate_with_a_grace_for_concurrent_tabs() {
    let stack = App::start().await;
    let first = login(&stack, "admin", ADMIN_PASSWORD).await;
    let rt1 = first["refresh_token"].as_str().unwrap();
    let response = refresh(&stack, rt1).await;
    assert_eq!(response.status(), 200);
    let second: Value = response.json().await.unwrap();
    let rt2 = second["refresh_token"].as_str().unwrap();
    assert_ne!(rt1, rt2, "the refresh token rotates");
    assert_eq!(me_status(&stack, second["access_token"].as_str().unwrap()).await, 200);
    // A second tab refreshing with the same token at the same moment succeeds.
    assert_eq!(refresh(&stack, rt1).await.status(), 200);
    // Past the grace period the rotated token is dead.
    sqlx::query("UPDATE refresh_tokens SET rotated_at = now() - interval '5 minutes' WHERE rotated_at IS NOT NULL")
        .execute(&stack.pool)
        .await
        .unwrap();
    assert_eq!(refresh(&stack, rt1).await.status(), 401);
    assert_eq!(refresh(&stack, rt2).await.status(), 200, "the newest token still works");
    assert_eq!(refresh(&stack, "rt_garbage").await.status(), 401);
}

#[tokio::test]
async fn cookie_mode_keeps_the_refresh_token_out_of_scripts_and_checks_csrf() {
    let stack = App::start().await;
    let response = cookie_login(&stack).await;
    assert_eq!(response.status(), 200);
    let cookies: Vec<String> = response
        .headers()
        .get_all(header::SET_COOKIE)
        .iter()
        .map(|v| v.to_str().unwrap().to_string())
        .collect();
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["refresh_token"], Value::Null);
    let refresh_cookie = cookies
        .iter()
        .find(|c| c.starts_with("refresh_token="))
        .expect("refresh cookie");
    assert!(refresh_cookie.contains("HttpOnly"));
    let csrf_cookie = cookies
        .iter()
        .find(|c| c.starts_with("csrf_token="))
        .expect("csrf cookie");
    assert!(!csrf_cookie.contains("HttpOnly"), "scripts read the CSRF cookie");
    let value = |c: &str| c.split(';').next().unwrap().split_once('=').unwrap().1.to_string();
    let (rt, csrf) = (value(refresh_cookie), value(csrf_cookie));
    let cookie_header = format!("refresh_token={rt}; csrf_token={csrf}");

    let send = |csrf_header: Option<&str>| {
        let mut request = stack
            .http
            .post(stack.url("/api/auth/refresh/"))
            .header("X-Service-Auth-Mode", "cookie")
            .header(header::COOKIE, cookie_header.clone());
        if let Some(h) = csrf_header {
            request = request.header("X-CSRF-Token", h.to_string());
        }
        stack.send(request)
    };
    assert_eq!(send(Some("wrong")).await.status(), 403);
    assert_eq!(send(None).await.status(), 403);
    let ok = send(Some(&csrf)).await;
    assert_eq!(ok.status(), 200);
    assert!(
        ok.headers()
            .get_all(header::SET_COOKIE)
            .iter()
            .any(|c| c.to_str().unwrap().starts_with("refresh_token="))
    );
    let body: Value = ok.json().await.unwrap();
    assert_eq!(body["refresh_token"], Value::Null);
    assert!(body["access_token"].is_string());
}

#[tokio::test]
async fn sign_out_ends_every_session_but_keeps_api_keys() {
    let stack = App::start().await;
    let laptop = login(&stack, "admin", ADMIN_PASSWORD).await;
    let phone = login(&stack, "admin", ADMIN_PASSWORD).await;
    let laptop_token = laptop["access_token"].as_str().unwrap();
    let key = create_key(&stack, laptop_token, json!({})).await["key"]
        .as_str()
        .unwrap()
        .to_string();
    let response = stack
        .send(
            stack
                .http
                .post(stack.url("/api/auth/logout/"))
                .bearer_auth(laptop_token),
        )
        .await;
    assert_eq!(response.status(), 204);
    assert_eq!(me_status(&stack, laptop_token).await, 401);
    assert_eq!(
        me_status(&stack, phone["access_token"].as_str().unwrap()).await,
        401,
        "the other device is signed out too"
    );
    assert_eq!(
        refresh(&stack, phone["refresh_token"].as_str().unwrap()).await.status(),
        401
    );
    assert_eq!(key_status(&stack, &key).await, 200, "API keys stay valid");

    // A dead access token is accepted; without one the refresh token is used.
    let admin_id: Uuid = sqlx::query_scalar("SELECT id FROM users WHERE username = 'admin'")
        .fetch_one(&stack.pool)
        .await
        .unwrap();
    let dead = expired_token(admin_id);
    assert_eq!(
        stack
            .send(stack.http.post(stack.url("/api/auth/logout")).bearer_auth(&dead))
            .await
            .status(),
        204
    );
    let session = login(&stack, "admin", ADMIN_PASSWORD).await;
    let by_refresh = stack
        .send(
            stack
                .http
                .post(stack.url("/api/auth/logout"))
                .json(&json!({"refresh_token": session["refresh_token"]})),
        )
        .await;
    assert_eq!(by_refresh.status(), 204);
    assert_eq!(me_status(&stack, session["access_token"].as_str().unwrap()).await, 401);
    assert_eq!(
        stack
            .send(stack.http.post(stack.url("/api/auth/logout")))
            .await
            .status(),
        401
    );
    assert_eq!(
        stack
            .send(stack.http.post(stack.url("/api/auth/logout")).bearer_auth("garbage"))
            .await
            .status(),
        401
    );
}

#[tokio::test]
async fn signing_out_this_device_leaves_the_others_signed_in() {
    let stack = App::start().await;
    let laptop = login(&stack, "admin", ADMIN_PASSWORD).await;
    let phone = login(&stack, "admin", ADMIN_PASSWORD).await;
    let sign_out = |body: Value| stack.send(stack.http.post(stack.url("/api/auth/logout/session")).json(&body));
    assert_eq!(sign_out(json!({})).await.status(), 401, "nothing presented");
    assert_eq!(sign_out(json!({"refresh_token": "rt_unknown"})).await.status(), 401);
    let laptop_refresh = laptop["refresh_token"].as_str().unwrap();
    // The laptop renews once first: its whole sign-in ends, not one token of it.
    let renewed: Value = refresh(&stack, laptop_refresh).await.json().await.unwrap();
    let renewed_refresh = renewed["refresh_token"].as_str().unwrap();
    let ended = sign_out(json!({"refresh_token": laptop_refresh})).await;
    assert_eq!(ended.status(), 204, "{}", ended.text().await.unwrap());
    assert_eq!(
        refresh(&stack, renewed_refresh).await.status(),
        401,
        "the laptop's sign-in ended"
    );
    let phone_refresh = phone["refresh_token"].as_str().unwrap();
    assert_eq!(
        refresh(&stack, phone_refresh).await.status(),
        200,
        "the phone's did not"
    );
    assert_eq!(me_status(&stack, phone["access_token"].as_str().unwrap()).await, 200);

    // In cookie mode the CSRF value must come with it, and the cookies are cleared.
    let browser = cookie_login(&stack).await;
    let cookies: Vec<String> = browser
        .headers()
        .get_all(header::SET_COOKIE)
        .iter()
        .map(|c| c.to_str().unwrap().split(';').next().unwrap().to_string())
        .collect();
    let csrf = cookies
        .iter()
        .find_map(|c| c.strip_prefix("csrf_token="))
        .unwrap()
        .to_string();
    let cookie_sign_out = |csrf: Option<&str>| {
        let mut request = stack
            .http
            .post(stack.url("/api/auth/logout/session"))
            .header("X-Service-Auth-Mode", "cookie")
            .header(header::COOKIE, cookies.join("; "));
        if let Some(csrf) = csrf {
            request = request.header("X-CSRF-Token", csrf);
        }
        stack.send(request)
    };
    assert_eq!(cookie_sign_out(None).await.status(), 403);
    let done = cookie_sign_out(Some(&csrf)).await;
    assert_eq!(done.status(), 204);
    assert!(
        done.headers()
            .get_all(header::SET_COOKIE)
            .iter()
            .any(|c| c.to_str().unwrap().starts_with("refresh_token=;")),
        "the refresh cookie is cleared"
    );
    assert_eq!(cookie_sign_out(Some(&csrf)).await.status(), 401, "that sign-in is over");
}

#[tokio::test]
async fn keys_die_on_password_change_role_change_and_approval() {
    let stack = App::start().await;
    let admin = stack.admin_token().await;
    let (editor_id, editor) = stack.user_token("erin", "editor").await;
    let key = create_key(&stack, &editor, json!({"scope": "full"})).await["key"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(key_status(&stack, &key).await, 200);
    let change = |current: &str, new: &str| {
        stack.send(
            stack
                .http
                .post(stack.url("/api/auth/change-password/"))
                .bearer_auth(&editor)
                .json(&json!({"current_password": current, "new_password": new})),
        )
    };
    assert_eq!(change("wrong-password", "Another-Passw0rd").await.status(), 400);
    assert_eq!(change("User-Password-123", "Another-Passw0rd").await.status(), 204);
    assert_eq!(key_status(&stack, &key).await, 401, "password change");
    assert_eq!(me_status(&stack, &editor).await, 200, "the session itself stays");

    let key = create_key(&stack, &editor, json!({})).await["key"]
        .as_str()
        .unwrap()
        .to_string();
    let patch = |id: Uuid, body: Value| {
        stack.send(
            stack
                .http
                .patch(stack.url(&format!("/api/admin/users/{id}")))
                .bearer_auth(&admin)
                .json(&body),
        )
    };
    assert_eq!(
        patch(editor_id, json!({"email": "erin@example.org"})).await.status(),
        200
    );
    assert_eq!(key_status(&stack, &key).await, 200, "an email change keeps keys");
    assert_eq!(patch(editor_id, json!({"role": "viewer"})).await.status(), 200);
    assert_eq!(key_status(&stack, &key).await, 401, "role change");
    // An admin cannot lock themselves out; the rest of their account changes.
    let (_, me) = stack.get_json(Some(&admin), "/api/auth/me").await;
    let own: Uuid = me["id"].as_str().unwrap().parse().unwrap();
    for change in [
        json!({"role": "viewer"}),
        json!({"status": "suspended"}),
        json!({"is_active": false}),
        json!({"auth_provider": "local"}),
    ] {
        let refused = patch(own, change.clone()).await;
        assert_eq!(refused.status(), 409, "{change}");
    }
    assert_eq!(me_status(&stack, &admin).await, 200, "still an admin, still signed in");
    assert_eq!(patch(own, json!({"email": "root@example.org"})).await.status(), 200);

    let response = stack
        .send(
            stack
                .http
                .post(stack.url("/api/auth/register"))
                .json(&json!({"username": "newbie", "password": "Newbie-Passw0rd", "email": "newbie@example.org"})),
        )
        .await;
    assert_eq!(response.status(), 201);
    let newbie: Value = response.json().await.unwrap();
    assert_eq!(newbie["status"], "pending");
    let newbie_id: Uuid = newbie["id"].as_str().unwrap().parse().unwrap();
    let refused = stack
        .send(
            stack
                .http
                .post(stack.url("/api/auth/login"))
                .form(&[("username", "newbie"), ("password", "Newbie-Passw0rd")]),
        )
        .await;
    assert_eq!(refused.status(), 401, "pending accounts cannot sign in");
    // The admin screen's badge counts the accounts waiting for approval.
    let waiting = |query: &'static str| {
        let stack = &stack;
        let admin = admin.clone();
        async move {
            let (status, users) = stack.get_json(Some(&admin), &format!("/api/admin/users{query}")).await;
            assert_eq!(status, 200, "{users}");
            users
                .as_array()
                .unwrap()
                .iter()
                .map(|u| u["username"].as_str().unwrap().to_string())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(waiting("?status=pending").await, ["newbie"]);
    assert!(waiting("").await.len() > 1, "no filter lists every account");
    let (status, body) = stack.get_json(Some(&admin), "/api/admin/users?status=waiting").await;
    assert_eq!(status, 400, "{body}");
    let response = stack
        .send(
            stack
                .http
                .post(stack.url("/api/admin/api-keys/"))
                .bearer_auth(&admin)
                .json(&json!({"user_id": newbie_id, "scope": "read_only"})),
        )
        .await;
    assert_eq!(response.status(), 201);
    let pending_key = response.json::<Value>().await.unwrap()["key"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        key_status(&stack, &pending_key).await,
        401,
        "a pending account's key does not resolve"
    );
    assert_eq!(patch(newbie_id, json!({"status": "active"})).await.status(), 200);
    assert_eq!(key_status(&stack, &pending_key).await, 401, "approval revoked it");
    login(&stack, "newbie", "Newbie-Passw0rd").await;

    // Suspension stops sessions and keys at once.
    let newbie_token = stack.token("newbie", "Newbie-Passw0rd").await;
    let newbie_key = create_key(&stack, &newbie_token, json!({})).await["key"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(patch(newbie_id, json!({"status": "suspended"})).await.status(), 200);
    assert_eq!(me_status(&stack, &newbie_token).await, 401);
    assert_eq!(key_status(&stack, &newbie_key).await, 401);
}

#[tokio::test]
async fn api_key_rules() {
    let stack = App::start().await;
    let (_, editor) = stack.user_token("kim", "editor").await;
    let full = create_key(&stack, &editor, json!({"name": "ci"})).await;
    assert_eq!(full["scope"], "full");
    let key = full["key"].as_str().unwrap().to_string();
    let read_only = create_key(&stack, &editor, json!({"scope": "read_only"})).await["key"]
        .as_str()
        .unwrap()
        .to_string();

    // The query-string key counts on reads only.
    let (status, _) = stack.get_json(None, &format!("/api/auth/me?api_key={key}")).await;
    assert_eq!(status, 200);
    let post = stack
        .send(
            stack
                .http
                .post(stack.url(&format!("/api/auth/api-keys?api_key={key}")))
                .json(&json!({})),
        )
        .await;
    assert_eq!(
        post.status(),
        401,
        "on POST the query key is absent, so the request is anonymous"
    );
    // The header wins over the query parameter and the bearer token.
    let both = stack
        .send(
            stack
                .http
                .get(stack.url("/api/auth/me?api_key=garbage"))
                .header("X-Api-Key", &key),
        )
        .await;
    assert_eq!(both.status(), 200);

    // Read-only keys read, and are refused before the handler otherwise.
    assert_eq!(key_status(&stack, &read_only).await, 200);
    let refused = stack
        .send(
            stack
                .http
                .post(stack.url("/api/auth/api-keys"))
                .header("X-Api-Key", &read_only)
                .json(&json!({})),
        )
        .await;
    assert_eq!(refused.status(), 403);
    let body: Value = refused.json().await.unwrap();
    assert!(body["detail"].as_str().unwrap().contains("read-only"), "{body}");
    let delete = stack
        .send(
            stack
                .http
                .delete(stack.url(&format!("/api/jobs/{}", Uuid::now_v7())))
                .header("X-Api-Key", &read_only),
        )
        .await;
    assert_eq!(delete.status(), 403);

    // Listing never shows secrets; revoking stops a key; expiry is honoured.
    let (status, list) = stack.get_json(Some(&editor), "/api/auth/api-keys").await;
    assert_eq!(status, 200);
    assert_eq!(list.as_array().unwrap().len(), 2);
    assert!(!list.to_string().contains(&key) && !list.to_string().contains(&read_only));
    // Both keys authenticated requests above: their last use is listed.
    for listed in list.as_array().unwrap() {
        assert!(listed["last_used_at"].is_string(), "{listed}");
    }
    let id = full["id"].as_str().unwrap();
    let revoked = stack
        .send(
            stack
                .http
                .delete(stack.url(&format!("/api/auth/api-keys/{id}")))
                .bearer_auth(&editor),
        )
        .await;
    assert_eq!(revoked.status(), 204);
    assert_eq!(key_status(&stack, &key).await, 401);
    let soon = create_key(&stack, &editor, json!({"expires_at": (chrono_now_plus(2))})).await["key"]
        .as_str()
        .unwrap()
        .to_string();
    let unused = |list: &Value| {
        list.as_array()
            .unwrap()
            .iter()
            .filter(|k| k["last_used_at"].is_null())
            .count()
    };
    assert_eq!(
        unused(&stack.get_json(Some(&editor), "/api/auth/api-keys").await.1),
        1,
        "a new key was never used"
    );
    assert_eq!(key_status(&stack, &soon).await, 200);
    assert_eq!(unused(&stack.get_json(Some(&editor), "/api/auth/api-keys").await.1), 0);
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(key_status(&stack, &soon).await, 401, "expired");
    let past = stack
        .send(
            stack
                .http
                .post(stack.url("/api/auth/api-keys"))
                .bearer_auth(&editor)
                .json(&json!({"expires_at": "2020-01-01T00:00:00Z"})),
        )
        .await;
    assert_eq!(past.status(), 422);
    let bad_scope = stack
        .send(
            stack
                .http
                .post(stack.url("/api/auth/api-keys"))
                .bearer_auth(&editor)
                .json(&json!({"scope": "root"})),
        )
        .await;
    assert_eq!(bad_scope.status(), 422);
}

fn chrono_now_plus(seconds: u64) -> String {
    let t = std::time::SystemTime::now() + Duration::from_secs(seconds);
    let secs = t.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    // RFC 3339 from Unix seconds, without pulling a date crate into tests.
    let output = std::process::Command::new("date")
        .args(["-u", "-d", &format!("@{secs}"), "+%Y-%m-%dT%H:%M:%SZ"])
        .output()
        .unwrap();
    String::from_utf8(output.stdout).unwrap().trim().to_string()
}

/// An API key sent as `Authorization: Bearer` (as Prometheus and most
/// HTTP clients send a token) is that key: its owner, narrowed by its
/// scope; a key that resolves to nobody is a 401.
#[tokio::test]
async fn api_keys_are_taken_as_bearer_tokens() {
    let stack = App::start().await;
    let (_, editor) = stack.user_token("kim", "editor").await;
    let key = create_key(&stack, &editor, json!({})).await["key"]
        .as_str()
        .unwrap()
        .to_string();
    let read_only = create_key(&stack, &editor, json!({"scope": "read_only"})).await["key"]
        .as_str()
        .unwrap()
        .to_string();
    let (status, me) = stack.get_json(Some(&key), "/api/auth/me").await;
    assert_eq!(status, 200, "{me}");
    assert_eq!(me["username"], "kim");
    assert_eq!(me_status(&stack, &read_only).await, 200);
    let write = |token: String| {
        stack.send(
            stack
                .http
                .post(stack.url("/api/auth/api-keys"))
                .bearer_auth(token)
                .json(&json!({})),
        )
    };
    assert_eq!(write(key.clone()).await.status(), 201, "a full key writes");
    let refused = write(read_only).await;
    assert_eq!(refused.status(), 403);
    let problem: Value = refused.json().await.unwrap();
    assert!(problem["detail"].as_str().unwrap().contains("read-only"), "{problem}");
    let unknown = format!("sdc_{}", "0".repeat(64));
    let response = stack
        .send(stack.http.get(stack.url("/api/auth/me")).bearer_auth(&unknown))
        .await;
    assert_eq!(response.status(), 401);
    assert_eq!(response.headers()["content-type"], "application/problem+json");
    let problem: Value = response.json().await.unwrap();
    assert!(problem["detail"].as_str().unwrap().contains("API key"), "{problem}");
}

/// The `api_key` query parameter is a credential on every read, never a
/// parameter a route refuses as unknown: with it, the key's owner reads
/// what only they may (their account, their jobs, their private dataset);
/// the same requests without it are refused or show none of it.
#[tokio::test]
async fn the_query_key_is_taken_on_every_read() {
    let stack = App::start_with_worker().await;
    let (_, editor) = stack.user_token("kim", "editor").await;
    let key = create_key(&stack, &editor, json!({})).await["key"]
        .as_str()
        .unwrap()
        .to_string();
    let geojson = json!({"type": "FeatureCollection", "features": [
        {"type": "Feature", "geometry": {"type": "Point", "coordinates": [6.1, 49.6]}, "properties": {"name": "a"}}]});
    let job = stack
        .upload_ok(
            &editor,
            "kim.geojson",
            geojson.to_string().into_bytes(),
            &[("visibility", "private"), ("title", "Kim only")],
        )
        .await;
    let finished = stack.wait_job(&editor, &job).await;
    assert_eq!(finished["status"], "succeeded", "{finished}");
    let dataset = finished["dataset_id"].as_str().unwrap().to_string();
    let with_key = |path: &str| {
        let separator = if path.contains('?') { '&' } else { '?' };
        format!("{path}{separator}api_key={key}")
    };

    let (status, me) = stack.get_json(None, &with_key("/api/auth/me")).await;
    assert_eq!(status, 200, "{me}");
    assert_eq!(me["username"], "kim", "{me}");
    assert_eq!(stack.get_json(None, "/api/auth/me").await.0, 401);

    let lists_it = |list: &Value| {
        list["datasets"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["id"] == dataset.as_str())
    };
    let (status, list) = stack.get_json(None, &with_key("/api/datasets")).await;
    assert_eq!(status, 200, "{list}");
    assert!(lists_it(&list), "the key's owner sees the private dataset: {list}");
    let (status, list) = stack.get_json(None, "/api/datasets").await;
    assert_eq!(status, 200, "{list}");
    assert!(!lists_it(&list) && list["total"] == 0, "anonymous: {list}");

    let record = format!("/api/datasets/{dataset}");
    let (status, body) = stack.get_json(None, &with_key(&record)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["title"], "Kim only", "{body}");
    assert_eq!(stack.get_json(None, &record).await.0, 404, "anonymous");

    for path in ["/api/jobs", "/api/jobs?limit=5"] {
        let (status, body) = stack.get_json(None, &with_key(path)).await;
        assert_eq!(status, 200, "{path}: {body}");
        assert!(
            body["jobs"].as_array().unwrap().iter().any(|j| j["id"] == job.as_str()),
            "{path}: the owner's job is listed: {body}"
        );
        assert_eq!(stack.get_json(None, path).await.0, 401, "{path} anonymous");
    }
    let (status, _) = stack.get_json(None, "/api/jobs?api_key=sdc_wrong").await;
    assert_eq!(status, 401);
}

#[tokio::test]
async fn password_policy_edges() {
    let stack = App::start().await;
    let (_, token) = stack.user_token("pat", "viewer").await;
    let mut current = "User-Password-123".to_string();
    for (new, expected) in [
        ("Abcdefghij1".to_string(), 422),        // 11 characters
        ("abcdefghijkl".to_string(), 422),       // one class
        (format!("Aa1{}", "x".repeat(70)), 422), // 73 bytes
        (format!("Aa1{}", "€".repeat(24)), 422), // 75 bytes in 27 characters
        (format!("Aa1{}", "€".repeat(23)), 204), // 72 bytes, multibyte
        (format!("Aa1{}", "x".repeat(69)), 204), // 72 bytes
        ("Abcdefghij12".to_string(), 204),       // 12 characters, 3 classes
    ] {
        let response = stack
            .send(
                stack
                    .http
                    .post(stack.url("/api/auth/change-password"))
                    .bearer_auth(&token)
                    .json(&json!({"current_password": current, "new_password": new})),
            )
            .await;
        assert_eq!(response.status().as_u16(), expected, "{new:?} ({} bytes)", new.len());
        if expected == 204 {
            current = new;
        }
    }
    login(&stack, "pat", &current).await;
}

#[tokio::test]
async fn accounts_admin_and_me() {
    let stack = App::start().await;
    let admin = stack.admin_token().await;
    let create = |body: Value| {
        stack.send(
            stack
                .http
                .post(stack.url("/api/admin/users/"))
                .bearer_auth(&admin)
                .json(&body),
        )
    };
    let response = create(
        json!({"username": "dana", "password": "Dana-Passw0rd!", "email": "dana@example.org", "role": "editor"}),
    )
    .await;
    assert_eq!(response.status(), 201);
    let dana: Value = response.json().await.unwrap();
    assert_eq!(dana["roles"], json!(["editor"]));
    assert_eq!(dana["status"], "active");
    assert_eq!(dana["is_active"], true);
    for field in ["bytes_used", "dataset_count", "storage_cap", "count_cap"] {
        assert!(dana["quota_usage"][field].is_i64(), "{field}");
    }
    assert!(dana.get("password_hash").is_none() && !dana.to_string().contains("Dana-Passw0rd"));
    assert_eq!(
        create(json!({"username": "DANA", "password": "Dana-Passw0rd!", "role": "viewer"}))
            .await
            .status(),
        409
    );
    assert_eq!(
        create(json!({"username": "x", "password": "short", "role": "viewer"}))
            .await
            .status(),
        422
    );
    assert_eq!(
        create(json!({"username": "y", "password": "Dana-Passw0rd!", "role": "root"}))
            .await
            .status(),
        422
    );
    let (status, users) = stack.get_json(Some(&admin), "/api/admin/users").await;
    assert_eq!(status, 200);
    assert_eq!(users.as_array().unwrap().len(), 2);
    let dana_token = stack.token("dana", "Dana-Passw0rd!").await;
    let (status, me) = stack.get_json(Some(&dana_token), "/api/auth/me").await;
    assert_eq!(status, 200);
    assert_eq!(me["username"], "dana");
    let (status, _) = stack.get_json(Some(&dana_token), "/api/admin/users").await;
    assert_eq!(status, 403);
    let unknown = stack
        .send(
            stack
                .http
                .patch(stack.url(&format!("/api/admin/users/{}", Uuid::now_v7())))
                .bearer_auth(&admin)
                .json(&json!({"role": "viewer"})),
        )
        .await;
    assert_eq!(unknown.status(), 404);
    let deactivate = stack
        .send(
            stack
                .http
                .patch(stack.url(&format!("/api/admin/users/{}", dana["id"].as_str().unwrap())))
                .bearer_auth(&admin)
                .json(&json!({"is_active": false})),
        )
        .await;
    assert_eq!(deactivate.status(), 200);
    assert_eq!(me_status(&stack, &dana_token).await, 401);
    let refused = stack
        .send(
            stack
                .http
                .post(stack.url("/api/auth/login"))
                .form(&[("username", "dana"), ("password", "Dana-Passw0rd!")]),
        )
        .await;
    assert_eq!(refused.status(), 401);
}

#[tokio::test]
async fn restricted_datasets_follow_grants() {
    let app = App::start_with_worker().await;
    let (_, owner) = app.user_token("owen", "editor").await;
    let (reader_id, reader) = app.user_token("rita", "viewer").await;
    let (writer_id, writer) = app.user_token("walt", "editor").await;
    let points = json!({"type": "FeatureCollection", "features": [
        {"type": "Feature", "properties": {}, "geometry": {"type": "Point", "coordinates": [1, 2]}}]});
    let job = app
        .upload_ok(
            &owner,
            "p.geojson",
            points.to_string().into_bytes(),
            &[("visibility", "restricted")],
        )
        .await;
    let id = app.wait_job(&owner, &job).await["dataset_id"]
        .as_str()
        .unwrap()
        .to_string();
    let path = format!("/api/datasets/{id}");
    assert_eq!(app.get_json(Some(&reader), &path).await.0, 404);
    let grant = |user: Uuid, permission: &str| {
        app.send(
            app.http()
                .put(app.url(&format!("{path}/grants/{user}")))
                .bearer_auth(&owner)
                .json(&json!({"permission": permission})),
        )
    };
    assert_eq!(grant(reader_id, "read").await.status(), 200);
    assert_eq!(grant(writer_id, "write").await.status(), 200);
    assert_eq!(grant(writer_id, "admin").await.status(), 422);
    assert_eq!(grant(Uuid::now_v7(), "read").await.status(), 404);
    // Owners cannot list accounts: they grant by the person's username.
    let by_name = |username: &str, permission: &str| {
        app.send(
            app.http()
                .post(app.url(&format!("{path}/grants")))
                .bearer_auth(&owner)
                .json(&json!({"username": username, "permission": permission})),
        )
    };
    let renamed = by_name("WALT", "write").await;
    assert_eq!(renamed.status(), 200, "letter case aside");
    let renamed: Value = renamed.json().await.unwrap();
    assert_eq!(renamed["user_id"], json!(writer_id));
    assert_eq!(renamed["username"], "walt");
    let unknown = by_name("nobody-here", "read").await;
    assert_eq!(unknown.status(), 404);
    let unknown: Value = unknown.json().await.unwrap();
    assert!(unknown["detail"].as_str().unwrap().contains("nobody-here"), "{unknown}");
    assert_eq!(by_name("", "read").await.status(), 422);
    assert_eq!(by_name("rita", "admin").await.status(), 422);
    assert_eq!(app.get_json(Some(&reader), &path).await.0, 200);
    let (status, grants) = app.get_json(Some(&owner), &format!("{path}/grants")).await;
    assert_eq!(status, 200);
    assert_eq!(grants.as_array().unwrap().len(), 2);
    assert_eq!(
        app.get_json(Some(&reader), &format!("{path}/grants")).await.0,
        403,
        "only the owner manages grants"
    );
    let edit = |token: &str| {
        app.send(
            app.http()
                .patch(app.url(&path))
                .bearer_auth(token)
                .json(&json!({"summary": "edited"})),
        )
    };
    assert_eq!(edit(&reader).await.status(), 403, "a read grant does not allow writes");
    assert_eq!(edit(&writer).await.status(), 200, "a write grant does");
    let revoke = app
        .send(
            app.http()
                .delete(app.url(&format!("{path}/grants/{reader_id}")))
                .bearer_auth(&owner),
        )
        .await;
    assert_eq!(revoke.status(), 204);
    assert_eq!(app.get_json(Some(&reader), &path).await.0, 404);
}

#[tokio::test]
async fn download_tokens_cover_one_dataset_for_two_minutes() {
    let app = App::start_with_worker().await;
    let (_, owner) = app.user_token("dora", "editor").await;
    let points = json!({"type": "FeatureCollection", "features": [
        {"type": "Feature", "properties": {}, "geometry": {"type": "Point", "coordinates": [1, 2]}}]});
    let public = app
        .upload_ok(
            &owner,
            "pub.geojson",
            points.to_string().into_bytes(),
            &[("visibility", "public")],
        )
        .await;
    let private = app
        .upload_ok(&owner, "priv.geojson", points.to_string().into_bytes(), &[])
        .await;
    let public_id: Uuid = app.wait_job(&owner, &public).await["dataset_id"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let private_id: Uuid = app.wait_job(&owner, &private).await["dataset_id"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let mint = |id: Uuid, token: Option<&str>| {
        let mut request = app.http().post(app.url(&format!("/api/auth/download-token/{id}")));
        if let Some(token) = token {
            request = request.bearer_auth(token.to_string());
        }
        app.send(request)
    };
    let response = mint(public_id, None).await;
    assert_eq!(response.status(), 200, "anonymous callers may for public datasets");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["expires_in"], 120);
    let keys = TokenKeys::new(JWT_SECRET);
    let claims = keys
        .verify_download(body["token"].as_str().unwrap())
        .filter(|c| c.is_for(public_id))
        .expect("a download token for this dataset");
    assert_eq!(body["token_type"], "download");
    assert!(
        body["download_url"].as_str().unwrap().ends_with(&format!(
            "/api/datasets/{public_id}/download?token={}",
            body["token"].as_str().unwrap()
        )),
        "{body}"
    );
    assert_eq!(claims.typ, "download");
    assert_eq!(claims.scope, format!("dataset:{public_id}"));
    assert_eq!(claims.exp - claims.iat, 120);
    assert_eq!(mint(private_id, None).await.status(), 404);
    assert_eq!(mint(private_id, Some(&owner)).await.status(), 200);
}

#[tokio::test]
async fn cors_follows_rule_17() {
    let stack = App::start_with(&[("CORS_ALLOWED_ORIGINS", "https://app.example")]).await;
    let admin = stack.admin_token().await;
    let get = |path: &str, origin: &str, token: Option<&str>| {
        let mut request = stack.http.get(stack.url(path)).header(header::ORIGIN, origin);
        if let Some(token) = token {
            request = request.bearer_auth(token.to_string());
        }
        stack.send(request)
    };
    let acao = |r: &reqwest::Response| {
        r.headers()
            .get(header::ACCESS_CONTROL_ALLOW_ORIGIN)
            .map(|v| v.to_str().unwrap().to_string())
    };
    let anonymous = get("/api/openapi.json", "https://other.example", None).await;
    assert_eq!(acao(&anonymous).as_deref(), Some("*"));
    let search = get("/api/search/datasets", "https://other.example", None).await;
    assert_eq!(acao(&search).as_deref(), Some("*"));
    let credentialed = get("/api/openapi.json", "https://other.example", Some(&admin)).await;
    assert_eq!(acao(&credentialed), None, "a credential drops the wildcard");
    let listed = get("/api/auth/me", "https://app.example", Some(&admin)).await;
    assert_eq!(acao(&listed).as_deref(), Some("https://app.example"));
    assert_eq!(listed.headers()[header::ACCESS_CONTROL_ALLOW_CREDENTIALS], "true");
    let unlisted = get("/api/auth/me", "https://other.example", Some(&admin)).await;
    assert_eq!(acao(&unlisted), None);
    let preflight = |origin: &str| {
        stack.send(
            stack
                .http
                .request(Method::OPTIONS, stack.url("/api/datasets"))
                .header(header::ORIGIN, origin)
                .header(header::ACCESS_CONTROL_REQUEST_METHOD, "GET")
                .header(header::ACCESS_CONTROL_REQUEST_HEADERS, "x-api-key"),
        )
    };
    let ok = preflight("https://app.example").await;
    assert!(ok.status().is_success());
    assert_eq!(acao(&ok).as_deref(), Some("https://app.example"));
    assert_eq!(acao(&preflight("https://other.example").await), None);
}

#[test]
fn a_wildcard_cors_setting_stops_start_up() {
    let output = std::process::Command::new(catalog_tests::bin_dir().join("catalog-api"))
        .env("JWT_SECRET", JWT_SECRET)
        .env("CORS_ALLOWED_ORIGINS", "https://a.example,*")
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("CORS_ALLOWED_ORIGINS"));
}

#[tokio::test]
async fn no_secret_reaches_the_logs() {
    let stack = Stack::start_with(StackOptions::workers(1)).await;
    let mut secrets = vec![ADMIN_PASSWORD.to_string(), JWT_SECRET.to_string()];
    let session = login(&stack, "admin", ADMIN_PASSWORD).await;
    let access = session["access_token"].as_str().unwrap().to_string();
    secrets.push(access.clone());
    secrets.push(session["refresh_token"].as_str().unwrap().to_string());
    let renewed: Value = refresh(&stack, session["refresh_token"].as_str().unwrap())
        .await
        .json()
        .await
        .unwrap();
    secrets.push(renewed["refresh_token"].as_str().unwrap().to_string());
    let key = create_key(&stack, &access, json!({})).await["key"]
        .as_str()
        .unwrap()
        .to_string();
    secrets.push(key.clone());
    stack.get_json(None, &format!("/api/datasets?api_key={key}")).await;
    stack
        .send(
            stack
                .http
                .get(stack.url("/api/datasets"))
                .header("X-Api-Key", "sdc_wrong_key_value_0000"),
        )
        .await;
    secrets.push("sdc_wrong_key_value_0000".into());
    let response = stack
        .send(
            stack
                .http
                .post(stack.url("/api/admin/users"))
                .bearer_auth(&access)
                .json(&json!({"username": "sam", "password": "Sam-Secret-Passw0rd", "role": "viewer"})),
        )
        .await;
    assert_eq!(response.status(), 201);
    secrets.push("Sam-Secret-Passw0rd".into());
    stack
        .send(
            stack
                .http
                .post(stack.url("/api/auth/login"))
                .form(&[("username", "sam"), ("password", "Wrong-Secret-Passw0rd")]),
        )
        .await;
    secrets.push("Wrong-Secret-Passw0rd".into());
    let points = json!({"type": "FeatureCollection", "features": [
        {"type": "Feature", "properties": {}, "geometry": {"type": "Point", "coordinates": [1, 2]}}]});
    let job = stack
        .upload_ok(
            &access,
            "p.geojson",
            points.to_string().into_bytes(),
            &[("visibility", "public")],
        )
        .await;
    let id = stack.wait_job(&access, &job).await["dataset_id"]
        .as_str()
        .unwrap()
        .to_string();
    let download: Value = stack
        .send(stack.http.post(stack.url(&format!("/api/auth/download-token/{id}"))))
        .await
        .json()
        .await
        .unwrap();
    secrets.push(download["token"].as_str().unwrap().to_string());
    // Capabilities: a signed tile template, used; an embed token, used.
    let (_, signed) = stack.get_json(Some(&access), &format!("/api/tiles/token/{id}")).await;
    let tile_url = signed["tile_url"].as_str().unwrap().replace("{z}/{x}/{y}", "0/0/0");
    assert_eq!(stack.send(stack.http.get(&tile_url)).await.status(), 200);
    secrets.push(tile_url.split("sig=").nth(1).unwrap().to_string());
    let map: Value = stack
        .send(
            stack
                .http
                .post(stack.url("/api/maps"))
                .bearer_auth(&access)
                .json(&json!({"name": "m", "layers": [{"dataset_id": id}]})),
        )
        .await
        .json()
        .await
        .unwrap();
    let map_id = map["id"].as_str().unwrap();
    let embed: Value = stack
        .send(
            stack
                .http
                .post(stack.url(&format!("/api/maps/{map_id}/embed-tokens")))
                .bearer_auth(&access)
                .json(&json!({})),
        )
        .await
        .json()
        .await
        .unwrap();
    let embed = embed["token"].as_str().unwrap().to_string();
    let response = stack
        .send(
            stack
                .http
                .get(stack.url(&format!("/api/maps/{map_id}/style.json")))
                .header("x-embed-token", &embed),
        )
        .await;
    assert_eq!(response.status(), 200);
    secrets.push(embed);
    // A sign-in provider's client secret.
    let response = stack
        .send(
            stack
                .http
                .post(stack.url("/api/settings/oauth-providers"))
                .bearer_auth(&access)
                .json(
                    &json!({"slug": "corp", "display_name": "Corp", "provider_type": "oidc", "client_id": "c",
                      "client_secret": "Provider-Client-Secret-42", "discovery_url": "http://10.0.0.1/d"}),
                ),
        )
        .await;
    assert_eq!(response.status(), 201);
    let login = stack
        .send(stack.http.get(stack.url("/api/auth/oauth/corp/login")))
        .await;
    assert_eq!(login.status(), 502, "the provider's discovery is out of reach");
    secrets.push("Provider-Client-Secret-42".into());
    stack
        .send(stack.http.post(stack.url("/api/auth/logout")).bearer_auth(&access))
        .await;
    let logs = stack.logs();
    assert!(logs.contains("request"), "the logs were captured");
    for secret in &secrets {
        assert!(
            !logs.contains(secret.as_str()),
            "a secret is in the logs: {}...",
            &secret[..6]
        );
    }
    let stored: Vec<Vec<u8>> = sqlx::query_scalar("SELECT key_hash FROM api_keys")
        .fetch_all(&stack.pool)
        .await
        .unwrap();
    assert!(!stored.is_empty(), "the key is stored");
    assert!(
        stored.iter().all(|h| h.len() == 32 && h != key.as_bytes()),
        "keys are stored only as hashes"
    );
}

/// A password change ends the account's other sign-ins: their refresh
/// tokens stop refreshing. The sign-in that made the change goes on, also
/// after refreshing.
#[tokio::test]
async fn password_change_ends_the_other_sessions() {
    let stack = App::start().await;
    let (_, _) = stack.user_token("paula", "editor").await;
    let laptop = login(&stack, "paula", "User-Password-123").await;
    let phone = login(&stack, "paula", "User-Password-123").await;
    // The laptop has refreshed once: its session is the rotated token's.
    let laptop: Value = refresh(&stack, laptop["refresh_token"].as_str().unwrap())
        .await
        .json()
        .await
        .unwrap();
    let response = stack
        .send(
            stack
                .http
                .post(stack.url("/api/auth/change-password"))
                .bearer_auth(laptop["access_token"].as_str().unwrap())
                .json(&json!({"current_password": "User-Password-123", "new_password": "Changed-Passw0rd!"})),
        )
        .await;
    assert_eq!(response.status(), 204);
    assert_eq!(
        refresh(&stack, phone["refresh_token"].as_str().unwrap()).await.status(),
        401,
        "another session's refresh token is revoked"
    );
    assert_eq!(
        me_status(&stack, phone["access_token"].as_str().unwrap()).await,
        401,
        "and its access token with it"
    );
    assert_eq!(me_status(&stack, laptop["access_token"].as_str().unwrap()).await, 200);
    let renewed = refresh(&stack, laptop["refresh_token"].as_str().unwrap()).await;
    assert_eq!(renewed.status(), 200, "the session that changed the password stays");
    let renewed: Value = renewed.json().await.unwrap();
    assert_eq!(me_status(&stack, renewed["access_token"].as_str().unwrap()).await, 200);
    assert_eq!(
        refresh(&stack, renewed["refresh_token"].as_str().unwrap())
            .await
            .status(),
        200,
        "and keeps refreshing"
    );
}

/// Signing in as a user that does not exist costs what a wrong password
/// for one that does costs, so timing does not enumerate usernames.
#[tokio::test]
async fn sign_in_timing_does_not_reveal_usernames() {
    let stack = App::start().await;
    let (_, _) = stack.user_token("known", "viewer").await;
    let attempt = |username: &'static str| {
        let stack = &stack;
        async move {
            let started = std::time::Instant::now();
            let response = stack
                .send(
                    stack
                        .http
                        .post(stack.url("/api/auth/login"))
                        .form(&[("username", username), ("password", "Wrong-Password-1")]),
                )
                .await;
            assert_eq!(response.status(), 401);
            let body: Value = response.json().await.unwrap();
            assert_eq!(body["detail"], "wrong username or password", "the same refusal");
            started.elapsed()
        }
    };
    // Warm up both paths (connections, the dummy hash).
    attempt("known").await;
    attempt("nobody-by-this-name").await;
    let (mut known, mut unknown) = (Vec::new(), Vec::new());
    for _ in 0..6 {
        known.push(attempt("known").await);
        unknown.push(attempt("nobody-by-this-name").await);
    }
    known.sort();
    unknown.sort();
    let (known, unknown) = (known[known.len() / 2], unknown[unknown.len() / 2]);
    assert!(
        unknown * 3 >= known,
        "an unknown user is refused in {unknown:?}, a wrong password in {known:?}"
    );
}

/// A forgotten password, without mail: an admin makes a one-time link for
/// the account; it sets a new password once, ends every sign-in and key of
/// the account, and a newer link or a day retires it.
#[tokio::test]
async fn an_admin_made_link_sets_a_new_password_once() {
    let stack = App::start().await;
    let admin = stack.admin_token().await;
    let (user_id, old_access) = stack.user_token("forgetful", "editor").await;
    let key = create_key(&stack, &old_access, json!({})).await["key"]
        .as_str()
        .unwrap()
        .to_string();
    let make = |token: &str| {
        stack.send(
            stack
                .http
                .post(stack.url(&format!("/api/admin/users/{user_id}/password-reset")))
                .bearer_auth(token),
        )
    };
    assert_eq!(make(&old_access).await.status(), 403, "only admins make links");
    let unknown = stack
        .send(
            stack
                .http
                .post(stack.url(&format!("/api/admin/users/{}/password-reset", Uuid::now_v7())))
                .bearer_auth(&admin),
        )
        .await;
    assert_eq!(unknown.status(), 404);
    let first: Value = make(&admin).await.json().await.unwrap();
    let response = make(&admin).await;
    assert_eq!(response.status(), 201);
    let link: Value = response.json().await.unwrap();
    let url = link["url"].as_str().unwrap();
    assert!(url.starts_with(&stack.url("/reset-password#token=pr_")), "{url}");
    let token_of = |link: &Value| {
        link["url"]
            .as_str()
            .unwrap()
            .split("#token=")
            .nth(1)
            .unwrap()
            .to_string()
    };
    let reset = |token: String, password: &str| {
        stack.send(
            stack
                .http
                .post(stack.url("/api/auth/password-reset"))
                .json(&json!({"token": token, "new_password": password})),
        )
    };
    const NEW: &str = "Brand-New-Password-42";
    assert_eq!(
        reset(token_of(&first), NEW).await.status(),
        400,
        "a newer link retires the older one"
    );
    assert_eq!(reset(token_of(&link), "short").await.status(), 422, "the policy holds");
    assert_eq!(reset(format!("{}x", token_of(&link)), NEW).await.status(), 400);
    assert_eq!(reset(token_of(&link), NEW).await.status(), 204);
    assert_eq!(
        reset(token_of(&link), "Another-Password-43").await.status(),
        400,
        "once only"
    );
    assert_eq!(me_status(&stack, &old_access).await, 401, "the old sign-in ended");
    assert_eq!(key_status(&stack, &key).await, 401, "the old keys ended");
    let signed_in = stack
        .send(
            stack
                .http
                .post(stack.url("/api/auth/login"))
                .form(&[("username", "forgetful"), ("password", NEW)]),
        )
        .await;
    assert_eq!(signed_in.status(), 200, "the new password signs in");

    // A day later the link is spent.
    let late: Value = make(&admin).await.json().await.unwrap();
    sqlx::query(
        "UPDATE password_resets SET expires_at = now() - interval '1 second' WHERE user_id = $1 AND used_at IS NULL",
    )
    .bind(user_id)
    .execute(&stack.pool)
    .await
    .unwrap();
    assert_eq!(reset(token_of(&late), "Later-Password-44").await.status(), 400);
    // Without a mail server, asking by mail says to ask an admin.
    let asked = stack
        .send(
            stack
                .http
                .post(stack.url("/api/auth/password-reset/request"))
                .json(&json!({"account": "forgetful"})),
        )
        .await;
    assert_eq!(asked.status(), 409);
    let (_, config) = stack.get_json(None, "/api/auth/config").await;
    assert_eq!(config["password_reset_by_mail"], false);
}
