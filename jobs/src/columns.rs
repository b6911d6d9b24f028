//! How source attributes become typed PostgreSQL columns, and how their
//! values are written in PostgreSQL's binary COPY format.
use std::collections::HashSet;

use gdal_sys::{OGRFieldSubType, OGRFieldType};

/// PostgreSQL types a source attribute can land in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PgType {
    Boolean,
    Integer,
    BigInt,
    Double,
    Text,
    Date,
    Time,
    TimestampTz,
    Bytea,
    Jsonb,
}

impl PgType {
    pub fn sql(self) -> &'static str {
        match self {
            PgType::Boolean => "boolean",
            PgType::Integer => "integer",
            PgType::BigInt => "bigint",
            PgType::Double => "double precision",
            PgType::Text => "text",
            PgType::Date => "date",
            PgType::Time => "time",
            PgType::TimestampTz => "timestamptz",
            PgType::Bytea => "bytea",
            PgType::Jsonb => "jsonb",
        }
    }

    /// Reals always become double precision: sources declare widths such
    /// as Real(24,15) that overflow `numeric` on ordinary values.
    pub fn from_ogr(field_type: OGRFieldType::Type, sub_type: OGRFieldSubType::Type) -> Self {
        match field_type {
            OGRFieldType::OFTInteger if sub_type == OGRFieldSubType::OFSTBoolean => PgType::Boolean,
            OGRFieldType::OFTInteger => PgType::Integer,
            OGRFieldType::OFTInteger64 => PgType::BigInt,
            OGRFieldType::OFTReal => PgType::Double,
            OGRFieldType::OFTDate => PgType::Date,
            OGRFieldType::OFTTime => PgType::Time,
            OGRFieldType::OFTDateTime => PgType::TimestampTz,
            OGRFieldType::OFTBinary => PgType::Bytea,
            OGRFieldType::OFTIntegerList
            | OGRFieldType::OFTInteger64List
            | OGRFieldType::OFTRealList
            | OGRFieldType::OFTStringList => PgType::Jsonb,
            _ => PgType::Text,
        }
    }
}

pub fn ogr_type_name(field_type: OGRFieldType::Type) -> &'static str {
    match field_type {
        OGRFieldType::OFTInteger => "Integer",
        OGRFieldType::OFTInteger64 => "Integer64",
        OGRFieldType::OFTReal => "Real",
        OGRFieldType::OFTString => "String",
        OGRFieldType::OFTDate => "Date",
        OGRFieldType::OFTTime => "Time",
        OGRFieldType::OFTDateTime => "DateTime",
        OGRFieldType::OFTBinary => "Binary",
        OGRFieldType::OFTIntegerList => "IntegerList",
        OGRFieldType::OFTInteger64List => "Integer64List",
        OGRFieldType::OFTRealList => "RealList",
        OGRFieldType::OFTStringList => "StringList",
        _ => "String",
    }
}

/// Column names reserved for the key and geometry the service adds.
const RESERVED: [&str; 2] = ["gid", "geom"];
const MAX_IDENT_BYTES: usize = 63;

/// A lower-case SQL identifier built from any name: letters, digits and
/// underscores only, never starting with a digit, at most 63 bytes.
pub fn sql_identifier(name: &str, fallback: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut last_underscore = false;
    for c in name.chars().flat_map(char::to_lowercase) {
        let c = if c.is_ascii_alphanumeric() { c } else { '_' };
        if c == '_' && last_underscore {
            continue;
        }
        last_underscore = c == '_';
        out.push(c);
    }
    let trimmed = out.trim_matches('_');
    let mut ident = if trimmed.is_empty() {
        fallback.to_string()
    } else {
        trimmed.to_string()
    };
    if ident.starts_with(|c: char| c.is_ascii_digit()) {
        ident.insert(0, '_');
    }
    ident.truncate(MAX_IDENT_BYTES);
    ident
}

/// Safe, unique column names for the given source names, in order.
pub fn column_names<'a>(originals: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut taken: HashSet<String> = RESERVED.iter().map(|s| s.to_string()).collect();
    originals
        .into_iter()
        .enumerate()
        .map(|(i, original)| {
            let base = sql_identifier(original, &format!("field_{}", i + 1));
            let mut candidate = base.clone();
            let mut n = 1;
            while taken.contains(&candidate) {
                n += 1;
                let suffix = format!("_{n}");
                let mut stem = base.clone();
                stem.truncate(MAX_IDENT_BYTES - suffix.len());
                candidate = format!("{stem}{suffix}");
            }
            taken.insert(candidate.clone());
            candidate
        })
        .collect()
}

pub use catalog_shared::db::quote_ident as quote;

/// Writers for PostgreSQL's binary COPY format.
pub mod binary {
    pub const HEADER: &[u8] = b"PGCOPY\n\xff\r\n\0\0\0\0\0\0\0\0\0";
    pub const TRAILER: &[u8] = &(-1i16).to_be_bytes();

    pub fn row_start(buf: &mut Vec<u8>, fields: usize) {
        buf.extend_from_slice(&(fields as i16).to_be_bytes());
    }
    pub fn null(buf: &mut Vec<u8>) {
        buf.extend_from_slice(&(-1i32).to_be_bytes());
    }
    pub fn bytes(buf: &mut Vec<u8>, value: &[u8]) {
        buf.extend_from_slice(&(value.len() as i32).to_be_bytes());
        buf.extend_from_slice(value);
    }
    pub fn bool(buf: &mut Vec<u8>, value: bool) {
        bytes(buf, &[value as u8]);
    }
    pub fn i32(buf: &mut Vec<u8>, value: i32) {
        bytes(buf, &value.to_be_bytes());
    }
    pub fn i64(buf: &mut Vec<u8>, value: i64) {
        bytes(buf, &value.to_be_bytes());
    }
    pub fn f64(buf: &mut Vec<u8>, value: f64) {
        bytes(buf, &value.to_be_bytes());
    }
    pub fn jsonb(buf: &mut Vec<u8>, json: &str) {
        buf.extend_from_slice(&((json.len() + 1) as i32).to_be_bytes());
        buf.push(1);
        buf.extend_from_slice(json.as_bytes());
    }
    /// Days from 2000-01-01 of a proleptic Gregorian date.
    pub fn days_since_pg_epoch(year: i32, month: u32, day: u32) -> Option<i32> {
        let date = chrono::NaiveDate::from_ymd_opt(year, month, day)?;
        let epoch = chrono::NaiveDate::from_ymd_opt(2000, 1, 1)?;
        i32::try_from((date - epoch).num_days()).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_safe_and_unique() {
        assert_eq!(sql_identifier("Pop Est (2019)", "f"), "pop_est_2019");
        assert_eq!(sql_identifier("1st", "f"), "_1st");
        assert_eq!(sql_identifier("***", "field_3"), "field_3");
        assert_eq!(sql_identifier("Ünïcode", "f"), "n_code");
        let names = column_names(["Name", "NAME", "gid", "geom", ""]);
        assert_eq!(names, vec!["name", "name_2", "gid_2", "geom_2", "field_5"]);
        let long = "x".repeat(100);
        let names = column_names([long.as_str(), long.as_str()]);
        assert!(names.iter().all(|n| n.len() <= 63));
        assert_ne!(names[0], names[1]);
    }

    #[test]
    fn dates_count_from_2000() {
        assert_eq!(binary::days_since_pg_epoch(2000, 1, 1), Some(0));
        assert_eq!(binary::days_since_pg_epoch(1999, 12, 31), Some(-1));
        assert_eq!(binary::days_since_pg_epoch(2000, 2, 30), None);
    }
}
