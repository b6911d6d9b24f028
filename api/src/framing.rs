//! Who may frame an answer: only the embeddable map view
//! (`/maps/shared/<token>/embed`), by any site, since embedding it is what
//! it is for; it renders the map alone, so a framing page has no sign-in
//! form or app screen to lay under a visitor's clicks. Every other answer
//! refuses framing, in both the old header and the CSP one
//! (`docs/web-ui.md`, threat model, clickjacking).
use axum::{
    http::{HeaderValue, header},
    response::Response,
};

/// Marks an answer as the embeddable view, which any site may frame.
#[derive(Clone, Copy)]
pub struct Frameable;

const NO_FRAMING: &str = "frame-ancestors 'none'";

/// Adds the refusal to frame to every answer but the embeddable view: a
/// page's own policy gains `frame-ancestors 'none'` unless it already
/// says who may frame it.
pub fn apply(response: &mut Response) {
    if response.extensions().get::<Frameable>().is_some() {
        return;
    }
    let headers = response.headers_mut();
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    let policy = match headers
        .get(header::CONTENT_SECURITY_POLICY)
        .and_then(|p| p.to_str().ok())
    {
        Some(policy) if policy.contains("frame-ancestors") => return,
        Some(policy) => format!("{policy}; {NO_FRAMING}"),
        None => NO_FRAMING.to_string(),
    };
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_str(&policy).expect("a policy stays a header value"),
    );
}
