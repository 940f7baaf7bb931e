//! BeeDB's SQL engine: from SQL text to results.
//!
//! Modules in pipeline order:
//! - [`parser`]: `sqlparser` (PostgreSQL dialect) and the glue for positions in errors;
//! - [`catalog`]: tables, columns, indexes and views, stored in the database file;
//! - `binder`: names and types resolved, implicit casts inserted → a logical plan;
//! - `optimizer`: logical rewrites and physical choices (access paths, join order and
//!   methods), one file per rule as it grows;
//! - [`expr`] and [`vector`]: bound expressions, column vectors and the generic
//!   vectorized evaluator;
//! - `exec`: the push-based operators;
//! - `engine`: statements and transactions;
//! - [`session`]: the public API, [`Database`], [`Connection`], [`Statement`].
//!
//! [`types`] holds the SQL value types all of them share.

mod binder;
pub mod catalog;
mod engine;
pub mod error;
pub mod exec;
pub mod expr;
pub mod parser;
pub mod plan;
mod optimizer;
pub mod bees;
pub mod session;
pub mod stack;
pub mod types;
pub mod vector;

pub use engine::copy::MAX_COPY_LINE_BYTES;
pub use error::{Error, ErrorKind, Result};
pub use expr::udf::{AggregateFunction, AggregateState, ScalarFunction};
pub use session::{
    Column, ColumnSlice, ColumnValues, Connection, Database, DatabaseOptions, FromValue, InterruptHandle, QueryResult, ResultBatch,
    ResultStream, Row,
    STATEMENT_CACHE_SIZE, STATEMENT_CACHE_TEXT_BYTES_MAX, Settings, Statement, TransactionStatus,
};
pub use types::{DataType, Value};
