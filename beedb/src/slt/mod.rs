//! The sqllogictest runner behind `beedb-slt` and the `slt`/corpus tests: runs
//! sqllogictest files (the `sqllogictest` crate's parser and checker) against a fresh
//! in-memory BeeDB database per file, and counts records passed, failed and skipped.
//!
//! Two kinds of file (see [`Conventions`]): BeeDB's own `*.slt` files run as written;
//! SQLite's corpus files (`*.test`) are prepared in memory first ([`corpus::prepare`])
//! and run valuewise with `hash-threshold 8` and SQLite's value printing. Usage and
//! the skip-list format: `beedb/SLT.md`.

pub mod corpus;
mod format;
mod skip_list;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use beedb_sql::{Connection, Database, Error, ErrorKind, QueryResult};
use sqllogictest::{
    Condition, DBOutput, DefaultColumnType, QueryExpect, Record, Runner, TestError, TestErrorKind,
};

pub use format::{Conventions, column_type_of, format_value};
pub use skip_list::SkipList;

/// What the runner runs SQL on: one session. [`Connection`] is the real one; tests
/// may supply another engine to check the runner itself.
pub trait Backend: Send {
    /// Runs one statement (a record's SQL) and returns its result.
    fn execute_sql(&mut self, sql: &str) -> Result<QueryResult, Error>;
}

impl Backend for Connection {
    fn execute_sql(&mut self, sql: &str) -> Result<QueryResult, Error> {
        match self.execute(sql, &[]) {
            // A record may hold several statements; the last one's result counts.
            Err(e) if e.message.contains("cannot insert multiple commands") => self
                .execute_batch(sql)
                .map(|mut results| results.pop().unwrap_or_else(|| QueryResult::command(""))),
            other => other,
        }
    }
}

/// How to run files.
#[derive(Debug, Clone)]
pub struct Options {
    /// Labels for `skipif`/`onlyif` (the corpus is run with `postgresql`).
    pub labels: Vec<String>,
    /// Session settings applied with `Connection::set` to every connection, before
    /// each file's first record.
    pub settings: Vec<(String, String)>,
    /// Records not run (counted as skipped).
    pub skip_list: SkipList,
    /// `None`: by file extension, `*.test` → [`Conventions::Corpus`], anything else
    /// → [`Conventions::Project`].
    pub conventions: Option<Conventions>,
    /// How many failures per file to keep in [`FileReport::failures`] (all are counted).
    pub failures_kept: usize,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            labels: vec!["postgresql".to_string()],
            settings: Vec::new(),
            skip_list: SkipList::default(),
            conventions: None,
            failures_kept: 20,
        }
    }
}

impl Options {
    pub fn conventions_for(&self, path: &Path) -> Conventions {
        self.conventions.unwrap_or_else(|| {
            if path.extension().is_some_and(|e| e == "test") {
                Conventions::Corpus
            } else {
                Conventions::Project
            }
        })
    }
}

/// One failed record.
#[derive(Debug, Clone)]
pub struct Failure {
    /// Line of the record's `statement`/`query` line.
    pub line: u32,
    /// The crate's description: the SQL and expected vs actual output or the error.
    pub message: String,
    /// The record failed because the engine reported "not supported" (or panicked
    /// with an unimplemented feature): tolerated while the engine is being built.
    pub not_supported: bool,
}

/// The outcome of one file. Counts are of records (statements and queries).
#[derive(Debug, Clone, Default)]
pub struct FileReport {
    pub path: String,
    pub conventions: Option<Conventions>,
    pub passed: usize,
    pub failed: usize,
    /// Skipped by `skipif`/`onlyif` for the runner's labels.
    pub skipped_by_condition: usize,
    /// Skipped because the skip list names them.
    pub skipped_by_list: usize,
    /// Of `failed`, how many were "not supported" errors.
    pub failed_not_supported: usize,
    /// The first [`Options::failures_kept`] failures.
    pub failures: Vec<Failure>,
    /// The file could not be read or parsed (no record ran), or the database could
    /// not be opened.
    pub error: Option<String>,
    pub elapsed: Duration,
}

impl FileReport {
    pub fn skipped(&self) -> usize {
        self.skipped_by_condition + self.skipped_by_list
    }

    pub fn records(&self) -> usize {
        self.passed + self.failed + self.skipped()
    }

    /// Whether nothing failed (and the file ran).
    pub fn ok(&self) -> bool {
        self.failed == 0 && self.error.is_none()
    }
}

/// Runs one file against a fresh in-memory BeeDB database.
pub fn run_file(path: &Path, options: &Options) -> FileReport {
    let db = match Database::open(":memory:") {
        Ok(db) => db,
        Err(e) => {
            return FileReport {
                path: path.display().to_string(),
                error: Some(format!("cannot open an in-memory database: {e}")),
                ..FileReport::default()
            };
        }
    };
    let settings = options.settings.clone();
    run_file_with(path, options, move || {
        let mut conn = db.connect();
        for (name, value) in &settings {
            conn.set(name, value)?;
        }
        Ok(Box::new(conn) as Box<dyn Backend>)
    })
}

/// Runs one file; `connect` makes each connection the file uses (the default one,
/// and one per `connection NAME`), all to the same fresh database.
pub fn run_file_with<F>(path: &Path, options: &Options, connect: F) -> FileReport
where
    F: FnMut() -> Result<Box<dyn Backend>, Error>,
{
    let started = Instant::now();
    let conventions = options.conventions_for(path);
    let name = path.display().to_string();
    let mut report = FileReport {
        path: name.clone(),
        conventions: Some(conventions),
        ..FileReport::default()
    };
    let scratch = ScratchDir::new(path);
    let records = match parse(path, &name, conventions, &options.labels, &scratch.path) {
        Ok(records) => records,
        Err(e) => {
            report.error = Some(e);
            return report;
        }
    };
    run_records(records, conventions, options, connect, &mut report);
    drop(scratch);
    report.elapsed = started.elapsed();
    report
}

type SltRecord = Record<DefaultColumnType>;

/// A private folder for one file's run (`__SLT_TMP__`), removed when the run ends.
struct ScratchDir {
    path: std::path::PathBuf,
}

impl ScratchDir {
    fn new(slt: &Path) -> ScratchDir {
        static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let stem: String = slt
            .file_stem()
            .map(|s| s.to_string_lossy().chars().filter(|c| c.is_ascii_alphanumeric() || *c == '_').collect())
            .unwrap_or_default();
        let run = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("beedb-slt-{}-{run}-{stem}", std::process::id()));
        ScratchDir { path }
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

fn parse(
    path: &Path,
    name: &str,
    conventions: Conventions,
    labels: &[String],
    scratch: &Path,
) -> Result<Vec<SltRecord>, String> {
    match conventions {
        Conventions::Project => {
            // `__SLT_DIR__` names the file's own folder, so COPY can read fixtures
            // kept beside the .slt file; `__SLT_TMP__` a private empty folder (made
            // only when the file uses it), for files COPY … TO writes.
            let text =
                std::fs::read_to_string(path).map_err(|e| format!("cannot read {name}: {e}"))?;
            let dir = std::path::absolute(path)
                .ok()
                .and_then(|p| p.parent().map(|d| d.display().to_string()))
                .unwrap_or_else(|| ".".into());
            let mut text = text.replace("__SLT_DIR__", &dir);
            if text.contains("__SLT_TMP__") {
                std::fs::create_dir_all(scratch)
                    .map_err(|e| format!("cannot make {}: {e}", scratch.display()))?;
                text = text.replace("__SLT_TMP__", &scratch.display().to_string());
            }
            sqllogictest::parse_with_name(&text, name).map_err(|e| e.to_string())
        }
        Conventions::Corpus => {
            let text =
                std::fs::read_to_string(path).map_err(|e| format!("cannot read {name}: {e}"))?;
            let prepared = corpus::prepare(&text, labels);
            sqllogictest::parse_with_name(&prepared, name).map_err(|e| e.to_string())
        }
    }
}

/// The `sqllogictest::DB` over a [`Backend`]. The runner does not tell a database the
/// record's column types, so the file loop puts them in `expected_types` before each
/// query: `R` columns need them.
struct SltDb {
    backend: Box<dyn Backend>,
    expected_types: Arc<Mutex<Vec<DefaultColumnType>>>,
    conventions: Conventions,
}

impl sqllogictest::DB for SltDb {
    type Error = Error;
    type ColumnType = DefaultColumnType;

    fn run(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, Error> {
        let result = self.backend.execute_sql(sql)?;
        if !result.has_rows() {
            return Ok(DBOutput::StatementComplete(result.rows_affected));
        }
        let expected = self
            .expected_types
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let types: Vec<DefaultColumnType> = result
            .columns
            .iter()
            .enumerate()
            .map(|(i, c)| {
                expected
                    .get(i)
                    .cloned()
                    .unwrap_or_else(|| column_type_of(&c.data_type))
            })
            .collect();
        drop(expected);
        let rows = result
            .rows
            .iter()
            .map(|row| {
                row.values()
                    .iter()
                    .zip(&types)
                    .map(|(v, t)| format_value(v, t, self.conventions))
                    .collect()
            })
            .collect();
        Ok(DBOutput::Rows { types, rows })
    }

    fn engine_name(&self) -> &str {
        ""
    }

    fn error_sql_state(err: &Error) -> Option<String> {
        Some(err.sqlstate.to_string())
    }
}

fn skipped_by_conditions(conditions: &[Condition], labels: &[String]) -> bool {
    conditions.iter().any(|c| match c {
        Condition::OnlyIf { label } => !labels.contains(label),
        Condition::SkipIf { label } => labels.contains(label),
    })
}

fn run_records<F>(
    records: Vec<SltRecord>,
    conventions: Conventions,
    options: &Options,
    mut connect: F,
    report: &mut FileReport,
) where
    F: FnMut() -> Result<Box<dyn Backend>, Error>,
{
    let expected_types = Arc::new(Mutex::new(Vec::new()));
    let shared_types = expected_types.clone();
    let mut runner = Runner::new(move || {
        std::future::ready(connect().map(|backend| SltDb {
            backend,
            expected_types: shared_types.clone(),
            conventions,
        }))
    });
    for label in &options.labels {
        runner.add_label(label);
    }
    if conventions == Conventions::Corpus {
        let prelude: Vec<SltRecord> =
            sqllogictest::parse(corpus::CORPUS_PRELUDE).expect("the corpus prelude parses");
        for record in prelude {
            runner.run(record).expect("the corpus prelude runs");
        }
    }

    for record in records {
        let (line, conditions, types) = match &record {
            Record::Halt { .. } => break,
            Record::Statement {
                loc, conditions, ..
            } => (loc.line(), conditions, Vec::new()),
            Record::Query {
                loc,
                conditions,
                expected,
                ..
            } => {
                let types = match expected {
                    QueryExpect::Results { types, .. } => types.clone(),
                    QueryExpect::Error(_) => Vec::new(),
                };
                (loc.line(), conditions, types)
            }
            Record::System {
                loc, conditions, ..
            }
            | Record::Let {
                loc, conditions, ..
            } => (loc.line(), conditions, Vec::new()),
            _ => {
                // Controls, hash-threshold, comments, conditions (already attached
                // to their record), connections: no result to count.
                let _ = runner.run(record);
                continue;
            }
        };
        if skipped_by_conditions(conditions, &options.labels) {
            report.skipped_by_condition += 1;
            continue;
        }
        if options.skip_list.contains(&report.path, line) {
            report.skipped_by_list += 1;
            continue;
        }
        *expected_types.lock().unwrap_or_else(|e| e.into_inner()) = types;
        let failure = match catch_unwind(AssertUnwindSafe(|| runner.run(record))) {
            Ok(Ok(_)) => None,
            Ok(Err(error)) => Some(describe(&error)),
            Err(panic) => {
                let text = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "panic".to_string());
                let not_supported =
                    text.contains("not yet implemented") || text.contains("not implemented");
                Some((format!("the engine panicked: {text}"), not_supported))
            }
        };
        match failure {
            None => report.passed += 1,
            Some((message, not_supported)) => {
                report.failed += 1;
                if not_supported {
                    report.failed_not_supported += 1;
                }
                if report.failures.len() < options.failures_kept {
                    report.failures.push(Failure {
                        line,
                        message,
                        not_supported,
                    });
                }
            }
        }
    }
}

/// The failure text (without the location, which the report has) and whether the
/// engine's error was "not supported".
fn describe(error: &TestError) -> (String, bool) {
    let kind = error.kind();
    let not_supported = match &kind {
        TestErrorKind::Fail { err, .. } | TestErrorKind::ErrorMismatch { err, .. } => err
            .downcast_ref::<Error>()
            .is_some_and(|e| e.kind == ErrorKind::NotSupported),
        _ => false,
    };
    (kind.display(false).to_string(), not_supported)
}

/// Runs `paths` on `jobs` threads; reports come back in the order of `paths`.
/// `on_done` is called as each file finishes (from the worker thread).
pub fn run_files(
    paths: &[PathBuf],
    options: &Options,
    jobs: usize,
    on_done: &(dyn Fn(&FileReport) + Sync),
) -> Vec<FileReport> {
    let next = AtomicUsize::new(0);
    let reports: Vec<Mutex<Option<FileReport>>> = paths.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, paths.len().max(1)) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(path) = paths.get(i) else { break };
                    let report = run_file(path, options);
                    on_done(&report);
                    *reports[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(report);
                }
            });
        }
    });
    reports
        .into_iter()
        .map(|r| {
            r.into_inner()
                .unwrap_or_else(|e| e.into_inner())
                .expect("every file was run")
        })
        .collect()
}

/// The test files under `path`: the path itself if it is a file, else every `*.slt`
/// and `*.test` file below it, sorted.
pub fn collect_files(path: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    if path.is_dir() {
        let mut stack = vec![path.to_path_buf()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir)? {
                let entry = entry?.path();
                if entry.is_dir() {
                    stack.push(entry);
                } else if entry.extension().is_some_and(|e| e == "slt" || e == "test") {
                    files.push(entry);
                }
            }
        }
        files.sort();
    } else {
        files.push(path.to_path_buf());
    }
    Ok(files)
}
