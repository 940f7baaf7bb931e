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
    // With BEEDB_KILL_NO_CHECKPOINT set, the child never checkpoints, so every commit it
    // reports lives only in the WAL: an open that missed the WAL would see none of them.
    let checkpoint_frames = if std::env::var("BEEDB_KILL_NO_CHECKPOINT").is_ok() {
        u64::MAX
    } else {
        64 // checkpoints happen often, and may be interrupted too
    };
    StoreOptions {
        synchronous: Synchronous::Full,
        checkpoint_frames,
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
    let mut seed = 0x5eed_u64;
    for round in 0..5 {
        let last = kill_a_writer(&path, &mut seed, false);
        let got = reopen_and_check(&path, round);
        assert!(
            got >= last,
            "round {round}: child reported {last} committed, found {got}"
        );
        assert!(Path::new(&path).exists());
    }
}

/// Runs `child_writer` on `path` until a pseudo-random moment after its first commit,
/// kills it with SIGKILL and returns the last commit it reported.
fn kill_a_writer(path: &Path, seed: &mut u64, no_checkpoint: bool) -> u64 {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args(["--exact", "child_writer", "--nocapture", "--test-threads=1"])
        .env("BEEDB_KILL_CHILD", path)
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if no_checkpoint {
        command.env("BEEDB_KILL_NO_CHECKPOINT", "1");
    }
    let mut child = command.spawn().unwrap();
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
    *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
    std::thread::sleep(Duration::from_millis(20 + (*seed >> 33) % 200));
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    reader.join().unwrap();
    while let Ok(n) = rx.try_recv() {
        last = n;
    }
    last
}

/// Opens `path`, verifies every page, checks that no transaction is half there and
/// returns the newest one found; closes cleanly.
fn reopen_and_check(path: &Path, round: usize) -> u64 {
    let (store, _) = Store::open(path, options()).unwrap();
    store.verify_pages().unwrap();
    let r = store.begin_read();
    let first = r.root(0).unwrap() as u32;
    let got = read_u64(&r.read_page(PageId(first)).unwrap(), PAGE_HEADER_SIZE);
    eprintln!("round {round}: {} holds {got}", path.display());
    for i in 1..PAGES {
        let v = read_u64(&r.read_page(PageId(first + i)).unwrap(), PAGE_HEADER_SIZE);
        assert_eq!(v, got, "round {round}: a transaction is half there");
    }
    drop(r);
    store.close().unwrap();
    got
}

/// The WAL's length, to show the commits under test were only in the WAL.
fn wal_len(db: &Path) -> u64 {
    let mut wal = db.as_os_str().to_owned();
    wal.push("-wal");
    std::fs::metadata(wal).map_or(0, |m| m.len())
}

/// A writer on the real name is killed; the database is reopened through a symbolic
/// link and through a hard link (each must see every acknowledged commit, which are only
/// in the WAL named after the real file); then writers through each link are killed and
/// the real name must see their commits, with no stale WAL replayed over them.
#[test]
fn sigkill_then_reopen_by_symlink_and_hard_link_loses_nothing() {
    if std::env::var("BEEDB_KILL_CHILD").is_ok() || std::env::var("BEEDB_LOCK_CHILD").is_ok() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real.beedb");
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    let symlink = sub.join("symlink.beedb");
    std::os::unix::fs::symlink("../real.beedb", &symlink).unwrap();
    let hard = sub.join("hard.beedb");
    let mut seed = 0x1157_u64;
    let mut round = 0;
    for via in [&symlink, &hard] {
        let last = kill_a_writer(&real, &mut seed, true);
        if via == &hard && !hard.exists() {
            std::fs::hard_link(&real, &hard).unwrap();
        }
        assert!(wal_len(&real) > 512, "the commits are in the WAL");
        let got = reopen_and_check(via, round);
        assert!(
            got >= last,
            "round {round}: the writer on {} reported {last}, {} holds {got}",
            real.display(),
            via.display()
        );
        round += 1;
        // Now the other way round: write through the link, reopen by the real name.
        let last = kill_a_writer(via, &mut seed, true);
        assert!(last > got, "the writer through the link went on from {got}");
        assert_eq!(wal_len(via), 0, "no WAL named after the link");
        let got = reopen_and_check(&real, round);
        assert!(
            got >= last,
            "round {round}: the writer on {} reported {last}, {} holds {got}",
            via.display(),
            real.display()
        );
        round += 1;
    }
    // A clean close through the hard link, then the real name: the same data.
    let last = kill_a_writer(&hard, &mut seed, false);
    let through_link = reopen_and_check(&hard, round);
    assert!(through_link >= last);
    assert_eq!(reopen_and_check(&real, round + 1), through_link);
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

/// After a crash, the database file is renamed (`mv a b`) or hard-linked then unlinked
/// (`ln a b; rm a`), so its commits are in a WAL named after a file that no longer
/// exists. Creating a new database under the old name must refuse (naming that WAL)
/// instead of deleting it; the moved database keeps every acknowledged commit; and once
/// the moved database has been opened (its WAL folded in and reset), the old name can be
/// used for a new database.
#[test]
fn a_new_database_refuses_to_delete_a_moved_databases_wal() {
    if std::env::var("BEEDB_KILL_CHILD").is_ok() || std::env::var("BEEDB_LOCK_CHILD").is_ok() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.beedb");
    let mut seed = 0xa11c_u64;
    for (round, how) in ["rename", "hard link then unlink"].into_iter().enumerate() {
        let b = dir.path().join(format!("b{round}.beedb"));
        let last = kill_a_writer(&a, &mut seed, true);
        assert!(wal_len(&a) > 512, "the commits are only in the WAL");
        if round == 0 {
            std::fs::rename(&a, &b).unwrap();
        } else {
            std::fs::hard_link(&a, &b).unwrap();
            std::fs::remove_file(&a).unwrap();
        }
        if round == 1 {
            // An empty file at the old name (`touch a.beedb`) is no database: it must
            // neither be initialized over the WAL nor hide the WAL from its owner.
            std::fs::File::create(&a).unwrap();
        }
        let wal_before = std::fs::read(dir.path().join("a.beedb-wal")).unwrap();
        let err = match Store::open(&a, options()) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("{how}: a new a.beedb was created over the moved database's WAL"),
        };
        assert!(
            err.contains("a.beedb-wal") && err.contains("committed transaction"),
            "{how}: {err}"
        );
        if round == 0 {
            assert!(!a.exists(), "{how}: the refused open left no file behind");
        } else {
            assert_eq!(std::fs::metadata(&a).unwrap().len(), 0, "{how}");
        }
        assert_eq!(
            std::fs::read(dir.path().join("a.beedb-wal")).unwrap(),
            wal_before,
            "{how}: the refused open left the WAL as it was"
        );
        let got = reopen_and_check(&b, round);
        assert!(got >= last, "{how}: the writer reported {last}, {} holds {got}", b.display());
        // The moved database's WAL is folded in and reset now: the name is free.
        let _ = std::fs::remove_file(&a);
        let (store, report) = Store::open(&a, options()).unwrap();
        assert!(report.created, "{how}");
        drop(store);
        assert_eq!(reopen_and_check(&b, round), got, "{how}: the new a.beedb took nothing");
        std::fs::remove_file(&a).unwrap();
        std::fs::remove_file(dir.path().join("a.beedb-wal")).unwrap();
    }
}

/// The lock is on the file, not the name: a second process is refused through a
/// symbolic link and through a hard link while the first holds the real name, and the
/// other way round.
#[test]
fn the_lock_holds_through_symlinks_and_hard_links() {
    if std::env::var("BEEDB_LOCK_CHILD").is_ok() || std::env::var("BEEDB_KILL_CHILD").is_ok() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real.beedb");
    let symlink = dir.path().join("symlink.beedb");
    let hard = dir.path().join("hard.beedb");
    let run_child = |path: &Path| {
        let out = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "child_opener", "--nocapture", "--test-threads=1"])
            .env("BEEDB_LOCK_CHILD", path)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    drop(Store::open(&real, options()).unwrap());
    std::os::unix::fs::symlink("real.beedb", &symlink).unwrap();
    std::fs::hard_link(&real, &hard).unwrap();
    for holder in [&real, &symlink, &hard] {
        let (store, _) = Store::open(holder, options()).unwrap();
        for other in [&real, &symlink, &hard] {
            let out = run_child(other);
            assert!(
                out.contains("refused:") && out.contains("locked"),
                "{} held, {} opened: {out}",
                holder.display(),
                other.display()
            );
        }
        drop(store);
        assert!(run_child(holder).contains("opened"));
    }
}
