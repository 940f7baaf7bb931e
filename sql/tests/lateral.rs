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
