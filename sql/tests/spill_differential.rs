//! Random differential test of spilled against in-memory execution (issue 12 item 4,
//! issue 16): random tables of every column type (NULLs at random rates; keys with few
//! distinct values, many, and one heavily repeated value) and random queries that
//! exercise the operators that spill past `memory_limit` (hash aggregation, hash
//! joins of every kind, sorts, and their combinations). Each query runs with the
//! default limit and at 1MB (see `SMALL` for why not 256kB), on one thread and on two
//! (`parallel_min_rows = 0`); all four answers must be equal: as ordered lists when
//! the query's ORDER BY fixes the order (a unique tiebreak is always added), otherwise
//! as sorted multisets. Errors must have the same SQLSTATE; a 53200 at the small limit
//! is accepted only for aggregates whose state grows with their rows (DISTINCT, ORDER
//! BY, string_agg), which sql/README says can still reach the limit, and for hash
//! joins with one key value past what partitioning can
//! split. Joins whose output would pass 300,000 rows are skipped. Half the queries run
//! again under EXPLAIN ANALYZE at the small limit, and a third of those must show
//! `Spilled:`, so the test cannot compare in-memory with in-memory.
//!
//! `BEEDB_SPILL_SEED` changes the seed, `BEEDB_SPILL_QUERIES` the number of queries
//! (default 96, about 20 s in the debug test profile `scripts/test` uses), and
//! `BEEDB_SPILL_DB` keeps the tables in a file to reproduce a failure in the shell.

use beedb_sql::{Connection, Database};
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};

/// The small limit. Not 256kB (the smallest sql/README says spilling needs): there
/// a hash join of rows about 200 bytes wide cannot hold one batch and fails with
/// 53200 (reported with issue 16); 1MB holds a few batches of the widest rows here.
const SMALL: &str = "1MB";

/// Rows of one join key value past which a 53200 from a spilling hash join is
/// accepted (see the comment where it is).
const HEAVY_KEY_ROWS: i64 = 1000;

/// How a column's values are drawn: few distinct, many, or one value most of the time.
#[derive(Clone, Copy, Debug)]
enum Dist {
    Few,
    Many,
    Skew,
}

/// Column name, SQL type, and the SQL expression that maps the staged integer `x` to it.
const COLUMNS: &[(&str, &str, &str)] = &[
    ("si", "SMALLINT", "x % 30000 - 200"),
    ("i", "INTEGER", "x"),
    ("bi", "BIGINT", "x * 1000000007"),
    ("n1", "NUMERIC(12,2)", "CAST(x AS NUMERIC(12,2)) / 8"),
    ("n2", "NUMERIC(30,5)", "CAST(x AS NUMERIC(30,5)) * 1000000000000 + CAST(x AS NUMERIC(30,5)) / 16"),
    ("d", "DOUBLE PRECISION", "CAST(x AS DOUBLE PRECISION) / 4"),
    ("r", "REAL", "CAST(x % 1000 AS REAL) / 8"),
    (
        "tx",
        "TEXT",
        "CASE x % 7 WHEN 0 THEN '' WHEN 1 THEN repeat('abcdéfghij', 21) || CAST(x AS TEXT) ELSE 's' || CAST(x AS TEXT) END",
    ),
    ("c", "CHAR(5)", "'c' || CAST(x % 1000 AS TEXT)"),
    ("v", "VARCHAR(20)", "'v' || CAST(x AS TEXT)"),
    ("dt", "DATE", "DATE '2000-01-01' + x % 20000"),
    ("ts", "TIMESTAMP", "TIMESTAMP '2020-01-01 00:00:00' + CAST(CAST(x AS TEXT) || ' minutes' AS INTERVAL)"),
    // Days and months mixed: '1 mon' equals '30 days' (keys must hash alike).
    ("iv", "INTERVAL", "CASE WHEN x % 2 = 0 THEN CAST(CAST(x / 2 AS TEXT) || ' days' AS INTERVAL) ELSE CAST(CAST(x / 60 AS TEXT) || ' mons' AS INTERVAL) END"),
    ("b", "BOOLEAN", "x % 3 = 0"),
];

/// Columns usable as equality join keys and grouping keys (every one has `=`).
const KEYS: &[&str] = &["si", "i", "bi", "n1", "n2", "d", "tx", "c", "v", "dt", "ts", "iv", "b"];
/// Columns with min/max (not boolean).
const ORDERED: &[&str] = &["si", "i", "bi", "n1", "n2", "d", "r", "tx", "c", "v", "dt", "ts", "iv"];
/// Grouping keys and min/max arguments: not interval, whose equal values can differ
/// ('1 mon' = '30 days'), so that which one a group shows depends on the input order.
const GROUP_KEYS: &[&str] = &["si", "i", "bi", "n1", "n2", "d", "tx", "c", "v", "dt", "ts", "b"];
const MIN_MAX: &[&str] = &["si", "i", "bi", "n1", "n2", "d", "r", "tx", "c", "v", "dt", "ts"];
/// Columns whose sum is exact (no float rounding that depends on the order).
const SUMMABLE: &[&str] = &["si", "i", "bi", "n1", "n2", "iv"];
/// Columns whose avg is exact.
const AVERAGEABLE: &[&str] = &["si", "i", "bi", "n1", "n2"];

struct Table {
    name: String,
    rows: usize,
}

fn draw(r: &mut StdRng, dist: Dist, rows: usize) -> i64 {
    let many = (rows as i64 * 2).max(10);
    match dist {
        Dist::Few => r.random_range(0..6),
        Dist::Many => r.random_range(0..many),
        Dist::Skew => {
            if r.random_bool(0.8) {
                7
            } else {
                r.random_range(0..many)
            }
        }
    }
}

/// Creates `name` with a unique `id` and one column of each type.
fn make_table(c: &mut Connection, r: &mut StdRng, name: &str, rows: usize) -> Table {
    let ncol = COLUMNS.len();
    let dists: Vec<Dist> = (0..ncol).map(|_| *[Dist::Few, Dist::Many, Dist::Skew].choose(r).unwrap()).collect();
    let nulls: Vec<f64> = (0..ncol).map(|_| *[0.0, 0.0, 0.05, 0.3, 0.9].choose(r).unwrap()).collect();
    let staged: Vec<String> = (0..ncol).map(|k| format!("x{k} BIGINT")).collect();
    c.execute_batch(&format!(
        "DROP TABLE IF EXISTS {name}_s; CREATE TABLE {name}_s (id INTEGER, {})",
        staged.join(", ")
    ))
    .unwrap();
    let mut values = Vec::new();
    for id in 0..rows {
        let mut row = vec![id.to_string()];
        for k in 0..ncol {
            row.push(if r.random_bool(nulls[k]) { "NULL".into() } else { draw(r, dists[k], rows).to_string() });
        }
        values.push(format!("({})", row.join(",")));
        if values.len() == 1000 || id + 1 == rows {
            c.execute(&format!("INSERT INTO {name}_s VALUES {}", values.join(",")), &[]).unwrap();
            values.clear();
        }
    }
    let defs: Vec<String> = COLUMNS.iter().map(|(n, t, _)| format!("{n} {t}")).collect();
    let exprs: Vec<String> =
        COLUMNS.iter().enumerate().map(|(k, (_, _, e))| format!("({})", e.replace('x', &format!("x{k}")))).collect();
    c.execute_batch(&format!(
        "DROP TABLE IF EXISTS {name}; CREATE TABLE {name} (id INTEGER, {});
         INSERT INTO {name} SELECT id, {} FROM {name}_s; DROP TABLE {name}_s; ANALYZE {name}",
        defs.join(", "),
        exprs.join(", ")
    ))
    .unwrap();
    Table { name: name.to_string(), rows }
}

/// A generated query: its SQL, whether its ORDER BY fixes the order of every row, and
/// whether a 53200 at the small limit is allowed (aggregate states that grow).
struct Query {
    sql: String,
    ordered: bool,
    may_exceed: bool,
    /// For a join: the two tables and the first equality key (to size the join and
    /// find a key value repeated past what a grace hash join can split).
    join: Option<(String, String, String)>,
}

fn pick<'a>(r: &mut StdRng, from: &[&'a str]) -> &'a str {
    from.choose(r).unwrap()
}

fn direction(r: &mut StdRng) -> String {
    let dir = if r.random_bool(0.5) { " DESC" } else { "" };
    let nulls = match r.random_range(0..3) {
        0 => " NULLS FIRST",
        1 => " NULLS LAST",
        _ => "",
    };
    format!("{dir}{nulls}")
}

/// Aggregates over alias `a` (a table or join side); sets `grows` when one's state
/// grows with its rows.
fn aggregates(r: &mut StdRng, a: &str, grows: &mut bool) -> Vec<String> {
    let mut out = vec!["count(*)".to_string()];
    for _ in 0..r.random_range(1..5) {
        out.push(match r.random_range(0..8) {
            0 => format!("count({a}.{})", pick(r, KEYS)),
            1 => format!("sum({a}.{})", pick(r, SUMMABLE)),
            2 => format!("avg({a}.{})", pick(r, AVERAGEABLE)),
            3 => format!("min({a}.{})", pick(r, MIN_MAX)),
            4 => format!("max({a}.{})", pick(r, MIN_MAX)),
            5 => format!("bool_and({a}.b)"),
            6 => {
                *grows = true;
                format!("count(DISTINCT {a}.{})", pick(r, KEYS))
            }
            _ => {
                *grows = true;
                // The ORDER BY (with the unique id last) makes the string the same
                // whatever order the rows arrive in.
                let col = pick(r, &["tx", "v", "c"]);
                format!("string_agg({a}.{col}, ',' ORDER BY {a}.{col}, {a}.id)")
            }
        });
    }
    out
}

fn filter(r: &mut StdRng, a: &str) -> String {
    match r.random_range(0..4) {
        0 => format!(" WHERE {a}.i % 3 <> 1"),
        1 => format!(" WHERE {a}.tx IS NOT NULL"),
        _ => String::new(),
    }
}

fn group_query(r: &mut StdRng, t: &Table) -> Query {
    let mut grows = false;
    let nkeys = r.random_range(1..4);
    let keys: Vec<String> = (0..nkeys).map(|_| format!("a.{}", pick(r, GROUP_KEYS))).collect();
    let aggs = aggregates(r, "a", &mut grows);
    let mut sql = format!(
        "SELECT {}, {} FROM {} a{} GROUP BY {}",
        keys.join(", "),
        aggs.join(", "),
        t.name,
        filter(r, "a"),
        keys.join(", ")
    );
    let ordered = r.random_bool(0.3);
    if ordered {
        // The group keys are unique per output row: ordering by all of them is total.
        let order: Vec<String> = keys.iter().map(|k| format!("{k}{}", direction(r))).collect();
        sql += &format!(" ORDER BY {}", order.join(", "));
    }
    Query { sql, ordered, may_exceed: grows, join: None }
}

fn join_on(r: &mut StdRng) -> (String, String, String) {
    let k1 = pick(r, KEYS);
    let mut on = format!("a.{k1} = b.{k1}");
    if r.random_bool(0.3) {
        let k2 = pick(r, KEYS);
        on += &format!(" AND a.{k2} = b.{k2}");
    }
    let residual = match r.random_range(0..5) {
        0 => " AND a.d < b.d".to_string(),
        1 => " AND a.tx <> b.tx".to_string(),
        2 => " AND b.si > 100".to_string(),
        _ => String::new(),
    };
    (on, residual, k1.to_string())
}

fn join_query(r: &mut StdRng, ta: &Table, tb: &Table) -> Query {
    let (on, residual, key) = join_on(r);
    let (a, b) = (&ta.name, &tb.name);
    let cols = format!(
        "a.id, b.id, a.{}, b.{}, b.{}",
        pick(r, ORDERED),
        pick(r, ORDERED),
        pick(r, &["tx", "n2", "iv", "ts"])
    );
    let sql = match r.random_range(0..7) {
        0 => format!("SELECT {cols} FROM {a} a JOIN {b} b ON {on}{residual}"),
        1 => format!("SELECT {cols} FROM {a} a LEFT JOIN {b} b ON {on}{residual}"),
        2 => format!("SELECT {cols} FROM {a} a RIGHT JOIN {b} b ON {on}{residual}"),
        3 => format!("SELECT {cols} FROM {a} a FULL JOIN {b} b ON {on}{residual}"),
        4 => format!("SELECT a.id, a.{key} FROM {a} a WHERE a.{key} IN (SELECT b.{key} FROM {b} b{})", filter(r, "b")),
        5 => format!("SELECT a.id, a.tx FROM {a} a WHERE EXISTS (SELECT 1 FROM {b} b WHERE {on}{residual})"),
        _ => format!("SELECT a.id, a.v FROM {a} a WHERE NOT EXISTS (SELECT 1 FROM {b} b WHERE {on}{residual})"),
    };
    Query { sql, ordered: false, may_exceed: false, join: Some((a.clone(), b.clone(), key)) }
}

fn order_query(r: &mut StdRng, t: &Table) -> Query {
    let nkeys = r.random_range(1..4);
    let mut order: Vec<String> = (0..nkeys).map(|_| format!("{}{}", pick(r, ORDERED), direction(r))).collect();
    order.push(format!("id{}", if r.random_bool(0.5) { " DESC" } else { "" }));
    let mut sql = format!(
        "SELECT id, {}, {}, tx FROM {}{} ORDER BY {}",
        pick(r, ORDERED),
        pick(r, KEYS),
        t.name,
        filter(r, &t.name),
        order.join(", ")
    );
    match r.random_range(0..4) {
        0 => sql += &format!(" LIMIT {}", [0, 1, 10, 1000, 5000][r.random_range(0..5)]),
        1 => sql += &format!(" LIMIT {} OFFSET {}", [1, 100, 3000][r.random_range(0..3)], [0, 5, 1024, 9000][r.random_range(0..4)]),
        _ => {}
    }
    Query { sql, ordered: true, may_exceed: false, join: None }
}

/// Join, then group, then order (total: by every group key).
fn combined_query(r: &mut StdRng, ta: &Table, tb: &Table) -> Query {
    let (on, residual, key) = join_on(r);
    let kind = pick(r, &["JOIN", "LEFT JOIN", "FULL JOIN"]);
    let mut grows = false;
    let keys: Vec<String> = (0..r.random_range(1..3)).map(|_| format!("a.{}", pick(r, GROUP_KEYS))).collect();
    let aggs = aggregates(r, "b", &mut grows);
    let order: Vec<String> = keys.iter().map(|k| format!("{k}{}", direction(r))).collect();
    let sql = format!(
        "SELECT {}, {} FROM {} a {kind} {} b ON {on}{residual} GROUP BY {} ORDER BY {}",
        keys.join(", "),
        aggs.join(", "),
        ta.name,
        tb.name,
        keys.join(", "),
        order.join(", ")
    );
    Query { sql, ordered: true, may_exceed: grows, join: Some((ta.name.clone(), tb.name.clone(), key)) }
}

/// Rows as text, or the error's SQLSTATE.
fn run(c: &mut Connection, sql: &str) -> Result<Vec<String>, (String, String)> {
    match c.query(sql, &[]) {
        Ok(res) => Ok(res
            .rows
            .iter()
            .map(|row| row.0.iter().map(|v| v.to_string()).collect::<Vec<_>>().join("|"))
            .collect()),
        Err(e) => Err((e.sqlstate.to_string(), e.to_string())),
    }
}

fn configure(c: &mut Connection, threads: usize, limit: Option<&str>) {
    c.execute(&format!("SET threads = {threads}"), &[]).unwrap();
    match limit {
        Some(l) => c.execute(&format!("SET memory_limit = '{l}'"), &[]).unwrap(),
        None => c.execute("RESET memory_limit", &[]).unwrap(),
    };
}

#[test]
fn spilled_matches_in_memory() {
    let seed: u64 = std::env::var("BEEDB_SPILL_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(20261127);
    let queries: usize = std::env::var("BEEDB_SPILL_QUERIES").ok().and_then(|s| s.parse().ok()).unwrap_or(96);
    eprintln!("spill_differential: seed {seed} (BEEDB_SPILL_SEED), {queries} queries (BEEDB_SPILL_QUERIES)");
    let mut r = StdRng::seed_from_u64(seed);
    // BEEDB_SPILL_DB: a file to keep the tables in (to reproduce a failure in the shell).
    let db = Database::open(&std::env::var("BEEDB_SPILL_DB").unwrap_or(":memory:".into())).unwrap();
    let mut c = db.connect();
    c.execute("SET parallel_min_rows = 0", &[]).unwrap();

    // Tables are remade every `per_set` queries; sizes include 0, 1 and about 1024.
    let per_set = 16;
    let sizes = [0usize, 1, 1023, 1024, 1025, 4000, 12000, 20000];
    let mut tables = Vec::new();
    let (mut sampled, mut spilled, mut exceeded, mut compared, mut skipped, mut heavy_join) = (0, 0, 0, 0, 0, 0);
    // Queries whose plan at two threads probes a semi or anti join's held left rows
    // on both threads (`build: left`, `probe workers: 2`; its left table the smaller).
    let mut parallel_probes = 0;
    for q in 0..queries {
        if q % per_set == 0 {
            tables.clear();
            configure(&mut c, 1, None);
            let n = r.random_range(2..4);
            for k in 0..n {
                // The first table of each set is large, so that most queries can spill.
                let rows = if k == 0 { *[12000, 20000].choose(&mut r).unwrap() } else { *sizes.choose(&mut r).unwrap() };
                tables.push(make_table(&mut c, &mut r, &format!("t{k}"), rows));
            }
            eprintln!(
                "tables: {}",
                tables.iter().map(|t| format!("{} ({} rows)", t.name, t.rows)).collect::<Vec<_>>().join(", ")
            );
        }
        let ta = &tables[0];
        let tb = &tables[r.random_range(0..tables.len())];
        let query = match r.random_range(0..4) {
            0 => group_query(&mut r, ta),
            // Half the joins with the other (often the smaller) table on the left: a
            // semi or anti join whose right input is the larger holds its left rows
            // (`build: left`), probed on two threads.
            1 if r.random_bool(0.5) => join_query(&mut r, tb, ta),
            1 => join_query(&mut r, ta, tb),
            2 => order_query(&mut r, ta),
            _ => combined_query(&mut r, ta, tb),
        };
        let sql = &query.sql;
        // A join's size on its first key (skip those that would return too many rows),
        // and the most rows one key value has on either side.
        let mut heavy_key = false;
        if let Some((a, b, k)) = &query.join {
            configure(&mut c, 1, None);
            let one = |c: &mut Connection, q: &str| run(c, q).unwrap().pop().unwrap();
            let pairs = one(
                &mut c,
                &format!(
                    "SELECT coalesce(sum(x.n * y.n), 0) FROM (SELECT {k} AS k, count(*) AS n FROM {a} GROUP BY {k}) x \
                     JOIN (SELECT {k} AS k, count(*) AS n FROM {b} GROUP BY {k}) y ON x.k = y.k"
                ),
            );
            if pairs.parse::<f64>().unwrap() > 300_000.0 {
                skipped += 1;
                continue;
            }
            let dup = |c: &mut Connection, t: &str| {
                one(c, &format!("SELECT coalesce(max(n), 0) FROM (SELECT count(*) AS n FROM {t} WHERE {k} IS NOT NULL GROUP BY {k}) s"))
                    .parse::<i64>()
                    .unwrap()
            };
            heavy_key = dup(&mut c, a).max(dup(&mut c, b)) >= HEAVY_KEY_ROWS;
            // A RIGHT or FULL join's build rows with a NULL key (output unmatched)
            // are written apart when it spills, not to one part that cannot split:
            // such joins are held to the in-memory answer at any NULL rate.
        }
        let mut answers = Vec::new();
        for threads in [1, 2] {
            for limit in [None, Some(SMALL)] {
                configure(&mut c, threads, limit);
                let mut a = run(&mut c, sql);
                if let Ok(rows) = &mut a {
                    if !query.ordered {
                        rows.sort();
                    }
                }
                answers.push((threads, limit, a));
            }
        }
        let base = &answers[0];
        let base_rows = match &base.2 {
            Ok(rows) => Some(rows),
            Err(_) => None,
        };
        for (threads, limit, a) in &answers[1..] {
            let ctx = format!("seed {seed}, query {q}, threads {threads}, memory_limit {limit:?}:\n{sql}");
            match (&base.2, a) {
                (Ok(x), Ok(y)) => {
                    if x != y {
                        let diff = x.iter().zip(y).position(|(p, q)| p != q).unwrap_or(x.len().min(y.len()));
                        panic!(
                            "{ctx}\n{} rows vs {} rows; first difference at row {diff}: {:?} vs {:?}",
                            x.len(),
                            y.len(),
                            x.get(diff),
                            y.get(diff)
                        );
                    }
                }
                (Ok(_), Err((state, _))) if state == "53200" && limit.is_some() && query.may_exceed => {
                    exceeded += 1;
                }
                // Known limitation (reported with issue 16): a grace hash join splits
                // its build by a hash of the key, so one key value whose build rows
                // outgrow the limit cannot be split and ends in 53200. Accepted only
                // when some key value has HEAVY_KEY_ROWS rows or more.
                (Ok(_), Err((state, msg))) if state == "53200" && limit.is_some() && heavy_key && msg.contains("Hash Join") => {
                    heavy_join += 1;
                }
                (Err((s1, _)), Err((s2, _))) if s1 == s2 => {}
                (x, y) => panic!("{ctx}\nbaseline {:?}\nthis run {:?}", x.as_ref().map(|v| v.len()), y.as_ref().map(|v| v.len())),
            }
        }
        compared += 1;
        let _ = base_rows;
        // Half the queries: did the small limit spill? (one thread and two)
        if q % 2 == 0 {
            for threads in [1, 2] {
                configure(&mut c, threads, Some(SMALL));
                if let Ok(plan) = run(&mut c, &format!("EXPLAIN ANALYZE {sql}")) {
                    sampled += 1;
                    if threads == 2 && plan.iter().any(|l| l.contains("Probe Workers")) {
                        parallel_probes += 1;
                    }
                    if plan.iter().any(|l| l.contains("Spilled:")) {
                        spilled += 1;
                    }
                }
            }
        }
    }
    eprintln!(
        "spill_differential: {compared} queries compared in 4 settings ({skipped} joins too large skipped); \
         {spilled} of {sampled} sampled runs at {SMALL} spilled; 53200 accepted in {exceeded} runs (growing aggregate \
         states) and {heavy_join} (a join key value past the limit); {parallel_probes} sampled two-thread plans probe \
         held left rows in parallel"
    );
    assert!(queries < 64 || parallel_probes > 0, "no sampled plan probed a join's held left rows on two threads");
    assert!(sampled == 0 || spilled * 3 >= sampled, "only {spilled} of {sampled} sampled small-limit runs spilled");
}
