//! The `connector` job for object stores (`s3`, `gcs`, `azure`): pull one
//! object from the provider's bucket with the stored key (or unsigned,
//! for a public bucket), under the outbound policy, then ingest it.
use catalog_shared::{
    connectors::{ConnectorCredential, ObjectKey},
    jobs::StorePullPayload,
    outbound::Refused,
    storage::safe_filename,
    uploads,
};
use futures::StreamExt;
use object_store::ObjectStoreExt;
use url::Url;

use crate::{
    context::{JobContext, JobError},
    download::copy_in,
    ingest::ingest_object,
};

pub async fn run(ctx: &JobContext, payload: &StorePullPayload) -> Result<(), JobError> {
    ctx.progress("downloading", Some(0), None).await?;
    let policy = &ctx.deps.outbound;
    if let Some(endpoint) = payload.location.custom_endpoint() {
        let url = Url::parse(endpoint).map_err(|e| JobError::Invalid(format!("the endpoint is not valid: {e}")))?;
        policy
            .check_resolved(&url)
            .await
            .map_err(|why| JobError::Invalid(format!("the endpoint is refused: {why}")))?;
    }
    let key = match payload.credential_id {
        None => None,
        Some(id) => {
            let credential = ConnectorCredential::find(&ctx.deps.pool, id)
                .await?
                .ok_or_else(|| JobError::Invalid("the connector credential was deleted".into()))?;
            Some(
                credential
                    .store_key(&ctx.deps.config.jwt_secret)
                    .map_err(|e| JobError::Internal(e.to_string()))?,
            )
        }
    };
    let store = payload
        .location
        .open(key, policy, ctx.deps.config.url_import_fetch_max)
        .map_err(JobError::Invalid)?;
    // The key as the API checked it: never encoded again.
    let path = payload.key.path();
    let answer = store.get(path).await.map_err(|e| provider_error(&payload.key, e))?;
    let filename = safe_filename(path.filename().unwrap_or("download"));
    if !uploads::is_accepted_upload(&filename) {
        return Err(JobError::Invalid(format!(
            "{filename} is not a supported file; the object must be {}",
            uploads::ACCEPTED
        )));
    }
    let total = Some(answer.meta.size);
    let key = payload.key.clone();
    let stream = answer
        .into_stream()
        .map(move |chunk| chunk.map_err(|e| provider_error(&key, e)));
    let object = copy_in(ctx, &filename, total, stream).await?;
    ingest_object(ctx, &object, &filename, &payload.options).await
}

/// A provider's failure: a missing object or a refused key will not pass
/// by waiting, neither will an address the policy refuses; anything else
/// (server errors, broken connections) may.
fn provider_error(key: &ObjectKey, e: object_store::Error) -> JobError {
    match e {
        object_store::Error::NotFound { .. } => JobError::Invalid(format!("the provider has no object \"{key}\"")),
        object_store::Error::PermissionDenied { .. } | object_store::Error::Unauthenticated { .. } => {
            JobError::Invalid(format!("the provider refused access to \"{key}\": {e}"))
        }
        e if refused_by_policy(&e) => JobError::Invalid(format!("the provider's address is refused: {e}")),
        e => JobError::Upstream(format!("the provider failed: {e}")),
    }
}

fn refused_by_policy(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut source = Some(e);
    while let Some(error) = source {
        if error.is::<Refused>() {
            return true;
        }
        source = error.source();
    }
    false
}
