//! BeeDB: an embedded relational database in one file. This crate is the front door:
//! it re-exports the engine's API ([`Database`], [`Connection`], [`Statement`]) and
//! holds the shell (`beedb`) and the sqllogictest runner (`beedb-slt`).

pub use beedb_sql::{
    Column, Connection, DataType, Database, DatabaseOptions, Error, ErrorKind, FromValue,
    InterruptHandle, QueryResult, Result, Row, Settings, Statement, Value, types,
};

pub mod slt;
