//! `interval`: a span of months, days and microseconds kept apart, as PostgreSQL keeps
//! them, because a month has no fixed number of days and a day (across a daylight
//! saving change, in time zones BeeDB does not have yet) no fixed number of
//! microseconds. Ordering and equality compare the total span with 1 month = 30 days
//! and 1 day = 24 hours, as PostgreSQL's `interval_cmp`: `'1 month' = '30 days'`.

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};

use super::datetime::DateField;
use super::decimal::Decimal;
use super::error::{Error, Result};

/// Microseconds in a second, minute, hour and day.
pub const MICROS_PER_SECOND: i64 = 1_000_000;
pub const MICROS_PER_MINUTE: i64 = 60 * MICROS_PER_SECOND;
pub const MICROS_PER_HOUR: i64 = 60 * MICROS_PER_MINUTE;
pub const MICROS_PER_DAY: i64 = 24 * MICROS_PER_HOUR;

fn out_of_range() -> Error {
    Error::DateTimeOutOfRange { what: "interval" }
}

/// A PostgreSQL interval: months, days and microseconds, each with its own sign.
#[derive(Debug, Clone, Copy, Default)]
pub struct Interval {
    pub months: i32,
    pub days: i32,
    pub micros: i64,
}

/// The unit an SQL-standard interval literal names after its string (`interval '3'
/// month`): a bare number counts in this unit, and fields below it are dropped, as
/// PostgreSQL's interval type modifiers do. Ranges such as `day to second` are left to
/// the parser, which can pass their last field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntervalField {
    Year,
    Month,
    Day,
    Hour,
    Minute,
    Second,
}

/// A parsed amount: the integer part and the fractional part, both with the sign.
#[derive(Clone, Copy)]
struct Amount {
    whole: i64,
    frac: f64,
}

/// Running totals while parsing, in wide integers so that overflow is detected once.
#[derive(Default)]
struct Totals {
    months: i64,
    days: i64,
    micros: i64,
}

impl Totals {
    fn add_months(&mut self, v: i64) -> Option<()> {
        self.months = self.months.checked_add(v)?;
        Some(())
    }
    fn add_days(&mut self, v: i64) -> Option<()> {
        self.days = self.days.checked_add(v)?;
        Some(())
    }
    fn add_micros(&mut self, v: i64) -> Option<()> {
        self.micros = self.micros.checked_add(v)?;
        Some(())
    }
    /// Adds a fraction of a day as microseconds.
    fn add_day_fraction(&mut self, days: f64) -> Option<()> {
        let whole = days.trunc();
        self.add_days(f64_to_i64(whole)?)?;
        self.add_micros(f64_to_i64(
            ((days - whole) * MICROS_PER_DAY as f64).round_ties_even(),
        )?)
    }

    /// Adds `amount` of `unit`, spilling fractions to the smaller fields as PostgreSQL
    /// does: a fraction of a year becomes months (rounded), of a month 30-day days and
    /// then microseconds, of a week or day microseconds.
    fn add(&mut self, amount: Amount, unit: Unit) -> Option<()> {
        match unit {
            Unit::Micros(factor) => {
                self.add_micros(amount.whole.checked_mul(factor)?)?;
                self.add_micros(f64_to_i64((amount.frac * factor as f64).round_ties_even())?)
            }
            Unit::Days(factor) => {
                self.add_days(amount.whole.checked_mul(factor)?)?;
                self.add_day_fraction(amount.frac * factor as f64)
            }
            Unit::Months(factor) => {
                self.add_months(amount.whole.checked_mul(factor)?)?;
                if factor == 1 {
                    self.add_day_fraction(amount.frac * 30.0)
                } else {
                    self.add_months(f64_to_i64((amount.frac * factor as f64).round_ties_even())?)
                }
            }
        }
    }
}

fn f64_to_i64(v: f64) -> Option<i64> {
    (v.is_finite() && v.abs() < 9.2e18).then_some(v as i64)
}

#[derive(Clone, Copy)]
enum Unit {
    Micros(i64),
    Days(i64),
    Months(i64),
}

fn unit_of(word: &str) -> Option<Unit> {
    Some(match word {
        "us" | "usec" | "usecs" | "microsecond" | "microseconds" => Unit::Micros(1),
        "ms" | "msec" | "msecs" | "millisecond" | "milliseconds" => Unit::Micros(1000),
        "s" | "sec" | "secs" | "second" | "seconds" => Unit::Micros(MICROS_PER_SECOND),
        "m" | "min" | "mins" | "minute" | "minutes" => Unit::Micros(MICROS_PER_MINUTE),
        "h" | "hr" | "hrs" | "hour" | "hours" => Unit::Micros(MICROS_PER_HOUR),
        "d" | "day" | "days" => Unit::Days(1),
        "w" | "week" | "weeks" => Unit::Days(7),
        "mon" | "mons" | "month" | "months" => Unit::Months(1),
        "y" | "yr" | "yrs" | "year" | "years" => Unit::Months(12),
        "decade" | "decades" => Unit::Months(120),
        "c" | "cent" | "century" | "centuries" => Unit::Months(1200),
        "millennium" | "millennia" | "millenniums" => Unit::Months(12000),
        _ => return None,
    })
}

fn field_unit(field: IntervalField) -> Unit {
    match field {
        IntervalField::Year => Unit::Months(12),
        IntervalField::Month => Unit::Months(1),
        IntervalField::Day => Unit::Days(1),
        IntervalField::Hour => Unit::Micros(MICROS_PER_HOUR),
        IntervalField::Minute => Unit::Micros(MICROS_PER_MINUTE),
        IntervalField::Second => Unit::Micros(MICROS_PER_SECOND),
    }
}

/// Parses `[+-]digits[.digits]`.
fn parse_amount(token: &str) -> Option<Amount> {
    let (negative, rest) = match token.as_bytes().first()? {
        b'-' => (true, &token[1..]),
        b'+' => (false, &token[1..]),
        _ => (false, token),
    };
    let (int, frac) = rest.split_once('.').unwrap_or((rest, ""));
    if (int.is_empty() && frac.is_empty())
        || !int.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let mut whole: i64 = 0;
    for b in int.bytes() {
        whole = whole.checked_mul(10)?.checked_add((b - b'0') as i64)?;
    }
    // Beyond 17 digits a fraction no longer changes a double.
    let frac_digits = &frac[..frac.len().min(17)];
    let frac: f64 = if frac_digits.is_empty() {
        0.0
    } else {
        format!("0.{frac_digits}").parse().ok()?
    };
    Some(if negative {
        Amount {
            whole: -whole,
            frac: -frac,
        }
    } else {
        Amount { whole, frac }
    })
}

/// Parses `[+-]h:m[:s[.f]]` into microseconds.
fn parse_time(token: &str) -> Option<i64> {
    let (negative, rest) = match token.as_bytes().first()? {
        b'-' => (true, &token[1..]),
        b'+' => (false, &token[1..]),
        _ => (false, token),
    };
    let parts: Vec<&str> = rest.split(':').collect();
    if parts.len() < 2 || parts.len() > 3 {
        return None;
    }
    let int = |s: &str| -> Option<i64> {
        if s.is_empty() || s.len() > 18 || !s.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        s.parse().ok()
    };
    let hours = int(parts[0])?;
    let minutes = int(parts[1])?;
    if minutes > 59 {
        return None;
    }
    // Accumulate in i128 so that the most negative interval (whose magnitude exceeds
    // i64::MAX by one) reads back.
    let mut micros =
        hours as i128 * MICROS_PER_HOUR as i128 + (minutes * MICROS_PER_MINUTE) as i128;
    if let Some(sec) = parts.get(2) {
        let (s, f) = sec.split_once('.').unwrap_or((sec, ""));
        let s = int(s)?;
        if s > 59 || !f.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        micros += (s * MICROS_PER_SECOND) as i128 + fraction_to_micros(f)? as i128;
    }
    i64::try_from(if negative { -micros } else { micros }).ok()
}

/// Digits after a decimal point as microseconds, rounded half up beyond six digits.
pub(crate) fn fraction_to_micros(digits: &str) -> Option<i64> {
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut micros: i64 = 0;
    for i in 0..6 {
        micros = micros * 10 + digits.as_bytes().get(i).map_or(0, |b| (b - b'0') as i64);
    }
    if digits.as_bytes().get(6).is_some_and(|&b| b >= b'5') {
        micros += 1;
    }
    Some(micros)
}

impl Interval {
    /// The zero interval.
    pub const ZERO: Interval = Interval {
        months: 0,
        days: 0,
        micros: 0,
    };

    pub fn new(months: i32, days: i32, micros: i64) -> Interval {
        Interval {
            months,
            days,
            micros,
        }
    }

    /// Parses PostgreSQL's interval input: `1 year 2 months 3 days 04:05:06`, `-2
    /// hours`, `1.5 days`, `@ 1 day ago`, the SQL-standard `1-2` (years-months) and
    /// `3 04:05:06` (days and a time). A bare number counts seconds.
    pub fn parse(text: &str) -> Result<Interval> {
        Self::parse_inner(text, None)
    }

    /// Parses an SQL-standard literal with its field: `interval '3' month`, `interval
    /// '90' day`. A bare number counts in `field`; fields below `field` are dropped.
    pub fn parse_with_field(text: &str, field: IntervalField) -> Result<Interval> {
        let v = Self::parse_inner(text, Some(field))?;
        Ok(v.truncate_to(field))
    }

    fn truncate_to(self, field: IntervalField) -> Interval {
        let mut v = self;
        match field {
            IntervalField::Year => {
                v.months = v.months / 12 * 12;
                v.days = 0;
                v.micros = 0;
            }
            IntervalField::Month => {
                v.days = 0;
                v.micros = 0;
            }
            IntervalField::Day => v.micros = 0,
            IntervalField::Hour => v.micros = v.micros / MICROS_PER_HOUR * MICROS_PER_HOUR,
            IntervalField::Minute => v.micros = v.micros / MICROS_PER_MINUTE * MICROS_PER_MINUTE,
            IntervalField::Second => {}
        }
        v
    }

    fn parse_inner(text: &str, field: Option<IntervalField>) -> Result<Interval> {
        let bad = || Error::syntax("interval", text);
        let lower = text.to_ascii_lowercase();
        let mut s = lower.trim_matches(|c: char| c.is_ascii_whitespace());
        if let Some(rest) = s.strip_prefix('@') {
            s = rest;
        }
        let tokens: Vec<&str> = s.split_ascii_whitespace().collect();
        if tokens.is_empty() {
            return Err(bad());
        }
        let mut totals = Totals::default();
        let mut ago = false;
        let mut i = 0;
        let overflow = |_| Error::IntervalFieldOutOfRange {
            input: text.to_string(),
        };
        while i < tokens.len() {
            let token = tokens[i];
            if ago {
                // "ago" must be last.
                return Err(bad());
            }
            if token == "ago" {
                ago = true;
                i += 1;
                continue;
            }
            if token.contains(':') {
                let micros = parse_time(token).ok_or_else(bad)?;
                totals.add_micros(micros).ok_or(()).map_err(overflow)?;
                i += 1;
                continue;
            }
            // A '-' after the first character: SQL-standard years-months. (`get` keeps a
            // multi-byte first character from splitting a code point.)
            let dash = token.get(1..).and_then(|t| t.find('-')).map(|p| p + 1);
            if let Some(pos) = dash {
                let (y, m) = (&token[..pos], &token[pos + 1..]);
                // SQL-standard years-months, `1-2`, optionally signed as a whole.
                let years = parse_amount(y).filter(|a| a.frac == 0.0).ok_or_else(bad)?;
                let months = parse_amount(m)
                    .filter(|a| a.frac == 0.0 && a.whole >= 0)
                    .ok_or_else(bad)?;
                let months = if years.whole < 0 || y.starts_with('-') {
                    -months.whole
                } else {
                    months.whole
                };
                totals
                    .add(years, Unit::Months(12))
                    .and_then(|_| totals.add_months(months))
                    .ok_or(())
                    .map_err(overflow)?;
                i += 1;
                continue;
            }
            let amount = parse_amount(token).ok_or_else(bad)?;
            let next = tokens.get(i + 1).copied();
            let (unit, used) = match next.and_then(unit_of) {
                Some(unit) => (unit, 2),
                None if next.is_some_and(|n| n.contains(':')) => (Unit::Days(1), 1),
                None => (field.map_or(Unit::Micros(MICROS_PER_SECOND), field_unit), 1),
            };
            totals.add(amount, unit).ok_or(()).map_err(overflow)?;
            i += used;
        }
        let fit32 = |v: i64| {
            i32::try_from(v).map_err(|_| Error::IntervalFieldOutOfRange {
                input: text.to_string(),
            })
        };
        let mut v = Interval {
            months: fit32(totals.months)?,
            days: fit32(totals.days)?,
            micros: totals.micros,
        };
        if ago {
            v = v.checked_neg()?;
        }
        Ok(v)
    }

    /// The total span in microseconds with 30-day months, as PostgreSQL's
    /// `interval_cmp_value` (exact: it cannot overflow an `i128`).
    pub fn span_micros(&self) -> i128 {
        (self.months as i128 * 30 + self.days as i128) * MICROS_PER_DAY as i128
            + self.micros as i128
    }

    /// Field-wise sum.
    pub fn checked_add(&self, other: &Interval) -> Result<Interval> {
        Ok(Interval {
            months: self
                .months
                .checked_add(other.months)
                .ok_or_else(out_of_range)?,
            days: self.days.checked_add(other.days).ok_or_else(out_of_range)?,
            micros: self
                .micros
                .checked_add(other.micros)
                .ok_or_else(out_of_range)?,
        })
    }

    /// Field-wise difference.
    pub fn checked_sub(&self, other: &Interval) -> Result<Interval> {
        self.checked_add(&other.checked_neg()?)
    }

    /// Every field negated.
    pub fn checked_neg(&self) -> Result<Interval> {
        Ok(Interval {
            months: self.months.checked_neg().ok_or_else(out_of_range)?,
            days: self.days.checked_neg().ok_or_else(out_of_range)?,
            micros: self.micros.checked_neg().ok_or_else(out_of_range)?,
        })
    }

    /// Every field multiplied by an integer, exactly.
    pub fn checked_mul_int(&self, factor: i64) -> Result<Interval> {
        let m = (self.months as i64)
            .checked_mul(factor)
            .and_then(|v| i32::try_from(v).ok());
        let d = (self.days as i64)
            .checked_mul(factor)
            .and_then(|v| i32::try_from(v).ok());
        let u = self.micros.checked_mul(factor);
        match (m, d, u) {
            (Some(months), Some(days), Some(micros)) => Ok(Interval {
                months,
                days,
                micros,
            }),
            _ => Err(out_of_range()),
        }
    }

    /// Multiplied by a double, as PostgreSQL's `interval_mul`: the fractional part of
    /// the months spills into days (30 per month) and that of the days into
    /// microseconds. (PostgreSQL additionally rounds the spilled day fraction to whole
    /// microseconds before adding it; BeeDB rounds once at the end, which can differ by
    /// a microsecond.)
    pub fn checked_mul_f64(&self, factor: f64) -> Result<Interval> {
        let months = self.months as f64 * factor;
        let whole_months = months.trunc();
        let days = self.days as f64 * factor + (months - whole_months) * 30.0;
        let whole_days = days.trunc();
        let micros = (self.micros as f64 * factor + (days - whole_days) * MICROS_PER_DAY as f64)
            .round_ties_even();
        let fits32 = |v: f64| v.is_finite() && v >= i32::MIN as f64 && v <= i32::MAX as f64;
        if !fits32(whole_months) || !fits32(whole_days) || f64_to_i64(micros).is_none() {
            return Err(out_of_range());
        }
        Ok(Interval {
            months: whole_months as i32,
            days: whole_days as i32,
            micros: micros as i64,
        })
    }

    /// Divided by a double, as multiplying by its inverse; division by zero fails.
    pub fn checked_div_f64(&self, divisor: f64) -> Result<Interval> {
        if divisor == 0.0 {
            return Err(Error::DivisionByZero);
        }
        self.checked_mul_f64(1.0 / divisor)
    }
}

impl Interval {
    /// PostgreSQL's `extract(field from interval)`, as a numeric: years and months
    /// from the months (`year` = months / 12, `month` = months % 12), `day` the days,
    /// `hour`, `minute`, `second` (scale 6), `milliseconds` (scale 3) and
    /// `microseconds` from the time part, all truncated toward zero with the sign of
    /// their field; `epoch` counts a year as 365.25 days and a month as 30 (scale 6).
    /// `dow`, `isodow` and `doy` are not supported for intervals.
    pub fn extract(&self, field: DateField) -> Result<Decimal> {
        let years = (self.months / 12) as i64;
        let months = (self.months % 12) as i64;
        let hours = self.micros / MICROS_PER_HOUR;
        let minutes = (self.micros % MICROS_PER_HOUR) / MICROS_PER_MINUTE;
        let sec_micros = self.micros % MICROS_PER_MINUTE;
        let int = |v: i64| Ok(Decimal::from_i64(v));
        match field {
            DateField::Millennium => int(years / 1000),
            DateField::Century => int(years / 100),
            DateField::Decade => int(years / 10),
            DateField::Year => int(years),
            DateField::Quarter => int(months / 3 + 1),
            DateField::Month => int(months),
            DateField::Day => int(self.days as i64),
            DateField::Hour => int(hours),
            DateField::Minute => int(minutes),
            DateField::Second => Decimal::new(sec_micros as i128, 6),
            DateField::Milliseconds => Decimal::new(sec_micros as i128, 3),
            DateField::Microseconds => int(sec_micros),
            DateField::Epoch => {
                // 365.25 days a year: work in quarter days to stay exact.
                let quarter_days =
                    1461i128 * years as i128 + 120 * months as i128 + 4 * self.days as i128;
                let micros = quarter_days * (MICROS_PER_DAY as i128 / 4) + self.micros as i128;
                Decimal::new(micros, 6)
            }
            DateField::Dow | DateField::IsoDow | DateField::Doy => Err(Error::UnsupportedField {
                unit: field.name().to_string(),
                type_name: "interval",
            }),
        }
    }
}

impl PartialEq for Interval {
    fn eq(&self, other: &Self) -> bool {
        self.span_micros() == other.span_micros()
    }
}

impl Eq for Interval {}

impl PartialOrd for Interval {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Interval {
    fn cmp(&self, other: &Self) -> Ordering {
        self.span_micros().cmp(&other.span_micros())
    }
}

impl Hash for Interval {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.span_micros().hash(state);
    }
}

/// Appends `value unit[s]` as PostgreSQL's `AddPostgresIntPart`: a `+` on a positive
/// part that follows a negative one.
fn push_part(out: &mut String, value: i64, unit: &str, is_zero: &mut bool, is_before: &mut bool) {
    if value == 0 {
        return;
    }
    if !*is_zero {
        out.push(' ');
    }
    if *is_before && value > 0 {
        out.push('+');
    }
    out.push_str(&format!(
        "{value} {unit}{}",
        if value != 1 { "s" } else { "" }
    ));
    *is_before = value < 0;
    *is_zero = false;
}

impl fmt::Display for Interval {
    /// PostgreSQL's default (`postgres`) interval style: `1 year 2 mons 3 days
    /// 04:05:06`, `-1 days +02:00:00`, `00:00:00` for zero.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        let mut is_zero = true;
        let mut is_before = false;
        let years = self.months / 12;
        let months = self.months % 12;
        push_part(&mut out, years as i64, "year", &mut is_zero, &mut is_before);
        push_part(&mut out, months as i64, "mon", &mut is_zero, &mut is_before);
        push_part(
            &mut out,
            self.days as i64,
            "day",
            &mut is_zero,
            &mut is_before,
        );
        if is_zero || self.micros != 0 {
            let minus = self.micros < 0;
            let abs = self.micros.unsigned_abs();
            let hours = abs / MICROS_PER_HOUR as u64;
            let minutes = abs / MICROS_PER_MINUTE as u64 % 60;
            let seconds = abs / MICROS_PER_SECOND as u64 % 60;
            let fraction = abs % MICROS_PER_SECOND as u64;
            if !is_zero {
                out.push(' ');
            }
            out.push_str(if minus {
                "-"
            } else if is_before {
                "+"
            } else {
                ""
            });
            out.push_str(&format!("{hours:02}:{minutes:02}:{seconds:02}"));
            if fraction != 0 {
                let digits = format!("{fraction:06}");
                out.push('.');
                out.push_str(digits.trim_end_matches('0'));
            }
        }
        f.write_str(&out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iv(s: &str) -> Interval {
        Interval::parse(s).unwrap()
    }

    #[test]
    fn parses_and_prints_like_postgres() {
        assert_eq!(
            iv("1 year 2 months 3 days 04:05:06").to_string(),
            "1 year 2 mons 3 days 04:05:06"
        );
        assert_eq!(iv("1 day").to_string(), "1 day");
        assert_eq!(iv("-2 hours").to_string(), "-02:00:00");
        assert_eq!(iv("0").to_string(), "00:00:00");
        assert_eq!(iv("-1 year").to_string(), "-1 years");
        assert_eq!(iv("-1 days 2 hours").to_string(), "-1 days +02:00:00");
        assert_eq!(iv("1 year -2 mons").to_string(), "10 mons");
        assert_eq!(iv("-1 mons 3 days").to_string(), "-1 mons +3 days");
        assert_eq!(iv("1.5 days").to_string(), "1 day 12:00:00");
        assert_eq!(iv("1.5 months").to_string(), "1 mon 15 days");
        assert_eq!(iv("1.5 years").to_string(), "1 year 6 mons");
        assert_eq!(iv("2 weeks").to_string(), "14 days");
        assert_eq!(iv("1.25 seconds").to_string(), "00:00:01.25");
        assert_eq!(iv("@ 1 day ago").to_string(), "-1 days");
        assert_eq!(iv("1-2").to_string(), "1 year 2 mons");
        assert_eq!(iv("3 04:05:06").to_string(), "3 days 04:05:06");
        assert_eq!(iv("100 hours").to_string(), "100:00:00");
        assert_eq!(iv("1 DAY 1 MINUTE").to_string(), "1 day 00:01:00");
        assert_eq!(iv("90").to_string(), "00:01:30");
        for bad in [
            "",
            "day",
            "1 fortnight",
            "1 day ago ago",
            "1:2:3:4",
            "a",
            "1 day x",
        ] {
            assert!(Interval::parse(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            Interval::parse("99999999999 years")
                .unwrap_err()
                .to_string(),
            "interval field value out of range: \"99999999999 years\""
        );
        assert!(Interval::parse("3000000000 days").is_err());
        let extreme = Interval::new(i32::MIN, i32::MIN, i64::MIN);
        let back = Interval::parse(&extreme.to_string()).unwrap();
        assert_eq!(
            (back.months, back.days, back.micros),
            (i32::MIN, i32::MIN, i64::MIN)
        );
        let extreme = Interval::new(i32::MAX, i32::MAX, i64::MAX);
        let back = Interval::parse(&extreme.to_string()).unwrap();
        assert_eq!(
            (back.months, back.days, back.micros),
            (i32::MAX, i32::MAX, i64::MAX)
        );
    }

    #[test]
    fn sql_standard_fields() {
        let f = Interval::parse_with_field;
        assert_eq!(f("3", IntervalField::Month).unwrap().to_string(), "3 mons");
        assert_eq!(f("90", IntervalField::Day).unwrap().to_string(), "90 days");
        assert_eq!(f("2", IntervalField::Year).unwrap().to_string(), "2 years");
        assert_eq!(
            f("1 day 02:03:04", IntervalField::Hour)
                .unwrap()
                .to_string(),
            "1 day 02:00:00"
        );
        assert_eq!(
            f("1 year 2 months", IntervalField::Year)
                .unwrap()
                .to_string(),
            "1 year"
        );
    }

    #[test]
    fn compares_with_thirty_day_months() {
        assert_eq!(iv("1 month"), iv("30 days"));
        assert!(iv("1 month") < iv("31 days"));
        assert!(iv("1 day") == iv("24 hours"));
        assert!(iv("-1 day") < iv("0"));
    }

    #[test]
    fn arithmetic() {
        assert_eq!(
            iv("1 day").checked_add(&iv("2 hours")).unwrap().to_string(),
            "1 day 02:00:00"
        );
        assert_eq!(
            iv("1 day").checked_sub(&iv("2 hours")).unwrap().to_string(),
            "1 day -02:00:00"
        );
        assert_eq!(
            iv("1 mon 1 day").checked_mul_int(3).unwrap().to_string(),
            "3 mons 3 days"
        );
        assert_eq!(
            iv("1 mon").checked_mul_f64(1.5).unwrap().to_string(),
            "1 mon 15 days"
        );
        assert_eq!(
            iv("1 day").checked_mul_f64(0.5).unwrap().to_string(),
            "12:00:00"
        );
        assert_eq!(
            iv("1 day").checked_div_f64(4.0).unwrap().to_string(),
            "06:00:00"
        );
        assert!(iv("1 day").checked_div_f64(0.0).is_err());
        assert!(Interval::new(i32::MIN, 0, 0).checked_neg().is_err());
        assert!(iv("1 day").checked_mul_f64(f64::NAN).is_err());
        assert!(Interval::new(i32::MAX, 0, 0).checked_mul_int(2).is_err());
    }
}
