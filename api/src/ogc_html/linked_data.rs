//! Metadata other catalogs read, as JSON-LD: DCAT-AP 3 for the records
//! routes' `f=jsonld` (CKAN, data.europa.eu harvest it), and schema.org
//! `Dataset` embedded in every dataset's page (Google Dataset Search reads
//! it). Both are built from the documents the routes already answer (a
//! record, a collection), so they say what the JSON says.
use maud::{Markup, PreEscaped, html};
use serde_json::{Map, Value, json};

use super::page::link_href;

/// The prefixes the DCAT documents use, inline, so a reader needs no
/// remote context.
pub fn dcat_context() -> Value {
    json!({
        "dcat": "http://www.w3.org/ns/dcat#",
        "dct": "http://purl.org/dc/terms/",
        "foaf": "http://xmlns.com/foaf/0.1/",
        "vcard": "http://www.w3.org/2006/vcard/ns#",
        "xsd": "http://www.w3.org/2001/XMLSchema#",
        "rdfs": "http://www.w3.org/2000/01/rdf-schema#",
        "gsp": "http://www.opengis.net/ont/geosparql#",
    })
}

fn text<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value[key].as_str().filter(|s| !s.trim().is_empty())
}

fn date_time(value: &Value) -> Option<Value> {
    value.as_str().map(|v| json!({"@value": v, "@type": "xsd:dateTime"}))
}

/// `[west, south, east, north]` as a WKT polygon (GeoSPARQL literal).
fn wkt_box(bbox: &[f64]) -> String {
    let [w, s, e, n] = [bbox[0], bbox[1], bbox[2], bbox[3]];
    format!("POLYGON(({w} {s},{e} {s},{e} {n},{w} {n},{w} {s}))")
}

/// The four numbers of a GeoJSON polygon's ring, or of a box.
fn bbox_of(geometry: &Value) -> Option<Vec<f64>> {
    let ring = geometry["coordinates"][0].as_array()?;
    let xs: Vec<f64> = ring.iter().filter_map(|p| p[0].as_f64()).collect();
    let ys: Vec<f64> = ring.iter().filter_map(|p| p[1].as_f64()).collect();
    if xs.is_empty() || ys.is_empty() {
        return None;
    }
    let fold = |v: &[f64], f: fn(f64, f64) -> f64, start: f64| v.iter().copied().fold(start, f);
    Some(vec![
        fold(&xs, f64::min, f64::INFINITY),
        fold(&ys, f64::min, f64::INFINITY),
        fold(&xs, f64::max, f64::NEG_INFINITY),
        fold(&ys, f64::max, f64::NEG_INFINITY),
    ])
}

/// A record (`records::record_json`) as a DCAT-AP `dcat:Dataset`, without
/// its context. A dataset's record gets two distributions: its OGC API
/// Features collection and its download.
pub fn dcat_dataset(record: &Value, base: &str) -> Value {
    let properties = &record["properties"];
    let id = record["id"].as_str().unwrap_or_default();
    let self_href = link_href(record, "self").unwrap_or_default();
    let title = text(properties, "title").unwrap_or(id);
    let mut dataset = Map::new();
    dataset.insert("@id".into(), json!(self_href));
    dataset.insert("@type".into(), json!("dcat:Dataset"));
    dataset.insert("dct:identifier".into(), json!(id));
    dataset.insert("dct:title".into(), json!(title));
    dataset.insert(
        "dct:description".into(),
        json!(text(properties, "description").unwrap_or(title)),
    );
    dataset.insert("dcat:landingPage".into(), json!({"@id": format!("{self_href}?f=html")}));
    if let Some(keywords) = properties["keywords"].as_array().filter(|k| !k.is_empty()) {
        dataset.insert("dcat:keyword".into(), json!(keywords));
    }
    if let Some(issued) = date_time(&properties["created"]) {
        dataset.insert("dct:issued".into(), issued);
    }
    if let Some(modified) = date_time(&properties["updated"]) {
        dataset.insert("dct:modified".into(), modified);
    }
    if let Some(bbox) = bbox_of(&record["geometry"]) {
        dataset.insert(
            "dct:spatial".into(),
            json!({"@type": "dct:Location", "dcat:bbox": {"@value": wkt_box(&bbox), "@type": "gsp:wktLiteral"}}),
        );
    }
    let contacts: Vec<Value> = properties["contacts"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            let mut point = Map::new();
            point.insert("@type".into(), json!("vcard:Kind"));
            if let Some(name) = text(c, "name").or(text(c, "organization")) {
                point.insert("vcard:fn".into(), json!(name));
            }
            if let Some(organization) = text(c, "organization") {
                point.insert("vcard:organization-name".into(), json!(organization));
            }
            if let Some(email) = text(c, "email") {
                point.insert("vcard:hasEmail".into(), json!({"@id": format!("mailto:{email}")}));
            }
            Value::Object(point)
        })
        .collect();
    if !contacts.is_empty() {
        dataset.insert("dcat:contactPoint".into(), json!(contacts));
    }
    let extra = &properties["extra"];
    if let Some(licence) = text(extra, "license").or(text(extra, "licence")) {
        let licence = if licence.starts_with("http://") || licence.starts_with("https://") {
            json!({"@id": licence})
        } else {
            json!({"@type": "dct:LicenseDocument", "rdfs:label": licence})
        };
        dataset.insert("dct:license".into(), licence);
    }
    if properties["type"] == "dataset" {
        dataset.insert(
            "dcat:distribution".into(),
            json!([
                {"@type": "dcat:Distribution", "dct:title": "OGC API Features",
                 "dcat:accessURL": {"@id": format!("{base}/api/collections/{id}")},
                 "dct:conformsTo": {"@id": "http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/core"}},
                {"@type": "dcat:Distribution", "dct:title": "Download",
                 "dcat:accessURL": {"@id": format!("{base}/api/datasets/{id}/download")},
                 "dcat:downloadURL": {"@id": format!("{base}/api/datasets/{id}/download")}},
            ]),
        );
    }
    Value::Object(dataset)
}

/// One record as a DCAT-AP document.
pub fn dcat_document(record: &Value, base: &str) -> Value {
    let mut dataset = dcat_dataset(record, base);
    dataset["@context"] = dcat_context();
    dataset
}

/// A page of records as a DCAT-AP `dcat:Catalog` holding its datasets.
pub fn dcat_catalog(records: &[Value], base: &str, self_href: &str) -> Value {
    json!({
        "@context": dcat_context(),
        "@id": self_href,
        "@type": "dcat:Catalog",
        "dct:title": "Spatial data catalog",
        "dct:description": format!("The datasets and records published at {base}"),
        "dct:publisher": {"@type": "foaf:Agent", "foaf:name": base},
        "dcat:dataset": records.iter().map(|r| dcat_dataset(r, base)).collect::<Vec<_>>(),
    })
}

/// What a dataset's page says about it, for schema.org.
pub struct Described<'a> {
    pub url: &'a str,
    pub identifier: &'a str,
    pub name: &'a str,
    pub description: Option<&'a str>,
    pub keywords: Vec<&'a str>,
    pub bbox: Option<Vec<f64>>,
    pub created: Option<&'a str>,
    pub modified: Option<&'a str>,
    /// Where the data can be had: media type and URL.
    pub downloads: Vec<(&'a str, String)>,
}

impl<'a> Described<'a> {
    /// A record's page.
    pub fn record(record: &'a Value, base: &str) -> Self {
        let properties = &record["properties"];
        let id = record["id"].as_str().unwrap_or_default();
        let downloads = if properties["type"] == "dataset" {
            vec![
                ("application/geo+json", format!("{base}/api/collections/{id}/items")),
                ("application/octet-stream", format!("{base}/api/datasets/{id}/download")),
            ]
        } else {
            Vec::new()
        };
        Self {
            url: link_href(record, "self").unwrap_or_default(),
            identifier: id,
            name: text(properties, "title").unwrap_or(id),
            description: text(properties, "description"),
            keywords: properties["keywords"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect(),
            bbox: bbox_of(&record["geometry"]),
            created: text(properties, "created"),
            modified: text(properties, "updated"),
            downloads,
        }
    }

    /// A collection's page (OGC API Features).
    pub fn collection(collection: &'a Value, base: &str) -> Self {
        let id = collection["id"].as_str().unwrap_or_default();
        Self {
            url: link_href(collection, "self").unwrap_or_default(),
            identifier: id,
            name: text(collection, "title").unwrap_or(id),
            description: text(collection, "description"),
            keywords: collection["keywords"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect(),
            bbox: serde_json::from_value(collection["extent"]["spatial"]["bbox"][0].clone()).ok(),
            created: None,
            modified: None,
            downloads: vec![
                ("application/geo+json", format!("{base}/api/collections/{id}/items")),
                ("application/octet-stream", format!("{base}/api/datasets/{id}/download")),
            ],
        }
    }

    /// The schema.org `Dataset`.
    pub fn schema_org(&self) -> Value {
        let mut dataset = Map::new();
        dataset.insert("@context".into(), json!("https://schema.org/"));
        dataset.insert("@type".into(), json!("Dataset"));
        dataset.insert("@id".into(), json!(self.url));
        dataset.insert("url".into(), json!(self.url));
        dataset.insert("identifier".into(), json!(self.identifier));
        dataset.insert("name".into(), json!(self.name));
        dataset.insert("description".into(), json!(self.description.unwrap_or(self.name)));
        if !self.keywords.is_empty() {
            dataset.insert("keywords".into(), json!(self.keywords));
        }
        if let Some(created) = self.created {
            dataset.insert("dateCreated".into(), json!(created));
        }
        if let Some(modified) = self.modified {
            dataset.insert("dateModified".into(), json!(modified));
        }
        if let Some(b) = self.bbox.as_ref().filter(|b| b.len() == 4) {
            // schema.org's box is "south west north east".
            dataset.insert(
                "spatialCoverage".into(),
                json!({"@type": "Place", "geo": {"@type": "GeoShape", "box": format!("{} {} {} {}", b[1], b[0], b[3], b[2])}}),
            );
        }
        if !self.downloads.is_empty() {
            let downloads: Vec<Value> = self
                .downloads
                .iter()
                .map(|(media_type, url)| json!({"@type": "DataDownload", "encodingFormat": media_type, "contentUrl": url}))
                .collect();
            dataset.insert("distribution".into(), json!(downloads));
        }
        Value::Object(dataset)
    }

    /// The `Dataset` as a script block of the page: data, never run. A
    /// `<` is escaped, so no value can close the block.
    pub fn script(&self) -> Markup {
        let text = self.schema_org().to_string().replace('<', "\\u003c");
        html! { script type="application/ld+json" { (PreEscaped(text)) } }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_value_can_close_the_script_block() {
        let record = json!({"id": "x", "properties": {"type": "dataset", "title": "</script><script>alert(1)</script>"},
                            "links": [{"rel": "self", "href": "http://h/r/x"}]});
        let markup = Described::record(&record, "http://h").script().into_string();
        assert_eq!(markup.matches("</script>").count(), 1, "{markup}");
        assert!(markup.contains("\\u003c/script>"));
    }
}
