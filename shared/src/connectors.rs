//! What connectors share between the API and the workers: the stored
//! credentials presented to providers, where an object-store connector
//! pulls from, and the object-store client that reaches a provider only
//! under the outbound policy and only with the credential it was given.
use std::{sync::Arc, time::Duration};

use object_store::{
    ObjectStore, RetryConfig, aws::AmazonS3Builder, azure::MicrosoftAzureBuilder, gcp::GoogleCloudStorageBuilder,
    path::Path,
};
use serde::{Deserialize, Serialize};
use sqlx::PgExecutor;
use url::Url;
use uuid::Uuid;

use crate::{
    AppError,
    outbound::{GuardedStoreConnector, OutboundPolicy},
    secrets::unseal,
    text_enum::text_enum,
};

text_enum! {
    /// The connectors (the ingest route's `{connector_name}`): `http`
    /// fetches a URL, the others an object in a bucket.
    pub enum ConnectorKind {
        Http = "http",
        S3 = "s3",
        Gcs = "gcs",
        Azure = "azure",
    }
}

text_enum! {
    /// What a stored connector credential is (`connector_credentials.method`):
    /// one the `http` connector presents, or the key of one kind of store.
    #[derive(utoipa::ToSchema)]
    pub enum CredentialMethod {
        Bearer = "bearer",
        Basic = "basic",
        Header = "header",
        AwsAccessKey = "aws_access_key",
        GcsServiceAccount = "gcs_service_account",
        AzureAccessKey = "azure_access_key",
    }
}

impl CredentialMethod {
    /// How a credential of this method goes with an HTTP request; none for
    /// a store's key, which signs requests instead.
    pub fn presented_as(self) -> Option<AuthMethod> {
        match self {
            CredentialMethod::Bearer => Some(AuthMethod::Bearer),
            CredentialMethod::Basic => Some(AuthMethod::Basic),
            CredentialMethod::Header => Some(AuthMethod::Header),
            CredentialMethod::AwsAccessKey | CredentialMethod::GcsServiceAccount | CredentialMethod::AzureAccessKey => {
                None
            }
        }
    }
}

text_enum! {
    // The doc comment is the description of the remote-service form's
    // `auth.method` in the OpenAPI document.
    /// How the service wants its credential.
    #[derive(utoipa::ToSchema)]
    pub enum AuthMethod {
        Bearer = "bearer",
        Basic = "basic",
        Header = "header",
    }
}

/// A stored connector credential, its secret still sealed.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct ConnectorCredential {
    pub method: CredentialMethod,
    pub username: Option<String>,
    pub header_name: Option<String>,
    pub secret: Vec<u8>,
}

impl ConnectorCredential {
    pub async fn find(db: impl PgExecutor<'_>, id: Uuid) -> Result<Option<Self>, sqlx::Error> {
        sqlx::query_as("SELECT method, username, header_name, secret FROM connector_credentials WHERE id = $1")
            .bind(id)
            .fetch_optional(db)
            .await
    }

    /// The request with this credential presented (the `http` connector's
    /// methods: bearer, basic, header); a store's key is refused.
    pub fn apply(
        &self,
        request: reqwest::RequestBuilder,
        jwt_secret: &str,
    ) -> Result<reqwest::RequestBuilder, AppError> {
        let how = self.method.presented_as().ok_or_else(|| {
            AppError::unprocessable(format!(
                "a {} credential signs requests to a store; it is not sent with an HTTP request",
                self.method
            ))
        })?;
        let secret = unseal(jwt_secret, &self.secret)?;
        Ok(match how {
            AuthMethod::Bearer => request.bearer_auth(secret),
            AuthMethod::Basic => request.basic_auth(self.username.clone().unwrap_or_default(), Some(secret)),
            AuthMethod::Header => request.header(self.header_name.clone().unwrap_or_default(), secret),
        })
    }

    /// The key an object-store connector signs with; a credential the
    /// `http` connector presents is refused.
    pub fn store_key(&self, jwt_secret: &str) -> Result<StoreKey, AppError> {
        let not_a_key = || {
            AppError::unprocessable(format!(
                "a {} credential is presented over HTTP; it signs no request to a store",
                self.method
            ))
        };
        let secret = || unseal(jwt_secret, &self.secret);
        Ok(match self.method {
            CredentialMethod::AwsAccessKey => StoreKey::Aws {
                access_key_id: self.username.clone().unwrap_or_default(),
                secret_access_key: secret()?,
            },
            CredentialMethod::GcsServiceAccount => StoreKey::Gcs {
                service_account_key: secret()?,
            },
            CredentialMethod::AzureAccessKey => StoreKey::Azure { account_key: secret()? },
            CredentialMethod::Bearer | CredentialMethod::Basic | CredentialMethod::Header => return Err(not_a_key()),
        })
    }
}

/// The bucket or container an object-store connector pulls from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum StoreLocation {
    S3 {
        bucket: String,
        region: Option<String>,
        /// An S3-compatible server other than AWS (MinIO, Ceph, R2...).
        endpoint: Option<String>,
    },
    Gcs {
        bucket: String,
    },
    Azure {
        account: String,
        container: String,
    },
}

/// An object's key in a provider's bucket, exactly as the provider names
/// it. The API checks the object with it and the worker fetches it with
/// it, both through `path`: `Path::from` would percent-encode a `%` the
/// user typed (`a%20b` becoming `a%2520b`), so the worker would fetch
/// another object than the one the API found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ObjectKey(Path);

impl ObjectKey {
    /// The key of `name` under `prefix` (slashes around the prefix aside).
    pub fn under(prefix: &str, name: &str) -> Result<Self, String> {
        let prefix = prefix.trim_matches('/');
        if prefix.is_empty() {
            Self::try_from(name.to_string())
        } else {
            Self::try_from(format!("{prefix}/{name}"))
        }
    }

    /// The object's path as the store clients take it: the key verbatim.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl TryFrom<String> for ObjectKey {
    type Error = String;

    /// A key the stores can name: no empty segment (`a//b`), no `.` or
    /// `..` segment, no control character; anything else as it is.
    fn try_from(key: String) -> Result<Self, String> {
        Path::parse(&key)
            .map(Self)
            .map_err(|e| format!("{key:?} is not an object key: {e}"))
    }
}

impl From<ObjectKey> for String {
    fn from(key: ObjectKey) -> Self {
        key.0.into()
    }
}

impl std::fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// A decrypted key for an object store.
pub enum StoreKey {
    Aws {
        access_key_id: String,
        secret_access_key: String,
    },
    Gcs {
        service_account_key: String,
    },
    Azure {
        account_key: String,
    },
}

impl StoreLocation {
    /// The connector kind this store belongs to.
    pub fn kind(&self) -> ConnectorKind {
        match self {
            StoreLocation::S3 { .. } => ConnectorKind::S3,
            StoreLocation::Gcs { .. } => ConnectorKind::Gcs,
            StoreLocation::Azure { .. } => ConnectorKind::Azure,
        }
    }

    /// The credential method that signs requests to this kind of store.
    pub fn credential_method(&self) -> CredentialMethod {
        match self {
            StoreLocation::S3 { .. } => CredentialMethod::AwsAccessKey,
            StoreLocation::Gcs { .. } => CredentialMethod::GcsServiceAccount,
            StoreLocation::Azure { .. } => CredentialMethod::AzureAccessKey,
        }
    }

    /// What names one object among every store: the server (an S3
    /// endpoint, else the provider's own), the bucket (or account and
    /// container) and the key. The same key in two buckets, or in the
    /// same bucket name on two servers, is two objects; a region only
    /// routes requests, so it names nothing.
    pub fn source_of(&self, key: &ObjectKey) -> String {
        match self {
            StoreLocation::S3 { bucket, endpoint, .. } => {
                let server = endpoint.as_deref().unwrap_or("https://s3.amazonaws.com");
                format!("{server}/{bucket}/{key}")
            }
            StoreLocation::Gcs { bucket } => format!("gs://{bucket}/{key}"),
            StoreLocation::Azure { account, container } => format!("azure://{account}/{container}/{key}"),
        }
    }

    /// The server requests go to when it is not the provider's own: the
    /// outbound policy must allow it before anything is sent.
    pub fn custom_endpoint(&self) -> Option<&str> {
        match self {
            StoreLocation::S3 { endpoint, .. } => endpoint.as_deref(),
            StoreLocation::Gcs { .. } | StoreLocation::Azure { .. } => None,
        }
    }

    /// A client for this store that signs with `key`, or sends unsigned
    /// requests (public buckets) without one. It never falls back to the
    /// service's own credentials (environment, instance metadata): a
    /// connector user must not borrow the operator's access.
    pub fn open(
        &self,
        key: Option<StoreKey>,
        policy: &OutboundPolicy,
        timeout: Duration,
    ) -> Result<Arc<dyn ObjectStore>, String> {
        let connector = GuardedStoreConnector::new(policy, timeout);
        // Provider failures are retried by the job queue, with backoff the
        // user sees, not hidden inside one request.
        let retry = RetryConfig {
            max_retries: 1,
            retry_timeout: timeout,
            ..RetryConfig::default()
        };
        let wrong_key = || format!("a {} store cannot be signed with that credential", self.kind());
        let store: Arc<dyn ObjectStore> = match self {
            StoreLocation::S3 {
                bucket,
                region,
                endpoint,
            } => {
                let mut builder = AmazonS3Builder::new()
                    .with_bucket_name(bucket)
                    .with_region(region.as_deref().unwrap_or("us-east-1"))
                    .with_http_connector(connector)
                    .with_retry(retry);
                if let Some(endpoint) = endpoint {
                    builder = builder.with_endpoint(endpoint).with_allow_http(true);
                }
                builder = match key {
                    None => builder.with_skip_signature(true),
                    Some(StoreKey::Aws {
                        access_key_id,
                        secret_access_key,
                    }) => builder
                        .with_access_key_id(access_key_id)
                        .with_secret_access_key(secret_access_key),
                    Some(_) => return Err(wrong_key()),
                };
                Arc::new(builder.build().map_err(store_settings)?)
            }
            StoreLocation::Gcs { bucket } => {
                let builder = GoogleCloudStorageBuilder::new()
                    .with_bucket_name(bucket)
                    .with_http_connector(connector)
                    .with_retry(retry);
                let builder = match key {
                    None => builder.with_skip_signature(true),
                    Some(StoreKey::Gcs { service_account_key }) => {
                        builder.with_service_account_key(service_account_key)
                    }
                    Some(_) => return Err(wrong_key()),
                };
                Arc::new(builder.build().map_err(store_settings)?)
            }
            StoreLocation::Azure { account, container } => {
                let builder = MicrosoftAzureBuilder::new()
                    .with_account(account)
                    .with_container_name(container)
                    .with_http_connector(connector)
                    .with_retry(retry);
                let builder = match key {
                    None => builder.with_skip_signature(true),
                    Some(StoreKey::Azure { account_key }) => builder.with_access_key(account_key),
                    Some(_) => return Err(wrong_key()),
                };
                Arc::new(builder.build().map_err(store_settings)?)
            }
        };
        Ok(store)
    }
}

fn store_settings(e: object_store::Error) -> String {
    format!("the settings do not describe a usable store: {e}")
}

/// Checks a service-account key as Google issues it (JSON with the
/// account's e-mail and private key); answers why not.
pub fn check_service_account_key(key: &str) -> Result<(), &'static str> {
    let value: serde_json::Value = serde_json::from_str(key).map_err(|_| "must be the JSON key file Google issued")?;
    for field in ["client_email", "private_key"] {
        if !value.get(field).is_some_and(serde_json::Value::is_string) {
            return Err("must be a service-account key (JSON with client_email and private_key)");
        }
    }
    // The crate honours this test-only field as the server to send every
    // request to; a key must not redirect them.
    if value.get("gcs_base_url").is_some() {
        return Err("must not name its own server (gcs_base_url)");
    }
    Ok(())
}

/// Whether a name can be an Azure storage account (3 to 24 lowercase
/// letters and digits), which becomes part of a host name.
pub fn valid_azure_account(name: &str) -> bool {
    (3..=24).contains(&name.len()) && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
}

/// Whether a name can be a bucket (S3, GCS) or container (Azure): 3 to
/// 63 lowercase letters, digits, `-` and `.` (`_` too on GCS; no `.` and
/// no `--` on Azure), beginning and ending with a letter or digit, no `..`,
/// and not an IPv4 address.
/// The name becomes part of a host name or a request path, so anything
/// else could address another bucket or server.
pub fn valid_bucket(kind: ConnectorKind, name: &str) -> bool {
    let allowed = |c: char| match kind {
        ConnectorKind::Gcs => c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '.' | '_'),
        ConnectorKind::Azure => c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-',
        _ => c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '.'),
    };
    let alphanumeric = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    (3..=63).contains(&name.len())
        && name.chars().all(allowed)
        && alphanumeric(name.chars().next())
        && alphanumeric(name.chars().last())
        && !name.contains("..")
        && !(kind == ConnectorKind::Azure && name.contains("--"))
        && name.parse::<std::net::Ipv4Addr>().is_err()
}

/// Whether a name can be an AWS region (`eu-west-1`): lowercase letters,
/// digits and `-`, at most 32. The region becomes part of the host name
/// requests go to (`s3.<region>.amazonaws.com`), so anything else could
/// send them, signed, to another server.
pub fn valid_region(name: &str) -> bool {
    (1..=32).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// An S3 endpoint as a URL: http(s), nothing but scheme, host and port.
pub fn parse_endpoint(endpoint: &str) -> Option<Url> {
    let url = Url::parse(endpoint).ok()?;
    let bare = matches!(url.scheme(), "http" | "https")
        && url.host_str().is_some()
        && url.username().is_empty()
        && url.password().is_none()
        && matches!(url.path(), "" | "/")
        && url.query().is_none()
        && url.fragment().is_none();
    bare.then_some(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    const JWT_SECRET: &str = "a-test-signing-secret-of-32-bytes";

    fn stored(method: CredentialMethod) -> ConnectorCredential {
        ConnectorCredential {
            method,
            username: Some("ada".into()),
            header_name: Some("X-Portal-Key".into()),
            secret: crate::secrets::seal(JWT_SECRET, "s3cr3t").unwrap(),
        }
    }

    #[test]
    fn each_method_presents_the_secret_its_own_way_and_a_stores_key_is_never_sent() {
        let client = OutboundPolicy::new(&[]).client(Duration::from_secs(5)).unwrap();
        for &method in CredentialMethod::ALL {
            let request = client.get("http://provider.example/a.csv");
            let sent = stored(method)
                .apply(request, JWT_SECRET)
                .map(|r| r.build().unwrap().headers().clone());
            match method {
                CredentialMethod::Bearer => assert_eq!(sent.unwrap()["authorization"], "Bearer s3cr3t"),
                // base64 of "ada:s3cr3t"
                CredentialMethod::Basic => assert_eq!(sent.unwrap()["authorization"], "Basic YWRhOnMzY3IzdA=="),
                CredentialMethod::Header => {
                    let headers = sent.unwrap();
                    assert_eq!(headers["x-portal-key"], "s3cr3t");
                    assert!(!headers.contains_key("authorization"), "{headers:?}");
                }
                CredentialMethod::AwsAccessKey
                | CredentialMethod::GcsServiceAccount
                | CredentialMethod::AzureAccessKey => {
                    assert_eq!(sent.unwrap_err().status(), 422, "{method}");
                }
            }
        }
    }

    #[test]
    fn each_store_signs_with_its_own_kind_of_key_and_never_with_an_http_credential() {
        for &method in CredentialMethod::ALL {
            let key = stored(method).store_key(JWT_SECRET);
            match method {
                CredentialMethod::AwsAccessKey => assert!(matches!(
                    key,
                    Ok(StoreKey::Aws { access_key_id, secret_access_key })
                        if access_key_id == "ada" && secret_access_key == "s3cr3t"
                )),
                CredentialMethod::GcsServiceAccount => {
                    assert!(matches!(key, Ok(StoreKey::Gcs { service_account_key }) if service_account_key == "s3cr3t"))
                }
                CredentialMethod::AzureAccessKey => {
                    assert!(matches!(key, Ok(StoreKey::Azure { account_key }) if account_key == "s3cr3t"))
                }
                CredentialMethod::Bearer | CredentialMethod::Basic | CredentialMethod::Header => {
                    assert!(key.is_err(), "{method}")
                }
            }
        }
    }

    #[test]
    fn an_object_key_is_the_key_the_user_named() {
        let key = ObjectKey::under("/reports%2025/", "a%20b.geojson").unwrap();
        assert_eq!(key.to_string(), "reports%2025/a%20b.geojson");
        assert_eq!(key.path().as_ref(), "reports%2025/a%20b.geojson");
        let sent = serde_json::to_value(&key).unwrap();
        assert_eq!(sent, "reports%2025/a%20b.geojson");
        assert_eq!(serde_json::from_value::<ObjectKey>(sent).unwrap(), key);
        assert_eq!(ObjectKey::under("", "x.csv").unwrap().to_string(), "x.csv");
        for bad in ["a//b.csv", "../b.csv", "a/./b.csv", "a\u{1}/b.csv"] {
            assert!(ObjectKey::try_from(bad.to_string()).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_same_key_in_another_bucket_or_server_is_another_source() {
        let key = ObjectKey::under("p", "x.csv").unwrap();
        let s3 = |bucket: &str, endpoint: Option<&str>| StoreLocation::S3 {
            bucket: bucket.into(),
            region: Some("eu-west-1".into()),
            endpoint: endpoint.map(str::to_string),
        };
        let sources = [
            s3("a", None).source_of(&key),
            s3("b", None).source_of(&key),
            s3("a", Some("http://127.0.0.1:9000")).source_of(&key),
            StoreLocation::Gcs { bucket: "a".into() }.source_of(&key),
        ];
        let distinct: std::collections::HashSet<_> = sources.iter().collect();
        assert_eq!(distinct.len(), sources.len(), "{sources:?}");
        let elsewhere = StoreLocation::S3 {
            bucket: "a".into(),
            region: None,
            endpoint: None,
        };
        assert_eq!(elsewhere.source_of(&key), sources[0], "a region names nothing");
    }

    #[test]
    fn regions_are_aws_style_names() {
        for ok in ["us-east-1", "eu-central-2", "auto", "a"] {
            assert!(valid_region(ok), "{ok}");
        }
        for bad in ["", "US-EAST-1", "evil.example#", "a/b", "x y", &"a".repeat(33)] {
            assert!(!valid_region(bad), "{bad}");
        }
    }

    #[test]
    fn buckets_are_names_their_store_accepts() {
        for (kind, ok) in [
            (ConnectorKind::S3, "my-bucket.v2"),
            (ConnectorKind::S3, "abc"),
            (ConnectorKind::Gcs, "under_score"),
            (ConnectorKind::Azure, "container-1"),
        ] {
            assert!(valid_bucket(kind, ok), "{ok}");
        }
        let long = "a".repeat(64);
        for (kind, bad) in [
            (ConnectorKind::S3, "ab"),
            (ConnectorKind::S3, long.as_str()),
            (ConnectorKind::S3, "Upper"),
            (ConnectorKind::S3, "a/b"),
            (ConnectorKind::S3, "a..b"),
            (ConnectorKind::S3, "-ab"),
            (ConnectorKind::S3, "ab."),
            (ConnectorKind::S3, "192.168.1.1"),
            (ConnectorKind::S3, "a%2fb"),
            (ConnectorKind::S3, "under_score"),
            (ConnectorKind::Azure, "a.b.c"),
            (ConnectorKind::Azure, "a--b"),
            (ConnectorKind::Gcs, "evil.example#"),
        ] {
            assert!(!valid_bucket(kind, bad), "{bad}");
        }
    }
}
