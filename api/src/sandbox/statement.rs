//! The first gate of the SQL sandbox: the caller's text, parsed by the
//! real PostgreSQL parser (libpg_query), must be exactly one plain SELECT
//! built from an allow-list of node kinds and calling only allow-listed
//! functions. What runs is the statement printed back from the checked
//! tree, so the database executes what was checked and nothing else.
//! Which relations it may read is decided later, against the database's
//! own name resolution (see `mod.rs`).
use std::{collections::HashSet, sync::LazyLock};

use catalog_shared::AppError;
use serde_json::Value;

/// Node kinds a read-only query is built from, plus the kinds of constant
/// an `AConst` holds (`Ival` ... `Bsval`, the tree's only other capitalised
/// keys). Everything else (writes, utility statements, locking clauses, XML
/// and JSON-table constructs, parameters, column definition lists) is
/// refused.
const ALLOWED_NODES: &[&str] = &[
    "Boolval",
    "Bsval",
    "Fval",
    "Ival",
    "Sval",
    "AArrayExpr",
    "AConst",
    "AExpr",
    "AIndices",
    "AIndirection",
    "AStar",
    "Alias",
    "BitString",
    "BoolExpr",
    "Boolean",
    "BooleanTest",
    "CaseExpr",
    "CaseWhen",
    "CoalesceExpr",
    "CollateClause",
    "ColumnRef",
    "CommonTableExpr",
    "Float",
    "FuncCall",
    "GroupingFunc",
    "GroupingSet",
    "Integer",
    "JoinExpr",
    "List",
    "MinMaxExpr",
    "NamedArgExpr",
    "NullTest",
    "RangeFunction",
    "RangeSubselect",
    "RangeTableSample",
    "RangeVar",
    "ResTarget",
    "RowExpr",
    "SelectStmt",
    "SortBy",
    "SqlvalueFunction",
    "String",
    "SubLink",
    "TypeCast",
    "TypeName",
    "WindowDef",
    "WithClause",
];

/// Schemas a function may be named with: the built-ins and PostGIS.
const FUNCTION_SCHEMAS: &[&str] = &["pg_catalog", "public"];

static ALLOWED_FUNCTIONS: LazyLock<HashSet<&'static str>> = LazyLock::new(|| {
    include_str!("functions.txt")
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .collect()
});

/// A relation the statement names, as written (`schema` empty when
/// unqualified).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RelationRef {
    pub schema: String,
    pub name: String,
}

impl RelationRef {
    /// The name as SQL text for `to_regclass`, resolved the way the
    /// statement itself will be.
    pub fn qualified(&self) -> String {
        use catalog_shared::db::quote_ident;
        if self.schema.is_empty() {
            quote_ident(&self.name)
        } else {
            format!("{}.{}", quote_ident(&self.schema), quote_ident(&self.name))
        }
    }
}

/// A statement that passed the parse check.
#[derive(Debug)]
pub struct CheckedSelect {
    /// The statement printed back from the parse tree.
    pub sql: String,
    pub relations: Vec<RelationRef>,
}

/// Parses and checks the caller's text: 400 when it is not one SELECT,
/// 403 when it uses something the sandbox does not allow.
pub fn check(sql: &str) -> Result<CheckedSelect, AppError> {
    let parsed = pg_query::parse(sql, pg_query::ParserOptions::default())
        .map_err(|e| AppError::bad_request(format!("the query does not parse: {}", parse_message(&e))))?;
    let stmts = &parsed.protobuf.stmts;
    if stmts.len() != 1 {
        return Err(AppError::bad_request("send exactly one statement"));
    }
    match stmts[0].stmt.as_ref().and_then(|s| s.node.as_ref()) {
        Some(pg_query::NodeEnum::SelectStmt(_)) => {}
        _ => {
            return Err(AppError::bad_request(
                "only a SELECT statement can run in the sandbox, which is read-only",
            ));
        }
    }
    let tree = serde_json::to_value(&parsed.protobuf)
        .map_err(|e| AppError::bad_request(format!("the query could not be read: {e}")))?;
    let mut relations = HashSet::new();
    walk(&tree, &mut relations)?;
    let sql = parsed
        .deparse(pg_query::DeparseOptions::default())
        .map_err(|e| AppError::bad_request(format!("the query could not be printed back: {}", parse_message(&e))))?;
    Ok(CheckedSelect {
        sql,
        relations: relations.into_iter().collect(),
    })
}

fn parse_message(e: &pg_query::Error) -> String {
    match e {
        pg_query::Error::Parse(message) => message.clone(),
        other => other.to_string(),
    }
}

/// Visits every object of the tree: node kinds are the capitalised keys
/// (protobuf fields are snake_case, and the only enums with capitalised
/// names are `Node` and `AConst`'s value), so nothing nested escapes the
/// check.
fn walk(value: &Value, relations: &mut HashSet<RelationRef>) -> Result<(), AppError> {
    match value {
        Value::Object(fields) => {
            for (key, child) in fields {
                if key.starts_with(|c: char| c.is_ascii_uppercase()) {
                    check_node(key, child, relations)?;
                } else if matches!(key.as_str(), "into_clause" | "locking_clause")
                    && !(child.is_null() || child.as_array().is_some_and(Vec::is_empty))
                {
                    return Err(AppError::forbidden(
                        "SELECT INTO and row locks (FOR UPDATE, FOR SHARE) are not allowed in the read-only sandbox",
                    ));
                }
                walk(child, relations)?;
            }
        }
        Value::Array(items) => {
            for item in items {
                walk(item, relations)?;
            }
        }
        _ => {}
    }
    Ok(())
}

fn check_node(kind: &str, node: &Value, relations: &mut HashSet<RelationRef>) -> Result<(), AppError> {
    if !ALLOWED_NODES.contains(&kind) {
        return Err(AppError::forbidden(format!(
            "{} is not allowed in the sandbox, which runs plain read-only SELECT statements",
            describe(kind)
        )));
    }
    match kind {
        "FuncCall" => check_function(node),
        "RangeVar" => {
            relations.insert(RelationRef {
                schema: text(&node["schemaname"]).to_string(),
                name: text(&node["relname"]).to_string(),
            });
            if !text(&node["catalogname"]).is_empty() {
                return Err(AppError::forbidden("names qualified with a database are not allowed"));
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn check_function(node: &Value) -> Result<(), AppError> {
    let parts: Vec<&str> = node["funcname"]
        .as_array()
        .map(|names| names.iter().map(|n| text(&n["node"]["String"]["sval"])).collect())
        .unwrap_or_default();
    let (schema, name) = match parts.as_slice() {
        [name] => ("", *name),
        [schema, name] => (*schema, *name),
        _ => ("?", ""),
    };
    let schema_ok = schema.is_empty() || FUNCTION_SCHEMAS.contains(&schema);
    if schema_ok && ALLOWED_FUNCTIONS.contains(name) {
        return Ok(());
    }
    Err(AppError::forbidden(format!(
        "the function {} is not allowed in the sandbox; it offers math, string, date, JSON, aggregate, window and PostGIS (ST_*) functions",
        parts.join(".")
    )))
}

/// A reader's name for a refused node kind.
fn describe(kind: &str) -> String {
    match kind {
        "ParamRef" => "a parameter ($1)".into(),
        "LockingClause" => "a row lock (FOR UPDATE, FOR SHARE)".into(),
        "IntoClause" => "SELECT INTO".into(),
        k if k.starts_with("Xml") => "XML construction".into(),
        k if k.starts_with("Json") => "SQL/JSON construction".into(),
        k if k.ends_with("Stmt") => format!("a nested statement ({k})"),
        k => format!("the construct {k}"),
    }
}

fn text(value: &Value) -> &str {
    value.as_str().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(sql: &str) -> u16 {
        check(sql).expect_err(sql).problem.status
    }

    #[test]
    fn one_plain_select_passes_and_is_printed_back() {
        let checked =
            check("select n, st_asgeojson(geom) from data.parks_1 p join lakes l on true where n > 1").unwrap();
        let mut names: Vec<_> = checked.relations.iter().map(RelationRef::qualified).collect();
        names.sort();
        assert_eq!(names, ["\"data\".\"parks_1\"", "\"lakes\""]);
        assert!(
            checked
                .sql
                .starts_with("SELECT n, st_asgeojson(geom) FROM data.parks_1 p"),
            "{}",
            checked.sql
        );
        for sql in [
            "SELECT extract(year FROM now()), substring('abc' FROM 1 FOR 2), trim(both ' ' from 'a ')",
            "SELECT count(*) FILTER (WHERE true), row_number() OVER (ORDER BY 1) FROM t GROUP BY ROLLUP (1)",
            "WITH a AS (SELECT 1 AS x) SELECT x::text, CASE WHEN x IS NULL THEN 0 END FROM a",
            "SELECT * FROM generate_series(1, 3) g(n), LATERAL (SELECT n * 2) d",
            "SELECT ST_AsText(ST_Transform(ST_SetSRID(ST_MakePoint(1, 2), 4326), 3857)) UNION SELECT 'x'",
        ] {
            check(sql).unwrap_or_else(|e| panic!("{sql}: {}", e.problem.detail));
        }
    }

    #[test]
    fn anything_but_one_read_only_select_is_refused() {
        for sql in [
            "DELETE FROM t",
            "SELECT 1; SELECT 2",
            "SHOW work_mem",
            "COPY t TO STDOUT",
            "DO $$ BEGIN END $$",
            "SET ROLE postgres",
            "RESET ROLE",
            "PREPARE p AS SELECT 1",
            "EXPLAIN ANALYZE SELECT 1",
            "SELECT 1) r; DROP TABLE t; --",
            "CREATE TABLE x AS SELECT 1",
        ] {
            assert_eq!(refused(sql), 400, "{sql}");
        }
        for sql in [
            "SELECT set_config('role', 'postgres', true)",
            "SELECT query_to_xml('select * from users', true, false, '')",
            "SELECT pg_catalog.query_to_xml('select 1', true, false, '')",
            "SELECT * FROM t WHERE x IN (SELECT current_setting('data_directory'))",
            "SELECT pg_read_file('/etc/passwd')",
            "SELECT lo_import('/etc/passwd')",
            "SELECT pg_advisory_lock(1)",
            "SELECT pg_sleep(10)",
            "SELECT evil.abs(1)",
            "SELECT st_estimatedextent('data', 't', 'geom')",
            "SELECT * INTO new_table FROM t",
            "SELECT * FROM t FOR UPDATE",
            "SELECT xmlparse(document '<a/>')",
            "SELECT $1",
            "WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d",
            "SELECT * FROM other_db.data.t",
            "SELECT * FROM ROWS FROM (dblink('x', 'y') AS (a int))",
        ] {
            assert_eq!(refused(sql), 403, "{sql}");
        }
    }
}
