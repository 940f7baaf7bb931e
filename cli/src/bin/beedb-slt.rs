//! `beedb-slt`: runs sqllogictest files against BeeDB, a fresh in-memory database per
//! file. See `cli/SLT.md`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Mutex;

use beedb_cli::slt::{self, Conventions, FileReport, Options, SkipList};

const USAGE: &str = "\
usage: beedb-slt [OPTIONS] FILES-OR-DIRECTORIES...

Runs sqllogictest files against BeeDB, each file on a fresh in-memory database.
Directories are searched for *.slt and *.test files. *.test files are treated as
SQLite's corpus (prepared in memory, valuewise, hash-threshold 8, SQLite's value
printing); other files run as written.

options:
  --label NAME           label for skipif/onlyif (repeatable; default: postgresql)
  --setting NAME=VALUE   session setting applied before every file (repeatable)
  --skip-list FILE       records to skip: lines `path-suffix:line  reason`
  --corpus               treat every file as SQLite corpus
  --project              treat every file as a BeeDB project file
  -j, --jobs N           files run in parallel (default 1)
  -v, --verbose          print every failure (file:line, SQL, expected vs actual)
  -h, --help             this text

The last line printed is `N passed, N failed, N skipped` (records). The exit status
is 1 if any record failed or a file could not be run, 2 on bad usage.";

struct Args {
    options: Options,
    paths: Vec<PathBuf>,
    jobs: usize,
    verbose: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut options = Options::default();
    let mut labels = Vec::new();
    let mut paths = Vec::new();
    let mut jobs = 1;
    let mut verbose = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--label" => labels.push(value("--label")?),
            "--setting" => {
                let setting = value("--setting")?;
                let (name, v) = setting
                    .split_once('=')
                    .ok_or_else(|| format!("--setting {setting}: expected NAME=VALUE"))?;
                options
                    .settings
                    .push((name.trim().to_string(), v.trim().to_string()));
            }
            "--skip-list" => {
                options.skip_list = SkipList::load(&PathBuf::from(value("--skip-list")?))?
            }
            "--corpus" => options.conventions = Some(Conventions::Corpus),
            "--project" => options.conventions = Some(Conventions::Project),
            "-j" | "--jobs" => {
                let n = value("--jobs")?;
                jobs = n.parse().map_err(|_| format!("--jobs {n}: not a number"))?;
            }
            "-v" | "--verbose" => verbose = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            flag if flag.starts_with('-') && flag.len() > 1 => {
                return Err(format!("unknown option {flag}"));
            }
            path => paths.push(PathBuf::from(path)),
        }
    }
    if !labels.is_empty() {
        options.labels = labels;
    }
    if paths.is_empty() {
        return Err("no files given".to_string());
    }
    options.failures_kept = if verbose { usize::MAX } else { 0 };
    Ok(Args {
        options,
        paths,
        jobs,
        verbose,
    })
}

fn print_report(report: &FileReport, verbose: bool) {
    let mut out = String::new();
    if verbose {
        for failure in &report.failures {
            out.push_str(&format!(
                "FAIL {}:{}\n{}\n\n",
                report.path, failure.line, failure.message
            ));
        }
    }
    match &report.error {
        Some(error) => out.push_str(&format!("{}: ERROR {error}\n", report.path)),
        None => out.push_str(&format!(
            "{}: {} passed, {} failed, {} skipped ({:.1}s)\n",
            report.path,
            report.passed,
            report.failed,
            report.skipped(),
            report.elapsed.as_secs_f64()
        )),
    }
    print!("{out}");
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(e) => {
            eprintln!("beedb-slt: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    // A bad --setting would fail every record of every file: report it once.
    if !args.options.settings.is_empty() {
        let checked = beedb::Database::open(":memory:").and_then(|db| {
            let mut conn = db.connect();
            for (name, value) in &args.options.settings {
                conn.set(name, value).map_err(|e| beedb::Error {
                    message: format!("--setting {name}={value}: {}", e.message),
                    ..e
                })?;
            }
            Ok(())
        });
        if let Err(e) = checked {
            eprintln!("beedb-slt: {e}");
            return ExitCode::from(2);
        }
    }
    let mut files = Vec::new();
    for path in &args.paths {
        match slt::collect_files(path) {
            Ok(found) => files.extend(found),
            Err(e) => {
                eprintln!("beedb-slt: {}: {e}", path.display());
                return ExitCode::from(2);
            }
        }
    }
    let print_lock = Mutex::new(());
    let verbose = args.verbose;
    let reports = slt::run_files(&files, &args.options, args.jobs, &|report| {
        let _guard = print_lock.lock().unwrap_or_else(|e| e.into_inner());
        print_report(report, verbose);
    });
    let passed: usize = reports.iter().map(|r| r.passed).sum();
    let failed: usize = reports.iter().map(|r| r.failed).sum();
    let skipped: usize = reports.iter().map(|r| r.skipped()).sum();
    let file_errors = reports.iter().filter(|r| r.error.is_some()).count();
    if file_errors > 0 {
        println!("{file_errors} file(s) could not be run");
    }
    println!("{passed} passed, {failed} failed, {skipped} skipped");
    if failed > 0 || file_errors > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
