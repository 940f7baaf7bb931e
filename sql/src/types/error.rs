//! The error type of the SQL value types. Every failure on user input (bad text, an
//! overflow, a division by zero, a value too long) reaches the caller as an [`Error`]
//! carrying PostgreSQL's message, so clients see the wording they know; nothing in this
//! module panics on bad input.

/// Result alias used throughout the SQL value types.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong while reading, converting or computing an SQL value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// An integer result or conversion does not fit its type; `type_name` is
    /// `smallint`, `integer` or `bigint`, as in PostgreSQL's message.
    #[error("{type_name} out of range")]
    OutOfRange { type_name: &'static str },
    /// Integer text whose value does not fit the type (PostgreSQL's input functions).
    #[error("value \"{input}\" is out of range for type {type_name}")]
    IntInputOutOfRange {
        type_name: &'static str,
        input: String,
    },
    /// Division (or remainder) by zero, for every numeric type.
    #[error("division by zero")]
    DivisionByZero,
    /// Text that is not a value of the type at all.
    #[error("invalid input syntax for type {type_name}: \"{input}\"")]
    InvalidSyntax { type_name: String, input: String },
    /// Text with the right shape but a field outside its range (month 13, February 30,
    /// hour 25).
    #[error("date/time field value out of range: \"{input}\"")]
    DateTimeFieldOutOfRange { input: String },
    /// Interval text whose amounts overflow the interval's fields.
    #[error("interval field value out of range: \"{input}\"")]
    IntervalFieldOutOfRange { input: String },
    /// Text for a floating-point type whose value overflows or underflows it.
    #[error("\"{input}\" is out of range for type {type_name}")]
    FloatInputOutOfRange {
        type_name: &'static str,
        input: String,
    },
    /// A date, timestamp or interval result outside the supported range; `what` is
    /// `date`, `timestamp` or `interval`.
    #[error("{what} out of range")]
    DateTimeOutOfRange { what: &'static str },
    /// A string longer than the declared length of a `character` or `character
    /// varying` column, with more than spaces beyond the limit.
    #[error("value too long for type {type_name}")]
    ValueTooLong { type_name: String },
    /// A numeric value that does not fit the precision of `numeric(p,s)` once rounded
    /// to its scale.
    #[error(
        "numeric field overflow: a field with precision {precision}, scale {scale} must round to an absolute value less than 10^{}",
        precision - scale
    )]
    NumericFieldOverflow { precision: u8, scale: u8 },
    /// A numeric result that needs more than the 38 digits a decimal holds before the
    /// decimal point.
    #[error("value overflows numeric format")]
    NumericOverflow,
    /// A floating-point special value (NaN, Infinity) has no numeric equivalent here.
    #[error("cannot convert {0} to numeric")]
    NotNumeric(&'static str),
    /// A floating-point result that overflows its type.
    #[error("value out of range: overflow")]
    FloatOverflow,
    /// A double that becomes zero as a real although it is not zero.
    #[error("value out of range: underflow")]
    FloatUnderflow,
    /// No cast exists between the two types.
    #[error("cannot cast type {from} to {to}")]
    CannotCast { from: String, to: String },
    /// A type modifier outside its range, such as `numeric(40,2)` or `varchar(0)`.
    #[error("invalid type modifier: {0}")]
    InvalidTypeModifier(String),
    /// A field name `extract` does not know for the type, such as `hour` of a date.
    #[error("unit \"{unit}\" not supported for type {type_name}")]
    UnsupportedField {
        unit: String,
        type_name: &'static str,
    },
}

impl Error {
    /// Shorthand for text that does not parse as `type_name`.
    pub fn syntax(type_name: impl Into<String>, input: &str) -> Self {
        Error::InvalidSyntax {
            type_name: type_name.into(),
            input: input.to_string(),
        }
    }
}
