//! The pages of OGC API Records: the catalog's records, and one record.
//! Each renders the JSON document its route answers.
use maud::{Markup, html};
use serde_json::Value;

use super::linked_data::Described;
use super::map::{self, View};
use super::page::{PageContext, count_line, link_href, pager, shell, value_text};

const GEOJSON: &str = "application/geo+json";

fn trail<'a>(context: &PageContext, collection_id: &str) -> Vec<(&'a str, Option<String>)> {
    vec![
        ("Home", Some(context.route("/api"))),
        ("Collections", Some(context.route("/api/collections"))),
        (
            "Catalog",
            Some(context.route(&format!("/api/collections/{collection_id}"))),
        ),
    ]
}

fn keywords(properties: &Value) -> String {
    properties["keywords"]
        .as_array()
        .into_iter()
        .flatten()
        .map(value_text)
        .collect::<Vec<_>>()
        .join(", ")
}

/// A page of records: their extents on a world map, then a table.
pub fn records(context: &PageContext, collection_id: &str, document: &Value) -> Markup {
    let self_href = link_href(document, "self").unwrap_or_default();
    let records: Vec<&Value> = document["features"].as_array().into_iter().flatten().collect();
    let map = map::geometries(
        records.iter().map(|r| &r["geometry"]),
        View::World,
        "Map of the extents of the records on this page",
    );
    let content = html! {
        (count_line(document, "records"))
        @if let Some(map) = map { (map) }
        div.scroll role="region" aria-label="Records" tabindex="0" {
            table {
                thead {
                    tr {
                        th scope="col" { "Title" }
                        th scope="col" { "Type" }
                        th scope="col" { "Description" }
                        th scope="col" { "Keywords" }
                        th scope="col" { "Updated" }
                    }
                }
                tbody {
                    @for record in &records {
                        @let properties = &record["properties"];
                        tr {
                            th scope="row" {
                                a href=(context.route(&format!("/api/collections/{collection_id}/items/{}", value_text(&record["id"])))) {
                                    (value_text(&properties["title"]))
                                }
                            }
                            td { (value_text(&properties["type"])) }
                            td { (value_text(&properties["description"])) }
                            td { (keywords(properties)) }
                            td { (value_text(&properties["updated"])) }
                        }
                    }
                }
            }
        }
        (pager(context, document))
    };
    let mut trail = trail(context, collection_id);
    trail.push(("Records", None));
    shell("Catalog records", &trail, &context.json(self_href), GEOJSON, content)
}

/// One record: what it says, its extent, its contacts and properties.
pub fn record(context: &PageContext, collection_id: &str, record: &Value) -> Markup {
    let self_href = link_href(record, "self").unwrap_or_default();
    let properties = &record["properties"];
    let heading = value_text(&properties["title"]);
    let map = map::geometries(
        [&record["geometry"]],
        View::World,
        &format!("Map of the extent of {heading}"),
    );
    let contacts: Vec<&Value> = properties["contacts"].as_array().into_iter().flatten().collect();
    let content = html! {
        (Described::record(record, context.base).script())
        @if let Some(description) = properties["description"].as_str() { p { (description) } }
        dl {
            dt { "Type" } dd { (value_text(&properties["type"])) }
            dt { "Keywords" } dd { (keywords(properties)) }
            dt { "Created" } dd { (value_text(&properties["created"])) }
            dt { "Updated" } dd { (value_text(&properties["updated"])) }
        }
        @if let Some(href) = link_href(record, "item") {
            p { a href=(context.html(href)) { "The features of this dataset" } }
        }
        @if let Some(map) = map {
            h2 { "Extent" }
            (map)
        }
        @if !contacts.is_empty() {
            h2 { "Contacts" }
            div.scroll role="region" aria-label="Contacts" tabindex="0" {
                table {
                    thead { tr { th scope="col" { "Name" } th scope="col" { "Organization" } th scope="col" { "Email" } th scope="col" { "Role" } } }
                    tbody {
                        @for contact in &contacts {
                            tr {
                                th scope="row" { (value_text(&contact["name"])) }
                                td { (value_text(&contact["organization"])) }
                                td { (value_text(&contact["email"])) }
                                td { (value_text(&contact["role"])) }
                            }
                        }
                    }
                }
            }
        }
        @if let Some(extra) = properties["extra"].as_object().filter(|e| !e.is_empty()) {
            h2 { "Properties" }
            div.scroll role="region" aria-label="Properties" tabindex="0" {
                table {
                    thead { tr { th scope="col" { "Property" } th scope="col" { "Value" } } }
                    tbody {
                        @for (name, value) in extra {
                            tr { th scope="row" { (name) } td { (value_text(value)) } }
                        }
                    }
                }
            }
        }
    };
    let mut trail = trail(context, collection_id);
    trail.push((
        "Records",
        Some(context.route(&format!("/api/collections/{collection_id}/items"))),
    ));
    trail.push((&heading, None));
    shell(&heading, &trail, &context.json(self_href), GEOJSON, content)
}
