//! BeeDB's SQL engine. Today it holds only the SQL value types ([`types`]): the data
//! types, their values, PostgreSQL's text input and output, arithmetic and casts. The
//! parser, binder, planner and executor will be built on them.

pub mod types;
