//! SQLite through rusqlite's bundled build, set up as a careful user would for this
//! kind of work: WAL journal, the workload's `synchronous`, a generous busy timeout,
//! statements prepared once (rusqlite's statement cache).

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::types::ValueRef;

use super::{Cell, Durability, Engine, EngineKind, LabError, LabResult, Outcome, Param, file_len};

pub fn version() -> String {
    rusqlite::version().to_string()
}

pub struct SqliteEngine {
    conn: rusqlite::Connection,
    path: PathBuf,
    durability: Durability,
    /// `set_statement_timeout`: a watchdog thread interrupts a statement that runs longer.
    timeout: Option<Duration>,
}

/// Interrupts the connection's running statement when `timeout` passes before
/// [`Watchdog::stop`] (SQLite has no statement timeout of its own).
struct Watchdog {
    stop: std::sync::mpsc::Sender<()>,
    fired: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Watchdog {
    fn start(timeout: Duration, handle: rusqlite::InterruptHandle) -> Watchdog {
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let fired = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = std::sync::Arc::clone(&fired);
        std::thread::spawn(move || {
            if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(timeout) {
                flag.store(true, std::sync::atomic::Ordering::SeqCst);
                handle.interrupt();
            }
        });
        Watchdog { stop, fired }
    }

    /// Whether the watchdog fired (the statement was interrupted).
    fn stop(self) -> bool {
        let _ = self.stop.send(());
        self.fired.load(std::sync::atomic::Ordering::SeqCst)
    }
}

fn error(e: rusqlite::Error) -> LabError {
    let busy = matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    );
    if busy { LabError::retryable(e.to_string()) } else { LabError::new(e.to_string()) }
}

impl SqliteEngine {
    pub fn open(path: &Path) -> LabResult<SqliteEngine> {
        SqliteEngine::connect(path, Durability::Full)
    }

    fn connect(path: &Path, durability: Durability) -> LabResult<SqliteEngine> {
        let conn = rusqlite::Connection::open(path).map_err(error)?;
        conn.busy_timeout(Duration::from_secs(120)).map_err(error)?;
        conn.set_prepared_statement_cache_capacity(64);
        conn.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(())).map_err(error)?;
        let mut engine = SqliteEngine { conn, path: path.to_path_buf(), durability, timeout: None };
        engine.set_durability(durability)?;
        Ok(engine)
    }
}

impl SqliteEngine {
    /// One statement, timed around the call.
    fn execute(&mut self, sql: &str, params: &[Param]) -> LabResult<Outcome> {
        let rewritten;
        let sql = if params.is_empty() {
            sql
        } else {
            rewritten = numbered_params(sql);
            &rewritten
        };
        let start = Instant::now();
        let mut statement = self.conn.prepare_cached(sql).map_err(error)?;
        let values = rusqlite::params_from_iter(params.iter().map(bind));
        let width = statement.column_count();
        let mut rows = Vec::new();
        let mut affected = 0;
        if width == 0 {
            affected = statement.execute(values).map_err(error)? as u64;
        } else {
            let mut cursor = statement.query(values).map_err(error)?;
            while let Some(row) = cursor.next().map_err(error)? {
                let mut out = Vec::with_capacity(width);
                for i in 0..width {
                    out.push(cell(row.get_ref(i).map_err(error)?));
                }
                rows.push(out);
            }
        }
        Ok(Outcome { elapsed: start.elapsed(), rows, affected })
    }
}

/// `$1` → `?1`: SQLite's numbered parameters (`$1` would be a *named* one).
fn numbered_params(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '$' && chars.peek().is_some_and(|d| d.is_ascii_digit()) {
            out.push('?');
        } else {
            out.push(c);
        }
    }
    out
}

fn cell(v: ValueRef<'_>) -> Cell {
    match v {
        ValueRef::Null => Cell::Null,
        ValueRef::Integer(i) => Cell::Int(i),
        ValueRef::Real(f) => Cell::Float(f),
        ValueRef::Text(t) => Cell::Text(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => Cell::Text(b.iter().map(|x| format!("{x:02x}")).collect()),
    }
}

fn bind(p: &Param) -> rusqlite::types::Value {
    match p {
        Param::Int(v) => rusqlite::types::Value::Integer(*v),
        Param::Float(v) => rusqlite::types::Value::Real(*v),
        Param::Text(s) => rusqlite::types::Value::Text(s.clone()),
    }
}

impl Engine for SqliteEngine {
    fn kind(&self) -> EngineKind {
        EngineKind::Sqlite
    }

    fn run(&mut self, sql: &str, params: &[Param]) -> LabResult<Outcome> {
        let Some(timeout) = self.timeout else {
            return self.execute(sql, params);
        };
        let watchdog = Watchdog::start(timeout, self.conn.get_interrupt_handle());
        let result = self.execute(sql, params);
        let fired = watchdog.stop();
        match result {
            Err(e) if fired => Err(LabError::timed_out(format!("{e} (after the statement timeout of {timeout:?})"))),
            other => other,
        }
    }

    /// A watchdog thread per statement calls `sqlite3_interrupt` when it runs over.
    fn set_statement_timeout(&mut self, timeout: Option<Duration>) -> LabResult<()> {
        self.timeout = timeout;
        Ok(())
    }

    /// SQLite runs each query on one thread; `PRAGMA threads` only lets a large sort
    /// use helper threads.
    fn set_threads(&mut self, threads: usize) -> LabResult<String> {
        let helpers = threads.max(1) - 1;
        self.conn.query_row(&format!("PRAGMA threads = {helpers}"), [], |_| Ok(())).map_err(error)?;
        Ok(format!("sqlite: one thread per query (PRAGMA threads = {helpers}: helper threads for sorting only)"))
    }

    fn begin_write(&mut self) -> LabResult<()> {
        self.run("BEGIN IMMEDIATE", &[]).map(|_| ())
    }

    fn set_durability(&mut self, durability: Durability) -> LabResult<()> {
        self.durability = durability;
        let mode = match durability {
            Durability::Full => "FULL",
            Durability::Normal => "NORMAL",
        };
        self.conn.execute_batch(&format!("PRAGMA synchronous = {mode}")).map_err(error)
    }

    fn bulk_load(&mut self, table: &str, file: &Path) -> LabResult<u64> {
        let reader = std::io::BufReader::with_capacity(
            1 << 20,
            std::fs::File::open(file).map_err(|e| LabError::new(format!("{}: {e}", file.display())))?,
        );
        let tx = self.conn.transaction().map_err(error)?;
        let mut rows = 0u64;
        {
            let mut insert: Option<rusqlite::CachedStatement<'_>> = None;
            for line in reader.lines() {
                let line = line.map_err(|e| LabError::new(format!("{}: {e}", file.display())))?;
                let fields: Vec<&str> = line.split('|').collect();
                if insert.is_none() {
                    let marks = vec!["?"; fields.len()].join(", ");
                    insert = Some(
                        tx.prepare_cached(&format!("INSERT INTO {table} VALUES ({marks})")).map_err(error)?,
                    );
                }
                // `\N` is NULL, as in PostgreSQL's COPY text format.
                let values = fields.iter().map(|f| if *f == "\\N" { None } else { Some(*f) });
                insert
                    .as_mut()
                    .expect("prepared above")
                    .execute(rusqlite::params_from_iter(values))
                    .map_err(error)?;
                rows += 1;
            }
        }
        tx.commit().map_err(error)?;
        Ok(rows)
    }

    fn bytes_on_disk(&mut self) -> LabResult<u64> {
        self.conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .map_err(error)?;
        // The TRUNCATE checkpoint leaves the WAL empty: the file is everything.
        Ok(file_len(&self.path))
    }

    fn connect_another(&self) -> LabResult<Box<dyn Engine>> {
        Ok(Box::new(SqliteEngine::connect(&self.path, self.durability)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dollar_parameters_become_numbered() {
        assert_eq!(numbered_params("SELECT $1, $12 FROM t WHERE a = $2"), "SELECT ?1, ?12 FROM t WHERE a = ?2");
        assert_eq!(numbered_params("SELECT '$' || x"), "SELECT '$' || x");
    }
}
