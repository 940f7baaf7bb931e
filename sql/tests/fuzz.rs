//! Bad input: 100,000 generated and mutated statements. The engine must answer each
//! with a result or an error: no panic (which the API turns into an `Internal` error),
//! no hang (a watchdog fails the run if one statement takes too long).
//!
//! `BEEDB_FUZZ_STATEMENTS` and `BEEDB_FUZZ_SEED` change the amount and the seed.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use beedb_sql::{Database, ErrorKind};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const SEEDS: &[&str] = &[
    "SELECT a, b FROM t1 WHERE a > 3 ORDER BY a DESC LIMIT 5",
    "SELECT count(*), sum(c), avg(a), min(d), max(b) FROM t1 GROUP BY a % 3 HAVING count(*) > 1",
    "SELECT t1.a, t2.y FROM t1 JOIN t2 ON t1.a = t2.x WHERE t2.y LIKE 'a%'",
    "SELECT * FROM t1 LEFT JOIN t2 ON t1.a = t2.x AND t2.y IS NOT NULL",
    "SELECT a FROM t1 WHERE a IN (SELECT x FROM t2) OR EXISTS (SELECT 1 FROM t2 WHERE t2.x = t1.a)",
    "SELECT CASE WHEN a > 2 THEN 'big' ELSE 'small' END, coalesce(b, 'none') FROM t1",
    "SELECT substring(b from 2 for 3), upper(b), length(b), trim(b), position('a' in b) FROM t1",
    "SELECT extract(year from d), d + 1, d - DATE '2020-01-01', d + interval '1 month' FROM t1",
    "WITH w AS (SELECT a, b FROM t1) SELECT * FROM w WHERE a BETWEEN 1 AND 4",
    "SELECT a FROM t1 UNION SELECT x FROM t2 EXCEPT SELECT 3 ORDER BY 1",
    "INSERT INTO t1 VALUES (100, 'new', 1.25, DATE '2024-01-01')",
    "INSERT INTO t2 SELECT a, b FROM t1 WHERE a < 3",
    "UPDATE t1 SET c = c * 2, b = b || 'x' WHERE a = 2",
    "DELETE FROM t2 WHERE x > 40",
    "SELECT CAST(a AS text), CAST('12' AS integer), 1.5::numeric(4,1), '2024-02-29'::date FROM t1",
    "SELECT a / 0 FROM t1",
    "SELECT DISTINCT a % 5 FROM t1 ORDER BY 1 NULLS FIRST",
    "CREATE TABLE tmp (k INTEGER PRIMARY KEY, v VARCHAR(5) NOT NULL DEFAULT 'x')",
    "CREATE INDEX i1 ON t1 (a, b)",
    "DROP TABLE IF EXISTS tmp",
    "SELECT (SELECT max(x) FROM t2 WHERE t2.x < t1.a) FROM t1",
    "SELECT a FROM t1 WHERE b NOT LIKE '%z_' ESCAPE '!' AND c IS DISTINCT FROM 2",
    "EXPLAIN SELECT * FROM t1 WHERE a = 1",
    "BEGIN",
    "COMMIT",
    "ROLLBACK",
    "SELECT nullif(a, 1), greatest(a, 2), least(a, 3), abs(-a), round(c, 1) FROM t1",
    "ALTER TABLE t2 ADD COLUMN z INTEGER DEFAULT 7",
    "SET memory_limit = '64MB'",
];

const TOKENS: &[&str] = &[
    "SELECT", "FROM", "WHERE", "GROUP", "BY", "ORDER", "HAVING", "JOIN", "LEFT", "ON", "AND", "OR",
    "NOT", "NULL", "IS", "IN", "EXISTS", "CASE", "WHEN", "THEN", "ELSE", "END", "CAST", "AS",
    "INSERT", "INTO", "VALUES", "UPDATE", "SET", "DELETE", "CREATE", "TABLE", "DROP", "INDEX",
    "UNION", "ALL", "DISTINCT", "LIMIT", "OFFSET", "WITH", "(", ")", ",", "*", "+", "-", "/", "%",
    "=", "<>", "<", ">", "<=", ">=", "||", "::", ".", ";", "'x'", "''", "1", "0", "-1", "1.5",
    "2147483648", "9223372036854775808", "1e400", "a", "b", "c", "d", "t1", "t2", "x", "y",
    "count(*)", "sum(a)", "integer", "text", "date", "numeric(3,1)", "varchar(2)", "TRUE",
    "interval '1 day'", "DATE '2024-13-01'", "$1", "?", "\"weird name\"", "'\\'", "--", "/*",
];

fn random_soup(rng: &mut StdRng) -> String {
    let n = rng.random_range(1..40);
    (0..n)
        .map(|_| TOKENS[rng.random_range(0..TOKENS.len())])
        .collect::<Vec<_>>()
        .join(" ")
}

fn mutate(rng: &mut StdRng, s: &str) -> String {
    let mut toks: Vec<String> = s.split(' ').map(str::to_string).collect();
    match rng.random_range(0..7) {
        0 => {
            // truncation
            let cut = rng.random_range(0..=s.len());
            let cut = (0..=cut).rev().find(|&i| s.is_char_boundary(i)).unwrap_or(0);
            return s[..cut].to_string();
        }
        1 if !toks.is_empty() => {
            let i = rng.random_range(0..toks.len());
            toks.remove(i);
        }
        2 => {
            let i = rng.random_range(0..=toks.len());
            toks.insert(i, TOKENS[rng.random_range(0..TOKENS.len())].to_string());
        }
        3 if toks.len() > 1 => {
            let i = rng.random_range(0..toks.len());
            let j = rng.random_range(0..toks.len());
            toks.swap(i, j);
        }
        4 if !toks.is_empty() => {
            let i = rng.random_range(0..toks.len());
            toks[i] = TOKENS[rng.random_range(0..TOKENS.len())].to_string();
        }
        5 => {
            // a random byte somewhere
            let mut b = s.as_bytes().to_vec();
            if !b.is_empty() {
                let i = rng.random_range(0..b.len());
                b[i] = rng.random_range(0x20..0x7f);
            }
            return String::from_utf8_lossy(&b).into_owned();
        }
        _ => {}
    }
    toks.join(" ")
}

fn extreme(rng: &mut StdRng) -> String {
    match rng.random_range(0..8) {
        0 => {
            let d = rng.random_range(10..400);
            format!("SELECT {}1{}", "(".repeat(d), ")".repeat(d))
        }
        1 => {
            let n = rng.random_range(100..5000);
            format!("SELECT 1{}", "+1".repeat(n))
        }
        2 => {
            let n = rng.random_range(100..5000);
            format!("SELECT a FROM t1 WHERE {}", vec!["a = 1"; n].join(" OR "))
        }
        3 => {
            let n = rng.random_range(1..200_000);
            format!("SELECT '{}'", "x".repeat(n))
        }
        4 => {
            let n = rng.random_range(1..400);
            format!("SELECT {}", "9".repeat(n))
        }
        5 => {
            let d = rng.random_range(2..60);
            let mut q = "SELECT 1".to_string();
            for _ in 0..d {
                q = format!("SELECT ({q})");
            }
            q
        }
        // Small, or past the 1 GB a string may hold (an error, not an allocation).
        6 => format!(
            "SELECT repeat('ab', {})",
            if rng.random_bool(0.5) { rng.random_range(0..10_000) } else { rng.random_range(1 << 29..i32::MAX) }
        ),
        _ => {
            let n = rng.random_range(1..3000);
            format!("SELECT a FROM t1 WHERE a IN ({})", (0..n).map(|i| i.to_string()).collect::<Vec<_>>().join(","))
        }
    }
}

#[test]
fn a_hundred_thousand_bad_statements() {
    let total: usize = std::env::var("BEEDB_FUZZ_STATEMENTS").ok().and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let seed: u64 = std::env::var("BEEDB_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(20261121);
    let mut rng = StdRng::seed_from_u64(seed);
    let db = Database::open(":memory:").unwrap();
    let mut conn = db.connect();
    conn.execute_batch(
        "CREATE TABLE t1 (a INTEGER, b TEXT, c NUMERIC(10,2), d DATE);
         CREATE TABLE t2 (x INTEGER PRIMARY KEY, y VARCHAR(20));",
    )
    .unwrap();
    for i in 0..50 {
        conn.execute(
            &format!(
                "INSERT INTO t1 VALUES ({}, {}, {}.{:02}, DATE '2024-01-01' + {})",
                i % 7,
                if i % 5 == 0 { "NULL".to_string() } else { format!("'v{i}a'") },
                i,
                i % 100,
                i
            ),
            &[],
        )
        .unwrap();
        conn.execute(&format!("INSERT INTO t2 VALUES ({i}, 'a{i}')"), &[]).unwrap();
    }
    // Watchdog: fail loudly if one statement runs for more than a minute.
    let progress = Arc::new(AtomicU64::new(0));
    let watched = progress.clone();
    std::thread::spawn(move || {
        let mut last = (0, Instant::now());
        loop {
            std::thread::sleep(Duration::from_secs(5));
            let p = watched.load(Ordering::Relaxed);
            if p == u64::MAX {
                return;
            }
            if p != last.0 {
                last = (p, Instant::now());
            } else if last.1.elapsed() > Duration::from_secs(60) {
                eprintln!("fuzz: statement {p} has run for over 60 s: a hang");
                std::process::exit(101);
            }
        }
    });
    let (mut ok, mut errors) = (0usize, 0usize);
    for i in 0..total {
        let sql = match i % 10 {
            0..=4 => {
                let seed = SEEDS[rng.random_range(0..SEEDS.len())];
                mutate(&mut rng, seed)
            }
            5 | 6 => random_soup(&mut rng),
            7 => extreme(&mut rng),
            _ => SEEDS[rng.random_range(0..SEEDS.len())].to_string(),
        };
        progress.store(i as u64 + 1, Ordering::Relaxed);
        let started = Instant::now();
        let params = [beedb_sql::Value::Integer(1)];
        let r = match conn.prepare(&sql) {
            Ok(stmt) => {
                let p = if stmt.param_count() == 1 { &params[..] } else { &[][..] };
                stmt.execute(&mut conn, p)
            }
            Err(e) => Err(e),
        };
        match r {
            Ok(_) => ok += 1,
            Err(e) => {
                assert_ne!(e.kind, ErrorKind::Internal, "statement {i} hit a bug: {sql:?}: {e}");
                errors += 1;
            }
        }
        let took = started.elapsed();
        assert!(took < Duration::from_secs(30), "statement {i} took {took:?}: {sql:?}");
        if took > Duration::from_millis(200) {
            let shown: String = sql.chars().take(120).collect();
            eprintln!("fuzz: slow statement {i} ({took:?}): {shown}");
        }
        // Keep the tables small so later statements stay fast.
        if i % 1000 == 999 {
            let _ = conn.execute("ROLLBACK", &[]);
            let _ = conn.execute("DELETE FROM t1 WHERE a >= 100", &[]);
            let _ = conn.execute("DELETE FROM t2 WHERE x >= 50", &[]);
        }
    }
    progress.store(u64::MAX, Ordering::Relaxed);
    eprintln!("fuzz: {total} statements: {ok} ran, {errors} errors");
    assert_eq!(ok + errors, total);
    assert!(ok > total / 20, "too few statements ran ({ok}): the generator is broken");
}

/// The same database and statements with bees on (every bee compiled) and off: every
/// statement must give the same rows (as a multiset), the same count of affected rows,
/// or an error of the same SQLSTATE. `BEEDB_FUZZ_DIFF_STATEMENTS` changes the amount
/// (20,000 by default, about 2 s), `BEEDB_FUZZ_SEED` the seed.
#[test]
fn bees_on_and_off_agree_on_generated_statements() {
    let total: usize =
        std::env::var("BEEDB_FUZZ_DIFF_STATEMENTS").ok().and_then(|s| s.parse().ok()).unwrap_or(20_000);
    let seed: u64 = std::env::var("BEEDB_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(20261125);
    let mut rng = StdRng::seed_from_u64(seed);
    let setup = |bees: &str| {
        let db = Database::open(":memory:").unwrap();
        let mut conn = db.connect();
        conn.execute_batch(
            "CREATE TABLE t1 (a INTEGER, b TEXT, c NUMERIC(10,2), d DATE);
             CREATE TABLE t2 (x INTEGER PRIMARY KEY, y VARCHAR(20));",
        )
        .unwrap();
        for i in 0..50 {
            let b = if i % 5 == 0 { "NULL".to_string() } else { format!("'v{i}a'") };
            conn.execute_batch(&format!(
                "INSERT INTO t1 VALUES ({}, {b}, {i}.{:02}, DATE '2024-01-01' + {i}); \
                 INSERT INTO t2 VALUES ({i}, 'a{i}')",
                i % 7,
                i % 100
            ))
            .unwrap();
        }
        conn.execute_batch(bees).unwrap();
        (db, conn)
    };
    let (_on_db, mut on) = setup("SET bees = on; SET bee_maker = compiled");
    let (_off_db, mut off) = setup("SET bees = off");
    let run = |conn: &mut beedb_sql::Connection, sql: &str| -> Result<(Vec<String>, u64), String> {
        let params = [beedb_sql::Value::Integer(1)];
        let r = conn.prepare(sql).and_then(|stmt| {
            let p = if stmt.param_count() == 1 { &params[..] } else { &[][..] };
            stmt.execute(conn, p)
        });
        match r {
            Ok(r) => {
                let mut rows: Vec<String> = r.rows.iter().map(|row| format!("{:?}", row.0)).collect();
                rows.sort();
                Ok((rows, r.rows_affected))
            }
            Err(e) => Err(e.sqlstate.to_string()),
        }
    };
    let mut compared = 0usize;
    for i in 0..total {
        let sql = match i % 4 {
            0 | 1 => {
                let seed = SEEDS[rng.random_range(0..SEEDS.len())];
                mutate(&mut rng, seed)
            }
            _ => SEEDS[rng.random_range(0..SEEDS.len())].to_string(),
        };
        // EXPLAIN shows the bees; the settings differ on purpose.
        if sql.to_ascii_uppercase().contains("EXPLAIN") || sql.to_ascii_uppercase().contains("BEE") {
            continue;
        }
        let a = run(&mut on, &sql);
        let b = run(&mut off, &sql);
        assert_eq!(a, b, "statement {i} differs with bees on (left) and off (right): {sql:?}");
        compared += 1;
        if i % 1000 == 999 {
            for c in [&mut on, &mut off] {
                let _ = c.execute("ROLLBACK", &[]);
                let _ = c.execute("DELETE FROM t1 WHERE a >= 100", &[]);
                let _ = c.execute("DELETE FROM t2 WHERE x >= 50", &[]);
            }
        }
    }
    eprintln!("fuzz: {compared} statements compared with bees on and off");
    assert!(compared > total / 2);
}
