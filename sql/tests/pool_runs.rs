//! Small buffer pools and parallel scans (issue 16): with `threads = 2` and
//! `parallel_min_rows = 0`, scans of a 200,000-row table over a pool of 64 or 128
//! frames (`cache_size_bytes` 0 or 1 MiB; 8 KiB pages) failed with 58000 "buffer pool
//! exhausted: all N frames are pinned", where one thread answered at 64 frames. The
//! parallel page dispenser (`exec/parallel.rs`, `Morsels::take_run`) pins runs of 16
//! consecutive pages per thread, and the buffer pool (`storage/src/buffer_pool.rs`)
//! is 16 shards of `frames / 16` frames (4 at 64 frames, 8 at 128), 64 consecutive
//! page ids to a shard: one thread's run filled its shard, and the other thread,
//! asking for the next pages with no page held, found that shard all pinned and
//! failed. A thread with no page now waits for the others to release theirs.

use beedb_sql::Database;

#[test]
fn two_threads_scan_within_a_pool_of_64_frames() {
    let dir = tempfile::tempdir().unwrap();
    let mut failed = Vec::new();
    for (threads, cache) in [(1, 0usize), (2, 0), (2, 1 << 20)] {
        let storage = beedb_storage::StoreOptions { cache_size_bytes: cache, ..Default::default() };
        let db = Database::open_with(dir.path().join(format!("p{threads}-{cache}.db")), beedb_sql::DatabaseOptions { storage })
            .unwrap();
        let mut c = db.connect();
        c.execute_batch(
            "CREATE TABLE a (x INTEGER, s TEXT); \
             INSERT INTO a SELECT i, repeat('x', 50) FROM generate_series(1, 200000) g(i); \
             CREATE TABLE b AS SELECT * FROM a; ANALYZE",
        )
        .unwrap();
        c.execute_batch(&format!("SET threads = {threads}; SET parallel_min_rows = 0")).unwrap();
        for q in [
            "SELECT count(*) FROM a",
            "SELECT count(*) FROM a JOIN b ON a.x = b.x",
            "SELECT count(*) FROM a WHERE EXISTS (SELECT 1 FROM b WHERE b.x = a.x)",
            "SELECT x % 7, count(*) FROM a GROUP BY 1",
        ] {
            if let Err(e) = c.query(q, &[]) {
                failed.push(format!("threads {threads}, cache_size_bytes {cache}: {q}: {} {}", e.sqlstate, e.message));
            }
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}
