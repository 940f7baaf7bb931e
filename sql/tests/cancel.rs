//! Cancelling statements: from another thread through `Connection::interrupt_handle`,
//! and by `statement_timeout`. A cancelled statement fails with SQLSTATE 57014 and
//! changes nothing; the connection goes on working.
//!
//! The statements cancelled here would run for minutes: if cancelling broke, the test
//! would not finish (no timing is asserted).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use beedb_sql::{Connection, Database, ErrorKind, Value};

/// A table of 2,000 rows: a three-way cross join over it is 8·10^9 rows.
fn setup() -> Connection {
    let db = Database::open(":memory:").unwrap();
    let mut conn = db.connect();
    conn.execute_batch(
        "CREATE TABLE t (a INTEGER);
         INSERT INTO t SELECT x FROM (VALUES (0),(1),(2),(3),(4),(5),(6),(7),(8),(9)) v(x);
         CREATE TABLE big (a INTEGER);",
    )
    .unwrap();
    for _ in 0..200 {
        conn.execute("INSERT INTO big SELECT a FROM t", &[]).unwrap();
    }
    conn
}

const ENDLESS: &str = "SELECT count(*) FROM big x, big y, big z";

/// Runs `sql` while another thread keeps asking to cancel it (repeatedly, so a
/// request that arrives before the statement starts cannot make the test hang).
fn run_cancelled(conn: &mut Connection, sql: &str) -> beedb_sql::Error {
    let handle = conn.interrupt_handle();
    let done = Arc::new(AtomicBool::new(false));
    let canceller = {
        let done = done.clone();
        thread::spawn(move || {
            while !done.load(Ordering::Acquire) {
                thread::sleep(Duration::from_millis(20));
                handle.interrupt();
            }
        })
    };
    let r = conn.execute(sql, &[]);
    done.store(true, Ordering::Release);
    canceller.join().unwrap();
    r.expect_err("the statement was cancelled")
}

#[test]
fn another_thread_cancels_a_query_and_the_connection_goes_on() {
    let mut conn = setup();
    let e = run_cancelled(&mut conn, ENDLESS);
    assert_eq!((e.kind, e.sqlstate), (ErrorKind::Canceled, "57014"), "{e}");
    assert_eq!(e.message, "canceling statement due to user request");
    // A request made while nothing runs does not cancel the next statement.
    conn.interrupt_handle().interrupt();
    let r = conn.query("SELECT count(*) FROM big", &[]).unwrap();
    assert_eq!(r.rows[0].0[0], Value::BigInt(2000));
}

#[test]
fn a_window_aggregate_over_sliding_frames_is_cancelled() {
    // 200,000 rows in one partition; each row's frame starts at the row, so every
    // row recomputes its sum over the rest: about 2·10^10 additions.
    let mut conn = setup();
    let e = run_cancelled(
        &mut conn,
        "SELECT count(s) FROM (SELECT sum(x.a) OVER (ORDER BY x.a ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) AS s \
         FROM big x, t y, t z) q",
    );
    assert_eq!((e.kind, e.sqlstate), (ErrorKind::Canceled, "57014"), "{e}");
    let r = conn.query("SELECT count(*) OVER () FROM t LIMIT 1", &[]).unwrap();
    assert_eq!(r.rows[0].0[0], Value::BigInt(10));
}

#[test]
fn a_cancelled_write_changes_nothing() {
    let mut conn = setup();
    let e = run_cancelled(&mut conn, "INSERT INTO big SELECT x.a FROM big x, big y, big z");
    assert_eq!(e.sqlstate, "57014", "{e}");
    let r = conn.query("SELECT count(*) FROM big", &[]).unwrap();
    assert_eq!(r.rows[0].0[0], Value::BigInt(2000));

    // In a block, the cancel aborts the block (as any error does) until ROLLBACK.
    conn.execute("BEGIN", &[]).unwrap();
    conn.execute("INSERT INTO big VALUES (1)", &[]).unwrap();
    let e = run_cancelled(&mut conn, ENDLESS);
    assert_eq!(e.sqlstate, "57014", "{e}");
    let e = conn.execute("SELECT 1", &[]).unwrap_err();
    assert_eq!(e.sqlstate, "25P02", "{e}");
    conn.execute("ROLLBACK", &[]).unwrap();
    let r = conn.query("SELECT count(*) FROM big", &[]).unwrap();
    assert_eq!(r.rows[0].0[0], Value::BigInt(2000));
}

#[test]
fn statement_timeout_cancels_long_statements_only() {
    let mut conn = setup();
    conn.execute("SET statement_timeout = '100ms'", &[]).unwrap();
    let r = conn.query("SHOW statement_timeout", &[]).unwrap();
    assert_eq!(r.rows[0].0[0], Value::Text("100ms".into()));
    let e = conn.execute(ENDLESS, &[]).unwrap_err();
    assert_eq!((e.kind, e.sqlstate), (ErrorKind::Canceled, "57014"), "{e}");
    assert_eq!(e.message, "canceling statement due to statement timeout");
    // Each statement has its own deadline.
    let r = conn.query("SELECT count(*) FROM big", &[]).unwrap();
    assert_eq!(r.rows[0].0[0], Value::BigInt(2000));
    conn.execute("SET statement_timeout = '2min'", &[]).unwrap();
    let r = conn.query("SHOW statement_timeout", &[]).unwrap();
    assert_eq!(r.rows[0].0[0], Value::Text("2min".into()));
    conn.execute("RESET statement_timeout", &[]).unwrap();
    let r = conn.query("SHOW statement_timeout", &[]).unwrap();
    assert_eq!(r.rows[0].0[0], Value::Text("0".into()));
    let e = conn.execute("SET statement_timeout = 'soon'", &[]).unwrap_err();
    assert_eq!(e.sqlstate, "22023", "{e}");
}

/// A recursion that never ends and never grows (one row per round, UNION ALL) is
/// stopped by a cancel request, and by `statement_timeout`.
#[test]
fn an_endless_recursive_cte_is_cancelled() {
    let mut conn = setup();
    let endless = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n FROM r) SELECT count(*) FROM r";
    let e = run_cancelled(&mut conn, endless);
    assert_eq!((e.kind, e.sqlstate), (ErrorKind::Canceled, "57014"), "{e}");
    conn.execute("SET statement_timeout = '100ms'", &[]).unwrap();
    let e = conn.query(endless, &[]).expect_err("timed out");
    assert_eq!(e.message, "canceling statement due to statement timeout");
    conn.execute("SET statement_timeout = 0", &[]).unwrap();
    let r = conn
        .query("WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 5) SELECT sum(n) FROM r", &[])
        .unwrap();
    assert_eq!(r.rows[0].0[0], Value::BigInt(15));
}

/// CREATE INDEX over a large table checks for a cancel while it reads the heap and
/// while it inserts the sorted entries: a cancel request and `statement_timeout`
/// stop it with 57014, and no index is left behind.
#[test]
fn create_index_on_a_large_table_is_cancelled() {
    let mut conn = setup();
    // 200,000 rows (big × t × t), keys of 40 bytes.
    conn.execute(
        "CREATE TABLE wide AS SELECT repeat('k', 36) || CAST(x.a * 100 + y.a * 10 + z.a AS text) AS k FROM big x, t y, t z",
        &[],
    )
    .unwrap();
    let e = run_cancelled(&mut conn, "CREATE INDEX wide_k ON wide (k)");
    assert_eq!((e.kind, e.sqlstate), (ErrorKind::Canceled, "57014"), "{e}");
    conn.execute("SET statement_timeout = '5ms'", &[]).unwrap();
    let e = conn.execute("CREATE INDEX wide_k ON wide (k)", &[]).expect_err("timed out");
    assert_eq!(e.message, "canceling statement due to statement timeout");
    conn.execute("SET statement_timeout = 0", &[]).unwrap();
    // Neither attempt left an index behind: the name is free and the build completes.
    conn.execute("CREATE INDEX wide_k ON wide (k)", &[]).unwrap();
    let r = conn.query("SELECT count(*) FROM wide WHERE k = repeat('k', 36) || '999'", &[]).unwrap();
    assert_eq!(r.rows[0].0[0], Value::BigInt(200));
}
