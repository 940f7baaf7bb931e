//! The instantiated maker of aggregate bees: per key part a packing kernel and per
//! aggregate an update kernel, each monomorphized over its input type (and
//! whether the batch has NULLs), chosen and bound to its bit offsets at make time.
//! One call packs the batch's keys (part by part into one packed key per row),
//! finds or inserts every row's group in the packed table (a run of equal keys costs
//! one comparison), then runs each aggregate's kernel over the batch: tight loops
//! over the typed slices into dense accumulators, no `Option`, no decimal scale
//! check, no per-row dispatch.
//!
//! Why kernel per aggregate rather than one row loop calling each aggregate: a
//! call through a pointer per row and aggregate costs more than a second pass over
//! a 1024-row batch that is still in the cache; the compiled maker is the one that
//! fuses everything into one row loop without calls.

use std::cmp::Ordering;

use crate::agg::{
    AccState, AggData, AggError, AggInput, AggOp, AggSpec, AggTable, KeyKind, KeyMap, Packed, PackedMap, ValKind, float_bits,
    float_order,
};

/// ORs part values into `out` (`false`: a value does not fit).
type PackFn = fn(&AggInput<'_>, u32, u32, u8, &mut [u128]) -> bool;
/// Updates one accumulator from its input over the rows' group ids.
type UpdateFn = fn(&mut AccState, &[u32], &AggInput<'_>, usize) -> Result<(), AggError>;

pub struct Agg {
    parts: Vec<(PackFn, u32, u32, u8)>,
    updates: Vec<UpdateFn>,
}

fn pack_int<T: Copy + Into<i64>>(d: &[T], nulls: Option<&[bool]>, off: u32, null_bit: u32, mask: u64, out: &mut [u128]) {
    match nulls {
        None => {
            for (o, &x) in out.iter_mut().zip(d) {
                *o |= (((x.into() as u64) & mask) as u128) << off;
            }
        }
        Some(m) => {
            for ((o, &x), &null) in out.iter_mut().zip(d).zip(m) {
                *o |= if null { 1u128 << null_bit } else { (((x.into() as u64) & mask) as u128) << off };
            }
        }
    }
}

fn pack_part(input: &AggInput<'_>, off: u32, null_bit: u32, _w: u8, out: &mut [u128]) -> bool {
    let nulls = input.nulls;
    match input.data {
        AggData::Bool(_) => pack_int(B::slice(input.data), nulls, off, null_bit, 1, out),
        AggData::I16(d) => pack_int(d, nulls, off, null_bit, 0xFFFF, out),
        AggData::I32(d) => pack_int(d, nulls, off, null_bit, 0xFFFF_FFFF, out),
        AggData::I64(d) => pack_int(d, nulls, off, null_bit, u64::MAX, out),
        AggData::F32(d) => {
            for (k, (o, &x)) in out.iter_mut().zip(d).enumerate() {
                *o |= if input.is_null(k) { 1u128 << null_bit } else { (float_bits(x as f64) as u128) << off };
            }
        }
        AggData::F64(d) => {
            for (k, (o, &x)) in out.iter_mut().zip(d).enumerate() {
                *o |= if input.is_null(k) { 1u128 << null_bit } else { (float_bits(x) as u128) << off };
            }
        }
        AggData::Str(_) | AggData::StrBuf { .. } | AggData::None => return false,
    }
    true
}

/// A string part: a per-row check of the width, then the bytes little-endian and
/// the length byte. `pub(crate)`: the compiled maker packs string parts with it too.
pub(crate) fn pack_str(input: &AggInput<'_>, off: u32, null_bit: u32, w: u8, out: &mut [u128]) -> bool {
    match input.data {
        AggData::Str(d) => pack_str_refs(d, input.nulls, off, null_bit, w, out),
        AggData::StrBuf { offsets, bytes, trim } => {
            if trim {
                pack_str_buf::<true>(offsets, bytes, input.nulls, off, null_bit, w, out)
            } else {
                pack_str_buf::<false>(offsets, bytes, input.nulls, off, null_bit, w, out)
            }
        }
        _ => false,
    }
}

/// The low `len` (≤ 15) bytes of `s` as an integer, without a variable-length copy.
#[inline]
fn str_bits(s: &[u8]) -> u128 {
    let mut v = 0u128;
    let (mut j, len) = (0, s.len());
    if len >= 8 {
        v = u64::from_le_bytes(s[..8].try_into().unwrap()) as u128;
        j = 8;
    }
    if len - j >= 4 {
        v |= (u32::from_le_bytes(s[j..j + 4].try_into().unwrap()) as u128) << (8 * j);
        j += 4;
    }
    while j < len {
        v |= (s[j] as u128) << (8 * j);
        j += 1;
    }
    v
}

fn pack_str_refs(d: &[&[u8]], nulls: Option<&[bool]>, off: u32, null_bit: u32, w: u8, out: &mut [u128]) -> bool {
    for (k, (o, s)) in out.iter_mut().zip(d).enumerate() {
        if nulls.is_some_and(|m| m[k]) {
            *o |= 1u128 << null_bit;
            continue;
        }
        if s.len() > w as usize {
            return false;
        }
        let v = str_bits(s) | ((s.len() as u128) << (8 * w as u32));
        *o |= v << off;
    }
    true
}

/// Strings in one buffer: a string of at most 16 bytes with 16 bytes readable from
/// its start is one unaligned load, its trailing blanks found in the register
/// (`TRIM`) and the rest masked off; others are read bytewise.
fn pack_str_buf<const TRIM: bool>(
    offsets: &[u32],
    bytes: &[u8],
    nulls: Option<&[bool]>,
    off: u32,
    null_bit: u32,
    w: u8,
    out: &mut [u128],
) -> bool {
    let n = out.len();
    let offsets = &offsets[..n + 1];
    for k in 0..n {
        if nulls.is_some_and(|m| m[k]) {
            out[k] |= 1u128 << null_bit;
            continue;
        }
        let (s, e) = (offsets[k] as usize, offsets[k + 1] as usize);
        let mut len = e - s;
        let bits = if len <= 16 && s + 16 <= bytes.len() {
            let raw = u128::from_le_bytes(bytes[s..s + 16].try_into().unwrap());
            if TRIM {
                while len > 0 && (raw >> (8 * (len - 1))) as u8 == b' ' {
                    len -= 1;
                }
            }
            if len > w as usize {
                return false;
            }
            raw & ((1u128 << (8 * len)) - 1)
        } else {
            let mut sl = &bytes[s..e];
            if TRIM {
                sl = crate::agg::trim_blanks(sl);
            }
            len = sl.len();
            if len > w as usize {
                return false;
            }
            str_bits(sl)
        };
        out[k] |= (bits | ((len as u128) << (8 * w as u32))) << off;
    }
    true
}

/// Finds or inserts each row's packed key; a row equal to the previous one takes its id.
fn probe<K: Packed>(map: &mut PackedMap<K>, packed: &[u128], gids: &mut Vec<u32>, new_rows: &mut Vec<u32>) {
    let (mut last, mut last_id) = (K::default(), u32::MAX);
    for (k, &p) in packed.iter().enumerate() {
        let key = K::from_u128(p);
        if last_id != u32::MAX && key == last {
            gids.push(last_id);
            continue;
        }
        let (id, new) = map.find_or_insert(key);
        if new {
            new_rows.push(k as u32);
        }
        (last, last_id) = (key, id);
        gids.push(id);
    }
}

macro_rules! live {
    ($input:expr, $n:expr, |$k:ident| $body:block) => {
        match $input.nulls {
            None => {
                for $k in 0..$n $body
            }
            Some(m) => {
                for $k in 0..$n {
                    if !m[$k] $body
                }
            }
        }
    };
}

fn count_star(acc: &mut AccState, gids: &[u32], _: &AggInput<'_>, _: usize) -> Result<(), AggError> {
    let AccState::Count(c) = acc else { unreachable!() };
    for &g in gids {
        c[g as usize] += 1;
    }
    Ok(())
}

fn count(acc: &mut AccState, gids: &[u32], input: &AggInput<'_>, n: usize) -> Result<(), AggError> {
    let AccState::Count(c) = acc else { unreachable!() };
    live!(input, n, |k| { c[gids[k] as usize] += 1; });
    Ok(())
}

/// The integer slice of an input (its type fixed by the spec, checked per call).
trait IntSlice {
    fn slice<'a>(d: AggData<'a>) -> &'a [Self]
    where
        Self: Sized;
}

macro_rules! int_slice {
    ($t:ty, $v:ident) => {
        impl IntSlice for $t {
            #[inline]
            fn slice<'a>(d: AggData<'a>) -> &'a [$t] {
                match d {
                    AggData::$v(s) => s,
                    _ => unreachable!("inputs are checked"),
                }
            }
        }
    };
}
int_slice!(i16, I16);
int_slice!(i32, I32);
int_slice!(i64, I64);
int_slice!(f32, F32);
int_slice!(f64, F64);
int_slice!(bool, Bool);

fn sum_int<T: IntSlice + Copy + Into<i64>>(acc: &mut AccState, gids: &[u32], input: &AggInput<'_>, n: usize) -> Result<(), AggError> {
    let AccState::SumI64 { sum, has } = acc else { unreachable!() };
    let d = T::slice(input.data);
    let mut overflow = false;
    live!(input, n, |k| {
        let g = gids[k] as usize;
        match sum[g].checked_add(d[k].into()) {
            Some(s) => sum[g] = s,
            None => overflow = true,
        }
        has[g] = true;
    });
    if overflow { Err(AggError::Overflow { agg: usize::MAX }) } else { Ok(()) }
}

fn sum_wide<T: IntSlice + Copy + Into<i64>>(acc: &mut AccState, gids: &[u32], input: &AggInput<'_>, n: usize) -> Result<(), AggError> {
    let AccState::SumI128 { sum, has } = acc else { unreachable!() };
    let d = T::slice(input.data);
    live!(input, n, |k| {
        let g = gids[k] as usize;
        sum[g] += d[k].into() as i128;
        has[g] = true;
    });
    Ok(())
}

fn avg_int<T: IntSlice + Copy + Into<i64>>(acc: &mut AccState, gids: &[u32], input: &AggInput<'_>, n: usize) -> Result<(), AggError> {
    let AccState::AvgI128 { sum, n: c } = acc else { unreachable!() };
    let d = T::slice(input.data);
    live!(input, n, |k| {
        let g = gids[k] as usize;
        sum[g] += d[k].into() as i128;
        c[g] += 1;
    });
    Ok(())
}

fn sum_float<T: IntSlice + Copy + Into<f64>>(acc: &mut AccState, gids: &[u32], input: &AggInput<'_>, n: usize) -> Result<(), AggError> {
    let AccState::SumF64 { sum, has } = acc else { unreachable!() };
    let d = T::slice(input.data);
    live!(input, n, |k| {
        let g = gids[k] as usize;
        sum[g] += d[k].into();
        has[g] = true;
    });
    Ok(())
}

fn avg_float<T: IntSlice + Copy + Into<f64>>(acc: &mut AccState, gids: &[u32], input: &AggInput<'_>, n: usize) -> Result<(), AggError> {
    let AccState::AvgF64 { sum, n: c } = acc else { unreachable!() };
    let d = T::slice(input.data);
    live!(input, n, |k| {
        let g = gids[k] as usize;
        sum[g] += d[k].into();
        c[g] += 1;
    });
    Ok(())
}

fn best_int<T: IntSlice + Copy + Into<i64>, const MAX: bool>(
    acc: &mut AccState,
    gids: &[u32],
    input: &AggInput<'_>,
    n: usize,
) -> Result<(), AggError> {
    let AccState::BestI64 { v, has } = acc else { unreachable!() };
    let d = T::slice(input.data);
    live!(input, n, |k| {
        let g = gids[k] as usize;
        let x: i64 = d[k].into();
        if !has[g] || (if MAX { x > v[g] } else { x < v[g] }) {
            v[g] = x;
            has[g] = true;
        }
    });
    Ok(())
}

fn best_float<T: IntSlice + Copy + Into<f64>, const MAX: bool>(
    acc: &mut AccState,
    gids: &[u32],
    input: &AggInput<'_>,
    n: usize,
) -> Result<(), AggError> {
    let AccState::BestF64 { v, has } = acc else { unreachable!() };
    let d = T::slice(input.data);
    live!(input, n, |k| {
        let g = gids[k] as usize;
        let x: f64 = d[k].into();
        let o = float_order(x, v[g]);
        if !has[g] || (if MAX { o == Ordering::Greater } else { o == Ordering::Less }) {
            v[g] = x;
            has[g] = true;
        }
    });
    Ok(())
}

/// A bool as an integer input.
#[derive(Clone, Copy)]
#[repr(transparent)]
struct B(bool);
impl From<B> for i64 {
    fn from(b: B) -> i64 {
        b.0 as i64
    }
}
impl IntSlice for B {
    fn slice<'a>(d: AggData<'a>) -> &'a [B] {
        match d {
            // SAFETY: `B` is a `repr(transparent)` wrapper of bool.
            AggData::Bool(s) => unsafe { std::slice::from_raw_parts(s.as_ptr() as *const B, s.len()) },
            _ => unreachable!("inputs are checked"),
        }
    }
}

fn update_fn(op: AggOp) -> UpdateFn {
    macro_rules! by_int {
        ($f:ident, $w:expr) => {
            match $w {
                2 => $f::<i16>,
                4 => $f::<i32>,
                _ => $f::<i64>,
            }
        };
    }
    macro_rules! by_float {
        ($f:ident, $w:expr) => {
            match $w {
                4 => $f::<f32>,
                _ => $f::<f64>,
            }
        };
    }
    match op {
        AggOp::CountStar => count_star,
        AggOp::Count => count,
        AggOp::SumInt(w) => by_int!(sum_int, w),
        AggOp::SumWide(w) => by_int!(sum_wide, w),
        AggOp::AvgInt(w) => by_int!(avg_int, w),
        AggOp::SumDec => sum_wide::<i64>,
        AggOp::AvgDec => avg_int::<i64>,
        AggOp::SumFloat(w) => by_float!(sum_float, w),
        AggOp::AvgFloat(w) => by_float!(avg_float, w),
        AggOp::Min(ValKind::Bool) => best_int::<B, false>,
        AggOp::Max(ValKind::Bool) => best_int::<B, true>,
        AggOp::Min(ValKind::Int(2)) => best_int::<i16, false>,
        AggOp::Max(ValKind::Int(2)) => best_int::<i16, true>,
        AggOp::Min(ValKind::Int(4)) => best_int::<i32, false>,
        AggOp::Max(ValKind::Int(4)) => best_int::<i32, true>,
        AggOp::Min(ValKind::Int(_)) => best_int::<i64, false>,
        AggOp::Max(ValKind::Int(_)) => best_int::<i64, true>,
        AggOp::Min(ValKind::Float(4)) => best_float::<f32, false>,
        AggOp::Max(ValKind::Float(4)) => best_float::<f32, true>,
        AggOp::Min(ValKind::Float(_)) => best_float::<f64, false>,
        AggOp::Max(ValKind::Float(_)) => best_float::<f64, true>,
    }
}

impl Agg {
    pub fn new(spec: &AggSpec) -> Agg {
        let offs = spec.offsets();
        let parts = spec
            .keys
            .iter()
            .enumerate()
            .map(|(i, k)| {
                let (f, w): (PackFn, u8) = match *k {
                    KeyKind::Str(w) => (pack_str, w),
                    _ => (pack_part, 0),
                };
                (f, offs[i], spec.null_bit(i), w)
            })
            .collect();
        Agg { parts, updates: spec.aggs.iter().map(|&a| update_fn(a)).collect() }
    }

    pub fn run(
        &self,
        t: &mut AggTable,
        keys: &[AggInput<'_>],
        args: &[AggInput<'_>],
        n: usize,
        new_rows: &mut Vec<u32>,
    ) -> Result<(), AggError> {
        let mut packed = std::mem::take(&mut t.packed);
        packed.clear();
        packed.resize(n, 0);
        for (&(f, off, null_bit, w), input) in self.parts.iter().zip(keys) {
            if !f(input, off, null_bit, w, &mut packed) {
                t.packed = packed;
                return Err(AggError::Unpackable);
            }
        }
        let mut gids = std::mem::take(&mut t.gids);
        gids.clear();
        match &mut t.map {
            KeyMap::P64(m) => probe(m, &packed, &mut gids, new_rows),
            KeyMap::P128(m) => probe(m, &packed, &mut gids, new_rows),
            KeyMap::Std(_) => unreachable!("a bee's table is packed"),
        }
        t.packed = packed;
        let groups = match &t.map {
            KeyMap::P64(m) => m.len,
            KeyMap::P128(m) => m.len,
            KeyMap::Std(m) => m.len(),
        };
        t.set_groups(groups);
        let mut result = Ok(());
        for (a, (f, input)) in self.updates.iter().zip(args).enumerate() {
            if let Err(e) = f(&mut t.accs[a], &gids, input, n) {
                result = Err(match e {
                    AggError::Overflow { .. } => AggError::Overflow { agg: a },
                    e => e,
                });
                break;
            }
        }
        t.gids = gids;
        result
    }
}
