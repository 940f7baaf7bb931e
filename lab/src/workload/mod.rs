//! The workloads `beedb bench` runs.

pub mod load;
pub mod optimizer;
pub mod python;
pub mod tp1;
pub mod tpcc;
pub mod tpcds;
pub mod tpch;
pub mod wisconsin;
