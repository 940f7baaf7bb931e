//! The engines the lab measures, behind one small interface.
//!
//! Every workload speaks to an engine through [`Engine`]: one connection to one
//! database, SQL in the dialect the four engines share (PostgreSQL-style `$1`
//! parameters, `BEGIN`/`COMMIT`), answers as [`Cell`]s so that engines can be
//! compared value by value. Each adapter measures its own elapsed time as close to
//! the engine as it can: around the call for the in-process engines (BeeDB, SQLite),
//! around the round trip for PostgreSQL (a client/server system is used that way),
//! inside the worker process for DuckDB (so the pipe to the worker is not counted).

pub mod beedb;
pub mod duckdb;
pub mod postgres;
pub mod sqlite;

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The engines the lab knows, in the order reports list them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub enum EngineKind {
    /// BeeDB with bees on (the default configuration).
    Beedb,
    /// BeeDB with bees off: the generic twins only.
    BeedbGeneric,
    /// SQLite through rusqlite's bundled build: WAL, the same `synchronous`.
    Sqlite,
    /// DuckDB through its Python package, in a worker process.
    Duckdb,
    /// PostgreSQL, a private server the lab starts and stops.
    Postgres,
}

impl EngineKind {
    pub const ALL: [EngineKind; 5] = [
        EngineKind::Beedb,
        EngineKind::BeedbGeneric,
        EngineKind::Sqlite,
        EngineKind::Duckdb,
        EngineKind::Postgres,
    ];

    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Beedb => "beedb",
            EngineKind::BeedbGeneric => "beedb-generic",
            EngineKind::Sqlite => "sqlite",
            EngineKind::Duckdb => "duckdb",
            EngineKind::Postgres => "postgres",
        }
    }

    pub fn parse(name: &str) -> Option<EngineKind> {
        EngineKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// BeeDB in either bee configuration.
    pub fn is_beedb(self) -> bool {
        matches!(self, EngineKind::Beedb | EngineKind::BeedbGeneric)
    }
}

impl fmt::Display for EngineKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One value of an answer, in the lab's common form: integers and text compare
/// exactly, floats within a relative tolerance (engines sum in different orders).
#[derive(Debug, Clone, PartialEq, PartialOrd)]
pub enum Cell {
    Null,
    Int(i64),
    Float(f64),
    Text(String),
}

impl fmt::Display for Cell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Cell::Null => f.write_str("NULL"),
            Cell::Int(v) => write!(f, "{v}"),
            Cell::Float(v) => write!(f, "{v}"),
            Cell::Text(s) => write!(f, "{s:?}"),
        }
    }
}

/// A statement parameter (`$1`, `$2`, … in the SQL).
#[derive(Debug, Clone, PartialEq)]
pub enum Param {
    Int(i64),
    Float(f64),
    Text(String),
}

/// What one statement did.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// Time the engine took, measured by the adapter (see the module comment).
    pub elapsed: Duration,
    /// Rows returned (empty for statements without rows).
    pub rows: Vec<Vec<Cell>>,
    /// Rows inserted, updated or deleted (0 when the engine does not say).
    pub affected: u64,
}

/// `synchronous` as the workloads ask for it; each adapter maps it to its engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Durability {
    /// Every commit is durable when it returns (BeeDB/SQLite `synchronous = full`,
    /// PostgreSQL `synchronous_commit = on`).
    Full,
    /// Commits survive a crash of the process but not of the machine (BeeDB/SQLite
    /// `synchronous = normal`, PostgreSQL `synchronous_commit = off`).
    Normal,
}

impl Durability {
    pub fn name(self) -> &'static str {
        match self {
            Durability::Full => "full",
            Durability::Normal => "normal",
        }
    }
}

/// An error from an engine or from the lab's use of it.
#[derive(Debug, Clone)]
pub struct LabError {
    pub message: String,
    /// The engine reported a serialization failure (SQLSTATE 40001) or a busy or
    /// locked database: the transaction can be retried.
    pub retryable: bool,
    /// The statement was stopped because it ran longer than the timeout set with
    /// [`Engine::set_statement_timeout`].
    pub timed_out: bool,
}

impl LabError {
    pub fn new(message: impl Into<String>) -> LabError {
        LabError { message: message.into(), retryable: false, timed_out: false }
    }

    pub fn retryable(message: impl Into<String>) -> LabError {
        LabError { message: message.into(), retryable: true, timed_out: false }
    }

    pub fn timed_out(message: impl Into<String>) -> LabError {
        LabError { message: message.into(), retryable: false, timed_out: true }
    }
}

impl fmt::Display for LabError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for LabError {}

pub type LabResult<T> = std::result::Result<T, LabError>;

/// One connection to one database of one engine.
pub trait Engine: Send {
    fn kind(&self) -> EngineKind;

    /// Runs one statement, with `$1`-style parameters, and returns its rows.
    fn run(&mut self, sql: &str, params: &[Param]) -> LabResult<Outcome>;

    /// Runs statements separated by `;` (schema set-up; nothing measured).
    fn batch(&mut self, sql: &str) -> LabResult<()> {
        for statement in sql.split(';').map(str::trim).filter(|s| !s.is_empty()) {
            self.run(statement, &[])?;
        }
        Ok(())
    }

    /// Starts a transaction that will write, so that concurrent writers queue at
    /// its start instead of failing at their first write: `BEGIN IMMEDIATE` for
    /// BeeDB and SQLite, `BEGIN` for PostgreSQL (row locks) and DuckDB.
    fn begin_write(&mut self) -> LabResult<()>;

    /// Sets how durable commits are for this connection.
    fn set_durability(&mut self, durability: Durability) -> LabResult<()>;

    /// Loads a `|`-delimited text file (no header, no trailing delimiter, `\N` for NULL)
    /// into an existing table the way a user of the engine bulk-loads: COPY where the
    /// engine has it, prepared INSERTs in one transaction for SQLite. Returns rows.
    fn bulk_load(&mut self, table: &str, file: &Path) -> LabResult<u64>;

    /// Bytes the database occupies on disk now, everything flushed (checkpointed)
    /// first. PostgreSQL answers for the lab's own database only.
    fn bytes_on_disk(&mut self) -> LabResult<u64>;

    /// Another connection to the same database (TP1's clients), or an error if the
    /// engine cannot serve several clients of one database.
    fn connect_another(&self) -> LabResult<Box<dyn Engine>>;

    /// `EXPLAIN ANALYZE`'s text for a query (BeeDB and PostgreSQL); `None` where
    /// the lab does not profile the engine.
    fn explain_analyze(&mut self, _sql: &str) -> LabResult<Option<String>> {
        Ok(None)
    }

    /// Stops every later statement that runs longer than `timeout` (`None`: no limit)
    /// with an error whose `timed_out` is set, leaving the connection usable: the
    /// engine's own cancel (BeeDB's and PostgreSQL's `statement_timeout`, SQLite's
    /// interrupt, DuckDB's interrupt), so nothing is left running.
    fn set_statement_timeout(&mut self, _timeout: Option<Duration>) -> LabResult<()> {
        Err(LabError::new(format!("{}: statement timeouts are not supported", self.kind())))
    }

    /// Lets one query use up to `threads` threads, as far as the engine can; returns
    /// what that means for this engine (for the report's notes).
    fn set_threads(&mut self, _threads: usize) -> LabResult<String> {
        Err(LabError::new(format!("{}: a thread count cannot be set", self.kind())))
    }
}

/// Where an engine keeps a workload's database, and the shared handles it needs.
#[derive(Debug, Clone)]
pub struct Place {
    /// Folder for file-based engines' databases (created if missing).
    pub dir: PathBuf,
    /// Name of the database (a file stem, or PostgreSQL's database name).
    pub name: String,
}

/// The peers found on this machine and the servers the lab started for them.
pub struct Peers {
    pub duckdb: Option<duckdb::DuckdbPeer>,
    pub postgres: Option<postgres::PostgresServer>,
}

impl Peers {
    /// Looks for DuckDB (Python package) and PostgreSQL (server binaries) when asked
    /// for; a missing peer is a note, not an error, unless it was named explicitly.
    pub fn find(wanted: &[EngineKind], work: &Path, note: &mut dyn FnMut(String)) -> Peers {
        let duckdb = if wanted.contains(&EngineKind::Duckdb) {
            match duckdb::DuckdbPeer::find() {
                Ok(p) => Some(p),
                Err(e) => {
                    note(format!("duckdb: not available ({e}); scripts/install-peers installs it"));
                    None
                }
            }
        } else {
            None
        };
        let postgres = if wanted.contains(&EngineKind::Postgres) {
            match postgres::PostgresServer::start(&work.join("postgres")) {
                Ok(s) => Some(s),
                Err(e) => {
                    note(format!("postgres: not available ({e}); scripts/install-peers installs it"));
                    None
                }
            }
        } else {
            None
        };
        Peers { duckdb, postgres }
    }

    pub fn available(&self, kind: EngineKind) -> bool {
        match kind {
            EngineKind::Duckdb => self.duckdb.is_some(),
            EngineKind::Postgres => self.postgres.is_some(),
            _ => true,
        }
    }

    /// The engine's version string for reports.
    pub fn version(&self, kind: EngineKind) -> String {
        match kind {
            EngineKind::Beedb | EngineKind::BeedbGeneric => beedb::version(),
            EngineKind::Sqlite => sqlite::version(),
            EngineKind::Duckdb => self.duckdb.as_ref().map(|d| d.version()).unwrap_or_default(),
            EngineKind::Postgres => self.postgres.as_ref().map(|p| p.version()).unwrap_or_default(),
        }
    }

    /// Opens a fresh, empty database for `kind` at `place` (an old one is removed).
    pub fn open_fresh(&self, kind: EngineKind, place: &Place) -> LabResult<Box<dyn Engine>> {
        std::fs::create_dir_all(&place.dir)
            .map_err(|e| LabError::new(format!("create {}: {e}", place.dir.display())))?;
        match kind {
            EngineKind::Beedb | EngineKind::BeedbGeneric => {
                let path = place.dir.join(format!("{}.{}.beedb", place.name, kind.name()));
                remove_with_sidecars(&path, &["-wal"]);
                Ok(Box::new(beedb::BeedbEngine::open(&path, kind == EngineKind::Beedb)?))
            }
            EngineKind::Sqlite => {
                let path = place.dir.join(format!("{}.sqlite", place.name));
                remove_with_sidecars(&path, &["-wal", "-shm", "-journal"]);
                Ok(Box::new(sqlite::SqliteEngine::open(&path)?))
            }
            EngineKind::Duckdb => {
                let peer = self.duckdb.as_ref().ok_or_else(|| LabError::new("duckdb is not available"))?;
                let path = place.dir.join(format!("{}.duckdb", place.name));
                remove_with_sidecars(&path, &[".wal"]);
                Ok(Box::new(peer.open(&path)?))
            }
            EngineKind::Postgres => {
                let server =
                    self.postgres.as_ref().ok_or_else(|| LabError::new("postgres is not available"))?;
                Ok(Box::new(server.create_database(&place.name)?))
            }
        }
    }
}

fn remove_with_sidecars(path: &Path, suffixes: &[&str]) {
    let _ = std::fs::remove_file(path);
    for s in suffixes {
        let mut side = path.as_os_str().to_owned();
        side.push(s);
        let _ = std::fs::remove_file(PathBuf::from(side));
    }
}

/// `EXPLAIN ANALYZE sql` through `engine.run`, its rows joined as text (BeeDB and
/// PostgreSQL both answer with one text column).
pub(crate) fn explain_analyze_text(engine: &mut dyn Engine, sql: &str) -> LabResult<Option<String>> {
    let outcome = engine.run(&format!("EXPLAIN ANALYZE {sql}"), &[])?;
    let lines: Vec<String> = outcome
        .rows
        .iter()
        .map(|r| match r.first() {
            Some(Cell::Text(s)) => s.clone(),
            Some(c) => c.to_string(),
            None => String::new(),
        })
        .collect();
    Ok(Some(lines.join("\n")))
}

/// Size of a file, 0 if it does not exist.
pub fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}
