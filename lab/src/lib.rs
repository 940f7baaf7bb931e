//! BeeDB's performance lab (`beedb bench`): workloads run side by side on BeeDB
//! (bees on and off) and its peers (SQLite, DuckDB, PostgreSQL), every answer
//! verified, ratios measured in one run. See `lab/README.md`.

pub mod bench;
pub mod callgrind;
pub mod chart;
pub mod cli;
pub mod engine;
pub mod machine;
pub mod progress;
pub mod report;
pub mod tpch_data;
pub mod verify;
pub mod workload;

pub use cli::bench_main;
