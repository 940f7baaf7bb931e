//! DuckDB through its Python package (placeholder until the adapter lands).
use std::path::Path;

use super::{Durability, Engine, EngineKind, LabError, LabResult, Outcome, Param};

pub struct DuckdbPeer;
pub struct DuckdbEngine;

impl DuckdbPeer {
    pub fn find() -> LabResult<DuckdbPeer> {
        Err(LabError::new("the DuckDB adapter is not built yet"))
    }
    pub fn version(&self) -> String {
        String::new()
    }
    pub fn open(&self, _path: &Path) -> LabResult<DuckdbEngine> {
        Err(LabError::new("the DuckDB adapter is not built yet"))
    }
}

impl Engine for DuckdbEngine {
    fn kind(&self) -> EngineKind {
        EngineKind::Duckdb
    }
    fn run(&mut self, _sql: &str, _params: &[Param]) -> LabResult<Outcome> {
        unimplemented!()
    }
    fn begin_write(&mut self) -> LabResult<()> {
        unimplemented!()
    }
    fn set_durability(&mut self, _d: Durability) -> LabResult<()> {
        unimplemented!()
    }
    fn bulk_load(&mut self, _table: &str, _file: &Path) -> LabResult<u64> {
        unimplemented!()
    }
    fn bytes_on_disk(&mut self) -> LabResult<u64> {
        unimplemented!()
    }
    fn connect_another(&self) -> LabResult<Box<dyn Engine>> {
        unimplemented!()
    }
}
