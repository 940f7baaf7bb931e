//! BeeDB in this process, with bees on (`beedb`) or off (`beedb-generic`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use beedb_sql::{Connection, Database, Statement, Value};

use super::{Cell, Durability, Engine, EngineKind, LabError, LabResult, Outcome, Param, file_len};

pub fn version() -> String {
    format!("{} ({})", env!("CARGO_PKG_VERSION"), option_env!("BEEDB_GIT_HASH").unwrap_or("dev"))
}

pub struct BeedbEngine {
    db: Database,
    conn: Connection,
    bees: bool,
    path: PathBuf,
    /// Parameterized statements are prepared once, as an application would.
    prepared: HashMap<String, Statement>,
}

impl BeedbEngine {
    pub fn open(path: &Path, bees: bool) -> LabResult<BeedbEngine> {
        let db = Database::open(path).map_err(error)?;
        BeedbEngine::connect(db, path.to_path_buf(), bees)
    }

    fn connect(db: Database, path: PathBuf, bees: bool) -> LabResult<BeedbEngine> {
        let mut conn = db.connect();
        conn.set("bees", if bees { "on" } else { "off" }).map_err(error)?;
        // TP1's clients queue for the single writer; a long wait is not an error.
        conn.set("writer_timeout", "120s").map_err(error)?;
        Ok(BeedbEngine { db, conn, bees, path, prepared: HashMap::new() })
    }

    /// The database, for the lab's callgrind runner.
    pub fn connection(&mut self) -> &mut Connection {
        &mut self.conn
    }
}

fn error(e: beedb_sql::Error) -> LabError {
    let text = format!("{} (SQLSTATE {})", e.message, e.sqlstate);
    if e.sqlstate == "40001" || e.sqlstate == "55P03" {
        LabError::retryable(text)
    } else if e.sqlstate == "57014" {
        LabError::timed_out(text)
    } else {
        LabError::new(text)
    }
}

fn value(p: &Param) -> Value {
    match p {
        Param::Int(v) => Value::BigInt(*v),
        Param::Float(v) => Value::Double(*v),
        Param::Text(s) => Value::Text(s.clone()),
    }
}

/// BeeDB's value in the lab's common form.
pub fn cell(v: &Value) -> Cell {
    match v {
        Value::Null => Cell::Null,
        Value::Boolean(b) => Cell::Int(*b as i64),
        Value::SmallInt(v) => Cell::Int(*v as i64),
        Value::Integer(v) => Cell::Int(*v as i64),
        Value::BigInt(v) => Cell::Int(*v),
        Value::Real(v) => Cell::Float(*v as f64),
        Value::Double(v) => Cell::Float(*v),
        Value::Decimal(d) => {
            let f = d.to_f64();
            if f.fract() == 0.0 && f.abs() < 9.0e15 { Cell::Int(f as i64) } else { Cell::Float(f) }
        }
        Value::Char(s) | Value::Varchar(s) | Value::Text(s) => Cell::Text(s.clone()),
        other => Cell::Text(other.to_string()),
    }
}

impl Engine for BeedbEngine {
    fn kind(&self) -> EngineKind {
        if self.bees { EngineKind::Beedb } else { EngineKind::BeedbGeneric }
    }

    fn run(&mut self, sql: &str, params: &[Param]) -> LabResult<Outcome> {
        let values: Vec<Value> = params.iter().map(value).collect();
        let start = Instant::now();
        let result = if params.is_empty() {
            self.conn.execute(sql, &[])
        } else {
            if !self.prepared.contains_key(sql) {
                let statement = self.conn.prepare(sql).map_err(error)?;
                self.prepared.insert(sql.to_string(), statement);
            }
            self.prepared[sql].execute(&mut self.conn, &values)
        };
        let elapsed = start.elapsed();
        let result = result.map_err(error)?;
        let rows = result.rows.iter().map(|r| r.values().iter().map(cell).collect()).collect();
        Ok(Outcome { elapsed, rows, affected: result.rows_affected })
    }

    fn begin_write(&mut self) -> LabResult<()> {
        self.run("BEGIN IMMEDIATE", &[]).map(|_| ())
    }

    fn set_durability(&mut self, durability: Durability) -> LabResult<()> {
        self.conn.set("synchronous", durability.name()).map_err(error)
    }

    fn bulk_load(&mut self, table: &str, file: &Path) -> LabResult<u64> {
        let path = file.display().to_string().replace('\'', "''");
        let sql = format!("COPY {table} FROM '{path}' WITH (DELIMITER '|')");
        Ok(self.run(&sql, &[])?.affected)
    }

    /// The database file after a checkpoint. The WAL beside it is not counted: it is
    /// a log reused from its start after each checkpoint, whose file keeps its
    /// high-water size (64 MB after a bulk load), as SQLite's does unless truncated.
    fn bytes_on_disk(&mut self) -> LabResult<u64> {
        self.db.store().checkpoint().map_err(|e| LabError::new(format!("checkpoint: {e}")))?;
        Ok(file_len(&self.path))
    }

    fn connect_another(&self) -> LabResult<Box<dyn Engine>> {
        Ok(Box::new(BeedbEngine::connect(self.db.clone(), self.path.clone(), self.bees)?))
    }

    fn explain_analyze(&mut self, sql: &str) -> LabResult<Option<String>> {
        super::explain_analyze_text(self, sql)
    }

    /// BeeDB's `statement_timeout` (SQLSTATE 57014 when it fires).
    fn set_statement_timeout(&mut self, timeout: Option<Duration>) -> LabResult<()> {
        let ms = timeout.map_or(0, |t| t.as_millis().max(1));
        self.conn.set("statement_timeout", &format!("{ms}ms")).map_err(error)
    }

    /// The `threads` setting where the engine has one; without it BeeDB runs each
    /// query on one thread, and the note says so.
    fn set_threads(&mut self, threads: usize) -> LabResult<String> {
        match self.conn.set("threads", &threads.to_string()) {
            Ok(()) => Ok(format!("{}: threads = {threads}", self.kind())),
            Err(e) => Ok(format!(
                "{}: one thread per query whatever --threads says (setting threads = {threads}: {})",
                self.kind(),
                e.message
            )),
        }
    }
}
