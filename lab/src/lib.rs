//! BeeDB's performance lab (`beedb bench`): workloads run side by side on BeeDB
//! (bees on and off) and its peers, every answer verified, ratios measured in one run.

pub mod engine;
pub mod chart;
pub mod report;
