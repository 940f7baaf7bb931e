//! Type rules of the binder: SQL type names, common types of two operands, and which
//! casts PostgreSQL applies implicitly or on assignment.

use sqlparser::ast;

use crate::error::{Error, Result};
use crate::types::DataType;

/// The BeeDB type for an SQL type name.
pub fn data_type(t: &ast::DataType) -> Result<DataType> {
    use ast::DataType as A;
    let char_len = |l: &Option<ast::CharacterLength>| -> Result<Option<u32>> {
        Ok(match l {
            None => None,
            Some(ast::CharacterLength::IntegerLength { length, .. }) => {
                Some(u32::try_from(*length).map_err(|_| {
                    Error::from(crate::types::Error::InvalidTypeModifier(format!(
                        "length for type varchar cannot exceed {}",
                        crate::types::MAX_CHAR_LENGTH
                    )))
                })?)
            }
            Some(ast::CharacterLength::Max) => None,
        })
    };
    let exact = |info: &ast::ExactNumberInfo| -> Result<DataType> {
        Ok(match info {
            ast::ExactNumberInfo::None => DataType::NUMERIC,
            ast::ExactNumberInfo::Precision(p) => DataType::decimal(clamp(*p), 0)?,
            ast::ExactNumberInfo::PrecisionAndScale(p, s) => {
                let s = u32::try_from(*s).map_err(|_| {
                    Error::from(crate::types::Error::InvalidTypeModifier(
                        "NUMERIC scale must be between 0 and precision".into(),
                    ))
                })?;
                DataType::decimal(clamp(*p), s)?
            }
        })
    };
    Ok(match t {
        A::SmallInt(_) | A::Int2(_) => DataType::SmallInt,
        A::Int(_) | A::Integer(_) | A::Int4(_) => DataType::Integer,
        A::BigInt(_) | A::Int8(_) => DataType::BigInt,
        A::Real | A::Float4 => DataType::Real,
        A::Double(_) | A::DoublePrecision | A::Float8 | A::Float64 => DataType::Double,
        A::Float(info) => match info {
            ast::ExactNumberInfo::Precision(p) if *p <= 24 => DataType::Real,
            _ => DataType::Double,
        },
        A::Numeric(i) | A::Decimal(i) | A::Dec(i) => exact(i)?,
        A::Boolean | A::Bool => DataType::Boolean,
        A::Date => DataType::Date,
        A::Timestamp(_, tz) => {
            if matches!(tz, ast::TimezoneInfo::WithTimeZone | ast::TimezoneInfo::Tz) {
                return Err(Error::not_supported(
                    "timestamp with time zone is not supported",
                ));
            }
            DataType::Timestamp
        }
        A::Datetime(_) => DataType::Timestamp,
        A::Interval { .. } => DataType::Interval,
        A::Text | A::String(None) => DataType::Text,
        A::Char(l) | A::Character(l) => DataType::char(char_len(l)?.unwrap_or(1))?,
        A::Varchar(l) | A::CharacterVarying(l) | A::CharVarying(l) | A::Nvarchar(l) => {
            match char_len(l)? {
                Some(n) => DataType::varchar(n)?,
                None => DataType::Varchar(None),
            }
        }
        A::Custom(name, mods) => {
            let n = name.to_string().to_ascii_lowercase();
            match (n.as_str(), mods.len()) {
                ("int2", 0) => DataType::SmallInt,
                ("int4", 0) => DataType::Integer,
                ("int8", 0) => DataType::BigInt,
                ("float4", 0) => DataType::Real,
                ("float8", 0) => DataType::Double,
                ("bpchar", 0) => DataType::Text,
                ("bpchar", 1) => DataType::char(parse_mod(&mods[0])?)?,
                ("string", 0) => DataType::Text,
                _ => {
                    return Err(Error::semantic(
                        "42704",
                        format!("type \"{n}\" does not exist"),
                    ));
                }
            }
        }
        other => {
            return Err(Error::not_supported(format!(
                "type \"{}\" is not supported",
                other.to_string().to_lowercase()
            )));
        }
    })
}

fn clamp(p: u64) -> u32 {
    p.min(u32::MAX as u64) as u32
}

fn parse_mod(s: &str) -> Result<u32> {
    s.trim().parse().map_err(|_| {
        Error::from(crate::types::Error::InvalidTypeModifier(format!(
            "type modifier \"{s}\" is not a number"
        )))
    })
}

/// Rank in PostgreSQL's numeric promotion order.
pub fn numeric_rank(t: &DataType) -> Option<u8> {
    Some(match t {
        DataType::SmallInt => 1,
        DataType::Integer => 2,
        DataType::BigInt => 3,
        DataType::Decimal { .. } => 4,
        DataType::Real => 5,
        DataType::Double => 6,
        _ => return None,
    })
}

pub fn is_integer(t: &DataType) -> bool {
    matches!(t, DataType::SmallInt | DataType::Integer | DataType::BigInt)
}

/// The type two operands are brought to for comparison, CASE, UNION, IN lists:
/// `None` when PostgreSQL has no implicit conversion between them.
pub fn common_type(a: &DataType, b: &DataType) -> Option<DataType> {
    if a == b {
        return Some(*a);
    }
    if let (Some(ra), Some(rb)) = (numeric_rank(a), numeric_rank(b)) {
        // real with anything but real resolves to double precision, PostgreSQL's
        // preferred numeric type.
        if matches!(a, DataType::Real) != matches!(b, DataType::Real) && ra.max(rb) == 5 {
            return Some(DataType::Double);
        }
        let t = if ra >= rb { a } else { b };
        return Some(match t {
            DataType::Decimal { .. } => DataType::NUMERIC,
            t => *t,
        });
    }
    match (a, b) {
        (DataType::Char(_), DataType::Char(_)) => Some(DataType::Text),
        (x, y) if x.is_string() && y.is_string() => Some(DataType::Text),
        (DataType::Date, DataType::Timestamp) | (DataType::Timestamp, DataType::Date) => {
            Some(DataType::Timestamp)
        }
        _ => None,
    }
}

/// Whether PostgreSQL converts `from` to `to` implicitly in an expression (function
/// arguments): numeric widening, string to string, date to timestamp, anything to
/// text is *not* implicit (except strings).
pub fn implicit_castable(from: &DataType, to: &DataType) -> bool {
    if from == to {
        return true;
    }
    match (numeric_rank(from), numeric_rank(to)) {
        (Some(a), Some(b)) => return a <= b,
        (Some(_), None) | (None, Some(_)) => return false,
        _ => {}
    }
    (from.is_string() && to.is_string())
        || matches!((from, to), (DataType::Date, DataType::Timestamp))
}

/// Whether a value of `from` may be stored in a column of `to` (PostgreSQL's
/// assignment casts).
pub fn assignment_castable(from: &DataType, to: &DataType) -> bool {
    implicit_castable(from, to)
        || (numeric_rank(from).is_some() && numeric_rank(to).is_some())
        || matches!((from, to), (DataType::Timestamp, DataType::Date))
        || to.is_string()
}

/// PostgreSQL's name for a type in messages (`integer`, `character varying`).
pub fn type_name(t: &DataType) -> String {
    match t {
        DataType::Decimal { .. } => "numeric".into(),
        DataType::Char(_) => "character".into(),
        DataType::Varchar(_) => "character varying".into(),
        t => t.to_string(),
    }
}
