//! TP1 (debit-credit) transactions in a loop through prepared statements, for
//! profiling the point-statement path under perf or callgrind:
//! `cargo run --release -p beedb-sql --example tp1_loop -- DB on|off N [normal|full|off] [CLIENTS]`.
//! The database is created (100,000 accounts, 10 tellers, 1 branch) when missing.
//! With CLIENTS > 1, that many threads, each with its own connection, run N
//! transactions each (as `beedb bench tp1 --clients`). With a sixth argument
//! `select` or `update`, one client runs only TP1's point SELECT (or its account
//! UPDATE) N times inside one transaction: the statement alone, without commits,
//! for counting its instructions (callgrind's totals of two values of N, subtracted)
//! and allocations.
//! The lab's `beedb bench tp1` is the measurement; this is the microscope.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use beedb_sql::{Database, Value};

/// The system allocator, counting allocations (`alloc` and `realloc`) so that the
/// loop can report them per transaction.
struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

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
    let clients: usize = args.get(5).and_then(|s| s.parse().ok()).unwrap_or(1).max(1);
    let only = args.get(6).map(|s| s.as_str());
    drop(conn);
    let start = Instant::now();
    let allocs = ALLOCS.load(Ordering::Relaxed);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..clients)
            .map(|c| {
                let db = &db;
                s.spawn(move || client(db, bees, sync, n, 0x9e37_79b9_7f4a_7c15u64 ^ (c as u64 * 0x1234_5678_9abc), only))
            })
            .collect();
        handles.into_iter().try_for_each(|h| h.join().expect("client thread"))
    })?;
    let secs = start.elapsed().as_secs_f64();
    let total = n * clients as u64;
    let allocs = ALLOCS.load(Ordering::Relaxed) - allocs;
    println!(
        "{total} transactions ({clients} clients) in {secs:.2} s: {:.0} tps, {:.1} µs each, {:.1} allocations each (all threads)",
        total as f64 / secs,
        secs * 1e6 / total as f64,
        allocs as f64 / total as f64
    );
    Ok(())
}

fn client(db: &Database, bees: &str, sync: &str, n: u64, mut seed: u64, only: Option<&str>) -> beedb_sql::Result<()> {
    let mut conn = db.connect();
    conn.set("bees", bees)?;
    conn.set("synchronous", sync)?;
    conn.set("writer_timeout", "120s")?;
    let select = conn.prepare("SELECT balance FROM account WHERE aid = $1")?;
    let update_account = conn.prepare("UPDATE account SET balance = balance + $1 WHERE aid = $2")?;
    let update_teller = conn.prepare("UPDATE teller SET balance = balance + $1 WHERE tid = $2")?;
    let update_branch = conn.prepare("UPDATE branch SET balance = balance + $1 WHERE bid = $2")?;
    let insert = conn.prepare(
        "INSERT INTO history VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP, 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx')",
    )?;
    let begin = conn.prepare("BEGIN IMMEDIATE")?;
    let commit = conn.prepare("COMMIT")?;
    if let Some(only) = only {
        let select_only = match only {
            "select" => true,
            "update" => false,
            other => panic!("unknown statement {other} (select or update)"),
        };
        begin.execute(&mut conn, &[])?;
        for _ in 0..n {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let aid = Value::BigInt((seed % 100_000) as i64 + 1);
            let delta = Value::Double(((seed >> 40) % 1000) as f64 - 500.0);
            if select_only {
                select.execute(&mut conn, &[aid])?;
            } else {
                update_account.execute(&mut conn, &[delta, aid])?;
            }
        }
        return commit.execute(&mut conn, &[]).map(|_| ());
    }
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
    Ok(())
}
