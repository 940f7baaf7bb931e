//! [`Value`]: one SQL value of any type, or NULL; its type, PostgreSQL's comparison
//! rules across types, explicit and assignment casts, and PostgreSQL's text output.

use std::cmp::Ordering;
use std::fmt;

use super::datatype::DataType;
use super::datetime::{Date, Timestamp};
use super::decimal::Decimal;
use super::error::{Error, Result};
use super::interval::Interval;
use super::number::{
    SqlInt, format_f32, format_f64, int_from_f64, int_from_i64, parse_bool, parse_f32, parse_f64,
    parse_int,
};
use super::text::{LengthCheck, bpchar_cmp, bpchar_trim, fit_char, fit_varchar};

/// One SQL value. `Char` holds the blank-padded string; the string variants differ
/// only in their type and in `character`'s trailing-space rules.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Boolean(bool),
    SmallInt(i16),
    Integer(i32),
    BigInt(i64),
    Real(f32),
    Double(f64),
    Decimal(Decimal),
    Date(Date),
    Timestamp(Timestamp),
    Interval(Interval),
    Char(String),
    Varchar(String),
    Text(String),
}

/// A numeric value lifted to one of three exact comparison domains.
#[derive(Clone, Copy)]
enum Num {
    Int(i64),
    Dec(Decimal),
    Float(f64),
}

/// PostgreSQL's float ordering: NaN equals NaN and is greater than every number;
/// `-0 = 0`.
fn float_cmp(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
    }
}

fn num_cmp(a: Num, b: Num) -> Ordering {
    match (a, b) {
        (Num::Int(x), Num::Int(y)) => x.cmp(&y),
        (Num::Int(x), Num::Dec(y)) => Decimal::from_i64(x).cmp(&y),
        (Num::Dec(x), Num::Int(y)) => x.cmp(&Decimal::from_i64(y)),
        (Num::Dec(x), Num::Dec(y)) => x.cmp(&y),
        (Num::Float(x), Num::Float(y)) => float_cmp(x, y),
        (Num::Dec(x), Num::Float(y)) => x.cmp_f64(y),
        (Num::Float(x), Num::Dec(y)) => y.cmp_f64(x).reverse(),
        (Num::Int(x), Num::Float(y)) => Decimal::from_i64(x).cmp_f64(y),
        (Num::Float(x), Num::Int(y)) => Decimal::from_i64(y).cmp_f64(x).reverse(),
    }
}

impl Value {
    /// The bytes this value holds outside itself (a string's text), for memory
    /// accounting.
    pub fn heap_bytes(&self) -> usize {
        match self {
            Value::Char(s) | Value::Varchar(s) | Value::Text(s) => s.capacity(),
            _ => 0,
        }
    }

    /// The value's type; `None` for NULL, which has none of its own. Decimals report
    /// the unconstrained `numeric`, `character` values their padded length.
    pub fn data_type(&self) -> Option<DataType> {
        Some(match self {
            Value::Null => return None,
            Value::Boolean(_) => DataType::Boolean,
            Value::SmallInt(_) => DataType::SmallInt,
            Value::Integer(_) => DataType::Integer,
            Value::BigInt(_) => DataType::BigInt,
            Value::Real(_) => DataType::Real,
            Value::Double(_) => DataType::Double,
            Value::Decimal(_) => DataType::NUMERIC,
            Value::Date(_) => DataType::Date,
            Value::Timestamp(_) => DataType::Timestamp,
            Value::Interval(_) => DataType::Interval,
            Value::Char(s) => DataType::Char(s.chars().count().max(1) as u32),
            Value::Varchar(_) => DataType::Varchar(None),
            Value::Text(_) => DataType::Text,
        })
    }

    /// True for NULL.
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    fn num(&self) -> Option<Num> {
        Some(match self {
            Value::SmallInt(v) => Num::Int(*v as i64),
            Value::Integer(v) => Num::Int(*v as i64),
            Value::BigInt(v) => Num::Int(*v),
            Value::Real(v) => Num::Float(*v as f64),
            Value::Double(v) => Num::Float(*v),
            Value::Decimal(v) => Num::Dec(*v),
            _ => return None,
        })
    }

    /// The string of a string value, without `character`'s padding.
    fn str_value(&self) -> Option<&str> {
        match self {
            Value::Char(s) => Some(bpchar_trim(s)),
            Value::Varchar(s) | Value::Text(s) => Some(s),
            _ => None,
        }
    }

    /// Compares two values as SQL does: `None` when either is NULL or the types are
    /// not comparable. Numbers compare exactly across all numeric types (an integer
    /// with a decimal, a decimal with a float: no two different numbers are equal);
    /// floats order NaN above every number. Dates compare with timestamps as
    /// midnight. `character` values ignore trailing spaces, also against text (as
    /// PostgreSQL, which converts them to text first). Strings compare by bytes.
    pub fn cmp_sql(&self, other: &Value) -> Option<Ordering> {
        use Value as V;
        if let (Some(a), Some(b)) = (self.num(), other.num()) {
            return Some(num_cmp(a, b));
        }
        Some(match (self, other) {
            (V::Boolean(a), V::Boolean(b)) => a.cmp(b),
            (V::Date(a), V::Date(b)) => a.cmp(b),
            (V::Timestamp(a), V::Timestamp(b)) => a.cmp(b),
            (V::Date(a), V::Timestamp(b)) => a.to_timestamp().cmp(b),
            (V::Timestamp(a), V::Date(b)) => a.cmp(&b.to_timestamp()),
            (V::Interval(a), V::Interval(b)) => a.cmp(b),
            (V::Char(a), V::Char(b)) => bpchar_cmp(a, b),
            _ => {
                let (a, b) = (self.str_value()?, other.str_value()?);
                a.cmp(b)
            }
        })
    }

    /// Reads text as a value of type `to`, as PostgreSQL's input functions (`'12.5'::
    /// numeric(5,2)`, `DATE '2024-01-05'`); string lengths are checked as on
    /// assignment.
    pub fn parse(text: &str, to: &DataType) -> Result<Value> {
        Ok(match *to {
            DataType::SmallInt => Value::SmallInt(parse_int(text)?),
            DataType::Integer => Value::Integer(parse_int(text)?),
            DataType::BigInt => Value::BigInt(parse_int(text)?),
            DataType::Real => Value::Real(parse_f32(text)?),
            DataType::Double => Value::Double(parse_f64(text)?),
            DataType::Decimal { precision, scale } => {
                let d = Decimal::parse(text)?;
                Value::Decimal(match precision {
                    Some(p) => d.apply_typmod(p, scale)?,
                    None => d,
                })
            }
            DataType::Date => Value::Date(Date::parse(text)?),
            DataType::Timestamp => Value::Timestamp(Timestamp::parse(text)?),
            DataType::Interval => Value::Interval(Interval::parse(text)?),
            DataType::Boolean => Value::Boolean(parse_bool(text)?),
            DataType::Char(n) => Value::Char(fit_char(text, n, LengthCheck::Assignment)?),
            DataType::Varchar(n) => Value::Varchar(fit_varchar(text, n, LengthCheck::Assignment)?),
            DataType::Text => Value::Text(text.to_string()),
        })
    }

    /// PostgreSQL's explicit cast, `CAST(self AS to)` / `self::to`. Strings too long
    /// for a `character(n)` or `varchar(n)` target are cut silently.
    pub fn cast(&self, to: &DataType) -> Result<Value> {
        self.cast_with(to, LengthCheck::Explicit)
    }

    /// PostgreSQL's assignment cast, as when storing into a column of type `to`:
    /// as [`Value::cast`], but a string too long for the target is an error unless
    /// the excess is spaces.
    pub fn cast_for_assignment(&self, to: &DataType) -> Result<Value> {
        self.cast_with(to, LengthCheck::Assignment)
    }

    /// The text of the value as a cast to `text` gives it (`character` without its
    /// padding).
    fn text_form(&self) -> String {
        match self.str_value() {
            Some(s) => s.to_string(),
            None => self.to_string(),
        }
    }

    fn cast_with(&self, to: &DataType, check: LengthCheck) -> Result<Value> {
        if self.is_null() {
            return Ok(Value::Null);
        }
        match *to {
            DataType::Text => return Ok(Value::Text(self.text_form())),
            DataType::Varchar(n) => {
                return Ok(Value::Varchar(fit_varchar(&self.text_form(), n, check)?));
            }
            DataType::Char(n) => return Ok(Value::Char(fit_char(&self.text_form(), n, check)?)),
            _ => {}
        }
        if let Some(s) = self.str_value() {
            return Value::parse(s, to);
        }
        let cannot = || Error::CannotCast {
            from: self.data_type().map_or("unknown".into(), |t| t.to_string()),
            to: to.to_string(),
        };
        Ok(match (*to, self) {
            (DataType::Integer, Value::Boolean(b)) => Value::Integer(*b as i32),
            (DataType::Boolean, Value::Integer(i)) => Value::Boolean(*i != 0),
            (DataType::Boolean, Value::Boolean(b)) => Value::Boolean(*b),
            (DataType::SmallInt, _) => Value::SmallInt(self.to_int().ok_or_else(cannot)??),
            (DataType::Integer, _) => Value::Integer(self.to_int().ok_or_else(cannot)??),
            (DataType::BigInt, _) => Value::BigInt(self.to_int().ok_or_else(cannot)??),
            (DataType::Double, _) => Value::Double(self.to_f64().ok_or_else(cannot)?),
            (DataType::Real, _) => {
                let wide = self.to_f64().ok_or_else(cannot)?;
                Value::Real(match self {
                    // Correctly rounded from the decimal, not twice through f64.
                    Value::Decimal(d) => d.to_f32(),
                    _ => narrow_to_f32(wide)?,
                })
            }
            (DataType::Decimal { precision, scale }, _) => {
                let d = match self {
                    Value::Decimal(d) => *d,
                    Value::Real(f) => Decimal::from_f32(*f)?,
                    Value::Double(f) => Decimal::from_f64(*f)?,
                    _ => match self.num() {
                        Some(Num::Int(i)) => Decimal::from_i64(i),
                        _ => return Err(cannot()),
                    },
                };
                Value::Decimal(match precision {
                    Some(p) => d.apply_typmod(p, scale)?,
                    None => d,
                })
            }
            (DataType::Date, Value::Date(d)) => Value::Date(*d),
            (DataType::Date, Value::Timestamp(t)) => Value::Date(t.date()),
            (DataType::Timestamp, Value::Timestamp(t)) => Value::Timestamp(*t),
            (DataType::Timestamp, Value::Date(d)) => Value::Timestamp(d.to_timestamp()),
            (DataType::Interval, Value::Interval(i)) => Value::Interval(*i),
            _ => return Err(cannot()),
        })
    }

    /// The value as an integer of type `T` with PostgreSQL's rounding (half away from
    /// zero from numeric, half to even from floats); `None` for a non-numeric value.
    fn to_int<T: SqlInt>(&self) -> Option<Result<T>> {
        Some(match self.num()? {
            Num::Int(i) => int_from_i64(i),
            Num::Float(f) => int_from_f64(f),
            Num::Dec(d) => match d.to_i64_rounded() {
                Some(i) => int_from_i64(i),
                None => Err(Error::OutOfRange {
                    type_name: T::TYPE_NAME,
                }),
            },
        })
    }

    /// The value as a double (nearest); `None` for a non-numeric value.
    fn to_f64(&self) -> Option<f64> {
        Some(match self.num()? {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
            Num::Dec(d) => d.to_f64(),
        })
    }
}

/// A double as a real, with PostgreSQL's overflow and underflow errors.
fn narrow_to_f32(v: f64) -> Result<f32> {
    let r = v as f32;
    if r.is_infinite() && v.is_finite() {
        return Err(Error::FloatOverflow);
    }
    if r == 0.0 && v != 0.0 {
        return Err(Error::FloatUnderflow);
    }
    Ok(r)
}

impl fmt::Display for Value {
    /// PostgreSQL's text output of the value. Booleans print `true`/`false` (the text
    /// of a cast to `text`; PostgreSQL's wire output is `t`/`f`) and NULL prints
    /// `NULL`: how a client shows them is its own choice.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("NULL"),
            Value::Boolean(b) => f.write_str(if *b { "true" } else { "false" }),
            Value::SmallInt(v) => write!(f, "{v}"),
            Value::Integer(v) => write!(f, "{v}"),
            Value::BigInt(v) => write!(f, "{v}"),
            Value::Real(v) => f.write_str(&format_f32(*v)),
            Value::Double(v) => f.write_str(&format_f64(*v)),
            Value::Decimal(v) => write!(f, "{v}"),
            Value::Date(v) => write!(f, "{v}"),
            Value::Timestamp(v) => write!(f, "{v}"),
            Value::Interval(v) => write!(f, "{v}"),
            Value::Char(s) | Value::Varchar(s) | Value::Text(s) => f.write_str(s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> Value {
        Value::Text(s.to_string())
    }

    fn dec(s: &str) -> Value {
        Value::Decimal(Decimal::parse(s).unwrap())
    }

    #[test]
    fn compares_numbers_across_types() {
        assert_eq!(
            Value::Integer(1).cmp_sql(&dec("1.00")),
            Some(Ordering::Equal)
        );
        assert_eq!(
            Value::SmallInt(2).cmp_sql(&Value::BigInt(1)),
            Some(Ordering::Greater)
        );
        assert_eq!(
            dec("0.1").cmp_sql(&Value::Double(0.1)),
            Some(Ordering::Less)
        );
        assert_eq!(
            Value::Double(0.5).cmp_sql(&dec("0.5")),
            Some(Ordering::Equal)
        );
        assert_eq!(
            Value::Real(0.5).cmp_sql(&Value::Double(0.5)),
            Some(Ordering::Equal)
        );
        assert_eq!(
            Value::BigInt(i64::MAX).cmp_sql(&Value::Double(2f64.powi(63))),
            Some(Ordering::Less)
        );
        assert_eq!(
            Value::Double(f64::NAN).cmp_sql(&Value::Double(f64::INFINITY)),
            Some(Ordering::Greater)
        );
        assert_eq!(
            Value::Double(f64::NAN).cmp_sql(&Value::Double(f64::NAN)),
            Some(Ordering::Equal)
        );
        assert_eq!(Value::Integer(1).cmp_sql(&Value::Null), None);
        assert_eq!(Value::Null.cmp_sql(&Value::Null), None);
        assert_eq!(Value::Integer(1).cmp_sql(&text("1")), None);
    }

    #[test]
    fn compares_other_types() {
        let date = Value::parse("1998-09-02", &DataType::Date).unwrap();
        let ts = Value::parse("1998-09-02 00:00:00", &DataType::Timestamp).unwrap();
        assert_eq!(date.cmp_sql(&ts), Some(Ordering::Equal));
        let later = Value::parse("1998-09-02 00:00:01", &DataType::Timestamp).unwrap();
        assert_eq!(date.cmp_sql(&later), Some(Ordering::Less));
        assert_eq!(later.cmp_sql(&date), Some(Ordering::Greater));
        // select 'ab '::char(3) = 'ab'::char(3) → true
        let a = text("ab ").cast(&DataType::Char(3)).unwrap();
        let b = text("ab").cast(&DataType::Char(3)).unwrap();
        assert_eq!(a.cmp_sql(&b), Some(Ordering::Equal));
        assert_eq!(a.cmp_sql(&text("ab")), Some(Ordering::Equal));
        assert_eq!(text("ab ").cmp_sql(&text("ab")), Some(Ordering::Greater));
        assert_eq!(
            Value::Boolean(false).cmp_sql(&Value::Boolean(true)),
            Some(Ordering::Less)
        );
        let month = Value::parse("1 month", &DataType::Interval).unwrap();
        let days = Value::parse("30 days", &DataType::Interval).unwrap();
        assert_eq!(month.cmp_sql(&days), Some(Ordering::Equal));
        assert_eq!(month.cmp_sql(&date), None);
    }

    #[test]
    fn casts_between_numbers() {
        let c = |v: Value, t: DataType| v.cast(&t).map(|v| v.to_string());
        assert_eq!(
            c(Value::Integer(40000), DataType::SmallInt)
                .unwrap_err()
                .to_string(),
            "smallint out of range"
        );
        assert_eq!(c(dec("2.5"), DataType::Integer), Ok("3".into()));
        assert_eq!(c(dec("-2.5"), DataType::Integer), Ok("-3".into()));
        assert_eq!(c(Value::Double(2.5), DataType::Integer), Ok("2".into()));
        assert_eq!(c(Value::Real(3.5), DataType::BigInt), Ok("4".into()));
        assert_eq!(
            c(dec("1e20"), DataType::BigInt).unwrap_err().to_string(),
            "bigint out of range"
        );
        assert_eq!(
            c(Value::Double(f64::NAN), DataType::Integer)
                .unwrap_err()
                .to_string(),
            "integer out of range"
        );
        assert_eq!(
            c(Value::Integer(7), DataType::decimal(5, 2).unwrap()),
            Ok("7.00".into())
        );
        assert_eq!(
            c(Value::Integer(1000), DataType::decimal(5, 2).unwrap()).unwrap_err(),
            Error::NumericFieldOverflow {
                precision: 5,
                scale: 2
            }
        );
        assert_eq!(c(Value::Double(0.1), DataType::NUMERIC), Ok("0.1".into()));
        assert_eq!(
            c(Value::Double(f64::INFINITY), DataType::NUMERIC)
                .unwrap_err()
                .to_string(),
            "cannot convert infinity to numeric"
        );
        assert_eq!(c(dec("0.1"), DataType::Double), Ok("0.1".into()));
        assert_eq!(c(dec("0.1"), DataType::Real), Ok("0.1".into()));
        assert_eq!(
            c(Value::Double(1e300), DataType::Real).unwrap_err(),
            Error::FloatOverflow
        );
        assert_eq!(
            c(Value::Double(1e-300), DataType::Real).unwrap_err(),
            Error::FloatUnderflow
        );
        assert_eq!(
            c(Value::BigInt(i64::MAX), DataType::Double),
            Ok("9.223372036854776e+18".into())
        );
        assert_eq!(c(Value::Boolean(true), DataType::Integer), Ok("1".into()));
        assert_eq!(c(Value::Integer(0), DataType::Boolean), Ok("false".into()));
        assert!(c(Value::BigInt(1), DataType::Boolean).is_err());
    }

    #[test]
    fn casts_with_text() {
        let c = |v: Value, t: DataType| v.cast(&t).map(|v| v.to_string());
        assert_eq!(c(text("  TRUE "), DataType::Boolean), Ok("true".into()));
        assert_eq!(c(text("12.340"), DataType::NUMERIC), Ok("12.340".into()));
        assert_eq!(
            c(text("abc"), DataType::Integer).unwrap_err().to_string(),
            "invalid input syntax for type integer: \"abc\""
        );
        assert_eq!(
            c(text("2024-02-30"), DataType::Date)
                .unwrap_err()
                .to_string(),
            "date/time field value out of range: \"2024-02-30\""
        );
        assert_eq!(c(Value::Boolean(false), DataType::Text), Ok("false".into()));
        assert_eq!(c(dec("1.50"), DataType::Text), Ok("1.50".into()));
        assert_eq!(
            c(Value::Double(1e20), DataType::Varchar(None)),
            Ok("1e+20".into())
        );
        // Explicit casts cut; assignment errors.
        assert_eq!(
            c(text("abcdef"), DataType::Varchar(Some(3))),
            Ok("abc".into())
        );
        assert_eq!(
            text("abcdef")
                .cast_for_assignment(&DataType::Varchar(Some(5)))
                .unwrap_err()
                .to_string(),
            "value too long for type character varying(5)"
        );
        assert_eq!(
            text("abc  ").cast_for_assignment(&DataType::Varchar(Some(3))),
            Ok(Value::Varchar("abc".into()))
        );
        assert_eq!(c(text("ab"), DataType::Char(4)), Ok("ab  ".into()));
        // character → text drops the padding.
        let padded = text("ab").cast(&DataType::Char(4)).unwrap();
        assert_eq!(padded.cast(&DataType::Text), Ok(text("ab")));
        assert_eq!(padded.data_type(), Some(DataType::Char(4)));
        assert_eq!(c(text(" 42 "), DataType::SmallInt), Ok("42".into()));
        let date = text("2024-01-05").cast(&DataType::Date).unwrap();
        assert_eq!(
            date.cast(&DataType::Timestamp).unwrap().to_string(),
            "2024-01-05 00:00:00"
        );
        let ts = text("2024-01-05 10:30").cast(&DataType::Timestamp).unwrap();
        assert_eq!(ts.cast(&DataType::Date), Ok(date.clone()));
        assert_eq!(
            date.cast(&DataType::Integer).unwrap_err().to_string(),
            "cannot cast type date to integer"
        );
        assert_eq!(Value::Null.cast(&DataType::Integer), Ok(Value::Null));
        assert_eq!(
            Value::parse("1 day", &DataType::Interval)
                .unwrap()
                .cast(&DataType::Text),
            Ok(text("1 day"))
        );
    }

    #[test]
    fn data_types_of_values() {
        assert_eq!(Value::Null.data_type(), None);
        assert_eq!(dec("1.5").data_type(), Some(DataType::NUMERIC));
        assert_eq!(Value::Real(1.0).data_type(), Some(DataType::Real));
        assert_eq!(text("x").data_type(), Some(DataType::Text));
    }
}
