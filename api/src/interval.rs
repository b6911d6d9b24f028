//! The one `datetime` of every route that takes one (OGC API items and
//! records, STAC search in the query string and the body): an RFC 3339
//! instant, or an interval `start/end` whose open ends are `..` or empty.
//! A bare date stands for its whole day (UTC). Wrong forms are a 400.
//! STAC search takes the stricter form of STAC API item-search
//! (`Interval::parse_date_times`): date-times only, and at most one end open.
use std::str::FromStr;

use catalog_shared::AppError;
use chrono::{DateTime, NaiveDate, NaiveTime, Utc};
use serde::{Deserialize, Deserializer, de};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Interval {
    /// None: open at the start.
    pub start: Option<DateTime<Utc>>,
    /// None: open at the end.
    pub end: Option<DateTime<Utc>>,
}

/// Why a `datetime` is refused: the detail of a 400.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum IntervalError {
    #[error("datetime must be an RFC 3339 instant or an interval start/end, ../end or start/..")]
    Form,
    #[error("datetime: the start of the interval must not be after its end")]
    Reversed,
    #[error(
        "datetime must be an RFC 3339 date-time (with its time and offset), an interval start/end of two, or one with a single open end (../end or start/..)"
    )]
    DateTimes,
}

impl From<IntervalError> for AppError {
    fn from(e: IntervalError) -> Self {
        AppError::bad_request(e.to_string())
    }
}

/// Which end of the day a bare date stands for.
#[derive(Clone, Copy)]
enum DayEnd {
    First,
    Last,
}

fn instant(text: &str, day_end: DayEnd) -> Result<Option<DateTime<Utc>>, IntervalError> {
    if text.is_empty() || text == ".." {
        return Ok(None);
    }
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Ok(Some(t.with_timezone(&Utc)));
    }
    let day = NaiveDate::parse_from_str(text, "%Y-%m-%d").map_err(|_| IntervalError::Form)?;
    let time = match day_end {
        DayEnd::First => NaiveTime::MIN,
        DayEnd::Last => NaiveTime::from_hms_micro_opt(23, 59, 59, 999_999).expect("a valid time"),
    };
    Ok(Some(day.and_time(time).and_utc()))
}

impl FromStr for Interval {
    type Err = IntervalError;
    fn from_str(text: &str) -> Result<Self, IntervalError> {
        let text = text.trim();
        let (start, end) = match text.split_once('/') {
            Some((a, b)) => (instant(a, DayEnd::First)?, instant(b, DayEnd::Last)?),
            None if text.is_empty() || text == ".." => return Err(IntervalError::Form),
            None => (instant(text, DayEnd::First)?, instant(text, DayEnd::Last)?),
        };
        if let (Some(start), Some(end)) = (start, end)
            && start > end
        {
            return Err(IntervalError::Reversed);
        }
        Ok(Self { start, end })
    }
}

impl Interval {
    /// The interval of a query or body value; a 400 problem when malformed.
    pub fn parse(text: &str) -> Result<Self, AppError> {
        Ok(text.parse()?)
    }

    /// The interval of STAC search's `datetime`, as STAC API item-search
    /// writes it: an RFC 3339 date-time, two of them `start/end`, or one
    /// with the other end open (`..` or empty). A bare date, an interval
    /// open at both ends (`/`, `../..`, `/..`, `../`) and every other
    /// form are a 400 problem.
    pub fn parse_date_times(text: &str) -> Result<Self, AppError> {
        Ok(Self::date_times(text)?)
    }

    fn date_times(text: &str) -> Result<Self, IntervalError> {
        let at = |text: &str| {
            DateTime::parse_from_rfc3339(text)
                .map(|t| t.with_timezone(&Utc))
                .map_err(|_| IntervalError::DateTimes)
        };
        let open = |text: &str| text.is_empty() || text == "..";
        let text = text.trim();
        let (start, end) = match text.split_once('/') {
            None => {
                let t = at(text)?;
                (Some(t), Some(t))
            }
            Some((a, b)) if open(a) && open(b) => return Err(IntervalError::DateTimes),
            Some((a, b)) => (
                (!open(a)).then(|| at(a)).transpose()?,
                (!open(b)).then(|| at(b)).transpose()?,
            ),
        };
        if let (Some(start), Some(end)) = (start, end)
            && start > end
        {
            return Err(IntervalError::Reversed);
        }
        Ok(Self { start, end })
    }
}

/// As a field of a query string or JSON body: a string in one of the forms.
impl<'de> Deserialize<'de> for Interval {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Option<DateTime<Utc>> {
        Some(DateTime::parse_from_rfc3339(text).unwrap().with_timezone(&Utc))
    }

    #[test]
    fn instants_intervals_and_open_ends() {
        let t = "2020-01-02T03:04:05Z";
        assert_eq!(
            t.parse(),
            Ok(Interval {
                start: at(t),
                end: at(t)
            })
        );
        assert_eq!(
            "2020-01-01T00:00:00+01:00/..".parse(),
            Ok(Interval {
                start: at("2019-12-31T23:00:00Z"),
                end: None
            })
        );
        assert_eq!(
            format!("/{t}").parse(),
            Ok(Interval {
                start: None,
                end: at(t)
            })
        );
        assert_eq!("../..".parse(), Ok(Interval::default()));
        assert_eq!(
            "2020-01-02".parse(),
            Ok(Interval {
                start: at("2020-01-02T00:00:00Z"),
                end: at("2020-01-02T23:59:59.999999Z")
            })
        );
    }

    #[test]
    fn wrong_forms_are_refused() {
        for text in [
            "",
            "..",
            "yesterday",
            "2020-13-01",
            "2020-01-01T00:00:00",
            "2021-01-01/2020-01-01",
            "a/b",
        ] {
            assert!(text.parse::<Interval>().is_err(), "{text:?}");
        }
    }

    #[test]
    fn stac_takes_date_times_with_one_open_end_at_most() {
        let t = "2020-01-02T03:04:05Z";
        assert_eq!(
            Interval::date_times(t),
            Ok(Interval {
                start: at(t),
                end: at(t)
            })
        );
        for (text, start, end) in [
            (format!("{t}/.."), at(t), None),
            (format!("{t}/"), at(t), None),
            (format!("../{t}"), None, at(t)),
            (format!("/{t}"), None, at(t)),
            (
                format!("{t}/2020-01-03T00:00:00+01:00"),
                at(t),
                at("2020-01-02T23:00:00Z"),
            ),
        ] {
            assert_eq!(Interval::date_times(&text), Ok(Interval { start, end }), "{text}");
        }
        for text in [
            "",
            "..",
            "/",
            "../..",
            "/..",
            "../",
            "1985-04-12",
            "1985-04-12/..",
            "../1985-04-12",
            "1985-04-12T23:20:50",
            "yesterday",
            "2020-01-02T03:04:05Z/2020-01-03T00:00:00Z/..",
        ] {
            assert_eq!(Interval::date_times(text), Err(IntervalError::DateTimes), "{text:?}");
        }
        assert_eq!(
            Interval::date_times("2021-01-01T00:00:00Z/2020-01-01T00:00:00Z"),
            Err(IntervalError::Reversed)
        );
    }
}
