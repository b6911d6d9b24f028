//! The `url_download` and `connector` jobs: stream a remote file into the
//! object store (presenting a connector's stored credential if it has
//! one), bounded in time and guarded against internal addresses, then
//! ingest it.
use bytes::Bytes;
use catalog_shared::{connectors::ConnectorCredential, jobs::UrlDownloadPayload, uploads};
use futures::{Stream, StreamExt};
use object_store::{ObjectStoreExt, WriteMultipart, path::Path};
use url::Url;

use crate::{
    context::{JobContext, JobError},
    ingest::{ingest_object, object_for},
};

const PROGRESS_EVERY_BYTES: u64 = 4 << 20;

pub async fn run(ctx: &JobContext, payload: &UrlDownloadPayload) -> Result<(), JobError> {
    let url = Url::parse(&payload.url).map_err(|e| JobError::Invalid(format!("the URL is not valid: {e}")))?;
    ctx.progress("downloading", Some(0), None).await?;
    let policy = &ctx.deps.outbound;
    policy
        .check_resolved(&url)
        .await
        .map_err(|why| JobError::Invalid(format!("the URL is refused: {why}")))?;
    let timeout = ctx.deps.config.url_import_fetch_max;
    let client = if payload.credential_id.is_some() {
        policy.client_for_credentials(timeout)
    } else {
        policy.client(timeout)
    }
    .map_err(|e| JobError::Internal(format!("http client: {e}")))?;
    let mut request = client.get(url.clone());
    if let Some(id) = payload.credential_id {
        let credential = ConnectorCredential::find(&ctx.deps.pool, id)
            .await?
            .ok_or_else(|| JobError::Invalid("the connector credential was deleted".into()))?;
        request = credential
            .apply(request, &ctx.deps.config.jwt_secret)
            .map_err(|e| JobError::Internal(e.to_string()))?;
    }
    let response = request.send().await.map_err(|e| describe(&e))?;
    if !response.status().is_success() {
        // The URL is not repeated: it may carry a credential.
        return Err(JobError::provider_answer(
            response.status(),
            format!("the server answered {}", response.status()),
        ));
    }
    let filename = filename_for(&url, response.headers());
    if !uploads::is_accepted_upload(&filename) {
        return Err(JobError::Invalid(format!(
            "{filename} is not a supported file; the URL must point at {}",
            uploads::ACCEPTED
        )));
    }
    let total = response.content_length();
    let stream = response.bytes_stream().map(|chunk| chunk.map_err(|e| describe(&e)));
    let object = copy_in(ctx, &filename, total, stream).await?;
    ingest_object(ctx, &object, &filename, &payload.options).await
}

/// Streams a provider's file into our object store under this job's
/// folder, as a multipart upload, no larger than an upload may be, with
/// progress reported as the `downloading` step.
pub async fn copy_in(
    ctx: &JobContext,
    filename: &str,
    total: Option<u64>,
    mut stream: impl Stream<Item = Result<Bytes, JobError>> + Unpin,
) -> Result<Path, JobError> {
    let limit = ctx.deps.config.max_upload_bytes;
    let too_large = || {
        JobError::Invalid(format!(
            "the file is larger than the limit of {limit} bytes (MAX_UPLOAD_BYTES)"
        ))
    };
    if total.is_some_and(|n| n > limit) {
        return Err(too_large());
    }
    let total = total.map(|n| n as i64);
    let object = object_for(ctx, filename);
    let upload = ctx.deps.storage.store.put_multipart(&object).await?;
    let mut writer = WriteMultipart::new(upload);
    let mut done: u64 = 0;
    let mut reported: u64 = 0;
    while let Some(chunk) = stream.next().await {
        let chunk = match chunk {
            Ok(c) => c,
            Err(e) => {
                let _ = writer.abort().await;
                return Err(e);
            }
        };
        done += chunk.len() as u64;
        if done > limit {
            let _ = writer.abort().await;
            return Err(too_large());
        }
        writer.write(&chunk);
        if done - reported >= PROGRESS_EVERY_BYTES {
            reported = done;
            if let Err(e) = ctx.progress("downloading", Some(done as i64), total).await {
                let _ = writer.abort().await;
                return Err(e);
            }
        }
    }
    writer.finish().await?;
    ctx.progress("downloading", Some(done as i64), Some(done as i64))
        .await?;
    Ok(object)
}

/// What went wrong, without the URL (it may carry a token).
fn describe(e: &reqwest::Error) -> JobError {
    let mut msg = e.to_string();
    if let Some(url) = e.url() {
        msg = msg.replace(&format!(" for url ({url})"), "");
    }
    let mut source = std::error::Error::source(e);
    while let Some(inner) = source {
        msg = format!("{msg}: {inner}");
        source = inner.source();
    }
    if e.is_timeout() {
        return JobError::Invalid(format!(
            "the download took longer than URL_IMPORT_FETCH_MAX_SECONDS allows: {msg}"
        ));
    }
    JobError::provider_request(e, format!("the download failed: {msg}"))
}

/// The name to store the download under: from Content-Disposition, else
/// the last path segment of the URL, made safe.
fn filename_for(url: &Url, headers: &reqwest::header::HeaderMap) -> String {
    let from_header = headers
        .get(reqwest::header::CONTENT_DISPOSITION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').find_map(|p| p.trim().strip_prefix("filename=")))
        .map(|v| v.trim_matches('"').to_string());
    let from_path = url
        .path_segments()
        .and_then(|mut s| s.next_back())
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    catalog_shared::storage::safe_filename(&from_header.or(from_path).unwrap_or_else(|| "download".into()))
}
