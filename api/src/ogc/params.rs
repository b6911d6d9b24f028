//! Values bound to dynamically built queries.
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
