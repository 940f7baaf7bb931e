//! How result values are printed for comparison with a test file's expected text.

use beedb::types::Decimal;
use beedb::{DataType, Value};
use sqllogictest::DefaultColumnType;

/// Which printing conventions a file expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conventions {
    /// SQLite's corpus (`*.test`): values printed the way SQLite's own runner prints
    /// them — `I` columns as 64-bit integers (a real or numeric value truncated toward
    /// zero, a boolean as 1/0), `R` columns as `%.3f`, text with control and non-ASCII
    /// characters replaced by `@`.
    Corpus,
    /// BeeDB's own files (`*.slt`): PostgreSQL's text output, booleans as `t`/`f`,
    /// `R` columns as `%.3f`.
    Project,
}

/// The text for one value in a column whose expected type letter is `column`.
/// In both conventions NULL prints `NULL` and the empty string `(empty)`.
pub fn format_value(value: &Value, column: &DefaultColumnType, conventions: Conventions) -> String {
    match value {
        Value::Null => return "NULL".to_string(),
        Value::Char(s) | Value::Varchar(s) | Value::Text(s) if s.is_empty() => {
            return "(empty)".to_string();
        }
        _ => {}
    }
    match column {
        DefaultColumnType::FloatingPoint => {
            if let Some(x) = as_f64(value) {
                return match conventions {
                    Conventions::Corpus => sqlite_fixed3(x),
                    Conventions::Project => format!("{x:.3}"),
                };
            }
            if let (Conventions::Corpus, Value::Char(s) | Value::Varchar(s) | Value::Text(s)) =
                (conventions, value)
            {
                return sqlite_fixed3(text_prefix_f64(s));
            }
        }
        DefaultColumnType::Integer if conventions == Conventions::Corpus => {
            if let Some(text) = as_sqlite_integer(value) {
                return text;
            }
        }
        _ => {}
    }
    match value {
        Value::Boolean(b) => match conventions {
            Conventions::Corpus => if *b { "1" } else { "0" }.to_string(),
            Conventions::Project => if *b { "t" } else { "f" }.to_string(),
        },
        Value::Char(s) | Value::Varchar(s) | Value::Text(s)
            if conventions == Conventions::Corpus =>
        {
            s.chars()
                .map(|c| if (' '..='~').contains(&c) { c } else { '@' })
                .collect()
        }
        other => other.to_string(),
    }
}

fn as_f64(value: &Value) -> Option<f64> {
    Some(match value {
        Value::SmallInt(x) => *x as f64,
        Value::Integer(x) => *x as f64,
        Value::BigInt(x) => *x as f64,
        Value::Real(x) => *x as f64,
        Value::Double(x) => *x,
        Value::Decimal(d) => d.to_f64(),
        Value::Boolean(b) => *b as i32 as f64,
        _ => return None,
    })
}

/// `sqlite3_column_int64` for a number: integers as they are, reals and numerics
/// truncated toward zero.
fn as_sqlite_integer(value: &Value) -> Option<String> {
    Some(match value {
        Value::SmallInt(x) => x.to_string(),
        Value::Integer(x) => x.to_string(),
        Value::BigInt(x) => x.to_string(),
        Value::Real(x) => (*x as i64).to_string(),
        Value::Double(x) => (*x as i64).to_string(),
        Value::Decimal(d) => truncate_decimal(d).to_string(),
        Value::Boolean(b) => (*b as i32).to_string(),
        Value::Char(s) | Value::Varchar(s) | Value::Text(s) => text_prefix_i64(s).to_string(),
        _ => return None,
    })
}

/// SQLite's `printf("%.3f", x)`: like C's, except that SQLite prints at most 16
/// significant digits and zeros after them (`-9223372036854776000.000`).
fn sqlite_fixed3(x: f64) -> String {
    let plain = format!("{x:.3}");
    let significant = plain
        .bytes()
        .filter(u8::is_ascii_digit)
        .skip_while(|&b| b == b'0')
        .count();
    if significant <= 16 || !x.is_finite() {
        return plain;
    }
    // 16 significant digits: d.ddddddddddddddde±N, N >= 13 here.
    let scientific = format!("{:.15e}", x.abs());
    let (mantissa, exponent) = scientific.split_once('e').expect("scientific notation");
    let exponent: usize = exponent.parse().expect("non-negative exponent");
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let mut out = String::with_capacity(exponent + 6);
    if x < 0.0 {
        out.push('-');
    }
    for i in 0..exponent + 1 + 3 {
        if i == exponent + 1 {
            out.push('.');
        }
        out.push(digits.as_bytes().get(i).map_or('0', |&b| b as char));
    }
    out
}

/// SQLite's text → integer conversion: the leading integer, or 0 (`'true'` → 0,
/// `' 12abc'` → 12, `'-3.9'` → -3).
fn text_prefix_i64(s: &str) -> i64 {
    let s = s.trim_start();
    let (negative, digits) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let mut value: i64 = 0;
    for b in digits.bytes().take_while(u8::is_ascii_digit) {
        value = value.saturating_mul(10).saturating_add((b - b'0') as i64);
    }
    if negative { -value } else { value }
}

/// SQLite's text → real conversion: the longest leading number, or 0.
fn text_prefix_f64(s: &str) -> f64 {
    let s = s.trim_start();
    (1..=s.len())
        .rev()
        .filter(|&end| s.is_char_boundary(end))
        .find_map(|end| s[..end].parse::<f64>().ok().filter(|x| x.is_finite()))
        .unwrap_or(0.0)
}

fn truncate_decimal(d: &Decimal) -> i128 {
    d.unscaled() / 10i128.pow(d.scale() as u32)
}

/// The type letter a result column gets when the record does not name one.
pub fn column_type_of(data_type: &DataType) -> DefaultColumnType {
    match data_type {
        DataType::SmallInt | DataType::Integer | DataType::BigInt => DefaultColumnType::Integer,
        DataType::Real | DataType::Double | DataType::Decimal { .. } => {
            DefaultColumnType::FloatingPoint
        }
        _ => DefaultColumnType::Text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const I: DefaultColumnType = DefaultColumnType::Integer;
    const R: DefaultColumnType = DefaultColumnType::FloatingPoint;
    const T: DefaultColumnType = DefaultColumnType::Text;

    fn dec(s: &str) -> Value {
        Value::Decimal(Decimal::parse(s).unwrap())
    }

    #[test]
    fn corpus_integers_truncate_like_sqlite() {
        let c = Conventions::Corpus;
        assert_eq!(format_value(&Value::Integer(-7), &I, c), "-7");
        assert_eq!(format_value(&Value::Double(2.9), &I, c), "2");
        assert_eq!(format_value(&Value::Double(-2.9), &I, c), "-2");
        assert_eq!(format_value(&dec("150.5000"), &I, c), "150");
        assert_eq!(format_value(&dec("-0.75"), &I, c), "0");
        assert_eq!(format_value(&Value::Boolean(true), &I, c), "1");
        assert_eq!(format_value(&Value::Null, &I, c), "NULL");
        let text = |s: &str| Value::Text(s.to_string());
        assert_eq!(format_value(&text("true"), &I, c), "0");
        assert_eq!(format_value(&text(" 12abc"), &I, c), "12");
        assert_eq!(format_value(&text("-3.9"), &I, c), "-3");
        assert_eq!(format_value(&text("2.5x"), &R, c), "2.500");
        assert_eq!(
            format_value(&Value::Double(-9223372036854775808.0), &R, c),
            "-9223372036854776000.000"
        );
        assert_eq!(
            format_value(&Value::Double(-18446744073709551616.0), &R, c),
            "-18446744073709550000.000"
        );
        assert_eq!(
            format_value(&Value::Double(1234567890123.4567), &R, c),
            "1234567890123.457"
        );
        assert_eq!(
            format_value(&Value::Double(12345678901234.567), &R, c),
            "12345678901234.570"
        );
    }

    #[test]
    fn real_columns_print_three_decimals() {
        for c in [Conventions::Corpus, Conventions::Project] {
            assert_eq!(format_value(&Value::Integer(3), &R, c), "3.000");
            assert_eq!(format_value(&Value::Double(-1.23456), &R, c), "-1.235");
            assert_eq!(format_value(&dec("2.5"), &R, c), "2.500");
            assert_eq!(format_value(&Value::Null, &R, c), "NULL");
        }
    }

    #[test]
    fn text_conventions() {
        let text = |s: &str| Value::Text(s.to_string());
        assert_eq!(format_value(&text(""), &T, Conventions::Project), "(empty)");
        assert_eq!(format_value(&text(""), &T, Conventions::Corpus), "(empty)");
        assert_eq!(format_value(&text("a b"), &T, Conventions::Project), "a b");
        assert_eq!(format_value(&text("a\tb"), &T, Conventions::Corpus), "a@b");
        assert_eq!(
            format_value(&Value::Boolean(false), &T, Conventions::Project),
            "f"
        );
        assert_eq!(
            format_value(&Value::Boolean(true), &I, Conventions::Project),
            "t"
        );
        // Project files get PostgreSQL's output even in an `I` column.
        assert_eq!(format_value(&dec("1.50"), &I, Conventions::Project), "1.50");
    }
}
