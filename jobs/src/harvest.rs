//! Pulls every feature of a remote service layer, page by page, into one
//! GeoJSON file in the object store, which is then ingested like an upload
//! (the `service_import` job) or replaces a dataset's data (a `reupload`
//! from a service). OGC API Features pages follow `next` links; ArcGIS
//! feature services page by `resultOffset`; WFS 2.0 by `startIndex`. Every
//! request goes through the outbound guard, bounded by
//! URL_IMPORT_FETCH_MAX_SECONDS, and the file by MAX_UPLOAD_BYTES.
use catalog_shared::{
    connectors::AuthMethod,
    jobs::{RemoteService, ServiceCredentials, ServiceImportPayload, ServiceType},
    secrets::unseal_hex,
};
use object_store::{ObjectStoreExt, WriteMultipart, path::Path};
use serde_json::Value;
use url::Url;

use crate::{
    context::{JobContext, JobError},
    ingest::{ingest_object, object_for},
};

const PAGE_SIZE: usize = 1000;
const MAX_PAGES: usize = 100_000;
pub const HARVEST_FILENAME: &str = "service.geojson";

pub async fn run(ctx: &JobContext, payload: &ServiceImportPayload) -> Result<(), JobError> {
    let object = harvest(ctx, &payload.service).await?;
    let mut options = payload.options.clone();
    options.title.get_or_insert_with(|| payload.service.layer_name.clone());
    ingest_object(ctx, &object, HARVEST_FILENAME, &options).await
}

/// Which page comes next.
enum Paging {
    /// The `next` link of the previous page.
    Link(Url),
    /// An offset into the layer.
    Offset(usize),
}

/// Pulls the layer into this job's `service.geojson`; answers where it is.
pub async fn harvest(ctx: &JobContext, service: &RemoteService) -> Result<Path, JobError> {
    ctx.progress("downloading", Some(0), None).await?;
    let credentials: ServiceCredentials = match &service.sealed_credentials {
        Some(sealed) => {
            let clear =
                unseal_hex(&ctx.deps.config.jwt_secret, sealed).map_err(|e| JobError::Internal(e.to_string()))?;
            serde_json::from_str(&clear).map_err(|e| JobError::Internal(format!("credentials: {e}")))?
        }
        None => ServiceCredentials::default(),
    };
    let base = Url::parse(service.url.trim_end_matches('/'))
        .map_err(|e| JobError::Invalid(format!("the service URL is not valid: {e}")))?;
    let timeout = ctx.deps.config.url_import_fetch_max;
    let client = if credentials.token.is_some() || credentials.auth.is_some() {
        ctx.deps.outbound.client_for_credentials(timeout)
    } else {
        ctx.deps.outbound.client(timeout)
    }
    .map_err(|e| JobError::Internal(format!("http client: {e}")))?;
    let object = object_for(ctx, HARVEST_FILENAME);
    let mut writer = WriteMultipart::new(ctx.deps.storage.store.put_multipart(&object).await?);
    let outcome = pull_pages(ctx, service, &credentials, &base, &client, &mut writer).await;
    match outcome {
        Ok(count) if count > 0 => {
            writer.finish().await?;
            Ok(object)
        }
        Ok(_) => {
            let _ = writer.abort().await;
            Err(JobError::Invalid(format!(
                "the service returned no features for layer {:?}",
                service.layer_name
            )))
        }
        Err(e) => {
            let _ = writer.abort().await;
            Err(e)
        }
    }
}

async fn pull_pages(
    ctx: &JobContext,
    service: &RemoteService,
    credentials: &ServiceCredentials,
    base: &Url,
    client: &reqwest::Client,
    writer: &mut WriteMultipart,
) -> Result<usize, JobError> {
    let limit = ctx.deps.config.max_upload_bytes;
    let mut written: u64 = 0;
    let mut count = 0usize;
    let mut paging = Some(Paging::Offset(0));
    let mut visited = std::collections::HashSet::new();
    writer.write(br#"{"type":"FeatureCollection","features":["#);
    for _ in 0..MAX_PAGES {
        let Some(page) = paging.take() else { break };
        let url = page_url(service, credentials, base, &page)?;
        if !visited.insert(url.clone()) {
            return Err(JobError::Invalid(
                "the service's pages lead back to a page already read".into(),
            ));
        }
        ctx.deps
            .outbound
            .check_resolved(&url)
            .await
            .map_err(|why| JobError::Invalid(format!("the service URL is refused: {why}")))?;
        let mut request = client
            .get(url.clone())
            .header("accept", "application/geo+json, application/json");
        // Credentials go only to the service's own origin, not to wherever
        // a next link points.
        if url.origin() == base.origin() {
            request = authorize(request, service, credentials);
        }
        // Error texts never carry the URL: it may hold a token.
        let response = request.send().await.map_err(|e| {
            let e = e.without_url();
            let what = format!("the service could not be reached: {e}");
            JobError::provider_request(&e, what)
        })?;
        if !response.status().is_success() {
            return Err(JobError::provider_answer(
                response.status(),
                format!(
                    "the service answered {} for layer {:?}",
                    response.status(),
                    service.layer_name
                ),
            ));
        }
        let budget = limit.saturating_sub(written);
        let bytes = read_bounded(response, budget).await?;
        let body: Value = serde_json::from_slice(&bytes)
            .map_err(|e| JobError::Invalid(format!("the service's answer is not GeoJSON: {e}")))?;
        if let Some(error) = body.get("error") {
            return Err(JobError::Invalid(format!("the service reported an error: {error}")));
        }
        let features = body["features"]
            .as_array()
            .ok_or_else(|| JobError::Invalid("the service's answer has no features array".into()))?;
        for feature in features {
            let text = feature.to_string();
            written += text.len() as u64 + 1;
            if written > limit {
                return Err(JobError::Invalid(format!(
                    "the layer is larger than the limit of {limit} bytes (MAX_UPLOAD_BYTES)"
                )));
            }
            if count > 0 {
                writer.write(b",");
            }
            writer.write(text.as_bytes());
            count += 1;
        }
        writer.wait_for_capacity(4).await?;
        ctx.progress("downloading", Some(count as i64), None).await?;
        paging = next_page(service, &body, features.len(), &page, &url)?;
    }
    if paging.is_some() {
        return Err(JobError::Invalid(format!(
            "the layer has more than {MAX_PAGES} pages; it was not imported in part"
        )));
    }
    writer.write(b"]}");
    Ok(count)
}

/// The answer's body, refused once it passes `budget` bytes (what is left
/// of MAX_UPLOAD_BYTES), so one huge page cannot exhaust memory.
async fn read_bounded(response: reqwest::Response, budget: u64) -> Result<Vec<u8>, JobError> {
    let too_large = || JobError::Invalid("the layer is larger than MAX_UPLOAD_BYTES allows".into());
    if response.content_length().is_some_and(|n| n > budget) {
        return Err(too_large());
    }
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = futures::StreamExt::next(&mut stream).await {
        let chunk = chunk.map_err(|e| {
            let e = e.without_url();
            let what = format!("the service's answer broke off: {e}");
            JobError::provider_request(&e, what)
        })?;
        if (body.len() + chunk.len()) as u64 > budget {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

fn page_url(
    service: &RemoteService,
    credentials: &ServiceCredentials,
    base: &Url,
    page: &Paging,
) -> Result<Url, JobError> {
    let offset = match page {
        Paging::Link(url) => return Ok(url.clone()),
        Paging::Offset(offset) => *offset,
    };
    let mut url = base.clone();
    match service.service_type {
        ServiceType::OgcapiFeatures => {
            url.path_segments_mut()
                .map_err(|_| JobError::Invalid("the service URL cannot take a path".into()))?
                .extend(["collections", &service.layer_name, "items"]);
            url.query_pairs_mut().append_pair("limit", &PAGE_SIZE.to_string());
        }
        ServiceType::ArcgisFeatureserver => {
            let layer = service
                .layer_id
                .map_or_else(|| service.layer_name.clone(), |id| id.to_string());
            url.path_segments_mut()
                .map_err(|_| JobError::Invalid("the service URL cannot take a path".into()))?
                .extend([layer.as_str(), "query"]);
            let mut query = url.query_pairs_mut();
            query
                .append_pair("where", "1=1")
                .append_pair("outFields", "*")
                .append_pair("outSR", "4326")
                .append_pair("f", "geojson")
                .append_pair("resultOffset", &offset.to_string())
                .append_pair("resultRecordCount", &PAGE_SIZE.to_string());
            if let Some(field) = &service.object_id_field {
                query.append_pair("orderByFields", field);
            }
            if let Some(token) = &credentials.token {
                query.append_pair("token", token);
            }
        }
        ServiceType::Wfs => {
            url.query_pairs_mut()
                .append_pair("service", "WFS")
                .append_pair("version", "2.0.0")
                .append_pair("request", "GetFeature")
                .append_pair("typeNames", &service.layer_name)
                .append_pair("outputFormat", "application/json")
                .append_pair("srsName", "urn:ogc:def:crs:EPSG::4326")
                .append_pair("count", &PAGE_SIZE.to_string())
                .append_pair("startIndex", &offset.to_string());
        }
    }
    Ok(url)
}

fn authorize(
    request: reqwest::RequestBuilder,
    service: &RemoteService,
    credentials: &ServiceCredentials,
) -> reqwest::RequestBuilder {
    let request = match &credentials.token {
        None => request,
        Some(token) => match service.service_type {
            // ArcGIS takes its token as a query parameter (see page_url).
            ServiceType::ArcgisFeatureserver => request,
            ServiceType::OgcapiFeatures | ServiceType::Wfs => request.bearer_auth(token),
        },
    };
    match &credentials.auth {
        Some(auth) => match auth.method {
            AuthMethod::Bearer => request.bearer_auth(auth.token.clone().unwrap_or_default()),
            AuthMethod::Basic => request.basic_auth(auth.username.clone().unwrap_or_default(), auth.password.clone()),
            AuthMethod::Header => request.header(
                auth.header_name.clone().unwrap_or_default(),
                auth.header_value.clone().unwrap_or_default(),
            ),
        },
        None => request,
    }
}

/// The page after this one; relative next links resolve against the page read.
fn next_page(
    service: &RemoteService,
    body: &Value,
    returned: usize,
    page: &Paging,
    page_url: &Url,
) -> Result<Option<Paging>, JobError> {
    if returned == 0 {
        return Ok(None);
    }
    let offset = match page {
        Paging::Offset(offset) => *offset,
        Paging::Link(_) => 0,
    };
    Ok(match service.service_type {
        ServiceType::OgcapiFeatures => body["links"]
            .as_array()
            .and_then(|links| links.iter().find(|l| l["rel"] == "next"))
            .and_then(|l| l["href"].as_str())
            .map(|href| page_url.join(href).map(Paging::Link))
            .transpose()
            .map_err(|_| JobError::Invalid("the service's next link is not a URL".into()))?,
        ServiceType::ArcgisFeatureserver => {
            let exceeded = body["exceededTransferLimit"].as_bool() == Some(true)
                || body["properties"]["exceededTransferLimit"].as_bool() == Some(true);
            (exceeded || returned >= PAGE_SIZE).then_some(Paging::Offset(offset + returned))
        }
        // WFS servers may cap pages below the count asked: go on until an
        // empty page, or until numberMatched when the server says it.
        ServiceType::Wfs => {
            let next = offset + returned;
            let more = body["numberMatched"]
                .as_u64()
                .is_none_or(|matched| (next as u64) < matched);
            more.then_some(Paging::Offset(next))
        }
    })
}
