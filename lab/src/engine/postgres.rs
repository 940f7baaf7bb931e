//! PostgreSQL, a private server (placeholder until the adapter lands).
use std::path::Path;

use super::{Durability, Engine, EngineKind, LabError, LabResult, Outcome, Param};

pub struct PostgresServer;
pub struct PostgresEngine;

impl PostgresServer {
    pub fn start(_dir: &Path) -> LabResult<PostgresServer> {
        Err(LabError::new("the PostgreSQL adapter is not built yet"))
    }
    pub fn version(&self) -> String {
        String::new()
    }
    pub fn create_database(&self, _name: &str) -> LabResult<PostgresEngine> {
        Err(LabError::new("the PostgreSQL adapter is not built yet"))
    }
}

impl Engine for PostgresEngine {
    fn kind(&self) -> EngineKind {
        EngineKind::Postgres
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
