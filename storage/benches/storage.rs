//! Microbenchmarks of the storage crate: heap inserts and scans, B+tree lookups and
//! inserts, and commit throughput against SQLite.
//!
//! Run with `cargo bench -p beedb-storage` (about 1.5 minutes after the build); one group with e.g.
//! `cargo bench -p beedb-storage -- heap/`. Figures are measured, never asserted;
//! every benchmark checks its result (row counts, sums, keys found) so that a fast
//! wrong answer fails instead of looking good. See `storage/README.md`, "Benchmarks".

use std::cell::OnceCell;
use std::hint::black_box;
use std::path::Path;
use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use beedb_storage::btree::BTree;
use beedb_storage::heap::{HeapFile, HeapPage};
use beedb_storage::tuple::{Attr, AttrValue, ColumnFormat, TupleLayout};
use beedb_storage::{PageId, PageRead, SlotId, Store, StoreOptions, Synchronous, TupleId};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rand::SeedableRng;
use rand::seq::SliceRandom;

// ----- The row used everywhere: (id int8, a int4, b float8, c text of 60 bytes) -----

/// Length of the text attribute.
const TEXT_LEN: usize = 60;

/// `id` 8 bytes, `a` 4 bytes, `b` 8 bytes (all NOT NULL), `c` variable NOT NULL.
fn row_layout() -> TupleLayout {
    TupleLayout::new(&[
        ColumnFormat::fixed(8, false),
        ColumnFormat::fixed(4, false),
        ColumnFormat::fixed(8, false),
        ColumnFormat::variable(false),
    ])
    .expect("valid layout")
}

/// The attribute bytes of row `id` (little-endian, as the tuple format stores them).
struct Row {
    id: [u8; 8],
    a: [u8; 4],
    b: [u8; 8],
    c: [u8; TEXT_LEN],
}

impl Row {
    fn new(id: u64) -> Row {
        // "row 0000001234: lorem ipsum…", always TEXT_LEN bytes.
        let mut c = *b"row 0000000000: the quick brown fox jumps over the lazy dog ";
        let mut n = id;
        for d in c[4..14].iter_mut().rev() {
            *d = b'0' + (n % 10) as u8;
            n /= 10;
        }
        Row {
            id: id.to_le_bytes(),
            a: (id as i32).wrapping_mul(7).to_le_bytes(),
            b: (id as f64 * 0.25).to_le_bytes(),
            c,
        }
    }

    fn values(&self) -> [AttrValue<'_>; 4] {
        [
            AttrValue::Fixed(&self.id),
            AttrValue::Fixed(&self.a),
            AttrValue::Fixed(&self.b),
            AttrValue::Variable(&self.c),
        ]
    }

    fn text(&self) -> &str {
        std::str::from_utf8(&self.c).expect("ASCII")
    }
}

/// Encoded length of one row (all rows have the same length).
fn encoded_row_len(layout: &TupleLayout) -> usize {
    layout
        .encoded_len(&Row::new(0).values())
        .expect("row matches the layout")
}

/// An in-memory store whose cache holds every page these benchmarks create and whose
/// writer never spills.
fn memory_store() -> Store {
    let options = StoreOptions {
        cache_size_bytes: 512 << 20,
        writer_dirty_pages_max: 1 << 20,
        ..StoreOptions::default()
    };
    Store::open(":memory:", options).expect("open :memory:").0
}

/// Live tuples of `heap` and the sum of their ids, through the page-at-a-time path.
fn count_and_sum_ids<R: PageRead>(heap: HeapFile, r: &R, id_offset: usize) -> (u64, u64) {
    let (mut n, mut sum) = (0u64, 0u64);
    for g in heap.pages(r) {
        let g = g.expect("heap page");
        for (_, t) in HeapPage::new(&g, g.id())
            .expect("heap page")
            .tuples()
            .expect("slots")
        {
            n += 1;
            sum = sum.wrapping_add(read_u64_le(t, id_offset));
        }
    }
    (n, sum)
}

#[inline(always)]
fn read_u64_le(t: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(t[at..at + 8].try_into().expect("8 bytes"))
}

/// Sum of `0..n`.
fn id_sum(n: u64) -> u64 {
    n * n.saturating_sub(1) / 2
}

fn configure(g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
}

// ----- heap -----

/// Fixture sizes are divided by this in criterion's test mode (`cargo test
/// --all-targets` runs every benchmark once, result checks included): 1 when
/// measuring (`cargo bench`), 10 otherwise.
static SCALE: LazyLock<u64> = LazyLock::new(|| {
    let args: Vec<String> = std::env::args().collect();
    let measuring = args.iter().any(|a| a == "--bench") && !args.iter().any(|a| a == "--test");
    if measuring { 1 } else { 10 }
});

/// Rows per `heap/insert` iteration (about 1,250 pages of 8 KiB).
fn insert_rows() -> u64 {
    100_000 / *SCALE
}

/// Rows in the `heap/scan` fixture (about 100 MB of pages).
fn scan_rows() -> u64 {
    1_000_000 / *SCALE
}

fn bench_heap(c: &mut Criterion) {
    let layout = row_layout();
    let row_len = encoded_row_len(&layout) as u64;
    let id_offset = layout.fixed_offset(0).expect("id is fixed");
    let (insert_rows, scan_rows) = (insert_rows(), scan_rows());
    let rows: Vec<Row> = (0..insert_rows).map(Row::new).collect();

    let mut g = c.benchmark_group("heap");
    configure(&mut g);

    // Inserts only: the transaction is begun and the heap created before the clock
    // starts, and rolled back after it stops, so the store is the same every time.
    g.throughput(Throughput::ElementsAndBytes {
        elements: insert_rows,
        bytes: insert_rows * row_len,
    });
    let store = memory_store();
    g.bench_function("insert", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let w = store.begin_write().expect("begin");
                let heap = HeapFile::create(&w).expect("create heap");
                let start = Instant::now();
                for row in &rows {
                    black_box(heap.insert(&w, &row.values(), &layout).expect("insert"));
                }
                total += start.elapsed();
                let (n, sum) = count_and_sum_ids(heap, &w, id_offset);
                assert_eq!((n, sum), (insert_rows, id_sum(insert_rows)));
                w.rollback();
            }
            total
        })
    });
    drop(store);

    // Inserts and the commit (sealing, WAL append, publishing, checkpoint of the
    // in-memory WAL), each iteration into a new in-memory store.
    g.bench_function("insert_commit", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let store = memory_store();
                let start = Instant::now();
                let w = store.begin_write().expect("begin");
                let heap = HeapFile::create(&w).expect("create heap");
                for row in &rows {
                    black_box(heap.insert(&w, &row.values(), &layout).expect("insert"));
                }
                w.commit().expect("commit");
                total += start.elapsed();
                let r = store.begin_read();
                let (n, sum) = count_and_sum_ids(heap, &r, id_offset);
                assert_eq!((n, sum), (insert_rows, id_sum(insert_rows)));
            }
            total
        })
    });
    drop(rows);

    // The scan fixture, built on first use (not at all if the scans are filtered out).
    let fixture: OnceCell<(Store, HeapFile)> = OnceCell::new();
    let scan_bytes = scan_rows * row_len;
    g.throughput(Throughput::ElementsAndBytes {
        elements: scan_rows,
        bytes: scan_bytes,
    });

    // Page at a time; per tuple: its length and its id at the layout's constant offset.
    g.bench_function("scan", |b| {
        let (store, heap) = fixture.get_or_init(|| scan_fixture(&layout));
        let (heap, r) = (*heap, store.begin_read());
        b.iter(|| {
            let (mut n, mut len, mut ids) = (0u64, 0u64, 0u64);
            for g in heap.pages(&r) {
                let g = g.expect("heap page");
                let hp = HeapPage::new(&g, g.id()).expect("heap page");
                for (_, t) in hp.tuples().expect("slots") {
                    n += 1;
                    len += t.len() as u64;
                    ids = ids.wrapping_add(read_u64_le(t, id_offset));
                }
            }
            assert_eq!((n, len, ids), (scan_rows, scan_bytes, id_sum(scan_rows)));
            black_box(ids)
        })
    });

    // The same scan through the generic decoder: every attribute of every tuple.
    g.bench_function("scan_deform", |b| {
        let (store, heap) = fixture.get_or_init(|| scan_fixture(&layout));
        let (heap, r) = (*heap, store.begin_read());
        b.iter(|| {
            let (mut n, mut text, mut ids) = (0u64, 0u64, 0u64);
            for g in heap.pages(&r) {
                let g = g.expect("heap page");
                let hp = HeapPage::new(&g, g.id()).expect("heap page");
                for (_, t) in hp.tuples().expect("slots") {
                    let mut attrs = [Attr::Null; 4];
                    layout.deform(t, &mut attrs).expect("deform");
                    n += 1;
                    if let (Attr::Bytes(id), Attr::Bytes(c)) = (attrs[0], attrs[3]) {
                        ids = ids.wrapping_add(u64::from_le_bytes(id.try_into().expect("8")));
                        text += c.len() as u64;
                    }
                }
            }
            assert_eq!(
                (n, text, ids),
                (scan_rows, scan_rows * TEXT_LEN as u64, id_sum(scan_rows))
            );
            black_box(ids)
        })
    });
    g.finish();
}

/// A heap of `scan_rows()` rows, committed in batches and checkpointed, the cache warm.
fn scan_fixture(layout: &TupleLayout) -> (Store, HeapFile) {
    let (insert_rows, scan_rows) = (insert_rows(), scan_rows());
    let store = memory_store();
    let heap = {
        let w = store.begin_write().expect("begin");
        let heap = HeapFile::create(&w).expect("create heap");
        w.commit().expect("commit");
        heap
    };
    for batch in 0..scan_rows / insert_rows {
        let w = store.begin_write().expect("begin");
        for id in batch * insert_rows..(batch + 1) * insert_rows {
            heap.insert(&w, &Row::new(id).values(), layout)
                .expect("insert");
        }
        w.commit().expect("commit");
    }
    store.checkpoint().expect("checkpoint");
    let r = store.begin_read();
    let pages = heap.pages(&r).count();
    let id_offset = layout.fixed_offset(0).expect("id is fixed");
    assert_eq!(
        count_and_sum_ids(heap, &r, id_offset),
        (scan_rows, id_sum(scan_rows))
    );
    eprintln!(
        "heap/scan fixture: {scan_rows} rows of {} bytes in {pages} pages of {} bytes \
         ({:.0} MB of pages)",
        encoded_row_len(layout),
        store.page_size(),
        (pages * store.page_size()) as f64 / 1e6
    );
    drop(r);
    (store, heap)
}

// ----- B+tree -----

/// Keys in the B+tree fixture.
fn tree_keys() -> u64 {
    1_000_000 / *SCALE
}

/// Fixture key number `i`: `2i`, big-endian (memcmp order is numeric order), so the
/// odd numbers are free for `btree/insert_1m`.
fn tree_key(i: u64) -> [u8; 8] {
    (2 * i).to_be_bytes()
}

/// A key absent from the fixture: `2i + 1`.
fn new_tree_key(i: u64) -> [u8; 8] {
    (2 * i + 1).to_be_bytes()
}

/// The value stored under key `i`: a made-up tuple id (about 80 rows per page).
fn tree_value(i: u64) -> [u8; 6] {
    tid_bytes(TupleId {
        page: PageId((i / 80) as u32 + 1),
        slot: SlotId((i % 80) as u16),
    })
}

/// `0..n` in a seeded random order.
fn shuffled(n: u64) -> Vec<u64> {
    let mut v: Vec<u64> = (0..n).collect();
    v.shuffle(&mut rand::rngs::StdRng::seed_from_u64(0xBEE));
    v
}

/// A unique tree of `tree_keys()` keys made by `BTree::bulk_build`, committed and
/// checkpointed, the cache warm.
fn tree_fixture() -> (Store, BTree) {
    let n = tree_keys();
    let store = memory_store();
    let w = store.begin_write().expect("begin");
    let tree = BTree::bulk_build(&w, (0..n).map(|i| (tree_key(i), tree_value(i))), true)
        .expect("bulk build");
    w.commit().expect("commit");
    store.checkpoint().expect("checkpoint");
    let r = store.begin_read();
    let report = tree.verify(&r).expect("verify");
    assert_eq!(report.entries, n);
    eprintln!(
        "btree fixture: {n} keys of 8 bytes, height {}, {} leaves, {} internal pages",
        report.height, report.leaf_pages, report.internal_pages
    );
    drop(r);
    (store, tree)
}

fn bench_btree(c: &mut Criterion) {
    let n = tree_keys();
    let order = shuffled(n);
    let fixture: OnceCell<(Store, BTree)> = OnceCell::new();
    let mut g = c.benchmark_group("btree");
    configure(&mut g);
    g.throughput(Throughput::Elements(1));

    // Point lookups of existing keys in random order, each checked.
    let mut next = 0usize;
    g.bench_function("lookup_1m", |b| {
        let (store, tree) = fixture.get_or_init(tree_fixture);
        let r = store.begin_read();
        b.iter_custom(|iters| {
            let start = Instant::now();
            for _ in 0..iters {
                let i = order[next];
                next = if next + 1 == order.len() { 0 } else { next + 1 };
                let v = tree.get(&r, &tree_key(i)).expect("get");
                assert!(v.as_deref() == Some(&tree_value(i)[..]), "key {i}");
            }
            start.elapsed()
        })
    });

    // Inserts of new keys in random order into the 1M-key tree, up to `n` of them in
    // one write transaction (a sample of more inserts uses several). The transaction is
    // begun before the clock starts and rolled back after it stops (no commit is
    // measured), so every transaction starts from the same tree; the first change to
    // each leaf copies it into the transaction.
    let mut next = 0usize;
    g.bench_function("insert_1m", |b| {
        let (store, tree) = fixture.get_or_init(tree_fixture);
        b.iter_custom(|iters| {
            let mut elapsed = Duration::ZERO;
            let mut remaining = iters as usize;
            while remaining > 0 {
                let batch = remaining.min(order.len());
                let w = store.begin_write().expect("begin");
                let start = Instant::now();
                for k in 0..batch {
                    let i = order[(next + k) % order.len()];
                    tree.insert(&w, &new_tree_key(i), &tree_value(i))
                        .expect("insert");
                }
                elapsed += start.elapsed();
                for k in [0, batch - 1] {
                    let i = order[(next + k) % order.len()];
                    let v = tree.get(&w, &new_tree_key(i)).expect("get");
                    assert!(v.as_deref() == Some(&tree_value(i)[..]), "new key {i}");
                }
                next = (next + batch) % order.len();
                remaining -= batch;
                w.rollback();
            }
            elapsed
        })
    });
    g.finish();
}

// ----- commit throughput, BeeDB against SQLite -----

const MODES: [(Synchronous, &str); 3] = [
    (Synchronous::Off, "off"),
    (Synchronous::Normal, "normal"),
    (Synchronous::Full, "full"),
];
const THREADS: [usize; 2] = [1, 4];

/// How many of `iters` commits thread `t` of `threads` does.
fn share(iters: u64, threads: usize, t: usize) -> u64 {
    iters / threads as u64 + u64::from((t as u64) < iters % threads as u64)
}

/// A database on a real file: a heap and (its primary key) a unique B+tree.
struct BeeDb {
    store: Store,
    heap: HeapFile,
    tree: BTree,
    layout: TupleLayout,
    next_id: AtomicU64,
}

impl BeeDb {
    fn open(dir: &Path, mode: Synchronous) -> BeeDb {
        let options = StoreOptions {
            synchronous: mode,
            cache_size_bytes: 64 << 20,
            writer_timeout: Duration::from_secs(120),
            ..StoreOptions::default()
        };
        let (store, _) = Store::open(dir.join("bench.beedb"), options).expect("open");
        let w = store.begin_write().expect("begin");
        let heap = HeapFile::create(&w).expect("create heap");
        let tree = BTree::create(&w, true).expect("create tree");
        w.commit().expect("commit");
        BeeDb {
            store,
            heap,
            tree,
            layout: row_layout(),
            next_id: AtomicU64::new(0),
        }
    }

    /// One transaction: insert a row into the heap and its key into the index.
    fn commit_one(&self) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let row = Row::new(id);
        let w = self.store.begin_write().expect("begin");
        let tid = self
            .heap
            .insert(&w, &row.values(), &self.layout)
            .expect("insert");
        self.tree
            .insert(&w, &id.to_be_bytes(), &tid_bytes(tid))
            .expect("index insert");
        w.commit().expect("commit");
    }

    /// Every committed row is there exactly once, and the index finds each.
    fn check(&self) {
        let n = self.next_id.load(Ordering::Relaxed);
        let r = self.store.begin_read();
        let offset = self.layout.fixed_offset(0).expect("fixed");
        assert_eq!(count_and_sum_ids(self.heap, &r, offset), (n, id_sum(n)));
        assert_eq!(self.tree.verify(&r).expect("verify tree").entries, n);
        let mut tuple = Vec::new();
        for id in 0..n {
            let v = self
                .tree
                .get(&r, &id.to_be_bytes())
                .expect("get")
                .expect("every id is indexed");
            let tid = TupleId {
                page: PageId(u32::from_be_bytes(v[..4].try_into().expect("4"))),
                slot: SlotId(u16::from_be_bytes(v[4..].try_into().expect("2"))),
            };
            assert!(self.heap.get_into(&r, tid, &mut tuple).expect("heap get"));
            assert_eq!(read_u64_le(&tuple, offset), id);
        }
    }
}

/// A tuple id as an index value: page (4 bytes) and slot (2 bytes), big-endian.
fn tid_bytes(tid: TupleId) -> [u8; 6] {
    let mut v = [0u8; 6];
    v[..4].copy_from_slice(&tid.page.0.to_be_bytes());
    v[4..].copy_from_slice(&tid.slot.0.to_be_bytes());
    v
}

struct Sqlite {
    conns: Vec<rusqlite::Connection>,
    next_id: AtomicU64,
}

const SQLITE_INSERT: &str = "INSERT INTO t (id, a, b, c) VALUES (?1, ?2, ?3, ?4)";

impl Sqlite {
    fn open(dir: &Path, mode: &str, threads: usize) -> Sqlite {
        let path = dir.join("bench.sqlite");
        let conns: Vec<rusqlite::Connection> = (0..threads)
            .map(|_| {
                let conn = rusqlite::Connection::open(&path).expect("open sqlite");
                conn.busy_timeout(Duration::from_secs(120))
                    .expect("busy_timeout");
                let jm: String = conn
                    .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
                    .expect("journal_mode");
                assert_eq!(jm, "wal");
                conn.execute_batch(&format!("PRAGMA synchronous={mode}"))
                    .expect("synchronous");
                conn
            })
            .collect();
        conns[0]
            .execute_batch(
                "CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, a INTEGER, b REAL, c TEXT)",
            )
            .expect("create table");
        for conn in &conns {
            conn.prepare_cached(SQLITE_INSERT).expect("prepare");
        }
        Sqlite {
            conns,
            next_id: AtomicU64::new(0),
        }
    }

    /// One autocommit INSERT (its own transaction).
    fn commit_one(conn: &rusqlite::Connection, next_id: &AtomicU64) {
        let id = next_id.fetch_add(1, Ordering::Relaxed);
        let row = Row::new(id);
        let mut stmt = conn.prepare_cached(SQLITE_INSERT).expect("prepare");
        let n = stmt
            .execute(rusqlite::params![
                id as i64,
                i32::from_le_bytes(row.a),
                f64::from_le_bytes(row.b),
                row.text()
            ])
            .expect("insert");
        assert_eq!(n, 1);
    }

    fn check(&self) {
        let n = self.next_id.load(Ordering::Relaxed);
        let (count, sum): (i64, i64) = self.conns[0]
            .query_row("SELECT count(*), coalesce(sum(id), 0) FROM t", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .expect("count");
        assert_eq!((count as u64, sum as u64), (n, id_sum(n)));
    }
}

fn bench_commit(c: &mut Criterion) {
    let mut g = c.benchmark_group("commit");
    configure(&mut g);
    g.throughput(Throughput::Elements(1));
    for (mode, name) in MODES {
        for threads in THREADS {
            let dir = tempfile::tempdir().expect("tempdir");
            let db = BeeDb::open(dir.path(), mode);
            g.bench_function(format!("{name}/{threads}"), |b| {
                b.iter_custom(|iters| {
                    let before = db.store.stats().commits.load(Ordering::Relaxed);
                    let start = Instant::now();
                    std::thread::scope(|s| {
                        for t in 0..threads {
                            let db = &db;
                            s.spawn(move || {
                                for _ in 0..share(iters, threads, t) {
                                    db.commit_one();
                                }
                            });
                        }
                    });
                    let elapsed = start.elapsed();
                    let after = db.store.stats().commits.load(Ordering::Relaxed);
                    assert_eq!(after - before, iters);
                    elapsed
                })
            });
            db.check();
            drop(db);

            let mut sq = Sqlite::open(dir.path(), name, threads);
            g.bench_function(format!("sqlite/{name}/{threads}"), |b| {
                b.iter_custom(|iters| {
                    let next_id = &sq.next_id;
                    let before = next_id.load(Ordering::Relaxed);
                    let start = Instant::now();
                    std::thread::scope(|s| {
                        for (t, conn) in sq.conns.iter_mut().enumerate() {
                            s.spawn(move || {
                                for _ in 0..share(iters, threads, t) {
                                    Sqlite::commit_one(conn, next_id);
                                }
                            });
                        }
                    });
                    let elapsed = start.elapsed();
                    assert_eq!(next_id.load(Ordering::Relaxed) - before, iters);
                    elapsed
                })
            });
            sq.check();
        }
    }
    g.finish();
}

criterion_group!(benches, bench_heap, bench_btree, bench_commit);
criterion_main!(benches);
