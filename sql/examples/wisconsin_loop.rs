//! Wisconsin's single-row statements (q7, q29–q32 of `lab/src/workload/wisconsin.rs`)
//! in a loop, each with its own literal as the lab sends them, for timing and for
//! counting instructions under callgrind:
//! `cargo run --release -p beedb-sql --example wisconsin_loop -- DB QUERY N [bees on|off] [ROWS]`
//! (with `STATEMENT_SHAPES=off` in the environment, each statement is parsed and
//! planned on its own: `engine/shape.rs`)
//! where DB is a Wisconsin database with indexes on `tenk1 (unique1)` and
//! `tenk1 (unique2)` (`beedb bench wisconsin` leaves one in its `--out` folder: copy
//! it, the loop changes it), QUERY one of q7, q29, q30, q31, q32, and ROWS the rows of
//! `tenk1` (default 1,000,000; keys are drawn below it). Under callgrind, count only
//! the statements: `--toggle-collect='beedb_sql::session::Connection::execute'`.

use std::time::Instant;

use beedb_sql::Database;

fn main() -> beedb_sql::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let path = args.get(1).map_or("wisconsin.beedb", |s| s.as_str());
    let query = args.get(2).map_or("q7", |s| s.as_str());
    let n: u64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(10_000);
    let bees = args.get(4).map_or("on", |s| s.as_str());
    let db = Database::open(path)?;
    let mut conn = db.connect();
    conn.set("synchronous", "normal")?;
    conn.set("bees", bees)?;
    // `STATEMENT_SHAPES=off` times the statements parsed and planned one by one.
    if let Ok(v) = std::env::var("STATEMENT_SHAPES") {
        conn.set("statement_shapes", &v)?;
    }
    let rows: u64 = args.get(5).and_then(|s| s.parse().ok()).unwrap_or(1_000_000);
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % rows
    };
    let statements: Vec<String> = (0..n)
        .map(|i| match query {
            "q7" => format!("SELECT * FROM tenk1 WHERE unique2 = {}", next()),
            "q29" => format!(
                "INSERT INTO tenk1 VALUES ({k}, {k}, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 'x', 'x', 'x')",
                k = rows + 1 + i
            ),
            "q30" => format!("DELETE FROM tenk1 WHERE unique1 = {}", next()),
            "q31" => format!("UPDATE tenk1 SET unique2 = {} WHERE unique2 = {}", rows + 2, next()),
            "q32" => format!("UPDATE tenk1 SET odd = odd + 2 WHERE unique2 = {}", next()),
            other => panic!("unknown query {other}"),
        })
        .collect();
    let mut affected = 0u64;
    let start = Instant::now();
    for s in &statements {
        let r = conn.execute(s, &[])?;
        affected += r.rows_affected as u64 + r.rows.len() as u64;
    }
    let secs = start.elapsed().as_secs_f64();
    println!("{n} × {query} ({affected} rows) in {secs:.3} s: {:.2} µs each", secs * 1e6 / n as f64);
    Ok(())
}
