//! `to_char(timestamp | date, template)`: PostgreSQL's formatting of a date and time
//! by a template (`formatting.c`, `DCH_to_char`).
//!
//! Template patterns, matched longest first at each place, in the case variants
//! PostgreSQL knows (the numeric ones upper or lower case; `MONTH` / `Month` /
//! `month`, `MON`, `DAY`, `DY`, `RM` and the meridiem and era markers in the case they
//! print in): `YYYY`, `Y,YYY`, `YYY`, `YY`, `Y`, `IYYY`, `IYY`, `IY`, `I`, `CC`, `Q`,
//! `MM`, `MONTH`, `MON`, `RM`, `WW`, `W`, `IW`, `DDD`, `DD`, `D`, `IDDD`, `ID`, `J`,
//! `DAY`, `DY`, `HH`, `HH12`, `HH24`, `MI`, `SS`, `MS`, `US`, `SSSS`, `SSSSS`, `AM` /
//! `PM` / `A.M.` / `P.M.`, `AD` / `BC` / `A.D.` / `B.C.`, `TZ` (empty: no time zone);
//! the prefix `FM` (no padding) and the suffixes `TH` / `th` (ordinal). Text in
//! double quotes is copied, a backslash copies the next character, anything else is
//! copied as it is. Numbers are zero-padded and names blank-padded to PostgreSQL's
//! widths unless `FM`.
//!
//! Not here (yet): `to_char` of numbers and intervals, `FX` / `SP` / `TM` (accepted
//! and ignored by PostgreSQL for output except `TM`, which localizes; BeeDB's names
//! are English as PostgreSQL's C locale), years before 1 (BeeDB's dates start at 1).

use super::{Date, Timestamp};

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
    let f = Fields::of(ts);
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
                '\\' if i + 1 < chars.len() => {
                    out.push(chars[i + 1]);
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
    out
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
