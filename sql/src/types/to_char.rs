//! `to_char`: PostgreSQL's formatting of a date and time, an interval or a number by a
//! template (`formatting.c`: `DCH_to_char` for dates, times and intervals,
//! `NUM_processor` for numbers).
//!
//! **Dates and times.** Template patterns, matched longest first at each place, in the
//! case variants PostgreSQL knows (the numeric ones upper or lower case; `MONTH` /
//! `Month` / `month`, `MON`, `DAY`, `DY`, `RM` and the meridiem and era markers in the
//! case they print in): `YYYY`, `Y,YYY`, `YYY`, `YY`, `Y`, `IYYY`, `IYY`, `IY`, `I`,
//! `CC`, `Q`, `MM`, `MONTH`, `MON`, `RM`, `WW`, `W`, `IW`, `DDD`, `DD`, `D`, `IDDD`,
//! `ID`, `J`, `DAY`, `DY`, `HH`, `HH12`, `HH24`, `MI`, `SS`, `MS`, `US`, `SSSS`,
//! `SSSSS`, `AM` / `PM` / `A.M.` / `P.M.`, `AD` / `BC` / `A.D.` / `B.C.`, `TZ` (empty:
//! no time zone); the prefix `FM` (no padding) and the suffixes `TH` / `th`
//! (ordinal). Text in double quotes is copied (a backslash in it copies the next
//! character); outside quotes a backslash is special only before a double quote;
//! anything else is copied as it is. Numbers are zero-padded and names blank-padded
//! to PostgreSQL's widths unless `FM`.
//!
//! **Intervals** use the same patterns on the interval's fields as PostgreSQL's
//! `interval2tm` splits them (years = months / 12, months % 12, days, hours that may
//! pass 24, minutes, seconds, fractions; each with the interval's sign, negative ones
//! one character wider). Patterns tied to a calendar date (month and day names, `D`,
//! `ID`, `AD`/`BC`, `TZ`) fail as in PostgreSQL (22007); the ISO-week and Julian-day
//! patterns (`IYYY` … `I`, `IW`, `IDDD`, `J`), which PostgreSQL computes from a
//! pretend date, are refused (0A000).
//!
//! **Numbers** (`int`, `bigint`, `numeric`, `real`, `double precision`): `9` (digit,
//! blank when leading), `0` (digit, zero when leading), `.` / `D` (decimal point), `,`
//! / `G` (group separator), `S` (sign next to the number), `MI` / `PL` / `SG` (minus /
//! plus / either at that place), `PR` (negative in angle brackets), `L` (currency
//! symbol), `RN` / `rn` (Roman numeral), `TH` / `th` (ordinal suffix), `V` (shift by
//! 10^n), `EEEE` (scientific notation), `FM` (no padding, no trailing zeros); `B`, `C`
//! and `SP` are accepted and print nothing, as in PostgreSQL. The value is rounded to
//! the template's fractional digits (numeric half away from zero, floats as C's
//! `printf`, to at most 15 significant digits for `double precision` and 6 for
//! `real`); a value with more integer digits than the template prints `#` in every
//! digit place. The locale is C's, as PostgreSQL's `lc_numeric = C`: `D` is `.`, `G`
//! is `,` and `L` is a blank.
//!
//! Not here (yet): `FX` / `SP` / `TM` for dates (accepted and ignored by PostgreSQL for
//! output except `TM`, which localizes; BeeDB's names are English as PostgreSQL's C
//! locale), years before 1 (BeeDB's dates start at 1).

use crate::error::Error;

use super::{Date, Decimal, Interval, MICROS_PER_HOUR, MICROS_PER_MINUTE, MICROS_PER_SECOND, Timestamp};

const MICROS_PER_DAY: i64 = 86_400_000_000;

const MONTHS: [&str; 12] = [
    "January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November",
    "December",
];
const DAYS: [&str; 7] = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
const ROMAN: [&str; 12] = ["I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X", "XI", "XII"];

/// The patterns, longest first where one is the start of another.
const PATTERNS: &[&str] = &[
    "A.D.", "A.M.", "AD", "AM", "B.C.", "BC", "CC", "DAY", "DDD", "DD", "DY", "Day", "Dy", "D", "FX", "HH24", "HH12",
    "HH", "IDDD", "ID", "IW", "IYYY", "IYY", "IY", "I", "J", "MI", "MM", "MONTH", "MON", "MS", "Month", "Mon", "P.M.",
    "PM", "Q", "RM", "SSSSS", "SSSS", "SS", "TZ", "US", "WW", "W", "Y,YYY", "YYYY", "YYY", "YY", "Y", "a.d.", "a.m.",
    "ad", "am", "b.c.", "bc", "cc", "day", "ddd", "dd", "dy", "d", "fx", "hh24", "hh12", "hh", "iddd", "id", "iw",
    "iyyy", "iyy", "iy", "i", "j", "mi", "mm", "month", "mon", "ms", "p.m.", "pm", "q", "rm", "sssss", "ssss", "ss",
    "tz", "us", "ww", "w", "y,yyy", "yyyy", "yyy", "yy", "y",
];

/// The fields of one timestamp a template may ask for.
struct Fields {
    year: i64,
    month: u32,
    day: u32,
    /// Days since 2000-01-01.
    days: i64,
    micros: i64,
}

impl Fields {
    fn of(ts: i64) -> Fields {
        let date = Timestamp(ts).date();
        let (year, month, day) = date.ymd();
        Fields { year, month, day, days: date.0 as i64, micros: ts.rem_euclid(MICROS_PER_DAY) }
    }

    /// Day of the week, 0 = Sunday (2000-01-01 was a Saturday).
    fn dow(&self) -> i64 {
        (self.days + 6).rem_euclid(7)
    }

    /// Day of the year, 1-based.
    fn doy(&self) -> i64 {
        let jan1 = Date::from_ymd(self.year, 1, 1).map_or(self.days, |d| d.0 as i64);
        self.days - jan1 + 1
    }

    /// ISO 8601 year and week (weeks start on Monday; week 1 holds the year's
    /// first Thursday).
    fn iso_year_week(&self) -> (i64, i64) {
        let iso_dow = (self.dow() + 6) % 7 + 1; // Monday = 1 … Sunday = 7
        let thursday = self.days - iso_dow + 4;
        let (ty, _, _) = Date(thursday as i32).ymd();
        let jan1 = Date::from_ymd(ty, 1, 1).map_or(thursday, |d| d.0 as i64);
        (ty, (thursday - jan1) / 7 + 1)
    }

    fn iso_dow(&self) -> i64 {
        (self.dow() + 6) % 7 + 1
    }

    fn hour(&self) -> i64 {
        self.micros / 3_600_000_000
    }
}

/// `to_char(ts, template)`.
pub fn timestamp(ts: i64, template: &str) -> String {
    // Only intervals fail.
    dch(template, &Fields::of(ts), None).unwrap_or_default()
}

/// `to_char(interval, template)`.
pub fn interval(iv: Interval, template: &str) -> Result<String, Error> {
    let tm = IntervalFields::of(iv);
    dch(template, &Fields::of(0), Some(&tm))
}

/// An interval split as PostgreSQL's `interval2tm` does: every field truncated toward
/// zero, so each carries the interval's sign.
struct IntervalFields {
    year: i64,
    mon: i64,
    mday: i64,
    hour: i64,
    min: i64,
    sec: i64,
    fsec: i64,
}

impl IntervalFields {
    fn of(iv: Interval) -> IntervalFields {
        let months = iv.months as i64;
        let t = iv.micros;
        IntervalFields {
            year: months / 12,
            mon: months % 12,
            mday: iv.days as i64,
            hour: t / MICROS_PER_HOUR,
            min: t % MICROS_PER_HOUR / MICROS_PER_MINUTE,
            sec: t % MICROS_PER_MINUTE / MICROS_PER_SECOND,
            fsec: t % MICROS_PER_SECOND,
        }
    }

    /// PostgreSQL's day of the year for an interval: 30-day months.
    fn yday(&self) -> i64 {
        (self.year * 12 + self.mon) * 30 + self.mday
    }
}

fn invalid_for_interval() -> Error {
    Error::data("22007", "invalid format specification for an interval value")
        .with_hint("Intervals are not tied to specific calendar dates.")
}

/// One pattern of an interval template: `Ok(false)` when it is not a pattern of
/// intervals' own (the caller prints it as for a timestamp: the meridiem markers).
fn interval_pattern(
    out: &mut String,
    tm: &IntervalFields,
    pattern: &str,
    fm: bool,
    suffix: Option<bool>,
) -> Result<bool, Error> {
    // A number zero-padded to `width`, or bare under FM.
    let num = |out: &mut String, v: i64, width: usize| {
        let width = if fm { 0 } else { width };
        out.push_str(&format!("{v:0width$}"));
        if let Some(upper) = suffix {
            let th = ordinal(v);
            out.push_str(&if upper { th.to_uppercase() } else { th.to_string() });
        }
    };
    // PostgreSQL widens a negative field's padding by its sign.
    let w = |width: usize, v: i64| width + (v < 0) as usize;
    let cased = |s: &str| {
        if pattern.chars().any(|c| c.is_ascii_lowercase()) { s.to_lowercase() } else { s.to_string() }
    };
    match pattern.to_ascii_uppercase().as_str() {
        "AD" | "BC" | "A.D." | "B.C." | "TZ" | "DAY" | "DY" | "D" | "ID" | "MONTH" | "MON" => {
            return Err(invalid_for_interval());
        }
        "IYYY" | "IYY" | "IY" | "I" | "IW" | "IDDD" | "J" => {
            return Err(Error::not_supported(format!(
                "to_char of an interval with the pattern {pattern} is not supported"
            )));
        }
        "AM" | "PM" => out.push_str(&cased(if tm.hour % 24 >= 12 { "PM" } else { "AM" })),
        "A.M." | "P.M." => out.push_str(&cased(if tm.hour % 24 >= 12 { "P.M." } else { "A.M." })),
        "HH24" => num(out, tm.hour, w(2, tm.hour)),
        "HH12" | "HH" => {
            let h = tm.hour % 12;
            num(out, if h == 0 { 12 } else { h }, w(2, tm.hour));
        }
        "MI" => num(out, tm.min, w(2, tm.min)),
        "SS" => num(out, tm.sec, w(2, tm.sec)),
        "MS" => out.push_str(&format!("{:03}", tm.fsec / 1000)),
        "US" => out.push_str(&format!("{:06}", tm.fsec)),
        "SSSSS" | "SSSS" => num(out, tm.hour * 3600 + tm.min * 60 + tm.sec, 0),
        "Y,YYY" => out.push_str(&format!("{},{:03}", tm.year / 1000, tm.year % 1000)),
        "YYYY" => num(out, tm.year, w(4, tm.year)),
        "YYY" => num(out, tm.year % 1000, w(3, tm.year)),
        "YY" => num(out, tm.year % 100, w(2, tm.year)),
        "Y" => num(out, tm.year % 10, w(1, tm.year % 10)),
        "CC" => {
            let c = tm.year / 100;
            num(out, c, if (-99..=99).contains(&c) { w(2, c) } else { 0 });
        }
        "Q" => {
            if tm.mon != 0 {
                num(out, (tm.mon - 1) / 3 + 1, 0);
            }
        }
        "MM" => num(out, tm.mon, w(2, tm.mon)),
        "RM" => {
            if tm.mon != 0 || tm.year != 0 {
                // A whole number of years is December (January when negative); a
                // negative month counts back from December, as in PostgreSQL.
                let index = match tm.mon {
                    0 if tm.year >= 0 => 11,
                    0 => 0,
                    m if m < 0 => (12 + m) as usize,
                    m => (m - 1) as usize,
                };
                let r = if pattern == "rm" { ROMAN[index].to_lowercase() } else { ROMAN[index].to_string() };
                if fm {
                    out.push_str(&r);
                } else {
                    out.push_str(&format!("{r:<4}"));
                }
            }
        }
        "DD" => num(out, tm.mday, 2),
        "DDD" => num(out, tm.yday(), 3),
        "WW" => num(out, (tm.yday() - 1) / 7 + 1, 2),
        "W" => num(out, (tm.mday - 1) / 7 + 1, 0),
        _ => return Ok(false),
    }
    Ok(true)
}

/// The date/time template processor: `tm` is the interval when formatting one (then
/// `f` is unused).
fn dch(template: &str, f: &Fields, tm: Option<&IntervalFields>) -> Result<String, Error> {
    let mut out = String::new();
    let chars: Vec<char> = template.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        // FM: no padding for the next pattern.
        let fm = matches!(chars.get(i..i + 2), Some(['F' | 'f', 'M' | 'm']));
        let at = if fm { i + 2 } else { i };
        let pattern = PATTERNS.iter().find(|p| {
            let n = p.chars().count();
            chars.get(at..at + n).is_some_and(|s| s.iter().copied().eq(p.chars()))
        });
        let Some(&pattern) = pattern else {
            if fm {
                // A lone FM is a modifier of nothing.
                i += 2;
                continue;
            }
            match chars[i] {
                '"' => {
                    i += 1;
                    while i < chars.len() && chars[i] != '"' {
                        if chars[i] == '\\' && i + 1 < chars.len() {
                            i += 1;
                        }
                        out.push(chars[i]);
                        i += 1;
                    }
                    i += 1;
                }
                // Outside quotes a backslash is special only before a double quote.
                '\\' if chars.get(i + 1) == Some(&'"') => {
                    out.push('"');
                    i += 2;
                }
                c => {
                    out.push(c);
                    i += 1;
                }
            }
            continue;
        };
        i = at + pattern.chars().count();
        // The ordinal suffix.
        let suffix = match chars.get(i..i + 2) {
            Some(['T', 'H']) => Some(true),
            Some(['t', 'h']) => Some(false),
            _ => None,
        };
        if suffix.is_some() {
            i += 2;
        }
        if let Some(tm) = tm
            && interval_pattern(&mut out, tm, pattern, fm, suffix)?
        {
            continue;
        }
        // MS and US keep their digits under FM, as in PostgreSQL.
        let keeps_width = matches!(pattern, "MS" | "ms" | "US" | "us");
        let num = |out: &mut String, v: i64, width: usize| {
            if fm && !keeps_width {
                out.push_str(&v.to_string());
            } else {
                out.push_str(&format!("{v:0width$}"));
            }
            if let Some(upper) = suffix {
                let th = ordinal(v);
                out.push_str(&if upper { th.to_uppercase() } else { th.to_string() });
            }
        };
        let name = |out: &mut String, s: &str, width: usize| {
            if fm {
                out.push_str(s);
            } else {
                out.push_str(&format!("{s:<width$}"));
            }
        };
        let upper = pattern.chars().all(|c| !c.is_ascii_lowercase());
        let lower = pattern.chars().all(|c| !c.is_ascii_uppercase());
        let cased = |s: &str| {
            if upper {
                s.to_uppercase()
            } else if lower {
                s.to_lowercase()
            } else {
                s.to_string()
            }
        };
        let pm = f.hour() >= 12;
        match pattern.to_ascii_uppercase().as_str() {
            "AM" | "PM" => out.push_str(&cased(if pm { "PM" } else { "AM" })),
            "A.M." | "P.M." => out.push_str(&cased(if pm { "P.M." } else { "A.M." })),
            "AD" | "BC" => out.push_str(&cased(if f.year > 0 { "AD" } else { "BC" })),
            "A.D." | "B.C." => out.push_str(&cased(if f.year > 0 { "A.D." } else { "B.C." })),
            "CC" => num(&mut out, (f.year + 99) / 100, 2),
            "DAY" => name(&mut out, &cased(DAYS[f.dow() as usize]), 9),
            "DY" => out.push_str(&cased(&DAYS[f.dow() as usize][..3])),
            "DDD" => num(&mut out, f.doy(), 3),
            "DD" => num(&mut out, f.day as i64, 2),
            "D" => num(&mut out, f.dow() + 1, 1),
            "FX" | "TZ" => {}
            "HH24" => num(&mut out, f.hour(), 2),
            "HH12" | "HH" => num(&mut out, (f.hour() + 11) % 12 + 1, 2),
            "IDDD" => {
                let (_, w) = f.iso_year_week();
                num(&mut out, (w - 1) * 7 + f.iso_dow(), 3)
            }
            "ID" => num(&mut out, f.iso_dow(), 1),
            "IW" => num(&mut out, f.iso_year_week().1, 2),
            "IYYY" => num(&mut out, f.iso_year_week().0, 4),
            "IYY" => num(&mut out, f.iso_year_week().0 % 1000, 3),
            "IY" => num(&mut out, f.iso_year_week().0 % 100, 2),
            "I" => num(&mut out, f.iso_year_week().0 % 10, 1),
            // Julian day: 2000-01-01 is day 2451545.
            "J" => num(&mut out, f.days + 2_451_545, 1),
            "MI" => num(&mut out, f.micros / 60_000_000 % 60, 2),
            "MM" => num(&mut out, f.month as i64, 2),
            "MONTH" => name(&mut out, &cased(MONTHS[f.month as usize - 1]), 9),
            "MON" => out.push_str(&cased(&MONTHS[f.month as usize - 1][..3])),
            "MS" => num(&mut out, f.micros / 1000 % 1000, 3),
            "Q" => num(&mut out, (f.month as i64 - 1) / 3 + 1, 1),
            "RM" => name(&mut out, &cased(ROMAN[f.month as usize - 1]), 4),
            "SSSSS" | "SSSS" => num(&mut out, f.micros / 1_000_000, 1),
            "SS" => num(&mut out, f.micros / 1_000_000 % 60, 2),
            "US" => num(&mut out, f.micros % 1_000_000, 6),
            "WW" => num(&mut out, (f.doy() - 1) / 7 + 1, 2),
            "W" => num(&mut out, (f.day as i64 - 1) / 7 + 1, 1),
            "Y,YYY" => {
                let y = f.year;
                out.push_str(&format!("{},{:03}", y / 1000, y % 1000));
                if let Some(upper) = suffix {
                    let th = ordinal(y);
                    out.push_str(&if upper { th.to_uppercase() } else { th.to_string() });
                }
            }
            "YYYY" => num(&mut out, f.year, 4),
            "YYY" => num(&mut out, f.year % 1000, 3),
            "YY" => num(&mut out, f.year % 100, 2),
            "Y" => num(&mut out, f.year % 10, 1),
            _ => out.push_str(pattern),
        }
    }
    Ok(out)
}

/// The English ordinal suffix of `n` (1st, 2nd, 3rd, 4th, 11th, 12th, 13th, 21st).
fn ordinal(n: i64) -> &'static str {
    let n = n.abs();
    if (11..=13).contains(&(n % 100)) {
        return "th";
    }
    match n % 10 {
        1 => "st",
        2 => "nd",
        3 => "rd",
        _ => "th",
    }
}

// ---------------------------------------------------------------------------------
// Numbers
// ---------------------------------------------------------------------------------

/// A number to format, in the type that decides how it is rounded and printed (as
/// PostgreSQL's `int4_to_char`, `int8_to_char`, `numeric_to_char`, `float4_to_char`
/// and `float8_to_char`; a smallint is formatted as an integer).
#[derive(Debug, Clone, Copy)]
pub enum Number {
    Int4(i32),
    Int8(i64),
    Numeric(Decimal),
    Float4(f32),
    Float8(f64),
}

/// The patterns of a number template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    Comma,
    Dec,
    Zero,
    Nine,
    B,
    C,
    D,
    Eeee,
    Fm,
    G,
    L,
    Mi,
    Pl,
    Pr,
    Rn,
    RnLower,
    S,
    Sg,
    Sp,
    Th,
    ThLower,
    V,
}

/// PostgreSQL's keyword table, in its order (so `SG` and `SP` before `S`).
const NUM_KEYS: &[(&str, Key)] = &[
    (",", Key::Comma),
    (".", Key::Dec),
    ("0", Key::Zero),
    ("9", Key::Nine),
    ("B", Key::B),
    ("C", Key::C),
    ("D", Key::D),
    ("EEEE", Key::Eeee),
    ("FM", Key::Fm),
    ("G", Key::G),
    ("L", Key::L),
    ("MI", Key::Mi),
    ("PL", Key::Pl),
    ("PR", Key::Pr),
    ("RN", Key::Rn),
    ("SG", Key::Sg),
    ("SP", Key::Sp),
    ("S", Key::S),
    ("TH", Key::Th),
    ("V", Key::V),
    ("b", Key::B),
    ("c", Key::C),
    ("d", Key::D),
    ("eeee", Key::Eeee),
    ("fm", Key::Fm),
    ("g", Key::G),
    ("l", Key::L),
    ("mi", Key::Mi),
    ("pl", Key::Pl),
    ("pr", Key::Pr),
    ("rn", Key::RnLower),
    ("sg", Key::Sg),
    ("sp", Key::Sp),
    ("s", Key::S),
    ("th", Key::ThLower),
    ("v", Key::V),
];

enum Node {
    Key(Key),
    Char(char),
}

/// Where an `S` puts the sign.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LSign {
    None,
    Pre,
    Post,
}

/// What a number template asks for (PostgreSQL's `NUMDesc`).
#[derive(Debug, Clone)]
struct Desc {
    /// Digit places before and after the decimal point.
    pre: usize,
    post: usize,
    lsign: LSign,
    pre_lsign_num: usize,
    /// The digit places after `V`.
    multi: usize,
    /// 1-based place of the first and last `0`.
    zero_start: usize,
    zero_end: usize,
    decimal: bool,
    zero: bool,
    blank: bool,
    fill: bool,
    bracket: bool,
    minus: bool,
    plus: bool,
    roman: bool,
    multi_flag: bool,
    eeee: bool,
}

fn num_syntax(message: &str) -> Error {
    Error::syntax(message)
}

impl Desc {
    fn new() -> Desc {
        Desc {
            pre: 0,
            post: 0,
            lsign: LSign::None,
            pre_lsign_num: 0,
            multi: 0,
            zero_start: 0,
            zero_end: 0,
            decimal: false,
            zero: false,
            blank: false,
            fill: false,
            bracket: false,
            minus: false,
            plus: false,
            roman: false,
            multi_flag: false,
            eeee: false,
        }
    }

    fn lsign_flag(&self) -> bool {
        self.lsign != LSign::None
    }

    /// Notes one pattern, refusing the combinations PostgreSQL refuses.
    fn prepare(&mut self, key: Key) -> Result<(), Error> {
        if self.eeee && key != Key::Eeee {
            return Err(num_syntax("\"EEEE\" must be the last pattern used"));
        }
        match key {
            Key::Nine => {
                if self.bracket {
                    return Err(num_syntax("\"9\" must be ahead of \"PR\""));
                }
                if self.multi_flag {
                    self.multi += 1;
                } else if self.decimal {
                    self.post += 1;
                } else {
                    self.pre += 1;
                }
            }
            Key::Zero => {
                if self.bracket {
                    return Err(num_syntax("\"0\" must be ahead of \"PR\""));
                }
                if !self.zero && !self.decimal {
                    self.zero = true;
                    self.zero_start = self.pre + 1;
                }
                if self.decimal {
                    self.post += 1;
                } else {
                    self.pre += 1;
                }
                self.zero_end = self.pre + self.post;
            }
            Key::B => {
                if self.pre == 0 && self.post == 0 && !self.zero {
                    self.blank = true;
                }
            }
            Key::D | Key::Dec => {
                if self.decimal {
                    return Err(num_syntax("multiple decimal points"));
                }
                if self.multi_flag {
                    return Err(num_syntax("cannot use \"V\" and decimal point together"));
                }
                self.decimal = true;
            }
            Key::Fm => self.fill = true,
            Key::S => {
                if self.lsign_flag() {
                    return Err(num_syntax("cannot use \"S\" twice"));
                }
                if self.plus || self.minus || self.bracket {
                    return Err(num_syntax("cannot use \"S\" and \"PL\"/\"MI\"/\"SG\"/\"PR\" together"));
                }
                if !self.decimal {
                    self.lsign = LSign::Pre;
                    self.pre_lsign_num = self.pre;
                } else {
                    self.lsign = LSign::Post;
                }
            }
            Key::Mi => {
                if self.lsign_flag() {
                    return Err(num_syntax("cannot use \"S\" and \"MI\" together"));
                }
                self.minus = true;
            }
            Key::Pl => {
                if self.lsign_flag() {
                    return Err(num_syntax("cannot use \"S\" and \"PL\" together"));
                }
                self.plus = true;
            }
            Key::Sg => {
                if self.lsign_flag() {
                    return Err(num_syntax("cannot use \"S\" and \"SG\" together"));
                }
                self.minus = true;
                self.plus = true;
            }
            Key::Pr => {
                if self.lsign_flag() || self.plus || self.minus {
                    return Err(num_syntax("cannot use \"PR\" and \"S\"/\"PL\"/\"MI\"/\"SG\" together"));
                }
                self.bracket = true;
            }
            Key::Rn | Key::RnLower => self.roman = true,
            Key::V => {
                if self.decimal {
                    return Err(num_syntax("cannot use \"V\" and decimal point together"));
                }
                self.multi_flag = true;
            }
            Key::Eeee => {
                if self.eeee {
                    return Err(num_syntax("cannot use \"EEEE\" twice"));
                }
                if self.blank
                    || self.fill
                    || self.lsign_flag()
                    || self.bracket
                    || self.minus
                    || self.plus
                    || self.roman
                    || self.multi_flag
                {
                    return Err(num_syntax("\"EEEE\" is incompatible with other formats")
                        .with_detail("\"EEEE\" may only be used together with digit and decimal point patterns."));
                }
                self.eeee = true;
            }
            Key::Comma | Key::C | Key::G | Key::L | Key::Sp | Key::Th | Key::ThLower => {}
        }
        Ok(())
    }
}

/// Splits a number template into patterns and literal characters.
fn parse_number_template(template: &str) -> Result<(Vec<Node>, Desc), Error> {
    let mut desc = Desc::new();
    let mut nodes = Vec::new();
    let mut rest = template;
    while let Some(c) = rest.chars().next() {
        if let Some(&(name, key)) = NUM_KEYS.iter().find(|(name, _)| rest.starts_with(name)) {
            desc.prepare(key)?;
            nodes.push(Node::Key(key));
            rest = &rest[name.len()..];
        } else if c == '"' {
            let mut chars = rest[1..].char_indices();
            let mut end = rest.len();
            while let Some((i, c)) = chars.next() {
                if c == '"' {
                    end = 1 + i + 1;
                    break;
                }
                let c = if c == '\\' { chars.next().map_or(c, |(_, n)| n) } else { c };
                nodes.push(Node::Char(c));
            }
            rest = &rest[end..];
        } else if c == '\\' && rest[1..].starts_with('"') {
            nodes.push(Node::Char('"'));
            rest = &rest[2..];
        } else {
            nodes.push(Node::Char(c));
            rest = &rest[c.len_utf8()..];
        }
    }
    Ok((nodes, desc))
}

/// `number` rounded half away from zero to `post` digits after the point, given
/// as PostgreSQL's `numeric_out` prints it (`-12.345`); zero has no sign.
fn round_decimal_text(text: &str, post: usize) -> String {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, text),
    };
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    let mut all: Vec<u8> = int.bytes().chain(frac.bytes()).collect();
    let int_len = int.len();
    // Keep int_len + post digits.
    let keep = int_len + post;
    if all.len() > keep {
        let round_up = all[keep] >= b'5';
        all.truncate(keep);
        if round_up {
            let mut i = all.len();
            loop {
                if i == 0 {
                    all.insert(0, b'1');
                    break;
                }
                i -= 1;
                if all[i] == b'9' {
                    all[i] = b'0';
                } else {
                    all[i] += 1;
                    break;
                }
            }
        }
    } else {
        all.resize(keep, b'0');
    }
    let int_digits = all.len() - post;
    let mut int_part: String = String::from_utf8_lossy(&all[..int_digits]).into_owned();
    let trimmed = int_part.trim_start_matches('0');
    int_part = if trimmed.is_empty() { "0".into() } else { trimmed.into() };
    let frac_part = String::from_utf8_lossy(&all[int_digits..]).into_owned();
    let zero = int_part == "0" && frac_part.bytes().all(|b| b == b'0');
    let mut out = String::new();
    if negative && !zero {
        out.push('-');
    }
    out.push_str(&int_part);
    if post > 0 {
        out.push('.');
        out.push_str(&frac_part);
    }
    out
}

/// A decimal text shifted `n` places to the left of the point (× 10^n).
fn shift_decimal_text(text: &str, n: usize) -> String {
    let (sign, digits) = match text.strip_prefix('-') {
        Some(d) => ("-", d),
        None => ("", text),
    };
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    let mut frac = frac.to_string();
    while frac.len() < n {
        frac.push('0');
    }
    let (moved, rest) = frac.split_at(n);
    let int = format!("{int}{moved}");
    let int = int.trim_start_matches('0');
    let int = if int.is_empty() { "0" } else { int };
    if rest.is_empty() { format!("{sign}{int}") } else { format!("{sign}{int}.{rest}") }
}

/// PostgreSQL's `numeric_out_sci`: one digit before the point, `scale` after,
/// rounded half away from zero (a significand rounded up to 10 stays `10.0…`, as in
/// PostgreSQL), and an exponent of at least two digits.
fn numeric_sci(text: &str, scale: usize) -> String {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, text),
    };
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    let all: String = format!("{int}{frac}");
    let exponent: i64 = match all.bytes().position(|b| b != b'0') {
        None => 0,
        Some(first) => int.len() as i64 - 1 - first as i64,
    };
    // The significand: the digits with the point after the first significant one.
    let significand = if exponent >= 0 {
        let e = exponent as usize;
        let int_digits = int.trim_start_matches('0');
        let int_digits = if int_digits.is_empty() { "0" } else { int_digits };
        let (head, tail) = int_digits.split_at(int_digits.len() - e);
        format!("{head}.{tail}{frac}")
    } else {
        let lead = (-exponent - 1) as usize;
        let f = &frac[lead..];
        format!("{}.{}", &f[..1], &f[1..])
    };
    let rounded = round_decimal_text(&significand, scale);
    format!("{}{}e{}{:02}", if negative { "-" } else { "" }, rounded, if exponent < 0 { '-' } else { '+' }, exponent.abs())
}

/// C's `printf("%+.*e", precision, v)`, with PostgreSQL's spellings of the
/// non-finite values.
fn c_sci(v: f64, precision: usize) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "+Infinity".into() } else { "-Infinity".into() };
    }
    let s = format!("{v:+.precision$e}");
    let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i64 = exp.parse().unwrap_or(0);
    format!("{mantissa}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs())
}

/// A leading `+` printed as a blank.
fn blank_plus(s: String) -> String {
    match s.strip_prefix('+') {
        Some(rest) => format!(" {rest}"),
        None => s,
    }
}

/// C's `printf("%.*f", precision, v)` with PostgreSQL's `NaN` / `Infinity`.
fn c_fixed(v: f64, precision: usize) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "Infinity".into() } else { "-Infinity".into() };
    }
    format!("{v:.precision$}")
}

/// The Roman numeral of 1 … 3999, or 15 `#`.
fn roman(n: i64) -> String {
    if !(1..=3999).contains(&n) {
        return "#".repeat(15);
    }
    const THOUSANDS: [&str; 4] = ["", "M", "MM", "MMM"];
    const HUNDREDS: [&str; 10] = ["", "C", "CC", "CCC", "CD", "D", "DC", "DCC", "DCCC", "CM"];
    const TENS: [&str; 10] = ["", "X", "XX", "XXX", "XL", "L", "LX", "LXX", "LXXX", "XC"];
    const ONES: [&str; 10] = ["", "I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX"];
    let n = n as usize;
    format!("{}{}{}{}", THOUSANDS[n / 1000], HUNDREDS[n / 100 % 10], TENS[n / 10 % 10], ONES[n % 10])
}

/// `#` in every digit place: `pre` before the point, `post` after.
fn overflow_text(pre: usize, post: usize) -> String {
    format!("{}.{}", "#".repeat(pre), "#".repeat(post))
}

/// The unsigned digits of a number to print, with PostgreSQL's checks for a value
/// wider than the template: (digits, sign, blank places before them).
fn fixed_digits(orgnum: &str, desc: &Desc) -> (String, u8, usize) {
    let (sign, numstr) = match orgnum.strip_prefix('-') {
        Some(d) => (b'-', d.to_string()),
        None => (b'+', orgnum.to_string()),
    };
    let pre_len = numstr.find('.').unwrap_or(numstr.len());
    if pre_len < desc.pre {
        (numstr, sign, desc.pre - pre_len)
    } else if pre_len > desc.pre {
        (overflow_text(desc.pre, desc.post), sign, 0)
    } else {
        (numstr, sign, 0)
    }
}

/// An integer's digits with `post` zeros after the point.
fn int_text(v: i64, post: usize) -> String {
    if post > 0 { format!("{v}.{}", "0".repeat(post)) } else { v.to_string() }
}

/// `to_char(number, template)`.
pub fn number(value: Number, template: &str) -> Result<String, Error> {
    if template.is_empty() {
        return Ok(String::new());
    }
    let (nodes, mut desc) = parse_number_template(template)?;
    let mut sign = 0u8;
    let mut out_pre_spaces = 0;
    let numstr: String;
    if desc.roman {
        let n = match value {
            Number::Int4(v) => v as i64,
            Number::Int8(v) => {
                i32::try_from(v).map_err(|_| Error::data("22003", "integer out of range"))? as i64
            }
            Number::Numeric(d) => {
                let r = d.round(0).map_err(Error::from)?;
                let v = r.to_i64_rounded().filter(|v| i32::try_from(*v).is_ok());
                v.ok_or_else(|| Error::data("22003", "integer out of range"))?
            }
            Number::Float4(v) => (v as f64).round_ties_even() as i32 as i64,
            Number::Float8(v) => v.round_ties_even() as i32 as i64,
        };
        numstr = roman(n);
    } else if desc.eeee {
        let post = desc.post;
        let non_finite = |pre: usize| {
            let mut s = "#".repeat(pre + post + 6).into_bytes();
            s[0] = b' ';
            s[pre + 1] = b'.';
            String::from_utf8_lossy(&s).into_owned()
        };
        numstr = match value {
            Number::Int4(v) => blank_plus(c_sci(v as f64, post)),
            Number::Int8(v) => {
                let s = numeric_sci(&v.to_string(), post);
                if s.starts_with('-') { s } else { format!(" {s}") }
            }
            Number::Numeric(d) => {
                let s = numeric_sci(&d.to_string(), post);
                if s.starts_with('-') { s } else { format!(" {s}") }
            }
            Number::Float4(v) if !v.is_finite() => non_finite(desc.pre),
            Number::Float8(v) if !v.is_finite() => non_finite(desc.pre),
            Number::Float4(v) => blank_plus(c_sci(v as f64, post)),
            Number::Float8(v) => blank_plus(c_sci(v, post)),
        };
        // EEEE prints the number alone.
        return Ok(numstr);
    } else {
        let orgnum = match value {
            Number::Int4(v) => {
                let v = if desc.multi_flag {
                    desc.pre += desc.multi;
                    v.wrapping_mul(10f64.powi(desc.multi as i32) as i32)
                } else {
                    v
                };
                int_text(v as i64, desc.post)
            }
            Number::Int8(v) => {
                let v = if desc.multi_flag {
                    desc.pre += desc.multi;
                    let out_of_range = || Error::data("22003", "bigint out of range");
                    let m = 10i64.checked_pow(desc.multi as u32).ok_or_else(out_of_range)?;
                    v.checked_mul(m).ok_or_else(out_of_range)?
                } else {
                    v
                };
                int_text(v, desc.post)
            }
            Number::Numeric(d) => {
                let mut text = d.to_string();
                if desc.multi_flag {
                    text = shift_decimal_text(&text, desc.multi);
                    desc.pre += desc.multi;
                }
                round_decimal_text(&text, desc.post)
            }
            Number::Float4(v) => {
                let v = if desc.multi_flag {
                    desc.pre += desc.multi;
                    v * 10f64.powi(desc.multi as i32) as f32
                } else {
                    v
                };
                float_text(v as f64, &mut desc, 6)
            }
            Number::Float8(v) => {
                let v = if desc.multi_flag {
                    desc.pre += desc.multi;
                    v * 10f64.powi(desc.multi as i32)
                } else {
                    v
                };
                float_text(v, &mut desc, 15)
            }
        };
        let (digits, s, spaces) = fixed_digits(&orgnum, &desc);
        numstr = digits;
        sign = s;
        out_pre_spaces = spaces;
    }
    Ok(process(&nodes, &mut desc, numstr.as_bytes(), out_pre_spaces, sign)?)
}

/// A float printed with `desc.post` digits after the point, fewer when the digits
/// before it and after it would pass `max_digits` (DBL_DIG or FLT_DIG).
fn float_text(v: f64, desc: &mut Desc, max_digits: usize) -> String {
    let pre_len = c_fixed(v.abs(), 0).len();
    if pre_len >= max_digits {
        desc.post = 0;
    } else if pre_len + desc.post > max_digits {
        desc.post = max_digits - pre_len;
    }
    c_fixed(v, desc.post)
}

/// The English ordinal suffix of a digit string (PostgreSQL's `get_th`).
fn number_ordinal(number: &[u8], upper: bool) -> Result<&'static str, Error> {
    let len = number.iter().position(|&b| b == 0).unwrap_or(number.len());
    let number = &number[..len];
    let Some(&last) = number.last() else {
        return Err(Error::data("22P02", "\"\" is not a number"));
    };
    if !last.is_ascii_digit() {
        return Err(Error::data("22P02", format!("\"{}\" is not a number", String::from_utf8_lossy(number))));
    }
    let last = if number.len() > 1 && number[number.len() - 2] == b'1' { b'0' } else { last };
    let th = match last {
        b'1' => ["st", "ST"],
        b'2' => ["nd", "ND"],
        b'3' => ["rd", "RD"],
        _ => ["th", "TH"],
    };
    Ok(th[upper as usize])
}

/// PostgreSQL's `NUM_processor` for output: lays the digits of `number` (unsigned,
/// with its point) into the template's places, with the sign, separators and
/// padding the template asks for.
fn process(nodes: &[Node], desc: &mut Desc, number: &[u8], out_pre_spaces: usize, sign: u8) -> Result<String, Error> {
    let mut p = Proc {
        number,
        np: 0,
        out: Vec::new(),
        sign,
        sign_wrote: false,
        num_in: false,
        num_curr: 0,
        num_count: 0,
        out_pre_spaces,
        last_relevant: None,
    };
    if desc.zero_start > 0 {
        desc.zero_start -= 1;
    }
    if desc.roman {
        let fill = desc.fill;
        *desc = Desc::new();
        desc.fill = fill;
        desc.roman = true;
        p.out_pre_spaces = 0;
    }
    if desc.plus || desc.minus {
        p.sign_wrote = !(desc.plus && !desc.minus);
    } else {
        if p.sign != b'-' && desc.bracket && desc.fill {
            desc.bracket = false;
        }
        p.sign_wrote = p.sign == b'+' && desc.fill && !desc.lsign_flag();
        if desc.lsign == LSign::Pre && desc.pre == desc.pre_lsign_num {
            desc.lsign = LSign::Post;
        }
    }
    p.num_count = (desc.post + desc.pre) as isize - 1;
    if desc.fill && desc.decimal {
        p.last_relevant = last_relevant_decimal(number);
        if let Some(lr) = p.last_relevant
            && desc.zero_end > p.out_pre_spaces
        {
            let last_zero = desc.zero_end - p.out_pre_spaces;
            if lr < last_zero {
                p.last_relevant = Some(last_zero);
            }
        }
    }
    if !p.sign_wrote && p.out_pre_spaces == 0 {
        p.num_count += 1;
    }
    for node in nodes {
        match node {
            Node::Char(c) => {
                let mut b = [0u8; 4];
                p.out.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
            }
            Node::Key(key) => match key {
                Key::Nine | Key::Zero | Key::Dec | Key::D => p.numpart(*key, desc),
                Key::Comma | Key::G => {
                    if !p.num_in {
                        if !desc.fill {
                            p.out.push(b' ');
                        }
                    } else {
                        p.out.push(b',');
                    }
                }
                Key::L => p.out.push(b' '),
                Key::Rn | Key::RnLower => {
                    let s = String::from_utf8_lossy(number);
                    let s = if *key == Key::RnLower { s.to_lowercase() } else { s.into_owned() };
                    if desc.fill {
                        p.out.extend_from_slice(s.as_bytes());
                    } else {
                        p.out.extend_from_slice(format!("{s:>15}").as_bytes());
                    }
                }
                Key::Th | Key::ThLower => {
                    if desc.roman || number.first() == Some(&b'#') || p.sign == b'-' || desc.decimal {
                        continue;
                    }
                    p.out.extend_from_slice(number_ordinal(number, *key == Key::Th)?.as_bytes());
                }
                Key::Mi => {
                    if p.sign == b'-' {
                        p.out.push(b'-');
                    } else if !desc.fill {
                        p.out.push(b' ');
                    }
                }
                Key::Pl => {
                    if p.sign == b'+' {
                        p.out.push(b'+');
                    } else if !desc.fill {
                        p.out.push(b' ');
                    }
                }
                Key::Sg => p.out.push(p.sign),
                Key::B | Key::C | Key::Eeee | Key::Fm | Key::Pr | Key::S | Key::Sp | Key::V => {}
            },
        }
    }
    // A NUL written from past the end of the digits ends the text, as in C.
    let end = p.out.iter().position(|&b| b == 0).unwrap_or(p.out.len());
    p.out.truncate(end);
    Ok(String::from_utf8_lossy(&p.out).into_owned())
}

/// The place of the last non-zero digit after the point (the point itself when
/// there is none), or `None` without a point.
fn last_relevant_decimal(number: &[u8]) -> Option<usize> {
    let point = number.iter().position(|&b| b == b'.')?;
    let mut result = point;
    for (i, &b) in number.iter().enumerate().skip(point + 1) {
        if b != b'0' {
            result = i;
        }
    }
    Some(result)
}

/// The state of PostgreSQL's `NUMProc` while printing.
struct Proc<'a> {
    number: &'a [u8],
    /// The next character of `number` to print.
    np: usize,
    out: Vec<u8>,
    sign: u8,
    sign_wrote: bool,
    /// Whether a digit has been printed (separators print from then on).
    num_in: bool,
    /// The digit place being printed.
    num_curr: isize,
    num_count: isize,
    out_pre_spaces: usize,
    last_relevant: Option<usize>,
}

impl Proc<'_> {
    fn at(&self, i: usize) -> u8 {
        self.number.get(i).copied().unwrap_or(0)
    }

    /// '0.1' printed by '9.9' leaves the zero out (' .1').
    fn predec_space(&self, desc: &Desc) -> bool {
        !desc.zero && self.np == 0 && self.at(0) == b'0' && desc.post != 0
    }

    fn last_relevant_is_point(&self) -> bool {
        self.last_relevant.is_some_and(|i| self.at(i) == b'.')
    }

    /// One digit place or the decimal point (`NUM_numpart_to_char`).
    fn numpart(&mut self, key: Key, desc: &Desc) {
        if desc.roman {
            return;
        }
        self.num_in = false;
        let curr = self.num_curr;
        let pre_spaces = self.out_pre_spaces as isize;
        let zero_start = desc.zero_start as isize;
        // The sign goes before the first digit printed.
        if !self.sign_wrote
            && (curr >= pre_spaces || (desc.zero && zero_start == curr))
            && (!self.predec_space(desc) || self.last_relevant_is_point())
        {
            if desc.lsign_flag() {
                if desc.lsign == LSign::Pre {
                    self.out.push(if self.sign == b'-' { b'-' } else { b'+' });
                    self.sign_wrote = true;
                }
            } else if desc.bracket {
                self.out.push(if self.sign == b'+' { b' ' } else { b'<' });
                self.sign_wrote = true;
            } else if self.sign == b'+' {
                if !desc.fill {
                    self.out.push(b' ');
                }
                self.sign_wrote = true;
            } else if self.sign == b'-' {
                self.out.push(b'-');
                self.sign_wrote = true;
            }
        }
        if curr < pre_spaces && (zero_start > curr || !desc.zero) {
            // A blank before the number.
            if !desc.fill {
                self.out.push(b' ');
            }
        } else if desc.zero && curr < pre_spaces && zero_start <= curr {
            // A leading zero.
            self.out.push(b'0');
            self.num_in = true;
        } else {
            if self.at(self.np) == b'.' {
                if !self.last_relevant_is_point() || desc.fill {
                    self.out.push(b'.');
                }
            } else if self.last_relevant.is_some_and(|lr| self.np > lr) && key != Key::Zero {
                // A trailing zero under FM.
            } else if self.predec_space(desc) {
                if !desc.fill {
                    self.out.push(b' ');
                } else if self.last_relevant_is_point() {
                    self.out.push(b'0');
                }
            } else {
                self.out.push(self.at(self.np));
                self.num_in = true;
            }
            if self.at(self.np) != 0 {
                self.np += 1;
            }
        }
        let mut end = self.num_count + (self.out_pre_spaces > 0) as isize + desc.decimal as isize;
        if self.last_relevant.is_some_and(|lr| lr == self.np) {
            end = curr;
        }
        if curr + 1 == end {
            if self.sign_wrote && desc.bracket {
                self.out.push(if self.sign == b'+' { b' ' } else { b'>' });
            } else if desc.lsign == LSign::Post {
                self.out.push(if self.sign == b'-' { b'-' } else { b'+' });
            }
        }
        self.num_curr += 1;
    }
}
