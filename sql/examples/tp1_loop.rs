//! TP1 (debit-credit) transactions in a loop through prepared statements, for
//! profiling the point-statement path under perf or callgrind:
//! `cargo run --release -p beedb-sql --example tp1_loop -- DB on|off N [normal|full|off]`.
//! The database is created (100,000 accounts, 10 tellers, 1 branch) when missing.
//! The lab's `beedb bench tp1` is the measurement; this is the microscope.

use std::time::Instant;

use beedb_sql::{Database, Value};

fn main() -> beedb_sql::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let path = args.get(1).map_or("tp1.beedb", |s| s.as_str());
    let bees = args.get(2).map_or("on", |s| s.as_str());
    let n: u64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let sync = args.get(4).map_or("normal", |s| s.as_str());
    let fresh = !std::path::Path::new(path).exists();
    let db = Database::open(path)?;
    let mut conn = db.connect();
    conn.set("bees", bees)?;
    conn.set("synchronous", sync)?;
    if fresh {
        conn.execute_batch(
            "CREATE TABLE branch (bid integer PRIMARY KEY, balance double precision, filler text);
             CREATE TABLE teller (tid integer PRIMARY KEY, bid integer, balance double precision, filler text);
             CREATE TABLE account (aid integer PRIMARY KEY, bid integer, balance double precision, filler text);
             CREATE TABLE history (tid integer, bid integer, aid integer, delta double precision, mtime timestamp, filler text);
             INSERT INTO branch SELECT g, 0, repeat('b', 84) FROM generate_series(1, 1) g;
             INSERT INTO teller SELECT g, 1, 0, repeat('t', 84) FROM generate_series(1, 10) g;
             INSERT INTO account SELECT g, 1, 0, repeat('a', 84) FROM generate_series(1, 100000) g;",
        )?;
    }
    let select = conn.prepare("SELECT balance FROM account WHERE aid = $1")?;
    let update_account = conn.prepare("UPDATE account SET balance = balance + $1 WHERE aid = $2")?;
    let update_teller = conn.prepare("UPDATE teller SET balance = balance + $1 WHERE tid = $2")?;
    let update_branch = conn.prepare("UPDATE branch SET balance = balance + $1 WHERE bid = $2")?;
    let insert = conn.prepare(
        "INSERT INTO history VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP, 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx')",
    )?;
    let begin = conn.prepare("BEGIN IMMEDIATE")?;
    let commit = conn.prepare("COMMIT")?;
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let start = Instant::now();
    for _ in 0..n {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let aid = Value::BigInt((seed % 100_000) as i64 + 1);
        let tid = Value::BigInt((seed >> 20) as i64 % 10 + 1);
        let bid = Value::BigInt(1);
        let delta = Value::Double(((seed >> 40) % 1000) as f64 - 500.0);
        begin.execute(&mut conn, &[])?;
        select.execute(&mut conn, &[aid.clone()])?;
        update_account.execute(&mut conn, &[delta.clone(), aid.clone()])?;
        update_teller.execute(&mut conn, &[delta.clone(), tid.clone()])?;
        update_branch.execute(&mut conn, &[delta.clone(), bid.clone()])?;
        insert.execute(&mut conn, &[tid, bid, aid, delta])?;
        commit.execute(&mut conn, &[])?;
    }
    let secs = start.elapsed().as_secs_f64();
    println!("{n} transactions in {secs:.2} s: {:.0} tps, {:.1} µs each", n as f64 / secs, secs * 1e6 / n as f64);
    Ok(())
}
