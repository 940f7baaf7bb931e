//! B+tree tests against a `BTreeSet` model, on `MemPageStore` with 4 KiB and 8 KiB
//! pages. Randomized tests use fixed seeds, print the seed when they fail, and replay a
//! single seed when `BEEDB_SEED` is set.

use std::collections::BTreeSet;
use std::ops::Bound;

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

use super::*;
use crate::access::PageWrite;
use crate::access::testing::MemPageStore;
use crate::btree::node::{NodeRef, max_key_len};
use crate::page::{PageKind, read_u16, write_u16, write_u32};

type Entry = (Vec<u8>, Vec<u8>);
type Model = BTreeSet<Entry>;

const PAGE_SIZES: [usize; 2] = [4096, 8192];

/// Prints the seed if the test panics while it is alive.
struct SeedGuard(&'static str, u64);

impl Drop for SeedGuard {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "*** {} failed with seed {} (replay with BEEDB_SEED={})",
                self.0, self.1, self.1
            );
        }
    }
}

fn seeds(default: &[u64]) -> Vec<u64> {
    match std::env::var("BEEDB_SEED") {
        Ok(s) => vec![s.parse().expect("BEEDB_SEED must be a number")],
        Err(_) => default.to_vec(),
    }
}

fn bytes(rng: &mut StdRng, len: usize, alphabet: &[u8]) -> Vec<u8> {
    (0..len)
        .map(|_| alphabet[rng.random_range(0..alphabet.len())])
        .collect()
}

const ALL_BYTES: &[u8] = &{
    let mut a = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        a[i] = i as u8;
        i += 1;
    }
    a
};

/// Keys of varied lengths: empty, short over a tiny alphabet (shared prefixes, many
/// repeats), medium binary, long, and maximum length.
fn mixed_key(rng: &mut StdRng, max: usize) -> Vec<u8> {
    match rng.random_range(0..100) {
        0..=1 => Vec::new(),
        2..=4 => bytes(rng, max, b"ab"),
        5..=59 => {
            let len = rng.random_range(1..=6);
            bytes(rng, len, b"abcd")
        }
        60..=89 => {
            let len = rng.random_range(0..=24);
            bytes(rng, len, ALL_BYTES)
        }
        _ => {
            let len = rng.random_range(25..=max);
            bytes(rng, len, b"abc\x00\xff")
        }
    }
}

/// Maximum-length keys that differ only near the end: separators cannot be
/// truncated, so internal nodes hold few, maximal cells.
fn long_prefix_key(rng: &mut StdRng, max: usize) -> Vec<u8> {
    let mut k = vec![b'x'; max - 4];
    k.extend(bytes(rng, 4, b"abcdefgh"));
    if rng.random_bool(0.1) {
        k.truncate(max - 4 + rng.random_range(0..4));
    }
    k
}

fn mixed_value(rng: &mut StdRng) -> Vec<u8> {
    match rng.random_range(0..10) {
        0 => Vec::new(),
        1 => bytes(rng, MAX_VALUE_LEN, b"vw"),
        2 => {
            let len = rng.random_range(0..=MAX_VALUE_LEN);
            bytes(rng, len, ALL_BYTES)
        }
        _ => bytes(rng, 6, ALL_BYTES),
    }
}

fn long_prefix_value(rng: &mut StdRng) -> Vec<u8> {
    let mut v = vec![b'v'; MAX_VALUE_LEN - 3];
    v.extend(bytes(rng, 3, b"abcdefgh"));
    v
}

fn in_bounds(k: &[u8], lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> bool {
    let above = match lo {
        Bound::Unbounded => true,
        Bound::Included(l) => k >= l,
        Bound::Excluded(l) => k > l,
    };
    let below = match hi {
        Bound::Unbounded => true,
        Bound::Included(h) => k <= h,
        Bound::Excluded(h) => k < h,
    };
    above && below
}

fn model_range(m: &Model, lo: Bound<&[u8]>, hi: Bound<&[u8]>, dir: Direction) -> Vec<Entry> {
    let mut v: Vec<Entry> = m
        .iter()
        .filter(|(k, _)| in_bounds(k, lo, hi))
        .cloned()
        .collect();
    if dir == Direction::Backward {
        v.reverse();
    }
    v
}

fn model_values(m: &Model, key: &[u8]) -> Vec<Vec<u8>> {
    m.range((key.to_vec(), Vec::new())..)
        .take_while(|(k, _)| k == key)
        .map(|(_, v)| v.clone())
        .collect()
}

fn tree_range(
    t: &BTree,
    s: &MemPageStore,
    lo: Bound<&[u8]>,
    hi: Bound<&[u8]>,
    dir: Direction,
) -> Vec<Entry> {
    t.range(s, lo, hi, dir)
        .unwrap()
        .collect::<Result<Vec<_>>>()
        .unwrap()
}

/// `verify`, plus full scans in both directions, against the model.
fn check_all(t: &BTree, s: &MemPageStore, m: &Model) -> VerifyReport {
    let report = t.verify(s).unwrap_or_else(|e| panic!("verify: {e}"));
    assert_eq!(report.entries, m.len() as u64);
    for dir in [Direction::Forward, Direction::Backward] {
        let got = tree_range(t, s, Bound::Unbounded, Bound::Unbounded, dir);
        assert_eq!(
            got,
            model_range(m, Bound::Unbounded, Bound::Unbounded, dir),
            "{dir:?}"
        );
    }
    report
}

fn random_bound(rng: &mut StdRng, m: &Model, max: usize) -> Bound<Vec<u8>> {
    let key = if !m.is_empty() && rng.random_bool(0.6) {
        let i = rng.random_range(0..m.len());
        m.iter().nth(i).unwrap().0.clone()
    } else {
        mixed_key(rng, max)
    };
    match rng.random_range(0..5) {
        0 => Bound::Unbounded,
        1 | 2 => Bound::Included(key),
        _ => Bound::Excluded(key),
    }
}

fn check_random_range(rng: &mut StdRng, t: &BTree, s: &MemPageStore, m: &Model) {
    let max = max_key_len(s.page_size());
    let lo = random_bound(rng, m, max);
    let hi = random_bound(rng, m, max);
    let dir = if rng.random_bool(0.5) {
        Direction::Forward
    } else {
        Direction::Backward
    };
    let (lo, hi) = (lo.as_ref().map(|k| &k[..]), hi.as_ref().map(|k| &k[..]));
    let want = model_range(m, lo, hi, dir);
    assert_eq!(tree_range(t, s, lo, hi, dir), want, "range {lo:?}..{hi:?} {dir:?}");
    // The same range in runs of 1 to 7 entries, each resumed after the last one read.
    let stop = match dir {
        Direction::Forward => hi,
        Direction::Backward => lo,
    };
    let mut got: Vec<Entry> = Vec::new();
    let mut cursor = t.range(s, lo, hi, dir).unwrap();
    loop {
        let run = rng.random_range(1..8);
        let before = got.len();
        while got.len() - before < run {
            match cursor.next_entry().unwrap() {
                Some((k, v)) => got.push((k.to_vec(), v.to_vec())),
                None => break,
            }
        }
        if got.len() - before < run {
            break;
        }
        drop(cursor);
        let (k, v) = got.last().unwrap();
        cursor = t.range_after(s, k, v, stop, dir).unwrap();
    }
    assert_eq!(got, want, "resumed range {lo:?}..{hi:?} {dir:?}");
}

fn pick(rng: &mut StdRng, m: &Model) -> Option<Entry> {
    if m.is_empty() {
        return None;
    }
    let i = rng.random_range(0..m.len());
    m.iter().nth(i).cloned()
}

/// Random inserts, deletes, lookups and range scans checked against the model, with
/// `verify` after every batch; grows the tree, shrinks it, then empties it. Returns
/// the report of the largest tree seen.
fn random_workload(
    ps: usize,
    unique: bool,
    seed: u64,
    ops: usize,
    key: fn(&mut StdRng, usize) -> Vec<u8>,
    value: fn(&mut StdRng) -> Vec<u8>,
) -> VerifyReport {
    let _guard = SeedGuard("random_workload", seed);
    let mut rng = StdRng::seed_from_u64(seed);
    let s = MemPageStore::new(ps);
    let baseline = s.allocated_pages();
    let max = max_key_len(ps);
    let t = BTree::create(&s, unique).unwrap();
    let root = t.root();
    let mut m = Model::new();
    let mut biggest = VerifyReport::default();
    for op in 0..ops {
        // Grow, churn, then shrink; the rest of the rolls are lookups and scans.
        let (insert_share, delete_share) = match op * 10 / ops {
            0..=4 => (0.65, 0.15),
            5..=7 => (0.45, 0.3),
            _ => (0.2, 0.45),
        };
        let lookup_share = (1.0 - insert_share - delete_share) / 2.0;
        let roll: f64 = rng.random();
        if roll < insert_share {
            let existing = pick(&mut rng, &m);
            let (k, v) = match existing {
                Some((k, _)) if rng.random_bool(if unique { 0.1 } else { 0.3 }) => {
                    (k, value(&mut rng))
                }
                Some(e) if rng.random_bool(0.03) => e,
                _ => (key(&mut rng, max), value(&mut rng)),
            };
            let dup = if unique {
                !model_values(&m, &k).is_empty()
            } else {
                m.contains(&(k.clone(), v.clone()))
            };
            match t.insert(&s, &k, &v) {
                Ok(()) => {
                    assert!(!dup, "insert of a duplicate succeeded: {k:?}");
                    m.insert((k, v));
                }
                Err(Error::DuplicateKey) => assert!(dup, "spurious DuplicateKey for {k:?}"),
                Err(e) => panic!("insert: {e}"),
            }
        } else if roll < insert_share + delete_share {
            match pick(&mut rng, &m) {
                Some((k, v)) if unique && rng.random_bool(0.3) => {
                    assert_eq!(t.remove(&s, &k).unwrap(), Some(v.clone()));
                    m.remove(&(k, v));
                }
                Some((k, v)) if rng.random_bool(0.9) => {
                    if unique && rng.random_bool(0.1) {
                        let mut wrong = v.clone();
                        wrong.push(0);
                        assert!(!t.delete(&s, &k, &wrong).unwrap());
                    }
                    assert!(t.delete(&s, &k, &v).unwrap(), "delete of present {k:?}");
                    m.remove(&(k, v));
                }
                _ => {
                    let (k, v) = (key(&mut rng, max), value(&mut rng));
                    let present = m.contains(&(k.clone(), v.clone()));
                    assert_eq!(t.delete(&s, &k, &v).unwrap(), present);
                    m.remove(&(k, v));
                }
            }
        } else if roll < insert_share + delete_share + lookup_share {
            let k = match pick(&mut rng, &m) {
                Some((k, _)) if rng.random_bool(0.7) => k,
                _ => key(&mut rng, max),
            };
            let values = model_values(&m, &k);
            assert_eq!(t.get(&s, &k).unwrap(), values.first().cloned(), "get {k:?}");
            if !unique {
                let got: Vec<Vec<u8>> = t.get_all(&s, &k).unwrap().map(|v| v.unwrap()).collect();
                assert_eq!(got, values, "get_all {k:?}");
            }
        } else {
            check_random_range(&mut rng, &t, &s, &m);
        }
        if op % 250 == 249 {
            let report = check_all(&t, &s, &m);
            assert_eq!(
                s.allocated_pages() - baseline,
                report.pages() as usize,
                "pages leaked or double-counted"
            );
            if report.entries > biggest.entries {
                biggest = report;
            }
        }
    }
    // Empty the tree: only the root page remains.
    let mut rest: Vec<Entry> = m.iter().cloned().collect();
    rest.shuffle(&mut rng);
    for (i, (k, v)) in rest.iter().enumerate() {
        assert!(t.delete(&s, k, v).unwrap());
        m.remove(&(k.clone(), v.clone()));
        if i % 500 == 0 {
            check_all(&t, &s, &m);
        }
    }
    let report = check_all(&t, &s, &m);
    assert_eq!(report.pages(), 1);
    assert_eq!(s.allocated_pages(), baseline + 1);
    assert_eq!(t.root(), root);
    t.drop_tree(&s).unwrap();
    assert_eq!(s.allocated_pages(), baseline);
    biggest
}

#[test]
fn random_ops_match_model_unique() {
    for ps in PAGE_SIZES {
        for seed in seeds(&[1, 2]) {
            let r = random_workload(ps, true, seed, 12_000, mixed_key, mixed_value);
            assert!(r.height >= 2, "tree never grew: {r:?}");
        }
    }
}

#[test]
fn random_ops_match_model_non_unique() {
    for ps in PAGE_SIZES {
        for seed in seeds(&[3, 4]) {
            let r = random_workload(ps, false, seed, 12_000, mixed_key, mixed_value);
            assert!(r.height >= 2, "tree never grew: {r:?}");
        }
    }
}

#[test]
fn random_ops_with_maximal_separators() {
    for unique in [true, false] {
        for seed in seeds(&[5, 6]) {
            let r = random_workload(4096, unique, seed, 5000, long_prefix_key, long_prefix_value);
            assert!(r.height >= 3, "tree never grew: {r:?}");
        }
    }
}

#[test]
fn largest_page_size() {
    // 64 KiB pages: content_start reaches 65536 and cell offsets the top of u16.
    for (unique, seed) in [(true, 8), (false, 9)] {
        let r = random_workload(
            crate::page::MAX_PAGE_SIZE,
            unique,
            seed,
            3000,
            mixed_key,
            mixed_value,
        );
        assert!(r.height >= 2 && r.leaf_pages > 5, "{r:?}");
    }
}

#[test]
fn empty_tree() {
    for unique in [true, false] {
        let s = MemPageStore::new(4096);
        let t = BTree::create(&s, unique).unwrap();
        let r = t.verify(&s).unwrap();
        assert_eq!(
            (r.height, r.entries, r.pages(), r.unique),
            (1, 0, 1, unique)
        );
        assert_eq!(t.get(&s, b"x").unwrap(), None);
        assert!(!t.delete(&s, b"x", b"").unwrap());
        for dir in [Direction::Forward, Direction::Backward] {
            assert!(tree_range(&t, &s, Bound::Unbounded, Bound::Unbounded, dir).is_empty());
        }
        assert_eq!(t.is_unique(&s).unwrap(), unique);
        assert_eq!(t.height(&s).unwrap(), 1);
        t.drop_tree(&s).unwrap();
        assert_eq!(s.allocated_pages(), 0);
    }
}

#[test]
fn key_and_value_limits() {
    for ps in PAGE_SIZES {
        let s = MemPageStore::new(ps);
        let max = max_key_len(ps);
        assert_eq!(max, ps / 8);
        let t = BTree::create(&s, true).unwrap();
        t.insert(&s, &[], &[]).unwrap();
        t.insert(&s, &vec![7; max], &[1; MAX_VALUE_LEN]).unwrap();
        let err = t.insert(&s, &vec![7; max + 1], b"v").unwrap_err();
        assert!(
            matches!(err, Error::TooLarge { size, limit, .. } if size == max + 1 && limit == max)
        );
        let err = t.insert(&s, b"k", &[0; MAX_VALUE_LEN + 1]).unwrap_err();
        assert!(matches!(err, Error::TooLarge { .. }));
        assert_eq!(t.get(&s, &[]).unwrap(), Some(vec![]));
        assert_eq!(
            t.get(&s, &vec![7; max]).unwrap(),
            Some(vec![1; MAX_VALUE_LEN])
        );
        assert_eq!(t.get(&s, &vec![7; max + 1]).unwrap(), None);
        // Only maximal entries: every node holds few cells, the tree gets tall.
        let mut m = Model::new();
        m.insert((vec![], vec![]));
        m.insert((vec![7; max], vec![1; MAX_VALUE_LEN]));
        for i in 0..300u32 {
            let mut k = vec![b'k'; max];
            k[max - 4..].copy_from_slice(&(i.wrapping_mul(2654435761)).to_be_bytes());
            t.insert(&s, &k, &[2; MAX_VALUE_LEN]).unwrap();
            m.insert((k, vec![2; MAX_VALUE_LEN]));
        }
        let r = check_all(&t, &s, &m);
        assert!(r.height >= 3, "{r:?}");
        let err = BTree::bulk_build(&s, [(vec![0u8; max + 1], vec![])], true).unwrap_err();
        assert!(matches!(err, Error::TooLarge { .. }));
    }
}

#[test]
fn unique_tree_rejects_equal_keys() {
    let s = MemPageStore::new(4096);
    let t = BTree::create(&s, true).unwrap();
    t.insert(&s, b"k", b"v1").unwrap();
    assert!(matches!(
        t.insert(&s, b"k", b"v2"),
        Err(Error::DuplicateKey)
    ));
    assert!(matches!(
        t.insert(&s, b"k", b"v1"),
        Err(Error::DuplicateKey)
    ));
    assert_eq!(t.get(&s, b"k").unwrap(), Some(b"v1".to_vec()));
    assert!(!t.delete(&s, b"k", b"v2").unwrap());
    assert_eq!(t.remove(&s, b"k").unwrap(), Some(b"v1".to_vec()));
    assert_eq!(t.remove(&s, b"k").unwrap(), None);
    t.insert(&s, b"k", b"v2").unwrap();
    assert_eq!(t.get(&s, b"k").unwrap(), Some(b"v2".to_vec()));
    // Prefixes are different keys.
    t.insert(&s, b"", b"0").unwrap();
    t.insert(&s, b"k\0", b"3").unwrap();
    t.insert(&s, b"kk", b"4").unwrap();
    let all = tree_range(
        &t,
        &s,
        Bound::Unbounded,
        Bound::Unbounded,
        Direction::Forward,
    );
    let keys: Vec<&[u8]> = all.iter().map(|(k, _)| &k[..]).collect();
    assert_eq!(keys, [&b""[..], b"k", b"k\0", b"kk"]);
    t.verify(&s).unwrap();

    let nu = BTree::create(&s, false).unwrap();
    assert!(matches!(
        nu.remove(&s, b"k"),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn non_unique_tree_keeps_duplicates_across_leaves() {
    for ps in PAGE_SIZES {
        let _guard = SeedGuard("non_unique_tree_keeps_duplicates_across_leaves", 7);
        let mut rng = StdRng::seed_from_u64(7);
        let s = MemPageStore::new(ps);
        let t = BTree::create(&s, false).unwrap();
        let mut m = Model::new();
        let mut order: Vec<u32> = (0..3000).collect();
        order.shuffle(&mut rng);
        for &i in &order {
            let v = i.to_be_bytes().to_vec();
            t.insert(&s, b"dup", &v).unwrap();
            m.insert((b"dup".to_vec(), v));
        }
        for k in [&b"du"[..], b"dupa", b"duo", b"duq", b"dup\0"] {
            for i in 0..50u32 {
                t.insert(&s, k, &i.to_le_bytes()).unwrap();
                m.insert((k.to_vec(), i.to_le_bytes().to_vec()));
            }
        }
        assert!(matches!(
            t.insert(&s, b"dup", &7u32.to_be_bytes()),
            Err(Error::DuplicateKey)
        ));
        let r = check_all(&t, &s, &m);
        assert!(r.leaf_pages > 5, "{r:?}");
        let values: Vec<Vec<u8>> = t.get_all(&s, b"dup").unwrap().map(|v| v.unwrap()).collect();
        assert_eq!(values, model_values(&m, b"dup"));
        assert_eq!(values.len(), 3000);
        assert_eq!(
            t.get(&s, b"dup").unwrap(),
            Some(0u32.to_be_bytes().to_vec())
        );
        for lo in [Bound::Included(&b"dup"[..]), Bound::Excluded(&b"dup"[..])] {
            for hi in [Bound::Included(&b"dup"[..]), Bound::Excluded(&b"dupa"[..])] {
                for dir in [Direction::Forward, Direction::Backward] {
                    assert_eq!(
                        tree_range(&t, &s, lo, hi, dir),
                        model_range(&m, lo, hi, dir)
                    );
                }
            }
        }
        for i in (0..3000u32).step_by(3) {
            assert!(t.delete(&s, b"dup", &i.to_be_bytes()).unwrap());
            m.remove(&(b"dup".to_vec(), i.to_be_bytes().to_vec()));
        }
        assert!(!t.delete(&s, b"dup", &0u32.to_be_bytes()).unwrap());
        check_all(&t, &s, &m);
        let values: Vec<Vec<u8>> = t.get_all(&s, b"dup").unwrap().map(|v| v.unwrap()).collect();
        assert_eq!(values, model_values(&m, b"dup"));
    }
}

#[test]
fn root_page_never_changes() {
    let s = MemPageStore::new(4096);
    let t = BTree::create(&s, true).unwrap();
    let root = t.root();
    let mut last_height = 1;
    for i in 0..40_000u32 {
        let k = format!("key-{:08}", i.wrapping_mul(2654435761));
        t.insert(&s, k.as_bytes(), &i.to_be_bytes()).unwrap();
        if i % 5000 == 0 {
            last_height = t.height(&s).unwrap();
        }
    }
    let reopened = BTree::open(root);
    assert_eq!(reopened.root(), root);
    let r = reopened.verify(&s).unwrap();
    assert!(r.height >= 3 && r.height >= last_height, "{r:?}");
    assert_eq!(r.entries, 40_000);
    assert_eq!(reopened.height(&s).unwrap(), r.height);
    let k = format!("key-{:08}", 1234u32.wrapping_mul(2654435761));
    assert_eq!(
        reopened.get(&s, k.as_bytes()).unwrap(),
        Some(1234u32.to_be_bytes().to_vec())
    );
}

#[test]
fn sequential_inserts_fill_leaves() {
    for ps in PAGE_SIZES {
        let n = 20_000u32;
        for descending in [false, true] {
            let s = MemPageStore::new(ps);
            let t = BTree::create(&s, true).unwrap();
            let mut m = Model::new();
            for i in 0..n {
                let i = if descending { n - 1 - i } else { i };
                let k = i.to_be_bytes().to_vec();
                t.insert(&s, &k, &[0; 6]).unwrap();
                m.insert((k, vec![0; 6]));
            }
            let r = check_all(&t, &s, &m);
            let per_leaf = usable_space(ps) / (leaf_cell_size(4, 6) + SLOT_SIZE);
            let fill = r.entries as f64 / (r.leaf_pages as f64 * per_leaf as f64);
            if descending {
                assert!(fill > 0.45, "descending fill {fill:.2} {r:?}");
            } else {
                assert!(fill > 0.85, "ascending fill {fill:.2} {r:?}");
            }
        }
    }
}

/// Sorted, duplicate-free random entries.
fn sorted_entries(rng: &mut StdRng, n: usize, ps: usize, unique: bool) -> Vec<Entry> {
    let max = max_key_len(ps);
    let mut m = Model::new();
    while m.len() < n {
        let k = mixed_key(rng, max);
        if unique && !model_values(&m, &k).is_empty() {
            continue;
        }
        m.insert((k, mixed_value(rng)));
    }
    m.into_iter().collect()
}

#[test]
fn bulk_build_matches_incremental_insert() {
    for ps in PAGE_SIZES {
        for unique in [true, false] {
            for seed in seeds(&[11]) {
                let _guard = SeedGuard("bulk_build_matches_incremental_insert", seed);
                let mut rng = StdRng::seed_from_u64(seed);
                let s = MemPageStore::new(ps);
                let entries = sorted_entries(&mut rng, 4000, ps, unique);
                let m: Model = entries.iter().cloned().collect();
                let bulk = BTree::bulk_build(&s, entries.iter().cloned(), unique).unwrap();
                let mut shuffled = entries.clone();
                shuffled.shuffle(&mut rng);
                let inc = BTree::create(&s, unique).unwrap();
                for (k, v) in &shuffled {
                    inc.insert(&s, k, v).unwrap();
                }
                let rb = check_all(&bulk, &s, &m);
                let ri = check_all(&inc, &s, &m);
                assert!(rb.height >= 2, "{rb:?}");
                assert!(
                    rb.leaf_pages <= ri.leaf_pages,
                    "bulk {rb:?} incremental {ri:?}"
                );
                for _ in 0..200 {
                    let max = max_key_len(ps);
                    let lo = random_bound(&mut rng, &m, max);
                    let hi = random_bound(&mut rng, &m, max);
                    let (lo, hi) = (lo.as_ref().map(|k| &k[..]), hi.as_ref().map(|k| &k[..]));
                    for dir in [Direction::Forward, Direction::Backward] {
                        assert_eq!(
                            tree_range(&bulk, &s, lo, hi, dir),
                            tree_range(&inc, &s, lo, hi, dir)
                        );
                    }
                }
                for (k, _) in entries.iter().step_by(7) {
                    assert_eq!(bulk.get(&s, k).unwrap(), inc.get(&s, k).unwrap());
                }
                // A bulk-built tree takes further changes like any other.
                let mut m = m;
                for _ in 0..1500 {
                    if rng.random_bool(0.5) {
                        let (k, v) = (mixed_key(&mut rng, max_key_len(ps)), mixed_value(&mut rng));
                        if bulk.insert(&s, &k, &v).is_ok() {
                            m.insert((k, v));
                        }
                    } else if let Some((k, v)) = pick(&mut rng, &m) {
                        assert!(bulk.delete(&s, &k, &v).unwrap());
                        m.remove(&(k, v));
                    }
                }
                check_all(&bulk, &s, &m);
                bulk.drop_tree(&s).unwrap();
                inc.drop_tree(&s).unwrap();
                assert_eq!(s.allocated_pages(), 0);
            }
        }
    }
}

#[test]
fn bulk_build_small_inputs() {
    let s = MemPageStore::new(4096);
    let empty = BTree::bulk_build(&s, Vec::<Entry>::new(), true).unwrap();
    let r = empty.verify(&s).unwrap();
    assert_eq!((r.height, r.entries, r.pages()), (1, 0, 1));
    let one = BTree::bulk_build(&s, [(b"a", b"1")], false).unwrap();
    let r = one.verify(&s).unwrap();
    assert_eq!((r.height, r.entries, r.pages(), r.unique), (1, 1, 1, false));
    assert_eq!(one.get(&s, b"a").unwrap(), Some(b"1".to_vec()));
    one.insert(&s, b"a", b"2").unwrap();
    assert_eq!(s.allocated_pages(), 2);
}

#[test]
fn bulk_build_rejects_bad_input_and_frees_its_pages() {
    let s = MemPageStore::new(4096);
    let keep = BTree::create(&s, true).unwrap();
    let baseline = s.allocated_pages();
    let many = |n: u32| (0..n).map(|i| (i.to_be_bytes().to_vec(), vec![1u8]));

    // Out of order, late enough that several leaves and pages exist.
    let mut bad: Vec<Entry> = many(5000).collect();
    bad.swap(4000, 4001);
    let err = BTree::bulk_build(&s, bad, true).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    assert_eq!(s.allocated_pages(), baseline);

    let mut dup: Vec<Entry> = many(5000).collect();
    dup[3000].0 = dup[2999].0.clone();
    let err = BTree::bulk_build(&s, dup.clone(), true).unwrap_err();
    assert!(matches!(err, Error::DuplicateKey), "{err}");
    assert_eq!(s.allocated_pages(), baseline);

    // Non-unique: equal keys are fine when the values ascend; an equal pair is not.
    dup[3000].1 = vec![2];
    let t = BTree::bulk_build(&s, dup.clone(), false).unwrap();
    assert_eq!(t.verify(&s).unwrap().entries, 5000);
    t.drop_tree(&s).unwrap();
    dup[3000].1 = vec![1];
    let err = BTree::bulk_build(&s, dup.clone(), false).unwrap_err();
    assert!(matches!(err, Error::DuplicateKey), "{err}");
    dup[3000].1 = vec![0];
    let err = BTree::bulk_build(&s, dup, false).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    assert_eq!(s.allocated_pages(), baseline);
    keep.verify(&s).unwrap();
}

#[test]
fn drop_tree_frees_every_page() {
    for ps in PAGE_SIZES {
        let _guard = SeedGuard("drop_tree_frees_every_page", 21);
        let mut rng = StdRng::seed_from_u64(21);
        let s = MemPageStore::new(ps);
        let other = BTree::create(&s, false).unwrap();
        other.insert(&s, b"other", b"tree").unwrap();
        let baseline = s.allocated_pages();
        let t = BTree::create(&s, true).unwrap();
        let mut n = 0;
        while t.height(&s).unwrap() < 3 {
            let k = long_prefix_key(&mut rng, max_key_len(ps));
            if t.insert(&s, &k, b"v").is_ok() {
                n += 1;
            }
        }
        let r = t.verify(&s).unwrap();
        assert_eq!(r.entries, n);
        assert_eq!(s.allocated_pages(), baseline + r.pages() as usize);
        t.drop_tree(&s).unwrap();
        assert_eq!(s.allocated_pages(), baseline);
        let entries = sorted_entries(&mut rng, 3000, ps, false);
        let b = BTree::bulk_build(&s, entries, false).unwrap();
        assert!(b.height(&s).unwrap() >= 2);
        b.drop_tree(&s).unwrap();
        assert_eq!(s.allocated_pages(), baseline);
        assert_eq!(other.get(&s, b"other").unwrap(), Some(b"tree".to_vec()));
        other.verify(&s).unwrap();
    }
}

/// The leaves of `t`, left to right.
fn leaves(t: &BTree, s: &MemPageStore) -> Vec<PageId> {
    let (g, _, _) = t.descend(s, Target::At { key: &[], val: &[] }).unwrap();
    let mut id = g.id();
    drop(g);
    let mut out = vec![];
    while !id.is_none() {
        out.push(id);
        let g = s.read_page(id).unwrap();
        id = NodeRef::new(&g, id).unwrap().next();
    }
    out
}

fn corruptible_tree() -> (MemPageStore, BTree) {
    let s = MemPageStore::new(4096);
    let t = BTree::create(&s, true).unwrap();
    for i in 0..3000u32 {
        let k = format!("key{:06}", i.wrapping_mul(7919) % 100_000);
        t.insert(&s, k.as_bytes(), &i.to_be_bytes()).unwrap();
    }
    let r = t.verify(&s).unwrap();
    assert!(r.height >= 2 && r.leaf_pages >= 8, "{r:?}");
    (s, t)
}

fn assert_corrupt_at(t: &BTree, s: &MemPageStore, page: PageId, what: &str) {
    match t.verify(s) {
        Err(Error::CorruptPage { page: p, detail }) => {
            assert_eq!(
                p, page,
                "{what}: reported page {p} ({detail}), expected {page}"
            )
        }
        other => panic!("{what}: verify returned {other:?}"),
    }
}

fn slot_off(i: usize) -> usize {
    node::SLOT_ARRAY_OFF + 2 * i
}

#[test]
fn verify_detects_corruption() {
    // Swap two keys of a leaf (its slots): order within the node breaks.
    let (s, t) = corruptible_tree();
    let leaf = leaves(&t, &s)[1];
    {
        let mut g = s.write_page(leaf).unwrap();
        let (a, b) = (read_u16(&g, slot_off(0)), read_u16(&g, slot_off(1)));
        write_u16(&mut g, slot_off(0), b);
        write_u16(&mut g, slot_off(1), a);
    }
    assert_corrupt_at(&t, &s, leaf, "swapped keys");

    // A next link that skips a leaf.
    let (s, t) = corruptible_tree();
    let ls = leaves(&t, &s);
    write_u32(&mut s.write_page(ls[1]).unwrap(), 28, ls[3].0);
    assert_corrupt_at(&t, &s, ls[1], "broken next link");

    // A prev link that points nowhere.
    let (s, t) = corruptible_tree();
    let ls = leaves(&t, &s);
    write_u32(&mut s.write_page(ls[2]).unwrap(), 24, 0);
    assert_corrupt_at(&t, &s, ls[2], "broken prev link");

    // The last leaf claims a successor.
    let (s, t) = corruptible_tree();
    let ls = leaves(&t, &s);
    let last = *ls.last().unwrap();
    write_u32(&mut s.write_page(last).unwrap(), 28, ls[0].0);
    assert_corrupt_at(&t, &s, last, "rightmost next link");

    // A key below its subtree's lower bound (the node itself stays sorted).
    let (s, t) = corruptible_tree();
    let leaf = leaves(&t, &s)[2];
    {
        let mut g = s.write_page(leaf).unwrap();
        let (ks, ke, _) = NodeRef::new(&g, leaf).unwrap().leaf_span(0).unwrap();
        g[ks..ke].fill(b' ');
    }
    assert_corrupt_at(&t, &s, leaf, "separator bound");

    // Wrong page kind.
    let (s, t) = corruptible_tree();
    let leaf = leaves(&t, &s)[1];
    s.write_page(leaf).unwrap()[8] = PageKind::Heap as u8;
    assert_corrupt_at(&t, &s, leaf, "page kind");

    // Two slots naming the same cell.
    let (s, t) = corruptible_tree();
    let leaf = leaves(&t, &s)[1];
    {
        let mut g = s.write_page(leaf).unwrap();
        let a = read_u16(&g, slot_off(0));
        write_u16(&mut g, slot_off(3), a);
    }
    assert_corrupt_at(&t, &s, leaf, "overlapping cells");

    // Swapped separators in the root.
    let (s, t) = corruptible_tree();
    {
        let mut g = s.write_page(t.root()).unwrap();
        assert!(NodeRef::new(&g, t.root()).unwrap().count() >= 2);
        let (a, b) = (read_u16(&g, slot_off(0)), read_u16(&g, slot_off(1)));
        write_u16(&mut g, slot_off(0), b);
        write_u16(&mut g, slot_off(1), a);
    }
    assert_corrupt_at(&t, &s, t.root(), "swapped separators");

    // A child pointer to a page already in the tree.
    let (s, t) = corruptible_tree();
    {
        let mut g = s.write_page(t.root()).unwrap();
        let first = NodeRef::new(&g, t.root()).unwrap().child(0).unwrap();
        let off = read_u16(&g, slot_off(0)) as usize;
        write_u32(&mut g, off, first.0);
    }
    assert!(matches!(t.verify(&s), Err(Error::CorruptPage { .. })));

    // A page that is not a tree root.
    let (s, t) = corruptible_tree();
    let leaf = leaves(&t, &s)[0];
    assert_corrupt_at(&BTree::open(leaf), &s, leaf, "open on a non-root");
}

#[test]
fn corrupt_pages_give_errors_not_panics() {
    // A cell offset past the end of the page.
    let (s, t) = corruptible_tree();
    let leaf = leaves(&t, &s)[1];
    {
        let mut g = s.write_page(leaf).unwrap();
        let n = NodeRef::new(&g, leaf).unwrap().count();
        for i in 0..n {
            write_u16(&mut g, slot_off(i), 4095);
        }
    }
    assert_corrupt_at(&t, &s, leaf, "cell past the page end");
    let scan: Result<Vec<_>> = t.scan(&s, Direction::Forward).unwrap().collect();
    assert!(matches!(scan, Err(Error::CorruptPage { page, .. }) if page == leaf));

    // Random byte damage anywhere in the tree: every operation returns, some with errors.
    for seed in seeds(&[31, 32, 33, 34, 35, 36, 37, 38]) {
        let _guard = SeedGuard("corrupt_pages_give_errors_not_panics", seed);
        let mut rng = StdRng::seed_from_u64(seed);
        let (s, t) = corruptible_tree();
        let r = t.verify(&s).unwrap();
        let pages = 1 + r.pages() as u32;
        for _ in 0..rng.random_range(1..20) {
            let id = PageId(rng.random_range(1..pages));
            let mut g = s.write_page(id).unwrap();
            let at = rng.random_range(16..256.min(g.len()));
            g[at] = rng.random();
        }
        let _ = t.verify(&s);
        for i in 0..200u32 {
            let k = format!("key{:06}", i.wrapping_mul(104_729) % 100_000);
            let _ = t.get(&s, k.as_bytes());
            let _ = t.insert(&s, k.as_bytes(), b"new");
            let _ = t.delete(&s, k.as_bytes(), &i.to_be_bytes());
        }
        for dir in [Direction::Forward, Direction::Backward] {
            if let Ok(c) = t.range(&s, Bound::Included(b"key1"), Bound::Unbounded, dir) {
                let _ = c.take(10_000).count();
            }
        }
    }
}

#[test]
fn cursor_exposes_entries_by_reference() {
    let s = MemPageStore::new(4096);
    let t = BTree::create(&s, false).unwrap();
    for i in 0..2000u32 {
        t.insert(&s, &(i / 10).to_be_bytes(), &i.to_be_bytes())
            .unwrap();
    }
    let mut c = t
        .range(
            &s,
            Bound::Excluded(&5u32.to_be_bytes()[..]),
            Bound::Included(&150u32.to_be_bytes()[..]),
            Direction::Backward,
        )
        .unwrap();
    assert_eq!(c.direction(), Direction::Backward);
    assert!(c.current().is_none());
    let mut expect = 1509u32;
    let mut n = 0;
    while let Some((k, v)) = c.next_entry().unwrap() {
        assert_eq!(k, (expect / 10).to_be_bytes());
        assert_eq!(v, expect.to_be_bytes());
        expect -= 1;
        n += 1;
    }
    assert_eq!(n, 1450);
    assert!(!c.advance().unwrap());
    assert!(c.current().is_none());
}

/// Lookup speed on a cached tree of 1M keys. Run with
/// `cargo test --release -p beedb-storage -- --ignored --nocapture lookup_speed`.
#[test]
#[ignore]
fn lookup_speed_1m_keys() {
    use std::time::Instant;
    let n = 1_000_000u64;
    let s = MemPageStore::new(8192);
    let start = Instant::now();
    let t = BTree::bulk_build(
        &s,
        (0..n).map(|i| ((i * 2).to_be_bytes(), (i as u32).to_be_bytes())),
        true,
    )
    .unwrap();
    println!("bulk_build of {n} keys: {:?}", start.elapsed());
    let mut rng = StdRng::seed_from_u64(1);
    let probes: Vec<[u8; 8]> = (0..n)
        .map(|_| (rng.random_range(0..n) * 2).to_be_bytes())
        .collect();
    let start = Instant::now();
    let mut found = 0;
    for k in &probes {
        found += t.get(&s, k).unwrap().is_some() as usize;
    }
    let el = start.elapsed();
    assert_eq!(found, n as usize);
    println!(
        "get: {:.0} ns/lookup (height {})",
        el.as_nanos() as f64 / n as f64,
        t.height(&s).unwrap()
    );
    let mut sorted = probes.clone();
    sorted.sort_unstable();
    let start = Instant::now();
    for k in &sorted {
        found += t.get(&s, k).unwrap().is_some() as usize;
    }
    let el = start.elapsed();
    assert_eq!(found, 2 * n as usize);
    println!(
        "get in key order (cache-friendly): {:.0} ns/lookup",
        el.as_nanos() as f64 / n as f64
    );
    let start = Instant::now();
    let mut ids = 0;
    for k in &probes[..100_000] {
        ids += s.read_page(PageId(1 + k[7] as u32)).unwrap().id().0 as usize;
    }
    println!(
        "MemPageStore::read_page alone: {:.0} ns/page ({ids})",
        start.elapsed().as_nanos() as f64 / 100_000.0
    );
    let s2 = MemPageStore::new(8192);
    let t2 = BTree::create(&s2, true).unwrap();
    let start = Instant::now();
    for k in &probes[..200_000] {
        let _ = t2.insert(&s2, k, b"tid123");
    }
    println!(
        "insert: {:.0} ns/insert (random keys)",
        start.elapsed().as_nanos() as f64 / 200_000.0
    );
    t2.verify(&s2).unwrap();
}
