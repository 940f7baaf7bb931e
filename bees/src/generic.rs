//! The generic twin of every scan and deform bee: an interpreter of a [`ScanSpec`]
//! that looks up each attribute's placement and kind in the spec as it goes. It is
//! the executable definition of the semantics in [`crate::spec`]: the differential
//! tests hold both makers to it, tuple by tuple, malformed tuples included.
//!
//! It is written to be correct and clear rather than fast; the SQL engine's own
//! generic path (its row decoder and expression evaluator) is what runs with bees off.

use std::cmp::Ordering;

use beedb_storage::tuple::{AttrPlacement, TUPLE_HEADER_SIZE};

use crate::abi::{ByteRef, ColumnOut, RunArgs};
use crate::spec::{Const, Pred, RelationSpec, ScanSpec, ValueKind};

/// One variable attribute as the walk found it.
#[derive(Clone, Copy)]
enum VarVal {
    Null,
    /// `(start, len)` within the tuple.
    Inline(usize, usize),
    External,
}

/// A value as the interpreter sees it.
#[derive(Clone, Copy)]
enum Val<'t> {
    Null,
    Fixed(&'t [u8]),
    Var(&'t [u8]),
    External,
}

/// SQL's order for floats: NaN equals NaN and is above every other value.
pub fn sql_float_cmp(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        _ => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
    }
}

/// SQL's order for `real` compared with a `real` constant.
pub fn sql_float32_cmp(a: f32, b: f32) -> Ordering {
    sql_float_cmp(a as f64, b as f64)
}

struct Tuple<'t, 's> {
    rel: &'s RelationSpec,
    t: &'t [u8],
    has_nulls: bool,
    vars: Vec<VarVal>,
    pos: usize,
}

impl<'t> Tuple<'t, '_> {
    fn is_null(&self, attr: usize) -> bool {
        self.rel.nullable(attr)
            && self.has_nulls
            && self.t[self.rel.layout().fixed_end() + attr / 8] & (1 << (attr % 8)) != 0
    }

    /// Walks the variable region until `count` attributes are known; `Err` = fall back.
    fn walk_to(&mut self, count: usize) -> Result<(), ()> {
        let lay = self.rel.layout();
        while self.vars.len() < count {
            let attr = lay.variable_attr(self.vars.len());
            if self.is_null(attr) {
                self.vars.push(VarVal::Null);
                continue;
            }
            let t = self.t;
            let pos = self.pos;
            let &b = t.get(pos).ok_or(())?;
            let u32_at = |at: usize| -> Result<usize, ()> {
                let b = t.get(at..at + 4).ok_or(())?;
                Ok(u32::from_le_bytes(b.try_into().unwrap()) as usize)
            };
            let (v, next) = match b {
                0xFF => {
                    if pos + 9 > t.len() {
                        return Err(());
                    }
                    (VarVal::External, pos + 9)
                }
                0xFE => {
                    let len = u32_at(pos + 1)?;
                    (VarVal::Inline(pos + 5, len), pos + 5 + len)
                }
                short => (VarVal::Inline(pos + 1, short as usize), pos + 1 + short as usize),
            };
            if next > t.len() {
                return Err(());
            }
            self.vars.push(v);
            self.pos = next;
        }
        Ok(())
    }

    /// Attribute `attr`'s value; its variable predecessors must have been walked.
    fn value(&self, attr: usize) -> Val<'t> {
        if self.is_null(attr) {
            return Val::Null;
        }
        match self.rel.placement(attr) {
            AttrPlacement::Fixed { offset, width } => Val::Fixed(&self.t[offset..offset + width]),
            AttrPlacement::Variable { index } => match self.vars[index] {
                VarVal::Null => Val::Null,
                VarVal::Inline(s, l) => Val::Var(&self.t[s..s + l]),
                VarVal::External => Val::External,
            },
        }
    }
}

fn int_of(b: &[u8]) -> i64 {
    match b.len() {
        2 => i16::from_le_bytes(b.try_into().unwrap()) as i64,
        4 => i32::from_le_bytes(b.try_into().unwrap()) as i64,
        _ => i64::from_le_bytes(b.try_into().unwrap()),
    }
}

/// Orders a non-NULL value of `kind` against a constant that fits it.
fn compare(kind: ValueKind, v: Val<'_>, c: &Const) -> Ordering {
    match (kind, v, c) {
        (ValueKind::Bool, Val::Fixed(b), Const::Bool(k)) => (b[0] != 0).cmp(k),
        (ValueKind::Int(_), Val::Fixed(b), Const::Int(k)) => int_of(b).cmp(k),
        (ValueKind::Float(4), Val::Fixed(b), Const::F32(k)) => {
            sql_float32_cmp(f32::from_le_bytes(b.try_into().unwrap()), *k)
        }
        (ValueKind::Float(4), Val::Fixed(b), Const::F64(k)) => {
            sql_float_cmp(f32::from_le_bytes(b.try_into().unwrap()) as f64, *k)
        }
        (ValueKind::Float(_), Val::Fixed(b), Const::F64(k)) => {
            sql_float_cmp(f64::from_le_bytes(b.try_into().unwrap()), *k)
        }
        (ValueKind::Decimal, Val::Fixed(b), Const::I128(k)) => {
            i128::from_le_bytes(b.try_into().unwrap()).cmp(k)
        }
        (ValueKind::Interval, Val::Fixed(b), Const::I128(k)) => {
            crate::spec::stored_interval_span(b.try_into().unwrap()).cmp(k)
        }
        (ValueKind::Bytes, Val::Var(b), Const::Bytes(k)) => b.cmp(&k[..]),
        (k, _, c) => unreachable!("checked spec: {k:?} against {c:?}"),
    }
}

/// Three-valued result: `None` is UNKNOWN.
fn eval(p: &Pred, t: &Tuple<'_, '_>) -> Option<bool> {
    let rel = t.rel;
    match p {
        Pred::Cmp { attr, op, value } => match t.value(*attr) {
            Val::Null => None,
            v => Some(op.holds(compare(rel.kind(*attr), v, value))),
        },
        Pred::InList { attr, values } => match t.value(*attr) {
            Val::Null => None,
            v => Some(
                values
                    .iter()
                    .any(|c| compare(rel.kind(*attr), v, c) == Ordering::Equal),
            ),
        },
        Pred::IsNull { attr } => Some(matches!(t.value(*attr), Val::Null)),
        Pred::Prefix { attr, prefix } => match t.value(*attr) {
            Val::Var(b) => Some(b.starts_with(prefix)),
            _ => None,
        },
        Pred::And(ps) => {
            let mut unknown = false;
            for p in ps {
                match eval(p, t) {
                    Some(false) => return Some(false),
                    None => unknown = true,
                    Some(true) => {}
                }
            }
            if unknown { None } else { Some(true) }
        }
        Pred::Or(ps) => {
            let mut unknown = false;
            for p in ps {
                match eval(p, t) {
                    Some(true) => return Some(true),
                    None => unknown = true,
                    Some(false) => {}
                }
            }
            if unknown { None } else { Some(false) }
        }
        Pred::Not(p) => eval(p, t).map(|b| !b),
    }
}

/// Number of variable attributes to walk so that all of `attrs` are known.
pub fn var_walk_len(rel: &RelationSpec, attrs: impl IntoIterator<Item = usize>) -> usize {
    attrs
        .into_iter()
        .filter_map(|a| match rel.placement(a) {
            AttrPlacement::Variable { index } => Some(index + 1),
            AttrPlacement::Fixed { .. } => None,
        })
        .max()
        .unwrap_or(0)
}

/// Writes `v` of `kind` into output slot `row` of `out`.
///
/// # Safety
/// `out` must have room for `row + 1` slots (and NULL bytes when `nullable`).
unsafe fn write_slot(out: &ColumnOut, kind: ValueKind, nullable: bool, row: usize, v: Val<'_>) {
    let w = kind.out_width();
    // SAFETY: the caller sized the buffers (RunArgs contract).
    unsafe {
        let dst = out.data.add(row * w);
        match (kind, v) {
            (ValueKind::Bytes, Val::Var(b)) => {
                (dst as *mut ByteRef).write_unaligned(ByteRef::of(b));
            }
            (ValueKind::Bytes, _) => (dst as *mut ByteRef).write_unaligned(ByteRef::NULL),
            (ValueKind::Bool, Val::Fixed(b)) => *dst = (b[0] != 0) as u8,
            (_, Val::Fixed(b)) => std::ptr::copy_nonoverlapping(b.as_ptr(), dst, w),
            _ => std::ptr::write_bytes(dst, 0, w),
        }
        if nullable {
            *out.nulls.add(row) = matches!(v, Val::Null) as u8;
        }
    }
}

/// Runs `spec` over `args` with the semantics of [`crate::spec`]; returns the number of
/// tuples consumed and sets `args.produced`.
///
/// # Safety
/// `args` must satisfy the [`RunArgs`] contract for `spec`: `n` readable tuples,
/// `outputs.len()` column buffers with room for `row0 + cap` rows, `cap` `sel` slots.
pub unsafe fn run(spec: &ScanSpec, args: &mut RunArgs) -> u64 {
    let rel = &*spec.relation;
    let lay = rel.layout();
    let n = args.n as usize;
    // SAFETY: RunArgs contract.
    let tuples = unsafe { std::slice::from_raw_parts(args.tuples, n) };
    let outs = unsafe { std::slice::from_raw_parts(args.outs, spec.outputs.len()) };
    let deform = spec.is_deform();
    let pred_walk = spec
        .predicate
        .as_ref()
        .map_or(0, |p| var_walk_len(rel, p.attrs()));
    let pred_attrs = spec.predicate.as_ref().map(Pred::attrs).unwrap_or_default();
    let out_walk = if deform {
        (args.var_limit as usize).min(lay.variable_count())
    } else {
        var_walk_len(rel, spec.outputs.iter().copied())
    };
    let cap = args.cap as usize;
    let row0 = args.row0 as usize;
    let mut produced = 0usize;
    let mut consumed = 0usize;
    'tuples: for (i, tr) in tuples.iter().enumerate() {
        consumed = i;
        if produced == cap {
            break;
        }
        // SAFETY: RunArgs contract.
        let t = unsafe { tr.bytes() };
        if t.len() < TUPLE_HEADER_SIZE
            || t[0] & !1 != 0
            || t[1] != 0
            || u16::from_le_bytes([t[2], t[3]]) as usize != rel.natts()
        {
            break;
        }
        let has_nulls = t[0] & 1 != 0;
        let var_start = lay.var_region_offset(has_nulls);
        if t.len() < var_start {
            break;
        }
        let mut tup = Tuple {
            rel,
            t,
            has_nulls,
            vars: Vec::new(),
            pos: var_start,
        };
        if let Some(p) = &spec.predicate {
            if tup.walk_to(pred_walk).is_err() {
                break;
            }
            if pred_attrs
                .iter()
                .any(|&a| matches!(tup.value(a), Val::External))
            {
                break;
            }
            if eval(p, &tup) != Some(true) {
                consumed = i + 1;
                continue;
            }
        }
        if tup.walk_to(pred_walk.max(out_walk)).is_err() {
            break;
        }
        for (k, &a) in spec.outputs.iter().enumerate() {
            if deform {
                if outs[k].data.is_null() {
                    continue;
                }
                if let AttrPlacement::Variable { index } = rel.placement(a)
                    && index >= out_walk
                {
                    continue;
                }
            }
            let v = tup.value(a);
            if matches!(v, Val::External) {
                break 'tuples;
            }
            // SAFETY: RunArgs contract.
            unsafe { write_slot(&outs[k], rel.kind(a), rel.nullable(a), row0 + produced, v) };
        }
        // SAFETY: RunArgs contract.
        unsafe { *args.sel.add(produced) = i as u32 };
        produced += 1;
        consumed = i + 1;
    }
    if n == 0 {
        consumed = 0;
    }
    args.produced = produced as u64;
    consumed as u64
}

/// The generic twin of a form bee: reads the input slots of each row and encodes them
/// with storage's generic encoder. Returns the number of rows formed (see
/// [`crate::abi::FormArgs`]; the caller distinguishes a full buffer from a fallback
/// by [`crate::abi::Progress::classify`]-like reasoning on `n`, or by retrying).
///
/// # Safety
/// `args` must satisfy the [`crate::abi::FormArgs`] contract for `rel`.
pub unsafe fn form(rel: &RelationSpec, args: &mut crate::abi::FormArgs) -> u64 {
    use beedb_storage::tuple::AttrValue;
    let natts = rel.natts();
    // SAFETY: FormArgs contract.
    let ins = unsafe { std::slice::from_raw_parts(args.ins, natts) };
    let mut values: Vec<AttrValue<'_>> = Vec::with_capacity(natts);
    let mut tuple = Vec::new();
    let mut at = 0usize;
    for k in 0..args.n as usize {
        let row = args.row0 as usize + k;
        values.clear();
        for (a, inp) in ins.iter().enumerate() {
            let kind = rel.kind(a);
            // SAFETY: FormArgs contract (slots of `row` are readable).
            let v = unsafe {
                if rel.nullable(a) && *inp.nulls.add(row) != 0 {
                    AttrValue::Null
                } else {
                    let src = inp.data.add(row * kind.out_width()) as *const u8;
                    match kind {
                        ValueKind::Bytes => {
                            AttrValue::Variable((src as *const ByteRef).read_unaligned().bytes())
                        }
                        _ => AttrValue::Fixed(std::slice::from_raw_parts(src, kind.out_width())),
                    }
                }
            };
            values.push(v);
        }
        if rel.layout().encode_into(&values, &mut tuple).is_err()
            || tuple.len() as u64 > args.max_tuple
        {
            return k as u64;
        }
        let start = at.next_multiple_of(8);
        if (start + tuple.len()) as u64 > args.buf_cap {
            return k as u64;
        }
        // SAFETY: FormArgs contract (buf holds buf_cap bytes, ends n entries).
        unsafe {
            std::ptr::copy_nonoverlapping(tuple.as_ptr(), args.buf.add(start), tuple.len());
            *args.ends.add(k) = (start + tuple.len()) as u64;
        }
        at = start + tuple.len();
    }
    args.n
}

/// The generic twin of every sort bee: encodes the normalized keys of `args` as
/// [`crate::spec::SortSpec`] defines them, value by value, looking each part's kind
/// up as it goes.
///
/// # Safety
/// `args` must satisfy the [`crate::abi::SortArgs`] contract for `spec`.
pub unsafe fn sort_keys(spec: &crate::spec::SortSpec, args: &crate::abi::SortArgs) {
    use crate::spec::{SORT_PREFIX, SortSpec};
    let stride = args.stride as usize;
    let key_width = spec.key_width();
    for row in 0..args.n as usize {
        // SAFETY: the contract: `keys` holds `n × stride` bytes.
        let key = unsafe { std::slice::from_raw_parts_mut(args.keys.add(row * stride), stride) };
        key.fill(0);
        let mut at = 0;
        let mut long = false;
        for (i, p) in spec.parts.iter().enumerate() {
            // SAFETY: the contract: one column per part, `n` slots and NULL bytes each.
            let col = unsafe { *args.cols.add(i) };
            let width = SortSpec::value_width(p.kind);
            let null = !col.nulls.is_null() && unsafe { *col.nulls.add(row) } != 0;
            if null {
                key[at] = if p.nulls_first { 0 } else { 2 };
                at += 1 + width;
                continue;
            }
            key[at] = 1;
            let slot = |w: usize| -> &[u8] { unsafe { std::slice::from_raw_parts(col.data.add(row * w), w) } };
            let v = &mut key[at + 1..at + 1 + width];
            match p.kind {
                ValueKind::Bool => v[0] = (slot(1)[0] != 0) as u8,
                ValueKind::Int(w) => {
                    let x = int_of(slot(w as usize));
                    // `x + 2^(8w-1)`: the `w`-byte value with its sign bit flipped.
                    let be = ((x as i128 + (1i128 << (8 * w as u32 - 1))) as u64).to_be_bytes();
                    v.copy_from_slice(&be[8 - w as usize..]);
                }
                ValueKind::Float(4) => {
                    let f = f32::from_le_bytes(slot(4).try_into().unwrap());
                    let f = if f.is_nan() { f32::NAN } else if f == 0.0 { 0.0 } else { f };
                    let b = f.to_bits();
                    let b = if b >> 31 == 1 { !b } else { b | (1 << 31) };
                    v.copy_from_slice(&b.to_be_bytes());
                }
                ValueKind::Float(_) => {
                    let f = f64::from_le_bytes(slot(8).try_into().unwrap());
                    let f = if f.is_nan() { f64::NAN } else if f == 0.0 { 0.0 } else { f };
                    let b = f.to_bits();
                    let b = if b >> 63 == 1 { !b } else { b | (1 << 63) };
                    v.copy_from_slice(&b.to_be_bytes());
                }
                ValueKind::Decimal => {
                    let x = i128::from_le_bytes(slot(16).try_into().unwrap());
                    v.copy_from_slice(&((x as u128) ^ (1u128 << 127)).to_be_bytes());
                }
                ValueKind::Interval => {
                    let x = crate::spec::stored_interval_span(slot(16).try_into().unwrap());
                    v.copy_from_slice(&((x as u128) ^ (1u128 << 127)).to_be_bytes());
                }
                ValueKind::Bytes => {
                    // SAFETY: the contract: a Bytes slot is a valid ByteRef.
                    let r = unsafe { *(col.data as *const ByteRef).add(row) };
                    let b = unsafe { r.bytes() };
                    let k = b.len().min(SORT_PREFIX);
                    v[..k].copy_from_slice(&b[..k]);
                    v[SORT_PREFIX] = b.len().min(SORT_PREFIX + 1) as u8;
                    long |= b.len() > SORT_PREFIX;
                }
                ValueKind::Raw(_) => unreachable!("checked by SortSpec::check"),
            }
            if p.desc {
                v.iter_mut().for_each(|b| *b = !*b);
            }
            at += 1 + width;
            if long {
                // The comparator decides from here: later parts stay zero.
                break;
            }
        }
        if spec.has_ties() {
            key[key_width - 1] = long as u8;
        }
    }
}
