//! Prepared lookups by a non-unique index key in a loop (three rows a key), for
//! profiling the point path against the operator tree under perf or callgrind:
//! `cargo run --release -p beedb-sql --example lookup_loop -- DB on|off N`
//! (`on|off` is the `point_path` setting). The database is created (300,000 rows,
//! an index on a key that three rows share) when missing.

use std::time::Instant;

use beedb_sql::{Database, Value};

fn main() -> beedb_sql::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let path = args.get(1).map_or("lookup.beedb", |s| s.as_str());
    let point_path = args.get(2).map_or("on", |s| s.as_str());
    let n: u64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let fresh = !std::path::Path::new(path).exists();
    let db = Database::open(path)?;
    let mut conn = db.connect();
    conn.set("point_path", point_path)?;
    if fresh {
        conn.execute_batch(
            "CREATE TABLE m (id INTEGER PRIMARY KEY, g INTEGER, s TEXT);
             CREATE INDEX m_g ON m (g);
             INSERT INTO m SELECT i, i / 3, 's' || i FROM generate_series(1, 300000) i;
             ANALYZE m;",
        )?;
    }
    let select = conn.prepare("SELECT id, s FROM m WHERE g = $1")?;
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut rows = 0usize;
    let start = Instant::now();
    for _ in 0..n {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        rows += select.execute(&mut conn, &[Value::Integer((seed % 100_000) as i32)])?.rows.len();
    }
    let secs = start.elapsed().as_secs_f64();
    println!("{n} lookups ({rows} rows) in {secs:.2} s: {:.2} µs each", secs * 1e6 / n as f64);
    Ok(())
}
