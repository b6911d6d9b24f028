//! Values bound to dynamically built queries.
use catalog_shared::{AppError, db::quote_literal};
use sqlx::{Postgres, postgres::PgArguments, query::Query};

#[derive(Clone, Debug)]
pub enum Param {
    Text(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    Instant(chrono::DateTime<chrono::Utc>),
}

/// The values of a query being built, in the order bound: each `bind`
/// gives the placeholder that stands for its value, so placeholders
/// number themselves and a value is never spliced into the SQL.
#[derive(Clone, Debug, Default)]
pub struct Binds(Vec<Param>);

/// Where a bound value goes in the SQL: written as `$n`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placeholder(usize);

impl std::fmt::Display for Placeholder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "${}", self.0 + 1)
    }
}

impl Binds {
    pub fn bind(&mut self, value: Param) -> Placeholder {
        self.0.push(value);
        Placeholder(self.0.len() - 1)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn values(&self) -> &[Param] {
        &self.0
    }

    /// The value a placeholder binds, for a caller that retypes it.
    pub fn value_mut(&mut self, at: Placeholder) -> &mut Param {
        &mut self.0[at.0]
    }
}

/// A query of SQL the service built, with the request's values bound.
pub fn query_with(sql: String, binds: &Binds) -> Query<'_, Postgres, PgArguments> {
    let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
    for param in binds.values() {
        query = match param {
            Param::Text(v) => query.bind(v.as_str()),
            Param::Int(v) => query.bind(*v),
            Param::Float(v) => query.bind(*v),
            Param::Bool(v) => query.bind(*v),
            Param::Instant(v) => query.bind(*v),
        };
    }
    query
}

/// `sql` with each `$n` replaced by the literal of `params[n - 1]`, for a
/// reader that cannot bind values (GDAL's `-sql`). Parameters are found by
/// PostgreSQL's own scanner, so a `$1` inside a quoted name or a string is
/// left as it is; text goes as an escape string, so no value can end it.
pub fn inlined(sql: &str, binds: &Binds) -> Result<String, AppError> {
    let params = binds.values();
    let tokens = pg_query::scan_tokens(sql).map_err(AppError::internal)?;
    let mut out = String::with_capacity(sql.len());
    let mut copied = 0;
    for token in tokens
        .iter()
        .filter(|t| t.token == pg_query::protobuf::Token::Param as i32)
    {
        let (start, end) = (token.start as usize, token.end as usize);
        let index: usize = sql[start + 1..end].parse().map_err(AppError::internal)?;
        let param = index
            .checked_sub(1)
            .and_then(|i| params.get(i))
            .ok_or_else(|| AppError::internal(format!("no value for ${index}")))?;
        out.push_str(&sql[copied..start]);
        out.push_str(&literal(param)?);
        copied = end;
    }
    out.push_str(&sql[copied..]);
    Ok(out)
}

fn literal(param: &Param) -> Result<String, AppError> {
    let text = |v: &str| quote_literal(v);
    Ok(match param {
        Param::Text(v) if v.contains('\0') => return Err(AppError::bad_request("a value holds a NUL character")),
        Param::Text(v) => text(v),
        Param::Int(v) => format!("{v}::bigint"),
        Param::Float(v) => format!("{}::double precision", text(&v.to_string())),
        Param::Bool(v) => v.to_string(),
        Param::Instant(v) => format!("{}::timestamptz", text(&v.to_rfc3339())),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_inlined_as_literals_only_where_parameters_are() {
        let sql = r#"SELECT "a$1", '$2' FROM t WHERE x = $1 AND y = $2 AND z = $10 AND w = $3"#;
        let mut params = Binds::default();
        for value in [Param::Text("it's \\ $2".into()), Param::Float(0.5), Param::Bool(true)]
            .into_iter()
            .chain((4..=10).map(Param::Int))
        {
            params.bind(value);
        }
        assert_eq!(
            inlined(sql, &params).unwrap(),
            r#"SELECT "a$1", '$2' FROM t WHERE x = E'it''s \\ $2' AND y = '0.5'::double precision AND z = 10::bigint AND w = true"#
        );
        let mut one = Binds::default();
        assert_eq!(one.bind(Param::Text("a\0b".into())).to_string(), "$1");
        assert!(inlined("SELECT $2", &one).is_err());
        assert_eq!(inlined("SELECT $1", &one).unwrap_err().status().as_u16(), 400);
    }
}
