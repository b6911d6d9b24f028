//! The sandbox's own connections: they log in as the sandbox role, so a
//! statement can never act with the service's rights, whatever it calls.
use std::time::Duration;

use catalog_shared::{AppError, config::Config, db::quote_ident};
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use sqlx::{PgPool, Postgres, Transaction, postgres::PgPoolOptions};

/// The role the migrations create; used when SANDBOX_DATABASE_URL is unset.
const DEFAULT_ROLE: &str = "catalog_sandbox";
const MAX_CONNECTIONS: u32 = 8;

#[derive(Clone)]
pub struct SandboxPool {
    pool: Option<PgPool>,
    /// The same login on each read replica (`DATABASE_READ_URLS`, in
    /// order), when the login is derived from the database URLs.
    replicas: Vec<PgPool>,
    role: String,
    /// The password the service gives the role itself, when it derives the
    /// login from DATABASE_URL.
    derived_password: Option<String>,
}

impl SandboxPool {
    /// SANDBOX_DATABASE_URL when set; otherwise DATABASE_DIRECT_URL (the
    /// primary itself, not a pooler that knows only the service's login)
    /// with the sandbox role as user and a password derived from
    /// JWT_SECRET, which every API process shares. Connections open lazily.
    pub fn new(config: &Config) -> Self {
        let (url, derived_password) = match &config.sandbox_database_url {
            Some(url) => (Some(url.clone()), None),
            None => {
                let password = derived_password(&config.jwt_secret);
                (login_url(&config.database_direct_url, &password), Some(password))
            }
        };
        let replicas = match &derived_password {
            Some(password) => config
                .database_read_urls
                .iter()
                .filter_map(|url| login_url(url, password))
                .filter_map(|url| connect(&url))
                .collect(),
            None => Vec::new(),
        };
        let parsed = url.as_deref().and_then(|u| url::Url::parse(u).ok());
        let role = parsed
            .as_ref()
            .map(|u| u.username().to_string())
            .filter(|r| !r.is_empty())
            .unwrap_or_else(|| DEFAULT_ROLE.into());
        let pool = url.and_then(|url| connect(&url));
        Self {
            pool,
            replicas,
            role,
            derived_password,
        }
    }

    pub fn role(&self) -> &str {
        &self.role
    }

    /// A read-only transaction as the sandbox role, on the given read
    /// replica when it has a login there; 503 when it cannot log in.
    pub async fn begin(&self, replica: Option<usize>) -> Result<Transaction<'static, Postgres>, AppError> {
        let pool = replica
            .and_then(|i| self.replicas.get(i))
            .or(self.pool.as_ref())
            .ok_or_else(not_set_up)?;
        pool.begin_with("BEGIN READ ONLY")
            .await
            .map_err(|e| not_set_up().with_cause(format!("the SQL sandbox cannot connect as {}: {e}", self.role)))
    }

    /// At start-up: when the role cannot log in with the derived password
    /// (a server that asks for passwords), the service sets it, which
    /// needs the CREATEROLE right the migrations also need.
    pub async fn prepare_login(&self, main: &PgPool) {
        let (Some(pool), Some(password)) = (&self.pool, &self.derived_password) else {
            return;
        };
        match pool.acquire().await {
            Ok(_) => return,
            Err(sqlx::Error::Database(db)) if db.code().is_some_and(|c| c.starts_with("28")) => {}
            Err(e) => {
                tracing::warn!(error = %e, "the SQL sandbox cannot connect yet");
                return;
            }
        }
        // The password is hex, so it is safe inside the literal.
        let statement = format!("ALTER ROLE {} LOGIN PASSWORD '{password}'", quote_ident(&self.role));
        // Several API processes starting together may race on the role's row.
        for attempt in 1..=3 {
            match sqlx::raw_sql(sqlx::AssertSqlSafe(statement.clone()))
                .execute(main)
                .await
            {
                Ok(_) => return,
                Err(e) if attempt == 3 => {
                    tracing::warn!(error = %e, role = %self.role, "could not set the SQL sandbox role's password; the sandbox answers 503")
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(200 * attempt)).await,
            }
        }
    }
}

fn not_set_up() -> AppError {
    AppError::unavailable(
        "the SQL sandbox cannot log in as its own database role: run the migrations with a user that has CREATEROLE, or set SANDBOX_DATABASE_URL",
    )
}

fn derived_password(secret: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key length");
    mac.update(b"catalog_sandbox database password");
    mac.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect()
}

fn connect(url: &str) -> Option<PgPool> {
    PgPoolOptions::new()
        .max_connections(MAX_CONNECTIONS)
        .acquire_timeout(Duration::from_secs(5))
        .connect_lazy(url)
        .inspect_err(|e| tracing::warn!(error = %e, "the SQL sandbox's database URL is not usable"))
        .ok()
}

fn login_url(database_url: &str, password: &str) -> Option<String> {
    let mut url = url::Url::parse(database_url).ok()?;
    url.set_username(DEFAULT_ROLE).ok()?;
    url.set_password(Some(password)).ok()?;
    Some(url.into())
}

/// Gives the sandbox role SELECT on dataset tables it cannot read yet. A
/// grant is lasting: which of them a caller may read is decided per
/// statement (`admit_relations`), and the role can do nothing but read.
pub async fn grant_select(main: &PgPool, role: &str, tables: &[(String, String)]) -> Result<(), AppError> {
    let mut tx = main.begin().await?;
    // Concurrent GRANTs on one table fail ("tuple concurrently updated"):
    // one granter at a time.
    sqlx::query("SELECT pg_advisory_xact_lock(hashtext('catalog sandbox grants'))")
        .execute(&mut *tx)
        .await?;
    for (schema, table) in tables {
        let mut statement = format!(
            "GRANT SELECT ON {}.{} TO {}",
            quote_ident(schema),
            quote_ident(table),
            quote_ident(role)
        );
        if !matches!(schema.as_str(), "data" | "public") {
            statement = format!(
                "GRANT USAGE ON SCHEMA {} TO {}; {statement}",
                quote_ident(schema),
                quote_ident(role)
            );
        }
        sqlx::raw_sql(sqlx::AssertSqlSafe(statement))
            .execute(&mut *tx)
            .await
            .map_err(|e| match &e {
                sqlx::Error::Database(db) if db.code().as_deref() == Some("42P01") => {
                    AppError::unavailable("a dataset's table changed while the query started; try again")
                }
                _ => e.into(),
            })?;
    }
    tx.commit().await?;
    Ok(())
}
