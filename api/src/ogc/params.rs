//! Values bound to dynamically built queries.
use catalog_shared::AppError;
use sqlx::{Postgres, postgres::PgArguments, query::Query};

#[derive(Clone, Debug)]
pub enum Param {
    Text(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    Instant(chrono::DateTime<chrono::Utc>),
}

/// A query of SQL the service built, with the request's values bound.
pub fn query_with(sql: String, params: &[Param]) -> Query<'_, Postgres, PgArguments> {
    let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
    for param in params {
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
pub fn inlined(sql: &str, params: &[Param]) -> Result<String, AppError> {
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
    let text = |v: &str| format!("E'{}'", v.replace('\\', "\\\\").replace('\'', "''"));
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
        let mut params = vec![Param::Text("it's \\ $2".into()), Param::Float(0.5), Param::Bool(true)];
        params.extend((4..=10).map(Param::Int));
        assert_eq!(
            inlined(sql, &params).unwrap(),
            r#"SELECT "a$1", '$2' FROM t WHERE x = E'it''s \\ $2' AND y = E'0.5'::double precision AND z = 10::bigint AND w = true"#
        );
        assert!(inlined("SELECT $2", &params[..1]).is_err());
        assert_eq!(
            inlined("SELECT $1", &[Param::Text("a\0b".into())])
                .unwrap_err()
                .status()
                .as_u16(),
            400
        );
    }
}
