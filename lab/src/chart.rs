//! PNG charts of a report (placeholder until the chart module lands).
use std::path::{Path, PathBuf};

use crate::report::Report;

/// Writes one chart per unit of `report` into `dir`; returns the files written.
pub fn write_charts(_report: &Report, _dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    Ok(Vec::new())
}
