//! Result streams (`Connection::query_stream`, issue 14): a query's rows come from the
//! executor batch by batch, in bounded memory; errors midway reach the reader;
//! dropping a stream cancels its statement and leaves the connection (and its block)
//! usable; another statement on the connection first runs the open stream to its end;
//! `interrupt`, `statement_timeout` and `memory_limit` apply.

use std::time::Duration;

use beedb_sql::{Connection, Database, ErrorKind, TransactionStatus, Value};

fn connect() -> Connection {
    Database::open(":memory:").unwrap().connect()
}

fn count_and_sum(stream: &mut beedb_sql::ResultStream) -> (u64, i64) {
    let (mut n, mut sum) = (0u64, 0i64);
    while let Some(batch) = stream.next_batch().unwrap() {
        for k in 0..batch.len() {
            n += 1;
            sum += batch.row(k).get::<i64>(0).unwrap();
        }
    }
    (n, sum)
}

/// The peak resident set of this process so far, in bytes (`VmHWM`).
fn peak_rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    let kb: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb * 1024
}

/// Runs `test` alone in a child process with `BEEDB_MEMORY_CHILD` set (so the peak
/// RSS is its own, not that of tests running beside it); returns what it printed
/// after `measured:`.
fn measure_in_child(test: &str) -> String {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test, "--nocapture", "--test-threads", "1"])
        .env("BEEDB_MEMORY_CHILD", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "child failed: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let (_, after) = stdout.split_once("measured:").unwrap_or_else(|| panic!("no measurement in: {stdout}"));
    after.lines().next().unwrap_or_default().trim().to_string()
}

const MILLION: &str = "SELECT i, 'row ' || CAST(i AS text) FROM generate_series(1, 1000000) AS g(i)";

/// A million rows of a number and a short string, read batch by batch: the peak
/// RSS grows by a few MB, where the same query materialized grows it by over 100 MB.
/// Measured in a child process (VmHWM before and after each step).
#[test]
fn a_million_rows_stream_in_bounded_memory() {
    if std::env::var_os("BEEDB_MEMORY_CHILD").is_none() {
        let measured = measure_in_child("a_million_rows_stream_in_bounded_memory");
        let mut words = measured.split_whitespace().map(|w| w.parse::<u64>().unwrap());
        let (streamed, materialized) = (words.next().unwrap(), words.next().unwrap());
        println!("peak RSS growth: streamed {} KB, materialized {} KB", streamed >> 10, materialized >> 10);
        assert!(streamed < 16 << 20, "streaming grew the peak RSS by {} MB", streamed >> 20);
        assert!(materialized > 4 * streamed, "materialized {materialized} vs streamed {streamed}");
        return;
    }
    let mut c = connect();
    let before = peak_rss_bytes();
    let mut stream = c.query_stream(MILLION, &[]).unwrap();
    assert_eq!(stream.columns().len(), 2);
    let (mut n, mut sum, mut batches) = (0u64, 0i64, 0u64);
    while let Some(batch) = stream.next_batch().unwrap() {
        batches += 1;
        for k in 0..batch.len() {
            n += 1;
            sum += match batch.value(k, 0) {
                Value::Integer(v) => v as i64,
                Value::BigInt(v) => v,
                other => panic!("{other:?}"),
            };
        }
    }
    assert_eq!((n, sum), (1_000_000, 500_000_500_000));
    assert!(batches >= 900, "{batches} batches");
    assert_eq!(stream.tag().as_deref(), Some("SELECT 1000000"));
    drop(stream);
    let streamed = peak_rss_bytes() - before;
    let before = peak_rss_bytes();
    let all = c.query(MILLION, &[]).unwrap();
    assert_eq!(all.rows.len(), 1_000_000);
    let materialized = peak_rss_bytes() - before;
    println!("measured: {streamed} {materialized}");
}

/// Rows read one at a time (the iterator) give the same result as batches, with
/// bees on and off, over a table scan with a predicate.
#[test]
fn rows_and_batches_agree_with_bees_on_and_off() {
    let mut c = connect();
    c.execute_batch("CREATE TABLE t (a BIGINT, b TEXT); INSERT INTO t SELECT i, 'x' || CAST(i AS text) FROM generate_series(1, 200000) g(i)").unwrap();
    let sql = "SELECT a, b FROM t WHERE a % 7 = 3";
    let want = c.query(sql, &[]).unwrap().rows;
    for bees in ["on", "off"] {
        c.execute(&format!("SET bees = {bees}"), &[]).unwrap();
        let rows: Vec<_> = c.query_stream(sql, &[]).unwrap().map(|r| r.unwrap()).collect();
        assert_eq!(rows, want, "bees {bees}");
        let mut s = c.query_stream(sql, &[]).unwrap();
        let mut batched = Vec::new();
        // Mixed: a few rows, then the rest of that batch, then whole batches.
        for _ in 0..3 {
            batched.push(s.next_row().unwrap().unwrap());
        }
        while let Some(b) = s.next_batch().unwrap() {
            batched.extend(b.into_rows());
        }
        assert_eq!(batched, want, "bees {bees}");
        assert_eq!(s.rows_affected(), Some(want.len() as u64));
    }
}

/// A query expected to return few rows runs at once; other statements run to their
/// end; both come back as streams that read like any other.
#[test]
fn small_results_and_other_statements_come_back_as_streams() {
    let mut c = connect();
    let mut s = c.query_stream("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)", &[]).unwrap();
    assert!(!s.has_rows());
    assert_eq!(s.tag().as_deref(), Some("CREATE TABLE"));
    assert!(s.next_row().unwrap().is_none());
    let s = c.query_stream("INSERT INTO t VALUES (1, 'one'), (2, 'two')", &[]).unwrap();
    assert_eq!(s.rows_affected(), Some(2));
    let stmt = c.prepare("SELECT v FROM t WHERE id = $1").unwrap();
    for _ in 0..3 {
        let mut s = stmt.query_stream(&mut c, &[Value::Integer(2)]).unwrap();
        assert_eq!(s.columns()[0].name, "v");
        assert_eq!(s.rows_affected(), None, "unknown before the end");
        assert_eq!(s.next_row().unwrap().unwrap().get::<String>(0).unwrap(), "two");
        assert!(s.next_row().unwrap().is_none());
        assert_eq!(s.tag().as_deref(), Some("SELECT 1"));
    }
    let e = stmt.query_stream(&mut c, &[]).unwrap_err();
    assert_eq!(e.sqlstate, "08P01");
    let e = c.query_stream("SELECT nope FROM t", &[]).unwrap_err();
    assert_eq!(e.sqlstate, "42703", "a planning error is returned at once");
}

/// An error the executor meets midway reaches the reader after the rows before it;
/// in autocommit the connection goes on, in a block the block is aborted as after a
/// materialized query's error.
#[test]
fn an_error_midway_reaches_the_reader() {
    let sql = "SELECT 1000 / (50000 - x) FROM generate_series(1, 100000) g(x)";
    let mut c = connect();
    for in_block in [false, true] {
        if in_block {
            c.execute("BEGIN", &[]).unwrap();
        }
        let mut s = c.query_stream(sql, &[]).unwrap();
        let mut rows = 0u64;
        let e = loop {
            match s.next_batch() {
                Ok(Some(b)) => rows += b.len() as u64,
                Ok(None) => panic!("no error"),
                Err(e) => break e,
            }
        };
        assert_eq!(e.sqlstate, "22012", "{e}");
        assert!(rows > 0 && rows < 50_000, "{rows} rows before the error");
        assert!(s.next_batch().unwrap().is_none(), "the stream ends after its error");
        drop(s);
        if in_block {
            assert_eq!(c.transaction_status(), TransactionStatus::Failed);
            assert_eq!(c.execute("SELECT 1", &[]).unwrap_err().sqlstate, "25P02");
            c.execute("ROLLBACK", &[]).unwrap();
        }
        assert_eq!(c.query("SELECT 2", &[]).unwrap().rows[0].get::<i32>(0).unwrap(), 2);
    }
}

/// Dropping a stream before its end cancels the statement, even one blocked in a
/// sort of 50M rows that would run for minutes, and the connection goes on: in a
/// block, the block (and the write lock it holds) stays, and commits.
#[test]
fn dropping_a_stream_cancels_and_frees_the_connection() {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    c.execute_batch("CREATE TABLE t (a INTEGER)").unwrap();
    // Blocked in the sort's input loop: no batch reaches the queue for minutes.
    let s = c.query_stream("SELECT x FROM generate_series(1, 50000000) g(x) ORDER BY x DESC", &[]).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    drop(s);
    // Stopped at its second batch, with the first read.
    let mut s = c.query_stream("SELECT x FROM generate_series(1, 50000000) g(x)", &[]).unwrap();
    assert_eq!(s.next_row().unwrap().unwrap().get::<i64>(0).unwrap(), 1);
    drop(s);
    assert_eq!(c.query("SELECT 3", &[]).unwrap().rows[0].get::<i32>(0).unwrap(), 3);

    c.execute_batch("BEGIN; INSERT INTO t VALUES (1)").unwrap();
    let mut s = c.query_stream("SELECT a + x FROM t, generate_series(1, 50000000) g(x)", &[]).unwrap();
    assert_eq!(s.next_row().unwrap().unwrap().get::<i64>(0).unwrap(), 2);
    assert_eq!(c.transaction_status(), TransactionStatus::InBlock);
    drop(s);
    assert_eq!(c.transaction_status(), TransactionStatus::InBlock);
    c.execute_batch("INSERT INTO t VALUES (2); COMMIT").unwrap();
    // The write lock is free: another connection writes without waiting.
    let mut other = db.connect();
    other.execute("INSERT INTO t VALUES (3)", &[]).unwrap();
    assert_eq!(c.query("SELECT count(*) FROM t", &[]).unwrap().rows[0].get::<i64>(0).unwrap(), 3);
}

/// A statement started while a stream is open first runs the stream's statement to
/// its end: the stream still returns every row, as of its own snapshot (in a block,
/// without the rows the later statement inserts).
#[test]
fn another_statement_settles_the_open_stream() {
    let mut c = connect();
    c.execute_batch("CREATE TABLE t (a BIGINT); INSERT INTO t SELECT i FROM generate_series(1, 100000) g(i)").unwrap();
    for in_block in [false, true] {
        if in_block {
            c.execute("BEGIN", &[]).unwrap();
        }
        let mut s = c.query_stream("SELECT a FROM t", &[]).unwrap();
        let first = s.next_row().unwrap().unwrap().get::<i64>(0).unwrap();
        // A second statement, a second stream.
        c.execute("INSERT INTO t VALUES (0)", &[]).unwrap();
        let mut s2 = c.query_stream("SELECT a FROM t", &[]).unwrap();
        let (n, sum) = count_and_sum(&mut s);
        assert_eq!((n + 1, sum + first), (100_000, 5_000_050_000), "in block: {in_block}");
        let (n2, _) = count_and_sum(&mut s2);
        assert_eq!(n2, 100_001);
        c.execute("DELETE FROM t WHERE a = 0", &[]).unwrap();
        if in_block {
            c.execute("COMMIT", &[]).unwrap();
        }
    }
    assert_eq!(c.transaction_status(), TransactionStatus::Idle);
}

/// `InterruptHandle::interrupt` and `statement_timeout` stop a stream; the reader
/// gets 57014, and the connection goes on.
#[test]
fn interrupt_and_timeout_stop_a_stream() {
    let mut c = connect();
    let handle = c.interrupt_handle();
    let mut s = c.query_stream("SELECT x FROM generate_series(1, 50000000) g(x)", &[]).unwrap();
    s.next_batch().unwrap().unwrap();
    handle.interrupt();
    let e = loop {
        match s.next_batch() {
            Ok(Some(_)) => {}
            Ok(None) => panic!("not cancelled"),
            Err(e) => break e,
        }
    };
    assert_eq!((e.kind, e.sqlstate), (ErrorKind::Canceled, "57014"), "{e}");
    drop(s);
    c.execute("SET statement_timeout = 200", &[]).unwrap();
    let mut s = c.query_stream("SELECT x FROM generate_series(1, 50000000) g(x) ORDER BY x DESC", &[]).unwrap();
    let e = s.next_batch().unwrap_err();
    assert!(e.message.contains("statement timeout"), "{e}");
    c.execute("SET statement_timeout = 0", &[]).unwrap();
    assert_eq!(c.query("SELECT 4", &[]).unwrap().rows[0].get::<i32>(0).unwrap(), 4);
}

/// `memory_limit` applies to a streamed statement's operators as to any: a window
/// function over its input stops with 53200, a sort spills and streams in order.
#[test]
fn memory_limit_applies_to_a_stream() {
    let mut c = connect();
    c.execute("SET memory_limit = '2MB'", &[]).unwrap();
    let mut s = c.query_stream("SELECT x, row_number() OVER (ORDER BY x) FROM generate_series(1, 2000000) g(x)", &[]).unwrap();
    let e = s.next_batch().unwrap_err();
    assert_eq!(e.sqlstate, "53200", "{e}");
    let mut s = c.query_stream("SELECT x FROM generate_series(1, 2000000) g(x) ORDER BY x DESC", &[]).unwrap();
    let mut next = 2_000_000i64;
    while let Some(b) = s.next_batch().unwrap() {
        for r in 0..b.len() {
            assert_eq!(b.row(r).get::<i64>(0).unwrap(), next);
            next -= 1;
        }
    }
    assert_eq!(next, 0);
    // Streaming itself holds no result: the same rows unsorted stream at that limit.
    let mut s = c.query_stream("SELECT x FROM generate_series(1, 2000000) g(x)", &[]).unwrap();
    assert_eq!(count_and_sum(&mut s).0, 2_000_000);
}

/// A stream outlives its connection: it reads to its end, and its block's
/// transaction is rolled back when it ends.
#[test]
fn a_stream_outlives_its_connection() {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    c.execute_batch("CREATE TABLE t (a BIGINT); BEGIN; INSERT INTO t SELECT i FROM generate_series(1, 10000) g(i)").unwrap();
    let mut s = c.query_stream("SELECT a FROM t, generate_series(1, 10) g(x)", &[]).unwrap();
    drop(c);
    assert_eq!(count_and_sum(&mut s).0, 100_000);
    drop(s);
    let mut other = db.connect();
    assert_eq!(other.query("SELECT count(*) FROM t", &[]).unwrap().rows[0].get::<i64>(0).unwrap(), 0);
}

