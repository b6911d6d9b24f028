//! How source attributes become typed PostgreSQL columns, and how their
//! values are written in PostgreSQL's binary COPY format.
use std::collections::HashSet;

use catalog_shared::datasets::ColumnType;
use gdal_sys::{OGRFieldSubType, OGRFieldType};

/// PostgreSQL types a source attribute can land in: a part of
/// `ColumnType`, so that what is written from a file matches exactly.
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
    /// The type the dataset's record names for the column.
    pub fn column_type(self) -> ColumnType {
        match self {
            PgType::Boolean => ColumnType::Boolean,
            PgType::Integer => ColumnType::Integer,
            PgType::BigInt => ColumnType::BigInt,
            PgType::Double => ColumnType::Double,
            PgType::Text => ColumnType::Text,
            PgType::Date => ColumnType::Date,
            PgType::Time => ColumnType::Time,
            PgType::TimestampTz => ColumnType::TimestampTz,
            PgType::Bytea => ColumnType::Bytea,
            PgType::Jsonb => ColumnType::Jsonb,
        }
    }

    pub fn sql(self) -> &'static str {
        self.column_type().as_str()
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

/// What "the same value" means for a format's numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fidelity {
    /// Values are text (CSV): a number column must give back the very text
    /// (`00501`, `+5`, `1e5` or `2.0` are not the numbers' own spelling).
    Text,
    /// The format types its numbers (a GeoJSON number, a DBF numeric
    /// field): a number column must give back the same number; notation
    /// and the DBF's fixed-width padding belong to the format, not the value.
    Number,
}

/// Whether number columns of each width hold every value seen unchanged.
#[derive(Clone, Copy, Debug)]
pub struct NumericFit {
    integer: bool,
    bigint: bool,
    double: bool,
}

impl Default for NumericFit {
    fn default() -> Self {
        Self {
            integer: true,
            bigint: true,
            double: true,
        }
    }
}

impl NumericFit {
    pub fn observe(&mut self, text: &str, fidelity: Fidelity) {
        match fidelity {
            Fidelity::Text => {
                self.integer &= text.parse::<i32>().is_ok_and(|v| v.to_string() == text);
                self.bigint &= text.parse::<i64>().is_ok_and(|v| v.to_string() == text);
                // Digits without a point must be an int64 to count as a
                // number at all: longer digit strings are codes, not values.
                self.double &= (text.contains('.') || text.parse::<i64>().is_ok())
                    && text
                        .parse::<f64>()
                        .is_ok_and(|v| v.is_finite() && v.to_string() == text);
            }
            Fidelity::Number => {
                let text = text.trim();
                let Some(value) = decimal(text) else {
                    *self = NumericFit {
                        integer: false,
                        bigint: false,
                        double: false,
                    };
                    return;
                };
                let integer = value.integer_text();
                self.integer &= integer.as_deref().is_some_and(|t| t.parse::<i32>().is_ok());
                self.bigint &= integer.as_deref().is_some_and(|t| t.parse::<i64>().is_ok());
                // The double, written out to as many decimals as the file
                // wrote, must give the same number: DBF writers print a
                // double's binary expansion (10192317.300000000745058),
                // which the double holds; 0.10000000000000000000001 it does not.
                self.double &= text.parse::<f64>().is_ok_and(|v| {
                    v.is_finite()
                        && decimal_places(text)
                            .is_some_and(|places| decimal(&format!("{v:.places$}")).as_ref() == Some(&value))
                });
            }
        }
    }

    /// Whether a column of this type gives back every value seen.
    pub fn holds(&self, pg: PgType) -> bool {
        match pg {
            PgType::Integer => self.integer,
            PgType::BigInt => self.bigint,
            PgType::Double => self.double,
            _ => true,
        }
    }
}

/// A decimal number reduced to sign, significant digits and the power of
/// ten of the first digit's place, so `00501`, `501.00` and `5.01e2` compare equal.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Decimal {
    negative: bool,
    digits: String,
    exponent: i64,
}

impl Decimal {
    /// Its plain integer spelling, when it is an integer.
    fn integer_text(&self) -> Option<String> {
        if self.digits.is_empty() {
            return Some("0".into());
        }
        let zeros = usize::try_from(self.exponent - self.digits.len() as i64).ok()?;
        if zeros > 20 {
            return None;
        }
        let sign = if self.negative { "-" } else { "" };
        Some(format!("{sign}{}{}", self.digits, "0".repeat(zeros)))
    }
}

/// How many decimals a number's text gives (`1.50`: 2, `5.01e2`: 0,
/// `1e-7`: 7); none past what a double can carry.
fn decimal_places(text: &str) -> Option<usize> {
    let (mantissa, exponent) = match text.split_once(['e', 'E']) {
        Some((m, e)) => (m, e.parse::<i64>().ok()?),
        None => (text, 0),
    };
    let fraction = mantissa.split_once('.').map_or(0, |(_, f)| f.len() as i64);
    usize::try_from((fraction - exponent).max(0))
        .ok()
        .filter(|p| *p <= 1100)
}

fn decimal(text: &str) -> Option<Decimal> {
    let text = text.trim();
    let (negative, unsigned) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let (mantissa, exponent) = match unsigned.split_once(['e', 'E']) {
        Some((m, e)) => (m, e.parse::<i64>().ok().filter(|e| e.abs() < 10_000)?),
        None => (unsigned, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if whole.is_empty() && fraction.is_empty() || !whole.bytes().chain(fraction.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let all = format!("{whole}{fraction}");
    let leading = all.bytes().take_while(|b| *b == b'0').count();
    let digits = all[leading..].trim_end_matches('0').to_string();
    let exponent = if digits.is_empty() {
        0
    } else {
        whole.len() as i64 - leading as i64 + exponent
    };
    Some(Decimal {
        negative: negative && !digits.is_empty(),
        digits,
        exponent,
    })
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

/// Column names reserved for what the service adds: the key, the geometry
/// and the tiles' first zoom.
const RESERVED: [&str; 3] = ["gid", "geom", catalog_shared::generalize::FIRST_ZOOM_COLUMN];
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
    fn csv_numbers_must_keep_their_text() {
        let fit = |values: &[&str]| {
            let mut fit = NumericFit::default();
            values.iter().for_each(|v| fit.observe(v, Fidelity::Text));
            [PgType::Integer, PgType::BigInt, PgType::Double].map(|t| fit.holds(t))
        };
        assert_eq!(fit(&["501", "-7"]), [true, true, true]);
        assert_eq!(fit(&["9007199254740993"]), [false, true, false]);
        assert_eq!(fit(&["1.5", "2"]), [false, false, true]);
        for kept_as_text in [
            "00501",
            "+5",
            "1,000",
            "1e5",
            "NaN",
            "inf",
            "2.0",
            "1.50",
            "123456789012345678901234",
            "0.10000000000000000000001",
            " 5",
            "",
        ] {
            assert_eq!(fit(&["1", kept_as_text]), [false, false, false], "{kept_as_text:?}");
        }
    }

    #[test]
    fn typed_numbers_must_keep_their_value() {
        let fit = |values: &[&str]| {
            let mut fit = NumericFit::default();
            values.iter().for_each(|v| fit.observe(v, Fidelity::Number));
            [PgType::Integer, PgType::BigInt, PgType::Double].map(|t| fit.holds(t))
        };
        assert_eq!(fit(&["00501", "  42", "-0"]), [true, true, true]);
        assert_eq!(fit(&["1e5", "1.50", "5.01e2"]), [false, false, true]);
        assert_eq!(fit(&["3000000000"]), [false, true, true]);
        assert_eq!(fit(&["123456789012345678901234"]), [false, false, false]);
        assert_eq!(fit(&["0.10000000000000000000001"]), [false, false, false]);
        assert_eq!(fit(&["1338612970.000000000000000"]), [true, true, true]);
        assert_eq!(fit(&["10192317.300000000745058"]), [false, false, true]);
        assert_eq!(fit(&["1e-7", "0.30000000000000004"]), [false, false, true]);
        assert_eq!(fit(&["*****"]), [false, false, false]);
    }

    #[test]
    fn dates_count_from_2000() {
        assert_eq!(binary::days_since_pg_epoch(2000, 1, 1), Some(0));
        assert_eq!(binary::days_since_pg_epoch(1999, 12, 31), Some(-1));
        assert_eq!(binary::days_since_pg_epoch(2000, 2, 30), None);
    }
}
