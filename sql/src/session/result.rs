//! What a statement returns: column descriptions, rows, and the command tag.

use crate::error::{Error, Result};
use crate::types::{DataType, Date, Decimal, Interval, Timestamp, Value};

/// One output column of a statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub name: String,
    pub data_type: DataType,
}

/// One result row.
#[derive(Debug, Clone, PartialEq)]
pub struct Row(pub Vec<Value>);

impl Row {
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn values(&self) -> &[Value] {
        &self.0
    }

    /// Value `i` (0-based).
    pub fn value(&self, i: usize) -> Option<&Value> {
        self.0.get(i)
    }

    /// Value `i` converted to a Rust type; `Option<T>` accepts NULL.
    pub fn get<T: FromValue>(&self, i: usize) -> Result<T> {
        let v = self.0.get(i).ok_or_else(|| {
            Error::semantic(
                "42703",
                format!("column index {i} out of range (row has {} columns)", self.0.len()),
            )
        })?;
        T::from_value(v)
    }
}

/// The result of one statement.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryResult {
    /// Output columns (empty for statements that return no rows).
    pub columns: Vec<Column>,
    pub rows: Vec<Row>,
    /// PostgreSQL's command tag: `SELECT 3`, `INSERT 0 5`, `CREATE TABLE`, `BEGIN`.
    pub tag: String,
    /// Rows inserted, updated, deleted or copied; rows returned for a query.
    pub rows_affected: u64,
}

impl QueryResult {
    pub fn command(tag: impl Into<String>) -> QueryResult {
        QueryResult {
            columns: Vec::new(),
            rows: Vec::new(),
            tag: tag.into(),
            rows_affected: 0,
        }
    }

    /// Whether the statement returns rows (a query, EXPLAIN, SHOW), even if zero.
    pub fn has_rows(&self) -> bool {
        !self.columns.is_empty()
    }
}

/// Conversion from an SQL value to a Rust type, for [`Row::get`].
pub trait FromValue: Sized {
    fn from_value(v: &Value) -> Result<Self>;
}

fn mismatch(v: &Value, want: &str) -> Error {
    Error::datatype_mismatch(format!(
        "cannot read {} value as {want}",
        v.data_type().map_or("NULL".to_string(), |t| t.to_string())
    ))
}

impl<T: FromValue> FromValue for Option<T> {
    fn from_value(v: &Value) -> Result<Self> {
        if v.is_null() {
            Ok(None)
        } else {
            T::from_value(v).map(Some)
        }
    }
}

impl FromValue for Value {
    fn from_value(v: &Value) -> Result<Self> {
        Ok(v.clone())
    }
}

impl FromValue for i64 {
    fn from_value(v: &Value) -> Result<Self> {
        match v {
            Value::SmallInt(x) => Ok(*x as i64),
            Value::Integer(x) => Ok(*x as i64),
            Value::BigInt(x) => Ok(*x),
            _ => Err(mismatch(v, "i64")),
        }
    }
}

impl FromValue for i32 {
    fn from_value(v: &Value) -> Result<Self> {
        match v {
            Value::SmallInt(x) => Ok(*x as i32),
            Value::Integer(x) => Ok(*x),
            Value::BigInt(x) => i32::try_from(*x).map_err(|_| mismatch(v, "i32")),
            _ => Err(mismatch(v, "i32")),
        }
    }
}

impl FromValue for i16 {
    fn from_value(v: &Value) -> Result<Self> {
        match v {
            Value::SmallInt(x) => Ok(*x),
            Value::Integer(x) => i16::try_from(*x).map_err(|_| mismatch(v, "i16")),
            Value::BigInt(x) => i16::try_from(*x).map_err(|_| mismatch(v, "i16")),
            _ => Err(mismatch(v, "i16")),
        }
    }
}

impl FromValue for f64 {
    fn from_value(v: &Value) -> Result<Self> {
        match v {
            Value::Real(x) => Ok(*x as f64),
            Value::Double(x) => Ok(*x),
            Value::SmallInt(x) => Ok(*x as f64),
            Value::Integer(x) => Ok(*x as f64),
            Value::BigInt(x) => Ok(*x as f64),
            Value::Decimal(d) => Ok(d.to_f64()),
            _ => Err(mismatch(v, "f64")),
        }
    }
}

impl FromValue for f32 {
    fn from_value(v: &Value) -> Result<Self> {
        match v {
            Value::Real(x) => Ok(*x),
            _ => f64::from_value(v).map(|x| x as f32),
        }
    }
}

impl FromValue for bool {
    fn from_value(v: &Value) -> Result<Self> {
        match v {
            Value::Boolean(b) => Ok(*b),
            _ => Err(mismatch(v, "bool")),
        }
    }
}

impl FromValue for String {
    fn from_value(v: &Value) -> Result<Self> {
        match v {
            Value::Char(s) | Value::Varchar(s) | Value::Text(s) => Ok(s.clone()),
            Value::Null => Err(mismatch(v, "String")),
            other => Ok(other.to_string()),
        }
    }
}

impl FromValue for Decimal {
    fn from_value(v: &Value) -> Result<Self> {
        match v {
            Value::Decimal(d) => Ok(*d),
            Value::SmallInt(x) => Ok(Decimal::from_i64(*x as i64)),
            Value::Integer(x) => Ok(Decimal::from_i64(*x as i64)),
            Value::BigInt(x) => Ok(Decimal::from_i64(*x)),
            _ => Err(mismatch(v, "Decimal")),
        }
    }
}

impl FromValue for Date {
    fn from_value(v: &Value) -> Result<Self> {
        match v {
            Value::Date(d) => Ok(*d),
            _ => Err(mismatch(v, "Date")),
        }
    }
}

impl FromValue for Timestamp {
    fn from_value(v: &Value) -> Result<Self> {
        match v {
            Value::Timestamp(t) => Ok(*t),
            _ => Err(mismatch(v, "Timestamp")),
        }
    }
}

impl FromValue for Interval {
    fn from_value(v: &Value) -> Result<Self> {
        match v {
            Value::Interval(i) => Ok(*i),
            _ => Err(mismatch(v, "Interval")),
        }
    }
}
