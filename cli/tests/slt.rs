//! End-to-end SQL tests: BeeDB's own sqllogictest files (`sql/tests/slt/*.slt`) and
//! the sample of SQLite's sqllogictest corpus (`/work/shared/sqllogictest`, found
//! relative to the repository or through `BEEDB_SLT_CORPUS`), run through the
//! `beedb_cli::slt` runner that `beedb-slt` uses. Run with `--nocapture` to see the
//! per-file tables.

use std::path::{Path, PathBuf};
use std::time::Instant;

use beedb_cli::slt::{self, Backend, Conventions, FileReport, Options, SkipList};
use beedb::{Column, DataType, Error, ErrorKind, QueryResult, Row, Value};

/// Flip to `true` once the engine executes statements. While `false`, the corpus
/// pass-rate thresholds are reported but not asserted, and project files may fail
/// only with "not supported" errors. When `true`, every project record must pass and
/// the corpus must meet the thresholds below.
const ENGINE_READY: bool = true;

/// Minimum pass rate (passed / (passed + failed + skipped by the skip list)) for
/// select1–5 and the index/ samples, and for the evidence/ and random/ samples.
const SELECT_AND_INDEX_PASS_RATE: f64 = 0.99;
const EVIDENCE_AND_RANDOM_PASS_RATE: f64 = 0.95;

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn project_files() -> Vec<PathBuf> {
    let dir = manifest_dir().join("../sql/tests/slt");
    let mut files: Vec<PathBuf> = match std::fs::read_dir(&dir) {
        Ok(entries) => entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "slt"))
            .collect(),
        Err(_) => Vec::new(),
    };
    files.sort();
    files
}

/// The corpus folder: `BEEDB_SLT_CORPUS`, else `<repo>/../shared/sqllogictest`.
fn corpus_dir() -> Option<PathBuf> {
    let dir = match std::env::var_os("BEEDB_SLT_CORPUS") {
        Some(dir) => PathBuf::from(dir),
        None => manifest_dir().join("../../shared/sqllogictest"),
    };
    if dir.is_dir() {
        Some(dir)
    } else {
        println!(
            "note: sqllogictest corpus not found at {} (set BEEDB_SLT_CORPUS); skipped",
            dir.display()
        );
        None
    }
}

fn corpus_files(dir: &Path) -> Vec<PathBuf> {
    slt::collect_files(dir)
        .expect("corpus folder readable")
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "test"))
        .collect()
}

fn corpus_options() -> Options {
    Options {
        labels: vec!["postgresql".to_string()],
        skip_list: SkipList::load(&manifest_dir().join("tests/corpus-skips.txt"))
            .expect("corpus skip list parses"),
        conventions: Some(Conventions::Corpus),
        failures_kept: 3,
        ..Options::default()
    }
}

fn jobs() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(4))
}

/// Which threshold a corpus file answers to.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Group {
    SelectAndIndex,
    EvidenceAndRandom,
}

fn group_of(relative: &str) -> Group {
    if relative.starts_with("evidence/") || relative.starts_with("random/") {
        Group::EvidenceAndRandom
    } else {
        Group::SelectAndIndex
    }
}

fn pass_rate(passed: usize, failed: usize, skipped_by_list: usize) -> f64 {
    let counted = passed + failed + skipped_by_list;
    if counted == 0 {
        1.0
    } else {
        passed as f64 / counted as f64
    }
}

fn print_table(title: &str, base: &Path, reports: &[FileReport]) {
    println!("\n{title}");
    println!(
        "{:<44} {:>7} {:>7} {:>7} {:>8} {:>8} {:>7} {:>6}",
        "file", "records", "passed", "failed", "skip-if", "skip-lst", "pass%", "secs"
    );
    for r in reports {
        let name = Path::new(&r.path)
            .strip_prefix(base)
            .map_or(r.path.clone(), |p| p.display().to_string());
        println!(
            "{:<44} {:>7} {:>7} {:>7} {:>8} {:>8} {:>6.1}% {:>6.1}{}",
            name,
            r.records(),
            r.passed,
            r.failed,
            r.skipped_by_condition,
            r.skipped_by_list,
            100.0 * pass_rate(r.passed, r.failed, r.skipped_by_list),
            r.elapsed.as_secs_f64(),
            r.error
                .as_deref()
                .map_or(String::new(), |e| format!("  ERROR {e}")),
        );
    }
}

/// The bee modes the SQL suite runs in: every record must pass in each.
/// `compiled` forces the Cranelift maker for every bee (the default policy would
/// instantiate nearly all of them on test-sized tables).
fn bee_modes() -> Vec<(&'static str, Vec<(String, String)>)> {
    let set = |pairs: &[(&str, &str)]| {
        pairs
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect::<Vec<_>>()
    };
    vec![
        ("bees off", set(&[("bees", "off")])),
        ("bees on", set(&[("bees", "on")])),
        (
            "bees on, compiled",
            set(&[("bees", "on"), ("bee_maker", "compiled")]),
        ),
    ]
}

/// The files that test one optimizer rule against PostgreSQL's answers (no EXPLAIN
/// records in them) must give the same answers with that rule off: the rule may
/// change the plan, never the rows.
#[test]
fn optimizer_rule_files_pass_with_their_rule_off() {
    let dir = manifest_dir().join("../sql/tests/slt");
    let mut problems = Vec::new();
    for (file, rule) in [
        ("outer_join_reduction.slt", "optimizer_reduce_outer_joins"),
        ("transitive_predicates.slt", "optimizer_filter_pushdown"),
        ("transitive_predicates.slt", "optimizer_join_order"),
        ("decorrelate_single_row.slt", "optimizer_decorrelate"),
    ] {
        let options = Options {
            conventions: Some(Conventions::Project),
            failures_kept: usize::MAX,
            settings: vec![(rule.to_string(), "off".to_string())],
            ..Options::default()
        };
        let reports = slt::run_files(&[dir.join(file)], &options, 1, &|_| {});
        for r in &reports {
            assert!(r.passed > 0, "{file} ran no record");
            if let Some(e) = &r.error {
                problems.push(format!("[{rule} = off] {file}: {e}"));
            }
            for f in &r.failures {
                problems.push(format!("[{rule} = off] {file}:{}\n{}", f.line, f.message));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

#[test]
fn project_slt_files_pass() {
    let files = project_files();
    if files.is_empty() {
        println!("note: no sql/tests/slt/*.slt files yet");
        return;
    }
    let mut problems = Vec::new();
    // Besides the bee modes: two threads on every aggregation pipeline they can take
    // (parallel_min_rows = 0 splits even a test's small tables).
    let mut modes = bee_modes();
    modes.push((
        "2 threads",
        vec![("threads".to_string(), "2".to_string()), ("parallel_min_rows".to_string(), "0".to_string())],
    ));
    for (mode, settings) in modes {
        let options = Options {
            conventions: Some(Conventions::Project),
            failures_kept: usize::MAX,
            skip_list: SkipList::load(&manifest_dir().join("../sql/tests/slt/known-gaps.txt"))
                .expect("known-gaps list parses"),
            settings,
            ..Options::default()
        };
        let reports = slt::run_files(&files, &options, jobs(), &|_| {});
        print_table(
            &format!("project files ({mode})"),
            &manifest_dir().join("../sql/tests/slt"),
            &reports,
        );
        for r in &reports {
            if let Some(e) = &r.error {
                problems.push(format!("[{mode}] {}: {e}", r.path));
            }
            for f in &r.failures {
                if ENGINE_READY || !f.not_supported {
                    problems.push(format!("[{mode}] {}:{}\n{}", r.path, f.line, f.message));
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{} failing record(s):\n\n{}",
        problems.len(),
        problems.join("\n\n")
    );
}

/// Prints each group's pass rate; returns the groups below their threshold.
fn pass_rate_verdicts(dir: &Path, reports: &[FileReport]) -> Vec<String> {
    let mut verdicts = Vec::new();
    for (group, threshold) in [
        (Group::SelectAndIndex, SELECT_AND_INDEX_PASS_RATE),
        (Group::EvidenceAndRandom, EVIDENCE_AND_RANDOM_PASS_RATE),
    ] {
        let members: Vec<&FileReport> = reports
            .iter()
            .filter(|r| {
                let relative = Path::new(&r.path)
                    .strip_prefix(dir)
                    .unwrap_or(Path::new(&r.path));
                group_of(&relative.to_string_lossy().replace('\\', "/")) == group
            })
            .collect();
        let passed = members.iter().map(|r| r.passed).sum();
        let failed = members.iter().map(|r| r.failed).sum();
        let listed = members.iter().map(|r| r.skipped_by_list).sum();
        let rate = pass_rate(passed, failed, listed);
        println!(
            "{group:?}: {passed} passed, {failed} failed, {listed} skip-listed: {:.2}% (need {:.0}%)",
            100.0 * rate,
            100.0 * threshold
        );
        if rate < threshold {
            let examples: Vec<String> = members
                .iter()
                .flat_map(|r| {
                    r.failures
                        .iter()
                        .map(move |f| format!("{}:{}\n{}", r.path, f.line, f.message))
                })
                .take(10)
                .collect();
            verdicts.push(format!(
                "{group:?} pass rate {:.2}% < {:.0}%; first failures:\n{}",
                100.0 * rate,
                100.0 * threshold,
                examples.join("\n\n")
            ));
        }
    }
    verdicts
}

#[test]
fn corpus_sample_meets_pass_rates() {
    let Some(dir) = corpus_dir() else { return };
    for (mode, settings) in bee_modes() {
        corpus_in_mode(&dir, mode, settings);
    }
}

fn corpus_in_mode(dir: &Path, mode: &str, mut settings: Vec<(String, String)>) {
    let started = Instant::now();
    // Every corpus query takes well under a second; one that does not is a failure
    // with its name, not a CI run that stops at its time cap.
    settings.push(("statement_timeout".to_string(), "30s".to_string()));
    let options = Options {
        settings,
        ..corpus_options()
    };
    let reports = slt::run_files(&corpus_files(dir), &options, jobs(), &|_| {});
    print_table(
        &format!("sqllogictest corpus sample (label postgresql, {mode})"),
        dir,
        &reports,
    );
    println!("corpus run ({mode}): {:.1}s", started.elapsed().as_secs_f64());

    let unreadable: Vec<String> = reports
        .iter()
        .filter_map(|r| r.error.as_ref().map(|e| format!("{}: {e}", r.path)))
        .collect();
    assert!(
        unreadable.is_empty(),
        "corpus files that did not run:\n{}",
        unreadable.join("\n")
    );

    let verdicts = pass_rate_verdicts(dir, &reports);
    if ENGINE_READY {
        assert!(verdicts.is_empty(), "{}", verdicts.join("\n\n"));
    } else if !verdicts.is_empty() {
        println!("ENGINE_READY is false: thresholds not asserted");
    }
}

/// SQLite through the same runner: checks the runner itself (preparation, hashing,
/// value printing, counting) on engine-independent ground. SQLite must pass every
/// record it does not skip.
struct Sqlite(rusqlite::Connection);

impl Backend for Sqlite {
    fn execute_sql(&mut self, sql: &str) -> Result<QueryResult, Error> {
        let fail = |e: rusqlite::Error| Error::new(ErrorKind::Internal, "XX000", e.to_string());
        let mut stmt = match self.0.prepare(sql) {
            Ok(stmt) => stmt,
            Err(rusqlite::Error::MultipleStatement) => {
                self.0.execute_batch(sql).map_err(fail)?;
                return Ok(QueryResult::command(""));
            }
            Err(e) => return Err(fail(e)),
        };
        let column_count = stmt.column_count();
        if column_count == 0 {
            let n = stmt.execute([]).map_err(fail)?;
            return Ok(QueryResult {
                rows_affected: n as u64,
                ..QueryResult::command("")
            });
        }
        let columns = (0..column_count)
            .map(|i| Column {
                name: stmt.column_name(i).map_or(String::new(), |s| s.to_string()),
                data_type: DataType::Text,
            })
            .collect();
        let mut rows = Vec::new();
        let mut query = stmt.query([]).map_err(fail)?;
        while let Some(row) = query.next().map_err(fail)? {
            let mut values = Vec::with_capacity(column_count);
            for i in 0..column_count {
                use rusqlite::types::ValueRef;
                values.push(match row.get_ref(i).map_err(fail)? {
                    ValueRef::Null => Value::Null,
                    ValueRef::Integer(v) => Value::BigInt(v),
                    ValueRef::Real(v) => Value::Double(v),
                    ValueRef::Text(t) | ValueRef::Blob(t) => {
                        Value::Text(String::from_utf8_lossy(t).into_owned())
                    }
                });
            }
            rows.push(Row(values));
        }
        let rows_affected = rows.len() as u64;
        Ok(QueryResult {
            columns,
            rows,
            tag: String::new(),
            rows_affected,
        })
    }
}

fn run_on_sqlite(files: &[PathBuf]) -> Vec<FileReport> {
    let options = Options {
        labels: vec!["sqlite".to_string()],
        // Written by an older SQLite: today's SQLite raises "integer overflow".
        skip_list: SkipList::parse("evidence/slt_lang_aggfunc.test:480  sum() overflow").unwrap(),
        conventions: Some(Conventions::Corpus),
        failures_kept: 5,
        ..Options::default()
    };
    files
        .iter()
        .map(|path| {
            slt::run_file_with(path, &options, || {
                let conn = rusqlite::Connection::open_in_memory()
                    .map_err(|e| Error::new(ErrorKind::Internal, "XX000", e.to_string()))?;
                Ok(Box::new(Sqlite(conn)) as Box<dyn Backend>)
            })
        })
        .collect()
}

fn assert_all_pass_on_sqlite(dir: &Path, files: &[PathBuf]) {
    let reports = run_on_sqlite(files);
    print_table("corpus on SQLite (label sqlite)", dir, &reports);
    for r in &reports {
        assert!(r.error.is_none(), "{}: {:?}", r.path, r.error);
        assert!(
            r.failed == 0,
            "{}: {} records failed on SQLite, e.g.\n{}",
            r.path,
            r.failed,
            r.failures
                .iter()
                .map(|f| format!("line {}: {}", f.line, f.message))
                .collect::<Vec<_>>()
                .join("\n")
        );
        assert!(r.records() == 0 || r.passed > 0, "{}: nothing ran", r.path);
    }
}

/// The whole corpus sample on SQLite (a few seconds): the runner reproduces SQLite's
/// own results, so a BeeDB failure is BeeDB's.
#[test]
fn runner_passes_corpus_on_sqlite() {
    let Some(dir) = corpus_dir() else { return };
    assert_all_pass_on_sqlite(&dir, &corpus_files(&dir));
}

/// PostgreSQL through `psql`, one process per file: what PostgreSQL does with the
/// corpus, to keep `corpus-skips.txt` honest. Values come back as text, so booleans
/// and float formats are approximate; use it to find disagreements, then read them.
struct Psql {
    child: std::process::Child,
    input: std::process::ChildStdin,
    output: std::io::BufReader<std::process::ChildStdout>,
}

const PSQL_END: &str = "@@beedb-slt-end@@";
const PSQL_NULL: &str = "@@beedb-slt-null@@";

impl Psql {
    fn connect(args: &str, database: &str) -> std::io::Result<Psql> {
        let command = format!(
            "exec stdbuf -o0 -e0 psql -X -q -A -t -F \"$(printf '\\037')\" -P null={PSQL_NULL} -v ON_ERROR_STOP=0 {args} -d {database} 2>&1"
        );
        let mut child = std::process::Command::new("sh")
            .arg("-c")
            .arg(command)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()?;
        let input = child.stdin.take().unwrap();
        let output = std::io::BufReader::new(child.stdout.take().unwrap());
        Ok(Psql {
            child,
            input,
            output,
        })
    }
}

impl Drop for Psql {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Backend for Psql {
    fn execute_sql(&mut self, sql: &str) -> Result<QueryResult, Error> {
        use std::io::{BufRead, Write};
        let io = |e: std::io::Error| Error::new(ErrorKind::Io, "58030", e.to_string());
        let sql = sql.trim_end().trim_end_matches(';');
        write!(self.input, "{sql};\n\\echo {PSQL_END}\n").map_err(io)?;
        self.input.flush().map_err(io)?;
        let mut rows = Vec::new();
        let mut error = None;
        let mut line = String::new();
        loop {
            line.clear();
            if self.output.read_line(&mut line).map_err(io)? == 0 {
                return Err(Error::new(ErrorKind::Io, "58030", "psql exited"));
            }
            let text = line.trim_end_matches('\n');
            if text == PSQL_END {
                break;
            }
            let diagnostic = text.strip_prefix("psql:").map_or(text, |t| {
                // psql:<stdin>:LINE: ERROR: …
                t.splitn(3, ':').nth(2).unwrap_or(t).trim_start()
            });
            if let Some(message) = diagnostic.strip_prefix("ERROR:") {
                error.get_or_insert_with(|| message.trim().to_string());
                continue;
            }
            if error.is_some()
                || ["NOTICE:", "WARNING:", "HINT:"]
                    .iter()
                    .any(|p| diagnostic.starts_with(p))
            {
                continue; // DETAIL/LINE/caret lines of an error
            }
            rows.push(Row(text
                .split('\u{1f}')
                .map(|v| match v {
                    PSQL_NULL => Value::Null,
                    // psql prints booleans as t/f (the corpus has no such strings).
                    "t" => Value::Boolean(true),
                    "f" => Value::Boolean(false),
                    v => Value::Text(v.to_string()),
                })
                .collect()));
        }
        if let Some(message) = error {
            return Err(Error::new(ErrorKind::Semantic, "42000", message));
        }
        if rows.is_empty() {
            return Ok(QueryResult::command(""));
        }
        let columns = (0..rows[0].len())
            .map(|i| Column {
                name: format!("c{i}"),
                data_type: DataType::Text,
            })
            .collect();
        let rows_affected = rows.len() as u64;
        Ok(QueryResult {
            columns,
            rows,
            tag: String::new(),
            rows_affected,
        })
    }
}

/// Runs the corpus on PostgreSQL and prints every failure as a skip-list line:
/// `BEEDB_SLT_PSQL='-h /tmp/sock -p 5432 -U postgres' cargo test -p beedb --test slt
/// corpus_on_postgresql -- --ignored --nocapture`. Creates and drops one database
/// per file.
#[test]
#[ignore]
fn corpus_on_postgresql() {
    let Some(dir) = corpus_dir() else { return };
    let Some(args) = std::env::var("BEEDB_SLT_PSQL").ok() else {
        println!("set BEEDB_SLT_PSQL to psql connection options");
        return;
    };
    let options = Options {
        failures_kept: usize::MAX,
        ..corpus_options()
    };
    let admin = |sql: &str| {
        let status = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("psql -X -q {args} -d postgres -c '{sql}'"))
            .status()
            .unwrap();
        assert!(status.success(), "{sql}");
    };
    let mut reports = Vec::new();
    let only = std::env::var("BEEDB_SLT_ONLY").unwrap_or_default();
    let files: Vec<PathBuf> = corpus_files(&dir)
        .into_iter()
        .filter(|p| p.to_string_lossy().contains(&only))
        .collect();
    for (i, path) in files.iter().enumerate() {
        let database = format!("beedb_slt_{i}");
        admin(&format!("DROP DATABASE IF EXISTS {database}"));
        admin(&format!("CREATE DATABASE {database}"));
        let report = slt::run_file_with(path, &options, || {
            Psql::connect(&args, &database)
                .map(|p| Box::new(p) as Box<dyn Backend>)
                .map_err(|e| Error::new(ErrorKind::Io, "58030", e.to_string()))
        });
        admin(&format!("DROP DATABASE {database}"));
        reports.push(report);
    }
    print_table("corpus on PostgreSQL (label postgresql)", &dir, &reports);
    let verdicts = pass_rate_verdicts(&dir, &reports);
    println!("below threshold: {verdicts:?}");
    for r in &reports {
        let relative = Path::new(&r.path)
            .strip_prefix(&dir)
            .unwrap()
            .display()
            .to_string();
        for f in &r.failures {
            let first = f.message.lines().next().unwrap_or("");
            println!("{relative}:{}  {first}", f.line);
            if std::env::var_os("BEEDB_SLT_FULL").is_some() {
                println!("{}\n", f.message);
            }
        }
    }
}

/// Counting and the project conventions, on SQLite: passed, failed (with its line and
/// diff), skipped by label and by the skip list.
#[test]
fn runner_counts_records_on_sqlite() {
    let script = "\
statement ok
CREATE TABLE t(a INTEGER, b TEXT)

statement ok
INSERT INTO t VALUES (1, 'x  y'), (2, ''), (3, NULL)

query IT rowsort
SELECT a, b FROM t
----
1 x y
2 (empty)
3 NULL

query R
SELECT 1.5
----
1.500

statement error no such table
SELECT * FROM nope

skipif sqlite
query I
SELECT 'skipped by label'
----
0

onlyif othersql
statement ok
THIS IS NOT SQL

query I
SELECT 42
----
41

query I
SELECT 'skip listed'
----
0
";
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("counting.slt");
    std::fs::write(&path, script).unwrap();
    let options = Options {
        labels: vec!["sqlite".to_string()],
        skip_list: SkipList::parse("counting.slt:37  deliberately skipped").unwrap(),
        failures_kept: 10,
        ..Options::default()
    };
    let report = slt::run_file_with(&path, &options, || {
        Ok(Box::new(Sqlite(rusqlite::Connection::open_in_memory().unwrap())) as Box<dyn Backend>)
    });
    assert_eq!(report.conventions, Some(Conventions::Project));
    assert!(report.error.is_none(), "{:?}", report.error);
    assert_eq!(
        (
            report.passed,
            report.failed,
            report.skipped_by_condition,
            report.skipped_by_list
        ),
        (5, 1, 2, 1),
        "{report:#?}"
    );
    let failure = &report.failures[0];
    assert_eq!(failure.line, 32);
    assert!(failure.message.contains("SELECT 42") && failure.message.contains("-   41"));
    assert!(failure.message.contains("+   42"), "{}", failure.message);
    assert!(!failure.not_supported);
}
