use std::collections::HashMap;

use rand::Rng;
use rand::rngs::StdRng;

use super::*;
use crate::access::testing::MemPageStore;
use crate::page::{PageKind, format_page, write_u16, write_u32};
use crate::testutil::for_seeds;
use crate::tuple::{Attr, ColumnFormat};

/// An owned attribute value; out-of-line values are compared by their bytes.
#[derive(Clone, Debug, PartialEq)]
enum Val {
    Null,
    Bytes(Vec<u8>),
}

fn to_values<'a>(layout: &TupleLayout, row: &'a [Val]) -> Vec<AttrValue<'a>> {
    row.iter()
        .zip(layout.columns())
        .map(|(v, c)| match (v, c.fixed_width()) {
            (Val::Null, _) => AttrValue::Null,
            (Val::Bytes(b), Some(_)) => AttrValue::Fixed(b),
            (Val::Bytes(b), None) => AttrValue::Variable(b),
        })
        .collect()
}

fn read_row(r: &MemPageStore, layout: &TupleLayout, tuple: &[u8]) -> Vec<Val> {
    let mut out = vec![Attr::Null; layout.natts()];
    layout.deform(tuple, &mut out).unwrap();
    out.iter()
        .map(|a| match *a {
            Attr::Null => Val::Null,
            Attr::Bytes(b) => Val::Bytes(b.to_vec()),
            Attr::External { len, first_page } => {
                Val::Bytes(HeapFile::fetch_external(r, len, first_page).unwrap())
            }
        })
        .collect()
}

fn get_row(
    s: &MemPageStore,
    heap: HeapFile,
    layout: &TupleLayout,
    tid: TupleId,
) -> Option<Vec<Val>> {
    heap.get(s, tid).unwrap().map(|t| read_row(s, layout, &t))
}

fn random_columns(rng: &mut StdRng) -> Vec<ColumnFormat> {
    let n = rng.random_range(1..=12);
    let mut cols: Vec<ColumnFormat> = (0..n)
        .map(|_| {
            let nullable = rng.random_bool(0.5);
            if rng.random_bool(0.5) {
                ColumnFormat::fixed([1, 2, 4, 8, 16][rng.random_range(0..5)], nullable)
            } else {
                ColumnFormat::variable(nullable)
            }
        })
        .collect();
    cols.push(ColumnFormat::variable(true)); // always somewhere for long values
    cols
}

fn random_bytes(rng: &mut StdRng, len: usize) -> Vec<u8> {
    let mut b = vec![0u8; len];
    rng.fill(&mut b[..]);
    b
}

fn random_row(rng: &mut StdRng, columns: &[ColumnFormat], page_size: usize) -> Vec<Val> {
    columns
        .iter()
        .map(|c| {
            if c.nullable() && rng.random_bool(0.2) {
                return Val::Null;
            }
            let len = match c.fixed_width() {
                Some(w) => w,
                None => match rng.random_range(0..100) {
                    0..=1 => rng.random_range(page_size..5 * page_size), // several pages
                    2..=9 => rng.random_range(200..page_size / 2),
                    _ => rng.random_range(0..60),
                },
            };
            Val::Bytes(random_bytes(rng, len))
        })
        .collect()
}

/// Structure, tuples and chains check out, and no page leaked: every allocated page is
/// a heap page or an overflow page of a live tuple.
fn check_heap(s: &MemPageStore, heap: HeapFile, layout: &TupleLayout) {
    heap.verify(s).unwrap();
    let overflow_pages = heap.verify_with_layout(s, layout).unwrap();
    let heap_pages = heap.pages(s).count();
    assert_eq!(
        s.allocated_pages(),
        heap_pages + overflow_pages,
        "leaked pages"
    );
}

#[test]
fn random_operations_match_a_model() {
    for_seeds("heap_model", 0..4, |seed, rng| {
        let page_size = [4096, 8192][seed as usize % 2];
        let s = MemPageStore::new(page_size);
        let heap = HeapFile::create(&s).unwrap();
        let columns = random_columns(rng);
        let layout = TupleLayout::new(&columns).unwrap();
        let mut model: HashMap<TupleId, Vec<Val>> = HashMap::new();
        let mut tids: Vec<TupleId> = Vec::new(); // deterministic choice order
        let (mut moved, mut in_place) = (0, 0);
        for _batch in 0..25 {
            for _ in 0..100 {
                let op = rng.random_range(0..100);
                if op < 40 || tids.is_empty() {
                    let row = random_row(rng, &columns, page_size);
                    let tid = heap.insert(&s, &to_values(&layout, &row), &layout).unwrap();
                    assert!(model.insert(tid, row).is_none(), "{tid} handed out twice");
                    tids.push(tid);
                } else if op < 65 {
                    let idx = rng.random_range(0..tids.len());
                    let tid = tids[idx];
                    let row = random_row(rng, &columns, page_size);
                    // Pass some unchanged out-of-line values back as External.
                    let old = heap.get(&s, tid).unwrap().unwrap();
                    let mut old_attrs = vec![Attr::Null; layout.natts()];
                    layout.deform(&old, &mut old_attrs).unwrap();
                    let mut values = to_values(&layout, &row);
                    for (i, a) in old_attrs.iter().enumerate() {
                        if let Attr::External { len, first_page } = *a
                            && rng.random_bool(0.5)
                        {
                            values[i] = AttrValue::External { len, first_page };
                        }
                    }
                    let mut model_row = row.clone();
                    for (i, v) in values.iter().enumerate() {
                        if let AttrValue::External { .. } = v {
                            model_row[i] = model[&tid][i].clone();
                        }
                    }
                    let new = heap.update(&s, tid, &values, &layout).unwrap();
                    model.remove(&tid);
                    if new != tid {
                        // (Usually to another page; to a lower slot of the same page
                        // when removing the old version trimmed enough slots.)
                        moved += 1;
                        assert_eq!(heap.get(&s, tid).unwrap(), None);
                    } else {
                        in_place += 1;
                    }
                    assert!(model.insert(new, model_row).is_none());
                    tids[idx] = new;
                } else if op < 85 {
                    let idx = rng.random_range(0..tids.len());
                    let tid = tids.swap_remove(idx);
                    heap.delete(&s, tid, &layout).unwrap();
                    model.remove(&tid);
                    assert_eq!(heap.get(&s, tid).unwrap(), None);
                } else {
                    let tid = tids[rng.random_range(0..tids.len())];
                    assert_eq!(get_row(&s, heap, &layout, tid).as_ref(), model.get(&tid));
                }
            }
            check_heap(&s, heap, &layout);
            let mut seen = 0;
            heap.for_each(&s, |tid, t| {
                let want = model
                    .get(&tid)
                    .unwrap_or_else(|| panic!("scan found {tid}, not in the model"));
                assert_eq!(&read_row(&s, &layout, t), want, "{tid}");
                seen += 1;
                Ok(())
            })
            .unwrap();
            assert_eq!(seen, model.len());
        }
        assert!(
            moved > 0 && in_place > 0,
            "moved {moved}, in place {in_place}"
        );
        if seed % 2 == 0 {
            // Delete everything: only the (empty) heap pages remain.
            for tid in tids {
                heap.delete(&s, tid, &layout).unwrap();
            }
            check_heap(&s, heap, &layout);
            let pages: Vec<_> = heap.pages(&s).map(|g| g.unwrap()).collect();
            for g in &pages {
                assert_eq!(HeapPage::new(g, g.id()).unwrap().slot_count(), 0);
            }
            assert_eq!(s.allocated_pages(), pages.len());
        }
        // Dropping frees every heap page and every overflow chain.
        heap.drop_heap(&s, &layout).unwrap();
        assert_eq!(s.allocated_pages(), 0);
    });
}

#[test]
fn long_values_round_trip_through_overflow_chains_and_are_freed() {
    let s = MemPageStore::new(4096);
    let layout =
        TupleLayout::new(&[ColumnFormat::fixed(8, false), ColumnFormat::variable(false)]).unwrap();
    let heap = HeapFile::create(&s).unwrap();
    let cap = overflow::capacity(4096);
    for len in [cap * 5 + 3, cap * 2, 100_000] {
        let v: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        let tid = heap
            .insert(
                &s,
                &[AttrValue::Fixed(&[7; 8]), AttrValue::Variable(&v)],
                &layout,
            )
            .unwrap();
        assert_eq!(s.allocated_pages(), 1 + len.div_ceil(cap));
        let t = heap.get(&s, tid).unwrap().unwrap();
        assert_eq!(
            t.len(),
            layout.fixed_end() + crate::tuple::EXTERNAL_POINTER_SIZE
        );
        let Attr::External { len: l, first_page } = layout.attribute(&t, 1).unwrap() else {
            panic!("not moved out of line");
        };
        assert_eq!(l as usize, len);
        assert_eq!(HeapFile::fetch_external(&s, l, first_page).unwrap(), v);
        check_heap(&s, heap, &layout);
        heap.delete(&s, tid, &layout).unwrap();
        assert_eq!(s.allocated_pages(), 1, "chain freed with its tuple");
    }
}

#[test]
fn threshold_boundaries() {
    for page_size in [4096, 8192, 65536] {
        let s = MemPageStore::new(page_size);
        let layout =
            TupleLayout::new(&[ColumnFormat::fixed(8, false), ColumnFormat::variable(false)])
                .unwrap();
        let heap = HeapFile::create(&s).unwrap();
        let threshold = external_threshold(page_size);
        // header 4 + padding 4 + int8 8 + 5-byte length prefix + value = threshold.
        let at = threshold - layout.fixed_end() - 5;
        for (len, external) in [(at, false), (at + 1, true)] {
            let v = vec![0x5A; len];
            let before = s.allocated_pages();
            let tid = heap
                .insert(
                    &s,
                    &[AttrValue::Fixed(&[1; 8]), AttrValue::Variable(&v)],
                    &layout,
                )
                .unwrap();
            let t = heap.get(&s, tid).unwrap().unwrap();
            if external {
                assert_eq!(s.allocated_pages(), before + 1);
                assert!(matches!(
                    layout.attribute(&t, 1).unwrap(),
                    Attr::External { .. }
                ));
            } else {
                assert_eq!(t.len(), threshold);
                assert_eq!(s.allocated_pages(), before);
                assert_eq!(layout.attribute(&t, 1).unwrap(), Attr::Bytes(&v));
            }
            assert_eq!(read_row(&s, &layout, &t)[1], Val::Bytes(v));
        }
        check_heap(&s, heap, &layout);
    }
}

#[test]
fn largest_values_move_first_and_small_ones_stay_unless_needed() {
    let s = MemPageStore::new(8192);
    let heap = HeapFile::create(&s).unwrap();
    let layout = TupleLayout::new(&[ColumnFormat::variable(false); 3]).unwrap();
    let (a, b, c) = (vec![1u8; 1200], vec![2u8; 1500], vec![3u8; 100]);
    let tid = heap
        .insert(
            &s,
            &[
                AttrValue::Variable(&a),
                AttrValue::Variable(&b),
                AttrValue::Variable(&c),
            ],
            &layout,
        )
        .unwrap();
    let t = heap.get(&s, tid).unwrap().unwrap();
    // Only the largest had to go.
    assert_eq!(layout.attribute(&t, 0).unwrap(), Attr::Bytes(&a));
    assert!(matches!(
        layout.attribute(&t, 1).unwrap(),
        Attr::External { len: 1500, .. }
    ));
    assert_eq!(layout.attribute(&t, 2).unwrap(), Attr::Bytes(&c));

    // 100 values of 40 bytes: over the threshold but they all stay inline (8 KiB page)…
    let many = TupleLayout::new(&[ColumnFormat::variable(false); 100]).unwrap();
    let v = vec![9u8; 40];
    let row = vec![AttrValue::Variable(&v); 100];
    let before = s.allocated_pages();
    let tid = heap.insert(&s, &row, &many).unwrap();
    assert_eq!(heap.get(&s, tid).unwrap().unwrap().len(), 4 + 100 * 41);
    assert_eq!(s.allocated_pages(), before, "no overflow page");
    // …but on a 4 KiB page, where 4104 bytes do not fit, just enough of them move.
    let s4 = MemPageStore::new(4096);
    let heap4 = HeapFile::create(&s4).unwrap();
    let tid = heap4.insert(&s4, &row, &many).unwrap();
    let t = heap4.get(&s4, tid).unwrap().unwrap();
    assert!(t.len() <= page::max_tuple_len(4096));
    let moved = many.external_refs(&t).unwrap().len();
    assert_eq!(
        moved,
        (4 + 100 * 41 - page::max_tuple_len(4096)).div_ceil(41 - 9)
    );
    assert_eq!(read_row(&s4, &many, &t), vec![Val::Bytes(v.clone()); 100]);
    check_heap(&s4, heap4, &many);
}

#[test]
fn too_large_rows_are_refused_without_side_effects() {
    let s = MemPageStore::new(8192);
    let heap = HeapFile::create(&s).unwrap();
    let mut cols = vec![ColumnFormat::fixed(16, false); 600];
    cols.push(ColumnFormat::variable(false));
    let layout = TupleLayout::new(&cols).unwrap();
    let f = [0u8; 16];
    let big = vec![0u8; 10_000];
    let mut row = vec![AttrValue::Fixed(&f); 600];
    row.push(AttrValue::Variable(&big));
    let err = heap.insert(&s, &row, &layout).unwrap_err();
    assert!(matches!(err, Error::TooLarge { .. }), "{err}");
    assert_eq!(s.allocated_pages(), 1);
    // Two attributes claiming the same chain are refused.
    let two = TupleLayout::new(&[ColumnFormat::variable(false); 2]).unwrap();
    let ext = AttrValue::External {
        len: 5000,
        first_page: PageId(9),
    };
    assert!(matches!(
        heap.insert(&s, &[ext, ext], &two),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn update_in_place_move_and_external_ownership() {
    let s = MemPageStore::new(4096);
    let heap = HeapFile::create(&s).unwrap();
    let layout =
        TupleLayout::new(&[ColumnFormat::fixed(4, false), ColumnFormat::variable(true)]).unwrap();
    // Five tuples of 4 + 4 + 5 + 750 = 763 bytes (768 aligned, + 4 for the slot): 204
    // bytes of the page stay free.
    let mut tids = Vec::new();
    for k in 0..5 {
        tids.push(
            heap.insert(
                &s,
                &[AttrValue::Fixed(&[k; 4]), AttrValue::Variable(&[1; 750])],
                &layout,
            )
            .unwrap(),
        );
    }
    assert!(tids.iter().all(|t| t.page == heap.first_page));
    // Shrink in place, then grow to 920 bytes: fits only by compacting; same id.
    for len in [10, 900] {
        let v = vec![2u8; len];
        let same = heap
            .update(
                &s,
                tids[1],
                &[AttrValue::Fixed(&[9; 4]), AttrValue::Variable(&v)],
                &layout,
            )
            .unwrap();
        assert_eq!(same, tids[1]);
        check_heap(&s, heap, &layout);
    }
    assert_eq!(
        get_row(&s, heap, &layout, tids[1]).unwrap(),
        vec![Val::Bytes(vec![9; 4]), Val::Bytes(vec![2; 900])]
    );
    // Grow past all the page has (1016 > 820 bytes): the tuple moves to a new page.
    let moved = heap
        .update(
            &s,
            tids[0],
            &[AttrValue::Fixed(&[8; 4]), AttrValue::Variable(&[3; 1000])],
            &layout,
        )
        .unwrap();
    assert_ne!(moved.page, tids[0].page);
    assert_eq!(heap.get(&s, tids[0]).unwrap(), None);
    assert_eq!(
        get_row(&s, heap, &layout, moved).unwrap(),
        vec![Val::Bytes(vec![8; 4]), Val::Bytes(vec![3; 1000])]
    );
    for (i, &tid) in tids.iter().enumerate().skip(2) {
        assert_eq!(
            get_row(&s, heap, &layout, tid).unwrap(),
            vec![Val::Bytes(vec![i as u8; 4]), Val::Bytes(vec![1; 750])]
        );
    }
    check_heap(&s, heap, &layout);

    // A long value passed back as External survives the update; a replaced one is freed.
    let long = vec![4u8; 10_000];
    let tid = heap
        .insert(
            &s,
            &[AttrValue::Fixed(&[1; 4]), AttrValue::Variable(&long)],
            &layout,
        )
        .unwrap();
    let pages = s.allocated_pages();
    let t = heap.get(&s, tid).unwrap().unwrap();
    let Attr::External { len, first_page } = layout.attribute(&t, 1).unwrap() else {
        panic!("not external");
    };
    let tid = heap
        .update(
            &s,
            tid,
            &[
                AttrValue::Fixed(&[2; 4]),
                AttrValue::External { len, first_page },
            ],
            &layout,
        )
        .unwrap();
    assert_eq!(s.allocated_pages(), pages);
    assert_eq!(
        get_row(&s, heap, &layout, tid).unwrap(),
        vec![Val::Bytes(vec![2; 4]), Val::Bytes(long.clone())]
    );
    heap.update(
        &s,
        tid,
        &[AttrValue::Fixed(&[3; 4]), AttrValue::Null],
        &layout,
    )
    .unwrap();
    assert_eq!(
        s.allocated_pages(),
        pages - long.len().div_ceil(overflow::capacity(4096))
    );
    check_heap(&s, heap, &layout);

    // Operations on a dead id.
    let dead = tids[0];
    assert!(matches!(heap.delete(&s, dead, &layout), Err(Error::NoSuchTuple(t)) if t == dead));
    assert!(matches!(
        heap.update(
            &s,
            dead,
            &[AttrValue::Fixed(&[0; 4]), AttrValue::Null],
            &layout
        ),
        Err(Error::NoSuchTuple(_))
    ));
    assert_eq!(
        heap.get(&s, TupleId::new(heap.first_page, 999)).unwrap(),
        None
    );
}

#[test]
fn heap_on_64k_pages() {
    let s = MemPageStore::new(65536);
    let heap = HeapFile::create(&s).unwrap();
    let layout = TupleLayout::new(&[ColumnFormat::variable(false)]).unwrap();
    let v = vec![1u8; 16000];
    let mut tids = Vec::new();
    for _ in 0..9 {
        tids.push(
            heap.insert(&s, &[AttrValue::Variable(&v)], &layout)
                .unwrap(),
        );
        check_heap(&s, heap, &layout);
    }
    assert_eq!(heap.pages(&s).count(), 3); // 4 tuples of 16 KiB per page
    for tid in tids {
        heap.delete(&s, tid, &layout).unwrap();
        check_heap(&s, heap, &layout);
    }
}

/// A heap of two pages with a few tuples each, for corruption tests.
fn small_heap() -> (MemPageStore, HeapFile, TupleLayout, PageId) {
    let s = MemPageStore::new(4096);
    let heap = HeapFile::create(&s).unwrap();
    let layout = TupleLayout::new(&[ColumnFormat::variable(false)]).unwrap();
    let v = vec![7u8; 900];
    let mut second = PageId::NONE;
    for _ in 0..6 {
        let tid = heap
            .insert(&s, &[AttrValue::Variable(&v)], &layout)
            .unwrap();
        if tid.page != heap.first_page {
            second = tid.page;
        }
    }
    assert!(!second.is_none());
    check_heap(&s, heap, &layout);
    (s, heap, layout, second)
}

#[test]
fn verify_detects_corrupted_slots_and_chains() {
    use page::{
        FREE_END_OFFSET, FREE_START_OFFSET, LAST_PAGE_OFFSET, NEXT_PAGE_OFFSET, SLOT_ARRAY_OFFSET,
        SLOT_COUNT_OFFSET,
    };
    type Corruption = (&'static str, fn(&mut [u8]));
    let cases: Vec<Corruption> = vec![
        ("length past the page end", |p| {
            write_u16(p, SLOT_ARRAY_OFFSET + 2, 4000)
        }),
        ("misaligned offset", |p| {
            let off = crate::page::read_u16(p, SLOT_ARRAY_OFFSET);
            write_u16(p, SLOT_ARRAY_OFFSET, off + 3)
        }),
        ("overlapping tuples", |p| {
            let off = crate::page::read_u16(p, SLOT_ARRAY_OFFSET);
            write_u16(p, SLOT_ARRAY_OFFSET + 4, off)
        }),
        ("offset in the free space", |p| {
            write_u16(p, SLOT_ARRAY_OFFSET, 64)
        }),
        ("length below a tuple header", |p| {
            write_u16(p, SLOT_ARRAY_OFFSET + 2, 2)
        }),
        ("slot count past the page", |p| {
            write_u16(p, SLOT_COUNT_OFFSET, 2000)
        }),
        ("free_start disagrees with slot count", |p| {
            let v = crate::page::read_u16(p, FREE_START_OFFSET);
            write_u16(p, FREE_START_OFFSET, v + 4)
        }),
        ("free_end misaligned", |p| {
            let v = crate::page::read_u16(p, FREE_END_OFFSET);
            write_u16(p, FREE_END_OFFSET, v + 4)
        }),
        ("unused slot with an offset", |p| {
            let n = crate::page::read_u16(p, SLOT_COUNT_OFFSET) as usize;
            write_u16(p, SLOT_COUNT_OFFSET, n as u16 + 1);
            write_u16(
                p,
                FREE_START_OFFSET,
                (SLOT_ARRAY_OFFSET + 4 * (n + 1)) as u16,
            );
            write_u16(p, SLOT_ARRAY_OFFSET + 4 * n, 4088);
        }),
        ("unused-slot count", |p| {
            write_u16(p, page::UNUSED_SLOTS_OFFSET, 1)
        }),
        ("wrong page kind", |p| {
            let id = PageId(crate::page::read_u32(p, 4));
            format_page(p, id, PageKind::Overflow)
        }),
    ];
    for (what, corrupt) in cases {
        for on_second in [false, true] {
            let (s, heap, layout, second) = small_heap();
            let victim = if on_second { second } else { heap.first_page };
            corrupt(&mut s.write_page(victim).unwrap());
            match heap.verify(&s) {
                Err(Error::CorruptPage { page, .. }) => assert_eq!(page, victim, "{what}"),
                other => panic!("{what}: verify returned {other:?}"),
            }
            // Readers report the corruption too rather than panic.
            let _ = heap.for_each(&s, |_, _| Ok(()));
            let _ = heap.insert(&s, &[AttrValue::Variable(&[1; 10])], &layout);
            let _ = heap.get(&s, TupleId::new(victim, 0));
            let _ = heap.delete(&s, TupleId::new(victim, 1), &layout);
        }
    }

    // Chain-level corruptions.
    let (s, heap, _, second) = small_heap();
    write_u32(
        &mut s.write_page(second).unwrap(),
        NEXT_PAGE_OFFSET,
        heap.first_page.0,
    );
    assert!(matches!(heap.verify(&s), Err(Error::CorruptPage { page, .. }) if page == second));
    let errors: Vec<_> = heap.pages(&s).filter_map(|g| g.err()).collect();
    assert_eq!(
        errors.len(),
        1,
        "the page iterator reports the loop once and stops"
    );

    let (s, heap, _, second) = small_heap();
    write_u32(
        &mut s.write_page(heap.first_page).unwrap(),
        LAST_PAGE_OFFSET,
        heap.first_page.0,
    );
    assert!(
        matches!(heap.verify(&s), Err(Error::CorruptPage { page, .. }) if page == heap.first_page)
    );
    write_u32(
        &mut s.write_page(heap.first_page).unwrap(),
        LAST_PAGE_OFFSET,
        second.0,
    );
    heap.verify(&s).unwrap();
    write_u32(
        &mut s.write_page(second).unwrap(),
        LAST_PAGE_OFFSET,
        second.0,
    );
    assert!(matches!(heap.verify(&s), Err(Error::CorruptPage { page, .. }) if page == second));

    // A malformed tuple is reported with its page by verify_with_layout.
    let (s, heap, layout, second) = small_heap();
    {
        let mut g = s.write_page(second).unwrap();
        let off = crate::page::read_u16(&g, SLOT_ARRAY_OFFSET) as usize;
        g[off + 1] = 5; // tuple-bee id
    }
    heap.verify(&s).unwrap();
    assert!(
        matches!(heap.verify_with_layout(&s, &layout), Err(Error::CorruptPage { page, .. }) if page == second)
    );
}

#[test]
fn random_page_corruption_never_panics() {
    for_seeds("random_page_corruption", 0..40, |_, rng| {
        let (s, heap, layout, second) = small_heap();
        let victim = if rng.random_bool(0.5) {
            second
        } else {
            heap.first_page
        };
        {
            let mut g = s.write_page(victim).unwrap();
            for _ in 0..rng.random_range(1..6) {
                // Mostly the header and slot array, sometimes anywhere.
                let at = if rng.random_bool(0.8) {
                    rng.random_range(16..64)
                } else {
                    rng.random_range(16..4096)
                };
                g[at] = rng.random();
            }
        }
        let _ = heap.verify(&s);
        let _ = heap.verify_with_layout(&s, &layout);
        let _ = heap.for_each(&s, |_, t| layout.validate(t));
        for slot in 0..8 {
            let _ = heap.get(&s, TupleId::new(victim, slot));
        }
        let _ = heap.update(
            &s,
            TupleId::new(victim, 0),
            &[AttrValue::Variable(&[3; 2000])],
            &layout,
        );
        let _ = heap.insert(&s, &[AttrValue::Variable(&[1; 1500])], &layout);
        let _ = heap.delete(&s, TupleId::new(victim, 1), &layout);
    });
}

#[test]
fn loop_check_finds_every_loop_and_never_a_chain_without_one() {
    let mut chain = LoopCheck::default();
    assert!((0..10_000u32).all(|i| !chain.revisits(PageId(i))));
    for run_in in 0..40u32 {
        for len in 1..40u32 {
            // Pages 0..run_in, then run_in..run_in+len over and over.
            let page = |step: u32| if step < run_in { step } else { run_in + (step - run_in) % len };
            let mut c = LoopCheck::default();
            let found = (0..10 * (run_in + len)).find(|&s| c.revisits(PageId(page(s))));
            let found = found.unwrap_or_else(|| panic!("loop of {len} after {run_in} not found"));
            // Nothing is reported before the walk actually repeats a page.
            assert!(found >= run_in + len, "run-in {run_in}, loop {len}: reported at {found}");
        }
    }
}
