//! TPC-H at scale factors 0.01 and 0.1: all 22 queries of `/work/shared/tpch` (found
//! relative to the repository or through `BEEDB_TPCH_DIR`) against the expected
//! answers. SF 0.1 costs about 11 s of CPU in a test build (generating and loading
//! 600,572 lineitem rows is most of it; measured 34 s wall on the shared 2-core
//! machine under load); `BEEDB_TPCH_SF01=0` leaves it out.
//!
//! Data comes from the `tpchgen` crate (the library behind `tpchgen-cli`, which made
//! the answers), written once to `<target>/tpch-data/sf<scale>/<table>.tbl` and loaded
//! with `COPY <table> FROM '<abs path>' (DELIMITER '|')`.
//!
//! Answers (`answers/sf0.01/qNN.csv`, `|`-separated, a header row, CRLF) are compared
//! as the README says: numbers within 0.01 absolute or 1e-6 relative, strings exactly
//! after trimming trailing blanks, rows in order when the query has an ORDER BY.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use beedb::{Database, QueryResult, Value};

#[path = "support/tpch_data.rs"]
mod tpch_data;

/// Flip to `true` once the engine runs the schema, COPY and the queries: then every
/// query in [`QUERIES`] must return its answer, with no correlated subplan left.
/// While `false` the test runs what it can and reports, asserting nothing.
const ENGINE_READY: bool = true;

/// Set `BEEDB_TPCH_SF01=0` to leave out the SF 0.1 run.
const SF01_ENV: &str = "BEEDB_TPCH_SF01";

/// A scale factor with answers: its value and the answers' folder name.
#[derive(Debug, Clone, Copy)]
struct Scale {
    sf: f64,
    name: &'static str,
}

const SF001: Scale = Scale { sf: 0.01, name: "sf0.01" };
const SF01: Scale = Scale { sf: 0.1, name: "sf0.1" };

/// The 22 queries. The correlated subqueries of Q2, Q4, Q17, Q20, Q21 and Q22 must run
/// as joins (`optimizer::decorrelate`): no query's plan may keep a subplan that is
/// re-executed per outer row (checked on EXPLAIN, not by timing). Q11, Q15, Q16 and
/// Q18 have uncorrelated subqueries, which run once.
const QUERIES: [u32; 22] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22];

/// Rows per table at SF 0.01 (nation and region are fixed).
const TABLES: [(&str, usize); 8] = [
    ("nation", 25),
    ("region", 5),
    ("part", 2_000),
    ("supplier", 100),
    ("partsupp", 8_000),
    ("customer", 1_500),
    ("orders", 15_000),
    ("lineitem", 60_175),
];

fn shared_tpch_dir() -> Option<PathBuf> {
    let dir = match std::env::var_os("BEEDB_TPCH_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/tpch"),
    };
    if dir.join("schema.sql").is_file() {
        Some(dir)
    } else {
        println!(
            "note: TPC-H material not found at {} (set BEEDB_TPCH_DIR); skipped",
            dir.display()
        );
        None
    }
}

fn ensure_data(scale: Scale) -> PathBuf {
    tpch_data::ensure_data(&tpch_data::data_dir(scale.name), scale.sf)
}

fn query_text(tpch: &Path, number: u32, scale: Scale) -> String {
    let path = tpch.join(format!("queries/q{number:02}.sql"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    if number == 11 {
        // Q11's fraction is 0.0001 / SF.
        let spec = "0.0001000000";
        assert!(text.contains(spec), "q11.sql no longer holds {spec}");
        text.replace(spec, &format!("{:.10}", 0.0001 / scale.sf))
    } else {
        text
    }
}

// ---- answers and comparison ----------------------------------------------------

#[derive(Debug, Clone)]
struct Answer {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

fn parse_answer(text: &str) -> Answer {
    let mut lines = text.lines().map(|l| l.trim_end_matches('\r'));
    let split = |line: &str| line.split('|').map(unquote).collect::<Vec<_>>();
    let header = lines.next().map(split).unwrap_or_default();
    let rows = lines.filter(|l| !l.is_empty()).map(split).collect();
    Answer { header, rows }
}

/// A CSV-quoted cell (`"…"`, `""` for a quote) as its text; Q17's NULL at SF 0.01 is
/// written `""`, the empty string, which is how [`result_cells`] prints NULL.
fn unquote(cell: &str) -> String {
    match cell.strip_prefix('"').and_then(|c| c.strip_suffix('"')) {
        Some(inner) => inner.replace("\"\"", "\""),
        None => cell.to_string(),
    }
}

fn load_answer(tpch: &Path, number: u32, scale: Scale) -> Answer {
    let path = tpch.join(format!("answers/{}/q{number:02}.csv", scale.name));
    parse_answer(
        &std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
    )
}

/// A result as text: PostgreSQL's output of each value, trailing blanks trimmed.
fn result_cells(result: &QueryResult) -> Vec<Vec<String>> {
    result
        .rows
        .iter()
        .map(|row| {
            row.values()
                .iter()
                .map(|v| match v {
                    Value::Null => String::new(),
                    v => v.to_string().trim_end().to_string(),
                })
                .collect()
        })
        .collect()
}

fn cell_matches(expected: &str, actual: &str) -> bool {
    let (expected, actual) = (expected.trim_end(), actual.trim_end());
    if expected == actual {
        return true;
    }
    match (expected.parse::<f64>(), actual.parse::<f64>()) {
        (Ok(e), Ok(a)) => {
            let difference = (e - a).abs();
            difference <= 0.01 || difference <= 1e-6 * e.abs().max(a.abs())
        }
        _ => false,
    }
}

fn row_matches(expected: &[String], actual: &[String]) -> bool {
    expected.len() == actual.len() && expected.iter().zip(actual).all(|(e, a)| cell_matches(e, a))
}

/// `Ok` when `actual` is the answer: same row count, each row matching (in order
/// when `ordered`, else as a multiset).
fn compare(answer: &Answer, actual: &[Vec<String>], ordered: bool) -> Result<(), String> {
    if actual.len() != answer.rows.len() {
        return Err(format!(
            "expected {} rows, got {}\nfirst actual rows: {:?}",
            answer.rows.len(),
            actual.len(),
            &actual[..actual.len().min(3)]
        ));
    }
    if let Some(row) = actual.iter().find(|r| r.len() != answer.header.len()) {
        return Err(format!(
            "expected {} columns, got {row:?}",
            answer.header.len()
        ));
    }
    if ordered {
        for (i, (e, a)) in answer.rows.iter().zip(actual).enumerate() {
            if !row_matches(e, a) {
                return Err(format!("row {}: expected {e:?}\n        got {a:?}", i + 1));
            }
        }
    } else {
        let mut unused: Vec<&Vec<String>> = actual.iter().collect();
        for e in &answer.rows {
            match unused.iter().position(|a| row_matches(e, a)) {
                Some(i) => {
                    unused.swap_remove(i);
                }
                None => return Err(format!("expected row {e:?} not in the result")),
            }
        }
    }
    Ok(())
}

fn has_order_by(sql: &str) -> bool {
    sql.to_ascii_lowercase().contains("order by")
}

// ---- tests ---------------------------------------------------------------------

/// The generated data is what the answers were computed from: row counts, and Q1
/// and Q6 computed straight from `lineitem.tbl` match their answer files.
#[test]
fn generated_data_matches_the_answers() {
    let Some(tpch) = shared_tpch_dir() else {
        return;
    };
    let dir = ensure_data(SF001);
    for (table, rows) in TABLES {
        let text = std::fs::read_to_string(dir.join(format!("{table}.tbl"))).unwrap();
        assert_eq!(text.lines().count(), rows, "{table} rows");
        assert!(
            text.lines().all(|l| !l.is_empty() && !l.ends_with('|')),
            "{table}: lines are non-empty, without dbgen's trailing |"
        );
    }
    let lineitem = std::fs::read_to_string(dir.join("lineitem.tbl")).unwrap();
    let q1 = compute_q1(&lineitem);
    compare(&load_answer(&tpch, 1, SF001), &q1, true).expect("Q1 from the raw data");
    let q6 = compute_q6(&lineitem);
    compare(&load_answer(&tpch, 6, SF001), &q6, false).expect("Q6 from the raw data");
}

/// A decimal from the data (`21168.23`, `17`) in hundredths.
fn cents(text: &str) -> i128 {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let fraction = format!("{fraction:0<2}");
    whole.parse::<i128>().unwrap() * 100 + fraction[..2].parse::<i128>().unwrap()
}

fn decimal(value: i128, scale: u32) -> String {
    let unit = 10i128.pow(scale);
    let sign = if value < 0 { "-" } else { "" };
    format!(
        "{sign}{}.{:0width$}",
        (value / unit).abs(),
        (value % unit).abs(),
        width = scale as usize
    )
}

fn compute_q1(lineitem: &str) -> Vec<Vec<String>> {
    #[derive(Default)]
    struct Group {
        quantity: i128,
        price: i128,
        discounted: i128,
        charge: i128,
        discount: i128,
        count: i128,
    }
    let mut groups: BTreeMap<(String, String), Group> = BTreeMap::new();
    for line in lineitem.lines() {
        let f: Vec<&str> = line.split('|').collect();
        if f[10] > "1998-09-02" {
            continue;
        }
        let (quantity, price, discount, tax) = (cents(f[4]), cents(f[5]), cents(f[6]), cents(f[7]));
        let g = groups
            .entry((f[8].to_string(), f[9].to_string()))
            .or_default();
        g.quantity += quantity;
        g.price += price;
        g.discounted += price * (100 - discount);
        g.charge += price * (100 - discount) * (100 + tax);
        g.discount += discount;
        g.count += 1;
    }
    groups
        .into_iter()
        .map(|((flag, status), g)| {
            let average = |sum: i128| format!("{:.2}", sum as f64 / 100.0 / g.count as f64);
            vec![
                flag,
                status,
                decimal(g.quantity, 2),
                decimal(g.price, 2),
                decimal(g.discounted, 4),
                decimal(g.charge, 6),
                average(g.quantity),
                average(g.price),
                average(g.discount),
                g.count.to_string(),
            ]
        })
        .collect()
}

fn compute_q6(lineitem: &str) -> Vec<Vec<String>> {
    let mut revenue = 0i128;
    for line in lineitem.lines() {
        let f: Vec<&str> = line.split('|').collect();
        let (quantity, price, discount) = (cents(f[4]), cents(f[5]), cents(f[6]));
        if f[10] >= "1994-01-01"
            && f[10] < "1995-01-01"
            && (5..=7).contains(&discount)
            && quantity < 2400
        {
            revenue += price * discount;
        }
    }
    vec![vec![decimal(revenue, 4)]]
}

#[test]
fn answer_comparison_accepts_each_answer_and_rejects_changes() {
    let Some(tpch) = shared_tpch_dir() else {
        return;
    };
    for number in QUERIES {
        let answer = load_answer(&tpch, number, SF001);
        assert!(!answer.header.is_empty(), "q{number}: header");
        let ordered = has_order_by(&query_text(&tpch, number, SF001));
        compare(&answer, &answer.rows, ordered)
            .unwrap_or_else(|e| panic!("q{number} vs itself: {e}"));
        compare(&answer, &answer.rows, false).unwrap();

        // Trailing blanks (CHAR padding) and tiny numeric differences are equal.
        let padded: Vec<Vec<String>> = answer
            .rows
            .iter()
            .map(|r| r.iter().map(|c| format!("{c}   ")).collect())
            .collect();
        compare(&answer, &padded, ordered).unwrap();

        // One changed cell, one missing row, or reversed order is caught.
        let mut changed = answer.rows.clone();
        let cell = &mut changed[0][answer.header.len() - 1];
        *cell = match cell.parse::<f64>() {
            Ok(x) => format!("{:.2}", x + 1.0 + x.abs() * 1e-5),
            Err(_) => format!("{cell}x"),
        };
        assert!(
            compare(&answer, &changed, ordered).is_err(),
            "q{number}: changed cell"
        );
        assert!(
            compare(&answer, &answer.rows[1..], ordered).is_err(),
            "q{number}: missing row"
        );
        let mut reversed = answer.rows.clone();
        reversed.reverse();
        if ordered && reversed != answer.rows {
            assert!(
                compare(&answer, &reversed, true).is_err(),
                "q{number}: order"
            );
        }
    }
    let null = parse_answer("avg_yearly\r\n\"\"\r\n");
    assert!(compare(&null, &[vec![String::new()]], false).is_ok());
    assert!(compare(&null, &[vec!["0".to_string()]], false).is_err());
    let answer = parse_answer("a|b\r\n1|x\r\n2.5|y\r\n");
    let rows = |r: &[[&str; 2]]| {
        r.iter()
            .map(|r| r.iter().map(|s| s.to_string()).collect())
            .collect::<Vec<Vec<String>>>()
    };
    assert!(compare(&answer, &rows(&[["1.00", "x"], ["2.5049", "y  "]]), true).is_ok());
    assert!(compare(&answer, &rows(&[["1.02", "x"], ["2.5", "y"]]), true).is_err());
    assert!(compare(&answer, &rows(&[["1", "X"], ["2.5", "y"]]), true).is_err());
    let big = parse_answer("v\n1000000000.00\n");
    assert!(
        compare(
            &big,
            &rows(&[["1000000000.5", ""]])
                .iter()
                .map(|r| r[..1].to_vec())
                .collect::<Vec<_>>(),
            true
        )
        .is_ok()
    );
}

#[test]
fn tpch_queries_return_the_answers() {
    run_scale(SF001);
}

#[test]
fn tpch_queries_return_the_answers_at_sf_0_1() {
    if std::env::var_os(SF01_ENV).is_some_and(|v| v == "0") {
        println!("note: SF 0.1 skipped ({SF01_ENV}=0)");
        return;
    }
    run_scale(SF01);
}

/// The settings each query runs under, all of which must give the answer: one
/// thread; two threads on every pipeline they can take (`parallel_min_rows = 0`, so
/// even SF 0.01's tables are split), with bees and without; one thread without
/// join key filters (the others have them: the filtered scans and the plain joins
/// must agree); and two threads at the smallest `memory_limit`, where the joins,
/// aggregates and sorts of every query that has large enough ones spill to
/// temporary files (the last, as it is the only one setting the limit).
const CONFIGURATIONS: [(&str, &str); 5] = [
    ("1 thread", "SET threads = 1; SET bees = on; SET optimizer_join_filter = on"),
    ("2 threads", "SET threads = 2; SET parallel_min_rows = 0; SET bees = on"),
    ("2 threads, bees off", "SET threads = 2; SET parallel_min_rows = 0; SET bees = off"),
    ("1 thread, no join filters", "SET threads = 1; SET bees = on; SET optimizer_join_filter = off"),
    (
        "2 threads, memory_limit 256kB",
        "SET threads = 2; SET parallel_min_rows = 0; SET bees = on; SET optimizer_join_filter = on; SET memory_limit = '256kB'",
    ),
];

fn run_scale(scale: Scale) {
    let Some(tpch) = shared_tpch_dir() else {
        return;
    };
    let data = ensure_data(scale);
    let mut problems = Vec::new();
    let mut report = String::new();

    let db = Database::open(":memory:").expect("open an in-memory database");
    let mut conn = db.connect();
    let load = (|| -> Result<(), String> {
        let schema = std::fs::read_to_string(tpch.join("schema.sql")).map_err(|e| e.to_string())?;
        conn.execute_batch(&schema)
            .map_err(|e| format!("schema: {e}"))?;
        for (table, _) in TABLES {
            let path = std::fs::canonicalize(data.join(format!("{table}.tbl"))).unwrap();
            let rows = std::fs::read_to_string(&path).map_err(|e| e.to_string())?.lines().count();
            let sql = format!("COPY {table} FROM '{}' (DELIMITER '|')", path.display());
            let started = Instant::now();
            let result = conn.execute(&sql, &[]).map_err(|e| format!("{sql}: {e}"))?;
            if result.rows_affected != rows as u64 {
                return Err(format!(
                    "{sql}: copied {} rows, expected {rows}",
                    result.rows_affected
                ));
            }
            let _ = writeln!(
                report,
                "COPY {table}: {rows} rows in {:.2}s",
                started.elapsed().as_secs_f64()
            );
        }
        Ok(())
    })();
    if let Err(e) = load {
        problems.push(e);
    } else {
        // At SF 0.1 the configurations without bees or join filters are left to
        // SF 0.01 (time).
        let configurations = if scale.sf < 0.05 { &CONFIGURATIONS[..] } else { &CONFIGURATIONS[..2] };
        for &(config, settings) in configurations {
        conn.execute_batch(settings).expect("settings");
        let mut parallel_plans = 0;
        for number in QUERIES {
            let sql = query_text(&tpch, number, scale);
            let nested = match conn.query(&format!("EXPLAIN {sql}"), &[]) {
                Ok(plan) => {
                    let lines: Vec<String> = plan.rows.iter().map(|r| format!("{:?}", r.values())).collect();
                    parallel_plans += usize::from(lines.iter().any(|l| l.contains("Workers: 2")));
                    lines.iter().filter(|l| l.contains("re-executed per outer row")).count()
                }
                Err(e) => {
                    problems.push(format!("q{number:02}: EXPLAIN: {e}"));
                    0
                }
            };
            let started = Instant::now();
            let outcome = conn.execute(&sql, &[]);
            let elapsed = started.elapsed();
            let verdict = match outcome {
                Err(e) => Err(format!("error: {e}")),
                Ok(result) => compare(
                    &load_answer(&tpch, number, scale),
                    &result_cells(&result),
                    has_order_by(&sql),
                ),
            }
            .and_then(|()| {
                if nested > 0 {
                    Err(format!("{nested} correlated subplan(s) re-executed per outer row"))
                } else {
                    Ok(())
                }
            });
            let _ = writeln!(
                report,
                "q{number:02} ({config}): {} in {:.2}s",
                if verdict.is_ok() { "ok" } else { "FAILED" },
                elapsed.as_secs_f64()
            );
            if let Err(e) = verdict {
                problems.push(format!("q{number:02} ({config}): {e}"));
            }
        }
        // Most queries aggregate over a pipeline that two threads can drive; if none
        // did, the parallel path was not tested at all.
        let _ = writeln!(report, "{config}: {parallel_plans} of 22 plans use two threads");
        if config.starts_with("2 threads") && parallel_plans < 10 {
            problems.push(format!("{config}: only {parallel_plans} of 22 plans use two threads"));
        }
        }
        if scale.sf > 0.05 {
            within_16mb(&tpch, &mut conn, &mut problems, &mut report);
        }
    }
    print!("{report}");
    let _ = std::io::stdout().flush();
    if ENGINE_READY {
        assert!(
            problems.is_empty(),
            "TPC-H {}:\n{}",
            scale.name,
            problems.join("\n\n")
        );
    } else if !problems.is_empty() {
        println!(
            "ENGINE_READY is false; not asserted:\n{}",
            problems.join("\n")
        );
    }
}

/// Q9 and Q18 at SF 0.1 under `memory_limit = '16MB'` (issue 12, item 4): the
/// answers are right with one thread and two; Q18's aggregate over lineitem (150,000
/// groups) spills, which EXPLAIN ANALYZE shows; and no temporary file is still open
/// afterwards (they are unlinked when made, so an open descriptor is the only
/// trace one could leave).
fn within_16mb(tpch: &Path, conn: &mut beedb::Connection, problems: &mut Vec<String>, report: &mut String) {
    let spill_files = || {
        std::fs::read_dir("/proc/self/fd")
            .map(|dir| {
                dir.flatten()
                    .filter(|e| std::fs::read_link(e.path()).is_ok_and(|t| t.to_string_lossy().contains("beedb-spill")))
                    .count()
            })
            .unwrap_or(0)
    };
    for threads in [1, 2] {
        conn.execute_batch(&format!("SET memory_limit = '16MB'; SET threads = {threads}; SET parallel_min_rows = 0"))
            .expect("settings");
        for number in [9, 18] {
            let sql = query_text(tpch, number, SF01);
            let started = Instant::now();
            let verdict = match conn.execute(&sql, &[]) {
                Err(e) => Err(format!("error: {e}")),
                Ok(result) => compare(&load_answer(tpch, number, SF01), &result_cells(&result), has_order_by(&sql)),
            };
            let _ = writeln!(
                report,
                "q{number:02} (16MB, {threads} thread(s)): {} in {:.2}s",
                if verdict.is_ok() { "ok" } else { "FAILED" },
                started.elapsed().as_secs_f64()
            );
            if let Err(e) = verdict {
                problems.push(format!("q{number:02} (memory_limit 16MB, {threads} threads): {e}"));
            }
        }
        match conn.query(&format!("EXPLAIN ANALYZE {}", query_text(tpch, 18, SF01)), &[]) {
            Ok(plan) => {
                let text: Vec<String> = plan.rows.iter().map(|r| format!("{:?}", r.values())).collect();
                // A HashAggregate with a `Spilled:` line among its details (the lines
                // up to the next operator).
                let spilled = text.iter().enumerate().any(|(i, l)| {
                    l.contains("HashAggregate") && text[i + 1..].iter().take_while(|l| !l.contains("->")).any(|l| l.contains("Spilled:"))
                });
                if !spilled {
                    problems.push(format!("q18 (16MB, {threads} threads): no aggregate spilled:\n{}", text.join("\n")));
                }
            }
            Err(e) => problems.push(format!("q18 (16MB): EXPLAIN ANALYZE: {e}")),
        }
        let open = spill_files();
        if open > 0 {
            problems.push(format!("{open} temporary file(s) still open after the 16MB queries"));
        }
    }
    conn.execute_batch("SET memory_limit = DEFAULT; SET threads = DEFAULT; SET parallel_min_rows = DEFAULT").expect("settings");
}
