//! The Wisconsin benchmark's 32 queries (`shared/workloads/wisconsin.md`), as the
//! POSTGRES performance study ran them, in their three index configurations.
//!
//! Deviations from the 1990 text, all the same for every engine:
//! - Joins into a temporary table name their columns (`b.unique1 AS b_unique1`, …):
//!   today's engines refuse a table with two columns of one name.
//! - Every result table is checked (row count and sums) and dropped, untimed.
//! - Every engine runs with `synchronous = normal` (PostgreSQL: `synchronous_commit
//!   = off`): the queries are measured, not the disk's flush latency (TP1 measures
//!   commits in both modes).
//! - The mutating queries (26–32) run last in each configuration, on keys drawn from
//!   one seeded generator, so every engine changes the same tuples.

use std::io::Write;
use std::path::{Path, PathBuf};

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

use crate::bench::{Ctx, Open, measure_statement_runs};
use crate::engine::{Cell, Durability, Engine, EngineKind, LabError, LabResult, Outcome};
use crate::report::{Measurement, Report};

/// The columns of `tenk1`, `tenk2`, `onek` and `bprime`, in order.
pub const COLUMNS: [&str; 16] = [
    "unique1", "unique2", "two", "four", "ten", "twenty", "hundred", "thousand", "twothousand",
    "fivethous", "tenthous", "odd", "even", "stringu1", "stringu2", "string4",
];

/// Index configurations, in the order the workload visits them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Config {
    /// No index.
    NoIndex,
    /// B+tree on `unique2` (the heap is stored in `unique2` order).
    Clustered,
    /// B+tree on `unique1`.
    NonClustered,
    /// Both (the "with indexes" update queries 29–32).
    Both,
}

impl Config {
    pub fn name(self) -> &'static str {
        match self {
            Config::NoIndex => "no index",
            Config::Clustered => "clustered index (unique2)",
            Config::NonClustered => "non-clustered index (unique1)",
            Config::Both => "indexes on unique1 and unique2",
        }
    }
}

/// How a query's runs are checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Rows to the screen: the rows are the answer.
    Select,
    /// `CREATE TABLE tmp AS …`: the answer is `check` over `tmp`, which is dropped.
    IntoTemp { check: &'static str },
    /// INSERT, DELETE, UPDATE: the answer is the number of rows changed.
    Mutation,
}

/// One of the 32 queries.
pub struct Query {
    pub number: u32,
    pub name: &'static str,
    pub config: Config,
    kind: Kind,
    /// The statement of one run, given N and the query's key generator.
    make: fn(usize, &mut StdRng) -> String,
}

impl Query {
    pub fn item(&self) -> String {
        format!("q{}", self.number)
    }

    /// The query part of a statement, for EXPLAIN ANALYZE (the SELECT of a
    /// `CREATE TABLE tmp AS SELECT`).
    fn explainable(statement: &str) -> &str {
        statement.strip_prefix("CREATE TABLE tmp AS ").unwrap_or(statement)
    }

    /// Statements per run: the single-row statements (q7, q23, q26, q29–q32: 5–100 µs
    /// each) run [`SINGLE_ROW_PER_RUN`] times per run, each with its own key, and a run's
    /// figure is their mean; one such statement timed alone measured the clock and the
    /// scheduler more than the engine.
    pub fn per_run(&self) -> usize {
        match self.number {
            7 | 23 | 26 | 29..=32 => SINGLE_ROW_PER_RUN,
            _ => 1,
        }
    }

    /// The statements of a warm-up run and `runs` measured runs ([`Query::per_run`]
    /// statements each).
    pub fn statements(&self, n: usize, runs: usize, seed: u64) -> Vec<String> {
        let mut rng = StdRng::seed_from_u64(seed ^ (self.number as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        (0..(runs + 1) * self.per_run()).map(|_| (self.make)(n, &mut rng)).collect()
    }
}

const CHECK_SELECTION: &str = "SELECT count(*), sum(unique1), sum(unique2), min(stringu1), max(stringu2) FROM tmp";
const CHECK_JOIN: &str = "SELECT count(*), sum(unique1), sum(unique2), sum(b_unique1), sum(b_unique2) FROM tmp";
const CHECK_JOIN3: &str = "SELECT count(*), sum(unique1), sum(b_unique1), sum(c_unique1), sum(c_unique2) FROM tmp";
const CHECK_PROJECT_1: &str = "SELECT count(*), sum(two), sum(four), sum(ten), sum(twenty), sum(hundred), min(string4), max(string4) FROM tmp";
const CHECK_PROJECT_100: &str = "SELECT count(*), sum(thousand), sum(tenthous), sum(odd), min(stringu1), max(stringu2) FROM tmp";

/// `a.unique1, …, b.unique1 AS b_unique1, …` for the given (alias, prefix) pairs.
pub(crate) fn select_list(relations: &[(&str, &str)]) -> String {
    let mut out = Vec::new();
    for (alias, prefix) in relations {
        for c in COLUMNS {
            if prefix.is_empty() {
                out.push(format!("{alias}.{c}"));
            } else {
                out.push(format!("{alias}.{c} AS {prefix}{c}"));
            }
        }
    }
    out.join(", ")
}

fn range_start(n: usize, width: usize, rng: &mut StdRng) -> usize {
    rng.random_range(0..=n - width)
}

fn select_range(column: &str, n: usize, width: usize, rng: &mut StdRng) -> String {
    let lo = range_start(n, width.max(1), rng);
    format!(
        "CREATE TABLE tmp AS SELECT * FROM tenk1 WHERE {column} BETWEEN {lo} AND {}",
        lo + width.max(1) - 1
    )
}

fn join_a_sel_b(key: &str, n: usize) -> String {
    format!(
        "CREATE TABLE tmp AS SELECT {} FROM tenk1 a, tenk2 b WHERE a.{key} = b.{key} AND b.{key} < {}",
        select_list(&[("a", ""), ("b", "b_")]),
        n / 10
    )
}

fn join_a_bprime(key: &str) -> String {
    format!(
        "CREATE TABLE tmp AS SELECT {} FROM tenk1 a, bprime b WHERE a.{key} = b.{key}",
        select_list(&[("a", ""), ("b", "b_")])
    )
}

fn join_c_sel_a_sel_b(key: &str, n: usize) -> String {
    format!(
        "CREATE TABLE tmp AS SELECT {} FROM onek c, tenk1 a, tenk2 b \
         WHERE c.{key} = a.{key} AND a.{key} = b.{key} AND a.{key} < {m} AND b.{key} < {m}",
        select_list(&[("a", ""), ("b", "b_"), ("c", "c_")]),
        m = n / 10
    )
}

/// Statements in one run of a single-row query ([`Query::per_run`]).
pub const SINGLE_ROW_PER_RUN: usize = 100;

/// One new tuple, its keys drawn above N (so every run inserts another row; the draws
/// repeat with a chance of about 2 in 10,000 per 600 statements, which is harmless:
/// the indexes are not unique).
fn insert_one(n: usize, r: &mut StdRng) -> String {
    let key = n + 1 + r.random_range(0..1_000_000_000);
    let row = row_values(key, key);
    format!("INSERT INTO tenk1 VALUES ({row})")
}

const PROJECT_1: &str = "CREATE TABLE tmp AS SELECT DISTINCT two, four, ten, twenty, hundred, string4 FROM tenk1";
const PROJECT_100: &str = "CREATE TABLE tmp AS SELECT DISTINCT two, four, ten, twenty, hundred, thousand, \
     twothousand, fivethous, tenthous, odd, even, stringu1, stringu2, string4 FROM tenk1";

/// The 32 queries, numbered as in the study.
pub fn queries() -> Vec<Query> {
    use Config::*;
    use Kind::*;
    let selection = IntoTemp { check: CHECK_SELECTION };
    let join = IntoTemp { check: CHECK_JOIN };
    let join3 = IntoTemp { check: CHECK_JOIN3 };
    vec![
        Query { number: 1, name: "select 1% into temp", config: NoIndex, kind: selection, make: |n, r| select_range("unique2", n, n / 100, r) },
        Query { number: 2, name: "select 10% into temp", config: NoIndex, kind: selection, make: |n, r| select_range("unique2", n, n / 10, r) },
        Query { number: 3, name: "select 1% into temp", config: Clustered, kind: selection, make: |n, r| select_range("unique2", n, n / 100, r) },
        Query { number: 4, name: "select 10% into temp", config: Clustered, kind: selection, make: |n, r| select_range("unique2", n, n / 10, r) },
        Query { number: 5, name: "select 1% into temp", config: NonClustered, kind: selection, make: |n, r| select_range("unique1", n, n / 100, r) },
        Query { number: 6, name: "select 10% into temp", config: NonClustered, kind: selection, make: |n, r| select_range("unique1", n, n / 10, r) },
        Query { number: 7, name: "select 1 tuple to screen", config: Clustered, kind: Select, make: |n, r| format!("SELECT * FROM tenk1 WHERE unique2 = {}", r.random_range(0..n)) },
        Query { number: 8, name: "select 1% to screen", config: Clustered, kind: Select, make: |n, r| {
            let lo = range_start(n, (n / 100).max(1), r);
            format!("SELECT * FROM tenk1 WHERE unique2 BETWEEN {lo} AND {}", lo + (n / 100).max(1) - 1)
        } },
        Query { number: 9, name: "joinAselB", config: NoIndex, kind: join, make: |n, _| join_a_sel_b("unique2", n) },
        Query { number: 10, name: "joinABprime", config: NoIndex, kind: join, make: |_, _| join_a_bprime("unique2") },
        Query { number: 11, name: "joinCselAselB", config: NoIndex, kind: join3, make: |n, _| join_c_sel_a_sel_b("unique2", n) },
        Query { number: 12, name: "joinAselB", config: Clustered, kind: join, make: |n, _| join_a_sel_b("unique2", n) },
        Query { number: 13, name: "joinABprime", config: Clustered, kind: join, make: |_, _| join_a_bprime("unique2") },
        Query { number: 14, name: "joinCselAselB", config: Clustered, kind: join3, make: |n, _| join_c_sel_a_sel_b("unique2", n) },
        Query { number: 15, name: "joinAselB", config: NonClustered, kind: join, make: |n, _| join_a_sel_b("unique1", n) },
        Query { number: 16, name: "joinABprime", config: NonClustered, kind: join, make: |_, _| join_a_bprime("unique1") },
        Query { number: 17, name: "joinCselAselB", config: NonClustered, kind: join3, make: |n, _| join_c_sel_a_sel_b("unique1", n) },
        Query { number: 18, name: "project 1% into temp", config: NoIndex, kind: IntoTemp { check: CHECK_PROJECT_1 }, make: |_, _| PROJECT_1.to_string() },
        Query { number: 19, name: "project 100% into temp", config: NoIndex, kind: IntoTemp { check: CHECK_PROJECT_100 }, make: |_, _| PROJECT_100.to_string() },
        Query { number: 20, name: "min scalar aggregate", config: NoIndex, kind: Select, make: |_, _| "SELECT MIN(unique2) FROM tenk1".into() },
        Query { number: 21, name: "min aggregate, 100 groups", config: NoIndex, kind: Select, make: |_, _| "SELECT MIN(unique2) FROM tenk1 GROUP BY hundred".into() },
        Query { number: 22, name: "sum aggregate, 100 groups", config: NoIndex, kind: Select, make: |_, _| "SELECT SUM(unique2) FROM tenk1 GROUP BY hundred".into() },
        Query { number: 23, name: "min scalar aggregate", config: Clustered, kind: Select, make: |_, _| "SELECT MIN(unique2) FROM tenk1".into() },
        Query { number: 24, name: "min aggregate, 100 groups", config: Clustered, kind: Select, make: |_, _| "SELECT MIN(unique2) FROM tenk1 GROUP BY hundred".into() },
        Query { number: 25, name: "sum aggregate, 100 groups", config: Clustered, kind: Select, make: |_, _| "SELECT SUM(unique2) FROM tenk1 GROUP BY hundred".into() },
        Query { number: 26, name: "insert 1 tuple", config: NoIndex, kind: Mutation, make: insert_one },
        Query { number: 27, name: "delete 1 tuple", config: NoIndex, kind: Mutation, make: |n, r| format!("DELETE FROM tenk1 WHERE unique1 = {}", r.random_range(0..n)) },
        Query { number: 28, name: "update key attribute", config: NoIndex, kind: Mutation, make: |n, r| format!("UPDATE tenk1 SET unique2 = {} WHERE unique2 = {}", n + 2, r.random_range(0..n)) },
        Query { number: 29, name: "insert 1 tuple", config: Both, kind: Mutation, make: insert_one },
        Query { number: 30, name: "delete 1 tuple", config: Both, kind: Mutation, make: |n, r| format!("DELETE FROM tenk1 WHERE unique1 = {}", r.random_range(0..n)) },
        Query { number: 31, name: "update key attribute", config: Both, kind: Mutation, make: |n, r| format!("UPDATE tenk1 SET unique2 = {} WHERE unique2 = {}", n + 2, r.random_range(0..n)) },
        Query { number: 32, name: "update non-key attribute", config: Both, kind: Mutation, make: |n, r| format!("UPDATE tenk1 SET odd = odd + 2 WHERE unique2 = {}", r.random_range(0..n)) },
    ]
}

/// `unique` written in base 26 with letters A–Z as 7 characters, then 45 'x'.
pub fn wisconsin_string(unique: usize) -> String {
    let mut letters = [b'A'; 7];
    let mut x = unique;
    for slot in letters.iter_mut().rev() {
        *slot = b'A' + (x % 26) as u8;
        x /= 26;
    }
    let mut s = String::from_utf8(letters.to_vec()).expect("ASCII");
    s.push_str(&"x".repeat(45));
    s
}

/// One row's column values for generated keys `unique1` and `unique2`, as SQL
/// literals separated by commas.
fn row_values(unique1: usize, unique2: usize) -> String {
    let f = fields(unique1, unique2);
    f.iter()
        .enumerate()
        .map(|(i, v)| if i >= 13 { format!("'{v}'") } else { v.clone() })
        .collect::<Vec<_>>()
        .join(", ")
}

fn fields(u1: usize, u2: usize) -> [String; 16] {
    let string4 = ["AAAA", "HHHH", "OOOO", "VVVV"][u1 % 4].to_string() + &"x".repeat(48);
    [
        u1.to_string(),
        u2.to_string(),
        (u1 % 2).to_string(),
        (u1 % 4).to_string(),
        (u1 % 10).to_string(),
        (u1 % 20).to_string(),
        (u1 % 100).to_string(),
        (u1 % 1000).to_string(),
        (u1 % 2000).to_string(),
        (u1 % 5000).to_string(),
        (u1 % 10000).to_string(),
        ((u1 % 100) * 2 + 1).to_string(),
        ((u1 % 100) * 2).to_string(),
        wisconsin_string(u1),
        wisconsin_string(u2),
        string4,
    ]
}

/// Writes a relation of `rows` tuples in `unique2` order with `unique1` a seeded
/// random permutation, `|`-delimited.
pub fn write_relation(path: &Path, rows: usize, seed: u64) -> std::io::Result<()> {
    let mut unique1: Vec<usize> = (0..rows).collect();
    unique1.shuffle(&mut StdRng::seed_from_u64(seed));
    let temporary = path.with_extension("tmp");
    let mut out = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(&temporary)?);
    for (u2, u1) in unique1.into_iter().enumerate() {
        writeln!(out, "{}", fields(u1, u2).join("|"))?;
    }
    out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    std::fs::rename(temporary, path)
}

pub fn create_table_sql(name: &str) -> String {
    let cols: Vec<String> = COLUMNS
        .iter()
        .enumerate()
        .map(|(i, c)| format!("{c} {}", if i >= 13 { "char(52)" } else { "integer" }))
        .collect();
    format!("CREATE TABLE {name} ({})", cols.join(", "))
}

/// The generated relations for `n` (made once, then reused).
pub(crate) fn ensure_data(ctx: &Ctx, n: usize) -> LabResult<PathBuf> {
    let dir = ctx.data.join(format!("wisconsin-n{n}"));
    std::fs::create_dir_all(&dir).map_err(|e| LabError::new(format!("{}: {e}", dir.display())))?;
    let relations = [("tenk1", n, 1u64), ("tenk2", n, 2), ("onek", (n / 10).max(1), 3)];
    let missing: Vec<_> = relations.iter().filter(|(name, ..)| !dir.join(format!("{name}.tbl")).is_file()).collect();
    if !missing.is_empty() {
        let bar = ctx.progress.phase(format!("generating Wisconsin data, N = {n}"), missing.len() as u64);
        for (name, rows, seed) in missing {
            write_relation(&dir.join(format!("{name}.tbl")), *rows, *seed)
                .map_err(|e| LabError::new(format!("writing {name}: {e}")))?;
            bar.inc(1);
        }
        bar.finish_and_clear();
    }
    Ok(dir)
}

pub(crate) fn load(engine: &mut dyn Engine, data: &Path, n: usize) -> LabResult<()> {
    for name in ["tenk1", "tenk2", "onek"] {
        engine.run(&create_table_sql(name), &[])?;
        engine.bulk_load(name, &data.join(format!("{name}.tbl")))?;
    }
    engine.run(&format!("CREATE TABLE bprime AS SELECT * FROM tenk2 WHERE unique2 < {}", n / 10), &[])?;
    Ok(())
}

const RELATIONS: [&str; 4] = ["tenk1", "tenk2", "onek", "bprime"];

/// Changes an engine's indexes from `from` to `to`.
pub(crate) fn set_config(engine: &mut dyn Engine, kind: EngineKind, from: Option<Config>, to: Config) -> LabResult<()> {
    let has = |c: Option<Config>, column: &str| {
        matches!(
            (c, column),
            (Some(Config::Clustered | Config::Both), "unique2") | (Some(Config::NonClustered | Config::Both), "unique1")
        )
    };
    for column in ["unique1", "unique2"] {
        let (before, after) = (has(from, column), has(Some(to), column));
        for r in RELATIONS {
            if before && !after {
                engine.run(&format!("DROP INDEX {r}_{column}"), &[])?;
            } else if after && !before {
                engine.run(&format!("CREATE INDEX {r}_{column} ON {r} ({column})"), &[])?;
            }
        }
    }
    // Every engine plans with statistics: SQLite and PostgreSQL once ANALYZE ran;
    // BeeDB gathers them itself after COPY and CREATE INDEX, DuckDB keeps its own.
    if matches!(kind, EngineKind::Sqlite | EngineKind::Postgres) {
        engine.run("ANALYZE", &[])?;
    }
    Ok(())
}

/// The answer of one run, per the query's kind.
fn answer(kind: Kind, engine: &mut dyn Engine, outcome: Outcome) -> LabResult<Vec<Vec<Cell>>> {
    match kind {
        Kind::Select => Ok(outcome.rows),
        Kind::Mutation => Ok(vec![vec![Cell::Int(outcome.affected as i64)]]),
        Kind::IntoTemp { check } => {
            let rows = engine.run(check, &[])?.rows;
            engine.run("DROP TABLE tmp", &[])?;
            Ok(rows)
        }
    }
}

const TABLE_CHECK: &str = "SELECT count(*), sum(unique1), sum(unique2), sum(odd), min(stringu2) FROM tenk1";

/// Runs the workload at size `n` and returns its report.
pub fn run(ctx: &mut Ctx, n: usize, seed: u64) -> Report {
    let mut results: Vec<Measurement> = Vec::new();
    let mut profiles = Vec::new();
    let n = n.max(100);
    let data = match ensure_data(ctx, n) {
        Ok(d) => Some(d),
        Err(e) => {
            ctx.fail(format!("generating data: {e}"));
            None
        }
    };
    let mut engines = ctx.open_all(&format!("wisconsin-n{n}"));
    if let Some(data) = &data {
        let bar = ctx.progress.phase(format!("loading Wisconsin N = {n}"), engines.len() as u64);
        let mut loaded = Vec::new();
        for mut open in engines.drain(..) {
            bar.set_message(format!("loading Wisconsin N = {n} into {}", open.kind));
            // The queries are measured, not the commit's flush: every engine runs
            // with commits that survive a process crash but are not synced at once.
            let loaded_ok = open.engine.set_durability(Durability::Normal).and_then(|_| load(open.engine.as_mut(), data, n));
            match loaded_ok {
                Ok(()) => loaded.push(open),
                Err(e) => ctx.fail(format!("{}: loading: {e}", open.kind)),
            }
            bar.inc(1);
        }
        bar.finish_and_clear();
        engines = loaded;
    } else {
        engines.clear();
    }

    let queries = queries();
    let mut config: Option<Config> = None;
    let order = [Config::NoIndex, Config::Clustered, Config::NonClustered, Config::Both];
    let total = queries.len() as u64;
    let bar = ctx.progress.phase(format!("Wisconsin N = {n}"), total);
    for target in order {
        let mut kept = Vec::new();
        for mut open in engines.drain(..) {
            match set_config(open.engine.as_mut(), open.kind, config, target) {
                Ok(()) => kept.push(open),
                Err(e) => ctx.fail(format!("{}: indexes for {}: {e}", open.kind, target.name())),
            }
        }
        engines = kept;
        config = Some(target);
        for q in queries.iter().filter(|q| q.config == target) {
            bar.set_message(format!("q{} {}", q.number, q.name));
            let statements = q.statements(n, ctx.runs, seed);
            let kind = q.kind;
            let mut check = |e: &mut dyn Engine, o: Outcome| answer(kind, e, o);
            results.extend(measure_statement_runs(ctx, &mut engines, &q.item(), &statements, q.per_run(), &mut check));
            if ctx.profile {
                profile(ctx, &mut engines, q, &statements[0], &mut profiles);
            }
            bar.inc(1);
        }
        compare_tables(ctx, &mut engines, target);
    }
    bar.finish_and_clear();
    // Report in query order (they ran in configuration order).
    let number = |m: &Measurement| m.item.trim_start_matches('q').parse::<u32>().unwrap_or(0);
    results.sort_by_key(number);

    let items = queries.iter().map(|q| (q.item(), format!("{} ({})", q.name, q.config.name()))).collect();
    let mut report = ctx.report("wisconsin", vec![
            ("n".into(), n.to_string()),
            ("runs".into(), ctx.runs.to_string()),
            ("sync".into(), "normal".into()),
        ], items, results);
    report.profiles = profiles;
    report
}

/// After each configuration's updates, every engine's `tenk1` must be the same.
fn compare_tables(ctx: &mut Ctx, engines: &mut [Open], config: Config) {
    let mut reference: Option<(EngineKind, Vec<Vec<Cell>>)> = None;
    for open in engines.iter_mut() {
        match open.engine.run(TABLE_CHECK, &[]) {
            Ok(o) => match &reference {
                None => reference = Some((open.kind, o.rows)),
                Some((k, rows)) => {
                    if let Some(d) = crate::verify::difference(rows, &o.rows) {
                        ctx.fail(format!("tenk1 after {} differs on {} from {k}: {d}", config.name(), open.kind));
                    }
                }
            },
            Err(e) => ctx.fail(format!("{}: checking tenk1: {e}", open.kind)),
        }
    }
}

/// EXPLAIN ANALYZE of the query on each BeeDB engine, inside a transaction that is
/// rolled back (so a profiled update changes nothing).
fn profile(ctx: &mut Ctx, engines: &mut [Open], q: &Query, statement: &str, out: &mut Vec<(String, String, String)>) {
    for open in engines.iter_mut().filter(|o| o.kind.is_beedb()) {
        let e = open.engine.as_mut();
        let text = e.run("BEGIN", &[]).and_then(|_| {
            let t = e.explain_analyze(Query::explainable(statement));
            e.run("ROLLBACK", &[])?;
            t
        });
        match text {
            Ok(Some(t)) => out.push((q.item(), open.kind.name().to_string(), t)),
            Ok(None) => {}
            Err(err) => ctx.note(format!("q{} on {}: EXPLAIN ANALYZE failed: {err}", q.number, open.kind)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_base_26_then_padding() {
        assert_eq!(&wisconsin_string(0)[..7], "AAAAAAA");
        assert_eq!(&wisconsin_string(27)[..7], "AAAAABB");
        assert_eq!(wisconsin_string(26usize.pow(7) - 1)[..7].to_string(), "ZZZZZZZ");
        assert_eq!(wisconsin_string(5).len(), 52);
    }

    #[test]
    fn there_are_32_queries_numbered_in_order() {
        let q = queries();
        assert_eq!(q.len(), 32);
        assert!(q.iter().enumerate().all(|(i, q)| q.number as usize == i + 1));
    }

    #[test]
    fn generated_relation_follows_the_definition() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.tbl");
        write_relation(&path, 1000, 7).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let mut seen = vec![false; 1000];
        for (u2, line) in text.lines().enumerate() {
            let f: Vec<&str> = line.split('|').collect();
            assert_eq!(f.len(), 16);
            let u1: usize = f[0].parse().unwrap();
            assert!(!seen[u1]);
            seen[u1] = true;
            assert_eq!(f[1], u2.to_string());
            assert_eq!(f[6], (u1 % 100).to_string());
            assert_eq!(f[11], ((u1 % 100) * 2 + 1).to_string());
            assert_eq!(f[13], wisconsin_string(u1));
            assert_eq!(f[15].len(), 52);
        }
        assert!(seen.iter().all(|s| *s), "unique1 is a permutation");
    }

    #[test]
    fn every_engine_gets_the_same_keys() {
        let q = &queries()[6];
        assert_eq!(q.statements(10_000, 5, 42), q.statements(10_000, 5, 42));
        assert_ne!(q.statements(10_000, 5, 42), q.statements(10_000, 5, 43));
    }
}
