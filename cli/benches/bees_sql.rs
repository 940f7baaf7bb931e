//! SQL-level bee benchmark on TPC-H data (figures for `bees/README.md`):
//!
//! 1. COPY of every table into two databases, `bee_form` on and off (the paper's
//!    Figure 8), table by table, alternating which goes first;
//! 2. the paper's case study `SELECT o_comment FROM orders`, and the same scan
//!    without building result rows (`SELECT count(o_comment) FROM orders`);
//! 3. TPC-H Q6 (a selective predicate on `lineitem`), and its scan alone
//!    (`SELECT count(*) FROM lineitem WHERE <Q6's predicate>`);
//!
//! each with bees on and off in alternation, reporting the median of the runs and
//! the ratio. Thread CPU time is not available portably, so wall time is used:
//! run on an idle machine, compare ratios measured in one run.
//!
//! ```text
//! cargo bench -p beedb-cli --bench bees_sql                 # SF 1, 5 runs
//! BEEDB_BENCH_SF=0.1 BEEDB_BENCH_RUNS=3 cargo bench -p beedb-cli --bench bees_sql
//! ```
//!
//! For instruction counts, run one query once under callgrind on a database this
//! benchmark left behind (`scripts/bee-callgrind` does this for both settings):
//! `bees_sql --once <db file> <off|on|compiled|instantiated> <query>`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use beedb::{Connection, Database};

#[path = "../tests/support/tpch_data.rs"]
mod tpch_data;

const Q6_WHERE: &str = "l_shipdate >= date '1994-01-01' and l_shipdate < date '1994-01-01' + interval '1' year \
     and l_discount between 0.06 - 0.01 and 0.06 + 0.01 and l_quantity < 24";

fn queries() -> Vec<(&'static str, String)> {
    vec![
        ("case study: SELECT o_comment FROM orders", "SELECT o_comment FROM orders".into()),
        ("  same scan, no result rows: count(o_comment)", "SELECT count(o_comment) FROM orders".into()),
        (
            "TPC-H Q6",
            format!("SELECT sum(l_extendedprice * l_discount) AS revenue FROM lineitem WHERE {Q6_WHERE}"),
        ),
        ("  Q6's scan alone: count(*) WHERE <Q6>", format!("SELECT count(*) FROM lineitem WHERE {Q6_WHERE}")),
    ]
}

fn shared_tpch() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    for c in [here.join("../../shared/tpch"), PathBuf::from("/work/shared/tpch")] {
        if c.join("schema.sql").is_file() {
            return c;
        }
    }
    panic!("../shared/tpch/schema.sql not found");
}

fn set_bees(conn: &mut Connection, on: bool) {
    conn.execute(if on { "SET bees = on" } else { "SET bees = off" }, &[])
        .unwrap();
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// Loads every table into `on` (form bees) and `off` (generic encoder); returns
/// per-table (rows, time on, time off).
fn load(data: &Path, schema: &str, on: &Database, off: &Database) -> Vec<(String, usize, Duration, Duration)> {
    let mut c_on = on.connect();
    let mut c_off = off.connect();
    c_on.execute_batch(schema).unwrap();
    c_off.execute_batch(schema).unwrap();
    c_on.execute("SET bee_form = on", &[]).unwrap();
    c_off.execute("SET bee_form = off", &[]).unwrap();
    let mut out = Vec::new();
    for (k, table) in tpch_data::TABLE_NAMES.iter().enumerate() {
        let sql = format!("COPY {table} FROM '{}' (DELIMITER '|')", data.join(format!("{table}.tbl")).display());
        let time = |c: &mut Connection| {
            let t = Instant::now();
            let r = c.execute(&sql, &[]).unwrap();
            (r.rows_affected as usize, t.elapsed())
        };
        // Alternate which database loads first (page cache, allocator warmth).
        let ((rows, t_on), (_, t_off)) = if k % 2 == 0 {
            let a = time(&mut c_on);
            (a, time(&mut c_off))
        } else {
            let b = time(&mut c_off);
            (time(&mut c_on), b)
        };
        eprintln!("  COPY {table}: {rows} rows, form bee {:.2}s, generic {:.2}s", secs(t_on), secs(t_off));
        out.push((table.to_string(), rows, t_on, t_off));
    }
    out
}

/// `mode`: `off`, `on` (the default policy; in a fresh process relation sizes are not
/// known yet, so bees start instantiated), `compiled` or `instantiated`.
fn run_once(path: &Path, mode: &str, sql: &str) {
    let db = Database::open(path).unwrap();
    let mut conn = db.connect();
    set_bees(&mut conn, mode != "off");
    if mode == "compiled" || mode == "instantiated" {
        conn.execute(&format!("SET bee_maker = {mode}"), &[]).unwrap();
    }
    println!("{} rows", measured_query(&mut conn, sql));
}

/// The part `scripts/bee-callgrind` counts (`--toggle-collect=*measured_query*`).
#[inline(never)]
fn measured_query(conn: &mut Connection, sql: &str) -> usize {
    conn.query(sql, &[]).unwrap().rows.len()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--once") {
        let path = PathBuf::from(&args[i + 1]);
        run_once(&path, &args[i + 2], &args[i + 3]);
        return;
    }
    // `cargo bench` passes --bench; `cargo test --all-targets` runs this binary
    // without it, and a multi-minute load does not belong in the test suite.
    if !args.iter().any(|a| a == "--bench") {
        println!("bees_sql: run with `cargo bench -p beedb-cli --bench bees_sql`");
        return;
    }
    let scale: f64 = std::env::var("BEEDB_BENCH_SF").ok().and_then(|s| s.parse().ok()).unwrap_or(1.0);
    let runs: usize = std::env::var("BEEDB_BENCH_RUNS").ok().and_then(|s| s.parse().ok()).unwrap_or(5);
    let name = format!("sf{scale}");
    let data = tpch_data::data_dir(&name);
    eprintln!("TPC-H SF {scale}: data in {}", data.display());
    let t = Instant::now();
    tpch_data::ensure_data(&data, scale);
    eprintln!("  data ready in {:.1}s", secs(t.elapsed()));
    let schema = std::fs::read_to_string(shared_tpch().join("schema.sql")).unwrap();

    let bench_dir = data.parent().unwrap().parent().unwrap().join("bench");
    std::fs::create_dir_all(&bench_dir).unwrap();
    let p_on = bench_dir.join(format!("bees-{name}-form-on.beedb"));
    let p_off = bench_dir.join(format!("bees-{name}-form-off.beedb"));
    for p in [&p_on, &p_off] {
        let _ = std::fs::remove_file(p);
        let _ = std::fs::remove_file(p.with_extension("beedb-wal"));
    }
    let loads = {
        let on = Database::open(&p_on).unwrap();
        let off = Database::open(&p_off).unwrap();
        load(&data, &schema, &on, &off)
    };

    println!("\n## COPY (bee_form on vs off), SF {scale}\n");
    println!("| table | rows | form bee (s) | generic (s) | on/off |");
    println!("|---|---:|---:|---:|---:|");
    let (mut sum_on, mut sum_off) = (Duration::ZERO, Duration::ZERO);
    for (t, rows, on, off) in &loads {
        sum_on += *on;
        sum_off += *off;
        println!("| {t} | {rows} | {:.2} | {:.2} | {:.3} |", secs(*on), secs(*off), secs(*on) / secs(*off));
    }
    println!("| all | | {:.2} | {:.2} | {:.3} |", secs(sum_on), secs(sum_off), secs(sum_on) / secs(sum_off));

    // Queries on the database the form bee loaded (same bytes as the other).
    let db = Database::open(&p_on).unwrap();
    let mut conn = db.connect();
    println!("\n## Queries, bees on vs off, median of {runs} runs each (alternating), SF {scale}\n");
    println!("| query | rows | bees on (s) | bees off (s) | on/off |");
    println!("|---|---:|---:|---:|---:|");
    for (label, sql) in queries() {
        // Warm-up in both modes (page cache, bee compile, relation size statistics).
        let mut rows = 0;
        for on in [true, false] {
            set_bees(&mut conn, on);
            rows = conn.query(&sql, &[]).unwrap().rows.len();
        }
        let (mut t_on, mut t_off) = (Vec::new(), Vec::new());
        for k in 0..runs {
            for on in if k % 2 == 0 { [true, false] } else { [false, true] } {
                set_bees(&mut conn, on);
                let t = Instant::now();
                let r = conn.query(&sql, &[]).unwrap();
                let d = t.elapsed();
                assert_eq!(r.rows.len(), rows);
                if on { t_on.push(d) } else { t_off.push(d) }
            }
        }
        let (on, off) = (median(t_on), median(t_off));
        println!("| {label} | {rows} | {:.3} | {:.3} | {:.3} |", secs(on), secs(off), secs(on) / secs(off));
    }
    set_bees(&mut conn, true);
    let bees = conn
        .query("SELECT kind, owner, maker, code_bytes, build_us, invocations, tuples FROM beedb_bees WHERE invocations > 0 ORDER BY id", &[])
        .unwrap();
    println!("\n## Bees used\n");
    println!("| kind | owner | maker | code bytes | build µs | calls | tuples |");
    println!("|---|---|---|---:|---:|---:|---:|");
    for r in &bees.rows {
        let v: Vec<String> = r.values().iter().map(|v| v.to_string()).collect();
        println!("| {} |", v.join(" | "));
    }
    println!("\nDatabase left for callgrind: {}", p_on.display());
}
