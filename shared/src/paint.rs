//! Whether a generated MapLibre paint (a GeoPackage style's, kept as a
//! dataset's `default_paint`) is one the style spec accepts. Every map
//! layer on the dataset starts from that paint, other users' maps and
//! embeds included, and MapLibre refuses a whole style for one invalid
//! value; so a paint that fails here is dropped, and the layer keeps the
//! paint of its kind. The check covers what styles become: plain colours,
//! a `match` on an attribute and a `step` over a number, as the style
//! spec's own validator checks them.
use serde_json::{Map, Value};

/// The paint properties a style may set, each a colour.
const COLOUR_PROPERTIES: [&str; 5] = [
    "fill-color",
    "fill-outline-color",
    "line-color",
    "circle-color",
    "circle-stroke-color",
];

/// The largest integer a `match` label may be (`Number.MAX_SAFE_INTEGER`).
const MOST_LABEL: f64 = 9_007_199_254_740_991.0;

/// Whether every property of `paint` is a colour property holding a
/// colour, or an expression that gives one.
pub fn is_valid(paint: &Map<String, Value>) -> bool {
    paint
        .iter()
        .all(|(key, value)| COLOUR_PROPERTIES.contains(&key.as_str()) && colour_value(value))
}

fn colour_value(value: &Value) -> bool {
    match value {
        Value::String(colour) => is_colour(colour),
        Value::Array(expression) => match expression.first().and_then(Value::as_str) {
            Some("match") => valid_match(expression),
            Some("step") => valid_step(expression),
            _ => false,
        },
        _ => false,
    }
}

/// `["get", name]`, or that wrapped in `["to-number", …]`.
fn attribute_input(input: &Value) -> bool {
    match input.as_array().map(Vec::as_slice) {
        Some([get, Value::String(_)]) => get == "get",
        Some([to_number, inner]) => to_number == "to-number" && attribute_input(inner),
        _ => false,
    }
}

/// `["match", input, label, colour, …, fallback]`: one pair at least,
/// labels unique, all strings or all integers.
fn valid_match(expression: &[Value]) -> bool {
    let [_, input, rest @ .., fallback] = expression else {
        return false;
    };
    if !attribute_input(input) || rest.is_empty() || rest.len() % 2 != 0 || !colour_value(fallback) {
        return false;
    }
    let numeric = rest[0].is_number();
    // Labels as MapLibre compares them: `1` and `1.0` are one.
    let mut labels: Vec<String> = Vec::new();
    for pair in rest.chunks(2) {
        let label = match &pair[0] {
            Value::String(s) if !numeric => s.clone(),
            Value::Number(n) if numeric => match n.as_f64() {
                Some(v) if v.fract() == 0.0 && v.abs() <= MOST_LABEL => v.to_string(),
                _ => return false,
            },
            _ => return false,
        };
        if labels.contains(&label) || !colour_value(&pair[1]) {
            return false;
        }
        labels.push(label);
    }
    true
}

/// `["step", input, colour, stop, colour, …]`: one stop at least, the
/// stops finite numbers in strictly ascending order.
fn valid_step(expression: &[Value]) -> bool {
    let [_, input, first, rest @ ..] = expression else {
        return false;
    };
    if !attribute_input(input) || !colour_value(first) || rest.is_empty() || rest.len() % 2 != 0 {
        return false;
    }
    let mut previous = f64::NEG_INFINITY;
    for pair in rest.chunks(2) {
        match pair[0].as_f64() {
            Some(stop) if stop.is_finite() && stop > previous => previous = stop,
            _ => return false,
        }
        if !colour_value(&pair[1]) {
            return false;
        }
    }
    true
}

/// A colour as styles give it: `#rgb`, `#rrggbb` (with or without alpha
/// digits), or `rgb(r,g,b)`/`rgba(r,g,b,a)` with channels of 0 to 255 and
/// an alpha of 0 to 1.
pub fn is_colour(text: &str) -> bool {
    if let Some(hex) = text.strip_prefix('#') {
        return matches!(hex.len(), 3 | 4 | 6 | 8) && hex.bytes().all(|b| b.is_ascii_hexdigit());
    }
    let (channels, alpha) = if let Some(inner) = text.strip_prefix("rgba(").and_then(|t| t.strip_suffix(')')) {
        (inner, true)
    } else if let Some(inner) = text.strip_prefix("rgb(").and_then(|t| t.strip_suffix(')')) {
        (inner, false)
    } else {
        return false;
    };
    let parts: Vec<&str> = channels.split(',').map(str::trim).collect();
    if parts.len() != if alpha { 4 } else { 3 } {
        return false;
    }
    parts[..3].iter().all(|p| p.parse::<u8>().is_ok())
        && parts[3..]
            .iter()
            .all(|a| a.parse::<f64>().is_ok_and(|a| (0.0..=1.0).contains(&a)))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn valid(paint: Value) -> bool {
        is_valid(paint.as_object().unwrap())
    }

    #[test]
    fn colours_and_their_expressions_pass() {
        assert!(valid(
            json!({"fill-color": "#1b9e77", "fill-outline-color": "rgba(0,0,0,0.500)"})
        ));
        assert!(valid(
            json!({"circle-color": ["match", ["get", "kind"], "a", "#fff", "b", "#000", "rgba(0,0,0,0)"]})
        ));
        assert!(valid(
            json!({"line-color": ["match", ["get", "n"], 1, "#fff", 2, "#000", "#123"]})
        ));
        assert!(valid(
            json!({"fill-color": ["step", ["to-number", ["get", "p"]], "#fff", 10, "#000", 20.5, "#f00"]})
        ));
    }

    #[test]
    fn what_the_style_spec_refuses_fails() {
        for paint in [
            json!({"fill-color": "javascript:alert(1)"}),
            json!({"fill-color": "#12345"}),
            json!({"fill-color": "rgb(300,0,0)"}),
            json!({"fill-color": ["match", ["get", "kind"], "rgba(0,0,0,0)"]}),
            json!({"fill-color": ["match", ["get", "kind"], "a", "#fff", "a", "#000", "#123"]}),
            json!({"fill-color": ["match", ["get", "n"], 1.5, "#fff", "#123"]}),
            json!({"fill-color": ["match", ["get", "n"], 1, "#fff", "one", "#000", "#123"]}),
            json!({"fill-color": ["step", ["get", "p"], "#fff"]}),
            json!({"fill-color": ["step", ["get", "p"], "#fff", 10, "#000", 10, "#f00"]}),
            json!({"fill-color": ["step", ["get", "p"], "#fff", 20, "#000", 10, "#f00"]}),
            json!({"fill-color": ["get", "colour"]}),
            json!({"fill-opacity": 0.5}),
        ] {
            assert!(!valid(paint.clone()), "{paint}");
        }
    }
}
