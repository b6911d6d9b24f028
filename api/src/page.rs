//! The page of a list: `limit` (1 to `MAX`, `DEFAULT` when absent) and
//! `offset` (not negative, 0 when absent). Each checks itself as it is
//! read, so every list route refuses a bad page alike: the 400 problem of
//! its query extractor, naming the bounds.
use serde::{Deserialize, Deserializer, Serialize, Serializer, de::Error as _};

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Limit<const DEFAULT: i64, const MAX: i64>(i64);

impl<const DEFAULT: i64, const MAX: i64> Limit<DEFAULT, MAX> {
    pub fn new(value: i64) -> Result<Self, String> {
        if (1..=MAX).contains(&value) {
            Ok(Self(value))
        } else {
            Err(format!("limit must be from 1 to {MAX}"))
        }
    }

    pub fn get(self) -> i64 {
        self.0
    }
}

impl<const DEFAULT: i64, const MAX: i64> Default for Limit<DEFAULT, MAX> {
    fn default() -> Self {
        Self(DEFAULT)
    }
}

// A null (as a saved search keeps an unset limit) is the default.
impl<'de, const DEFAULT: i64, const MAX: i64> Deserialize<'de> for Limit<DEFAULT, MAX> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Option::<i64>::deserialize(deserializer)?
            .map_or(Ok(Self::default()), |n| Self::new(n).map_err(D::Error::custom))
    }
}

impl<const DEFAULT: i64, const MAX: i64> Serialize for Limit<DEFAULT, MAX> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Offset(i64);

impl Offset {
    pub fn get(self) -> i64 {
        self.0
    }
}

impl<'de> Deserialize<'de> for Offset {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Option::<i64>::deserialize(deserializer)? {
            None => Ok(Self::default()),
            Some(n) if n >= 0 => Ok(Self(n)),
            Some(_) => Err(D::Error::custom("offset must not be negative")),
        }
    }
}

impl Serialize for Offset {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct Page {
        #[serde(default)]
        limit: Limit<10, 200>,
        #[serde(default)]
        offset: Offset,
    }

    /// The page as the query extractor reads it, or the detail of its
    /// problem.
    fn parse(query: &str) -> Result<(i64, i64), String> {
        let uri: axum::http::Uri = format!("/list?{query}").parse().unwrap();
        #[allow(clippy::disallowed_types)]
        let page = axum::extract::Query::<Page>::try_from_uri(&uri);
        page.map(|q| (q.0.limit.get(), q.0.offset.get()))
            .map_err(|e| catalog_shared::AppError::from(e).problem.detail)
    }

    #[test]
    fn a_page_takes_its_defaults_and_refuses_what_is_out_of_range() {
        assert_eq!(parse(""), Ok((10, 0)));
        assert_eq!(parse("limit=200&offset=7"), Ok((200, 7)));
        assert_eq!(parse("limit=1"), Ok((1, 0)));
        for (query, message) in [
            ("limit=0", "limit must be from 1 to 200"),
            ("limit=201", "limit must be from 1 to 200"),
            ("limit=-3", "limit must be from 1 to 200"),
            ("offset=-1", "offset must not be negative"),
        ] {
            let detail = parse(query).unwrap_err();
            assert!(detail.ends_with(message), "{query}: {detail}");
        }
        assert!(parse("limit=many").is_err());
        assert!(parse("limit=99999999999999999999").is_err());
    }
}
