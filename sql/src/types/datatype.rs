//! [`DataType`]: the SQL types a column or an expression can have, with their type
//! modifiers (`numeric(15,2)`, `varchar(44)`), printed with PostgreSQL's names.

use std::fmt;

use super::decimal::MAX_PRECISION;
use super::error::{Error, Result};

/// The longest `character(n)` / `character varying(n)` PostgreSQL accepts.
pub const MAX_CHAR_LENGTH: u32 = 10_485_760;

/// An SQL data type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DataType {
    /// 16-bit integer (`smallint`, `int2`).
    SmallInt,
    /// 32-bit integer (`integer`, `int`, `int4`).
    Integer,
    /// 64-bit integer (`bigint`, `int8`).
    BigInt,
    /// 32-bit float (`real`, `float4`).
    Real,
    /// 64-bit float (`double precision`, `float8`).
    Double,
    /// Exact decimal (`numeric`, `decimal`). `precision: Some(p)` is `numeric(p,s)`:
    /// values are rounded to `scale` digits and must have at most `p` digits in all.
    /// `precision: None` is the unconstrained `numeric`: every value keeps its own
    /// scale, up to BeeDB's limit of 38 digits (PostgreSQL's unconstrained numeric
    /// has no such limit); `scale` is then 0 and has no meaning.
    Decimal { precision: Option<u8>, scale: u8 },
    /// Calendar date.
    Date,
    /// Date and time without time zone.
    Timestamp,
    /// A span of months, days and microseconds.
    Interval,
    /// `character(n)`: blank-padded to exactly `n` characters.
    Char(u32),
    /// `character varying(n)`, or without a limit when `None`.
    Varchar(Option<u32>),
    /// `text`: unlimited.
    Text,
    /// `boolean`.
    Boolean,
}

impl DataType {
    /// The unconstrained `numeric`.
    pub const NUMERIC: DataType = DataType::Decimal {
        precision: None,
        scale: 0,
    };

    /// `numeric(precision, scale)`, checking 1 ≤ precision ≤ 38 and scale ≤ precision.
    pub fn decimal(precision: u32, scale: u32) -> Result<DataType> {
        if !(1..=MAX_PRECISION as u32).contains(&precision) {
            return Err(Error::InvalidTypeModifier(format!(
                "NUMERIC precision {precision} must be between 1 and {MAX_PRECISION}"
            )));
        }
        if scale > precision {
            return Err(Error::InvalidTypeModifier(format!(
                "NUMERIC scale {scale} must be between 0 and precision {precision}"
            )));
        }
        Ok(DataType::Decimal {
            precision: Some(precision as u8),
            scale: scale as u8,
        })
    }

    fn check_length(kind: &str, n: u32) -> Result<u32> {
        if (1..=MAX_CHAR_LENGTH).contains(&n) {
            Ok(n)
        } else {
            Err(Error::InvalidTypeModifier(format!(
                "length for type {kind} must be between 1 and {MAX_CHAR_LENGTH}"
            )))
        }
    }

    /// `character(n)`, checking 1 ≤ n ≤ 10485760.
    pub fn char(n: u32) -> Result<DataType> {
        Ok(DataType::Char(Self::check_length("char", n)?))
    }

    /// `character varying(n)`, checking 1 ≤ n ≤ 10485760.
    pub fn varchar(n: u32) -> Result<DataType> {
        Ok(DataType::Varchar(Some(Self::check_length("varchar", n)?)))
    }

    /// True for the integer, float and decimal types.
    pub fn is_numeric(&self) -> bool {
        matches!(
            self,
            DataType::SmallInt
                | DataType::Integer
                | DataType::BigInt
                | DataType::Real
                | DataType::Double
                | DataType::Decimal { .. }
        )
    }

    /// True for `character`, `character varying` and `text`.
    pub fn is_string(&self) -> bool {
        matches!(
            self,
            DataType::Char(_) | DataType::Varchar(_) | DataType::Text
        )
    }
}

impl fmt::Display for DataType {
    /// The name PostgreSQL prints (`format_type`): `integer`, `numeric(15,2)`,
    /// `character varying(44)`, `timestamp without time zone`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DataType::SmallInt => f.write_str("smallint"),
            DataType::Integer => f.write_str("integer"),
            DataType::BigInt => f.write_str("bigint"),
            DataType::Real => f.write_str("real"),
            DataType::Double => f.write_str("double precision"),
            DataType::Decimal {
                precision: None, ..
            } => f.write_str("numeric"),
            DataType::Decimal {
                precision: Some(p),
                scale,
            } => write!(f, "numeric({p},{scale})"),
            DataType::Date => f.write_str("date"),
            DataType::Timestamp => f.write_str("timestamp without time zone"),
            DataType::Interval => f.write_str("interval"),
            DataType::Char(n) => write!(f, "character({n})"),
            DataType::Varchar(None) => f.write_str("character varying"),
            DataType::Varchar(Some(n)) => write!(f, "character varying({n})"),
            DataType::Text => f.write_str("text"),
            DataType::Boolean => f.write_str("boolean"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_like_postgres() {
        assert_eq!(DataType::Integer.to_string(), "integer");
        assert_eq!(
            DataType::decimal(15, 2).unwrap().to_string(),
            "numeric(15,2)"
        );
        assert_eq!(DataType::NUMERIC.to_string(), "numeric");
        assert_eq!(DataType::char(10).unwrap().to_string(), "character(10)");
        assert_eq!(
            DataType::varchar(44).unwrap().to_string(),
            "character varying(44)"
        );
        assert_eq!(DataType::Varchar(None).to_string(), "character varying");
        assert_eq!(
            DataType::Timestamp.to_string(),
            "timestamp without time zone"
        );
        assert_eq!(DataType::Double.to_string(), "double precision");
        assert!(DataType::decimal(39, 2).is_err());
        assert!(DataType::decimal(0, 0).is_err());
        assert!(DataType::decimal(5, 6).is_err());
        assert!(DataType::varchar(0).is_err());
        assert!(DataType::char(MAX_CHAR_LENGTH + 1).is_err());
        assert!(DataType::Real.is_numeric() && !DataType::Text.is_numeric());
        assert!(DataType::Char(3).is_string());
    }
}
