//! A real process is killed with SIGKILL while committing; the reopened database must
//! hold every transaction the child reported committed, and verify.
//!
//! The child is this same test binary, run with `BEEDB_KILL_CHILD=<path>` so that
//! `child_writer` does the writing instead of returning at once.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use beedb_storage::page::{PAGE_HEADER_SIZE, PageKind, format_page, read_u64, write_u64};
use beedb_storage::{PageId, PageRead, PageWrite, Store, StoreOptions, Synchronous};

const PAGES: u32 = 16;

fn options() -> StoreOptions {
    StoreOptions {
        synchronous: Synchronous::Full,
        checkpoint_frames: 64, // checkpoints happen often, and may be interrupted too
        ..StoreOptions::default()
    }
}

/// Transaction `n` writes `n` into every one of PAGES pages (root slot 0 names the first).
#[test]
fn child_writer() {
    let Ok(path) = std::env::var("BEEDB_KILL_CHILD") else {
        return;
    };
    let (store, _) = Store::open(&path, options()).unwrap();
    let first = {
        let r = store.begin_read();
        r.root(0).unwrap()
    };
    let (first, mut n) = if first == 0 {
        let w = store.begin_write().unwrap();
        let mut first = 0;
        for i in 0..PAGES {
            let mut g = w.allocate_page().unwrap();
            let id = g.id();
            format_page(&mut g, id, PageKind::Heap);
            if i == 0 {
                first = id.0;
            }
        }
        w.set_root(0, first as u64).unwrap();
        w.commit().unwrap();
        (first, 0)
    } else {
        let r = store.begin_read();
        (
            first as u32,
            read_u64(
                &r.read_page(PageId(first as u32)).unwrap(),
                PAGE_HEADER_SIZE,
            ),
        )
    };
    loop {
        n += 1;
        let w = store.begin_write().unwrap();
        for i in 0..PAGES {
            let mut g = w.write_page(PageId(first + i)).unwrap();
            write_u64(&mut g, PAGE_HEADER_SIZE, n);
        }
        w.commit().unwrap();
        println!("committed {n}");
    }
}

#[test]
fn sigkill_during_commits_loses_no_acknowledged_transaction() {
    if std::env::var("BEEDB_KILL_CHILD").is_ok() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kill.beedb");
    let exe = std::env::current_exe().unwrap();
    let mut seed = 0x5eed_u64;
    for round in 0..5 {
        let mut child = Command::new(&exe)
            .args(["--exact", "child_writer", "--nocapture", "--test-threads=1"])
            .env("BEEDB_KILL_CHILD", &path)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(n) = line.strip_prefix("committed ") {
                    let _ = tx.send(n.trim().parse::<u64>().unwrap());
                }
            }
        });
        // Wait for the first commit, then a pseudo-random while more.
        let mut last = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("child commits");
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
        std::thread::sleep(Duration::from_millis(20 + (seed >> 33) % 200));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        reader.join().unwrap();
        while let Ok(n) = rx.try_recv() {
            last = n;
        }
        let (store, _) = Store::open(&path, options()).unwrap();
        store.verify_pages().unwrap();
        let r = store.begin_read();
        let first = r.root(0).unwrap() as u32;
        let got = read_u64(&r.read_page(PageId(first)).unwrap(), PAGE_HEADER_SIZE);
        eprintln!("round {round}: child reported {last}, found {got}");
        assert!(
            got >= last,
            "round {round}: child reported {last} committed, found {got}"
        );
        for i in 1..PAGES {
            let v = read_u64(&r.read_page(PageId(first + i)).unwrap(), PAGE_HEADER_SIZE);
            assert_eq!(v, got, "round {round}: a transaction is half there");
        }
        drop(r);
        store.close().unwrap();
        assert!(Path::new(&path).exists());
    }
}

/// Child side of `second_process_gets_a_clear_lock_error`.
#[test]
fn child_opener() {
    let Ok(path) = std::env::var("BEEDB_LOCK_CHILD") else {
        return;
    };
    match Store::open(&path, options()) {
        Err(e @ beedb_storage::Error::Locked { .. }) => println!("refused: {e}"),
        Err(e) => println!("other error: {e}"),
        Ok(_) => println!("opened"),
    }
}

#[test]
fn second_process_gets_a_clear_lock_error() {
    if std::env::var("BEEDB_LOCK_CHILD").is_ok() || std::env::var("BEEDB_KILL_CHILD").is_ok() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("locked.beedb");
    let run_child = || {
        let out = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "child_opener", "--nocapture", "--test-threads=1"])
            .env("BEEDB_LOCK_CHILD", &path)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    let (store, _) = Store::open(&path, options()).unwrap();
    let w = store.begin_write().unwrap();
    let mut g = w.allocate_page().unwrap();
    let id = g.id();
    format_page(&mut g, id, PageKind::Heap);
    write_u64(&mut g, PAGE_HEADER_SIZE, 42);
    drop(g);
    w.commit().unwrap();
    let out = run_child();
    assert!(out.contains("refused:") && out.contains("locked"), "{out}");
    // The refused open changed nothing.
    assert_eq!(
        read_u64(&store.begin_read().read_page(id).unwrap(), PAGE_HEADER_SIZE),
        42
    );
    drop(store);
    let out = run_child();
    assert!(out.contains("opened"), "{out}");
}
