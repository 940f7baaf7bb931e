//! Column statistics through the API: they survive reopening, roll back with their
//! transaction, and the automatic ANALYZE keeps up with inserts. (Estimates
//! themselves are tested in `tests/slt/statistics.slt`.)

use beedb_sql::{Connection, Database};

/// The estimated rows of the top node of `sql`'s plan.
fn estimate(c: &mut Connection, sql: &str) -> f64 {
    let r = c.query(&format!("EXPLAIN {sql}"), &[]).unwrap();
    let top = r.rows[0].get::<String>(0).unwrap();
    let at = top.find(" rows=").unwrap_or_else(|| panic!("no estimate in {top}")) + 6;
    let end = top[at..].find(' ').unwrap() + at;
    top[at..end].parse().unwrap()
}

/// 2,000 rows: `k` unique 0..1,999; `g` is 1 in 1,001 rows (even `k`, and `k` = 1),
/// else `k`.
fn fill(c: &mut Connection) {
    c.execute_batch(
        "SET bees = off;
         CREATE TABLE d (x INTEGER);
         INSERT INTO d SELECT a.x * 10 + b.x FROM (VALUES (0),(1),(2),(3),(4),(5),(6),(7),(8),(9)) a(x),
                                                  (VALUES (0),(1),(2),(3),(4),(5),(6),(7),(8),(9)) b(x);
         CREATE TABLE t (k INTEGER, g INTEGER);
         INSERT INTO t SELECT a.x * 100 + b.x, CASE WHEN b.x % 2 = 0 THEN 1 ELSE a.x * 100 + b.x END
           FROM (SELECT x FROM d WHERE x < 20) a, d b;",
    )
    .unwrap();
}

#[test]
fn statistics_survive_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.beedb");
    {
        let db = Database::open(&path).unwrap();
        let mut c = db.connect();
        fill(&mut c);
        assert_eq!(estimate(&mut c, "SELECT * FROM t WHERE g = 1"), 1001.0);
    }
    let db = Database::open(&path).unwrap();
    let mut c = db.connect();
    c.execute("SET bees = off", &[]).unwrap();
    // No statement has read t since the open: the estimate is the stored one.
    assert_eq!(estimate(&mut c, "SELECT * FROM t WHERE g = 1"), 1001.0);
    assert_eq!(estimate(&mut c, "SELECT * FROM t WHERE g = 3"), 1.0);
    assert_eq!(estimate(&mut c, "SELECT * FROM t"), 2000.0);
}

#[test]
fn analyze_rolls_back_with_its_transaction() {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    fill(&mut c);
    c.execute_batch("BEGIN; DELETE FROM t WHERE g = 1; ANALYZE t;").unwrap();
    assert_eq!(estimate(&mut c, "SELECT * FROM t WHERE g = 1"), 1.0);
    c.execute("ROLLBACK", &[]).unwrap();
    // The column statistics are the committed ones again: half the rows hold 1. (The
    // row count is the engine's running count, which is not transactional: what
    // ANALYZE counted stays until the next scan or ANALYZE.)
    let share = estimate(&mut c, "SELECT * FROM t WHERE g = 1") / estimate(&mut c, "SELECT * FROM t");
    assert!((share - 0.5005).abs() < 1e-3, "{share}");
}

#[test]
fn inserts_bring_statistics_up_to_date_by_themselves() {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    fill(&mut c);
    // 3,000 more rows, all with g = 7, in 30 statements: more than 10% + 50 rows
    // after the last ANALYZE, so the estimate follows without an ANALYZE.
    for _ in 0..30 {
        c.execute("INSERT INTO t SELECT x, 7 FROM d", &[]).unwrap();
    }
    let e = estimate(&mut c, "SELECT * FROM t WHERE g = 7");
    assert!(e > 2000.0, "estimate {e} for 3,001 rows");
}

/// The correlation of an index's column with heap order goes to 1 when CLUSTER
/// rewrites the table in that index's order, and both it and the remembered index
/// survive reopening (a bare `CLUSTER t` then uses the same index).
#[test]
fn cluster_makes_the_index_column_correlated_and_is_remembered() {
    let correlation = |c: &mut Connection| -> f64 {
        let r = c.query("SELECT correlation FROM beedb_stats WHERE table_name = 's' AND column_name = 'k'", &[]).unwrap();
        r.rows[0].get::<f64>(0).unwrap()
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.beedb");
    {
        let db = Database::open(&path).unwrap();
        let mut c = db.connect();
        // k = n · 7919 mod 5000 over n = 0..4,999: every key once, in no order.
        c.execute_batch(
            "CREATE TABLE s (k INTEGER, pad TEXT);
             INSERT INTO s SELECT n * 7919 % 5000, 'p' || n FROM generate_series(0, 4999) AS g(n);
             CREATE INDEX s_k ON s (k);
             ANALYZE s;",
        )
        .unwrap();
        assert!(correlation(&mut c).abs() < 0.1, "{}", correlation(&mut c));
        c.execute("CLUSTER s USING s_k", &[]).unwrap();
        assert!(correlation(&mut c) > 0.99, "{}", correlation(&mut c));
        c.execute("INSERT INTO s VALUES (-1, 'last')", &[]).unwrap();
    }
    let db = Database::open(&path).unwrap();
    let mut c = db.connect();
    assert!(correlation(&mut c) > 0.99);
    c.execute("CLUSTER s", &[]).unwrap();
    let first = c.query("SELECT k FROM s LIMIT 1", &[]).unwrap();
    assert_eq!(first.rows[0].get::<i32>(0).unwrap(), -1, "reclustered on s_k after reopening");
}

/// A table that grows one row per statement is re-analyzed from bounded samples
/// (about as many rows as changed since the last run): its estimates still follow
/// the data — a common value's share, a unique column, a range over a column that
/// grows with the table.
#[test]
fn one_row_inserts_keep_estimates_close() {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    c.execute_batch("CREATE TABLE h (id INTEGER, g INTEGER, at TIMESTAMP)").unwrap();
    let insert = c.prepare("INSERT INTO h VALUES ($1, $2, timestamp '2026-01-01' + $3::integer * interval '1 second')").unwrap();
    for i in 0..6000i64 {
        // g = 3 in a fifth of the rows, else unique.
        let g = if i % 5 == 0 { 3 } else { 1000 + i };
        let at = beedb_sql::Value::BigInt(i);
        insert.execute(&mut c, &[beedb_sql::Value::BigInt(i), beedb_sql::Value::BigInt(g), at]).unwrap();
    }
    let all = estimate(&mut c, "SELECT * FROM h");
    assert!((all - 6000.0).abs() < 700.0, "row count {all}");
    let common = estimate(&mut c, "SELECT * FROM h WHERE g = 3");
    assert!((900.0..1500.0).contains(&common), "g = 3: {common} (1,200 rows)");
    let one = estimate(&mut c, "SELECT * FROM h WHERE id = 4321");
    assert!(one < 10.0, "id = 4321: {one}");
    let recent = estimate(&mut c, "SELECT * FROM h WHERE at >= timestamp '2026-01-01' + interval '3000 seconds'");
    assert!((2000.0..4200.0).contains(&recent), "the later half: {recent} (3,000 rows)");
}

/// Whether `table` has column statistics (`beedb_stats` names no table, so reading
/// it runs no deferred ANALYZE).
fn has_stats(c: &mut Connection, table: &str) -> bool {
    let r = c.query(&format!("SELECT count(*) FROM beedb_stats WHERE table_name = '{table}'"), &[]).unwrap();
    r.rows[0].get::<i64>(0).unwrap() > 0
}

/// An UPDATE of every row counts as changes: the next statement that plans over the
/// table analyzes it (before, only inserts and deletes counted, and the estimate of
/// the new value stayed at one row).
#[test]
fn an_update_of_every_row_brings_statistics_up_to_date() {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    c.execute_batch(
        "CREATE TABLE t (a INTEGER);
         INSERT INTO t SELECT 1 FROM generate_series(1, 1000);
         ANALYZE t;",
    )
    .unwrap();
    assert_eq!(estimate(&mut c, "SELECT * FROM t WHERE a = 1"), 1000.0);
    c.execute("UPDATE t SET a = 2", &[]).unwrap();
    assert_eq!(estimate(&mut c, "SELECT * FROM t WHERE a = 2"), 1000.0);
    assert_eq!(estimate(&mut c, "SELECT * FROM t WHERE a = 1"), 1.0);
}

/// The automatic ANALYZE is not run by the INSERT, UPDATE or DELETE that makes it
/// due, but deferred to the next statement that reads the table: the writer's
/// statement ends with the statistics as they were.
#[test]
fn writes_leave_the_automatic_analyze_to_the_next_reader() {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    c.execute_batch("CREATE TABLE t (a INTEGER); INSERT INTO t SELECT x FROM generate_series(1, 500) g(x);").unwrap();
    assert!(!has_stats(&mut c, "t"), "the INSERT analyzed t");
    c.execute("DELETE FROM t WHERE a > 100", &[]).unwrap();
    assert!(!has_stats(&mut c, "t"));
    assert_eq!(estimate(&mut c, "SELECT * FROM t"), 100.0);
    assert!(has_stats(&mut c, "t"));
    // Changes in a block count when it commits; the next reader analyzes.
    c.execute_batch("BEGIN; UPDATE t SET a = 7; SELECT count(*) FROM t;").unwrap();
    assert_eq!(estimate(&mut c, "SELECT * FROM t WHERE a = 7"), 1.0);
    c.execute("COMMIT", &[]).unwrap();
    assert_eq!(estimate(&mut c, "SELECT * FROM t WHERE a = 7"), 100.0);
}

/// A reader never waits for the write lock to store the statistics: while another
/// connection writes, the table stays due, and a statement after it analyzes it.
#[test]
fn the_deferred_analyze_does_not_wait_for_a_writer() {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    let mut writer = db.connect();
    c.execute_batch("CREATE TABLE t (a INTEGER); INSERT INTO t SELECT 1 FROM generate_series(1, 300);").unwrap();
    writer.execute_batch("BEGIN IMMEDIATE; CREATE TABLE other (b INTEGER);").unwrap();
    let start = std::time::Instant::now();
    c.query("SELECT count(*) FROM t", &[]).unwrap();
    assert!(start.elapsed() < std::time::Duration::from_secs(2), "the reader waited for the writer");
    assert!(!has_stats(&mut c, "t"));
    writer.execute("COMMIT", &[]).unwrap();
    // Readers leave the table alone for 50 ms after finding the lock taken.
    std::thread::sleep(std::time::Duration::from_millis(120));
    assert_eq!(estimate(&mut c, "SELECT * FROM t WHERE a = 1"), 300.0);
    assert!(has_stats(&mut c, "t"));
}

/// COPY, CREATE TABLE AS and CREATE INDEX gather statistics by themselves, before
/// any statement reads the table.
#[test]
fn bulk_statements_analyze_by_themselves() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    // COPY.
    let file = dir.path().join("rows.csv");
    let text: String = (0..400).map(|i| format!("{i},{}\n", i % 4)).collect();
    std::fs::write(&file, text).unwrap();
    c.execute_batch(&format!(
        "CREATE TABLE cp (k INTEGER, g INTEGER); COPY cp FROM '{}' WITH (FORMAT csv);",
        file.display()
    ))
    .unwrap();
    assert!(has_stats(&mut c, "cp"), "COPY left cp without statistics");
    // CREATE TABLE AS.
    c.execute("CREATE TABLE ctas AS SELECT k, g FROM cp WHERE g = 1", &[]).unwrap();
    assert!(has_stats(&mut c, "ctas"), "CREATE TABLE AS left ctas without statistics");
    // CREATE INDEX: the INSERT leaves the ANALYZE to a later reader; the index
    // gathers the statistics itself.
    c.execute_batch("CREATE TABLE ix (k INTEGER); INSERT INTO ix SELECT x FROM generate_series(1, 700) g(x);").unwrap();
    assert!(!has_stats(&mut c, "ix"));
    c.execute("CREATE INDEX ix_k ON ix (k)", &[]).unwrap();
    assert!(has_stats(&mut c, "ix"), "CREATE INDEX left ix without statistics");
    assert_eq!(estimate(&mut c, "SELECT * FROM cp WHERE g = 1"), 100.0);
    assert_eq!(estimate(&mut c, "SELECT * FROM ctas"), 100.0);
}
