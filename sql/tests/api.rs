//! The Rust API end to end: open, connections, prepared statements with parameters,
//! typed row access, transactions, several connections, reopening a file, BEGIN
//! IMMEDIATE against plain BEGIN with two writers.

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

fn balance(c: &mut beedb_sql::Connection) -> i64 {
    c.query("SELECT balance FROM acct WHERE id = 1", &[]).unwrap().rows[0].get::<i64>(0).unwrap()
}

/// Why BEGIN IMMEDIATE exists: a plain BEGIN that read before another connection
/// committed cannot write (40001); with BEGIN IMMEDIATE the other writer waits
/// instead, and gets the writer timeout's error if the transaction outlasts it.
#[test]
fn begin_immediate_makes_other_writers_wait() {
    let db = Database::open(":memory:").unwrap();
    let mut a = db.connect();
    let mut b = db.connect();
    a.execute_batch("CREATE TABLE acct (id INTEGER PRIMARY KEY, balance INTEGER); INSERT INTO acct VALUES (1, 0)")
        .unwrap();
    a.execute("SET writer_timeout = '100ms'", &[]).unwrap();
    let update = "UPDATE acct SET balance = balance + 1 WHERE id = 1";

    // Plain BEGIN: a's snapshot is stale once b commits.
    a.execute("BEGIN", &[]).unwrap();
    assert_eq!(balance(&mut a), 0);
    b.execute(update, &[]).unwrap();
    let e = a.execute(update, &[]).unwrap_err();
    assert_eq!(e.sqlstate, "40001", "{e:?}");
    a.execute("ROLLBACK", &[]).unwrap();
    assert_eq!(balance(&mut a), 1);

    // BEGIN IMMEDIATE: a holds the writer from BEGIN on; b's write and b's BEGIN
    // IMMEDIATE wait and time out; a's write succeeds.
    a.execute("BEGIN IMMEDIATE", &[]).unwrap();
    assert_eq!(balance(&mut a), 1);
    let e = b.execute(update, &[]).unwrap_err();
    assert_eq!((e.kind, e.sqlstate), (ErrorKind::Transaction, "55P03"), "{e:?}");
    assert!(e.message.contains("waiting for the write lock"), "{e:?}");
    let e = b.execute("BEGIN IMMEDIATE", &[]).unwrap_err();
    assert_eq!(e.sqlstate, "55P03", "{e:?}");
    assert!(!b.in_transaction(), "a BEGIN IMMEDIATE that timed out opens no transaction");
    assert_eq!(balance(&mut b), 1, "readers are not blocked");
    a.execute(update, &[]).unwrap();
    assert_eq!(balance(&mut a), 2);
    a.execute("COMMIT", &[]).unwrap();
    b.execute(update, &[]).unwrap();
    assert_eq!(balance(&mut b), 3);

    // ROLLBACK releases the writer.
    a.execute("BEGIN EXCLUSIVE", &[]).unwrap();
    a.execute(update, &[]).unwrap();
    a.execute("ROLLBACK", &[]).unwrap();
    b.execute(update, &[]).unwrap();
    assert_eq!(balance(&mut b), 4);

    // An error ends the transaction: it stays aborted until ROLLBACK, but its writes
    // are gone and the writer is free at once.
    a.execute("BEGIN IMMEDIATE", &[]).unwrap();
    a.execute(update, &[]).unwrap();
    assert!(a.execute("SELECT 1 / 0", &[]).is_err());
    assert!(a.in_transaction());
    assert_eq!(a.execute(update, &[]).unwrap_err().sqlstate, "25P02");
    b.execute(update, &[]).unwrap();
    a.execute("ROLLBACK", &[]).unwrap();
    assert_eq!(balance(&mut a), 5);

    // A connection dropped inside the transaction releases the writer.
    a.execute("BEGIN IMMEDIATE", &[]).unwrap();
    a.execute(update, &[]).unwrap();
    drop(a);
    b.execute(update, &[]).unwrap();
    assert_eq!(balance(&mut b), 6);

    // Schema changes in a BEGIN IMMEDIATE transaction reach the other connection.
    let mut a = db.connect();
    a.execute_batch("BEGIN IMMEDIATE; ALTER TABLE acct ADD COLUMN note TEXT DEFAULT 'x'; COMMIT")
        .unwrap();
    b.execute("UPDATE acct SET note = 'y'", &[]).unwrap();
    assert_eq!(b.query("SELECT note FROM acct", &[]).unwrap().rows[0].get::<String>(0).unwrap(), "y");
}

/// Two clients running read-then-write transactions on the same row (TP1's shape):
/// with BEGIN IMMEDIATE none fails and no update is lost.
#[test]
fn begin_immediate_serializes_read_then_write_transactions() {
    const PER_THREAD: i64 = 200;
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path().join("tp1.beedb")).unwrap();
    let mut c = db.connect();
    c.execute_batch("CREATE TABLE acct (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL); INSERT INTO acct VALUES (1, 0)")
        .unwrap();
    // Generous: a shared machine may stall a transaction for a while.
    c.execute("SET writer_timeout = '60s'", &[]).unwrap();
    let handles: Vec<_> = (0..2)
        .map(|_| {
            let db = db.clone();
            std::thread::spawn(move || {
                let mut c = db.connect();
                let select = c.prepare("SELECT balance FROM acct WHERE id = $1").unwrap();
                let update = c.prepare("UPDATE acct SET balance = balance + 1 WHERE id = $1").unwrap();
                let k = [Value::Integer(1)];
                for i in 0..PER_THREAD {
                    c.execute("BEGIN IMMEDIATE", &[]).unwrap_or_else(|e| panic!("BEGIN {i}: {e:?}"));
                    let before = select.execute(&mut c, &k).unwrap().rows[0].get::<i64>(0).unwrap();
                    let r = update.execute(&mut c, &k).unwrap_or_else(|e| panic!("UPDATE {i}: {e:?}"));
                    assert_eq!(r.rows_affected, 1);
                    let after = select.execute(&mut c, &k).unwrap().rows[0].get::<i64>(0).unwrap();
                    assert_eq!(after, before + 1);
                    c.execute("COMMIT", &[]).unwrap_or_else(|e| panic!("COMMIT {i}: {e:?}"));
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(balance(&mut c), 2 * PER_THREAD);
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

/// `Connection::execute` keeps parsed statements by text: a text run again after
/// `ALTER TABLE`, `DROP INDEX` or `DROP TABLE` sees the new schema (each execution
/// plans against the current catalog), and more distinct texts than the cache holds
/// still give the same rows as fresh parses.
#[test]
fn statements_cached_by_text_follow_schema_changes() {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    c.execute_batch(
        "CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER); CREATE INDEX t_v ON t (v);
         INSERT INTO t VALUES (1, 10), (2, 20), (3, 30);",
    )
    .unwrap();
    let select = "SELECT * FROM t WHERE v = 20";
    let r = c.query(select, &[]).unwrap();
    assert_eq!(r.columns.len(), 2);
    assert_eq!(r.rows[0].get::<i64>(0).unwrap(), 2);

    c.execute("DROP INDEX t_v", &[]).unwrap();
    let r = c.query(select, &[]).unwrap();
    assert_eq!(r.rows.len(), 1);
    assert_eq!(r.rows[0].get::<i64>(0).unwrap(), 2);

    c.execute("ALTER TABLE t ADD COLUMN w TEXT", &[]).unwrap();
    let r = c.query(select, &[]).unwrap();
    assert_eq!(r.columns.len(), 3, "the cached text sees the added column");
    assert_eq!(r.columns[2].name, "w");

    // Another connection changes the schema: this one's cached text follows too.
    db.connect().execute("DROP TABLE t", &[]).unwrap();
    let e = c.query(select, &[]).unwrap_err();
    assert_eq!(e.sqlstate, "42P01", "{e}");
    // A new table of that name with its columns in another order.
    c.execute("CREATE TABLE t (v INTEGER, id INTEGER)", &[]).unwrap();
    c.execute("INSERT INTO t VALUES (20, 7)", &[]).unwrap();
    let r = c.query(select, &[]).unwrap();
    assert_eq!(r.columns[0].name, "v");
    assert_eq!(r.rows[0].0, vec![Value::Integer(20), Value::Integer(7)]);

    // More distinct texts than the cache holds, each run twice: same rows as a fresh
    // connection (which parses every text once).
    c.execute_batch("DROP TABLE t; CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER)").unwrap();
    for i in 0..100 {
        c.execute(&format!("INSERT INTO t VALUES ({i}, {})", i * 3), &[]).unwrap();
    }
    let texts: Vec<String> = (0..2 * beedb_sql::STATEMENT_CACHE_SIZE)
        .map(|i| format!("SELECT id, v FROM t WHERE id % {} = 1 ORDER BY id", i + 2))
        .collect();
    for _ in 0..2 {
        for text in texts.iter().chain(texts.iter().rev()) {
            let cached = c.query(text, &[]).unwrap();
            let fresh = db.connect().query(text, &[]).unwrap();
            assert_eq!(cached.rows, fresh.rows, "{text}");
        }
    }
    // A text that fails to parse is not cached and fails each time.
    for _ in 0..2 {
        let e = c.query("SELEC 1", &[]).unwrap_err();
        assert_eq!(e.sqlstate, "42601");
    }
}
