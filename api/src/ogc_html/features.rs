//! The pages of OGC API Common and Features: the landing page,
//! conformance, the collections, a collection, its queryables, its items
//! and one item. Each renders the JSON document its route answers.
use maud::{Markup, html};
use serde_json::Value;

use super::linked_data::Described;
use super::map::{self, View};
use super::page::{PageContext, count_line, link_href, pager, shell, value_text};

const JSON: &str = "application/json";
const GEOJSON: &str = "application/geo+json";

fn text<'a>(document: &'a Value, key: &str) -> &'a str {
    document[key].as_str().unwrap_or_default()
}

/// The trail to a collection's pages: home, collections, the collection.
fn trail_to<'a>(context: &PageContext, collection: Option<(&'a str, &str)>) -> Vec<(&'a str, Option<String>)> {
    let mut trail = vec![
        ("Home", Some(context.route("/api"))),
        ("Collections", Some(context.route("/api/collections"))),
    ];
    if let Some((title, id)) = collection {
        trail.push((title, Some(context.route(&format!("/api/collections/{id}")))));
    }
    trail
}

pub fn landing(context: &PageContext, document: &Value) -> Markup {
    let heading = text(document, "title");
    let self_href = link_href(document, "self").unwrap_or_default();
    let content = html! {
        p { (text(document, "description")) }
        p { "Release " (text(document, "version")) }
        h2 { "Explore" }
        ul {
            @if let Some(href) = link_href(document, "data") {
                li { a href=(context.html(href)) { "Collections" } ": the datasets, and the catalog of records" }
            }
            li { a href=(context.route("/api/collections/catalog/items")) { "Catalog records" } ": search every dataset and metadata record" }
            @if let Some(href) = link_href(document, "conformance") {
                li { a href=(context.html(href)) { "Conformance" } ": the standards this service implements" }
            }
            @if let Some(href) = link_href(document, "service-desc") {
                li { a href=(href) type=(crate::openapi::DOCUMENT_MEDIA_TYPE) { "API definition" } " (OpenAPI 3.1, JSON)" }
            }
        }
    };
    shell(heading, &[(heading, None)], &context.json(self_href), JSON, content)
}

pub fn conformance(context: &PageContext, document: &Value) -> Markup {
    let self_href = link_href(document, "self").unwrap_or_default();
    let content = html! {
        p { "The conformance classes this service implements:" }
        ul {
            @for class in document["conformsTo"].as_array().into_iter().flatten() {
                li { code { (value_text(class)) } }
            }
        }
    };
    let trail = [("Home", Some(context.route("/api"))), ("Conformance", None)];
    shell("Conformance", &trail, &context.json(self_href), JSON, content)
}

pub fn collections(context: &PageContext, document: &Value) -> Markup {
    let self_href = link_href(document, "self").unwrap_or_default();
    let content = html! {
        div.scroll role="region" aria-label="Collections" tabindex="0" {
            table {
                thead { tr { th scope="col" { "Collection" } th scope="col" { "Kind" } th scope="col" { "Description" } } }
                tbody {
                    @for collection in document["collections"].as_array().into_iter().flatten() {
                        tr {
                            th scope="row" {
                                @if let Some(href) = link_href(collection, "self") {
                                    a href=(context.html(href)) { (text(collection, "title")) }
                                } @else {
                                    (text(collection, "title"))
                                }
                            }
                            td {
                                @match collection["itemType"].as_str() {
                                    Some("record") => "records",
                                    Some("coverage") => "raster",
                                    _ => "features",
                                }
                            }
                            td { (text(collection, "description")) }
                        }
                    }
                }
            }
        }
    };
    let trail = [("Home", Some(context.route("/api"))), ("Collections", None)];
    shell("Collections", &trail, &context.json(self_href), JSON, content)
}

/// A collection: what it is, its extent on a world map, where its items
/// and queryables are, and (for features) what a filter may name.
pub fn collection(context: &PageContext, document: &Value, queryables: Option<&Value>) -> Markup {
    let heading = text(document, "title");
    let self_href = link_href(document, "self").unwrap_or_default();
    let bbox: Option<Vec<f64>> = serde_json::from_value(document["extent"]["spatial"]["bbox"][0].clone()).ok();
    let content = html! {
        (Described::collection(document, context.base).script())
        @if !text(document, "description").is_empty() { p { (text(document, "description")) } }
        h2 { "Links" }
        ul {
            @if let Some(href) = link_href(document, "items") {
                li { a href=(context.html(href)) { @if document["itemType"] == "record" { "Records" } @else { "Features" } } }
            }
            @if let Some(href) = link_href(document, "http://www.opengis.net/def/rel/ogc/1.0/queryables") {
                li { a href=(context.html(href)) { "Queryables" } }
            }
        }
        @if let Some(bbox) = &bbox {
            h2 { "Extent" }
            (extent(bbox))
        }
        @if let Some(queryables) = queryables {
            h2 { "Queryables" }
            (queryables_table(queryables))
        }
    };
    let mut trail = trail_to(context, None);
    trail.push((heading, None));
    shell(heading, &trail, &context.json(self_href), JSON, content)
}

/// An extent in words and on a world map.
fn extent(bbox: &[f64]) -> Markup {
    // Micro-degrees (about 0.1 m) are as precise as people read an extent.
    let [west, south, east, north] = match bbox {
        &[w, s, e, n] => [w, s, e, n].map(|v| (v * 1e6).round() / 1e6),
        _ => return html! {},
    };
    let words = format!("from {west}° to {east}° longitude, {south}° to {north}° latitude");
    let geometry = map::extent_geometry(bbox);
    html! {
        dl {
            dt { "West" } dd { (west) }
            dt { "South" } dd { (south) }
            dt { "East" } dd { (east) }
            dt { "North" } dd { (north) }
        }
        @if west > east { p { "The extent crosses the antimeridian (180°)." } }
        @if let Some(map) = map::geometries(geometry.as_ref(), View::World, &format!("Map of the extent, {words}")) {
            (map)
        }
    }
}

fn queryables_table(queryables: &Value) -> Markup {
    html! {
        div.scroll role="region" aria-label="Queryables" tabindex="0" {
            table {
                thead { tr { th scope="col" { "Name" } th scope="col" { "Title" } th scope="col" { "Type" } } }
                tbody {
                    @for (name, schema) in queryables["properties"].as_object().into_iter().flatten() {
                        tr {
                            th scope="row" { code { (name) } }
                            td { (text(schema, "title")) }
                            td { (schema["type"].as_str().or(schema["format"].as_str()).unwrap_or_default()) }
                        }
                    }
                }
            }
        }
    }
}

/// The queryables of the collection `collection_id` (a JSON Schema, whose
/// `$id` is its address).
pub fn queryables(context: &PageContext, document: &Value, collection_id: &str) -> Markup {
    let title = text(document, "title");
    let self_href = text(document, "$id");
    let content = html! {
        p { "What a filter (CQL2 or a property parameter) may name." }
        (queryables_table(document))
    };
    let mut trail = trail_to(context, Some((title, collection_id)));
    trail.push(("Queryables", None));
    let heading = format!("Queryables of {title}");
    shell(
        &heading,
        &trail,
        &context.json(self_href),
        "application/schema+json",
        content,
    )
}

/// A page of features: a map of them, then a table of their properties.
pub fn items(context: &PageContext, collection_title: &str, collection_id: &str, document: &Value) -> Markup {
    let self_href = link_href(document, "self").unwrap_or_default();
    let features: Vec<&Value> = document["features"].as_array().into_iter().flatten().collect();
    // Every feature of a collection has the same properties, in column order.
    let columns: Vec<&String> = features
        .first()
        .and_then(|f| f["properties"].as_object())
        .map(|p| p.keys().collect())
        .unwrap_or_default();
    let map = map::geometries(
        features.iter().map(|f| &f["geometry"]),
        View::Fit,
        &format!("Map of the features of {collection_title} on this page"),
    );
    let content = html! {
        (count_line(document, "features"))
        @if let Some(map) = map { (map) }
        div.scroll role="region" aria-label="Features" tabindex="0" {
            table {
                thead {
                    tr {
                        th scope="col" { "id" }
                        @for column in &columns { th scope="col" { (column) } }
                    }
                }
                tbody {
                    @for feature in &features {
                        tr {
                            th scope="row" {
                                a href=(context.route(&format!("/api/collections/{collection_id}/items/{}", value_text(&feature["id"])))) {
                                    (value_text(&feature["id"]))
                                }
                            }
                            @for column in &columns { td { (value_text(&feature["properties"][column.as_str()])) } }
                        }
                    }
                }
            }
        }
        (pager(context, document))
    };
    let mut trail = trail_to(context, Some((collection_title, collection_id)));
    trail.push(("Features", None));
    let heading = format!("Features of {collection_title}");
    shell(&heading, &trail, &context.json(self_href), GEOJSON, content)
}

/// One feature: a map of it and its properties.
pub fn item(context: &PageContext, collection_title: &str, collection_id: &str, feature: &Value) -> Markup {
    let self_href = link_href(feature, "self").unwrap_or_default();
    let id = value_text(&feature["id"]);
    let heading = format!("Feature {id}");
    let map = map::geometries([&feature["geometry"]], View::Fit, &format!("Map of feature {id}"));
    let content = html! {
        p { "A feature of " a href=(context.route(&format!("/api/collections/{collection_id}"))) { (collection_title) } "." }
        @if let Some(map) = map { (map) }
        h2 { "Properties" }
        div.scroll role="region" aria-label="Properties" tabindex="0" {
            table {
                thead { tr { th scope="col" { "Property" } th scope="col" { "Value" } } }
                tbody {
                    @for (name, value) in feature["properties"].as_object().into_iter().flatten() {
                        tr { th scope="row" { (name) } td { (value_text(value)) } }
                    }
                }
            }
        }
    };
    let mut trail = trail_to(context, Some((collection_title, collection_id)));
    trail.push((
        "Features",
        Some(context.route(&format!("/api/collections/{collection_id}/items"))),
    ));
    trail.push((&id, None));
    shell(&heading, &trail, &context.json(self_href), GEOJSON, content)
}
