//! A copy of a database file is a database of its own. The file's page 0 records the
//! path of the WAL in use (so hard links find it), and a copy inherits that record:
//! the copy must not follow it to its original's WAL while the original is still
//! there, or it would replay the original's later commits as its own, and two
//! databases would append to one WAL.

use std::path::Path;

use beedb_storage::page::{PAGE_HEADER_SIZE, PageKind, format_page, read_u64, write_u64};
use beedb_storage::{PageId, PageRead, PageWrite, Store, StoreOptions};

fn options() -> StoreOptions {
    // Commits stay in the WAL until an explicit checkpoint or close.
    StoreOptions { checkpoint_frames: u64::MAX, background_checkpoint: false, ..StoreOptions::default() }
}

/// Writes `value` into the page root slot 0 names (made on first use).
fn write(store: &Store, value: u64) {
    let w = store.begin_write().unwrap();
    let id = match w.root(0).unwrap() {
        0 => {
            let mut g = w.allocate_page().unwrap();
            let id = g.id();
            format_page(&mut g, id, PageKind::Heap);
            w.set_root(0, id.0 as u64).unwrap();
            id
        }
        id => PageId(id as u32),
    };
    let mut g = w.write_page(id).unwrap();
    write_u64(&mut g, PAGE_HEADER_SIZE, value);
    drop(g);
    w.commit().unwrap();
}

fn read(path: &Path) -> u64 {
    let (store, _) = Store::open(path, options()).unwrap();
    let r = store.begin_read();
    let id = PageId(r.root(0).unwrap() as u32);
    read_u64(&r.read_page(id).unwrap(), PAGE_HEADER_SIZE)
}

#[test]
fn a_copy_does_not_replay_its_originals_wal() {
    let dir = tempfile::tempdir().unwrap();
    let original = dir.path().join("a.beedb");
    let copy = dir.path().join("b.beedb");
    {
        let (store, _) = Store::open(&original, options()).unwrap();
        write(&store, 1);
        store.checkpoint().unwrap(); // page 0 in the file now records a.beedb-wal
    }
    std::fs::copy(&original, &copy).unwrap();
    // The original goes on, its commit only in its WAL while it stays open.
    let (store, _) = Store::open(&original, options()).unwrap();
    write(&store, 10);
    assert_eq!(read(&copy), 1, "the copy holds what was copied, not the original's later commit");
    drop(store);
    assert_eq!(read(&original), 10);
    // And the copy's own commits stay its own.
    {
        let (store, _) = Store::open(&copy, options()).unwrap();
        write(&store, 2);
    }
    assert_eq!(read(&copy), 2);
    assert_eq!(read(&original), 10);
}
