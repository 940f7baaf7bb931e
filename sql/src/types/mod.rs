//! SQL value types with PostgreSQL's semantics: the [`DataType`]s a column or
//! expression can have, the [`Value`]s they hold, text input and output in
//! PostgreSQL's formats, arithmetic with PostgreSQL's overflow and rounding rules, and
//! explicit and assignment casts.
//!
//! Each type's module says what it implements and where it differs from PostgreSQL.

mod datatype;
mod datetime;
mod decimal;
mod error;
mod interval;
pub mod json;
pub mod number;
pub mod text;
pub mod to_char;
mod value;
mod wide;

#[cfg(test)]
mod tests;

pub use datatype::{DataType, MAX_CHAR_LENGTH};
pub use datetime::{Date, DateField, Timestamp, days_in_month};
pub use decimal::{Decimal, MAX_PRECISION, MAX_SCALE};
pub use error::{Error, Result};
pub use interval::{
    Interval, IntervalField, MICROS_PER_DAY, MICROS_PER_HOUR, MICROS_PER_MINUTE, MICROS_PER_SECOND,
};
pub use value::Value;
