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
    // A table renamed in FROM, referenced by its own name: PostgreSQL's message and
    // the hint naming the alias (the innermost one that renames it), in a column
    // reference and in a qualified star.
    let e = c.execute("SELECT t.a FROM t AS x", &[]).unwrap_err();
    assert_eq!(e.sqlstate, "42P01");
    assert_eq!(e.message, "invalid reference to FROM-clause entry for table \"t\"");
    assert_eq!(e.hint.as_deref(), Some("Perhaps you meant to reference the table alias \"x\"."));
    let e = c.execute("SELECT 1 FROM t x WHERE EXISTS (SELECT 1 FROM t y WHERE t.a = 1)", &[]).unwrap_err();
    assert_eq!(e.hint.as_deref(), Some("Perhaps you meant to reference the table alias \"y\"."));
    let e = c.execute("SELECT t.* FROM t x", &[]).unwrap_err();
    assert_eq!(e.message, "invalid reference to FROM-clause entry for table \"t\"");
    let e = c.execute("SELECT u.a FROM t x", &[]).unwrap_err();
    assert_eq!(e.message, "missing FROM-clause entry for table \"u\"");
    assert_eq!(e.hint, None);
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

/// COMMIT / ROLLBACK AND CHAIN begin the next block as the ended one began: after
/// BEGIN IMMEDIATE the chained block holds the writer at once, so another writer
/// waits (and times out here).
#[test]
fn and_chain_keeps_begin_immediate() {
    let db = Database::open(":memory:").unwrap();
    let mut a = db.connect();
    let mut b = db.connect();
    a.execute_batch("CREATE TABLE acct (id INTEGER PRIMARY KEY, balance INTEGER); INSERT INTO acct VALUES (1, 0)")
        .unwrap();
    b.execute("SET writer_timeout = '100ms'", &[]).unwrap();
    let update = "UPDATE acct SET balance = balance + 1 WHERE id = 1";
    a.execute("BEGIN IMMEDIATE", &[]).unwrap();
    a.execute(update, &[]).unwrap();
    a.execute("COMMIT AND CHAIN", &[]).unwrap();
    assert!(a.in_transaction());
    assert_eq!(balance(&mut b), 1, "the first block committed");
    assert_eq!(b.execute(update, &[]).unwrap_err().sqlstate, "55P03");
    a.execute("ROLLBACK AND CHAIN", &[]).unwrap();
    assert_eq!(b.execute(update, &[]).unwrap_err().sqlstate, "55P03");
    a.execute("COMMIT", &[]).unwrap();
    b.execute(update, &[]).unwrap();
    // A plain BEGIN chains a plain block: no writer until it writes.
    a.execute("BEGIN", &[]).unwrap();
    a.execute("COMMIT AND CHAIN", &[]).unwrap();
    b.execute(update, &[]).unwrap();
    a.execute("ROLLBACK", &[]).unwrap();
    assert_eq!(balance(&mut a), 3);
}

/// A statement that does not parse aborts an open block, whichever way it came in
/// (execute, prepare, execute_batch), as PostgreSQL parses inside the block.
#[test]
fn a_syntax_error_aborts_the_block() {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    c.execute("CREATE TABLE t (a INTEGER)", &[]).unwrap();
    for bad in [
        |c: &mut beedb_sql::Connection| c.execute("SELEC 1", &[]).map(|_| ()),
        |c: &mut beedb_sql::Connection| c.prepare("INSERT INTO t VALUES (").map(|_| ()),
        |c: &mut beedb_sql::Connection| c.execute_batch("SELECT 1; SELEC 2").map(|_| ()),
    ] {
        c.execute("BEGIN", &[]).unwrap();
        c.execute("INSERT INTO t VALUES (1)", &[]).unwrap();
        assert_eq!(bad(&mut c).unwrap_err().sqlstate, "42601");
        assert_eq!(c.transaction_status(), beedb_sql::TransactionStatus::Failed);
        assert_eq!(c.execute("SELECT 1", &[]).unwrap_err().sqlstate, "25P02");
        c.execute("ROLLBACK", &[]).unwrap();
    }
    assert_eq!(c.query("SELECT count(*) FROM t", &[]).unwrap().rows[0].get::<i64>(0).unwrap(), 0);
    // An empty text is not an error in PostgreSQL: the block goes on.
    c.execute("BEGIN", &[]).unwrap();
    assert!(c.prepare("  ").is_err());
    c.execute("INSERT INTO t VALUES (1)", &[]).unwrap();
    c.execute("COMMIT", &[]).unwrap();
    // Outside a block there is nothing to abort.
    assert!(c.execute("SELEC 1", &[]).is_err());
    assert!(!c.in_transaction());
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

/// CHECK constraints are part of the stored table: after reopening they are still
/// enforced, with their names, and ALTER TABLE's changes to them are kept too.
#[test]
fn check_constraints_survive_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("check.beedb");
    {
        let db = Database::open(&path).unwrap();
        let mut c = db.connect();
        c.execute_batch(
            "CREATE TABLE t (a INTEGER CHECK (a > 0), b INTEGER, CONSTRAINT b_above_a CHECK (b > t.a));
             CREATE TABLE u (x INTEGER);
             ALTER TABLE u ADD CHECK (x <> 7);
             ALTER TABLE t RENAME COLUMN b TO bb;
             INSERT INTO t VALUES (1, 2);",
        )
        .unwrap();
    }
    let db = Database::open(&path).unwrap();
    let mut c = db.connect();
    let violated = |c: &mut beedb_sql::Connection, sql: &str| {
        let e = c.execute(sql, &[]).unwrap_err();
        assert_eq!(e.sqlstate, "23514", "{sql}: {}", e.message);
        e.message
    };
    assert!(violated(&mut c, "INSERT INTO t VALUES (0, 5)").contains("\"t_a_check\""));
    assert!(violated(&mut c, "UPDATE t SET bb = 1").contains("\"b_above_a\""));
    assert!(violated(&mut c, "INSERT INTO u VALUES (7)").contains("\"u_x_check\""));
    c.execute("ALTER TABLE u DROP CONSTRAINT u_x_check", &[]).unwrap();
    drop(c);
    drop(db);
    let db = Database::open(&path).unwrap();
    let mut c = db.connect();
    c.execute("INSERT INTO u VALUES (7)", &[]).unwrap();
    let r = c.query("SELECT sql FROM beedb_schema WHERE name = 't'", &[]).unwrap();
    let sql = r.rows[0].get::<String>(0).unwrap();
    assert!(sql.contains("CONSTRAINT b_above_a CHECK (bb > a)"), "{sql}");
}

/// FOREIGN KEY constraints are part of the stored (referencing) table: after
/// reopening they are enforced in both directions with their names and actions,
/// listed in beedb_foreign_keys and shown by beedb_schema; RENAME COLUMN and DROP
/// CONSTRAINT changes are kept.
#[test]
fn foreign_keys_survive_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fk.beedb");
    {
        let db = Database::open(&path).unwrap();
        let mut c = db.connect();
        c.execute_batch(
            "CREATE TABLE p (a INTEGER PRIMARY KEY, u INTEGER UNIQUE);
             CREATE TABLE c (b INTEGER REFERENCES p ON DELETE CASCADE, v INTEGER,
                             CONSTRAINT c_v FOREIGN KEY (v) REFERENCES p (u) ON UPDATE SET NULL);
             CREATE TABLE d (x INTEGER);
             ALTER TABLE d ADD FOREIGN KEY (x) REFERENCES p;
             ALTER TABLE p RENAME COLUMN u TO uu;
             INSERT INTO p VALUES (1, 10), (2, 20);
             INSERT INTO c VALUES (1, 10), (2, 20);
             INSERT INTO d VALUES (2);",
        )
        .unwrap();
        // MATCH FULL and deferrable constraints are refused, not ignored.
        let e = c.execute("CREATE TABLE e (x INTEGER REFERENCES p MATCH FULL)", &[]).unwrap_err();
        assert_eq!(e.sqlstate, "0A000", "{}", e.message);
        let e = c.execute("CREATE TABLE e (x INTEGER REFERENCES p DEFERRABLE INITIALLY DEFERRED)", &[]).unwrap_err();
        assert_eq!(e.sqlstate, "0A000", "{}", e.message);
    }
    let db = Database::open(&path).unwrap();
    let mut c = db.connect();
    let e = c.execute("INSERT INTO c VALUES (3, NULL)", &[]).unwrap_err();
    assert_eq!(e.sqlstate, "23503", "{}", e.message);
    assert_eq!(e.message, "insert or update on table \"c\" violates foreign key constraint \"c_b_fkey\"");
    assert_eq!(e.detail.as_deref(), Some("Key (b)=(3) is not present in table \"p\"."));
    let e = c.execute("DELETE FROM p WHERE a = 2", &[]).unwrap_err();
    assert_eq!(e.message, "update or delete on table \"p\" violates foreign key constraint \"d_x_fkey\" on table \"d\"");
    assert_eq!(e.detail.as_deref(), Some("Key (a)=(2) is still referenced from table \"d\"."));
    c.execute("DELETE FROM p WHERE a = 1", &[]).unwrap();
    c.execute("UPDATE p SET uu = 21 WHERE a = 2", &[]).unwrap();
    let r = c.query("SELECT b, v FROM c", &[]).unwrap();
    assert_eq!(r.rows.len(), 1);
    assert_eq!(r.rows[0].get::<i32>(0).unwrap(), 2);
    assert!(r.rows[0].get::<Option<i32>>(1).unwrap().is_none());
    let r = c
        .query(
            "SELECT constraint_name, table_name, columns, referenced_table, referenced_columns, on_delete, on_update \
             FROM beedb_foreign_keys ORDER BY constraint_name",
            &[],
        )
        .unwrap();
    let rows: Vec<Vec<String>> =
        r.rows.iter().map(|row| (0..7).map(|i| row.get::<String>(i).unwrap()).collect()).collect();
    assert_eq!(
        rows,
        vec![
            vec!["c_b_fkey", "c", "b", "p", "a", "CASCADE", "NO ACTION"],
            vec!["c_v", "c", "v", "p", "uu", "NO ACTION", "SET NULL"],
            vec!["d_x_fkey", "d", "x", "p", "a", "NO ACTION", "NO ACTION"],
        ]
    );
    let r = c.query("SELECT sql FROM beedb_schema WHERE name = 'c'", &[]).unwrap();
    let sql = r.rows[0].get::<String>(0).unwrap();
    assert!(sql.contains("CONSTRAINT c_b_fkey FOREIGN KEY (b) REFERENCES p (a) ON DELETE CASCADE"), "{sql}");
    c.execute("ALTER TABLE d DROP CONSTRAINT d_x_fkey", &[]).unwrap();
    drop(c);
    drop(db);
    let db = Database::open(&path).unwrap();
    let mut c = db.connect();
    c.execute("INSERT INTO d VALUES (99)", &[]).unwrap();
    let e = c.execute("DROP TABLE p", &[]).unwrap_err();
    assert_eq!(e.sqlstate, "2BP01", "{}", e.message);
}

/// Every isolation level runs as BeeDB's one, serializable: SHOW names that level
/// outside a block and for a plain BEGIN (PostgreSQL's default is read committed);
/// a level BeeDB cannot give (SQL Server's SNAPSHOT) is 0A000. A READ ONLY block
/// refuses writes with 25006 and aborts.
#[test]
fn transaction_characteristics() {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    let show = |c: &mut beedb_sql::Connection, what: &str| {
        c.query(&format!("SHOW {what}"), &[]).unwrap().rows[0].get::<String>(0).unwrap()
    };
    assert_eq!(show(&mut c, "transaction_isolation"), "serializable");
    assert_eq!(show(&mut c, "transaction_read_only"), "off");
    c.execute("BEGIN", &[]).unwrap();
    assert_eq!(show(&mut c, "transaction_isolation"), "serializable");
    c.execute("COMMIT", &[]).unwrap();
    let e = c.execute("BEGIN ISOLATION LEVEL SNAPSHOT", &[]).unwrap_err();
    assert_eq!(e.sqlstate, "0A000", "{}", e.message);
    c.execute_batch("CREATE TABLE t (a INTEGER); BEGIN READ ONLY").unwrap();
    let e = c.execute("INSERT INTO t VALUES (1)", &[]).unwrap_err();
    assert_eq!((e.sqlstate, e.message.as_str()), ("25006", "cannot execute INSERT in a read-only transaction"));
    let e = c.execute("SELECT 1", &[]).unwrap_err();
    assert_eq!(e.sqlstate, "25P02");
    c.execute("ROLLBACK", &[]).unwrap();
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

/// A database opened read-only answers queries and refuses writes with a clear error;
/// nothing is written (issue 16: reading a database whose disk is full).
#[test]
fn read_only_databases_answer_queries_and_refuse_writes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ro.beedb");
    {
        let db = Database::open(&path).unwrap();
        let mut c = db.connect();
        c.execute_batch("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1), (2)").unwrap();
    }
    let bytes = std::fs::read(&path).unwrap();
    let options = beedb_sql::DatabaseOptions {
        storage: beedb_storage::StoreOptions { read_only: true, ..Default::default() },
    };
    let db = Database::open_with(&path, options).unwrap();
    let mut c = db.connect();
    let r = c.query("SELECT sum(x) FROM t", &[]).unwrap();
    assert_eq!(r.rows[0].get::<i64>(0).unwrap(), 3);
    for sql in ["INSERT INTO t VALUES (3)", "CREATE TABLE u (y INTEGER)"] {
        let e = c.execute(sql, &[]).unwrap_err();
        assert!(e.message.contains("read-only"), "{sql}: {e}");
    }
    assert_eq!(c.query("SELECT count(*) FROM t", &[]).unwrap().rows[0].get::<i64>(0).unwrap(), 2);
    drop(c);
    drop(db);
    assert_eq!(std::fs::read(&path).unwrap(), bytes, "the file is unchanged");
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

/// A prepared statement keeps its plan across executions; a plan made before
/// `DROP INDEX`, `ALTER TABLE` or `DROP TABLE` is never used after it.
#[test]
fn cached_plans_are_not_used_after_schema_changes() {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    c.execute_batch(
        "CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER); CREATE INDEX t_v ON t (v);
         INSERT INTO t VALUES (1, 10), (2, 20), (3, 20);",
    )
    .unwrap();
    let by_v = c.prepare("SELECT * FROM t WHERE v = $1 ORDER BY id").unwrap();
    let ids = |c: &mut beedb_sql::Connection, v: i32| -> Vec<i64> {
        let r = by_v.execute(c, &[Value::Integer(v)]).unwrap();
        r.rows.iter().map(|r| r.get::<i64>(0).unwrap()).collect()
    };
    assert_eq!(ids(&mut c, 20), [2, 3]);
    assert_eq!(ids(&mut c, 10), [1]);

    // After DROP INDEX the index is no longer kept: a plan still reading it would
    // miss the rows inserted since.
    c.execute("DROP INDEX t_v", &[]).unwrap();
    c.execute("INSERT INTO t VALUES (4, 20), (5, 10)", &[]).unwrap();
    assert_eq!(ids(&mut c, 20), [2, 3, 4]);
    assert_eq!(ids(&mut c, 10), [1, 5]);
    // A new index of that name on another column.
    c.execute("CREATE INDEX t_v ON t (id)", &[]).unwrap();
    c.execute("INSERT INTO t VALUES (6, 20)", &[]).unwrap();
    assert_eq!(ids(&mut c, 20), [2, 3, 4, 6]);

    // ALTER TABLE: the cached UPDATE and SELECT plans knew two columns.
    let set_v = c.prepare("UPDATE t SET v = $2 WHERE id = $1").unwrap();
    set_v.execute(&mut c, &[Value::Integer(1), Value::Integer(11)]).unwrap();
    c.execute("ALTER TABLE t ADD COLUMN w TEXT", &[]).unwrap();
    c.execute("UPDATE t SET w = 'kept'", &[]).unwrap();
    let r = set_v.execute(&mut c, &[Value::Integer(1), Value::Integer(12)]).unwrap();
    assert_eq!(r.rows_affected, 1);
    let r = by_v.execute(&mut c, &[Value::Integer(12)]).unwrap();
    assert_eq!(r.columns.len(), 3, "the SELECT sees the added column");
    assert_eq!(r.rows[0].0, vec![Value::Integer(1), Value::Integer(12), Value::Text("kept".into())]);
    let delete = c.prepare("DELETE FROM t WHERE id = $1").unwrap();
    delete.execute(&mut c, &[Value::Integer(6)]).unwrap();

    // Inside a block the transaction's own schema change counts too.
    c.execute("BEGIN", &[]).unwrap();
    c.execute("ALTER TABLE t DROP COLUMN w", &[]).unwrap();
    let r = by_v.execute(&mut c, &[Value::Integer(12)]).unwrap();
    assert_eq!(r.columns.len(), 2);
    c.execute("ROLLBACK", &[]).unwrap();
    assert_eq!(by_v.execute(&mut c, &[Value::Integer(12)]).unwrap().columns.len(), 3);

    // DROP TABLE from another connection; then a table of that name whose columns
    // are in another order.
    db.connect().execute("DROP TABLE t", &[]).unwrap();
    assert_eq!(by_v.execute(&mut c, &[Value::Integer(12)]).unwrap_err().sqlstate, "42P01");
    assert_eq!(
        set_v.execute(&mut c, &[Value::Integer(1), Value::Integer(2)]).unwrap_err().sqlstate,
        "42P01"
    );
    assert_eq!(delete.execute(&mut c, &[Value::Integer(1)]).unwrap_err().sqlstate, "42P01");
    c.execute_batch("CREATE TABLE t (v INTEGER, id INTEGER); INSERT INTO t VALUES (12, 1), (12, 2)")
        .unwrap();
    set_v.execute(&mut c, &[Value::Integer(2), Value::Integer(13)]).unwrap();
    let r = by_v.execute(&mut c, &[Value::Integer(12)]).unwrap();
    assert_eq!(r.rows.iter().map(|r| r.0.clone()).collect::<Vec<_>>(), vec![vec![
        Value::Integer(12),
        Value::Integer(1)
    ]]);
    delete.execute(&mut c, &[Value::Integer(1)]).unwrap();
    assert_eq!(by_v.execute(&mut c, &[Value::Integer(12)]).unwrap().rows.len(), 0);
}

/// Differential: prepared statements run many times with changing parameters (cached
/// plans) give the same rows and changes as each statement planned fresh on a new
/// connection.
#[test]
fn cached_and_fresh_plans_agree() {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    let schema = "CREATE TABLE a (id INTEGER PRIMARY KEY, g INTEGER, x DOUBLE PRECISION, s TEXT);
         CREATE INDEX a_g ON a (g);
         CREATE TABLE b (g INTEGER PRIMARY KEY, name TEXT);";
    c.execute_batch(schema).unwrap();
    for g in 0..10 {
        c.execute("INSERT INTO b VALUES ($1, $2)", &[Value::Integer(g), Value::Text(format!("g{g}"))])
            .unwrap();
    }
    for i in 0..300 {
        c.execute(
            "INSERT INTO a VALUES ($1, $2, $3, $4)",
            &[Value::Integer(i), Value::Integer(i % 10), Value::Double(i as f64 / 7.0), Value::Text(format!("s{}", i % 13))],
        )
        .unwrap();
    }
    let queries = [
        "SELECT * FROM a WHERE id = $1",
        "SELECT id, s FROM a WHERE g = $1 AND id > $2 ORDER BY id",
        "SELECT g, count(*), sum(x) FROM a WHERE id BETWEEN $1 AND $2 GROUP BY g ORDER BY g",
        "SELECT a.id, b.name FROM a JOIN b ON a.g = b.g WHERE a.id < $1 AND b.g <> $2 ORDER BY a.id",
        "SELECT id FROM a WHERE s = (SELECT max(s) FROM a WHERE g = $1) AND id > $2 ORDER BY id",
    ];
    let prepared: Vec<_> = queries.iter().map(|q| c.prepare(q).unwrap()).collect();
    let update = c.prepare("UPDATE a SET x = x + $2, s = s || 'u' WHERE g = $1 AND id % 3 = 0").unwrap();
    let delete = c.prepare("DELETE FROM a WHERE id = $1").unwrap();
    let twin = Database::open(":memory:").unwrap();
    twin.connect().execute_batch(&format!("{schema}\n{}", dump(&mut c))).unwrap();
    for round in 0..20i32 {
        for (q, stmt) in queries.iter().zip(&prepared) {
            let params = [Value::Integer(round % 10), Value::Integer(round * 7)];
            let params = &params[..stmt.param_count()];
            let cached = stmt.execute(&mut c, params).unwrap();
            let fresh = twin.connect().query(q, params).unwrap();
            assert_eq!(cached.rows, fresh.rows, "{q} with {params:?}");
        }
        let params = [Value::Integer(round % 10), Value::Double(0.5)];
        let cached = update.execute(&mut c, &params).unwrap();
        let fresh = twin.connect().execute(update.sql(), &params).unwrap();
        assert_eq!(cached.rows_affected, fresh.rows_affected);
        let params = [Value::Integer(round * 11)];
        delete.execute(&mut c, &params).unwrap();
        twin.connect().execute(delete.sql(), &params).unwrap();
    }
    assert_eq!(dump(&mut c), dump(&mut twin.connect()));
}

/// Table `a` and `b` as INSERT statements (the differential test's comparison).
fn dump(c: &mut beedb_sql::Connection) -> String {
    let mut out = String::new();
    for (table, cols) in [("b", "g, name"), ("a", "id, g, x, s")] {
        let r = c.query(&format!("SELECT {cols} FROM {table} ORDER BY 1"), &[]).unwrap();
        for row in &r.rows {
            let values: Vec<String> = row
                .values()
                .iter()
                .map(|v| match v {
                    Value::Text(s) => format!("'{s}'"),
                    other => other.to_string(),
                })
                .collect();
            out.push_str(&format!("INSERT INTO {table} VALUES ({});\n", values.join(", ")));
        }
    }
    out
}

#[test]
fn window_frame_offsets_take_parameters_per_execution() {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    c.execute_batch(
        "CREATE TABLE t (id INTEGER, x INTEGER); \
         INSERT INTO t VALUES (1, 1), (2, 2), (3, 4), (4, 8), (5, 16)",
    )
    .unwrap();
    let rows = c
        .prepare("SELECT sum(x) OVER (ORDER BY id ROWS BETWEEN $1 PRECEDING AND CURRENT ROW) FROM t ORDER BY id")
        .unwrap();
    let range = c
        .prepare("SELECT count(*) OVER (ORDER BY x RANGE BETWEEN $1 PRECEDING AND $2 FOLLOWING) FROM t ORDER BY id")
        .unwrap();
    let column = |r: beedb_sql::QueryResult| -> Vec<i64> {
        r.rows.iter().map(|row| row.get::<i64>(0).unwrap()).collect()
    };
    // The same prepared statement (and cached plan) with different offsets.
    assert_eq!(column(rows.execute(&mut c, &[Value::BigInt(0)]).unwrap()), [1, 2, 4, 8, 16]);
    assert_eq!(column(rows.execute(&mut c, &[Value::BigInt(1)]).unwrap()), [1, 3, 6, 12, 24]);
    assert_eq!(column(rows.execute(&mut c, &[Value::Integer(10)]).unwrap()), [1, 3, 7, 15, 31]);
    assert_eq!(
        column(range.execute(&mut c, &[Value::BigInt(3), Value::BigInt(0)]).unwrap()),
        [1, 2, 3, 1, 1]
    );
    assert_eq!(
        column(range.execute(&mut c, &[Value::BigInt(0), Value::BigInt(100)]).unwrap()),
        [5, 4, 3, 2, 1]
    );
    let e = rows.execute(&mut c, &[Value::BigInt(-1)]).unwrap_err();
    assert_eq!(e.sqlstate, "22013", "{e}");
    let e = rows.execute(&mut c, &[Value::Null]).unwrap_err();
    assert_eq!(e.sqlstate, "22004", "{e}");
}

/// SAVEPOINT through the API: ROLLBACK TO recovers an aborted block (which keeps its
/// write lock meanwhile, as PostgreSQL keeps its locks), a block without savepoints
/// gives the lock up at its error, and the bee cache's relation sizes return to the
/// savepoint with the rows.
#[test]
fn savepoints_recover_aborted_blocks() {
    let db = Database::open(":memory:").unwrap();
    let mut a = db.connect();
    let mut b = db.connect();
    b.execute("SET writer_timeout = '100ms'", &[]).unwrap();
    a.execute_batch("CREATE TABLE t (a INTEGER UNIQUE); INSERT INTO t VALUES (1)").unwrap();
    let sizes = |db: &Database| (0..64).map(|id| db.bees().relation_size(id)).collect::<Vec<_>>();
    let count = |c: &mut beedb_sql::Connection| {
        c.query("SELECT count(*) FROM t", &[]).unwrap().rows[0].get::<i64>(0).unwrap()
    };

    let e = a.execute("SAVEPOINT s", &[]).unwrap_err();
    assert_eq!(e.sqlstate, "25P01");
    a.execute_batch("BEGIN; INSERT INTO t VALUES (2); SAVEPOINT s").unwrap();
    let before = sizes(&db);
    a.execute("INSERT INTO t SELECT g FROM generate_series(10, 109) g", &[]).unwrap();
    assert_ne!(sizes(&db), before, "the insert counts toward the table's size");
    let e = a.execute("INSERT INTO t VALUES (1)", &[]).unwrap_err();
    assert_eq!(e.sqlstate, "23505");
    assert_eq!(a.execute("SELECT 1", &[]).unwrap_err().sqlstate, "25P02");
    assert_eq!(a.execute("ROLLBACK TO nope", &[]).unwrap_err().sqlstate, "3B001");
    // Aborted, but recoverable: the write lock is still held.
    assert_eq!(b.execute("INSERT INTO t VALUES (3)", &[]).unwrap_err().sqlstate, "55P03");
    a.execute("ROLLBACK TO SAVEPOINT s", &[]).unwrap();
    assert_eq!(sizes(&db), before, "relation sizes back at the savepoint");
    assert_eq!(count(&mut a), 2);
    a.execute("COMMIT", &[]).unwrap();
    assert_eq!(count(&mut b), 2);

    // Without a savepoint the aborted block is rolled back at once.
    a.execute_batch("BEGIN; INSERT INTO t VALUES (4)").unwrap();
    assert!(a.execute("INSERT INTO t VALUES (1)", &[]).is_err());
    b.execute("INSERT INTO t VALUES (5)", &[]).unwrap();
    assert_eq!(a.execute("ROLLBACK TO s", &[]).unwrap_err().sqlstate, "3B001");
    a.execute("ROLLBACK", &[]).unwrap();
    assert_eq!(count(&mut a), 3);
}

/// Clauses BeeDB parses but does not implement are refused with SQLSTATE 0A000 and
/// change nothing (`unsupported_clauses.slt` has the messages).
#[test]
fn unimplemented_clauses_are_refused_with_0a000() {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    c.execute_batch("CREATE TABLE t (a INTEGER, b TEXT)").unwrap();
    for sql in [
        "SELECT * FROM t TABLESAMPLE BERNOULLI (50)",
        "SELECT * FROM generate_series(1, 3) WITH ORDINALITY",
        "CREATE TEMP TABLE tt (a INTEGER)",
        "CREATE UNLOGGED TABLE tt (a INTEGER)",
        "CREATE TABLE tt (a INTEGER) PARTITION BY RANGE (a)",
        "CREATE TABLE tt (c INTEGER) INHERITS (t)",
        "CREATE UNIQUE INDEX ti ON t (b) NULLS NOT DISTINCT",
        "CREATE INDEX ti ON t USING hash (a)",
        "CREATE TABLE tt (a INTEGER PRIMARY KEY DEFERRABLE)",
        "SET LOCAL statement_timeout = 10",
    ] {
        let e = c.execute(sql, &[]).unwrap_err();
        assert_eq!(e.sqlstate, "0A000", "{sql}: {}", e.message);
        assert!(e.message.contains("not supported"), "{sql}: {}", e.message);
    }
    assert!(c.execute("SELECT * FROM tt", &[]).is_err(), "a refused CREATE made nothing");
}
