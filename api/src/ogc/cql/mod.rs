//! CQL2 (text or JSON, parsed by the `cql2` crate) translated into a SQL
//! condition. Every value travels as a bound parameter; every identifier is
//! a published queryable, quoted; only the operators of the declared
//! conformance classes are accepted.
use std::collections::HashMap;

use catalog_shared::{AppError, datasets::ColumnType, db::quote_ident};
use cql2::Expr;

use super::params::{Binds, Param, Placeholder};

mod nesting;

pub const MAX_FILTER_CHARS: usize = 10_000;
pub const MAX_PARAMS: usize = 1_000;
/// Brackets, prefix operators and comparisons together
/// (`nesting`).
pub const MAX_DEPTH: usize = 100;
/// Rule calls the text parser may make: a filter at the length limit
/// takes well under a tenth of it, while inputs that make a PEG parser
/// backtrack through every bracket would take forever without it.
const PARSER_CALLS: usize = 2_000_000;
/// The stack the parser, its tree and the translation run on: a chain of
/// `AND`s or sums at the length limit is a tree thousands of levels deep,
/// which the `cql2` crate builds and drops by recursion; far more than a
/// worker thread's 2 MiB, and only touched pages cost memory.
const PARSER_STACK: usize = 64 << 20;

const UNSUPPORTED: &str = "this service implements Basic CQL2, advanced comparison operators (LIKE, BETWEEN, IN) and basic spatial functions (S_INTERSECTS)";

/// Why a filter is refused: each is the caller's error, the detail of a
/// 400.
#[derive(Debug, thiserror::Error)]
pub enum FilterError {
    #[error("the filter is longer than {MAX_FILTER_CHARS} characters")]
    TooLong,
    #[error("the filter nests deeper than {MAX_DEPTH} levels")]
    TooDeep,
    #[error("the filter needs more than {MAX_PARAMS} values")]
    TooManyValues,
    #[error("the filter is not valid CQL2 {lang}: {message}")]
    Syntax { lang: &'static str, message: String },
    #[error("{0:?} is not a queryable of this collection; see its /queryables")]
    UnknownQueryable(String),
    #[error("the operator {0:?} is not supported: {UNSUPPORTED}")]
    UnsupportedOperator(String),
    #[error(transparent)]
    Bbox(#[from] crate::bbox::BboxError),
    /// Operands of the wrong number or kind for where they stand.
    #[error("{0}")]
    Malformed(String),
}

impl From<FilterError> for AppError {
    fn from(e: FilterError) -> Self {
        AppError::bad_request(e.to_string())
    }
}

/// A column a filter may name.
#[derive(Clone, Debug)]
pub struct Queryable {
    pub column: String,
    pub pg_type: ColumnType,
    /// Its type's name in SQL, which literals compared with it are cast to.
    pub sql_type: String,
}

/// Published queryables by name: the column name and the source's original name.
#[derive(Clone, Debug, Default)]
pub struct Queryables {
    pub by_name: HashMap<String, Queryable>,
    pub geometry_column: String,
    /// SRID of the geometry column; literals (in CRS84) are transformed to it.
    pub srid: i32,
    /// Whether a name an extension's prefix qualifies (`eo:cloud_cover`,
    /// `properties.proj:code`) that is not a queryable reads as null
    /// rather than being refused: STAC items are open to extensions'
    /// fields, and a filter on one no item holds matches nothing.
    pub extension_names_are_null: bool,
}

impl Queryables {
    /// The queryable of a name; None for an extension's name read as null.
    fn resolve(&self, name: &str) -> Result<Option<&Queryable>, FilterError> {
        match self.by_name.get(name) {
            Some(queryable) => Ok(Some(queryable)),
            None if self.extension_names_are_null && is_extension_name(name) => Ok(None),
            None => Err(FilterError::UnknownQueryable(name.to_string())),
        }
    }
}

/// `prefix:name`, the form of STAC extensions' fields, optionally under
/// `properties.`.
fn is_extension_name(name: &str) -> bool {
    let name = name.strip_prefix("properties.").unwrap_or(name);
    name.split_once(':').is_some_and(|(prefix, field)| {
        !prefix.is_empty()
            && !field.is_empty()
            && prefix
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
            && field
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b':'))
    })
}

pub enum Lang {
    Text,
    Json,
}

impl Lang {
    /// What `filter-lang` may say: CQL2 text or JSON, and `cql-text`, the
    /// name CQL2 text had before CQL2 (GDAL 3.6 sends it).
    pub const NAMES: [&'static str; 3] = ["cql2-text", "cql2-json", "cql-text"];

    pub fn named(name: &str) -> Option<Self> {
        match name {
            "cql2-text" | "cql-text" => Some(Self::Text),
            "cql2-json" => Some(Self::Json),
            _ => None,
        }
    }
}

/// The OpenAPI document names the values from `NAMES`.
impl utoipa::PartialSchema for Lang {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .enum_values(Some(Self::NAMES))
            .description(Some(
                "How a CQL2 filter is written; cql-text is CQL2 text by its older name.",
            ))
            .into()
    }
}

impl utoipa::ToSchema for Lang {}

/// Parses and translates a filter; the error is the detail of a 400.
pub fn translate(filter: &str, lang: Lang, queryables: &Queryables, params: &mut Binds) -> Result<String, FilterError> {
    if filter.chars().count() > MAX_FILTER_CHARS {
        return Err(FilterError::TooLong);
    }
    let depth = match lang {
        Lang::Text => nesting::of_text(filter),
        Lang::Json => nesting::of_json(filter),
    };
    if depth > MAX_DEPTH {
        return Err(FilterError::TooDeep);
    }
    static CALL_LIMIT: std::sync::Once = std::sync::Once::new();
    CALL_LIMIT.call_once(|| pest::set_call_limit(std::num::NonZeroUsize::new(PARSER_CALLS)));
    stacker::grow(PARSER_STACK, || {
        let expr = match lang {
            Lang::Text => cql2::parse_text(filter).map_err(|e| FilterError::Syntax {
                lang: "text",
                message: where_text_fails(&e, filter),
            })?,
            Lang::Json => cql2::parse_json(filter).map_err(|e| FilterError::Syntax {
                lang: "JSON",
                message: e.to_string(),
            })?,
        };
        let mut translator = Translator {
            queryables,
            params,
            depth: 0,
        };
        translator.condition(&expr)
    })
}

/// Where a CQL2 text stops parsing, in words: the parser's own message is
/// a dump of its grammar's rule names.
fn where_text_fails(error: &cql2::Error, filter: &str) -> String {
    use pest::error::LineColLocation;
    let cql2::Error::Pest(error) = error else {
        return error.to_string();
    };
    let (line, column) = match error.line_col {
        LineColLocation::Pos(at) | LineColLocation::Span(at, _) => at,
    };
    let rest: String = filter
        .lines()
        .nth(line.saturating_sub(1))
        .map(|text| text.chars().skip(column.saturating_sub(1)).take(24).collect())
        .unwrap_or_default();
    let at = if filter.lines().count() > 1 {
        format!("line {line}, character {column}")
    } else {
        format!("character {column}")
    };
    if rest.trim().is_empty() {
        format!("it stops at {at} where more is needed (a value, an operator or a closing parenthesis)")
    } else {
        format!(
            "it goes wrong at {at}, at {rest:?}: check the operator, quotes and parentheses there \
             (strings take single quotes, properties their names in /queryables)"
        )
    }
}

struct Translator<'a> {
    queryables: &'a Queryables,
    params: &'a mut Binds,
    depth: usize,
}

/// An operand rendered to SQL, with the type it is known to have.
struct Operand {
    sql: String,
    pg_type: Option<String>,
    /// The value of a literal, which its comparison may retype.
    literal: Option<Placeholder>,
}

impl Translator<'_> {
    fn bind(&mut self, param: Param) -> Result<Placeholder, FilterError> {
        if self.params.len() >= MAX_PARAMS {
            return Err(FilterError::TooManyValues);
        }
        Ok(self.params.bind(param))
    }

    fn condition(&mut self, expr: &Expr) -> Result<String, FilterError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(FilterError::TooDeep);
        }
        let sql = self.condition_inner(expr);
        self.depth -= 1;
        sql
    }

    fn condition_inner(&mut self, expr: &Expr) -> Result<String, FilterError> {
        match expr {
            Expr::Bool(b) => Ok(if *b { "TRUE".into() } else { "FALSE".into() }),
            Expr::Property { property } => {
                let Some(q) = self.queryables.resolve(property)? else {
                    return Ok("NULL".into());
                };
                if q.pg_type == ColumnType::Boolean {
                    Ok(quote_ident(&q.column))
                } else {
                    Err(FilterError::Malformed(format!(
                        "{property:?} is not a boolean and cannot stand alone as a condition"
                    )))
                }
            }
            Expr::Operation { op, args } => self.operation(op, args),
            other => Err(FilterError::Malformed(format!(
                "{} is not a condition",
                describe(other)
            ))),
        }
    }

    fn operation(&mut self, op: &str, args: &[Box<Expr>]) -> Result<String, FilterError> {
        match op {
            "and" | "or" => {
                let parts = args.iter().map(|a| self.condition(a)).collect::<Result<Vec<_>, _>>()?;
                if parts.is_empty() {
                    return Err(FilterError::Malformed(format!("{op} needs operands")));
                }
                Ok(format!("({})", parts.join(if op == "and" { " AND " } else { " OR " })))
            }
            "not" => {
                let [arg] = args else {
                    return Err(FilterError::Malformed("NOT takes one operand".into()));
                };
                Ok(format!("(NOT {})", self.condition(arg)?))
            }
            "=" | "<>" | "<" | "<=" | ">" | ">=" => {
                let [a, b] = args else {
                    return Err(FilterError::Malformed(format!("{op} takes two operands")));
                };
                let (a, b) = self.typed_pair(a, b)?;
                Ok(format!("({} {op} {})", a.sql, b.sql))
            }
            "like" => {
                let [a, b] = args else {
                    return Err(FilterError::Malformed("LIKE takes two operands".into()));
                };
                let a = self.operand(a)?;
                let b = self.operand(b)?;
                Ok(format!("({}::text LIKE {}::text)", a.sql, b.sql))
            }
            "between" => {
                let [a, low, high] = args else {
                    return Err(FilterError::Malformed("BETWEEN takes three operands".into()));
                };
                let (a, low) = self.typed_pair(a, low)?;
                let high = self.operand(high)?;
                let high = self.cast_literal(high, a.pg_type.as_deref());
                Ok(format!("({} BETWEEN {} AND {})", a.sql, low.sql, high.sql))
            }
            "in" => {
                let [a, list] = args else {
                    return Err(FilterError::Malformed("IN takes an operand and a list".into()));
                };
                let Expr::Array(items) = list.as_ref() else {
                    return Err(FilterError::Malformed("IN needs a list of values".into()));
                };
                let a = self.operand(a)?;
                if items.is_empty() {
                    return Ok("FALSE".into());
                }
                let mut values = Vec::with_capacity(items.len());
                for item in items {
                    let v = self.operand(item)?;
                    values.push(self.cast_literal(v, a.pg_type.as_deref()).sql);
                }
                Ok(format!("({} IN ({}))", a.sql, values.join(", ")))
            }
            "isNull" => {
                let [a] = args else {
                    return Err(FilterError::Malformed("IS NULL takes one operand".into()));
                };
                // The geometry queryable may be tested for NULL like any other.
                let sql = match a.as_ref() {
                    Expr::Property { property } if self.is_geometry(property) => self.spatial(a)?,
                    _ => self.operand(a)?.sql,
                };
                Ok(format!("({sql} IS NULL)"))
            }
            "s_intersects" => {
                let [a, b] = args else {
                    return Err(FilterError::Malformed("S_INTERSECTS takes two operands".into()));
                };
                Ok(format!("ST_Intersects({}, {})", self.spatial(a)?, self.spatial(b)?))
            }
            other => Err(FilterError::UnsupportedOperator(other.to_string())),
        }
    }

    /// Two operands of a comparison; a literal takes the type of the
    /// property it is compared with.
    fn typed_pair(&mut self, a: &Expr, b: &Expr) -> Result<(Operand, Operand), FilterError> {
        let a = self.operand(a)?;
        let b = self.operand(b)?;
        let b = self.cast_literal(b, a.pg_type.as_deref());
        let a = self.cast_literal(a, b.pg_type.as_deref());
        Ok((a, b))
    }

    /// Gives an untyped literal the type of what it is compared with: text
    /// is cast in SQL (a malformed value is then a 400), a number compared
    /// with text becomes text.
    fn cast_literal(&mut self, operand: Operand, to: Option<&str>) -> Operand {
        let (Some(index), Some(pg_type), None) = (operand.literal, to, operand.pg_type.as_ref()) else {
            return operand;
        };
        let value = self.params.value_mut(index);
        match (&*value, pg_type) {
            (Param::Text(_), "text") => operand,
            (Param::Text(_), t) => Operand {
                sql: format!("{}::{t}", operand.sql),
                pg_type: Some(t.to_string()),
                literal: Some(index),
            },
            (Param::Int(v), "text") => {
                *value = Param::Text(v.to_string());
                operand
            }
            (Param::Float(v), "text") => {
                *value = Param::Text(v.to_string());
                operand
            }
            _ => operand,
        }
    }

    fn operand(&mut self, expr: &Expr) -> Result<Operand, FilterError> {
        let literal = |sql: String, index: Placeholder, pg_type: Option<&str>| Operand {
            sql,
            pg_type: pg_type.map(str::to_string),
            literal: Some(index),
        };
        match expr {
            Expr::Property { property } => Ok(match self.queryables.resolve(property)? {
                Some(q) => Operand {
                    sql: quote_ident(&q.column),
                    pg_type: Some(q.sql_type.clone()),
                    literal: None,
                },
                None => Operand {
                    sql: "NULL".into(),
                    pg_type: None,
                    literal: None,
                },
            }),
            Expr::Float(v) => {
                let param = if v.fract() == 0.0 && v.abs() < 9.0e15 {
                    Param::Int(*v as i64)
                } else {
                    Param::Float(*v)
                };
                let at = self.bind(param)?;
                Ok(literal(at.to_string(), at, None))
            }
            Expr::Literal(s) => {
                let at = self.bind(Param::Text(s.clone()))?;
                Ok(literal(at.to_string(), at, None))
            }
            Expr::Bool(b) => {
                let at = self.bind(Param::Bool(*b))?;
                Ok(literal(at.to_string(), at, Some("boolean")))
            }
            Expr::Null => Ok(Operand {
                sql: "NULL".into(),
                pg_type: None,
                literal: None,
            }),
            Expr::Date { date } => {
                let Expr::Literal(s) = date.as_ref() else {
                    return Err(FilterError::Malformed("DATE() takes a string".into()));
                };
                let at = self.bind(Param::Text(s.clone()))?;
                Ok(literal(format!("{at}::date"), at, Some("date")))
            }
            Expr::Timestamp { timestamp } => {
                let Expr::Literal(s) = timestamp.as_ref() else {
                    return Err(FilterError::Malformed("TIMESTAMP() takes a string".into()));
                };
                let at = self.bind(Param::Text(s.clone()))?;
                Ok(literal(format!("{at}::timestamptz"), at, Some("timestamptz")))
            }
            Expr::Operation { op, .. } => Err(FilterError::Malformed(format!(
                "the operator or function {op:?} is not supported here: {UNSUPPORTED}"
            ))),
            other => Err(FilterError::Malformed(format!(
                "{} cannot be compared",
                describe(other)
            ))),
        }
    }

    fn to_storage(&self, wgs84: String) -> String {
        if self.queryables.srid == 4326 || self.queryables.srid <= 0 {
            wgs84
        } else {
            format!("ST_Transform({wgs84}, {})", self.queryables.srid)
        }
    }

    /// Whether a property names the geometry queryable (its column, or
    /// `geometry` as the CQL2 examples call it).
    fn is_geometry(&self, property: &str) -> bool {
        property == self.queryables.geometry_column || property == "geometry"
    }

    /// A geometry operand: the geometry queryable, a WKT/GeoJSON literal
    /// (SRID 4326) or a BBOX.
    fn spatial(&mut self, expr: &Expr) -> Result<String, FilterError> {
        match expr {
            Expr::Property { property } => {
                if self.is_geometry(property) {
                    Ok(quote_ident(&self.queryables.geometry_column))
                } else {
                    Err(FilterError::Malformed(format!(
                        "{property:?} is not the geometry queryable of this collection"
                    )))
                }
            }
            Expr::Geometry(g) => {
                let wkt = g
                    .to_wkt()
                    .map_err(|e| FilterError::Malformed(format!("the geometry literal is not valid: {e}")))?;
                let sql = self.bind(Param::Text(wkt))?;
                Ok(self.to_storage(format!("ST_GeomFromText({sql}, 4326)")))
            }
            Expr::BBox { bbox } => {
                let numbers: Vec<f64> = bbox
                    .iter()
                    .map(|v| match v.as_ref() {
                        Expr::Float(f) => Ok(*f),
                        _ => Err(FilterError::Malformed("BBOX takes numbers".into())),
                    })
                    .collect::<Result<_, _>>()?;
                let mut corners = Vec::new();
                for v in crate::bbox::Bbox::from_numbers(&numbers)?.to_array() {
                    corners.push(self.bind(Param::Float(v))?.to_string());
                }
                Ok(self.to_storage(format!("ST_MakeEnvelope({}, 4326)", corners.join(", "))))
            }
            other => Err(FilterError::Malformed(format!("{} is not a geometry", describe(other)))),
        }
    }
}

fn describe(expr: &Expr) -> String {
    match expr {
        Expr::Operation { op, .. } => format!("the operation {op:?}"),
        Expr::Property { property } => format!("the property {property:?}"),
        Expr::Literal(s) => format!("the string {s:?}"),
        Expr::Float(v) => format!("the number {v}"),
        Expr::Bool(b) => format!("the value {b}"),
        Expr::Null => "NULL".into(),
        Expr::Geometry(_) => "a geometry".into(),
        Expr::BBox { .. } => "a BBOX".into(),
        Expr::Array(_) => "a list".into(),
        Expr::Date { .. } | Expr::Timestamp { .. } | Expr::Interval { .. } => "a temporal value".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queryables() -> Queryables {
        let mut by_name = HashMap::new();
        for (name, pg_type) in [("name", "text"), ("pop", "bigint"), ("born", "date"), ("ok", "boolean")] {
            by_name.insert(
                name.to_string(),
                Queryable {
                    column: name.to_string(),
                    pg_type: ColumnType::parse(pg_type).unwrap(),
                    sql_type: pg_type.to_string(),
                },
            );
        }
        Queryables {
            by_name,
            geometry_column: "geom".into(),
            srid: 4326,
            extension_names_are_null: false,
        }
    }

    fn sql(filter: &str) -> Result<(String, usize), String> {
        let mut params = Binds::default();
        translate(filter, Lang::Text, &queryables(), &mut params)
            .map(|s| (s, params.len()))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn values_are_bound_never_spliced() {
        let (s, n) = sql("name = 'x''; DROP TABLE users; --' AND pop > 10").unwrap();
        assert!(!s.contains("DROP"), "{s}");
        assert_eq!(n, 2);
        let (s, _) = sql("born >= DATE('2020-01-01')").unwrap();
        assert!(s.contains("::date"), "{s}");
    }

    #[test]
    fn a_syntax_error_says_where_in_words() {
        let wrong = sql("name = 'Paris' AND pop >> 10").unwrap_err();
        assert!(wrong.contains("character 25"), "{wrong}");
        assert!(wrong.contains("\"> 10\""), "{wrong}");
        assert!(
            !wrong.contains("Rule") && !wrong.contains("-->"),
            "no parser dump: {wrong}"
        );
        let short = sql("name = ").unwrap_err();
        assert!(short.contains("more is needed"), "{short}");
    }

    #[test]
    fn the_geometry_may_be_tested_for_null() {
        assert_eq!(sql("geom IS NULL").unwrap().0, "(\"geom\" IS NULL)");
        assert_eq!(sql("geometry IS NOT NULL").unwrap().0, "(NOT (\"geom\" IS NULL))");
    }

    #[test]
    fn unknown_names_and_functions_are_refused() {
        assert!(sql("secret = 1").unwrap_err().contains("queryable"));
        assert!(sql("pg_sleep(10) = 1").unwrap_err().contains("not supported"));
        assert!(sql("S_WITHIN(geom, POINT(1 2))").unwrap_err().contains("not supported"));
        assert!(sql("pop + 1 > 2").unwrap_err().contains("not supported"));
    }

    #[test]
    fn limits_are_deterministic() {
        let long = format!("name = '{}'", "x".repeat(MAX_FILTER_CHARS));
        assert!(sql(&long).unwrap_err().contains("longer"));
        let deep = format!("{}pop = 1{}", "(".repeat(100), ")".repeat(100));
        assert!(sql(&deep).unwrap_err().contains("nests"));
        let deep = format!("{}pop = 1{}", "(".repeat(99), ")".repeat(99));
        assert!(sql(&deep).is_ok());
        let list: Vec<String> = (0..1001).map(|i| i.to_string()).collect();
        assert!(
            sql(&format!("pop IN ({})", list.join(",")))
                .unwrap_err()
                .contains("1000")
        );
        let list: Vec<String> = (0..999).map(|i| i.to_string()).collect();
        assert!(sql(&format!("pop IN ({})", list.join(","))).is_ok());
    }

    #[test]
    fn spatial_literals_get_srid_4326() {
        let (s, _) = sql("S_INTERSECTS(geom, POINT(1 2))").unwrap();
        assert!(s.contains("ST_GeomFromText($1, 4326)"), "{s}");
        let (s, n) = sql("S_INTERSECTS(geom, BBOX(0, 0, 1, 1))").unwrap();
        assert!(s.contains("ST_MakeEnvelope($1, $2, $3, $4, 4326)"), "{s}");
        assert_eq!(n, 4);
    }

    #[test]
    fn prefix_operators_and_chains_are_refused_or_parsed_on_a_small_stack() {
        let not = format!("{}pop = 1", "NOT ".repeat(1500));
        assert!(sql(&not).unwrap_err().contains("nests"));
        let minus = format!("pop = {}1", "-".repeat(2000));
        assert!(sql(&minus).unwrap_err().contains("nests"));
        let ok = format!("{}pop = {}1", "NOT ".repeat(49), "-".repeat(49));
        assert!(sql(&ok).is_ok(), "{:?}", sql(&ok));
        // A chain at the length limit is a deep tree inside the parser.
        let sum = format!("pop = 1{}", "+1".repeat(4990));
        assert!(sql(&sum).unwrap_err().contains("not supported"));
        let chain = vec!["ok"; 1600].join(" OR ");
        assert!(sql(&chain).is_ok(), "{:?}", sql(&chain));
        // A PEG parser backtracks through brackets it cannot close.
        let backtracking = format!("{}1,2{}", "(".repeat(99), ")".repeat(99));
        let started = std::time::Instant::now();
        assert!(sql(&backtracking).is_err());
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }

    /// One part of a generated filter.
    fn part() -> impl proptest::strategy::Strategy<Value = &'static str> {
        proptest::sample::select(vec![
            "(",
            ")",
            "NOT ",
            "-",
            " AND ",
            " OR ",
            " = ",
            "pop",
            "1",
            "'x'",
            ",",
            "[",
            "]",
            " IN ",
            " + ",
            "*",
            " BETWEEN ",
            " IS NULL",
            "S_INTERSECTS(",
            "BBOX(0,0,1,1)",
            "\"pop\"",
        ])
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config { cases: 256, ..Default::default() })]

        /// Any text up to the length limit is parsed or refused, on the
        /// stack of a test thread (as small as a Tokio worker's), in
        /// bounded time.
        #[test]
        fn any_nesting_is_parsed_or_refused(parts in proptest::collection::vec(part(), 0..4000)) {
            let filter: String = parts.concat();
            let started = std::time::Instant::now();
            let _ = sql(&filter);
            proptest::prop_assert!(started.elapsed() < std::time::Duration::from_secs(10));
        }

        #[test]
        fn any_json_nesting_is_parsed_or_refused(depth in 0usize..3000, op in proptest::sample::select(vec!["not", "and", "="])) {
            let filter = format!(
                "{}{{\"property\": \"ok\"}}{}",
                format!("{{\"op\": \"{op}\", \"args\": [").repeat(depth),
                "]}".repeat(depth)
            );
            let mut params = Binds::default();
            let _ = translate(&filter, Lang::Json, &queryables(), &mut params);
        }
    }
}
