//! Per-row LATERAL (`Node::Apply`) through the Rust API: statement parameters beside
//! the LATERAL item's own (the right plan reads both; its own are numbered after the
//! statement's), a prepared statement executed with different values (its plan
//! cached), and a LATERAL item inside a correlated subquery.

use beedb_sql::{Database, Value};

fn ints(r: &beedb_sql::QueryResult) -> Vec<Vec<i64>> {
    r.rows
        .iter()
        .map(|row| (0..row.len()).map(|i| row.get::<i64>(i).unwrap()).collect())
        .collect()
}

#[test]
fn statement_parameters_and_lateral_parameters_together() {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    c.execute_batch(
        "CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (1), (2), (3);
         CREATE TABLE s (x INTEGER, y INTEGER); INSERT INTO s VALUES (1, 10), (1, 11), (2, 20), (3, 30), (3, 31), (3, 32)",
    )
    .unwrap();
    // A LATERAL function reading a statement parameter and a left column.
    let series = c.prepare("SELECT t.a, g FROM t, generate_series($1, t.a) g ORDER BY 1, 2").unwrap();
    let r = series.execute(&mut c, &[Value::Integer(2)]).unwrap();
    assert_eq!(ints(&r), [[2, 2], [3, 2], [3, 3]]);
    let r = series.execute(&mut c, &[Value::Integer(1)]).unwrap();
    assert_eq!(ints(&r), [[1, 1], [2, 1], [2, 2], [3, 1], [3, 2], [3, 3]]);
    // Top-n per left row with the n-th bound from a parameter in the WHERE clause.
    let top = c
        .prepare("SELECT t.a, q.y FROM t LEFT JOIN LATERAL (SELECT y FROM s WHERE s.x = t.a AND s.y > $1 ORDER BY y DESC LIMIT 2) q ON true ORDER BY 1, 2")
        .unwrap();
    let r = top.execute(&mut c, &[Value::Integer(10)]).unwrap();
    assert_eq!(r.rows.len(), 4);
    assert_eq!(r.rows[0].get::<i64>(1).unwrap(), 11);
    assert_eq!(ints(&r)[1..], [[2, 20], [3, 31], [3, 32]]);
    let r = top.execute(&mut c, &[Value::Integer(30)]).unwrap();
    // a = 1 and a = 2 have no row above 30: NULLs under LEFT JOIN.
    let rows: Vec<(i64, Option<i64>)> =
        r.rows.iter().map(|row| (row.get::<i64>(0).unwrap(), row.get::<Option<i64>>(1).unwrap())).collect();
    assert_eq!(rows, [(1, None), (2, None), (3, Some(31)), (3, Some(32))]);
}

#[test]
fn a_lateral_item_inside_a_correlated_subquery() {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    c.execute_batch("CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (1), (2), (3)").unwrap();
    // For each o.a: the pairs (a, g) with g in 1..a and a <= o.a.
    let r = c
        .execute(
            "SELECT o.a, (SELECT count(*) FROM t, generate_series(1, t.a) g WHERE t.a <= o.a) FROM t AS o ORDER BY 1",
            &[],
        )
        .unwrap();
    assert_eq!(ints(&r), [[1, 1], [2, 3], [3, 6]]);
}

#[test]
fn a_lateral_items_rows_count_once_against_memory_limit() {
    // 2,000,000 int4 rows of one left row are ~8 MB held: the count once added its
    // running total to itself per batch and reported more than the 1 GB default.
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    c.execute_batch("CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (1); SET memory_limit = '64MB'").unwrap();
    let r = c.execute("SELECT count(*) FROM t, LATERAL generate_series(1, t.a * 2000000) g", &[]).unwrap();
    assert_eq!(ints(&r), [[2_000_000]]);
}

/// Apply streams the right side's rows: a LIMIT above a LATERAL series of 50 to 100
/// million rows per left row stops it after the first rows, at the smallest
/// memory_limit (the rows were held per left row before, and this was 53200 where
/// PostgreSQL returns a row). A left value that repeats in the batch would have its
/// rows held for the repeat: past half the limit they are dropped and the repeat
/// runs the series again, so that is no error either.
#[test]
fn lateral_rows_stream_under_a_limit() {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    c.execute_batch("CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (1), (2); SET memory_limit = '64kB'").unwrap();
    for sql in [
        "SELECT * FROM t, LATERAL generate_series(1, t.a * 50000000) g LIMIT 1",
        "SELECT * FROM t LEFT JOIN LATERAL generate_series(1, t.a * 50000000) g ON true LIMIT 1",
        "SELECT * FROM t, LATERAL (SELECT g, g % 7 AS m FROM generate_series(1, t.a * 50000000) g OFFSET 3) q LIMIT 5",
    ] {
        let started = std::time::Instant::now();
        let r = c.execute(sql, &[]).unwrap_or_else(|e| panic!("{sql}: {e}"));
        assert!(!r.rows.is_empty(), "{sql}");
        // Not a performance assertion: 50M rows take seconds, a minute would be a hang.
        assert!(started.elapsed().as_secs() < 60, "{sql} ran the series to its end");
    }
    // Two left rows with the same value: the first run's 300,000 rows pass the hold
    // limit (half of 64kB), so the second row runs the series again.
    c.execute_batch("DELETE FROM t; INSERT INTO t VALUES (3), (3)").unwrap();
    let r = c.execute("SELECT count(*), sum(g) FROM t, LATERAL generate_series(1, t.a * 100000) g", &[]).unwrap();
    assert_eq!(ints(&r), [[600_000, 2 * (300_000i64 * 300_001 / 2)]]);
    let r = c.execute("SELECT count(*) FROM (SELECT * FROM t, LATERAL generate_series(1, t.a * 100000) g LIMIT 450000) x", &[]).unwrap();
    assert_eq!(ints(&r), [[450_000]]);
}

/// The rows of a per-row LATERAL item (`Node::Apply`) against its definition: for
/// each left row, the right query run alone with that row's values written in as
/// literals, joined to it (under LEFT JOIN a row without any gets NULLs). Random
/// tables of 3,000 left rows (three batches) whose LATERAL parameters repeat (a
/// small key domain, NULLs, numerics equal as numbers but written with different
/// scales, 0 and -0 as floats), right sides that are empty for some keys; with bees
/// on and off, on one thread and on two.
#[test]
fn apply_rows_match_the_right_query_run_per_left_row() {
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};
    use std::collections::HashMap;
    let mut r = StdRng::seed_from_u64(0x1a7e_2026);
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    c.execute_batch("CREATE TABLE t (id INTEGER, k INTEGER, d NUMERIC, f DOUBLE PRECISION); CREATE TABLE s (k INTEGER, v INTEGER)").unwrap();
    let mut rows = Vec::new();
    for id in 0..3000 {
        let k = if r.random_bool(0.1) { "NULL".to_string() } else { r.random_range(-1..12).to_string() };
        let d = ["1.0", "1.00", "2", "NULL", "-0.5"][r.random_range(0..5)];
        let f = ["0.0", "-0.0", "1.5", "NULL"][r.random_range(0..4)];
        rows.push(format!("({id}, {k}, {d}, {f})"));
    }
    c.execute(&format!("INSERT INTO t VALUES {}", rows.join(", ")), &[]).unwrap();
    let s_rows: Vec<String> = (0..200)
        .map(|_| {
            // k in 0..8: keys -1, 8..11 and NULL find nothing.
            let k = if r.random_bool(0.05) { "NULL".to_string() } else { r.random_range(0..8).to_string() };
            format!("({k}, {})", r.random_range(0..50))
        })
        .collect();
    c.execute(&format!("INSERT INTO s VALUES {}", s_rows.join(", ")), &[]).unwrap();
    // (LATERAL item with `{k}`, `{d}`, `{f}` for the left values, join, its columns)
    let shapes: [(&str, &str, usize); 6] = [
        ("LATERAL (SELECT s.v FROM s WHERE s.k = {k} ORDER BY s.v DESC LIMIT 3) q", ",", 1),
        ("LATERAL (SELECT s.v FROM s WHERE s.k = {k} ORDER BY s.v LIMIT 2) q ON true", "LEFT JOIN", 1),
        ("LATERAL (SELECT s.v % 5 AS m, count(*) AS n FROM s WHERE s.k >= {k} GROUP BY s.v % 5) q", ",", 2),
        ("LATERAL generate_series(1, {k}) q", ",", 1),
        ("LATERAL generate_series({k}, 3) q ON true", "LEFT JOIN", 1),
        ("LATERAL (SELECT ({d})::text || ':' || ({f})::text || ':' || s.v AS x FROM s WHERE s.k = 1 ORDER BY s.v LIMIT 2) q", ",", 1),
    ];
    let left: Vec<Vec<Value>> = c.execute("SELECT id, k, d, f FROM t", &[]).unwrap().rows.iter().map(|r| r.values().to_vec()).collect();
    let literal = |v: &Value, ty: &str| match v {
        Value::Null => format!("NULL::{ty}"),
        v => format!("'{v}'::{ty}"),
    };
    let text = |vals: &[Value]| vals.iter().map(|v| format!("{v:?}")).collect::<Vec<_>>().join("|");
    for (item, join, width) in shapes {
        // Expected: the right query per distinct set of left values, then per row.
        let mut per_values: HashMap<String, Vec<String>> = HashMap::new();
        let mut expected = Vec::new();
        for row in &left {
            let (k, d, f) = (literal(&row[1], "int4"), literal(&row[2], "numeric"), literal(&row[3], "float8"));
            let key = format!("{k}/{d}/{f}");
            let right = per_values.entry(key).or_insert_with(|| {
                let one = item.replace("{k}", &k).replace("{d}", &d).replace("{f}", &f);
                let one = one.trim_end_matches(" ON true").trim_start_matches("LATERAL ");
                let sql = format!("SELECT * FROM {one}");
                c.execute(&sql, &[]).unwrap_or_else(|e| panic!("{sql}: {e}")).rows.iter().map(|r| text(r.values())).collect()
            });
            if right.is_empty() && join == "LEFT JOIN" {
                expected.push(format!("{}|{}", text(row), vec!["Null"; width].join("|")));
            }
            expected.extend(right.iter().map(|x| format!("{}|{x}", text(row))));
        }
        expected.sort();
        let lateral = item.replace("{k}", "t.k").replace("{d}", "t.d").replace("{f}", "t.f");
        let sql = format!("SELECT t.id, t.k, t.d, t.f, q.* FROM t {join} {lateral}");
        for settings in ["SET bees = on; SET threads = 1", "SET bees = off; SET threads = 1", "SET bees = on; SET threads = 2; SET parallel_min_rows = 0"] {
            c.execute_batch(settings).unwrap();
            let plan: Vec<String> = c.execute(&format!("EXPLAIN {sql}"), &[]).unwrap().rows.iter().map(|r| r.get::<String>(0).unwrap()).collect();
            assert!(plan.iter().any(|l| l.contains("Lateral Params:")), "{sql} must run per left row:\n{}", plan.join("\n"));
            let mut got: Vec<String> = c.execute(&sql, &[]).unwrap_or_else(|e| panic!("{sql}: {e}")).rows.iter().map(|r| text(r.values())).collect();
            got.sort();
            assert_eq!(got.len(), expected.len(), "{settings}: {sql}");
            assert!(got == expected, "{settings}: {sql}: rows differ");
        }
    }
}
