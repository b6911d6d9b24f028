//! A GeoPackage's styles: its `layer_styles` rows (as QGIS writes them,
//! QML and SLD) for a layer, kept with the dataset as they came, and the
//! default one turned into MapLibre paint: a single symbol into one colour,
//! categories into a `match` on their attribute, graduated classes into a
//! `step`, each with the symbols' own colours. A style it cannot read
//! gives no paint; the style is kept all the same.
use catalog_shared::{
    datasets::{ColumnInfo, GeometryType},
    uploads::SourceFormat,
};
use gdal::{Dataset, vector::LayerAccess};
use roxmltree::{Document, Node};
use serde_json::{Map, Value, json};
use sqlx::PgConnection;
use uuid::Uuid;

use crate::sources::Source;

/// One `layer_styles` row.
pub struct KeptStyle {
    pub name: String,
    pub description: Option<String>,
    pub is_default: bool,
    pub qml: Option<String>,
    pub sld: Option<String>,
}

/// The styles a source brings for `layer`: a GeoPackage's, none for other
/// formats.
pub async fn of_source(source: &Source, layer: &str) -> Vec<KeptStyle> {
    if source.format != SourceFormat::GeoPackage {
        return Vec::new();
    }
    let (path, layer) = (source.gdal_path.clone(), layer.to_string());
    tokio::task::spawn_blocking(move || read(&path, &layer))
        .await
        .unwrap_or_default()
}

/// The styles of `layer` in the GeoPackage at `gdal_path`; none when it
/// has no `layer_styles` table. Blocking (GDAL).
fn read(gdal_path: &str, layer: &str) -> Vec<KeptStyle> {
    let Ok(dataset) = Dataset::open(gdal_path) else {
        return Vec::new();
    };
    if dataset.layer_by_name("layer_styles").is_err() {
        return Vec::new();
    }
    let sql = format!(
        "SELECT styleName, description, useAsDefault, styleQML, styleSLD FROM layer_styles \
         WHERE f_table_name = '{}' ORDER BY useAsDefault DESC, id",
        layer.replace('\'', "''")
    );
    let Ok(Some(mut rows)) = dataset.execute_sql(sql, None, gdal::vector::sql::Dialect::SQLITE) else {
        return Vec::new();
    };
    let text =
        |f: &gdal::vector::Feature, i: usize| f.field_as_string(i).ok().flatten().filter(|s| !s.trim().is_empty());
    rows.features()
        .filter_map(|f| {
            let style = KeptStyle {
                name: text(&f, 0).unwrap_or_else(|| layer.to_string()),
                description: text(&f, 1),
                is_default: f.field_as_integer(2).ok().flatten().unwrap_or(0) != 0,
                qml: text(&f, 3),
                sld: text(&f, 4),
            };
            (style.qml.is_some() || style.sld.is_some()).then_some(style)
        })
        .collect()
}

/// Keeps the styles with the dataset in place of those it had, and the
/// default one's paint (the first style's when none is marked default) as
/// the dataset's. Without styles nothing changes: data that brings none
/// keeps the dataset's.
pub async fn store(
    tx: &mut PgConnection,
    dataset_id: Uuid,
    geometry_type: GeometryType,
    columns: &[ColumnInfo],
    styles: &[KeptStyle],
) -> Result<(), sqlx::Error> {
    if styles.is_empty() {
        return Ok(());
    }
    sqlx::query("DELETE FROM dataset_styles WHERE dataset_id = $1")
        .bind(dataset_id)
        .execute(&mut *tx)
        .await?;
    sqlx::query("UPDATE datasets SET default_paint = NULL WHERE id = $1")
        .bind(dataset_id)
        .execute(&mut *tx)
        .await?;
    for style in styles {
        sqlx::query(
            "INSERT INTO dataset_styles (id, dataset_id, name, description, is_default, qml, sld)
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(Uuid::now_v7())
        .bind(dataset_id)
        .bind(&style.name)
        .bind(&style.description)
        .bind(style.is_default)
        .bind(&style.qml)
        .bind(&style.sld)
        .execute(&mut *tx)
        .await?;
    }
    let default = styles.iter().find(|s| s.is_default).or(styles.first());
    if let Some(paint) = default.and_then(|s| paint_of(s, geometry_type, columns)) {
        sqlx::query("UPDATE datasets SET default_paint = $2 WHERE id = $1")
            .bind(dataset_id)
            .bind(Value::Object(paint))
            .execute(&mut *tx)
            .await?;
    }
    Ok(())
}

/// A style's paint: from its QML when it reads, else from its SLD; none
/// when what it makes is not a paint MapLibre accepts. The
/// attribute a rule names (by its source name) is the column's published
/// name, as tiles carry it; values are numbers when the column is.
pub fn paint_of(style: &KeptStyle, geometry_type: GeometryType, columns: &[ColumnInfo]) -> Option<Map<String, Value>> {
    let kind = geometry_type.maplibre_layer();
    let rule = style
        .qml
        .as_deref()
        .and_then(qml_rule)
        .or_else(|| style.sld.as_deref().and_then(sld_rule))?;
    let column = |name: &str| {
        columns
            .iter()
            .find(|c| c.original_name == name)
            .or_else(|| columns.iter().find(|c| c.name == name))
    };
    let rule = match rule {
        Rule::Single(c) => Rule::Single(c),
        Rule::Categories(attribute, categories, other) => {
            let column = column(&attribute)?;
            let numeric = column.pg_type.is_number();
            let categories = categories
                .into_iter()
                .map(|(value, colours)| match value.as_str() {
                    Some(text) if numeric => text.parse::<f64>().ok().map(|n| (json!(n), colours)),
                    _ => Some((value, colours)),
                })
                .collect::<Option<_>>()?;
            Rule::Categories(column.name.clone(), categories, other)
        }
        Rule::Classes(attribute, classes) => Rule::Classes(column(&attribute)?.name.clone(), classes),
    };
    // A paint MapLibre refuses would break every map on the dataset.
    Some(rule.paint(kind)).filter(catalog_shared::paint::is_valid)
}

/// A symbol's colours: its fill (or line) colour and its outline.
#[derive(Clone, Debug)]
struct Colours {
    main: String,
    outline: Option<String>,
}

/// What a renderer does, in MapLibre's terms.
enum Rule {
    Single(Colours),
    /// The attribute, each category's value and colours, and the colours
    /// of values in no category (QGIS's empty-valued category).
    Categories(String, Vec<(Value, Colours)>, Option<Colours>),
    /// The attribute and each class's lower bound and colours, ascending.
    Classes(String, Vec<(f64, Colours)>),
}

impl Rule {
    fn paint(&self, kind: &str) -> Map<String, Value> {
        let expression = |pick: fn(&Colours) -> Option<String>| -> Option<Value> {
            Some(match self {
                Rule::Single(c) => json!(pick(c)?),
                Rule::Categories(attribute, categories, other) => {
                    let mut expr = vec![json!("match"), json!(["get", attribute])];
                    for (value, colours) in categories {
                        expr.push(value.clone());
                        expr.push(json!(pick(colours)?));
                    }
                    let fallback = other.as_ref().and_then(pick).unwrap_or_else(|| "rgba(0,0,0,0)".into());
                    expr.push(json!(fallback));
                    Value::Array(expr)
                }
                Rule::Classes(_, classes) if classes.len() == 1 => json!(pick(&classes[0].1)?),
                Rule::Classes(attribute, classes) => {
                    let mut expr = vec![json!("step"), json!(["to-number", ["get", attribute]])];
                    for (i, (lower, colours)) in classes.iter().enumerate() {
                        if i > 0 {
                            expr.push(json!(lower));
                        }
                        expr.push(json!(pick(colours)?));
                    }
                    Value::Array(expr)
                }
            })
        };
        let main = expression(|c| Some(c.main.clone()));
        let outline = expression(|c| c.outline.clone());
        let mut paint = Map::new();
        let (main_key, outline_key) = match kind {
            "line" => ("line-color", None),
            "fill" => ("fill-color", Some("fill-outline-color")),
            _ => ("circle-color", Some("circle-stroke-color")),
        };
        if let Some(main) = main {
            paint.insert(main_key.into(), main);
        }
        if let (Some(key), Some(outline)) = (outline_key, outline) {
            paint.insert(key.into(), outline);
        }
        paint
    }
}

/// `r,g,b,a` (QML) as CSS: `#rrggbb` when opaque.
fn qml_colour(value: &str) -> Option<String> {
    let parts: Vec<u8> = value
        .split(',')
        .take(4)
        .map(|p| p.trim().parse().ok())
        .collect::<Option<_>>()?;
    match parts[..] {
        [r, g, b, 255] | [r, g, b] => Some(format!("#{r:02x}{g:02x}{b:02x}")),
        [r, g, b, a] => Some(format!("rgba({r},{g},{b},{:.3})", f64::from(a) / 255.0)),
        _ => None,
    }
}

fn tag<'a, 'i>(node: Node<'a, 'i>, name: &str) -> Option<Node<'a, 'i>> {
    node.descendants().find(|n| n.has_tag_name(name))
}

/// A symbol's first layer's property: `<prop k v>` or `<Option name value>`.
fn symbol_property(symbol: Node, key: &str) -> Option<String> {
    let layer = tag(symbol, "layer")?;
    layer
        .descendants()
        .find_map(|n| match n.tag_name().name() {
            "prop" if n.attribute("k") == Some(key) => n.attribute("v"),
            "Option" if n.attribute("name") == Some(key) => n.attribute("value"),
            _ => None,
        })
        .map(str::to_string)
}

fn qml_colours(symbol: Node) -> Option<Colours> {
    let main = symbol_property(symbol, "color").or_else(|| symbol_property(symbol, "line_color"))?;
    Some(Colours {
        main: qml_colour(&main)?,
        outline: symbol_property(symbol, "outline_color").and_then(|c| qml_colour(&c)),
    })
}

/// The largest style document read for its paint; a bigger one is kept
/// all the same, without paint.
const MOST_STYLE_BYTES: usize = 1 << 20;
/// Elements, attributes and texts a style document may hold when read.
const MOST_STYLE_NODES: u32 = 200_000;

/// Reads a style document with `read`, parsed with no DTD: QGIS's QML
/// starts with a DOCTYPE, which is left out of the text parsed, so that
/// entities it declares are never expanded (a reference to one makes the
/// document unreadable, and so without paint). The stored style is the
/// text as it came.
fn parsed<T>(text: &str, read: impl FnOnce(&Document) -> Option<T>) -> Option<T> {
    if text.len() > MOST_STYLE_BYTES {
        return None;
    }
    let text = without_doctype(text)?;
    let options = roxmltree::ParsingOptions {
        allow_dtd: false,
        nodes_limit: MOST_STYLE_NODES,
        ..Default::default()
    };
    read(&Document::parse_with_options(&text, options).ok()?)
}

/// The text with its DOCTYPE declaration (internal subset included) cut
/// out; `None` when the declaration never ends.
fn without_doctype(text: &str) -> Option<std::borrow::Cow<'_, str>> {
    let Some(start) = text.find("<!DOCTYPE") else {
        return Some(text.into());
    };
    let (mut quote, mut subset) = (None, 0usize);
    for (i, c) in text[start..].char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '[') => subset += 1,
            (None, ']') => subset = subset.saturating_sub(1),
            (None, '>') if subset == 0 => {
                return Some(format!("{}{}", &text[..start], &text[start + i + 1..]).into());
            }
            _ => {}
        }
    }
    None
}
fn qml_rule(qml: &str) -> Option<Rule> {
    parsed(qml, qml_document_rule)
}

fn qml_document_rule(doc: &Document) -> Option<Rule> {
    let renderer = tag(doc.root(), "renderer-v2")?;
    let symbols = tag(renderer, "symbols")?;
    let symbol = |name: &str| {
        symbols
            .children()
            .find(|s| s.has_tag_name("symbol") && s.attribute("name") == Some(name))
            .and_then(qml_colours)
    };
    let attribute = renderer.attribute("attr").map(str::to_string);
    match renderer.attribute("type")? {
        "singleSymbol" => Some(Rule::Single(symbol("0")?)),
        "categorizedSymbol" => {
            let mut categories = Vec::new();
            let mut other = None;
            for category in tag(renderer, "categories")?
                .children()
                .filter(|c| c.has_tag_name("category"))
            {
                let colours = symbol(category.attribute("symbol")?)?;
                match category.attribute("value").unwrap_or_default() {
                    "" => other = Some(colours),
                    value => categories.push((json!(value), colours)),
                }
            }
            Some(Rule::Categories(attribute?, categories, other))
        }
        "graduatedSymbol" => {
            let mut classes: Vec<(f64, Colours)> = tag(renderer, "ranges")?
                .children()
                .filter(|r| r.has_tag_name("range"))
                .map(|r| Some((r.attribute("lower")?.parse().ok()?, symbol(r.attribute("symbol")?)?)))
                .collect::<Option<_>>()?;
            classes.sort_by(|a, b| a.0.total_cmp(&b.0));
            Some(Rule::Classes(attribute?, classes))
        }
        _ => None,
    }
}

/// An SLD rule's colours: its symbolizer's `fill` (a line's `stroke`) and
/// its outline's `stroke`.
fn sld_colours(rule: Node) -> Option<Colours> {
    let parameter = |within: Node, name: &str| {
        within
            .descendants()
            .find(|n| {
                (n.has_tag_name("SvgParameter") || n.has_tag_name("CssParameter")) && n.attribute("name") == Some(name)
            })
            .and_then(|n| n.text())
            .map(|t| t.trim().to_string())
    };
    if let Some(line) = tag(rule, "LineSymbolizer") {
        return Some(Colours {
            main: parameter(line, "stroke")?,
            outline: None,
        });
    }
    let fill = tag(rule, "Fill").and_then(|f| parameter(f, "fill"))?;
    Some(Colours {
        main: fill,
        outline: tag(rule, "Stroke").and_then(|s| parameter(s, "stroke")),
    })
}

fn sld_rule(sld: &str) -> Option<Rule> {
    parsed(sld, sld_document_rule)
}

fn sld_document_rule(doc: &Document) -> Option<Rule> {
    let rules: Vec<Node> = doc.descendants().filter(|n| n.has_tag_name("Rule")).collect();
    let text_of = |node: Node, name: &str| tag(node, name).and_then(|n| n.text()).map(|t| t.trim().to_string());
    match &rules[..] {
        [] => None,
        [only] if tag(*only, "Filter").is_none() => Some(Rule::Single(sld_colours(*only)?)),
        _ if rules.iter().all(|r| tag(*r, "PropertyIsEqualTo").is_some()) => {
            let mut attribute = None;
            let mut categories = Vec::new();
            for rule in &rules {
                let equal = tag(*rule, "PropertyIsEqualTo")?;
                attribute = attribute.or(text_of(equal, "PropertyName"));
                categories.push((json!(text_of(equal, "Literal")?), sld_colours(*rule)?));
            }
            Some(Rule::Categories(attribute?, categories, None))
        }
        _ => {
            let mut attribute = None;
            let mut classes = Vec::new();
            for rule in &rules {
                let lower =
                    tag(*rule, "PropertyIsGreaterThanOrEqualTo").or_else(|| tag(*rule, "PropertyIsGreaterThan"))?;
                attribute = attribute.or(text_of(lower, "PropertyName"));
                classes.push((text_of(lower, "Literal")?.parse::<f64>().ok()?, sld_colours(*rule)?));
            }
            classes.sort_by(|a, b| a.0.total_cmp(&b.0));
            Some(Rule::Classes(attribute?, classes))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn qml(renderer: &str) -> String {
        format!(
            r#"<!DOCTYPE qgis PUBLIC 'http://mrcc.com/qgis.dtd' 'SYSTEM'>
            <qgis><renderer-v2 {renderer}<symbols>
              <symbol name="0" type="fill"><layer class="SimpleFill"><prop k="color" v="228,26,28,255"/><prop k="outline_color" v="35,35,35,255"/></layer></symbol>
              <symbol name="1" type="fill"><layer class="SimpleFill"><Option type="Map"><Option name="color" value="55,126,184,128" type="QString"/></Option></layer></symbol>
            </symbols></renderer-v2></qgis>"#
        )
    }

    fn columns() -> Vec<ColumnInfo> {
        serde_json::from_value(json!([
            {"name": "continent", "original_name": "CONTINENT", "type": "text", "source_type": "String"},
            {"name": "pop", "original_name": "pop", "type": "bigint", "source_type": "Integer64"},
            {"name": "kind", "original_name": "kind", "type": "integer", "source_type": "Integer"},
        ]))
        .unwrap()
    }

    fn style(qml: Option<String>, sld: Option<&str>) -> KeptStyle {
        KeptStyle {
            name: "s".into(),
            description: None,
            is_default: true,
            qml,
            sld: sld.map(str::to_string),
        }
    }

    #[test]
    fn qgis_renderers_become_constants_matches_and_steps() {
        let single = style(Some(qml(r#"type="singleSymbol">"#)), None);
        assert_eq!(
            Value::Object(paint_of(&single, GeometryType::MultiPolygon, &columns()).unwrap()),
            json!({"fill-color": "#e41a1c", "fill-outline-color": "#232323"})
        );
        let categorized = style(
            Some(qml(
                r#"type="categorizedSymbol" attr="CONTINENT"><categories><category value="Africa" symbol="0"/><category value="" symbol="1"/></categories>"#,
            )),
            None,
        );
        assert_eq!(
            paint_of(&categorized, GeometryType::Polygon, &columns()).unwrap()["fill-color"],
            json!([
                "match",
                ["get", "continent"],
                "Africa",
                "#e41a1c",
                "rgba(55,126,184,0.502)"
            ])
        );
        let graduated = style(
            Some(qml(
                r#"type="graduatedSymbol" attr="pop"><ranges><range lower="10" upper="20" symbol="1"/><range lower="0" upper="10" symbol="0"/></ranges>"#,
            )),
            None,
        );
        assert_eq!(
            paint_of(&graduated, GeometryType::Point, &columns()).unwrap()["circle-color"],
            json!([
                "step",
                ["to-number", ["get", "pop"]],
                "#e41a1c",
                10.0,
                "rgba(55,126,184,0.502)"
            ])
        );
    }

    #[test]
    fn sld_rules_are_read_when_there_is_no_qml() {
        let sld = r##"<StyledLayerDescriptor xmlns:se="http://www.opengis.net/se" xmlns:ogc="http://www.opengis.net/ogc"><se:FeatureTypeStyle>
          <se:Rule><ogc:Filter><ogc:PropertyIsEqualTo><ogc:PropertyName>kind</ogc:PropertyName><ogc:Literal>1</ogc:Literal></ogc:PropertyIsEqualTo></ogc:Filter>
            <se:LineSymbolizer><se:Stroke><se:SvgParameter name="stroke">#ff0000</se:SvgParameter></se:Stroke></se:LineSymbolizer></se:Rule>
          <se:Rule><ogc:Filter><ogc:PropertyIsEqualTo><ogc:PropertyName>kind</ogc:PropertyName><ogc:Literal>2</ogc:Literal></ogc:PropertyIsEqualTo></ogc:Filter>
            <se:LineSymbolizer><se:Stroke><se:SvgParameter name="stroke">#00ff00</se:SvgParameter></se:Stroke></se:LineSymbolizer></se:Rule>
        </se:FeatureTypeStyle></StyledLayerDescriptor>"##;
        assert_eq!(
            paint_of(
                &style(Some("<not-qml/>".into()), Some(sld)),
                GeometryType::LineString,
                &columns()
            )
            .unwrap()["line-color"],
            json!([
                "match",
                ["get", "kind"],
                1.0,
                "#ff0000",
                2.0,
                "#00ff00",
                "rgba(0,0,0,0)"
            ])
        );
        assert!(paint_of(&style(None, Some("<broken")), GeometryType::Point, &columns()).is_none());
    }

    #[test]
    fn entities_are_never_expanded_and_big_documents_never_read() {
        // Nine levels of ten: a billion "lol"s if entities were expanded.
        let mut entities = String::from("<!ENTITY lol0 \"lol\">");
        for level in 1..10 {
            let refs = format!("&lol{};", level - 1).repeat(10);
            entities.push_str(&format!("<!ENTITY lol{level} \"{refs}\">"));
        }
        let bomb = format!(
            r#"<!DOCTYPE qgis [{entities}]><qgis><renderer-v2 type="singleSymbol"><symbols>
              <symbol name="0" type="fill"><layer><prop k="color" v="1,2,3,255"/><prop k="note" v="&lol9;"/></layer></symbol>
            </symbols></renderer-v2></qgis>"#
        );
        let started = std::time::Instant::now();
        assert!(paint_of(&style(Some(bomb), None), GeometryType::Polygon, &columns()).is_none());
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
        // The DOCTYPE QGIS writes is no obstacle, nor one with a harmless subset.
        let plain = qml(r#"type="singleSymbol">"#).replace("'SYSTEM'>", "'SYSTEM' [<!ENTITY x \"]>\">]>");
        assert!(paint_of(&style(Some(plain.clone()), None), GeometryType::Polygon, &columns()).is_some());
        let padded = plain.replace("<qgis>", &format!("<qgis><!--{}-->", " ".repeat(MOST_STYLE_BYTES)));
        assert!(paint_of(&style(Some(padded), None), GeometryType::Polygon, &columns()).is_none());
    }

    #[test]
    fn paints_maplibre_would_refuse_are_dropped() {
        let no_categories = style(
            Some(qml(r#"type="categorizedSymbol" attr="CONTINENT"><categories/>"#)),
            None,
        );
        assert!(paint_of(&no_categories, GeometryType::Polygon, &columns()).is_none());
        let sld = r##"<StyledLayerDescriptor><Rule><PolygonSymbolizer><Fill><CssParameter name="fill">javascript:alert(1)</CssParameter></Fill></PolygonSymbolizer></Rule></StyledLayerDescriptor>"##;
        assert!(paint_of(&style(None, Some(sld)), GeometryType::Polygon, &columns()).is_none());
        let one_class = style(
            Some(qml(
                r#"type="graduatedSymbol" attr="pop"><ranges><range lower="0" upper="10" symbol="0"/></ranges>"#,
            )),
            None,
        );
        assert_eq!(
            paint_of(&one_class, GeometryType::Point, &columns()).unwrap()["circle-color"],
            json!("#e41a1c")
        );
    }
}
