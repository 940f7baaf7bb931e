//! Ordering rows by their normalized keys (what every sort bee's output is for,
//! whichever maker made the bee): an unstable sort of (key words, row index) pairs,
//! which is stable in effect because the index breaks ties.

use std::cmp::Ordering;

/// The permutation that sorts `n` rows by their keys (`stride` bytes apart in `keys`,
/// compared over the whole stride as unsigned bytes; `stride` a multiple of 8), rows
/// with equal keys by `tie` when the key's byte `flag` is set (see
/// [`crate::spec::SortSpec`]), then by index. `tie(a, b)` gets row indices and must
/// be a total order on the rows whose keys are equal.
pub fn order(keys: &[u8], n: usize, stride: usize, flag: Option<usize>, tie: impl FnMut(u32, u32) -> Ordering) -> Vec<u32> {
    assert!(stride > 0 && stride % 8 == 0 && keys.len() >= n * stride);
    assert!(n <= u32::MAX as usize);
    match stride / 8 {
        1 => order_words::<1>(keys, n, flag, tie),
        2 => order_words::<2>(keys, n, flag, tie),
        3 => order_words::<3>(keys, n, flag, tie),
        4 => order_words::<4>(keys, n, flag, tie),
        _ => order_bytes(keys, n, stride, flag, tie),
    }
}

fn order_words<const N: usize>(keys: &[u8], n: usize, flag: Option<usize>, mut tie: impl FnMut(u32, u32) -> Ordering) -> Vec<u32> {
    let stride = N * 8;
    let mut rows: Vec<([u64; N], u32)> = (0..n)
        .map(|r| {
            let k = &keys[r * stride..(r + 1) * stride];
            (std::array::from_fn(|w| u64::from_be_bytes(k[w * 8..w * 8 + 8].try_into().unwrap())), r as u32)
        })
        .collect();
    match flag {
        None => rows.sort_unstable(),
        Some(f) => {
            let (word, shift) = (f / 8, (7 - f % 8) * 8);
            rows.sort_unstable_by(|a, b| {
                a.0.cmp(&b.0)
                    .then_with(|| if (a.0[word] >> shift) & 0xFF != 0 { tie(a.1, b.1) } else { Ordering::Equal })
                    .then(a.1.cmp(&b.1))
            })
        }
    }
    rows.into_iter().map(|(_, r)| r).collect()
}

fn order_bytes(keys: &[u8], n: usize, stride: usize, flag: Option<usize>, mut tie: impl FnMut(u32, u32) -> Ordering) -> Vec<u32> {
    let mut perm: Vec<u32> = (0..n as u32).collect();
    let key = |r: u32| &keys[r as usize * stride..(r as usize + 1) * stride];
    perm.sort_unstable_by(|&a, &b| {
        let (x, y) = (key(a), key(b));
        x.cmp(y)
            .then_with(|| if flag.is_some_and(|f| x[f] != 0) { tie(a, b) } else { Ordering::Equal })
            .then(a.cmp(&b))
    });
    perm
}
