//! The Filter and Sort extensions of item search: CQL2 (text or JSON)
//! over the items' queryables, and `sortby` over the same names. A filter
//! is translated by the OGC API's own CQL2 translator (`ogc::cql`), over a
//! projection of the datasets table whose columns are named as the items'
//! members and properties (`search.sql`); its values are inlined as
//! literals by PostgreSQL's own scanner (`ogc::params::inlined`), because
//! search binds its other values by position.
use catalog_shared::{AppError, datasets::ColumnType};
use serde_json::{Value, json};

use crate::ogc::{
    cql::{self, Lang, Queryable, Queryables},
    crs::CRS84,
    params::{Binds, inlined},
};

/// What a filter or a sort may name: (name, column of the projection, its
/// type, what it is). `id`, `collection` and `geometry` are the item's
/// members, the rest its properties.
const QUERYABLES: [(&str, &str, ColumnType, &str); 9] = [
    ("id", "id", ColumnType::Uuid, "the item's id (the dataset's)"),
    (
        "collection",
        "collection",
        ColumnType::Text,
        "the collection: vector or raster",
    ),
    (
        "datetime",
        "datetime",
        ColumnType::TimestampTz,
        "the item's time: its last change",
    ),
    (
        "created",
        "created",
        ColumnType::TimestampTz,
        "when the dataset was created",
    ),
    (
        "updated",
        "updated",
        ColumnType::TimestampTz,
        "when the dataset last changed",
    ),
    ("title", "title", ColumnType::Text, "the dataset's title"),
    ("description", "description", ColumnType::Text, "the dataset's summary"),
    (
        "geometry_type",
        "geometry_type",
        ColumnType::Text,
        "a vector dataset's geometry type",
    ),
    (
        "feature_count",
        "feature_count",
        ColumnType::BigInt,
        "a vector dataset's number of features",
    ),
];

/// The geometry a spatial filter tests: the item's, its extent.
const GEOMETRY: &str = "geometry";

/// How sort keys name a column of the datasets table (the page's query
/// sorts the datasets themselves, not the projection).
fn sort_column(name: &str) -> Option<&'static str> {
    Some(match name {
        "id" => "d.id",
        "collection" => "d.kind",
        "datetime" | "updated" => "d.updated_at",
        "created" => "d.created_at",
        "title" => "d.title",
        "description" => "d.summary",
        "geometry_type" => "d.geometry_type",
        "feature_count" => "d.feature_count",
        _ => return None,
    })
}

/// A name as clients write it: STAC's `properties.` prefix is optional.
fn bare(name: &str) -> &str {
    name.strip_prefix("properties.").unwrap_or(name)
}

fn queryables() -> Queryables {
    let by_name = QUERYABLES
        .iter()
        .flat_map(|(name, column, pg_type, _)| {
            let queryable = Queryable {
                column: column.to_string(),
                pg_type: *pg_type,
                sql_type: pg_type.as_str().to_string(),
            };
            [
                (name.to_string(), queryable.clone()),
                (format!("properties.{name}"), queryable),
            ]
        })
        .collect();
    Queryables {
        by_name,
        geometry_column: GEOMETRY.into(),
        srid: 4326,
        extension_names_are_null: true,
    }
}

/// The queryables as JSON Schema (`/api/stac/queryables`).
pub fn queryables_json(href: &str) -> Value {
    let mut properties = serde_json::Map::new();
    for (name, _, pg_type, description) in QUERYABLES {
        let mut schema = crate::dataset_record::json_schema_of(pg_type);
        schema["description"] = json!(description);
        properties.insert(name.into(), schema);
    }
    properties.insert(
        GEOMETRY.into(),
        json!({"description": "the item's extent", "$ref": "https://geojson.org/schema/Geometry.json"}),
    );
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": href,
        "type": "object",
        "title": "Queryables of item search",
        "properties": properties,
        // An extension's field (`eo:cloud_cover`) no item holds is null.
        "patternProperties": {r"^(properties\.)?[a-z0-9_-]+:[A-Za-z0-9_.:-]+$": {}},
        "additionalProperties": false,
    })
}

/// The language `filter-lang` names, if any, and a CRS84 `filter-crs`;
/// a 400 for any other name.
pub fn check_names(lang: Option<&str>, crs: Option<&str>) -> Result<Option<Lang>, AppError> {
    if let Some(crs) = crs
        && crs != CRS84
    {
        return Err(AppError::bad_request(format!("filter-crs must be {CRS84}")));
    }
    lang.map(|name| {
        Lang::named(name)
            .ok_or_else(|| AppError::bad_request(format!("filter-lang must be one of {}", Lang::NAMES.join(", "))))
    })
    .transpose()
}

/// The SQL condition of a filter, its values inlined; `filter` is CQL2
/// text, or JSON (a string or, in a POST body, an object).
pub fn condition(filter: &Value, lang: Option<&str>, crs: Option<&str>) -> Result<String, AppError> {
    let named = check_names(lang, crs)?;
    let (text, default_lang) = match filter {
        Value::String(text) => (text.clone(), Lang::Text),
        Value::Object(_) => (filter.to_string(), Lang::Json),
        _ => return Err(AppError::bad_request("filter must be CQL2 text or a CQL2 JSON object")),
    };
    let lang = named.unwrap_or(default_lang);
    let mut binds = Binds::default();
    let sql = cql::translate(&text, lang, &queryables(), &mut binds)?;
    inlined(&sql, &binds)
}

/// The ORDER BY of `sortby`: GET's `+title,-datetime` or POST's
/// `[{"field": "title", "direction": "desc"}]`; the creation time and id
/// end it, so pages are exact.
pub fn order(sortby: &Value) -> Result<String, AppError> {
    let keys: Vec<(String, bool)> = match sortby {
        Value::String(text) => text
            .split(',')
            .map(str::trim)
            .filter(|k| !k.is_empty())
            .map(|k| match k.strip_prefix('-') {
                Some(name) => (name.to_string(), false),
                None => (k.trim_start_matches('+').to_string(), true),
            })
            .collect(),
        Value::Array(items) => items
            .iter()
            .map(|item| {
                let field = item["field"]
                    .as_str()
                    .ok_or_else(|| AppError::bad_request("each sortby entry needs a field"))?;
                let ascending = match item["direction"].as_str() {
                    None | Some("asc") => true,
                    Some("desc") => false,
                    Some(other) => {
                        return Err(AppError::bad_request(format!(
                            "sortby direction {other:?} is neither asc nor desc"
                        )));
                    }
                };
                Ok((field.to_string(), ascending))
            })
            .collect::<Result<_, _>>()?,
        _ => return Err(AppError::bad_request("sortby must be a list of fields")),
    };
    if keys.is_empty() {
        return Err(AppError::bad_request("sortby names no field"));
    }
    let mut terms = Vec::with_capacity(keys.len() + 2);
    for (name, ascending) in &keys {
        let column = sort_column(bare(name)).ok_or_else(|| {
            AppError::bad_request(format!(
                "cannot sort by {name:?}; sortable: {}",
                QUERYABLES.map(|(n, ..)| n).join(", ")
            ))
        })?;
        terms.push(format!("{column} {}", if *ascending { "ASC" } else { "DESC" }));
    }
    terms.extend(["d.created_at ASC".to_string(), "d.id ASC".to_string()]);
    Ok(terms.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_become_conditions_with_their_values_inlined() {
        let sql = condition(&json!("title = 'it''s' AND feature_count > 3"), None, None).unwrap();
        assert!(sql.contains("\"title\"") && sql.contains("\"feature_count\""), "{sql}");
        assert!(sql.contains("E'it''s'") || sql.contains("'it''s'"), "{sql}");
        assert!(!sql.contains('$'), "no placeholder is left: {sql}");
        let json = json!({"op": "=", "args": [{"property": "properties.collection"}, "raster"]});
        assert!(condition(&json, None, None).unwrap().contains("\"collection\""));
        assert!(condition(&json!("nope = 1"), None, None).is_err());
        // An extension's field no item holds is null: it matches nothing.
        let absent = condition(
            &json!("eo:cloud_cover >= 5 OR properties.proj:code IS NULL"),
            None,
            None,
        )
        .unwrap();
        assert!(
            absent.contains("NULL >=") && !absent.contains("cloud_cover"),
            "{absent}"
        );
        assert!(condition(&json!("Eo:cloud = 1"), None, None).is_err());
        assert!(condition(&json!("eo: = 1"), None, None).is_err());
        assert!(condition(&json!("title = 'a'"), Some("cql2-json"), None).is_err());
        assert!(condition(&json!("title = 'a'"), None, Some("EPSG:3857")).is_err());
    }

    #[test]
    fn sort_keys_come_from_text_or_objects() {
        assert_eq!(
            order(&json!("-datetime,+title")).unwrap(),
            "d.updated_at DESC, d.title ASC, d.created_at ASC, d.id ASC"
        );
        assert_eq!(
            order(&json!([{"field": "properties.title", "direction": "desc"}])).unwrap(),
            "d.title DESC, d.created_at ASC, d.id ASC"
        );
        assert!(order(&json!("geometry")).is_err());
        assert!(order(&json!([{"field": "title", "direction": "up"}])).is_err());
    }
}
