//! How each SQL type is stored: its tuple column format and its index key kind.
//!
//! | type                  | stored as                                   | key kind |
//! |-----------------------|---------------------------------------------|----------|
//! | boolean               | fixed 1 byte                                | Bool     |
//! | smallint              | fixed 2, little-endian                      | Int16    |
//! | integer, date         | fixed 4                                     | Int32, Date |
//! | bigint, timestamp     | fixed 8                                     | Int64, Timestamp |
//! | real, double          | fixed 4, 8 (IEEE bits)                      | Float32, Float64 |
//! | numeric(p,s)          | fixed 16: unscaled i128 at the column scale | Decimal  |
//! | numeric               | variable 17: unscaled i128 + scale byte     | Decimal at scale [`UNCONSTRAINED_KEY_SCALE`] |
//! | interval              | fixed 16: months i32, days i32, micros i64  | Interval |
//! | char, varchar, text   | variable UTF-8 (char(n) with its padding)   | Text (char without padding) |

use beedb_storage::btree::key_encoding::{KeyColumn, KeyKind, KeySpec};
use beedb_storage::tuple::ColumnFormat;

use super::{IndexDef, TableDef};
use crate::types::DataType;

/// Scale at which unconstrained `numeric` values are keyed in an index.
pub const UNCONSTRAINED_KEY_SCALE: u8 = 12;

pub fn column_format(ty: &DataType, nullable: bool) -> ColumnFormat {
    match ty {
        DataType::Boolean => ColumnFormat::fixed(1, nullable),
        DataType::SmallInt => ColumnFormat::fixed(2, nullable),
        DataType::Integer | DataType::Date | DataType::Real => ColumnFormat::fixed(4, nullable),
        DataType::BigInt | DataType::Timestamp | DataType::Double => {
            ColumnFormat::fixed(8, nullable)
        }
        DataType::Decimal {
            precision: Some(_), ..
        } => ColumnFormat::fixed(16, nullable),
        DataType::Decimal { precision: None, .. } => ColumnFormat::variable(nullable),
        DataType::Interval => ColumnFormat::fixed(16, nullable),
        DataType::Char(_) | DataType::Varchar(_) | DataType::Text => {
            ColumnFormat::variable(nullable)
        }
    }
}

pub fn key_kind(ty: &DataType) -> KeyKind {
    match ty {
        DataType::Boolean => KeyKind::Bool,
        DataType::SmallInt => KeyKind::Int16,
        DataType::Integer => KeyKind::Int32,
        DataType::BigInt => KeyKind::Int64,
        DataType::Real => KeyKind::Float32,
        DataType::Double => KeyKind::Float64,
        DataType::Decimal { .. } => KeyKind::Decimal,
        DataType::Date => KeyKind::Date,
        DataType::Timestamp => KeyKind::Timestamp,
        DataType::Interval => KeyKind::Interval,
        DataType::Char(_) | DataType::Varchar(_) | DataType::Text => KeyKind::Text,
    }
}

/// The key spec of an index: ascending columns, NULLs last (PostgreSQL's default).
pub fn index_key_spec(table: &TableDef, index: &IndexDef) -> KeySpec {
    let cols = index
        .columns
        .iter()
        .map(|&c| KeyColumn::asc(key_kind(&table.columns[c].ty)))
        .collect();
    KeySpec::new(cols).expect("index with at least one column")
}
