//! `memory_limit` holds for what a statement materializes whole (issue 16): over the
//! limit the statement stops with SQLSTATE 53200, and under it the same statement
//! answers.

use beedb_sql::{Connection, Database, ErrorKind};

#[path = "support/as_cap.rs"]
mod as_cap;
use as_cap::in_capped_child;

/// The slow tier (`BEEDB_SLOW_TESTS=1`): the largest sizes of the capped tests.
fn slow_tier(test: &str) -> bool {
    let on = std::env::var_os("BEEDB_SLOW_TESTS").is_some();
    if !on {
        eprintln!("{test}: skipped (the slow tier: BEEDB_SLOW_TESTS=1)");
    }
    on
}

/// The opening the capped tests over a file database share: unless `slow_only` and
/// the slow tier is off, runs `body` in a capped child (`tests/support/as_cap.rs`)
/// with a small-cache database in a temporary directory (also given to `body`, for
/// its files), after `setup` and then `SET memory_limit = '50MB'`.
fn capped_on_a_small_cache(
    test: &str,
    slow_only: bool,
    setup: &str,
    body: impl FnOnce(&mut as_cap::Cap, &mut Connection, &std::path::Path),
) {
    if slow_only && !as_cap::is_child() && !slow_tier(test) {
        return;
    }
    in_capped_child(test, |cap| {
        let dir = tempfile::tempdir().unwrap();
        let db = small_cache_database(dir.path());
        let mut c = db.connect();
        c.execute_batch(setup).unwrap();
        c.execute_batch("SET memory_limit = '50MB'").unwrap();
        body(cap, &mut c, dir.path());
    });
}

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
    // By default the IN's semi join builds on its left input (d's ten rows: `build:
    // left`), so the subquery's rows stream past and it answers within the limit.
    let in_sql = "SELECT count(*) FROM d WHERE CAST(i AS text) IN (SELECT s FROM w)";
    assert_eq!(c.query(in_sql, &[]).unwrap().rows[0].get::<i64>(0).unwrap(), 0);
    // Building on the subquery's rows, the semi join's build outgrows the limit and
    // spills to temporary files (exec/spill.rs): the same answer.
    c.execute_batch("SET optimizer_build_side = off").unwrap();
    assert_eq!(c.query(in_sql, &[]).unwrap().rows[0].get::<i64>(0).unwrap(), 0);
    // An uncorrelated NOT IN is an anti join on the same rows (under a one-row check
    // of the subquery's NULLs and emptiness): its build spills too.
    c.execute_batch("RESET optimizer_build_side").unwrap();
    let not_in = "SELECT count(*) FROM d WHERE CAST(i AS text) NOT IN (SELECT s FROM w)";
    assert_eq!(c.query(not_in, &[]).unwrap().rows[0].get::<i64>(0).unwrap(), 10);
    // A row NOT IN still holds the subquery's result as a hashed set, which does not
    // spill: within the limit, or SQLSTATE 53200.
    let row_not_in = "SELECT count(*) FROM d WHERE (CAST(i AS text), 1) NOT IN (SELECT s, 1 FROM w)";
    let e = c.query(row_not_in, &[]).expect_err("over the limit");
    assert_eq!(e.kind, ErrorKind::Limit, "{e}");
    assert_eq!(e.sqlstate, "53200");
    assert!(e.message.starts_with("memory limit exceeded"), "{e}");
    c.execute_batch("SET memory_limit = '256MB'").unwrap();
    assert_eq!(c.query(row_not_in, &[]).unwrap().rows[0].get::<i64>(0).unwrap(), 10);
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

/// The peak resident set of this process so far, in bytes (`VmHWM`).
fn peak_rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    let kb: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb * 1024
}

/// Asserts that what `run` passes to [`PeakRss::measure`] grows this process's peak
/// RSS by less than `max_growth` bytes. `test` is the name of the calling test: it is
/// run again alone, in a child process with `BEEDB_MEMORY_CHILD` set, so the peak RSS
/// is its own and not that of tests running beside it; `run` runs only there, and
/// the child prints the growth for the parent to check.
fn assert_peak_rss_growth_under(test: &str, max_growth: u64, run: impl FnOnce(&mut PeakRss)) {
    if std::env::var_os("BEEDB_MEMORY_CHILD").is_none() {
        let growth: u64 = measure_in_child(test).parse().unwrap();
        assert!(growth < max_growth, "peak RSS grew by {} MB", growth >> 20);
        return;
    }
    let mut peak = PeakRss { growth: None };
    run(&mut peak);
    println!("measured: {}", peak.growth.expect("the test measured nothing"));
}

/// The growth of the peak RSS over the one step a child-process test measures.
struct PeakRss {
    growth: Option<u64>,
}

impl PeakRss {
    /// Runs `step`, noting how far it raised the peak RSS (VmHWM before and after).
    fn measure<T>(&mut self, step: impl FnOnce() -> T) -> T {
        let before = peak_rss_bytes();
        let out = step();
        self.growth = Some(peak_rss_bytes().saturating_sub(before));
        out
    }
}

/// Runs `test` (a test of this file) alone in a child process with `BEEDB_MEMORY_CHILD`
/// set; returns the word the child printed after `measured:`.
fn measure_in_child(test: &str) -> String {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test, "--nocapture", "--test-threads", "1"])
        .env("BEEDB_MEMORY_CHILD", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "child failed: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    // The harness prints the test's name on the same line, before the output.
    let (_, after) = stdout.split_once("measured:").unwrap_or_else(|| panic!("no measurement in: {stdout}"));
    after.split_whitespace().next().unwrap_or_default().to_string()
}

/// A file database whose page cache and uncommitted private pages are small, so a
/// statement's peak RSS shows what the statement itself holds.
fn small_cache_database(dir: &std::path::Path) -> Database {
    let storage = beedb_storage::StoreOptions {
        cache_size_bytes: 8 << 20,
        writer_dirty_pages_max: 512,
        synchronous: beedb_storage::Synchronous::Off,
        ..Default::default()
    };
    Database::open_with(dir.join("m.db"), beedb_sql::DatabaseOptions { storage }).unwrap()
}

/// `INSERT … SELECT` writes each batch as its source produces it (issue 16): 3M rows
/// at a 50 MB limit succeed, and the statement's peak RSS growth stays far below the
/// ~800 MB its whole result took when it was held (10M rows took 2.6 GB). Measured
/// in a child process (VmHWM before and after), never by time.
#[test]
fn insert_select_streams_into_the_table() {
    assert_write_streams(
        "insert_select_streams_into_the_table",
        "CREATE TABLE w (i BIGINT, s TEXT)",
        "INSERT INTO w SELECT i, 'row ' || CAST(i AS text) FROM generate_series(1, {ROWS}) AS g(i)",
        3_000_000,
    );
}

/// `CREATE TABLE … AS` writes each batch as its query produces it, as `INSERT …
/// SELECT` does: 1M rows peaked at 214 MB (the shell's whole process) when the whole
/// result was held first, then written.
#[test]
fn create_table_as_streams_into_the_table() {
    assert_write_streams(
        "create_table_as_streams_into_the_table",
        "",
        "CREATE TABLE w AS SELECT i, 'row ' || CAST(i AS text) AS s FROM generate_series(1, {ROWS}) AS g(i)",
        1_000_000,
    );
}

/// Runs `setup`, then `statement` (`{ROWS}` replaced by `rows`), which writes rows
/// 1..=`rows` (`i`, `s`) into table `w`, at a 50 MB `memory_limit` in a child
/// process: the statement's peak RSS growth must stay under 50 MB (the 8 MB page
/// cache, 2 MB of private pages, the WAL's frame index and the allocator's slack fit
/// well under it), and every row must be there.
fn assert_write_streams(test: &str, setup: &str, statement: &str, rows: i64) {
    assert_peak_rss_growth_under(test, 50 << 20, |peak| {
        let dir = tempfile::tempdir().unwrap();
        let db = small_cache_database(dir.path());
        let mut c = db.connect();
        if !setup.is_empty() {
            c.execute_batch(setup).unwrap();
        }
        c.execute_batch("SET memory_limit = '50MB'").unwrap();
        let sql = statement.replace("{ROWS}", &rows.to_string());
        let r = peak.measure(|| c.execute(&sql, &[]).unwrap());
        assert_eq!(r.rows_affected, rows as u64);
        let n = c.query("SELECT count(*), max(i), max(s) FROM w", &[]).unwrap();
        assert_eq!(n.rows[0].get::<i64>(0).unwrap(), rows);
        assert_eq!(n.rows[0].get::<i64>(1).unwrap(), rows);
        // The text order's largest of 'row 1' … 'row N' for N of at least 999,999.
        assert_eq!(n.rows[0].get::<String>(2).unwrap(), "row 999999");
    });
}

/// A source that reads the target table is held whole before anything is written
/// (so it sees only the rows that were there); past half of `memory_limit` it is held
/// in a temporary file, so the statement runs at any limit.
#[test]
fn insert_reading_its_own_table_spills_past_memory_limit() {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    wide_table(&mut c, 5); // 100,000 rows, over 10 MB of strings
    c.execute_batch("SET memory_limit = '4MB'").unwrap();
    assert_eq!(c.execute("INSERT INTO w SELECT s || 'y' FROM w", &[]).unwrap().rows_affected, 100_000);
    // A source that does not read the target streams at the same limit.
    c.execute_batch("CREATE TABLE w2 (s TEXT); INSERT INTO w2 SELECT s FROM w").unwrap();
    for (t, want) in [("w", 200_000), ("w2", 200_000)] {
        let r = c.query(&format!("SELECT count(*), count(*) FILTER (WHERE s LIKE '%y') FROM {t}"), &[]).unwrap();
        assert_eq!((r.rows[0].get::<i64>(0).unwrap(), r.rows[0].get::<i64>(1).unwrap()), (want, 100_000), "{t}");
    }
    // What cannot spill counts: a RETURNING result, and the rows ON CONFLICT has
    // written (about 1.2 MB of tuple ids for 100,000 rows).
    let e = c.execute("INSERT INTO w2 SELECT s FROM w RETURNING s", &[]).expect_err("over the limit");
    assert_eq!(e.sqlstate, "53200", "{e}");
    assert!(e.message.contains("INSERT … RETURNING"), "{e}");
    c.execute_batch("CREATE TABLE u (k INTEGER PRIMARY KEY, v INTEGER); SET memory_limit = '512kB'").unwrap();
    let e = c
        .execute("INSERT INTO u SELECT i, 0 FROM generate_series(1, 100000) AS g(i) ON CONFLICT (k) DO UPDATE SET v = 1", &[])
        .expect_err("over the limit");
    assert_eq!(e.sqlstate, "53200", "{e}");
    assert!(e.message.contains("ON CONFLICT"), "{e}");
    c.execute_batch("SET memory_limit = '64MB'").unwrap();
    let r = c
        .execute("INSERT INTO u SELECT i, 0 FROM generate_series(1, 100000) AS g(i) ON CONFLICT (k) DO UPDATE SET v = 1", &[])
        .unwrap();
    assert_eq!(r.rows_affected, 100_000);
}

/// An UPDATE or DELETE finds every row it writes before writing the first (its scan
/// sees the statement's own changes): past half of `memory_limit` those rows are held
/// in a temporary file. What cannot spill counts against the limit: the tuple ids a
/// FROM or USING join deduplicates, and a RETURNING result.
#[test]
fn update_and_delete_hold_their_rows_within_memory_limit() {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    wide_table(&mut c, 5); // 100,000 rows, over 10 MB of strings
    c.execute_batch("SET memory_limit = '4MB'").unwrap();
    // RETURNING gives back over 10 MB: stopped, and nothing is written.
    let Err(e) = c.execute("DELETE FROM w WHERE s LIKE 'x%' RETURNING s", &[]) else { panic!("not stopped by the limit") };
    assert_eq!((e.kind, e.sqlstate), (ErrorKind::Limit, "53200"), "{e}");
    assert!(e.message.contains("DELETE … RETURNING"), "{e}");
    let r = c.query("SELECT count(*) FROM w", &[]).unwrap();
    assert_eq!(r.rows[0].get::<i64>(0).unwrap(), 100_000);
    // The rows themselves spill: every row is written once, as in memory.
    assert_eq!(c.execute("UPDATE w SET s = s || 'y'", &[]).unwrap().rows_affected, 100_000);
    let r = c.query("SELECT count(*), count(*) FILTER (WHERE s LIKE '%y' AND s NOT LIKE '%yy') FROM w", &[]).unwrap();
    assert_eq!((r.rows[0].get::<i64>(0).unwrap(), r.rows[0].get::<i64>(1).unwrap()), (100_000, 100_000));
    // A narrow UPDATE … FROM (each target row met twice): its set of target tuple
    // ids counts.
    c.execute_batch("CREATE TABLE n (i INTEGER); INSERT INTO n SELECT d0.i + 10 * d1.i + 100 * d2.i + 1000 * d3.i + 10000 * d4.i FROM d AS d0, d AS d1, d AS d2, d AS d3, d AS d4")
        .unwrap();
    // 100,000 ids in a hash set: about 1 MB.
    c.execute_batch("SET memory_limit = '512kB'").unwrap();
    let Err(e) = c.execute("UPDATE n SET i = n.i + 1 FROM d WHERE d.i < 2", &[]) else { panic!("not stopped by the limit") };
    assert_eq!(e.sqlstate, "53200", "{e}");
    assert!(e.message.contains("UPDATE … FROM"), "{e}");
    // Under the limit the same statements answer.
    c.execute_batch("SET memory_limit = '256MB'").unwrap();
    assert_eq!(c.execute("UPDATE n SET i = n.i + 1 FROM d WHERE d.i < 2", &[]).unwrap().rows_affected, 100_000);
    let r = c.query("DELETE FROM w WHERE s LIKE '%7y' RETURNING s", &[]).unwrap();
    assert_eq!(r.rows.len(), 10_000);
    c.execute_batch("SET memory_limit = '4MB'").unwrap();
    assert_eq!(c.execute("DELETE FROM w", &[]).unwrap().rows_affected, 90_000);
    let r = c.query("SELECT min(i), max(i), count(*) FROM n", &[]).unwrap();
    assert_eq!(
        (r.rows[0].get::<i64>(0).unwrap(), r.rows[0].get::<i64>(1).unwrap(), r.rows[0].get::<i64>(2).unwrap()),
        (1, 100_000, 100_000)
    );
}

/// A statement's syntax tree is held whole, at about 100 bytes per byte of SQL: a
/// `VALUES` list of 1M rows (28 MB of text) took 2.6 GB to parse (issue 16). SQL whose
/// parse would pass `memory_limit` is refused before it is parsed, with 53200;
/// string literals count about their length.
#[test]
fn values_lists_count_against_memory_limit() {
    let rows = |n: usize| -> String {
        let mut sql = String::from("INSERT INTO v VALUES ");
        for i in 0..n {
            if i > 0 {
                sql.push(',');
            }
            sql.push_str(&format!("({i}, {}, 's{i}')", i * 2));
        }
        sql
    };
    assert_peak_rss_growth_under("values_lists_count_against_memory_limit", 50 << 20, |peak| {
        let db = Database::open(":memory:").unwrap();
        let mut c = db.connect();
        c.execute_batch("CREATE TABLE v (a INTEGER, b INTEGER, c TEXT); SET memory_limit = '50MB'").unwrap();
        let million = rows(1_000_000);
        peak.measure(|| {
            for e in [c.execute(&million, &[]).unwrap_err(), c.execute_batch(&million).unwrap_err()] {
                assert_eq!((e.kind, e.sqlstate), (ErrorKind::Limit, "53200"), "{e}");
                assert!(e.message.starts_with("memory limit exceeded: parsing"), "{e}");
            }
        });
        drop(million);
        // 10,000 rows (about 250 kB of text) parse within the limit, and a literal of
        // 10 MB, which the parser holds about once.
        c.execute(&rows(10_000), &[]).unwrap();
        let long = format!("INSERT INTO v VALUES (-1, -1, '{}')", "x".repeat(10 << 20));
        c.execute(&long, &[]).unwrap();
        let r = c.query("SELECT count(*), max(length(c)) FROM v", &[]).unwrap();
        assert_eq!(r.rows[0].get::<i64>(0).unwrap(), 10_001);
        assert_eq!(r.rows[0].get::<i64>(1).unwrap(), 10 << 20);
    });
}

/// CREATE INDEX sorts its entries within `memory_limit`, spilling sorted runs to a
/// temporary file and merging them (issue 16: 3M rows took 723 MB at a 50 MB limit).
/// The indexes answer as scans do.
#[test]
fn create_index_sorts_within_memory_limit() {
    const ROWS: i64 = 3_000_000;
    // The limit, the 8 MB page cache and 2 MB of private pages, and slack.
    assert_peak_rss_growth_under("create_index_sorts_within_memory_limit", 80 << 20, |peak| {
        let dir = tempfile::tempdir().unwrap();
        let db = small_cache_database(dir.path());
        let mut c = db.connect();
        c.execute_batch(&format!(
            "CREATE TABLE w (i BIGINT, s TEXT); \
             INSERT INTO w SELECT i, 'row ' || CAST((CAST(i AS BIGINT) * 7919) % {ROWS} AS text) FROM generate_series(1, {ROWS}) AS g(i); \
             SET memory_limit = '50MB'"
        ))
        .unwrap();
        peak.measure(|| c.execute_batch("CREATE INDEX w_s ON w (s); CREATE UNIQUE INDEX w_i ON w (i)").unwrap());
        let queries = [
            "SELECT count(*), sum(i) FROM w WHERE s = 'row 123456'",
            "SELECT count(*), sum(i) FROM w WHERE s >= 'row 2999' AND s < 'row 3'",
            "SELECT count(*), sum(i) FROM w WHERE i BETWEEN 1000 AND 200000",
            "SELECT count(*), min(s), max(s) FROM w WHERE i > 2999990",
        ];
        let answers = |c: &mut Connection| -> Vec<String> {
            queries.iter().map(|q| format!("{:?}", c.query(q, &[]).unwrap().rows)).collect()
        };
        let by_index = answers(&mut c);
        let plan = c.query(&format!("EXPLAIN {}", queries[0]), &[]).unwrap();
        assert!(format!("{:?}", plan.rows).contains("w_s"), "{:?}", plan.rows);
        c.execute_batch("SET optimizer_index_access = off").unwrap();
        assert_eq!(by_index, answers(&mut c));
    });
}

/// A unique index over duplicates fails with the duplicated key when the
/// duplicates lie in different spilled runs; NULL keys are not duplicates.
#[test]
fn create_unique_index_finds_duplicates_across_spilled_runs() {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    c.execute_batch(
        "CREATE TABLE u (k INTEGER, pad TEXT); \
         INSERT INTO u SELECT i, repeat('p', 50) FROM generate_series(1, 200000) AS g(i); \
         INSERT INTO u VALUES (NULL, 'a'), (NULL, 'b'); \
         SET memory_limit = '1MB'",
    )
    .unwrap();
    c.execute_batch("CREATE UNIQUE INDEX u_k ON u (k)").unwrap();
    c.execute_batch("DROP INDEX u_k; INSERT INTO u VALUES (123457, 'late')").unwrap();
    let e = c.execute("CREATE UNIQUE INDEX u_k ON u (k)", &[]).unwrap_err();
    assert_eq!(e.sqlstate, "23505", "{e}");
    assert_eq!(e.message, "could not create unique index \"u_k\": Key (k)=(123457) is duplicated.");
    c.execute_batch("CREATE INDEX u_k ON u (k)").unwrap();
    let r = c.query("SELECT count(*) FROM u WHERE k = 123457", &[]).unwrap();
    assert_eq!(r.rows[0].get::<i64>(0).unwrap(), 2);
}

/// Descriptors this process has open.
fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// A sort past `memory_limit` spills sorted runs to temporary files and merges them
/// (issue 12, item 4): 2M rows of (bigint, text), about 70 MB held in memory, sort at
/// 16 MB and stream in order within the limit's reach; the files are closed after
/// the statement, on success, on an error midway and when the stream is dropped;
/// EXPLAIN ANALYZE counts what the Sort wrote.
#[test]
fn a_sort_spills_past_memory_limit() {
    const ROWS: i64 = 2_000_000;
    // The 16 MB limit, the stream's queue and the allocator's slack (measured: 16 MB).
    assert_peak_rss_growth_under("a_sort_spills_past_memory_limit", 48 << 20, |peak| {
        let db = Database::open(":memory:").unwrap();
        let mut c = db.connect();
        c.execute_batch("SET memory_limit = '16MB'").unwrap();
        let fds = open_fds();
        let sql = format!(
            "SELECT i, 'row ' || CAST(i AS text) FROM generate_series(1, {ROWS}) AS g(i) ORDER BY i % 1000, i DESC"
        );
        let n = peak.measure(|| {
            let mut s = c.query_stream(&sql, &[]).unwrap();
            let (mut n, mut last) = (0i64, (-1i64, i64::MAX));
            while let Some(b) = s.next_batch().unwrap() {
                for r in 0..b.len() {
                    let i = b.row(r).get::<i64>(0).unwrap();
                    assert_eq!(b.row(r).get::<String>(1).unwrap(), format!("row {i}"));
                    let key = (i % 1000, i);
                    assert!(key.0 > last.0 || (key.0 == last.0 && key.1 < last.1), "{key:?} after {last:?}");
                    last = key;
                    n += 1;
                }
            }
            n
        });
        assert_eq!(n, ROWS);
        assert_eq!(open_fds(), fds, "a temporary file is still open");
        // Dropped midway, and failing midway (a division by zero after runs were written).
        let mut s = c.query_stream(&sql, &[]).unwrap();
        s.next_batch().unwrap().unwrap();
        drop(s);
        assert_eq!(open_fds(), fds, "a temporary file is still open after a drop");
        let e = c
            .query(&format!("SELECT 1 / (i - 1000000) FROM generate_series(1, {ROWS}) AS g(i) ORDER BY i % 7"), &[])
            .unwrap_err();
        assert_eq!(e.sqlstate, "22012", "{e}");
        assert_eq!(open_fds(), fds, "a temporary file is still open after an error");
        let plan = c.query(&format!("EXPLAIN ANALYZE {sql}"), &[]).unwrap();
        let lines: Vec<String> = plan.rows.iter().map(|r| r.get::<String>(0).unwrap()).collect();
        // The Sort's detail lines (up to the next operator) say it spilled.
        let at = lines.iter().position(|l| l.contains("->  Sort") || l.starts_with("Sort")).unwrap_or_else(|| panic!("{lines:?}"));
        assert!(lines[at + 1..].iter().take_while(|l| !l.contains("->")).any(|l| l.trim_start().starts_with("Spilled: ")), "{lines:?}");
    });
}

/// The parse estimate charges each string literal its token, node, bound value and
/// set entry, not just its text (issue 16: an IN list of 100,000 110-byte strings,
/// 11 MB of SQL, passed the estimate at a 50 MB limit and peaked at 316 MB). At 50 MB
/// it is refused before parsing; at 400 MB it answers; a list of 1,000 answers at 50 MB.
#[test]
fn in_lists_of_short_strings_count_their_literals_against_memory_limit() {
    let list = |n: usize| -> String {
        let strings: Vec<String> = (0..n).map(|i| format!("'{i:0>110}'")).collect();
        format!("SELECT count(*) FROM s WHERE v IN ({})", strings.join(", "))
    };
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    c.execute_batch(
        "CREATE TABLE s (v TEXT); INSERT INTO s SELECT lpad(cast(i AS text), 110, '0') FROM generate_series(1, 1000) g(i); \
         SET memory_limit = '50MB'",
    )
    .unwrap();
    let big = list(100_000);
    let e = c.query(&big, &[]).unwrap_err();
    assert_eq!((e.kind, e.sqlstate), (ErrorKind::Limit, "53200"), "{e}");
    assert!(e.message.starts_with("memory limit exceeded: parsing"), "{e}");
    let r = c.query(&list(1_000), &[]).unwrap();
    assert_eq!(r.rows[0].get::<i64>(0).unwrap(), 999);
    c.execute("SET memory_limit = '400MB'", &[]).unwrap();
    let r = c.query(&big, &[]).unwrap();
    assert_eq!(r.rows[0].get::<i64>(0).unwrap(), 1000);
}

// ----- Three times the sizes that crashed, under an address-space cap -----
//
// Each test runs its statements in a child process whose address space is capped at
// what it had mapped when the step began + 3 × memory_limit + `as_cap::SLACK_BYTES`
// (256 MiB: page cache, stack segments, a malloc arena, thread stacks, bee code; see
// tests/support/as_cap.rs). Past the cap an allocation fails and the child aborts,
// so passing proves the bound whatever the timing. Issue 16's sizes: IN subquery
// results 1.1 GB at 50 MB (1M rows), VALUES of 1M rows 1.9 GB, CREATE INDEX 723 MB at
// 50 MB (3M rows), INSERT … SELECT of 10M rows 2.6 GB, a COPY line of any length.

const MB50: u64 = 50 << 20;

/// A file database of `rows` rows `(i BIGINT, s TEXT)`, `s` 100 bytes, in a small page
/// cache (8 MiB), at `memory_limit = '50MB'`.
fn capped_table(dir: &std::path::Path, rows: u64) -> (Database, Connection) {
    let db = small_cache_database(dir);
    let mut c = db.connect();
    c.execute_batch(&format!(
        "CREATE TABLE w (i BIGINT, s TEXT); \
         INSERT INTO w SELECT i, repeat('x', 90) || lpad(CAST(i AS text), 10, '0') FROM generate_series(1, {rows}) AS g(i); \
         SET memory_limit = '50MB'"
    ))
    .unwrap();
    (db, c)
}

/// IN and NOT IN over a subquery of 3M rows of 100-byte strings (issue 16: 1M rows
/// took 1.1 GB at a 50 MB limit): as semi and anti joins they spill; a row NOT IN,
/// held as a hashed set, stops with 53200; all within the cap.
#[test]
fn in_subqueries_of_3m_rows_under_an_address_space_cap() {
    in_capped_child("in_subqueries_of_3m_rows_under_an_address_space_cap", |cap| {
        let dir = tempfile::tempdir().unwrap();
        let (_db, mut c) = capped_table(dir.path(), 3_000_000);
        c.execute_batch("CREATE TABLE d (k TEXT); INSERT INTO d SELECT repeat('x', 90) || lpad(CAST(i * 300000 AS text), 10, '0') FROM generate_series(1, 10) g(i)")
            .unwrap();
        let count = |c: &mut Connection, sql: &str| c.query(sql, &[]).unwrap_or_else(|e| panic!("{sql}: {e}")).rows[0].get::<i64>(0).unwrap();
        let n = cap.step("IN (subquery of 3M rows)", MB50, || count(&mut c, "SELECT count(*) FROM d WHERE k IN (SELECT s FROM w)"));
        assert_eq!(n, 10);
        c.execute_batch("SET optimizer_build_side = off").unwrap();
        let n = cap.step("IN, building on the subquery's 3M rows (spills)", MB50, || {
            count(&mut c, "SELECT count(*) FROM d WHERE k IN (SELECT s FROM w)")
        });
        assert_eq!(n, 10);
        c.execute_batch("RESET optimizer_build_side").unwrap();
        let n = cap.step("NOT IN (subquery of 3M rows)", MB50, || count(&mut c, "SELECT count(*) FROM d WHERE k NOT IN (SELECT s FROM w)"));
        assert_eq!(n, 0);
        let e = cap.step("row NOT IN (3M rows, a hashed set)", MB50, || {
            c.query("SELECT count(*) FROM d WHERE (k, 1) NOT IN (SELECT s, 1 FROM w)", &[]).unwrap_err()
        });
        assert_eq!((e.kind, e.sqlstate), (ErrorKind::Limit, "53200"), "{e}");
        let n = cap.step("EXISTS over 3M rows", MB50, || {
            count(&mut c, "SELECT count(*) FROM w WHERE EXISTS (SELECT 1 FROM d WHERE d.k = w.s)")
        });
        assert_eq!(n, 10);
    });
}

/// A VALUES list of 3M rows (84 MB of SQL; issue 16: 1M rows took 1.9 GB) is refused
/// before parsing at 50 MB, within the cap; at 1,000 rows it runs.
#[test]
fn values_of_3m_rows_under_an_address_space_cap() {
    in_capped_child("values_of_3m_rows_under_an_address_space_cap", |cap| {
        let db = Database::open(":memory:").unwrap();
        let mut c = db.connect();
        c.execute_batch("CREATE TABLE v (a INTEGER, b INTEGER, c TEXT); SET memory_limit = '50MB'").unwrap();
        let rows = |n: usize| {
            let mut sql = String::from("INSERT INTO v VALUES ");
            for i in 0..n {
                if i > 0 {
                    sql.push(',');
                }
                sql.push_str(&format!("({i}, {}, 's{i}')", i * 2));
            }
            sql
        };
        let big = rows(3_000_000);
        let e = cap.step("VALUES of 3M rows", MB50, || c.execute(&big, &[]).unwrap_err());
        assert_eq!((e.kind, e.sqlstate), (ErrorKind::Limit, "53200"), "{e}");
        drop(big);
        let small = rows(1_000);
        let r = cap.step("VALUES of 1,000 rows", MB50, || c.execute(&small, &[]).unwrap());
        assert_eq!(r.rows_affected, 1_000);
    });
}

/// COPY at 50 MB: a line past the 64 MiB maximum and endless input (`/dev/zero`) stop
/// with 54000 within the cap, and 3M ordinary lines load.
#[test]
fn copy_under_an_address_space_cap() {
    capped_on_a_small_cache("copy_under_an_address_space_cap", false, "CREATE TABLE t (id BIGINT, s TEXT)", |cap, c, dir| {
        let long = dir.join("long.txt");
        let mut text = b"1|short\n2|".to_vec();
        text.resize(text.len() + beedb_sql::MAX_COPY_LINE_BYTES + 10, b'x');
        text.extend_from_slice(b"\n");
        std::fs::write(&long, &text).unwrap();
        drop(text);
        let e = cap.step("COPY of a line past the maximum", MB50, || {
            c.execute(&format!("COPY t FROM '{}' (DELIMITER '|')", long.display()), &[]).unwrap_err()
        });
        assert_eq!(e.sqlstate, "54000", "{e}");
        let e = cap.step("COPY FROM /dev/zero", MB50, || c.execute("COPY t FROM '/dev/zero'", &[]).unwrap_err());
        assert_eq!(e.sqlstate, "54000", "{e}");
        let rows = if std::env::var_os("BEEDB_SLOW_TESTS").is_some() { 30_000_000u64 } else { 3_000_000 };
        let file = dir.join("rows.txt");
        {
            use std::io::Write;
            let mut f = std::io::BufWriter::new(std::fs::File::create(&file).unwrap());
            for i in 0..rows {
                writeln!(f, "{i}|row {i}").unwrap();
            }
        }
        let r = cap.step(&format!("COPY of {rows} lines"), MB50, || {
            c.execute(&format!("COPY t FROM '{}' (DELIMITER '|')", file.display()), &[]).unwrap()
        });
        assert_eq!(r.rows_affected, rows);
    });
}

/// CREATE INDEX over 9M rows at 50 MB (issue 16: 3M rows took 723 MB): the external
/// sort stays within the cap. The slow tier.
#[test]
fn create_index_of_9m_rows_under_an_address_space_cap() {
    const ROWS: i64 = 9_000_000;
    let setup = format!(
        "CREATE TABLE w (i BIGINT, s TEXT); \
         INSERT INTO w SELECT i, 'row ' || CAST((CAST(i AS BIGINT) * 7919) % {ROWS} AS text) FROM generate_series(1, {ROWS}) AS g(i)"
    );
    capped_on_a_small_cache("create_index_of_9m_rows_under_an_address_space_cap", true, &setup, |cap, c, _| {
        cap.step("CREATE INDEX over 9M rows", MB50, || c.execute_batch("CREATE INDEX w_s ON w (s)").unwrap());
        let r = c.query("SELECT count(*) FROM w WHERE s = 'row 123456'", &[]).unwrap();
        assert_eq!(r.rows[0].get::<i64>(0).unwrap(), 1);
    });
}

/// INSERT … SELECT of 30M rows at 50 MB (issue 16: 10M rows took 2.6 GB) streams
/// within the cap. The slow tier.
#[test]
fn insert_select_of_30m_rows_under_an_address_space_cap() {
    const ROWS: i64 = 30_000_000;
    capped_on_a_small_cache("insert_select_of_30m_rows_under_an_address_space_cap", true, "CREATE TABLE w (i BIGINT, s TEXT)", |cap, c, _| {
        let r = cap.step("INSERT … SELECT of 30M rows", MB50, || {
            c.execute(&format!("INSERT INTO w SELECT i, 'row ' || CAST(i AS text) FROM generate_series(1, {ROWS}) AS g(i)"), &[])
                .unwrap()
        });
        assert_eq!(r.rows_affected, ROWS as u64);
    });
}
