//! BeeDB: an embedded relational database in one file. This crate is the library that
//! applications depend on: it re-exports the engine's public API ([`Database`],
//! [`Connection`], [`Statement`], rows, values and errors) from `beedb-sql`, and nothing
//! else — the shell, the lab and the test runners are in `beedb-cli`, so embedding BeeDB
//! compiles only the engine.

pub use beedb_sql::parser::parse_data_type;
pub use beedb_sql::{
    AggregateFunction, AggregateState, Column, ColumnSlice, ColumnValues, Connection, DataType, Database, DatabaseOptions,
    Error, ErrorKind, FromValue, InterruptHandle, QueryResult, Result, ResultBatch, ResultStream, Row, ScalarFunction,
    Settings, Statement, TransactionStatus, Value, types,
};
