//! `beedb bench WORKLOAD [options]`: argument parsing, the run, and its output.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, ValueEnum};

use crate::bench::Ctx;
use crate::engine::{Durability, EngineKind, Peers};
use crate::progress::Progress;
use crate::report::Report;
use crate::workload::{load, optimizer, tp1, tpcc, tpcds, tpch, wisconsin};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Workload {
    /// The Wisconsin benchmark's 32 queries in three index configurations.
    Wisconsin,
    /// TP1 (debit-credit): transactions per second, 1 and K clients, each synchronous mode.
    Tp1,
    /// COPY of every TPC-H table: seconds and bytes on disk per table.
    Load,
    /// The 22 TPC-H queries on data loaded into every engine, answers verified.
    Tpch,
    /// The 99 TPC-DS queries on tpcgen-cli data loaded into every engine, answers
    /// verified against DuckDB's.
    Tpcds,
    /// The SQPyte micro-benchmarks through Python's DB-API modules (beedb, sqlite3,
    /// duckdb) on TPC-H data at --sf.
    Python,
    /// TPC-C: the five transactions in the standard mix, tpmC, consistency checked.
    Tpcc,
    /// The POSTGRES study's optimizer tests: the chosen plan against every forced
    /// alternative (scan and join methods), and row estimates of correlated ranges.
    Optimizer,
    /// A tour of a few minutes through all of them at small sizes.
    Quick,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Table,
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Sync {
    Full,
    Normal,
}

/// Runs a workload on BeeDB and its peers side by side, checks every answer, and
/// reports medians and ratios measured in one run.
#[derive(Debug, Parser)]
#[command(name = "beedb bench", version, about, long_about = None)]
pub struct Args {
    /// What to run.
    #[arg(value_enum)]
    pub workload: Workload,
    /// Engines, comma-separated: beedb, beedb-generic, sqlite, duckdb, postgres
    /// [default: all; peers that are not installed are left out with a note].
    #[arg(long, value_delimiter = ',')]
    pub engines: Option<Vec<String>>,
    /// Measured runs per item, after one warm-up [default: wisconsin 5, tp1 3, load 1].
    #[arg(long)]
    pub runs: Option<usize>,
    /// How to print the results on stdout.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    /// Folder for generated data, databases and saved results.
    #[arg(long, default_value = "bench-out")]
    pub out: PathBuf,
    /// Wisconsin, optimizer: rows of tenk1 and tenk2 (onek, bprime, onek1 and onek2
    /// have n/10) [default: wisconsin 10000, optimizer 1000000].
    #[arg(long)]
    pub n: Option<usize>,
    /// TP1, TPC-C: client counts to run, comma-separated [default: TP1 1 and the
    /// number of cores, TPC-C 1].
    #[arg(long, value_delimiter = ',')]
    pub clients: Option<Vec<usize>>,
    /// TP1: configurations, comma-separated: tpcb (TPC-B sizes at --scale), study.
    #[arg(long, value_delimiter = ',', default_value = "tpcb,study")]
    pub configs: Vec<String>,
    /// TP1: TPC-B scale (1 = 1 branch, 10 tellers, 100,000 accounts). TPC-C: shrinks
    /// items, stock, customers and orders by this factor — for tests only, not TPC-C
    /// compliant (1 = the specification's population).
    #[arg(long, default_value_t = 1.0)]
    pub scale: f64,
    /// TPC-C: warehouses (each 10 districts, 30,000 customers, 100,000 stock rows).
    #[arg(long, default_value_t = 1)]
    pub warehouses: usize,
    /// TP1, TPC-C: synchronous modes, comma-separated.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "full,normal")]
    pub sync: Vec<Sync>,
    /// TP1, TPC-C: measured seconds per run.
    #[arg(long, default_value_t = 5.0)]
    pub seconds: f64,
    /// Load, TPC-H, TPC-DS, Python: scale factor.
    #[arg(long, default_value_t = 1.0)]
    pub sf: f64,
    /// TPC-H, TPC-DS: queries to run, comma-separated numbers and ranges (e.g.
    /// 1,3,6 or 1,5-9) [default: all 22 / all 99].
    #[arg(long, value_delimiter = ',')]
    pub queries: Option<Vec<String>>,
    /// TPC-H, TPC-DS: seconds one statement may run before the engine stops it (it
    /// is then reported as `timeout`); 0 = no limit.
    #[arg(long, default_value_t = 60.0)]
    pub timeout: f64,
    /// TPC-H, TPC-DS: threads every engine may use for one query.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Wisconsin, TPC-H: keep EXPLAIN ANALYZE (per-operator times) of each query on
    /// the engines that have it (BeeDB; for TPC-H also PostgreSQL).
    #[arg(long)]
    pub profile: bool,
    /// Wisconsin: count the instructions of one query (e.g. q9) under callgrind with
    /// bees on and off, instead of timing the workload.
    #[arg(long, value_name = "QUERY")]
    pub callgrind: Option<String>,
    /// Seed of every random choice (data, keys), so runs are reproducible.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// No progress on stderr.
    #[arg(long)]
    pub quiet: bool,
}

/// `beedb bench …` (the arguments after `bench`). Exit status 1 if any answer did
/// not verify or an engine failed, 2 for bad arguments.
pub fn bench_main(args: impl IntoIterator<Item = String>) -> ExitCode {
    let args: Vec<String> = args.into_iter().collect();
    if args.first().map(String::as_str) == Some(crate::callgrind::CHILD_COMMAND) {
        return crate::callgrind::child_main(&args[1..]);
    }
    let parsed = match Args::try_parse_from(std::iter::once("beedb bench".to_string()).chain(args)) {
        Ok(a) => a,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { ExitCode::from(2) } else { ExitCode::SUCCESS };
        }
    };
    match run(&parsed) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(message) => {
            eprintln!("beedb bench: {message}");
            ExitCode::from(2)
        }
    }
}

fn engines(args: &Args) -> Result<(Vec<EngineKind>, bool), String> {
    match &args.engines {
        None => Ok((EngineKind::ALL.to_vec(), false)),
        Some(names) => {
            let mut kinds = Vec::new();
            for n in names {
                let k = EngineKind::parse(n.trim())
                    .ok_or_else(|| format!("unknown engine \"{n}\" (beedb, beedb-generic, sqlite, duckdb, postgres)"))?;
                if !kinds.contains(&k) {
                    kinds.push(k);
                }
            }
            kinds.sort();
            Ok((kinds, true))
        }
    }
}

/// Runs the workload; `Ok(false)` if something did not verify or failed.
pub fn run(args: &Args) -> Result<bool, String> {
    // The Python workload names Python modules (sqlite3), not the lab's engines.
    let (wanted, explicit) = if args.workload == Workload::Python {
        (Vec::new(), false)
    } else {
        engines(args)?
    };
    let n = args.n.unwrap_or(if args.workload == Workload::Optimizer { 1_000_000 } else { 10_000 });
    if n < 100 || (args.workload == Workload::Optimizer && n < 1000) {
        return Err("--n must be at least 100 (1000 for the optimizer workload: its ranges reach 502)".into());
    }
    if args.runs == Some(0) {
        return Err("--runs must be at least 1".into());
    }
    let out = &args.out;
    let work = out.join("work");
    let data = out.join("data");
    for d in [&work, &data] {
        std::fs::create_dir_all(d).map_err(|e| format!("cannot create {}: {e}", d.display()))?;
    }
    let progress = Progress::new(args.quiet);
    let mut notes = Vec::new();
    let peers = Peers::find(&wanted, &work, &mut |n| {
        progress.note(&n);
        notes.push(n)
    });
    let mut kinds = Vec::new();
    for k in wanted {
        if peers.available(k) {
            kinds.push(k);
        } else if explicit {
            return Err(format!("{k} was asked for but is not available (scripts/install-peers installs the peers)"));
        }
    }
    let mut ctx = Ctx {
        kinds,
        peers,
        work,
        data,
        progress,
        runs: 1,
        profile: args.profile,
        notes,
        failures: Vec::new(),
    };

    if let Some(query) = &args.callgrind {
        if args.workload != Workload::Wisconsin {
            return Err("--callgrind runs one Wisconsin query: use it with the wisconsin workload".into());
        }
        let report = crate::callgrind::run(&mut ctx, n, query, args.seed)?;
        return finish(args, &mut ctx, vec![report]);
    }

    let tp1_options = |seconds: f64, shapes: Vec<tp1::Shape>| -> Result<tp1::Options, String> {
        let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        let mut clients = args.clients.clone().unwrap_or_else(|| if cores > 1 { vec![1, cores] } else { vec![1] });
        clients.retain(|c| *c > 0);
        if clients.is_empty() {
            return Err("--clients needs at least one client".into());
        }
        let durabilities = args
            .sync
            .iter()
            .map(|s| match s {
                Sync::Full => Durability::Full,
                Sync::Normal => Durability::Normal,
            })
            .collect();
        Ok(tp1::Options { shapes, clients, durabilities, seconds, seed: args.seed })
    };
    let shapes = || -> Result<Vec<tp1::Shape>, String> {
        args.configs
            .iter()
            .map(|c| match c.trim() {
                "tpcb" => Ok(tp1::Shape::tpcb(args.scale)),
                "study" => Ok(tp1::Shape::study()),
                other => Err(format!("unknown TP1 configuration \"{other}\" (tpcb, study)")),
            })
            .collect()
    };

    let check_query_options = |sf: f64| -> Result<(), String> {
        if sf <= 0.0 {
            return Err("--sf must be positive".into());
        }
        if !(args.timeout >= 0.0 && args.timeout.is_finite()) {
            return Err("--timeout must be a number of seconds, 0 for no limit".into());
        }
        if args.threads == 0 {
            return Err("--threads must be at least 1".into());
        }
        Ok(())
    };
    let timeout = (args.timeout > 0.0).then(|| std::time::Duration::from_secs_f64(args.timeout));
    let tpch_options = |sf: f64| -> Result<tpch::Options, String> {
        check_query_options(sf)?;
        Ok(tpch::Options {
            sf,
            queries: query_numbers(args.queries.as_deref(), 22, "TPC-H")?,
            timeout,
            threads: args.threads,
            material: tpch::find_material()?,
        })
    };

    let mut reports = Vec::new();
    match args.workload {
        Workload::Wisconsin => {
            ctx.runs = args.runs.unwrap_or(5);
            reports.push(wisconsin::run(&mut ctx, n, args.seed));
        }
        Workload::Optimizer => {
            ctx.runs = args.runs.unwrap_or(5);
            reports.push(optimizer::run(&mut ctx, n));
        }
        Workload::Tp1 => {
            if args.seconds <= 0.0 {
                return Err("--seconds must be positive".into());
            }
            ctx.runs = args.runs.unwrap_or(3);
            let options = tp1_options(args.seconds, shapes()?)?;
            reports.push(tp1::run(&mut ctx, &options));
        }
        Workload::Tpcc => {
            if args.seconds <= 0.0 {
                return Err("--seconds must be positive".into());
            }
            if args.warehouses == 0 {
                return Err("--warehouses must be at least 1".into());
            }
            if !(args.scale > 0.0 && args.scale <= 1.0) {
                return Err("--scale for TPC-C shrinks the population for tests: a number in (0, 1]".into());
            }
            // One measured run of --seconds by default: a TPC-C run is long already.
            ctx.runs = args.runs.unwrap_or(1);
            let base = tp1_options(args.seconds, Vec::new())?;
            let clients = if args.clients.is_some() { base.clients } else { vec![1] };
            let options = tpcc::Options {
                warehouses: args.warehouses,
                scale: args.scale,
                clients,
                durabilities: base.durabilities,
                seconds: args.seconds,
                seed: args.seed,
            };
            reports.push(tpcc::run(&mut ctx, &options));
        }
        Workload::Load => {
            if args.sf <= 0.0 {
                return Err("--sf must be positive".into());
            }
            ctx.runs = args.runs.unwrap_or(1);
            reports.push(load::run(&mut ctx, args.sf));
        }
        Workload::Tpch => {
            let options = tpch_options(args.sf)?;
            ctx.runs = args.runs.unwrap_or(3);
            reports.push(tpch::run(&mut ctx, &options));
        }
        Workload::Tpcds => {
            check_query_options(args.sf)?;
            let options = tpcds::Options {
                sf: args.sf,
                queries: query_numbers(args.queries.as_deref(), 99, "TPC-DS")?,
                timeout,
                threads: args.threads,
                material: tpcds::find_material()?,
            };
            ctx.runs = args.runs.unwrap_or(3);
            reports.push(tpcds::run(&mut ctx, &options));
        }
        Workload::Python => {
            if args.sf <= 0.0 {
                return Err("--sf must be positive".into());
            }
            ctx.runs = args.runs.unwrap_or(3);
            // The Python modules' names: beedb, beedb-generic, sqlite3, duckdb.
            let names: Vec<String> = match &args.engines {
                None => vec![
                    "beedb".into(),
                    "beedb-generic".into(),
                    "sqlite3".into(),
                    "duckdb".into(),
                ],
                Some(list) => list
                    .iter()
                    .map(|n| {
                        if n == "sqlite" {
                            "sqlite3".to_string()
                        } else {
                            n.clone()
                        }
                    })
                    .collect(),
            };
            return crate::workload::python::run(&mut ctx, args.sf, &names, &args.out);
        }
        Workload::Quick => {
            // Small sizes: Wisconsin at N = 10,000, TP1 at a tenth of TPC-B's scale
            // for 1 s per run, loading TPC-H SF 0.01 and its 22 queries.
            let tpch = tpch_options(0.01)?;
            ctx.runs = args.runs.unwrap_or(3);
            reports.push(wisconsin::run(&mut ctx, 10_000, args.seed));
            let options = tp1_options(1.0, vec![tp1::Shape::tpcb(0.1)])?;
            reports.push(tp1::run(&mut ctx, &options));
            ctx.runs = args.runs.unwrap_or(1);
            reports.push(load::run(&mut ctx, 0.01));
            ctx.runs = args.runs.unwrap_or(3);
            reports.push(tpch::run(&mut ctx, &tpch));
        }
    }
    finish(args, &mut ctx, reports)
}

/// `--queries` as numbers in the order given (`1,5-9` is 1, 5, 6, 7, 8, 9); all of
/// 1..=`last` when not given.
fn query_numbers(given: Option<&[String]>, last: u32, benchmark: &str) -> Result<Vec<u32>, String> {
    let Some(given) = given else {
        return Ok((1..=last).collect());
    };
    let mut numbers = Vec::new();
    for part in given.iter().map(|p| p.trim()).filter(|p| !p.is_empty()) {
        let bad = || format!("--queries: \"{part}\" is not a query number or a range such as 5-9");
        let (from, to) = match part.split_once('-') {
            Some((a, b)) => (a.trim().parse::<u32>().map_err(|_| bad())?, b.trim().parse::<u32>().map_err(|_| bad())?),
            None => {
                let n = part.parse::<u32>().map_err(|_| bad())?;
                (n, n)
            }
        };
        if from > to {
            return Err(bad());
        }
        for n in from..=to {
            if !(1..=last).contains(&n) {
                return Err(format!("--queries: there is no {benchmark} query {n} (1 to {last})"));
            }
            if !numbers.contains(&n) {
                numbers.push(n);
            }
        }
    }
    if numbers.is_empty() {
        return Err("--queries needs at least one query".into());
    }
    Ok(numbers)
}

/// Prints the reports, saves them with their charts, and says whether all verified.
fn finish(args: &Args, ctx: &mut Ctx, mut reports: Vec<Report>) -> Result<bool, String> {
    for r in &mut reports {
        r.notes.extend(ctx.notes.iter().cloned());
        r.notes.extend(ctx.failures.iter().map(|f| format!("FAILED: {f}")));
    }
    let saved = save(&args.out, &reports).map_err(|e| format!("saving results under {}: {e}", args.out.display()))?;
    match args.format {
        Format::Table => {
            for r in &reports {
                println!("{}", r.render_table());
            }
            println!("saved: {}", saved.display());
        }
        Format::Json => {
            let value = if reports.len() == 1 { reports[0].to_json() } else { merged(&reports).to_json() };
            println!("{}", serde_json::to_string_pretty(&value).expect("JSON"));
        }
    }
    let ok = ctx.failures.is_empty() && reports.iter().all(|r| r.results.iter().all(|m| m.verified));
    if !ok {
        eprintln!("beedb bench: {} failure(s); see the notes", ctx.failures.len().max(1));
    }
    Ok(ok)
}

/// The reports of `quick` as one, items prefixed by their workload.
fn merged(reports: &[Report]) -> Report {
    let mut all = reports[0].clone();
    all.workload = "quick".into();
    all.parameters = Vec::new();
    all.results.clear();
    all.items.clear();
    all.notes.clear();
    all.profiles.clear();
    all.sections.clear();
    for r in reports {
        for m in &r.results {
            let mut m = m.clone();
            m.item = format!("{} {}", r.workload, m.item);
            all.results.push(m);
        }
        for (k, v) in &r.parameters {
            all.parameters.push((format!("{}.{k}", r.workload), v.clone()));
        }
        all.profiles.extend(r.profiles.iter().cloned());
        all.sections.extend(r.sections.iter().cloned());
        for n in &r.notes {
            if !all.notes.contains(n) {
                all.notes.push(n.clone());
            }
        }
    }
    all
}

/// Saves each report under `<out>/results/<workload>-<params>-<time>/`: the table,
/// the JSON (with every run), the raw runs as CSV and the charts. Returns the folder.
fn save(out: &Path, reports: &[Report]) -> std::io::Result<PathBuf> {
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let name = if reports.len() == 1 {
        let r = &reports[0];
        let params: Vec<String> =
            r.parameters.iter().filter(|(k, _)| k != "runs").map(|(k, v)| format!("{k}{v}")).collect();
        format!("{}-{}-{stamp}", r.workload, params.join("-").replace([',', ' '], "_"))
    } else {
        format!("quick-{stamp}")
    };
    let dir = out.join("results").join(name);
    std::fs::create_dir_all(&dir)?;
    for r in reports {
        std::fs::write(dir.join(format!("{}.txt", r.workload)), r.render_table())?;
        std::fs::write(
            dir.join(format!("{}.json", r.workload)),
            serde_json::to_string_pretty(&r.to_json()).expect("JSON"),
        )?;
        std::fs::write(dir.join(format!("{}-runs.csv", r.workload)), r.raw_csv())?;
        crate::chart::write_charts(r, &dir)?;
    }
    Ok(dir)
}
