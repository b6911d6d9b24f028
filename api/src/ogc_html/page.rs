//! What every page shares: the shell (landmarks, breadcrumb, the link to
//! the JSON), the style sheet, where links point, and how a value reads.
use maud::{DOCTYPE, Markup, PreEscaped, html};
use serde_json::Value;

use crate::extract::LinkCredential;

/// The one style sheet, inline: the page's policy allows exactly this text
/// (by its SHA-256), so nothing else can style or load. Colours keep at
/// least 4.5:1 against their background; tables scroll inside their own
/// box (their cells wrap at spaces only) so pages lay out at 390 px.
pub const STYLE: &str = "
:root{color-scheme:light;font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:#1f2937;background:#fff;line-height:1.5}
body{margin:0}
header,main,footer{max-width:64rem;margin:0 auto;padding:0 1rem}
header{border-bottom:1px solid #d1d5db}
nav ol{list-style:none;display:flex;flex-wrap:wrap;gap:.25rem;margin:0;padding:.75rem 0}
nav li+li::before{content:'/';margin-right:.25rem;color:#4b5563}
a{color:#1d4ed8}
a:focus-visible{outline:2px solid #1d4ed8;outline-offset:2px}
h1{font-size:1.6rem;margin:1rem 0 .5rem;overflow-wrap:anywhere}
h2{font-size:1.2rem;margin:1.5rem 0 .5rem}
p,li,dd{overflow-wrap:anywhere}
.muted{color:#4b5563}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;font-size:.9rem}
caption{text-align:left;font-weight:600;padding:.25rem 0}
th,td{border:1px solid #d1d5db;padding:.3rem .5rem;text-align:left;vertical-align:top;max-width:24rem}
thead th,tbody th{background:#f3f4f6}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem}
dt{font-weight:600}
dd{margin:0}
code{font-size:.85rem}
svg.map{display:block;max-width:100%;height:auto;margin:.5rem 0 1rem;border:1px solid #d1d5db}
.pages{display:flex;gap:1rem;flex-wrap:wrap;margin:1rem 0}
footer{border-top:1px solid #d1d5db;margin-top:2rem;padding-bottom:1rem}
";

/// Where a page's links point: the service's address, and the caller's
/// query-string credential, which every link of a page carries on (a
/// person following links keeps their access, as a client following the
/// JSON's links does).
pub struct PageContext<'a> {
    pub base: &'a str,
    pub credential: &'a LinkCredential,
}

impl PageContext<'_> {
    /// The page of a link of the JSON: the same query, `f=html`.
    pub fn html(&self, href: &str) -> String {
        self.credential.on(with_format(&without_credential(href), "html"))
    }

    /// The JSON of a link.
    pub fn json(&self, href: &str) -> String {
        self.credential.on(with_format(&without_credential(href), "json"))
    }

    /// The page of one of the service's paths (`/api/collections`).
    pub fn route(&self, path: &str) -> String {
        self.html(&format!("{}{path}", self.base))
    }
}

/// `href` with its `f` set to `format`, the rest of its query kept.
pub fn with_format(href: &str, format: &str) -> String {
    rewrite_query(href, |k| k != "f", Some(("f", format)))
}

fn without_credential(href: &str) -> String {
    rewrite_query(href, |k| k != "api_key", None)
}

fn rewrite_query(href: &str, keep: impl Fn(&str) -> bool, add: Option<(&str, &str)>) -> String {
    let (path, query) = href.split_once('?').unwrap_or((href, ""));
    let mut out = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in url::form_urlencoded::parse(query.as_bytes()) {
        if keep(&k) {
            out.append_pair(&k, &v);
        }
    }
    if let Some((k, v)) = add {
        out.append_pair(k, v);
    }
    let query = out.finish();
    if query.is_empty() {
        path.to_string()
    } else {
        format!("{path}?{query}")
    }
}

/// A page: the breadcrumb (`trail`, ending with this page, which has no
/// link), one `h1`, the content, and the link to the same document as
/// JSON (`json_href`, of media type `json_type`).
pub fn shell(
    heading: &str,
    trail: &[(&str, Option<String>)],
    json_href: &str,
    json_type: &str,
    content: Markup,
) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (heading) " – Spatial Data Catalog" }
                link rel="alternate" type=(json_type) href=(json_href);
                style { (PreEscaped(STYLE)) }
            }
            body {
                header {
                    nav aria-label="Breadcrumb" {
                        ol {
                            @for (label, href) in trail {
                                @if let Some(href) = href {
                                    li { a href=(href) { (label) } }
                                } @else {
                                    li aria-current="page" { (label) }
                                }
                            }
                        }
                    }
                }
                main { h1 { (heading) } (content) }
                footer {
                    p { "This page as " a rel="alternate" type=(json_type) href=(json_href) { "JSON" } "." }
                }
            }
        }
    }
}

/// A value of a property as text: strings as they are, numbers and
/// booleans as JSON writes them, nothing for null, lists and objects as
/// compact JSON.
pub fn value_text(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The `href` of the first link of `document` with relation `rel`.
pub fn link_href<'a>(document: &'a Value, rel: &str) -> Option<&'a str> {
    document["links"]
        .as_array()?
        .iter()
        .find(|l| l["rel"] == rel)?
        .get("href")?
        .as_str()
}

/// Previous and next page links, when the JSON has them.
pub fn pager(context: &PageContext, document: &Value) -> Markup {
    let previous = link_href(document, "prev").map(|h| context.html(h));
    let next = link_href(document, "next").map(|h| context.html(h));
    html! {
        @if previous.is_some() || next.is_some() {
            nav.pages aria-label="Pages" {
                @if let Some(href) = previous { a rel="prev" href=(href) { "Previous page" } }
                @if let Some(href) = next { a rel="next" href=(href) { "Next page" } }
            }
        }
    }
}

/// How many of the matches this page shows (the number of matches is left
/// out when the document leaves it out: counting took too long).
pub fn count_line(document: &Value, noun: &str) -> Markup {
    let (returned, matched) = (&document["numberReturned"], &document["numberMatched"]);
    html! {
        p.muted {
            @if matched.is_null() {
                "Showing " (value_text(returned)) " matching " (noun) "."
            } @else {
                "Showing " (value_text(returned)) " of " (value_text(matched)) " matching " (noun) "."
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_holds_the_style_sheet_its_policy_allows() {
        let page = shell(
            "A <b>title</b>",
            &[("Home", Some("/api?f=html".into())), ("A <b>title</b>", None)],
            "/api?f=json",
            "application/json",
            html! {},
        )
        .into_string();
        let style = page.split("<style>").nth(1).and_then(|s| s.split("</style>").next());
        assert_eq!(style, Some(STYLE), "the policy's digest is of exactly this text");
        assert!(page.contains("<h1>A &lt;b&gt;title&lt;/b&gt;</h1>"));
    }

    #[test]
    fn links_keep_their_query_change_their_format_and_carry_the_key() {
        assert_eq!(
            with_format("http://x/api/collections/a/items?limit=5&f=json", "html"),
            "http://x/api/collections/a/items?limit=5&f=html"
        );
        assert_eq!(with_format("http://x/api", "html"), "http://x/api?f=html");
        let credential = LinkCredential::default();
        let context = PageContext {
            base: "http://x",
            credential: &credential,
        };
        assert_eq!(
            context.json("http://x/api/collections?api_key=old&f=html"),
            "http://x/api/collections?f=json"
        );
        assert_eq!(context.route("/api/conformance"), "http://x/api/conformance?f=html");
    }
}
