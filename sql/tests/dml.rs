//! Everyday DML through the Rust API: RETURNING as a result set (prepared and
//! cached), identity columns and sequences (durable, not rolled back, two
//! connections), INSERT … ON CONFLICT, with the SQLSTATEs PostgreSQL gives.

use beedb_sql::{Database, Value};

fn ints(r: &beedb_sql::QueryResult) -> Vec<Vec<i64>> {
    r.rows
        .iter()
        .map(|row| (0..row.len()).map(|i| row.get::<i64>(i).unwrap()).collect())
        .collect()
}

#[test]
fn returning_is_a_result_set_with_the_written_rows() {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    c.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER DEFAULT 7)").unwrap();
    let r = c.execute("INSERT INTO t (id) VALUES (1), (2) RETURNING id, v AS value", &[]).unwrap();
    assert!(r.has_rows());
    assert_eq!(r.tag, "INSERT 0 2");
    assert_eq!(r.rows_affected, 2);
    assert_eq!(r.columns.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["id", "value"]);
    assert_eq!(ints(&r), [[1, 7], [2, 7]]);
    // Without RETURNING a write returns no result set.
    assert!(!c.execute("INSERT INTO t VALUES (3, 3)", &[]).unwrap().has_rows());
    // Zero rows: still a result set, with its columns.
    let r = c.execute("DELETE FROM t WHERE id = 99 RETURNING *", &[]).unwrap();
    assert!(r.has_rows());
    assert_eq!((r.rows.len(), r.columns.len(), r.tag.as_str()), (0, 2, "DELETE 0"));
}

#[test]
fn prepared_returning_statements_keep_their_columns_across_executions() {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    c.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER)").unwrap();
    let ins = c.prepare("INSERT INTO t VALUES ($1, $2) RETURNING v * 10").unwrap();
    let upd = c.prepare("UPDATE t SET v = v + $2 WHERE id = $1 RETURNING id, v").unwrap();
    let del = c.prepare("DELETE FROM t WHERE id = $1 RETURNING v").unwrap();
    for i in 0..5 {
        let r = ins.execute(&mut c, &[Value::Integer(i), Value::Integer(i)]).unwrap();
        assert_eq!(ints(&r), [[i as i64 * 10]]);
    }
    for round in 1..=3 {
        // The UPDATE's plan is cached after the first execution.
        let r = upd.execute(&mut c, &[Value::Integer(2), Value::Integer(1)]).unwrap();
        assert_eq!(ints(&r), [[2, 2 + round]]);
    }
    // A schema change between executions: the cached plan is not used after it.
    c.execute("ALTER TABLE t ADD COLUMN w TEXT", &[]).unwrap();
    let r = upd.execute(&mut c, &[Value::Integer(2), Value::Integer(1)]).unwrap();
    assert_eq!(ints(&r), [[2, 6]]);
    let r = del.execute(&mut c, &[Value::Integer(2)]).unwrap();
    assert_eq!(ints(&r), [[6]]);
    let r = del.execute(&mut c, &[Value::Integer(2)]).unwrap();
    assert!(r.rows.is_empty());
    assert_eq!(r.columns.len(), 1);
}

#[test]
fn returning_errors_carry_postgresql_states() {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    c.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER)").unwrap();
    let state = |c: &mut beedb_sql::Connection, sql: &str| c.execute(sql, &[]).unwrap_err().sqlstate;
    assert_eq!(state(&mut c, "INSERT INTO t VALUES (1, 1) RETURNING sum(v)"), "42803");
    assert_eq!(state(&mut c, "INSERT INTO t VALUES (1, 1) RETURNING nope"), "42703");
    assert_eq!(state(&mut c, "UPDATE t SET v = 1 RETURNING x.*"), "42P01");
    assert_eq!(state(&mut c, "DELETE FROM t RETURNING row_number() OVER ()"), "42P20");
    assert_eq!(state(&mut c, "INSERT INTO t VALUES (1, 0) RETURNING 1 / v"), "22012");
    // Nothing was written by the failed statements.
    assert_eq!(ints(&c.query("SELECT count(*) FROM t", &[]).unwrap()), [[0]]);
}
