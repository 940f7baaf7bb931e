//! Savepoints of the write transaction (`WriteTxn::savepoint`, `rollback_to_savepoint`,
//! `release_savepoint`): seeded random heap + B+tree changes under nested savepoints,
//! checked against a model after every rollback, with spilling forced (a small
//! `writer_dirty_pages_max`), long values (overflow chains), pages allocated and freed;
//! then commit, reopen (after a clean close, and after a crash that leaves only the
//! WAL): exactly the kept changes are there and every page, the free list, the heap
//! and the B+tree verify.

use std::collections::BTreeMap;
use std::path::Path;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use beedb_storage::btree::tree::BTree;
use beedb_storage::file::FaultFileSystem;
use beedb_storage::heap::HeapFile;
use beedb_storage::page::PageKind;
use beedb_storage::tuple::{Attr, AttrValue, ColumnFormat, TupleLayout};
use beedb_storage::{PageId, PageRead, Store, StoreOptions, TupleId, WriteTxn};

type Rows = BTreeMap<u64, Vec<u8>>;

fn layout() -> TupleLayout {
    TupleLayout::new(&[ColumnFormat::fixed(8, false), ColumnFormat::variable(true)]).unwrap()
}

#[derive(Clone, Copy)]
struct Table {
    heap: HeapFile,
    index: BTree,
}

impl Table {
    /// A new, empty heap and index in `w`, recorded as roots 0 and 1 as a catalog
    /// would record them.
    fn create(w: &WriteTxn) -> Table {
        let t = Table {
            heap: HeapFile::create(w).unwrap(),
            index: BTree::create(w, true).unwrap(),
        };
        w.set_root(0, t.heap.first_page.0 as u64).unwrap();
        w.set_root(1, t.index.root().0 as u64).unwrap();
        t
    }
}

fn options(dirty_max: usize) -> StoreOptions {
    StoreOptions {
        page_size: 4096,
        cache_size_bytes: 256 * 4096,
        writer_dirty_pages_max: dirty_max,
        background_checkpoint: false,
        ..StoreOptions::default()
    }
}

/// One random insert, update or delete, applied to the model too.
fn random_change(rng: &mut StdRng, w: &WriteTxn, t: &Table, layout: &TupleLayout, rows: &mut Rows) {
    let len = match rng.random_range(0..8) {
        0 => rng.random_range(1500..9000), // out of line: overflow pages
        _ => rng.random_range(1..300),
    };
    let payload: Vec<u8> = (0..len).map(|_| rng.random::<u8>()).collect();
    let k = rng.random::<u64>() % 3000;
    match rows.get(&k) {
        None => {
            let row = [AttrValue::Fixed(&k.to_le_bytes()), AttrValue::Variable(&payload)];
            let tid = t.heap.insert(w, &row, layout).unwrap();
            t.index.insert(w, &k.to_be_bytes(), &tid.to_bytes()).unwrap();
            rows.insert(k, payload);
        }
        Some(_) => {
            let tid = TupleId::from_bytes(&t.index.get(w, &k.to_be_bytes()).unwrap().unwrap()).unwrap();
            if rng.random_bool(0.5) {
                t.heap.delete(w, tid, layout).unwrap();
                assert!(t.index.delete(w, &k.to_be_bytes(), &tid.to_bytes()).unwrap());
                rows.remove(&k);
            } else {
                let row = [AttrValue::Fixed(&k.to_le_bytes()), AttrValue::Variable(&payload)];
                let new_tid = t.heap.update(w, tid, &row, layout).unwrap();
                if new_tid != tid {
                    t.index.delete(w, &k.to_be_bytes(), &tid.to_bytes()).unwrap();
                    t.index.insert(w, &k.to_be_bytes(), &new_tid.to_bytes()).unwrap();
                }
                rows.insert(k, payload);
            }
        }
    }
}

/// Every row through the heap, checked against the index; heap, overflow, index and
/// free pages must account for every page.
fn read_and_check(r: &impl PageRead, t: &Table, layout: &TupleLayout) -> Rows {
    let overflow = t.heap.verify_with_layout(r, layout).unwrap();
    let report = t.index.verify(r).unwrap();
    let mut rows = Rows::new();
    t.heap
        .for_each(r, |tid, tuple| {
            let mut attrs = [Attr::Null, Attr::Null];
            layout.deform(tuple, &mut attrs)?;
            let Attr::Bytes(k) = attrs[0] else { panic!("key is not inline") };
            let k = u64::from_le_bytes(k.try_into().unwrap());
            let payload = match attrs[1] {
                Attr::Bytes(b) => b.to_vec(),
                Attr::External { len, first_page } => HeapFile::fetch_external(r, len, first_page)?,
                Attr::Null => panic!("payload is never NULL"),
            };
            let indexed = t.index.get(r, &k.to_be_bytes())?.and_then(|v| TupleId::from_bytes(&v));
            assert_eq!(indexed, Some(tid), "index entry of key {k}");
            assert!(rows.insert(k, payload).is_none(), "key {k} twice in the heap");
            Ok(())
        })
        .unwrap();
    assert_eq!(report.entries as usize, rows.len());
    // Page accounting: header + heap + overflow + index + free = page count.
    let h = r.read_page(PageId::HEADER).unwrap();
    let (count, free) = (beedb_storage::header::page_count(&h), beedb_storage::header::free_count(&h));
    drop(h);
    let heap_pages = t.heap.pages(r).count() as u64;
    let used = 1 + heap_pages + overflow as u64 + report.pages();
    assert_eq!(used + free as u64, count as u64, "page leak (heap {heap_pages}, overflow {overflow})");
    rows
}

/// A seeded run: a committed table, then one transaction of random changes under a
/// random stack of savepoints (set, rolled back to, released), checked against the
/// model at every rollback; commit (or, in `crash` runs, crash right after the commit
/// so recovery replays the WAL) and reopen.
fn run(seed: u64, crash: bool) -> u64 {
    let mut rng = StdRng::seed_from_u64(seed);
    let fs = FaultFileSystem::new();
    let path = Path::new("savepoint.beedb");
    let layout = layout();
    let opts = options(rng.random_range(16..40));
    let (store, _) = Store::open_with(&fs, path, opts.clone()).unwrap();
    let mut rows = Rows::new();
    let t = {
        let w = store.begin_write().unwrap();
        let t = Table::create(&w);
        for _ in 0..rng.random_range(0..400) {
            random_change(&mut rng, &w, &t, &layout, &mut rows);
        }
        w.commit().unwrap();
        t
    };
    let spilled_before = store.stats().pages_spilled.load(std::sync::atomic::Ordering::Relaxed);
    let w = store.begin_write().unwrap();
    // The model at each open savepoint.
    let mut marks: Vec<Rows> = Vec::new();
    for _ in 0..rng.random_range(50..400) {
        match rng.random_range(0..20) {
            0 | 1 => {
                assert_eq!(w.savepoint().unwrap(), marks.len());
                marks.push(rows.clone());
            }
            2 if !marks.is_empty() => {
                let i = rng.random_range(0..marks.len());
                w.rollback_to_savepoint(i).unwrap();
                marks.truncate(i + 1);
                rows = marks[i].clone();
                assert_eq!(read_and_check(&w, &t, &layout), rows, "seed {seed}: after rollback to {i}");
            }
            3 if !marks.is_empty() => {
                let i = rng.random_range(0..marks.len());
                w.release_savepoint(i).unwrap();
                marks.truncate(i);
            }
            _ => random_change(&mut rng, &w, &t, &layout, &mut rows),
        }
        assert_eq!(w.savepoint_count(), marks.len());
    }
    if let Some(i) = (!marks.is_empty()).then(|| rng.random_range(0..marks.len())) {
        w.rollback_to_savepoint(i).unwrap();
        rows = marks[i].clone();
    }
    assert_eq!(read_and_check(&w, &t, &layout), rows, "seed {seed}: before commit");
    w.commit().unwrap();
    let spilled = store.stats().pages_spilled.load(std::sync::atomic::Ordering::Relaxed) - spilled_before;
    if crash {
        // Only what is durable survives: the commit's frames, spilled ones included.
        fs.crash();
        drop(store);
        fs.restart(seed);
    } else {
        store.close().unwrap();
    }
    let (store, _) = Store::open_with(&fs, path, opts).unwrap();
    let kinds = store.verify_pages().unwrap();
    let r = store.begin_read();
    assert_eq!(read_and_check(&r, &t, &layout), rows, "seed {seed}: after reopen");
    // The free list verify_pages walked is the one the accounting counted.
    assert_eq!(kinds[PageKind::Free as usize], beedb_storage::header::free_count(&r.read_page(PageId::HEADER).unwrap()) as u64);
    spilled
}

#[test]
fn random_savepoints_match_the_model_and_survive_reopen() {
    let runs: u64 = std::env::var("BEEDB_SAVEPOINT_RUNS").ok().and_then(|s| s.parse().ok()).unwrap_or(60);
    let mut spilled = 0;
    for seed in 0..runs {
        spilled += run(seed, seed % 2 == 1);
    }
    // The runs must have spilled pages after savepoints, or they tested little.
    assert!(spilled > 0, "no run spilled a page");
}

/// The cases by hand: nested savepoints, a rollback that keeps its savepoint, a
/// release merging into the parent, pages allocated after a savepoint given back.
#[test]
fn nested_release_and_rollback() {
    let (store, _) = Store::open(":memory:", options(4096)).unwrap();
    let layout = layout();
    let w = store.begin_write().unwrap();
    let t = Table::create(&w);
    let insert = |k: u64, len: usize| {
        let payload = vec![k as u8; len];
        let tid = t.heap.insert(&w, &[AttrValue::Fixed(&k.to_le_bytes()), AttrValue::Variable(&payload)], &layout).unwrap();
        t.index.insert(&w, &k.to_be_bytes(), &tid.to_bytes()).unwrap();
    };
    let keys = |w: &WriteTxn| read_and_check(w, &t, &layout).keys().copied().collect::<Vec<_>>();
    insert(1, 10);
    let pages_at_a = w.page_count().unwrap();
    assert_eq!(w.savepoint().unwrap(), 0); // a
    for k in 100..400 {
        insert(k, 200); // new heap pages, B+tree splits
    }
    assert!(w.page_count().unwrap() > pages_at_a + 10);
    assert_eq!(w.savepoint().unwrap(), 1); // b
    insert(2, 5000); // overflow chain
    w.rollback_to_savepoint(1).unwrap();
    assert_eq!(keys(&w).len(), 301);
    assert_eq!(w.savepoint_count(), 2, "ROLLBACK TO keeps the savepoint");
    insert(3, 10);
    w.release_savepoint(1).unwrap(); // b's change (key 3) now belongs to a
    assert_eq!(w.savepoint_count(), 1);
    w.rollback_to_savepoint(0).unwrap();
    assert_eq!(keys(&w), vec![1]);
    assert_eq!(w.page_count().unwrap(), pages_at_a, "pages allocated after the savepoint given back");
    assert!(w.rollback_to_savepoint(1).is_err());
    assert!(w.release_savepoint(3).is_err());
    insert(4, 10);
    w.release_savepoint(0).unwrap();
    assert_eq!(w.savepoint_count(), 0);
    w.commit().unwrap();
    let r = store.begin_read();
    assert_eq!(read_and_check(&r, &t, &layout).keys().copied().collect::<Vec<_>>(), vec![1, 4]);
    assert_eq!(r.page_count().unwrap(), pages_at_a);
}
