//! `date` and `timestamp` (without time zone): days and microseconds counted from
//! PostgreSQL's epoch, 2000-01-01 00:00:00, on the proleptic Gregorian calendar.
//!
//! Supported range: years 1 to 294276 (PostgreSQL's timestamps end in 294276; its
//! dates go further, and both go back to 4713 BC). BC years, time zones, and the
//! special inputs `infinity`, `epoch`, `now`, `today` are not supported yet.
//!
//! `date ± interval` yields a timestamp in PostgreSQL ([`Date::add_interval`]); the
//! SQL layer should type it that way and compare dates with timestamps by promoting
//! the date, as [`super::Value::cmp_sql`] does, so that TPC-H's `l_shipdate <= date
//! '1998-12-01' - interval '90' day` works. [`Date::add_interval_as_date`] gives the
//! same instant as a date when the interval has no time part, for constant folding.

use std::fmt;

use super::decimal::Decimal;
use super::error::{Error, Result};
use super::interval::{
    Interval, MICROS_PER_DAY, MICROS_PER_HOUR, MICROS_PER_MINUTE, MICROS_PER_SECOND,
    fraction_to_micros,
};

/// Days from 1970-01-01 to 2000-01-01.
const UNIX_TO_PG_DAYS: i64 = 10_957;
const MIN_YEAR: i64 = 1;
const MAX_YEAR: i64 = 294_276;

/// Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm; exact for every
/// `i64` year that does not overflow).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = month as i64;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + day as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date of a day count since 1970-01-01.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + if month <= 2 { 1 } else { 0 };
    (year, month, day)
}

fn is_leap(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

/// The number of days of a month (1-based).
pub fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if is_leap(year) => 29,
        _ => 28,
    }
}

const MIN_DAYS: i64 = -730_119; // 0001-01-01 − 2000-01-01
const MAX_DAYS: i64 = 106_751_982; // 294276-12-31 − 2000-01-01

/// A calendar date: days since 2000-01-01.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Date(pub i32);

/// A date and time without time zone: microseconds since 2000-01-01 00:00:00.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(pub i64);

/// A field `extract` can take from a date, timestamp or interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DateField {
    Millennium,
    Century,
    Decade,
    Year,
    Quarter,
    Month,
    Day,
    /// Day of the week, 0 = Sunday.
    Dow,
    /// Day of the week, 1 = Monday … 7 = Sunday.
    IsoDow,
    /// Day of the year, 1-based.
    Doy,
    Hour,
    Minute,
    /// Seconds including the fraction (scale 6).
    Second,
    Milliseconds,
    Microseconds,
    /// Seconds since 1970-01-01 00:00:00.
    Epoch,
}

impl DateField {
    /// The field named in `extract(<name> from …)`, case-insensitive, with
    /// PostgreSQL's plural and abbreviated spellings.
    pub fn parse(name: &str) -> Option<DateField> {
        Some(match name.to_ascii_lowercase().as_str() {
            "millennium" | "millennia" | "millenniums" => DateField::Millennium,
            "century" | "centuries" => DateField::Century,
            "decade" | "decades" => DateField::Decade,
            "year" | "years" | "y" | "yr" | "yrs" => DateField::Year,
            "quarter" => DateField::Quarter,
            "month" | "months" | "mon" | "mons" => DateField::Month,
            "day" | "days" | "d" => DateField::Day,
            "dow" => DateField::Dow,
            "isodow" => DateField::IsoDow,
            "doy" => DateField::Doy,
            "hour" | "hours" | "h" | "hr" | "hrs" => DateField::Hour,
            "minute" | "minutes" | "m" | "min" | "mins" => DateField::Minute,
            "second" | "seconds" | "s" | "sec" | "secs" => DateField::Second,
            "millisecond" | "milliseconds" | "ms" | "msec" | "msecs" => DateField::Milliseconds,
            "microsecond" | "microseconds" | "us" | "usec" | "usecs" => DateField::Microseconds,
            "epoch" => DateField::Epoch,
            _ => return None,
        })
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            DateField::Millennium => "millennium",
            DateField::Century => "century",
            DateField::Decade => "decade",
            DateField::Year => "year",
            DateField::Quarter => "quarter",
            DateField::Month => "month",
            DateField::Day => "day",
            DateField::Dow => "dow",
            DateField::IsoDow => "isodow",
            DateField::Doy => "doy",
            DateField::Hour => "hour",
            DateField::Minute => "minute",
            DateField::Second => "second",
            DateField::Milliseconds => "milliseconds",
            DateField::Microseconds => "microseconds",
            DateField::Epoch => "epoch",
        }
    }
}

/// Parses `Y…Y-M[M]-D[D]` (four to six year digits) into its numbers, or `None` when
/// the text does not have that shape.
fn parse_ymd(s: &str) -> Option<(i64, u32, u32)> {
    // ISO's compact form, YYYYMMDD.
    if s.len() == 8 && s.bytes().all(|b| b.is_ascii_digit()) {
        return Some((s[..4].parse().ok()?, s[4..6].parse().ok()?, s[6..].parse().ok()?));
    }
    // `-` or `/` between the fields, the same one twice.
    let sep = if s.contains('/') { '/' } else { '-' };
    let mut parts = s.split(sep);
    let (y, m, d) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let digits = |p: &str, min: usize, max: usize| {
        (p.len() >= min && p.len() <= max && p.bytes().all(|b| b.is_ascii_digit()))
            .then(|| p.parse::<i64>().ok())
            .flatten()
    };
    Some((
        digits(y, 4, 6)?,
        digits(m, 1, 2)? as u32,
        digits(d, 1, 2)? as u32,
    ))
}

/// Checks the fields of a date; the days since 2000-01-01, or `None` when a field is
/// out of range.
fn checked_days(year: i64, month: u32, day: u32) -> Option<i64> {
    if !(MIN_YEAR..=MAX_YEAR).contains(&year)
        || !(1..=12).contains(&month)
        || day < 1
        || day > days_in_month(year, month)
    {
        return None;
    }
    Some(days_from_civil(year, month, day) - UNIX_TO_PG_DAYS)
}

fn weekday_sunday0(days: i64) -> i64 {
    // 2000-01-01 was a Saturday (6).
    (days + 6).rem_euclid(7)
}

impl Date {
    /// The date of a year, month and day; `None` when they name no supported date.
    pub fn from_ymd(year: i64, month: u32, day: u32) -> Option<Date> {
        checked_days(year, month, day).map(|d| Date(d as i32))
    }

    /// Parses `YYYY-MM-DD` (also `YYYY-M-D`, `YYYY/MM/DD` and `YYYYMMDD`), surrounding
    /// whitespace ignored.
    pub fn parse(text: &str) -> Result<Date> {
        let s = text.trim_matches(|c: char| c.is_ascii_whitespace());
        let (y, m, d) = parse_ymd(s).ok_or_else(|| Error::syntax("date", text))?;
        Date::from_ymd(y, m, d).ok_or_else(|| Error::DateTimeFieldOutOfRange {
            input: text.to_string(),
        })
    }

    /// Year, month (1–12) and day (1–31).
    pub fn ymd(self) -> (i64, u32, u32) {
        civil_from_days(self.0 as i64 + UNIX_TO_PG_DAYS)
    }

    fn from_days(days: i64) -> Result<Date> {
        if (MIN_DAYS..=MAX_DAYS).contains(&days) {
            Ok(Date(days as i32))
        } else {
            Err(Error::DateTimeOutOfRange { what: "date" })
        }
    }

    /// `date + integer`: the date `days` later.
    pub fn add_days(self, days: i64) -> Result<Date> {
        Date::from_days((self.0 as i64).saturating_add(days))
    }

    /// `date - integer`: the date `days` earlier.
    pub fn sub_days(self, days: i64) -> Result<Date> {
        Date::from_days((self.0 as i64).saturating_sub(days))
    }

    /// `date - date`: the number of days between them.
    pub fn days_since(self, other: Date) -> i32 {
        // Both lie within ±2^27 days, so the difference fits.
        self.0 - other.0
    }

    /// The timestamp at midnight of this date (always in range).
    pub fn to_timestamp(self) -> Timestamp {
        Timestamp(self.0 as i64 * MICROS_PER_DAY)
    }

    /// `date + interval` as PostgreSQL types it: a timestamp.
    pub fn add_interval(self, interval: &Interval) -> Result<Timestamp> {
        self.to_timestamp().add_interval(interval)
    }

    /// `date - interval` as PostgreSQL types it: a timestamp.
    pub fn sub_interval(self, interval: &Interval) -> Result<Timestamp> {
        self.to_timestamp().sub_interval(interval)
    }

    /// `date + interval` as a date, when the interval has no time part (`None`
    /// otherwise): months first with end-of-month clamping, then days, exactly as the
    /// timestamp [`Date::add_interval`] gives at midnight.
    pub fn add_interval_as_date(self, interval: &Interval) -> Option<Result<Date>> {
        if interval.micros != 0 {
            return None;
        }
        Some(
            self.add_interval(interval)
                .and_then(|ts| Date::from_days(ts.0.div_euclid(MICROS_PER_DAY))),
        )
    }

    /// PostgreSQL's `extract(field from date)`, as a numeric.
    pub fn extract(self, field: DateField) -> Result<Decimal> {
        let (year, month, day) = self.ymd();
        let days = self.0 as i64;
        let v = match field {
            DateField::Epoch => (days + UNIX_TO_PG_DAYS) * 86_400,
            DateField::Hour
            | DateField::Minute
            | DateField::Second
            | DateField::Milliseconds
            | DateField::Microseconds => {
                return Err(Error::UnsupportedField {
                    unit: field.name().to_string(),
                    type_name: "date",
                });
            }
            _ => return Ok(date_field(year, month, day, days, field)),
        };
        Ok(Decimal::from_i64(v))
    }
}

/// The calendar fields common to dates and timestamps.
fn date_field(year: i64, month: u32, day: u32, days: i64, field: DateField) -> Decimal {
    let v = match field {
        DateField::Millennium => (year + 999) / 1000,
        DateField::Century => (year + 99) / 100,
        DateField::Decade => year / 10,
        DateField::Year => year,
        DateField::Quarter => (month as i64 - 1) / 3 + 1,
        DateField::Month => month as i64,
        DateField::Day => day as i64,
        DateField::Dow => weekday_sunday0(days),
        DateField::IsoDow => match weekday_sunday0(days) {
            0 => 7,
            d => d,
        },
        DateField::Doy => days_from_civil(year, month, day) - days_from_civil(year, 1, 1) + 1,
        _ => 0,
    };
    Decimal::from_i64(v)
}

impl fmt::Display for Date {
    /// `YYYY-MM-DD`, as PostgreSQL's ISO date style.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (y, m, d) = self.ymd();
        write!(f, "{y:04}-{m:02}-{d:02}")
    }
}

const MIN_MICROS: i64 = MIN_DAYS * MICROS_PER_DAY;
const MAX_MICROS: i64 = (MAX_DAYS + 1) * MICROS_PER_DAY - 1;

fn ts_out_of_range() -> Error {
    Error::DateTimeOutOfRange { what: "timestamp" }
}

impl Timestamp {
    fn checked(micros: i64) -> Result<Timestamp> {
        if (MIN_MICROS..=MAX_MICROS).contains(&micros) {
            Ok(Timestamp(micros))
        } else {
            Err(ts_out_of_range())
        }
    }

    /// The timestamp of a date and a time of day; `None` when a field is out of range.
    pub fn from_parts(
        year: i64,
        month: u32,
        day: u32,
        hour: u32,
        minute: u32,
        second: u32,
        micros: u32,
    ) -> Option<Timestamp> {
        if hour > 23 || minute > 59 || second > 59 || micros > 999_999 {
            return None;
        }
        let days = checked_days(year, month, day)?;
        let time = hour as i64 * MICROS_PER_HOUR
            + minute as i64 * MICROS_PER_MINUTE
            + second as i64 * MICROS_PER_SECOND
            + micros as i64;
        Some(Timestamp(days * MICROS_PER_DAY + time))
    }

    /// Parses `YYYY-MM-DD[( |T)HH:MM[:SS[.ffffff]]]`; more than six fractional digits
    /// round to the microsecond.
    pub fn parse(text: &str) -> Result<Timestamp> {
        let bad = || Error::syntax("timestamp", text);
        let range = || Error::DateTimeFieldOutOfRange {
            input: text.to_string(),
        };
        let s = text.trim_matches(|c: char| c.is_ascii_whitespace());
        let (date, time) = match s.find([' ', 'T', 't']) {
            Some(i) => (&s[..i], s[i + 1..].trim_start_matches(' ')),
            None => (s, ""),
        };
        let (y, m, d) = parse_ymd(date).ok_or_else(bad)?;
        let days = checked_days(y, m, d).ok_or_else(range)?;
        let mut micros = 0i64;
        if !time.is_empty() {
            let parts: Vec<&str> = time.split(':').collect();
            if parts.len() < 2 || parts.len() > 3 {
                return Err(bad());
            }
            let two = |p: &str| {
                (!p.is_empty() && p.len() <= 2 && p.bytes().all(|b| b.is_ascii_digit()))
                    .then(|| p.parse::<i64>().ok())
                    .flatten()
            };
            let hour = two(parts[0]).ok_or_else(bad)?;
            let minute = two(parts[1]).ok_or_else(bad)?;
            let (second, fraction) = match parts.get(2) {
                Some(p) => {
                    let (sec, frac) = p.split_once('.').unwrap_or((p, ""));
                    let sec = two(sec).ok_or_else(bad)?;
                    (sec, fraction_to_micros(frac).ok_or_else(bad)?)
                }
                None => (0, 0),
            };
            if hour > 23 || minute > 59 || second > 59 {
                return Err(range());
            }
            micros = hour * MICROS_PER_HOUR
                + minute * MICROS_PER_MINUTE
                + second * MICROS_PER_SECOND
                + fraction;
        }
        Timestamp::checked(days * MICROS_PER_DAY + micros)
    }

    /// The date part (the day the timestamp falls in).
    pub fn date(self) -> Date {
        Date(self.0.div_euclid(MICROS_PER_DAY) as i32)
    }

    /// Microseconds since midnight.
    pub fn time_of_day(self) -> i64 {
        self.0.rem_euclid(MICROS_PER_DAY)
    }

    /// `timestamp + interval` as PostgreSQL's `timestamp_pl_interval`: months first
    /// (the day clamped to the end of the resulting month: January 31 + 1 month =
    /// February 28 or 29), then days, then microseconds.
    pub fn add_interval(self, interval: &Interval) -> Result<Timestamp> {
        let mut micros = self.0;
        if interval.months != 0 {
            let (year, month, day) = self.date().ymd();
            let total = year * 12 + (month as i64 - 1) + interval.months as i64;
            let (ny, nm) = (total.div_euclid(12), (total.rem_euclid(12) + 1) as u32);
            let nd = day.min(days_in_month(ny, nm));
            let days = checked_days(ny, nm, nd).ok_or_else(ts_out_of_range)?;
            micros = days * MICROS_PER_DAY + self.time_of_day();
        }
        micros = (interval.days as i64)
            .checked_mul(MICROS_PER_DAY)
            .and_then(|d| micros.checked_add(d))
            .and_then(|m| m.checked_add(interval.micros))
            .ok_or_else(ts_out_of_range)?;
        Timestamp::checked(micros)
    }

    /// `timestamp - interval`: adding the negated interval, as PostgreSQL does.
    pub fn sub_interval(self, interval: &Interval) -> Result<Timestamp> {
        self.add_interval(&interval.checked_neg()?)
    }

    /// `timestamp - timestamp` as PostgreSQL's `timestamp_mi`: whole days and the
    /// remaining microseconds, both with the sign of the difference; never months.
    pub fn sub_timestamp(self, other: Timestamp) -> Result<Interval> {
        let diff = self
            .0
            .checked_sub(other.0)
            .ok_or(Error::DateTimeOutOfRange { what: "interval" })?;
        let days = i32::try_from(diff / MICROS_PER_DAY)
            .map_err(|_| Error::DateTimeOutOfRange { what: "interval" })?;
        Ok(Interval::new(0, days, diff % MICROS_PER_DAY))
    }

    /// PostgreSQL's `extract(field from timestamp)`, as a numeric: seconds and epoch
    /// with six fractional digits, milliseconds with three, as PostgreSQL 14+.
    pub fn extract(self, field: DateField) -> Result<Decimal> {
        let time = self.time_of_day();
        let sec_micros = time % MICROS_PER_MINUTE;
        let v = match field {
            DateField::Hour => Decimal::from_i64(time / MICROS_PER_HOUR),
            DateField::Minute => Decimal::from_i64(time / MICROS_PER_MINUTE % 60),
            DateField::Second => Decimal::new(sec_micros as i128, 6)?,
            DateField::Milliseconds => Decimal::new(sec_micros as i128, 3)?,
            DateField::Microseconds => Decimal::from_i64(sec_micros),
            DateField::Epoch => Decimal::new(
                self.0 as i128 + UNIX_TO_PG_DAYS as i128 * MICROS_PER_DAY as i128,
                6,
            )?,
            _ => {
                let date = self.date();
                let (y, m, d) = date.ymd();
                date_field(y, m, d, date.0 as i64, field)
            }
        };
        Ok(v)
    }
}

impl fmt::Display for Timestamp {
    /// `YYYY-MM-DD HH:MM:SS`, with `.ffffff` (trailing zeros trimmed) only when the
    /// fraction is not zero, as PostgreSQL prints timestamps.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let time = self.time_of_day();
        let (h, m, s) = (
            time / MICROS_PER_HOUR,
            time / MICROS_PER_MINUTE % 60,
            time / MICROS_PER_SECOND % 60,
        );
        write!(f, "{} {h:02}:{m:02}:{s:02}", self.date())?;
        let fraction = time % MICROS_PER_SECOND;
        if fraction != 0 {
            let digits = format!("{fraction:06}");
            write!(f, ".{}", digits.trim_end_matches('0'))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn date(s: &str) -> Date {
        Date::parse(s).unwrap()
    }
    fn ts(s: &str) -> Timestamp {
        Timestamp::parse(s).unwrap()
    }
    fn iv(s: &str) -> Interval {
        Interval::parse(s).unwrap()
    }

    #[test]
    fn date_input_and_output() {
        assert_eq!(date("2000-01-01"), Date(0));
        assert_eq!(date("1999-12-31"), Date(-1));
        assert_eq!(date("2024-1-5").to_string(), "2024-01-05");
        assert_eq!(date(" 2024-02-29 ").to_string(), "2024-02-29");
        assert_eq!(date("0001-01-01").0 as i64, MIN_DAYS);
        assert_eq!(date("294276-12-31").0 as i64, MAX_DAYS);
        assert_eq!(
            Date::parse("2024-02-30").unwrap_err().to_string(),
            "date/time field value out of range: \"2024-02-30\""
        );
        for bad in [
            "2023-02-29",
            "1900-02-29",
            "2024-13-01",
            "2024-04-31",
            "2024-00-10",
            "0000-01-01",
        ] {
            assert!(
                matches!(Date::parse(bad), Err(Error::DateTimeFieldOutOfRange { .. })),
                "{bad}"
            );
        }
        assert!(Date::parse("2000-02-29").is_ok());
        for bad in [
            "",
            "2024",
            "2024-01",
            "24-01-01",
            "2024/01-01",
            "2024-01-01x",
            "abc",
        ] {
            assert_eq!(Date::parse(bad), Err(Error::syntax("date", bad)), "{bad:?}");
        }
        // PostgreSQL also reads slashes and the compact ISO form.
        assert_eq!(Date::parse("2024/01/02"), Date::parse("2024-01-02"));
        assert_eq!(Date::parse("20240102"), Date::parse("2024-01-02"));
        assert!(matches!(Date::parse("2024/13/45"), Err(Error::DateTimeFieldOutOfRange { .. })));
    }

    #[test]
    fn date_arithmetic() {
        // select date '2000-03-01' - date '2000-02-01' → 29
        assert_eq!(date("2000-03-01").days_since(date("2000-02-01")), 29);
        assert_eq!(date("2024-12-31").add_days(1).unwrap(), date("2025-01-01"));
        assert_eq!(date("2024-03-01").sub_days(1).unwrap(), date("2024-02-29"));
        assert!(date("294276-12-31").add_days(1).is_err());
        assert!(date("0001-01-01").sub_days(1).is_err());
        assert!(date("2000-01-01").add_days(i64::MAX).is_err());
        // select date '1998-12-01' - interval '90' day → 1998-09-02 00:00:00
        let ninety = Interval::parse_with_field("90", super::super::IntervalField::Day).unwrap();
        assert_eq!(
            date("1998-12-01")
                .sub_interval(&ninety)
                .unwrap()
                .to_string(),
            "1998-09-02 00:00:00"
        );
        assert_eq!(
            date("1998-12-01")
                .add_interval_as_date(&ninety.checked_neg().unwrap())
                .unwrap()
                .unwrap(),
            date("1998-09-02")
        );
        assert_eq!(
            date("1995-01-31")
                .add_interval_as_date(&iv("1 month"))
                .unwrap()
                .unwrap(),
            date("1995-02-28")
        );
        assert!(
            date("1995-01-31")
                .add_interval_as_date(&iv("1 hour"))
                .is_none()
        );
        assert_eq!(
            date("2000-01-01")
                .add_interval(&iv("1 day 02:00"))
                .unwrap()
                .to_string(),
            "2000-01-02 02:00:00"
        );
    }

    #[test]
    fn date_extract() {
        let d = date("2024-03-15"); // a Friday
        let x = |f| d.extract(f).unwrap().to_string();
        assert_eq!(x(DateField::Year), "2024");
        assert_eq!(x(DateField::Month), "3");
        assert_eq!(x(DateField::Day), "15");
        assert_eq!(x(DateField::Dow), "5");
        assert_eq!(x(DateField::IsoDow), "5");
        assert_eq!(x(DateField::Doy), "75");
        assert_eq!(x(DateField::Quarter), "1");
        assert_eq!(x(DateField::Century), "21");
        assert_eq!(x(DateField::Epoch), "1710460800");
        assert_eq!(
            date("2000-01-02")
                .extract(DateField::Dow)
                .unwrap()
                .to_string(),
            "0"
        );
        assert_eq!(
            date("2000-01-02")
                .extract(DateField::IsoDow)
                .unwrap()
                .to_string(),
            "7"
        );
        assert_eq!(
            date("2000-12-31")
                .extract(DateField::Doy)
                .unwrap()
                .to_string(),
            "366"
        );
        assert_eq!(
            d.extract(DateField::Hour).unwrap_err().to_string(),
            "unit \"hour\" not supported for type date"
        );
        assert_eq!(DateField::parse("YEAR"), Some(DateField::Year));
        assert_eq!(DateField::parse("fortnight"), None);
    }

    #[test]
    fn timestamp_input_and_output() {
        assert_eq!(ts("2024-01-05 10:30:00").to_string(), "2024-01-05 10:30:00");
        assert_eq!(ts("2024-01-05T10:30").to_string(), "2024-01-05 10:30:00");
        assert_eq!(
            ts("2024-01-05 10:30:00.500").to_string(),
            "2024-01-05 10:30:00.5"
        );
        assert_eq!(
            ts("2024-01-05 10:30:00.123456").to_string(),
            "2024-01-05 10:30:00.123456"
        );
        assert_eq!(
            ts("2024-01-05 23:59:59.9999999").to_string(),
            "2024-01-06 00:00:00"
        );
        assert_eq!(ts("2000-01-31").to_string(), "2000-01-31 00:00:00");
        assert_eq!(ts("2000-01-01 00:00:00"), Timestamp(0));
        assert_eq!(ts("1999-12-31 23:59:59.999999"), Timestamp(-1));
        assert!(matches!(
            Timestamp::parse("2024-01-05 24:00:00"),
            Err(Error::DateTimeFieldOutOfRange { .. })
        ));
        assert!(matches!(
            Timestamp::parse("2024-02-30 10:00:00"),
            Err(Error::DateTimeFieldOutOfRange { .. })
        ));
        for bad in [
            "2024-01-05 10",
            "2024-01-05 10:3a",
            "2024-01-05 10:30:00.x",
            "x",
            "2024-01-05 1:2:3:4",
        ] {
            assert!(
                matches!(Timestamp::parse(bad), Err(Error::InvalidSyntax { .. })),
                "{bad:?}"
            );
        }
        assert!(Timestamp::parse("294276-12-31 23:59:59.9999999").is_err());
    }

    #[test]
    fn timestamp_arithmetic() {
        // select timestamp '2000-01-31' + interval '1 month' → 2000-02-29 00:00:00
        assert_eq!(
            ts("2000-01-31")
                .add_interval(&iv("1 month"))
                .unwrap()
                .to_string(),
            "2000-02-29 00:00:00"
        );
        assert_eq!(
            ts("2001-01-31")
                .add_interval(&iv("1 month"))
                .unwrap()
                .to_string(),
            "2001-02-28 00:00:00"
        );
        assert_eq!(
            ts("2000-03-31")
                .sub_interval(&iv("1 month"))
                .unwrap()
                .to_string(),
            "2000-02-29 00:00:00"
        );
        // Months, then days: Jan 31 + (1 month 1 day) = Feb 29 + 1 day = Mar 1.
        assert_eq!(
            ts("2000-01-31 12:00")
                .add_interval(&iv("1 mon 1 day 1 hour"))
                .unwrap()
                .to_string(),
            "2000-03-01 13:00:00"
        );
        assert_eq!(
            ts("2000-01-01")
                .add_interval(&iv("-1 year"))
                .unwrap()
                .to_string(),
            "1999-01-01 00:00:00"
        );
        assert!(ts("294276-12-31").add_interval(&iv("1 day")).is_err());
        assert!(ts("0001-01-01").add_interval(&iv("-1 month")).is_err());
        let d = ts("2024-03-02 06:00")
            .sub_timestamp(ts("2024-02-28 12:00"))
            .unwrap();
        assert_eq!(d.to_string(), "2 days 18:00:00");
        let d = ts("2024-02-28 12:00")
            .sub_timestamp(ts("2024-03-02 06:00"))
            .unwrap();
        assert_eq!(d.to_string(), "-2 days -18:00:00");
        // The span of the whole range does not fit 64-bit microseconds, as in PostgreSQL.
        assert!(ts("294276-12-31").sub_timestamp(ts("0001-01-01")).is_err());
        assert!(ts("294276-12-31").sub_timestamp(ts("2000-01-01")).is_ok());
    }

    #[test]
    fn timestamp_extract() {
        let t = ts("2000-01-01 10:30:05.5");
        let x = |f| t.extract(f).unwrap().to_string();
        assert_eq!(x(DateField::Hour), "10");
        assert_eq!(x(DateField::Minute), "30");
        assert_eq!(x(DateField::Second), "5.500000");
        assert_eq!(x(DateField::Milliseconds), "5500.000");
        assert_eq!(x(DateField::Microseconds), "5500000");
        assert_eq!(x(DateField::Year), "2000");
        assert_eq!(x(DateField::Dow), "6");
        assert_eq!(
            ts("2000-01-01")
                .extract(DateField::Epoch)
                .unwrap()
                .to_string(),
            "946684800.000000"
        );
    }

    #[test]
    fn calendar_round_trips() {
        for days in (MIN_DAYS..=MAX_DAYS).step_by(9973) {
            let (y, m, d) = Date(days as i32).ymd();
            assert_eq!(checked_days(y, m, d), Some(days));
        }
    }
}
