//! DuckDB through its Python package, in a worker process.
//!
//! The lab does not link DuckDB: compiling it from source takes too long on the
//! machines the lab runs on, and the PyPI wheel is how most people use it anyway.
//! Instead a small Python worker (`lab/peers/duckdb_worker.py`, embedded in this
//! binary so an installed `beedb` needs no source tree) holds one connection to one
//! database file and answers JSON requests, one per line. The worker times each
//! statement itself, so the pipe and the JSON coding are not counted against DuckDB.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{Cell, Durability, Engine, EngineKind, LabError, LabResult, Outcome, Param};

/// The worker's source, written to a temporary file when the peer is found.
const WORKER: &str = include_str!("../../peers/duckdb_worker.py");

/// How much of the worker's stderr is kept for error messages.
const STDERR_TAIL: usize = 4096;

/// DuckDB as found on this machine: a Python that can `import duckdb`.
pub struct DuckdbPeer {
    python: PathBuf,
    version: String,
    /// The worker script; kept for as long as the peer can open databases.
    script: tempfile::NamedTempFile,
}

impl DuckdbPeer {
    /// Finds a Python with the `duckdb` package: `$BEEDB_LAB_PYTHON` if set, else
    /// `python3` on the PATH.
    pub fn find() -> LabResult<DuckdbPeer> {
        let python = PathBuf::from(std::env::var_os("BEEDB_LAB_PYTHON").unwrap_or_else(|| "python3".into()));
        let output = Command::new(&python)
            .args(["-c", "import duckdb; print(duckdb.__version__)"])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| LabError::new(format!("cannot run {}: {e}", python.display())))?;
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            let last = stderr.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
            return Err(LabError::new(format!(
                "{} cannot import duckdb ({last}); `python3 -m pip install duckdb` installs it",
                python.display()
            )));
        }
        let version = String::from_utf8_lossy(&output.stdout).trim().to_string();
        let mut script = tempfile::Builder::new()
            .prefix("beedb-duckdb-worker-")
            .suffix(".py")
            .tempfile()
            .map_err(|e| LabError::new(format!("temporary file for the DuckDB worker: {e}")))?;
        script
            .write_all(WORKER.as_bytes())
            .and_then(|_| script.flush())
            .map_err(|e| LabError::new(format!("write the DuckDB worker: {e}")))?;
        Ok(DuckdbPeer { python, version, script })
    }

    /// `duckdb.__version__`, e.g. "1.3.2".
    pub fn version(&self) -> String {
        self.version.clone()
    }

    /// The Python that runs the workers.
    pub fn python(&self) -> &Path {
        &self.python
    }

    /// Starts a worker on the database file at `path` (created if missing).
    pub fn open(&self, path: &Path) -> LabResult<DuckdbEngine> {
        let mut child = Command::new(&self.python)
            .arg(self.script.path())
            .arg(path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| LabError::new(format!("start the DuckDB worker with {}: {e}", self.python.display())))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().map(BufReader::new);
        // A thread drains stderr (a full pipe would stall the worker) and keeps the
        // end of it for error messages.
        let stderr_tail = Arc::new(Mutex::new(String::new()));
        if let Some(mut stderr) = child.stderr.take() {
            let tail = Arc::clone(&stderr_tail);
            std::thread::spawn(move || {
                let mut chunk = [0u8; 4096];
                while let Ok(n) = stderr.read(&mut chunk) {
                    if n == 0 {
                        break;
                    }
                    if let Ok(mut t) = tail.lock() {
                        t.push_str(&String::from_utf8_lossy(&chunk[..n]));
                        if t.len() > 2 * STDERR_TAIL {
                            let mut cut = t.len() - STDERR_TAIL;
                            while !t.is_char_boundary(cut) {
                                cut += 1;
                            }
                            t.drain(..cut);
                        }
                    }
                }
            });
        }
        let mut engine = DuckdbEngine { child, stdin, stdout, stderr_tail, path: path.to_path_buf() };
        if engine.stdin.is_none() || engine.stdout.is_none() {
            return Err(LabError::new("the DuckDB worker's pipes are missing"));
        }
        // The worker's first line says whether the database opened.
        engine.receive()?;
        Ok(engine)
    }
}

/// One worker process serving one DuckDB database file.
pub struct DuckdbEngine {
    child: Child,
    /// `None` once closed (at drop), which lets the worker finish and exit.
    stdin: Option<ChildStdin>,
    stdout: Option<BufReader<ChildStdout>>,
    stderr_tail: Arc<Mutex<String>>,
    path: PathBuf,
}

impl DuckdbEngine {
    /// The database file this worker serves.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The worker is gone or the protocol broke: say so, with what it printed.
    fn broken(&mut self, what: String) -> LabError {
        // Give a dying worker a moment to finish writing its traceback.
        std::thread::sleep(Duration::from_millis(50));
        let status = match self.child.try_wait() {
            Ok(Some(status)) => format!(" (worker exited: {status})"),
            _ => String::new(),
        };
        let tail = self.stderr_tail.lock().map(|t| t.trim().to_string()).unwrap_or_default();
        let tail = if tail.is_empty() { String::new() } else { format!("; worker stderr:\n{tail}") };
        LabError::new(format!("DuckDB worker: {what}{status}{tail}"))
    }

    fn send(&mut self, request: &Value) -> LabResult<()> {
        let mut line = request.to_string();
        line.push('\n');
        let result = match self.stdin.as_mut() {
            Some(stdin) => stdin.write_all(line.as_bytes()).and_then(|_| stdin.flush()),
            None => return Err(LabError::new("DuckDB worker: already closed")),
        };
        result.map_err(|e| self.broken(format!("write request: {e}")))
    }

    /// Reads one response; `{"ok": false}` becomes an error, retryable for
    /// DuckDB's transaction conflicts.
    fn receive(&mut self) -> LabResult<serde_json::Map<String, Value>> {
        let mut line = String::new();
        let read = match self.stdout.as_mut() {
            Some(stdout) => stdout.read_line(&mut line),
            None => return Err(LabError::new("DuckDB worker: already closed")),
        };
        match read {
            Ok(0) => return Err(self.broken("no answer".to_string())),
            Ok(_) => {}
            Err(e) => return Err(self.broken(format!("read answer: {e}"))),
        }
        let response = match serde_json::from_str::<Value>(&line) {
            Ok(Value::Object(map)) => map,
            Ok(_) | Err(_) => return Err(self.broken(format!("not an answer: {}", line.trim_end()))),
        };
        if response.get("ok") == Some(&Value::Bool(true)) {
            return Ok(response);
        }
        let message = response.get("error").and_then(Value::as_str).unwrap_or("unknown error").to_string();
        if response.get("timed_out") == Some(&Value::Bool(true)) {
            return Err(LabError::timed_out(message));
        }
        if is_conflict(&message) { Err(LabError::retryable(message)) } else { Err(LabError::new(message)) }
    }

    fn request(&mut self, request: &Value) -> LabResult<serde_json::Map<String, Value>> {
        self.send(request)?;
        self.receive()
    }
}

/// DuckDB's optimistic concurrency reports write-write conflicts as
/// "TransactionContext Error: … Conflict …": the transaction can be retried.
fn is_conflict(message: &str) -> bool {
    message.contains("TransactionContext Error") || message.to_ascii_lowercase().contains("conflict")
}

fn param(p: &Param) -> Value {
    match p {
        Param::Int(v) => json!(v),
        Param::Float(v) if v.is_finite() => json!(v),
        Param::Float(v) => json!({ "float": non_finite_name(*v) }),
        Param::Text(s) => json!(s),
    }
}

fn non_finite_name(v: f64) -> &'static str {
    if v.is_nan() {
        "nan"
    } else if v > 0.0 {
        "inf"
    } else {
        "-inf"
    }
}

/// The worker's JSON value in the lab's common form (see the worker's docstring).
fn cell(v: &Value) -> Cell {
    match v {
        Value::Null => Cell::Null,
        Value::Bool(b) => Cell::Int(*b as i64),
        Value::Number(n) => match n.as_i64() {
            Some(i) => Cell::Int(i),
            None => Cell::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => Cell::Text(s.clone()),
        Value::Object(map) => match map.get("float").and_then(Value::as_str) {
            Some("nan") => Cell::Float(f64::NAN),
            Some("inf") => Cell::Float(f64::INFINITY),
            Some("-inf") => Cell::Float(f64::NEG_INFINITY),
            _ => Cell::Text(v.to_string()),
        },
        Value::Array(_) => Cell::Text(v.to_string()),
    }
}

fn count(response: &serde_json::Map<String, Value>, key: &str) -> LabResult<u64> {
    response
        .get(key)
        .and_then(Value::as_u64)
        .ok_or_else(|| LabError::new(format!("DuckDB worker: answer without {key:?}")))
}

impl Engine for DuckdbEngine {
    fn kind(&self) -> EngineKind {
        EngineKind::Duckdb
    }

    fn run(&mut self, sql: &str, params: &[Param]) -> LabResult<Outcome> {
        let params: Vec<Value> = params.iter().map(param).collect();
        let response = self.request(&json!({ "sql": sql, "params": params }))?;
        let elapsed = Duration::from_nanos(count(&response, "ns")?);
        let rows = match response.get("rows") {
            Some(Value::Array(rows)) => rows
                .iter()
                .map(|row| match row {
                    Value::Array(values) => values.iter().map(cell).collect(),
                    other => vec![cell(other)],
                })
                .collect(),
            _ => Vec::new(),
        };
        let affected = response.get("affected").and_then(Value::as_u64).unwrap_or(0);
        Ok(Outcome { elapsed, rows, affected })
    }

    fn begin_write(&mut self) -> LabResult<()> {
        self.run("BEGIN TRANSACTION", &[]).map(|_| ())
    }

    /// DuckDB has no such setting: it always syncs its WAL at commit, which is
    /// `Full`; `Normal` is accepted and changes nothing (reports say which ran).
    fn set_durability(&mut self, _durability: Durability) -> LabResult<()> {
        Ok(())
    }

    /// DuckDB's own `COPY … FROM 'file'`, run by the worker.
    fn bulk_load(&mut self, table: &str, file: &Path) -> LabResult<u64> {
        let file = std::path::absolute(file).map_err(|e| LabError::new(format!("{}: {e}", file.display())))?;
        let response = self.request(&json!({ "op": "copy", "table": table, "file": file.display().to_string() }))?;
        count(&response, "affected")
    }

    fn bytes_on_disk(&mut self) -> LabResult<u64> {
        let response = self.request(&json!({ "op": "size" }))?;
        count(&response, "bytes")
    }

    fn connect_another(&self) -> LabResult<Box<dyn Engine>> {
        Err(LabError::new("DuckDB allows one process per database file; the lab runs it with one client"))
    }

    /// A timer thread in the worker calls the connection's `interrupt()`.
    fn set_statement_timeout(&mut self, timeout: Option<Duration>) -> LabResult<()> {
        let ms = timeout.map_or(0, |t| t.as_millis().max(1) as u64);
        self.request(&json!({ "op": "timeout", "ms": ms })).map(|_| ())
    }

    fn set_threads(&mut self, threads: usize) -> LabResult<String> {
        self.run(&format!("SET threads = {}", threads.max(1)), &[])?;
        Ok(format!("duckdb: threads = {}", threads.max(1)))
    }
}

impl Drop for DuckdbEngine {
    /// Closing stdin lets the worker close the database (a checkpoint) and exit;
    /// one that does not within a while is killed.
    fn drop(&mut self) {
        self.stdin = None;
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match self.child.try_wait() {
                Ok(Some(_)) => return,
                Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
                _ => break,
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worker_values_become_cells() {
        assert_eq!(cell(&json!(null)), Cell::Null);
        assert_eq!(cell(&json!(7)), Cell::Int(7));
        assert_eq!(cell(&json!(2.5)), Cell::Float(2.5));
        assert_eq!(cell(&json!(1e20)), Cell::Float(1e20));
        assert_eq!(cell(&json!(u64::MAX)), Cell::Float(u64::MAX as f64));
        assert_eq!(cell(&json!("x")), Cell::Text("x".into()));
        assert_eq!(cell(&json!({"float": "-inf"})), Cell::Float(f64::NEG_INFINITY));
        assert!(matches!(cell(&json!({"float": "nan"})), Cell::Float(f) if f.is_nan()));
    }

    #[test]
    fn parameters_survive_json() {
        assert_eq!(param(&Param::Int(-3)), json!(-3));
        assert_eq!(param(&Param::Float(f64::INFINITY)), json!({"float": "inf"}));
        assert_eq!(param(&Param::Text("a'b".into())), json!("a'b"));
    }

    #[test]
    fn conflicts_are_retryable() {
        assert!(is_conflict("TransactionContext Error: Catalog write-write conflict on alter"));
        assert!(is_conflict("Conflict on tuple deletion!"));
        assert!(!is_conflict("Parser Error: syntax error"));
    }
}
