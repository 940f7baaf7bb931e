//! TP1 (debit-credit, `shared/workloads/tp1.md`): transactions per second with 1 and
//! K clients, each `synchronous` mode, in two configurations, and the balance
//! invariant checked at the end.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::bench::{Ctx, Open};
use crate::engine::{Cell, Durability, Engine, EngineKind, LabError, LabResult, Param};
use crate::report::{Measurement, Report};
use crate::verify;

/// A TP1 database shape.
#[derive(Debug, Clone)]
pub struct Shape {
    /// `tpcb` (TPC-B sizes at a scale) or `study` (the 1990 study's sizes).
    pub name: String,
    pub branches: usize,
    pub tellers: usize,
    pub accounts: usize,
    /// Filler length so that tuples have the intended size.
    pub filler: usize,
}

impl Shape {
    /// TPC-B's proportions: per unit of scale 1 branch, 10 tellers, 100,000 accounts.
    pub fn tpcb(scale: f64) -> Shape {
        let s = |per: f64| ((per * scale).round() as usize).max(1);
        Shape { name: format!("tpcb{}", if scale == 1.0 { String::new() } else { format!("-s{scale}") }), branches: s(1.0), tellers: s(10.0), accounts: s(100_000.0), filler: 84 }
    }

    /// The study's: 1,000 branches, 10,000 tellers, 10,000 accounts, 100-byte tuples.
    pub fn study() -> Shape {
        Shape { name: "study".into(), branches: 1000, tellers: 10_000, accounts: 10_000, filler: 76 }
    }
}

pub struct Options {
    pub shapes: Vec<Shape>,
    pub clients: Vec<usize>,
    pub durabilities: Vec<Durability>,
    /// Measured seconds per run (a warm-up of a fifth of it, at most 2 s, comes first).
    pub seconds: f64,
    pub seed: u64,
}

const SCHEMA: [&str; 4] = [
    "CREATE TABLE branch (bid integer PRIMARY KEY, balance double precision, filler text)",
    "CREATE TABLE teller (tid integer PRIMARY KEY, bid integer, balance double precision, filler text)",
    "CREATE TABLE account (aid integer PRIMARY KEY, bid integer, balance double precision, filler text)",
    "CREATE TABLE history (tid integer, bid integer, aid integer, delta double precision, mtime timestamp, filler text)",
];

const SELECT_ACCOUNT: &str = "SELECT balance FROM account WHERE aid = $1";
const UPDATE_ACCOUNT: &str = "UPDATE account SET balance = balance + $1 WHERE aid = $2";
const UPDATE_TELLER: &str = "UPDATE teller SET balance = balance + $1 WHERE tid = $2";
const UPDATE_BRANCH: &str = "UPDATE branch SET balance = balance + $1 WHERE bid = $2";
const INSERT_HISTORY: &str =
    "INSERT INTO history VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP, 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx')";

/// The invariant: every sum of balances equals the sum of the history's deltas.
const SUMS: &str = "SELECT (SELECT sum(balance) FROM account), (SELECT sum(balance) FROM teller), \
     (SELECT sum(balance) FROM branch), (SELECT sum(delta) FROM history), (SELECT count(*) FROM history)";

fn write_table(path: &Path, rows: usize, line: impl Fn(usize) -> String) -> std::io::Result<()> {
    let temporary = path.with_extension("tmp");
    let mut out = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(&temporary)?);
    for i in 1..=rows {
        writeln!(out, "{}", line(i))?;
    }
    out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    std::fs::rename(temporary, path)
}

fn ensure_data(ctx: &Ctx, shape: &Shape) -> LabResult<PathBuf> {
    let dir = ctx.data.join(format!("tp1-{}-{}-{}-{}", shape.name, shape.branches, shape.tellers, shape.accounts));
    let err = |e: std::io::Error| LabError::new(format!("{}: {e}", dir.display()));
    std::fs::create_dir_all(&dir).map_err(err)?;
    let filler = "x".repeat(shape.filler);
    let per_branch_t = shape.tellers.div_ceil(shape.branches);
    let per_branch_a = shape.accounts.div_ceil(shape.branches);
    if !dir.join("account.tbl").is_file() {
        write_table(&dir.join("branch.tbl"), shape.branches, |b| format!("{b}|0|{filler}")).map_err(err)?;
        write_table(&dir.join("teller.tbl"), shape.tellers, |t| format!("{t}|{}|0|{filler}", (t - 1) / per_branch_t + 1))
            .map_err(err)?;
        write_table(&dir.join("account.tbl"), shape.accounts, |a| format!("{a}|{}|0|{filler}", (a - 1) / per_branch_a + 1))
            .map_err(err)?;
    }
    Ok(dir)
}

fn load(engine: &mut dyn Engine, data: &Path) -> LabResult<()> {
    for ddl in SCHEMA {
        engine.run(ddl, &[])?;
    }
    for t in ["branch", "teller", "account"] {
        engine.bulk_load(t, &data.join(format!("{t}.tbl")))?;
    }
    if matches!(engine.kind(), EngineKind::Sqlite | EngineKind::Postgres) {
        engine.run("ANALYZE", &[])?;
    }
    Ok(())
}

/// One debit-credit transaction; retried by the caller when the engine says so.
fn transaction(e: &mut dyn Engine, rng: &mut StdRng, shape: &Shape) -> LabResult<()> {
    let aid = rng.random_range(1..=shape.accounts) as i64;
    let tid = rng.random_range(1..=shape.tellers) as i64;
    let bid = rng.random_range(1..=shape.branches) as i64;
    let delta = rng.random_range(-5000..=5000) as f64;
    e.begin_write()?;
    let body = (|| {
        e.run(SELECT_ACCOUNT, &[Param::Int(aid)])?;
        e.run(UPDATE_ACCOUNT, &[Param::Float(delta), Param::Int(aid)])?;
        e.run(UPDATE_TELLER, &[Param::Float(delta), Param::Int(tid)])?;
        e.run(UPDATE_BRANCH, &[Param::Float(delta), Param::Int(bid)])?;
        e.run(INSERT_HISTORY, &[Param::Int(tid), Param::Int(bid), Param::Int(aid), Param::Float(delta)])?;
        e.run("COMMIT", &[])
    })();
    if let Err(err) = body {
        let _ = e.run("ROLLBACK", &[]);
        return Err(err);
    }
    Ok(())
}

/// Result of one timed run.
struct RunResult {
    tps: f64,
    retries: u64,
}

/// Runs `clients` connections for a warm-up and `seconds`, counting commits that
/// finish inside the measured window.
fn timed_run(clients: &mut [&mut dyn Engine], shape: &Shape, seconds: f64, seed: u64) -> LabResult<RunResult> {
    let warm = Duration::from_secs_f64((seconds / 5.0).min(2.0));
    let measured = Duration::from_secs_f64(seconds);
    let committed = AtomicU64::new(0);
    let retries = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let start = Instant::now();
    let (begin, end) = (start + warm, start + warm + measured);
    let errors: Vec<LabError> = std::thread::scope(|s| {
        let handles: Vec<_> = clients
            .iter_mut()
            .enumerate()
            .map(|(i, client)| {
                let (committed, retries, stop) = (&committed, &retries, &stop);
                s.spawn(move || -> LabResult<()> {
                    let mut rng = StdRng::seed_from_u64(seed.wrapping_add(i as u64 * 7919));
                    while !stop.load(Ordering::Relaxed) {
                        let now = Instant::now();
                        if now >= end {
                            break;
                        }
                        match transaction(&mut **client, &mut rng, shape) {
                            Ok(()) => {
                                let done = Instant::now();
                                if done >= begin && done <= end {
                                    committed.fetch_add(1, Ordering::Relaxed);
                                }
                            }
                            Err(e) if e.retryable => {
                                retries.fetch_add(1, Ordering::Relaxed);
                            }
                            Err(e) => {
                                stop.store(true, Ordering::Relaxed);
                                return Err(e);
                            }
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        handles.into_iter().filter_map(|h| h.join().unwrap_or_else(|_| Err(LabError::new("client thread panicked"))).err()).collect()
    });
    if let Some(e) = errors.into_iter().next() {
        return Err(e);
    }
    Ok(RunResult { tps: committed.load(Ordering::Relaxed) as f64 / measured.as_secs_f64(), retries: retries.load(Ordering::Relaxed) })
}

fn check_invariant(engine: &mut dyn Engine) -> LabResult<Result<(), String>> {
    let rows = engine.run(SUMS, &[])?.rows;
    let row = rows.first().cloned().unwrap_or_default();
    let value = |c: Option<&Cell>| match c {
        Some(Cell::Null) | None => Cell::Float(0.0),
        Some(c) => c.clone(),
    };
    let sums: Vec<Cell> = (0..4).map(|i| value(row.get(i))).collect();
    if sums.iter().all(|s| verify::same_cell(s, &sums[0])) {
        Ok(Ok(()))
    } else {
        Ok(Err(format!(
            "balance invariant broken: account {}, teller {}, branch {}, history {} ({} transactions)",
            sums[0], sums[1], sums[2], sums[3], value(row.get(4))
        )))
    }
}

/// What `k` clients of one engine did in `runs` timed runs.
enum Clients {
    Measured { runs: Vec<f64>, retries: u64 },
    /// The engine cannot serve `k` clients of one database.
    Unavailable(LabError),
}

/// Runs `k` clients (the workload's own connection and `k - 1` more) with the
/// given durability for `runs` timed runs; `tick` after each run.
fn measure(
    engine: &mut dyn Engine,
    shape: &Shape,
    options: &Options,
    durability: Durability,
    k: usize,
    runs: usize,
    tick: &dyn Fn(),
) -> LabResult<Clients> {
    let mut others = Vec::with_capacity(k.saturating_sub(1));
    for _ in 1..k {
        match engine.connect_another() {
            Ok(c) => others.push(c),
            Err(e) => return Ok(Clients::Unavailable(e)),
        }
    }
    let mut all: Vec<&mut dyn Engine> = Vec::with_capacity(k);
    all.push(engine);
    all.extend(others.iter_mut().map(|c| c.as_mut() as &mut dyn Engine));
    for c in all.iter_mut() {
        c.set_durability(durability)?;
    }
    let (mut tps, mut retries) = (Vec::with_capacity(runs), 0);
    for r in 0..runs {
        let res = timed_run(&mut all, shape, options.seconds, options.seed.wrapping_add(r as u64 * 1_000_003))?;
        tps.push(res.tps);
        retries += res.retries;
        tick();
    }
    Ok(Clients::Measured { runs: tps, retries })
}

pub fn run(ctx: &mut Ctx, options: &Options) -> Report {
    let mut results = Vec::new();
    let mut items = Vec::new();
    for shape in &options.shapes {
        let data = match ensure_data(ctx, shape) {
            Ok(d) => d,
            Err(e) => {
                ctx.fail(format!("TP1 {}: generating data: {e}", shape.name));
                continue;
            }
        };
        let engines = ctx.open_all(&format!("tp1-{}", shape.name));
        for Open { kind, mut engine } in engines {
            let bar = ctx.progress.phase(format!("TP1 {} on {kind}: loading", shape.name), 0);
            if let Err(e) = load(engine.as_mut(), &data) {
                bar.finish_and_clear();
                ctx.fail(format!("TP1 {} on {kind}: loading: {e}", shape.name));
                continue;
            }
            bar.finish_and_clear();
            let mut measured = Vec::new();
            for &durability in &options.durabilities {
                for &k in &options.clients {
                    let item = format!("{} sync={} clients={k}", shape.name, durability.name());
                    if !items.iter().any(|(i, _): &(String, String)| *i == item) {
                        items.push((item.clone(), format!("{} branches, {} tellers, {} accounts", shape.branches, shape.tellers, shape.accounts)));
                    }
                    let bar = ctx.progress.phase(format!("TP1 {item} on {kind}"), ctx.runs as u64);
                    let outcome = measure(engine.as_mut(), shape, options, durability, k, ctx.runs, &|| bar.inc(1));
                    bar.finish_and_clear();
                    let (runs, retries) = match outcome {
                        Ok(Clients::Measured { runs, retries }) => (runs, retries),
                        Ok(Clients::Unavailable(e)) => {
                            ctx.note(format!("TP1 {item} on {kind}: not run ({e})"));
                            continue;
                        }
                        Err(e) => {
                            ctx.fail(format!("TP1 {item} on {kind}: {e}"));
                            continue;
                        }
                    };
                    if retries > 0 {
                        ctx.note(format!("TP1 {item} on {kind}: {retries} transactions retried (serialization failures or busy)"));
                    }
                    measured.push(Measurement {
                        timed_out: false,
                        item,
                        engine: kind.name().to_string(),
                        value: verify::median(&runs),
                        unit: "tps".into(),
                        verified: true,
                        runs,
                    });
                }
            }
            match check_invariant(engine.as_mut()) {
                Ok(Ok(())) => {}
                Ok(Err(broken)) => {
                    ctx.fail(format!("TP1 {} on {kind}: {broken}", shape.name));
                    measured.iter_mut().for_each(|m| m.verified = false);
                }
                Err(e) => {
                    ctx.fail(format!("TP1 {} on {kind}: checking the invariant: {e}", shape.name));
                    measured.iter_mut().for_each(|m| m.verified = false);
                }
            }
            results.extend(measured);
        }
    }
    let parameters = vec![
        ("configurations".to_string(), options.shapes.iter().map(|s| s.name.clone()).collect::<Vec<_>>().join(",")),
        ("clients".to_string(), options.clients.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(",")),
        ("seconds".to_string(), options.seconds.to_string()),
        ("runs".to_string(), ctx.runs.to_string()),
    ];
    ctx.report("tp1", parameters, items, results)
}
