//! Single sign-on: provider management (secrets write-only and encrypted,
//! the last way in kept), the authorization-code flow with PKCE against a
//! real OIDC provider process on loopback, the linking and allowed-domain
//! rules, and conversions between auth providers retiring API keys.
use catalog_tests::{
    ADMIN_PASSWORD, ADMIN_USER, Api, Stack, StackOptions,
    idp::{CLIENT_ID, CLIENT_SECRET, Idp, Person, browser_sign_in, unfinished_sign_in},
};
use serde_json::{Value, json};

async fn stack_with(idp: &Idp) -> Stack {
    Stack::start_with(StackOptions::workers(0).env("OUTBOUND_ALLOWED_HOSTS", &idp.host())).await
}

async fn send(stack: &Stack, method: &str, path: &str, token: &str, body: Option<Value>) -> (u16, Value) {
    let mut request = stack
        .http
        .request(method.parse().unwrap(), stack.url(path))
        .bearer_auth(token);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

async fn add_oidc_provider(stack: &Stack, admin: &str, idp: &Idp, slug: &str, role: &str) -> Value {
    let (status, provider) = send(
        stack,
        "POST",
        "/api/settings/oauth-providers",
        admin,
        Some(json!({
            "slug": slug, "display_name": "Company login", "provider_type": "oidc",
            "client_id": CLIENT_ID, "client_secret": CLIENT_SECRET,
            "discovery_url": format!("{}/.well-known/openid-configuration", idp.base),
            "default_role": role,
        })),
    )
    .await;
    assert_eq!(status, 201, "{provider}");
    provider
}

fn person(subject: &str, email: Option<&str>, verified: Option<bool>) -> Person {
    Person {
        subject: subject.into(),
        email: email.map(String::from),
        email_verified: verified,
        name: Some(format!("Person {subject}")),
        addresses: Vec::new(),
    }
}

async fn me(stack: &Stack, token: &str) -> Value {
    let (status, me) = stack.get_json(Some(token), "/api/auth/me").await;
    assert_eq!(status, 200, "{me}");
    me
}

#[tokio::test]
async fn providers_are_managed_by_admins_and_their_secrets_never_leave() {
    let idp = Idp::start().await;
    let stack = stack_with(&idp).await;
    let admin = stack.admin_token().await;
    let provider = add_oidc_provider(&stack, &admin, &idp, "company", "viewer").await;
    let id = provider["id"].as_str().unwrap().to_string();
    assert_eq!(provider["scopes"], "openid profile email");
    assert_eq!(provider["enabled"], true);
    assert_eq!(provider["callback_url"], stack.url("/api/auth/oauth/company/callback"));
    let (_, listed) = send(&stack, "GET", "/api/settings/oauth-providers", &admin, None).await;
    for shown in [&provider, &listed] {
        assert!(!shown.to_string().contains(CLIENT_SECRET), "{shown}");
        assert!(shown.to_string().find("client_secret").is_none(), "{shown}");
    }
    let stored: Vec<u8> = sqlx::query_scalar("SELECT client_secret FROM oauth_providers WHERE slug = 'company'")
        .fetch_one(&stack.pool)
        .await
        .unwrap();
    assert!(
        !stored
            .windows(CLIENT_SECRET.len())
            .any(|w| w == CLIENT_SECRET.as_bytes()),
        "stored encrypted"
    );

    // Defaults by type, and what each type refuses.
    let (status, google) = send(
        &stack,
        "POST",
        "/api/settings/oauth-providers",
        &admin,
        Some(
            json!({"slug": "g", "display_name": "G", "provider_type": "idp_a", "client_id": "c", "client_secret": "s"}),
        ),
    )
    .await;
    assert_eq!(status, 201);
    assert_eq!(
        google["discovery_url"],
        "https://accounts.google.com/.well-known/openid-configuration"
    );
    let (status, plain) = send(&stack, "POST", "/api/settings/oauth-providers", &admin,
        Some(json!({"slug": "gh", "display_name": "GH", "provider_type": "idp_b", "client_id": "c", "client_secret": "s"}))).await;
    assert_eq!(status, 201);
    assert_eq!(plain["scopes"], "read:user user:email");
    assert_eq!(plain["authorize_url"], "https://github.com/login/oauth/authorize");
    for (body, status) in [
        (
            json!({"slug": "x", "display_name": "X", "provider_type": "idp_b", "client_id": "c", "client_secret": "s",
                "discovery_url": "https://example.org/.well-known/openid-configuration"}),
            422,
        ),
        (
            json!({"slug": "Not Safe", "display_name": "X", "provider_type": "oidc", "client_id": "c", "client_secret": "s",
                "discovery_url": "https://example.org/d"}),
            422,
        ),
        (
            json!({"slug": "x", "display_name": "X", "provider_type": "oidc", "client_id": "c"}),
            422,
        ),
        (
            json!({"slug": "x", "display_name": "X", "provider_type": "saml", "client_id": "c", "client_secret": "s"}),
            422,
        ),
        (
            json!({"slug": "x", "display_name": "X", "provider_type": "oidc", "client_id": "c", "client_secret": "s"}),
            422,
        ),
        (
            json!({"slug": "x", "display_name": "X", "provider_type": "oidc", "client_id": "c", "client_secret": "s",
                "discovery_url": "https://example.org/d", "default_role": "owner"}),
            422,
        ),
        (
            json!({"slug": "company", "display_name": "X", "provider_type": "oidc", "client_id": "c", "client_secret": "s",
                "discovery_url": "https://example.org/d"}),
            409,
        ),
    ] {
        let (got, problem) = send(
            &stack,
            "POST",
            "/api/settings/oauth-providers",
            &admin,
            Some(body.clone()),
        )
        .await;
        assert_eq!(got, status, "{body} → {problem}");
    }

    // The sign-in screen shows enabled providers at once.
    let (_, config) = stack.get_json(None, "/api/auth/config").await;
    let slugs: Vec<&str> = config["oauth_providers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["slug"].as_str().unwrap())
        .collect();
    assert_eq!(slugs.len(), 3);
    assert!(slugs.contains(&"company"));
    for other in [&google, &plain] {
        let path = format!("/api/settings/oauth-providers/{}", other["id"].as_str().unwrap());
        assert_eq!(send(&stack, "DELETE", &path, &admin, None).await.0, 204);
    }
    let (_, config) = stack.get_json(None, "/api/auth/config").await;
    assert_eq!(
        config["oauth_providers"][0]["login_url"],
        stack.url("/api/auth/oauth/company/login")
    );
    assert_eq!(config["oauth_providers"].as_array().unwrap().len(), 1);

    // Updating without a secret keeps it; a new one rotates it.
    let path = format!("/api/settings/oauth-providers/{id}");
    let (status, renamed) = send(
        &stack,
        "PUT",
        &path,
        &admin,
        Some(json!({"display_name": "Staff login"})),
    )
    .await;
    assert_eq!(status, 200, "{renamed}");
    idp.sign_in_next(person("kept-1", Some("kept@example.org"), Some(true)));
    assert!(
        browser_sign_in(&stack.base, "company").await.access_token.is_some(),
        "the stored secret still works"
    );
    assert_eq!(
        send(
            &stack,
            "PUT",
            &path,
            &admin,
            Some(json!({"client_secret": "rotated-wrong"}))
        )
        .await
        .0,
        200
    );
    let refused = browser_sign_in(&stack.base, "company").await;
    assert_eq!(
        refused.error.as_deref(),
        Some("provider_error"),
        "{:?}",
        refused.landing
    );
    assert!(!refused.landing.as_str().contains("rotated-wrong"));
    assert_eq!(
        send(
            &stack,
            "PUT",
            &path,
            &admin,
            Some(json!({"client_secret": CLIENT_SECRET}))
        )
        .await
        .0,
        200
    );

    // With password sign-in off the last provider stays.
    let (status, settings) = send(
        &stack,
        "PUT",
        "/api/settings/auth",
        &admin,
        Some(json!({"password_login_enabled": false, "allowed_email_domains": []})),
    )
    .await;
    assert_eq!(status, 200, "{settings}");
    let login = stack
        .http
        .post(stack.url("/api/auth/login"))
        .form(&[("username", ADMIN_USER), ("password", ADMIN_PASSWORD)])
        .send()
        .await
        .unwrap();
    assert_eq!(login.status(), 403);
    let (_, config) = stack.get_json(None, "/api/auth/config").await;
    assert_eq!(config["password_login_enabled"], false);
    assert_eq!(
        send(&stack, "PUT", &path, &admin, Some(json!({"enabled": false})))
            .await
            .0,
        422
    );
    assert_eq!(send(&stack, "DELETE", &path, &admin, None).await.0, 422);
    assert_eq!(
        send(
            &stack,
            "PUT",
            "/api/settings/auth",
            &admin,
            Some(json!({"password_login_enabled": true, "allowed_email_domains": []}))
        )
        .await
        .0,
        200
    );
    let links: i64 = sqlx::query_scalar("SELECT count(*) FROM oauth_accounts")
        .fetch_one(&stack.pool)
        .await
        .unwrap();
    assert_eq!(links, 1);
    assert_eq!(send(&stack, "DELETE", &path, &admin, None).await.0, 204);
    let links: i64 = sqlx::query_scalar("SELECT count(*) FROM oauth_accounts")
        .fetch_one(&stack.pool)
        .await
        .unwrap();
    assert_eq!(links, 0, "deleting a provider removes its links");
    let (status, _) = send(
        &stack,
        "PUT",
        "/api/settings/auth",
        &admin,
        Some(json!({"password_login_enabled": false, "allowed_email_domains": []})),
    )
    .await;
    assert_eq!(status, 422, "no provider left to sign in with");
}

#[tokio::test]
async fn sign_in_links_accounts_by_the_rules() {
    let idp = Idp::start().await;
    let stack = stack_with(&idp).await;
    let admin = stack.admin_token().await;
    add_oidc_provider(&stack, &admin, &idp, "company", "editor").await;

    // A new identity with a verified email: a new account, the provider's
    // default role, a session in the fragment and the refresh cookie.
    idp.sign_in_next(person("sub-new", Some("Nora.Nguyen@example.org"), Some(true)));
    let first = browser_sign_in(&stack.base, "company").await;
    assert_eq!(first.landing.path(), "/oauth/callback");
    let token = first.access_token.clone().expect("an access token");
    assert!(
        first
            .set_cookies
            .iter()
            .any(|c| c.starts_with("refresh_token=") && c.contains("HttpOnly"))
    );
    let nora = me(&stack, &token).await;
    assert_eq!(nora["username"], "nora.nguyen");
    assert_eq!(nora["roles"], json!(["editor"]));
    let request = &idp.authorize_requests()[0];
    assert_eq!(request["code_challenge_method"], "S256");
    assert!(request["code_challenge"].len() >= 43 && request["state"].len() >= 32 && request.contains_key("nonce"));

    // (a) The same subject signs in the same account.
    idp.sign_in_next(person("sub-new", Some("nora.nguyen@example.org"), Some(true)));
    let again = browser_sign_in(&stack.base, "company").await;
    assert_eq!(me(&stack, &again.access_token.unwrap()).await["id"], nora["id"]);

    // (b) A verified email links to the local account holding it (any
    // case); that converts the account, so its API keys die, and its
    // password still works.
    let (status, lena) = send(
        &stack,
        "POST",
        "/api/admin/users",
        &admin,
        Some(
            json!({"username": "lena", "password": "Lena-Password-123", "email": "lena@example.org", "role": "viewer"}),
        ),
    )
    .await;
    assert_eq!(status, 201, "{lena}");
    let lena_token = stack.token("lena", "Lena-Password-123").await;
    let key = stack.api_key(&lena_token, "full").await;
    let with_key = |key: String| {
        let stack = &stack;
        async move {
            stack
                .http
                .get(stack.url("/api/auth/me"))
                .header("x-api-key", key)
                .send()
                .await
                .unwrap()
                .status()
        }
    };
    assert_eq!(with_key(key.clone()).await, 200);
    idp.sign_in_next(person("sub-lena", Some("LENA@Example.org"), Some(true)));
    let linked = browser_sign_in(&stack.base, "company").await;
    assert_eq!(me(&stack, &linked.access_token.unwrap()).await["id"], lena["id"]);
    assert_eq!(with_key(key).await, 401, "conversion retired the key");
    stack.token("lena", "Lena-Password-123").await;

    // An unverified (or unasserted) email held by a local account is refused.
    for verified in [Some(false), None] {
        idp.sign_in_next(person("sub-mallory", Some("lena@example.org"), verified));
        let refused = browser_sign_in(&stack.base, "company").await;
        assert_eq!(refused.error.as_deref(), Some("email_not_verified"), "{verified:?}");
        assert!(refused.access_token.is_none());
    }
    // ... and discarded when nobody holds it: a new account without email.
    idp.sign_in_next(person("sub-quiet", Some("quiet@example.org"), Some(false)));
    let quiet = browser_sign_in(&stack.base, "company").await;
    let quiet = me(&stack, &quiet.access_token.unwrap()).await;
    assert!(quiet["email"].is_null(), "{quiet}");
    assert_eq!(quiet["username"], "person-sub-quiet");

    // Allowed domains: first-time identities need a verified address inside
    // them; returning ones are checked too, unless they manage settings.
    let (status, _) = send(
        &stack,
        "PUT",
        "/api/settings/auth",
        &admin,
        Some(json!({"password_login_enabled": true, "allowed_email_domains": ["Example.org"]})),
    )
    .await;
    assert_eq!(status, 200);
    idp.sign_in_next(person("sub-out", Some("out@elsewhere.net"), Some(true)));
    assert_eq!(
        browser_sign_in(&stack.base, "company").await.error.as_deref(),
        Some("domain_not_allowed")
    );
    idp.sign_in_next(person("sub-quiet", None, None));
    assert_eq!(
        browser_sign_in(&stack.base, "company").await.error.as_deref(),
        Some("domain_not_allowed"),
        "a returning user with no address in the domains"
    );
    idp.sign_in_next(person("sub-new", Some("nora.nguyen@example.org"), Some(true)));
    assert!(browser_sign_in(&stack.base, "company").await.access_token.is_some());
    let admin_id: String = sqlx::query_scalar("SELECT id::text FROM users WHERE username = 'admin'")
        .fetch_one(&stack.pool)
        .await
        .unwrap();
    sqlx::query("INSERT INTO oauth_accounts (id, provider_id, subject, user_id) SELECT gen_random_uuid(), id, 'sub-admin', $1::uuid FROM oauth_providers")
        .bind(&admin_id).execute(&stack.pool).await.unwrap();
    idp.sign_in_next(person("sub-admin", Some("root@elsewhere.net"), Some(true)));
    assert!(
        browser_sign_in(&stack.base, "company").await.access_token.is_some(),
        "admins are exempt"
    );

    // Suspended accounts cannot sign in this way either.
    let path = format!("/api/admin/users/{}", nora["id"].as_str().unwrap());
    assert_eq!(
        send(&stack, "PATCH", &path, &admin, Some(json!({"status": "suspended"})))
            .await
            .0,
        200
    );
    idp.sign_in_next(person("sub-new", Some("nora.nguyen@example.org"), Some(true)));
    assert_eq!(
        browser_sign_in(&stack.base, "company").await.error.as_deref(),
        Some("account_inactive")
    );

    // An admin converting an account back to local retires its keys and links.
    let lena_key = stack
        .api_key(&stack.token("lena", "Lena-Password-123").await, "full")
        .await;
    let lena_path = format!("/api/admin/users/{}", lena["id"].as_str().unwrap());
    assert_eq!(
        send(
            &stack,
            "PATCH",
            &lena_path,
            &admin,
            Some(json!({"auth_provider": "nowhere"}))
        )
        .await
        .0,
        422
    );
    assert_eq!(
        with_key(lena_key.clone()).await,
        200,
        "a refused change converts nothing"
    );
    assert_eq!(
        send(
            &stack,
            "PATCH",
            &lena_path,
            &admin,
            Some(json!({"auth_provider": "local"}))
        )
        .await
        .0,
        200
    );
    assert_eq!(with_key(lena_key).await, 401);
    let links: i64 = sqlx::query_scalar("SELECT count(*) FROM oauth_accounts WHERE user_id = $1::uuid")
        .bind(lena["id"].as_str().unwrap())
        .fetch_one(&stack.pool)
        .await
        .unwrap();
    assert_eq!(links, 0);

    // A sign-in started by someone else cannot be finished in another
    // browser (login CSRF): the callback needs the starter's cookie.
    idp.sign_in_next(person("sub-attacker", Some("attacker@example.org"), Some(true)));
    let callback = unfinished_sign_in(&stack.base, "company").await;
    let victim = catalog_tests::http_client()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let finished = victim.get(&callback).send().await.unwrap();
    assert_eq!(finished.status(), 400);
    assert!(finished.headers().get("location").is_none());

    // A local account already linked to another provider is not taken over
    // by an email match.
    sqlx::query("UPDATE users SET auth_provider = 'elsewhere' WHERE id = $1::uuid")
        .bind(nora["id"].as_str().unwrap())
        .execute(&stack.pool)
        .await
        .unwrap();
    sqlx::query("UPDATE users SET status = 'active' WHERE id = $1::uuid")
        .bind(nora["id"].as_str().unwrap())
        .execute(&stack.pool)
        .await
        .unwrap();
    idp.sign_in_next(person("sub-other-nora", Some("nora.nguyen@example.org"), Some(true)));
    assert_eq!(
        browser_sign_in(&stack.base, "company").await.error.as_deref(),
        Some("email_in_use")
    );

    // A callback this service did not start, or one replayed, is refused.
    let browser = catalog_tests::http_client()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let forged = browser
        .get(stack.url("/api/auth/oauth/company/callback?code=x&state=forged"))
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), 400);
    assert_eq!(forged.headers()["content-type"], "application/problem+json");
    let unknown = browser
        .get(stack.url("/api/auth/oauth/nobody/login"))
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 404);
}

#[tokio::test]
async fn plain_oauth_accepts_only_the_primary_verified_address() {
    let idp = Idp::start().await;
    let stack = stack_with(&idp).await;
    let admin = stack.admin_token().await;
    let (status, provider) = send(
        &stack,
        "POST",
        "/api/settings/oauth-providers",
        &admin,
        Some(json!({
            "slug": "code-host", "display_name": "Code host", "provider_type": "idp_b",
            "client_id": CLIENT_ID, "client_secret": CLIENT_SECRET,
            "authorize_url": format!("{}/authorize", idp.base), "token_url": format!("{}/token", idp.base),
            "userinfo_url": format!("{}/user", idp.base),
        })),
    )
    .await;
    assert_eq!(status, 201, "{provider}");

    let mut someone = person("4242", None, None);
    someone.name = Some("octo".into());
    someone.addresses = vec![
        ("side@example.org".into(), false, true),
        ("main@example.org".into(), true, false),
    ];
    idp.sign_in_next(someone.clone());
    let signed = browser_sign_in(&stack.base, "code-host").await;
    let account = me(&stack, &signed.access_token.unwrap()).await;
    assert_eq!(account["username"], "octo");
    assert!(account["email"].is_null(), "no primary verified address: {account}");
    assert!(
        !idp.authorize_requests()[0].contains_key("nonce"),
        "plain OAuth 2.0 has no nonce"
    );

    someone.subject = "4343".into();
    someone.addresses = vec![("main2@example.org".into(), true, true)];
    idp.sign_in_next(someone);
    let signed = browser_sign_in(&stack.base, "code-host").await;
    let account = me(&stack, &signed.access_token.unwrap()).await;
    assert_eq!(account["email"], "main2@example.org");
    assert_eq!(account["username"], "main2");
}
