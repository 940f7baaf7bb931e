//! The Rust API end to end: open, connections, prepared statements with parameters,
//! typed row access, transactions, several connections, reopening a file.

use beedb_sql::{Database, ErrorKind, Value};

#[test]
fn prepared_statements_with_both_parameter_styles() {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    c.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, price NUMERIC(10,2))")
        .unwrap();
    let ins = c.prepare("INSERT INTO t VALUES ($1, $2, $3)").unwrap();
    assert_eq!(ins.param_count(), 3);
    for i in 0..10 {
        ins.execute(
            &mut c,
            &[Value::Integer(i), Value::Text(format!("n{i}")), Value::Text(format!("{i}.5"))],
        )
        .unwrap();
    }
    let q = c.prepare("SELECT name, price FROM t WHERE id = ?").unwrap();
    let r = q.execute(&mut c, &[Value::Integer(7)]).unwrap();
    assert_eq!(r.rows.len(), 1);
    assert_eq!(r.rows[0].get::<String>(0).unwrap(), "n7");
    assert_eq!(r.rows[0].get::<f64>(1).unwrap(), 7.5);
    assert_eq!(r.columns[0].name, "name");
    let e = q.execute(&mut c, &[]).unwrap_err();
    assert_eq!(e.sqlstate, "08P01");
    let r = c.query("SELECT count(*) FROM t", &[]).unwrap();
    assert_eq!(r.rows[0].get::<i64>(0).unwrap(), 10);
}

#[test]
fn errors_carry_positions_and_states() {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    let e = c.execute("SELECT nope FROM missing", &[]).unwrap_err();
    assert_eq!(e.sqlstate, "42P01");
    assert_eq!(e.position, Some(17));
    c.execute_batch("CREATE TABLE t (a INTEGER)").unwrap();
    let e = c.execute("SELECT a, b FROM t", &[]).unwrap_err();
    assert_eq!(e.sqlstate, "42703");
    assert_eq!(e.position, Some(10));
    let e = c.execute("SELECT 1/0", &[]).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Data);
    assert_eq!(e.message, "division by zero");
}

#[test]
fn transactions_roll_back_and_abort() {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    c.execute_batch("CREATE TABLE t (a INTEGER UNIQUE)").unwrap();
    c.execute_batch("BEGIN; INSERT INTO t VALUES (1); ROLLBACK").unwrap();
    assert_eq!(c.query("SELECT count(*) FROM t", &[]).unwrap().rows[0].get::<i64>(0).unwrap(), 0);
    c.execute_batch("BEGIN; INSERT INTO t VALUES (1)").unwrap();
    assert!(c.in_transaction());
    assert!(c.execute("INSERT INTO t VALUES (1)", &[]).is_err());
    let e = c.execute("SELECT 1", &[]).unwrap_err();
    assert_eq!(e.sqlstate, "25P02");
    c.execute("COMMIT", &[]).unwrap();
    assert!(!c.in_transaction());
    assert_eq!(c.query("SELECT count(*) FROM t", &[]).unwrap().rows[0].get::<i64>(0).unwrap(), 0);
}

#[test]
fn connections_share_the_database_with_snapshots() {
    let db = Database::open(":memory:").unwrap();
    let mut a = db.connect();
    let mut b = db.connect();
    a.execute_batch("CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (1)").unwrap();
    b.execute_batch("BEGIN").unwrap();
    assert_eq!(b.query("SELECT count(*) FROM t", &[]).unwrap().rows[0].get::<i64>(0).unwrap(), 1);
    a.execute("INSERT INTO t VALUES (2)", &[]).unwrap();
    // b keeps its snapshot…
    assert_eq!(b.query("SELECT count(*) FROM t", &[]).unwrap().rows[0].get::<i64>(0).unwrap(), 1);
    // …and may not write on top of a state it did not see.
    let e = b.execute("INSERT INTO t VALUES (3)", &[]).unwrap_err();
    assert_eq!(e.sqlstate, "40001");
    b.execute("ROLLBACK", &[]).unwrap();
    assert_eq!(b.query("SELECT count(*) FROM t", &[]).unwrap().rows[0].get::<i64>(0).unwrap(), 2);
}

#[test]
fn a_file_database_keeps_schema_and_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("keep.beedb");
    {
        let db = Database::open(&path).unwrap();
        let mut c = db.connect();
        c.execute_batch(
            "CREATE TABLE t (id INTEGER PRIMARY KEY, d DATE, s VARCHAR(10));
             CREATE INDEX t_d ON t (d);
             CREATE VIEW v AS SELECT id, s FROM t WHERE id > 1;
             INSERT INTO t VALUES (1, DATE '2024-01-01', 'a'), (2, DATE '2024-02-01', 'b');",
        )
        .unwrap();
    }
    let db = Database::open(&path).unwrap();
    let mut c = db.connect();
    let r = c.query("SELECT s FROM v", &[]).unwrap();
    assert_eq!(r.rows.len(), 1);
    assert_eq!(r.rows[0].get::<String>(0).unwrap(), "b");
    let r = c.query("SELECT id FROM t WHERE d = DATE '2024-01-01'", &[]).unwrap();
    assert_eq!(r.rows[0].get::<i32>(0).unwrap(), 1);
    let e = c.execute("INSERT INTO t VALUES (1, NULL, NULL)", &[]).unwrap_err();
    assert_eq!(e.sqlstate, "23505");
}

#[test]
fn connections_work_from_several_threads() {
    fn send<T: Send>() {}
    fn sync<T: Sync>() {}
    send::<beedb_sql::Connection>();
    send::<Database>();
    sync::<Database>();
    let db = Database::open(":memory:").unwrap();
    db.connect().execute_batch("CREATE TABLE t (k INTEGER PRIMARY KEY)").unwrap();
    let handles: Vec<_> = (0..4)
        .map(|i| {
            let db = db.clone();
            std::thread::spawn(move || {
                let mut c = db.connect();
                for j in 0..25 {
                    c.execute("INSERT INTO t VALUES ($1)", &[Value::Integer(i * 100 + j)]).unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let mut c = db.connect();
    assert_eq!(c.query("SELECT count(*) FROM t", &[]).unwrap().rows[0].get::<i64>(0).unwrap(), 100);
}
