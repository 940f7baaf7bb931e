//! `memory_limit` holds for what a statement materializes whole (issue 16): over the
//! limit the statement stops with SQLSTATE 53200, and under it the same statement
//! answers.

use beedb_sql::{Connection, Database, ErrorKind};

/// A table of `10^digits` rows of 100-byte strings.
fn wide_table(c: &mut Connection, digits: u32) {
    c.execute_batch(
        "CREATE TABLE d (i INTEGER); \
         INSERT INTO d VALUES (0), (1), (2), (3), (4), (5), (6), (7), (8), (9); \
         CREATE TABLE w (s TEXT)",
    )
    .unwrap();
    let from: Vec<String> = (0..digits).map(|k| format!("d AS d{k}")).collect();
    let number: Vec<String> = (0..digits).map(|k| format!("d{k}.i * {}", 10u64.pow(k))).collect();
    c.execute_batch(&format!(
        "INSERT INTO w SELECT repeat('x', 90) || CAST({} AS text) FROM {}",
        number.join(" + "),
        from.join(", ")
    ))
    .unwrap();
}

#[test]
fn in_subquery_results_count_against_memory_limit() {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    wide_table(&mut c, 5); // 100,000 rows, over 10 MB of strings
    c.execute_batch("SET memory_limit = '4MB'").unwrap();
    for sql in [
        "SELECT count(*) FROM d WHERE CAST(i AS text) IN (SELECT s FROM w)",
        "SELECT count(*) FROM d WHERE CAST(i AS text) NOT IN (SELECT s FROM w)",
    ] {
        let e = c.query(sql, &[]).expect_err("over the limit");
        assert_eq!(e.kind, ErrorKind::Limit, "{e}");
        assert_eq!(e.sqlstate, "53200");
        // Held as a subquery result, or as a hash join's build side when planned as a
        // semi- or anti-join: either way within the limit.
        assert!(e.message.starts_with("memory limit exceeded"), "{e}");
    }
    c.execute_batch("SET memory_limit = '256MB'").unwrap();
    let r = c
        .query("SELECT count(*) FROM d WHERE CAST(i AS text) NOT IN (SELECT s FROM w)", &[])
        .unwrap();
    assert_eq!(r.rows[0].get::<i64>(0).unwrap(), 10);
}

#[test]
fn window_functions_count_against_memory_limit() {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    wide_table(&mut c, 5); // 100,000 rows, over 10 MB of strings
    c.execute_batch("SET memory_limit = '4MB'").unwrap();
    for sql in [
        "SELECT count(r) FROM (SELECT row_number() OVER (ORDER BY s) AS r FROM w) q",
        "SELECT count(m) FROM (SELECT max(s) OVER (ORDER BY s ROWS 1 PRECEDING) AS m FROM w) q",
    ] {
        let e = c.query(sql, &[]).expect_err("over the limit");
        assert_eq!((e.kind, e.sqlstate), (ErrorKind::Limit, "53200"), "{e}");
        assert!(e.message.contains("WindowAgg"), "{e}");
    }
    c.execute_batch("SET memory_limit = '256MB'").unwrap();
    let r = c
        .query("SELECT max(r) FROM (SELECT row_number() OVER (ORDER BY s) AS r FROM w) q", &[])
        .unwrap();
    assert_eq!(r.rows[0].get::<i64>(0).unwrap(), 100_000);
}

/// A recursion that never ends but keeps finding new rows is stopped by
/// `memory_limit` (PostgreSQL has no depth limit either): under UNION by the set of
/// rows seen, under UNION ALL by a working table that doubles every round. One that
/// ends within the limit answers.
#[test]
fn recursive_ctes_count_against_memory_limit() {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    c.execute_batch("SET memory_limit = '2MB'").unwrap();
    for sql in [
        "WITH RECURSIVE t(n) AS (SELECT CAST(1 AS BIGINT) UNION SELECT n + 1 FROM t) SELECT count(*) FROM t",
        "WITH RECURSIVE t(s) AS (SELECT 'x' UNION ALL SELECT s FROM t, (VALUES (1), (2)) v(k)) SELECT count(*) FROM t",
    ] {
        let e = c.query(sql, &[]).expect_err("over the limit");
        assert_eq!((e.kind, e.sqlstate), (ErrorKind::Limit, "53200"), "{e}");
        assert!(e.message.contains("Recursive Union"), "{e}");
    }
    let r = c
        .query(
            "WITH RECURSIVE t(n) AS (SELECT 1 UNION SELECT n + 1 FROM t WHERE n < 10000) SELECT count(*) FROM t",
            &[],
        )
        .unwrap();
    assert_eq!(r.rows[0].get::<i64>(0).unwrap(), 10000);
}

#[test]
fn semi_and_anti_joins_on_keys_hold_only_the_keys() {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    wide_table(&mut c, 5);
    // 100,000 rows of an integer key and a 100-byte string: over 10 MB if a join's
    // build side kept the strings, about 3 MB for the keys alone.
    c.execute_batch(
        "CREATE TABLE wk AS SELECT CAST(substr(s, 91) AS INTEGER) AS k, s FROM w; \
         SET memory_limit = '8MB'",
    )
    .unwrap();
    for (sql, want) in [
        ("SELECT count(*) FROM d WHERE EXISTS (SELECT * FROM wk WHERE wk.k = d.i)", 10),
        ("SELECT count(*) FROM d WHERE NOT EXISTS (SELECT * FROM wk WHERE wk.k = d.i * 100000)", 9),
        ("SELECT count(*) FROM d WHERE i IN (SELECT k FROM wk)", 10),
    ] {
        let r = c.query(sql, &[]).unwrap_or_else(|e| panic!("{sql}: {e}"));
        assert_eq!(r.rows[0].get::<i64>(0).unwrap(), want, "{sql}");
    }
}
