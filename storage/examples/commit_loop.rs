//! A profiling driver for the commit path: `n` transactions, each inserting one row into
//! a heap and its key into a unique B+tree, then committing.
//!
//! `cargo run --release -p beedb-storage --example commit_loop -- 20000 off`, or under
//! `valgrind --tool=callgrind` for instruction counts.

use std::time::{Duration, Instant};

use beedb_storage::btree::BTree;
use beedb_storage::heap::HeapFile;
use beedb_storage::tuple::{AttrValue, ColumnFormat, TupleLayout};
use beedb_storage::{Store, StoreOptions, Synchronous};

fn main() {
    let mut args = std::env::args().skip(1);
    let n: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(20_000);
    let mode: Synchronous = args
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(Synchronous::Off);
    let dir = tempfile::tempdir().expect("temporary directory");
    let options = StoreOptions {
        synchronous: mode,
        ..StoreOptions::default()
    };
    let (store, _) = Store::open(dir.path().join("commit.beedb"), options).expect("open");
    let layout = TupleLayout::new(&[ColumnFormat::fixed(8, false), ColumnFormat::variable(false)])
        .expect("layout");
    let w = store.begin_write().expect("begin");
    let heap = HeapFile::create(&w).expect("heap");
    let tree = BTree::create(&w, true).expect("tree");
    w.commit().expect("commit");
    let text = b"a sixty-byte text value, the size of a typical comment field";
    let (mut work, mut commit) = (Duration::ZERO, Duration::ZERO);
    let start = Instant::now();
    for id in 0..n {
        let t0 = Instant::now();
        let w = store.begin_write().expect("begin");
        let row = [
            AttrValue::Fixed(&id.to_le_bytes()),
            AttrValue::Variable(text),
        ];
        let tid = heap.insert(&w, &row, &layout).expect("insert");
        tree.insert(&w, &id.to_be_bytes(), &tid.to_bytes())
            .expect("index");
        let t1 = Instant::now();
        w.commit().expect("commit");
        work += t1 - t0;
        commit += t1.elapsed();
    }
    let per = |d: Duration| d / n as u32;
    println!(
        "{n} commits ({mode:?}): {:?} each (changes {:?}, commit {:?}); {} WAL syncs, {} checkpoints",
        per(start.elapsed()),
        per(work),
        per(commit),
        store.wal_syncs(),
        store
            .stats()
            .checkpoints
            .load(std::sync::atomic::Ordering::Relaxed)
    );
}
