//! The compiled maker of aggregate bees: one generated function per [`AggSpec`]
//! with the whole GROUP BY row loop fused — key packing, group lookup and every
//! aggregate's update — and the spec's widths, bit offsets, NULL bits, slot layout
//! and accumulator kinds baked in as constants.
//!
//! ```text
//! entry(args):  load n, cols, packed, gids, accs, zero    jump head(0, 0, 0, EMPTY)
//! head(r, last_lo, last_hi, last_g):  r >= n                        -> exit(0)
//!   key = string parts' bits from packed[r] (or 0)
//!   per other part: load slot r (bool/int zero-extended, float → f64 bits with
//!     −0 → 0 and NaN → one NaN), NULL byte via select(nulls, nulls + r, zero);
//!     value masked to 0 when NULL, shifted to its constant offset, NULL bit set
//!   key == last and last_g valid?                                     -> have(last_g)
//!   i = hash(key) & mask
//! probe(i):     slot = slots + i × size; id == EMPTY?                 -> insert
//!               slot.key == key?                                      -> have(id)
//!               probe((i + 1) & mask)
//! insert:       g = bee_agg_insert(args, key, r)  (Rust: inserts, records the
//!               new row, grows the accumulators, reloads slots/mask/acc pointers)
//! have(g):      gids[r] = g
//!               per aggregate: skip when its input is NULL, else update its
//!               accumulator at g inline (i64 sums with an overflow test that
//!               exits with 1 + the aggregate's index; i128 sums; f64 sums;
//!               min/max with SQL's float order by selects)
//!               jump head(r + 1, key, g)
//! ```
//!
//! What stays in Rust: **string key parts** are packed before the loop by the
//! instantiated maker's kernel ([`crate::agg_instantiated::pack_str`]: one unaligned
//! 16-byte load and a mask per string) because a too-long string must make the call
//! fail *before anything changes*, which a fused loop cannot promise; and the
//! **insertion of a new group** (growing the map and the accumulators) is a call, made
//! once per group, not per row. The probe of an existing group — hash, bucket walk,
//! key compare — is generated inline.
//!
//! The state is the instantiated maker's [`AggTable`] (same packed map, same
//! accumulators), so settling, spilling and merging see no difference.

use std::mem::offset_of;

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{AbiParam, BlockArg, InstBuilder, MemFlagsData, Signature, Type, Value, types};
use cranelift_frontend::FunctionBuilder;

use super::{ARGS, CompiledCode, Jit, RO, WR, compile_one};
use crate::agg::{
    AccState, AggData, AggError, AggInput, AggOp, AggSpec, AggTable, EMPTY, KeyKind, KeyMap, Slot, ValKind,
};

const I8: Type = types::I8;
const I32: Type = types::I32;
const I64: Type = types::I64;
const I128: Type = types::I128;

/// A compiled aggregate routine: 0 when done, 1 + `a` when aggregate `a` overflowed.
pub type AggFn = unsafe extern "C" fn(*mut AggArgs) -> u64;

/// What the generated code reads (and `bee_agg_insert` rewrites: `slots`, `mask`
/// and the pointers `accs` points at).
#[repr(C)]
pub struct AggArgs {
    n: u64,
    /// Per key part, then per aggregate: (data, nulls or null).
    cols: *const [*const u8; 2],
    /// The string parts' packed bits per row (u128), when the spec has string parts.
    packed: *const u128,
    gids: *mut u32,
    slots: *const u8,
    mask: u64,
    /// Two pointers per aggregate: its accumulator's first and second array.
    accs: *mut *mut u8,
    ctx: *mut Ctx,
    /// A zero byte (the NULL flag of a column without NULLs).
    zero: *const u8,
}

/// The Rust side of a call, for `bee_agg_insert`.
struct Ctx {
    table: *mut AggTable,
    new_rows: *mut Vec<u32>,
}

static ZERO: [u8; 16] = [0; 16];

/// Points `a` at `t`'s current slots and accumulators.
///
/// # Safety
/// `a.accs` holds two pointers per accumulator of `t`.
unsafe fn refresh(a: &mut AggArgs, t: &mut AggTable) {
    match &mut t.map {
        KeyMap::P64(m) => {
            a.slots = m.slots.as_ptr() as *const u8;
            a.mask = m.mask as u64;
        }
        KeyMap::P128(m) => {
            a.slots = m.slots.as_ptr() as *const u8;
            a.mask = m.mask as u64;
        }
        KeyMap::Std(_) => unreachable!("a bee's table is packed"),
    }
    for (i, acc) in t.accs.iter_mut().enumerate() {
        let (p, q): (*mut u8, *mut u8) = match acc {
            AccState::Count(v) => (v.as_mut_ptr() as _, std::ptr::null_mut()),
            AccState::SumI64 { sum, has } => (sum.as_mut_ptr() as _, has.as_mut_ptr() as _),
            AccState::SumI128 { sum, has } => (sum.as_mut_ptr() as _, has.as_mut_ptr() as _),
            AccState::AvgI128 { sum, n } => (sum.as_mut_ptr() as _, n.as_mut_ptr() as _),
            AccState::SumF64 { sum, has } => (sum.as_mut_ptr() as _, has.as_mut_ptr() as _),
            AccState::AvgF64 { sum, n } => (sum.as_mut_ptr() as _, n.as_mut_ptr() as _),
            AccState::BestI64 { v, has } => (v.as_mut_ptr() as _, has.as_mut_ptr() as _),
            AccState::BestF64 { v, has } => (v.as_mut_ptr() as _, has.as_mut_ptr() as _),
        };
        // SAFETY: per the contract above.
        unsafe {
            *a.accs.add(2 * i) = p;
            *a.accs.add(2 * i + 1) = q;
        }
    }
}

/// Inserts packed key `(hi, lo)` as a new group of row `row`; returns its id.
///
/// # Safety
/// Called only by an aggregate bee's code, with the `AggArgs` of [`CompiledAgg::run`].
unsafe extern "C" fn bee_agg_insert(args: *mut AggArgs, lo: u64, hi: u64, row: u64) -> u64 {
    // SAFETY: `run` set these up and holds no other reference to them during the call.
    unsafe {
        let a = &mut *args;
        let cx = &mut *a.ctx;
        let t = &mut *cx.table;
        let (id, new, len) = match &mut t.map {
            KeyMap::P64(m) => {
                let (id, new) = m.find_or_insert(lo);
                (id, new, m.len)
            }
            KeyMap::P128(m) => {
                let (id, new) = m.find_or_insert((hi as u128) << 64 | lo as u128);
                (id, new, m.len)
            }
            KeyMap::Std(_) => unreachable!("a bee's table is packed"),
        };
        if new {
            (*cx.new_rows).push(row as u32);
            t.set_groups(len);
        }
        refresh(a, t);
        id as u64
    }
}

/// A compiled aggregate bee's code.
pub struct CompiledAgg {
    _code: Box<CompiledCode>,
    f: AggFn,
    code_bytes: usize,
    /// (part, bit offset, NULL bit, width) of each string part.
    str_parts: Vec<(usize, u32, u32, u8)>,
}

impl CompiledAgg {
    pub fn new(jit: &Jit, spec: &AggSpec) -> Result<CompiledAgg, String> {
        spec.check()?;
        let wide = spec.key_bits() > 64;
        let (size, id_off) = if wide {
            (size_of::<Slot<u128>>(), offset_of!(Slot<u128>, id))
        } else {
            (size_of::<Slot<u64>>(), offset_of!(Slot<u64>, id))
        };
        let (code, ptr) = compile_one(jit, |b, _| build(b, spec, wide, size as i64, id_off as i32))?;
        // SAFETY: the function was generated with the AggFn signature.
        let f = unsafe { std::mem::transmute::<*const u8, AggFn>(ptr) };
        let offs = spec.offsets();
        let str_parts = spec
            .keys
            .iter()
            .enumerate()
            .filter_map(|(i, k)| match *k {
                KeyKind::Str(w) => Some((i, offs[i], spec.null_bit(i), w)),
                _ => None,
            })
            .collect();
        Ok(CompiledAgg { code_bytes: code.code_bytes, _code: Box::new(code), f, str_parts })
    }

    pub fn code_bytes(&self) -> usize {
        self.code_bytes
    }

    /// [`crate::AggBee::update`] (inputs checked).
    pub fn run(
        &self,
        spec: &AggSpec,
        t: &mut AggTable,
        keys: &[AggInput<'_>],
        args: &[AggInput<'_>],
        n: usize,
        new_rows: &mut Vec<u32>,
    ) -> Result<(), AggError> {
        let mut packed = std::mem::take(&mut t.packed);
        packed.clear();
        if !self.str_parts.is_empty() {
            // Every string is packed (or found too long) before anything changes.
            packed.resize(n, 0);
            for &(i, off, nb, w) in &self.str_parts {
                if !crate::agg_instantiated::pack_str(&keys[i], off, nb, w, &mut packed) {
                    t.packed = packed;
                    return Err(AggError::Unpackable);
                }
            }
        }
        let mut gids = std::mem::take(&mut t.gids);
        gids.clear();
        gids.resize(n, 0);
        let ptr = |i: &AggInput<'_>| -> [*const u8; 2] {
            let data = match i.data {
                AggData::None | AggData::Str(_) | AggData::StrBuf { .. } => std::ptr::null(),
                AggData::Bool(d) => d.as_ptr() as *const u8,
                AggData::I16(d) => d.as_ptr() as *const u8,
                AggData::I32(d) => d.as_ptr() as *const u8,
                AggData::I64(d) => d.as_ptr() as *const u8,
                AggData::F32(d) => d.as_ptr() as *const u8,
                AggData::F64(d) => d.as_ptr() as *const u8,
            };
            [data, i.nulls.map_or(std::ptr::null(), |m| m.as_ptr() as *const u8)]
        };
        let cols: Vec<[*const u8; 2]> = keys.iter().chain(args).map(ptr).collect();
        let mut accs: Vec<*mut u8> = vec![std::ptr::null_mut(); 2 * spec.aggs.len()];
        let mut cx = Ctx { table: t as *mut AggTable, new_rows: new_rows as *mut Vec<u32> };
        let mut a = AggArgs {
            n: n as u64,
            cols: cols.as_ptr(),
            packed: packed.as_ptr(),
            gids: gids.as_mut_ptr(),
            slots: std::ptr::null(),
            mask: 0,
            accs: accs.as_mut_ptr(),
            ctx: &mut cx,
            zero: ZERO.as_ptr(),
        };
        // SAFETY: `a` points at the table (whose scratch vectors were taken out),
        // the inputs (checked: every slice holds `n` values) and `accs` (two per
        // aggregate); the code was generated for this spec.
        let r = unsafe {
            refresh(&mut a, &mut *cx.table);
            (self.f)(&mut a)
        };
        t.packed = packed;
        t.gids = gids;
        match r {
            0 => Ok(()),
            r => Err(AggError::Overflow { agg: r as usize - 1 }),
        }
    }
}

const OFF_N: i32 = offset_of!(AggArgs, n) as i32;
const OFF_COLS: i32 = offset_of!(AggArgs, cols) as i32;
const OFF_PACKED: i32 = offset_of!(AggArgs, packed) as i32;
const OFF_GIDS: i32 = offset_of!(AggArgs, gids) as i32;
const OFF_SLOTS: i32 = offset_of!(AggArgs, slots) as i32;
const OFF_MASK: i32 = offset_of!(AggArgs, mask) as i32;
const OFF_ACCS: i32 = offset_of!(AggArgs, accs) as i32;
const OFF_ZERO: i32 = offset_of!(AggArgs, zero) as i32;

/// Murmur3's finalizer ([`crate::agg::mix64`]).
pub(super) fn mix64(b: &mut FunctionBuilder<'_>, x: Value) -> Value {
    let s = b.ins().ushr_imm_s(x, 33);
    let x = b.ins().bxor(x, s);
    let x = b.ins().imul_imm_s(x, 0xff51_afd7_ed55_8ccd_u64 as i64);
    let s = b.ins().ushr_imm_s(x, 33);
    let x = b.ins().bxor(x, s);
    let x = b.ins().imul_imm_s(x, 0xc4ce_b9fe_1a85_ec53_u64 as i64);
    let s = b.ins().ushr_imm_s(x, 33);
    b.ins().bxor(x, s)
}

/// ORs `v` (`bits` wide, zero above) into the key at bit `off`.
pub(super) fn place(b: &mut FunctionBuilder<'_>, key: (Value, Value), v: Value, off: u32, bits: u32) -> (Value, Value) {
    let (mut lo, mut hi) = key;
    if off + bits <= 64 {
        let s = if off == 0 { v } else { b.ins().ishl_imm_s(v, off as i64) };
        lo = b.ins().bor(lo, s);
    } else if off >= 64 {
        let s = if off == 64 { v } else { b.ins().ishl_imm_s(v, (off - 64) as i64) };
        hi = b.ins().bor(hi, s);
    } else {
        let s = b.ins().ishl_imm_s(v, off as i64);
        lo = b.ins().bor(lo, s);
        let s = b.ins().ushr_imm_s(v, (64 - off) as i64);
        hi = b.ins().bor(hi, s);
    }
    (lo, hi)
}

/// Generates the aggregate bee of `spec` into `b`.
fn build(b: &mut FunctionBuilder<'_>, spec: &AggSpec, wide: bool, slot_size: i64, id_off: i32) -> Result<(), String> {
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let args = b.block_params(entry)[0];
    let n = b.ins().load(I64, ARGS, args, OFF_N);
    let cols = b.ins().load(I64, ARGS, args, OFF_COLS);
    let packed = b.ins().load(I64, ARGS, args, OFF_PACKED);
    let gids = b.ins().load(I64, ARGS, args, OFF_GIDS);
    let accs = b.ins().load(I64, ARGS, args, OFF_ACCS);
    let zero_at = b.ins().load(I64, ARGS, args, OFF_ZERO);
    let nkeys = spec.keys.len();
    let pointers = 2 * (spec.keys.iter().filter(|k| !matches!(k, KeyKind::Str(_))).count()
        + spec.aggs.iter().filter(|a| **a != AggOp::CountStar).count());
    let hoist = pointers <= super::scan::HOISTED_POINTERS;
    let hoisted: Vec<(Value, Value)> = if hoist {
        (0..nkeys + spec.aggs.len())
            .map(|c| (b.ins().load(I64, RO, cols, 16 * c as i32), b.ins().load(I64, RO, cols, 16 * c as i32 + 8)))
            .collect()
    } else {
        Vec::new()
    };
    let col = |b: &mut FunctionBuilder<'_>, c: usize| -> (Value, Value) {
        if hoist {
            hoisted[c]
        } else {
            (b.ins().load(I64, RO, cols, 16 * c as i32), b.ins().load(I64, RO, cols, 16 * c as i32 + 8))
        }
    };
    let mut sig = Signature::new(b.func.signature.call_conv);
    sig.params.extend([AbiParam::new(I64); 4]);
    sig.returns.push(AbiParam::new(I64));
    let insert_sig = b.import_signature(sig);

    let head = b.create_block();
    let row = b.append_block_param(head, I64);
    let last_lo = b.append_block_param(head, I64);
    let last_hi = b.append_block_param(head, I64);
    let last_g = b.append_block_param(head, I64);
    let exit = b.create_block();
    let code = b.append_block_param(exit, I64);
    let zero = b.ins().iconst(I64, 0);
    let empty = b.ins().iconst(I64, EMPTY as i64);
    b.ins().jump(head, &[zero, zero, zero, empty].map(BlockArg::Value));

    b.switch_to_block(head);
    let done = b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, row, n);
    let body = b.create_block();
    b.ins().brif(done, exit, &[BlockArg::Value(zero)], body, &[]);
    b.switch_to_block(body);

    // The row's NULL flag (0/1 as I8) of a column with NULL pointer `nulls`.
    let null_flag = |b: &mut FunctionBuilder<'_>, nulls: Value| -> Value {
        let at = b.ins().iadd(nulls, row);
        let at = b.ins().select(nulls, at, zero_at);
        b.ins().load(I8, RO, at, 0)
    };

    // The key.
    let mut key = if spec.keys.iter().any(|k| matches!(k, KeyKind::Str(_))) {
        let at = b.ins().imul_imm_s(row, 16);
        let at = b.ins().iadd(packed, at);
        let lo = b.ins().load(I64, RO, at, 0);
        let hi = if wide { b.ins().load(I64, RO, at, 8) } else { zero };
        (lo, hi)
    } else {
        (zero, zero)
    };
    let offs = spec.offsets();
    for (i, k) in spec.keys.iter().enumerate() {
        if matches!(k, KeyKind::Str(_)) {
            continue;
        }
        let (data, nulls) = col(b, i);
        let v = match *k {
            KeyKind::Bool => {
                let at = b.ins().iadd(data, row);
                let x = b.ins().load(I8, RO, at, 0);
                b.ins().uextend(I64, x)
            }
            KeyKind::Int(w) => {
                let t = super::int_type(w as usize);
                let at = b.ins().imul_imm_s(row, w as i64);
                let at = b.ins().iadd(data, at);
                let x = b.ins().load(t, RO, at, 0);
                if w == 8 { x } else { b.ins().uextend(I64, x) }
            }
            KeyKind::Float(w) => {
                let at = b.ins().imul_imm_s(row, w as i64);
                let at = b.ins().iadd(data, at);
                let f = if w == 4 {
                    let f = b.ins().load(types::F32, RO, at, 0);
                    b.ins().fpromote(types::F64, f)
                } else {
                    b.ins().load(types::F64, RO, at, 0)
                };
                let bits = b.ins().bitcast(I64, MemFlagsData::new(), f);
                let fz = b.ins().f64const(0.0);
                let is_zero = b.ins().fcmp(FloatCC::Equal, f, fz);
                let bits = b.ins().select(is_zero, zero, bits);
                let is_nan = b.ins().fcmp(FloatCC::Unordered, f, f);
                let nan = b.ins().iconst(I64, 0x7FF8_0000_0000_0000);
                b.ins().select(is_nan, nan, bits)
            }
            KeyKind::Str(_) => unreachable!(),
        };
        let flag = null_flag(b, nulls);
        let v = b.ins().select(flag, zero, v);
        key = place(b, key, v, offs[i], k.bits());
        let flag = b.ins().uextend(I64, flag);
        key = place(b, key, flag, spec.null_bit(i), 1);
    }
    let (lo, hi) = key;

    // The group: the previous row's, or probed.
    let have = b.create_block();
    let g = b.append_block_param(have, I64);
    let probe_start = b.create_block();
    let same = b.ins().icmp(IntCC::Equal, lo, last_lo);
    let same = if wide {
        let s2 = b.ins().icmp(IntCC::Equal, hi, last_hi);
        b.ins().band(same, s2)
    } else {
        same
    };
    let valid = b.ins().icmp(IntCC::NotEqual, last_g, empty);
    let same = b.ins().band(same, valid);
    b.ins().brif(same, have, &[BlockArg::Value(last_g)], probe_start, &[]);

    b.switch_to_block(probe_start);
    let h = if wide {
        let mh = mix64(b, hi);
        let r = b.ins().rotl_imm_s(mh, 17);
        let x = b.ins().bxor(lo, r);
        mix64(b, x)
    } else {
        mix64(b, lo)
    };
    let mask = b.ins().load(I64, ARGS, args, OFF_MASK);
    let i0 = b.ins().band(h, mask);
    let ploop = b.create_block();
    let i = b.append_block_param(ploop, I64);
    b.ins().jump(ploop, &[BlockArg::Value(i0)]);

    b.switch_to_block(ploop);
    let slots = b.ins().load(I64, ARGS, args, OFF_SLOTS);
    let at = b.ins().imul_imm_s(i, slot_size);
    let at = b.ins().iadd(slots, at);
    let id = b.ins().load(I32, WR, at, id_off);
    let is_empty = b.ins().icmp_imm_s(IntCC::Equal, id, -1);
    let insert = b.create_block();
    let check = b.create_block();
    b.ins().brif(is_empty, insert, &[], check, &[]);

    b.switch_to_block(check);
    let klo = b.ins().load(I64, WR, at, 0);
    let eq = b.ins().icmp(IntCC::Equal, klo, lo);
    let eq = if wide {
        let khi = b.ins().load(I64, WR, at, 8);
        let e2 = b.ins().icmp(IntCC::Equal, khi, hi);
        b.ins().band(eq, e2)
    } else {
        eq
    };
    let id64 = b.ins().uextend(I64, id);
    let next = b.create_block();
    b.ins().brif(eq, have, &[BlockArg::Value(id64)], next, &[]);
    b.switch_to_block(next);
    let i1 = b.ins().iadd_imm_s(i, 1);
    let i1 = b.ins().band(i1, mask);
    b.ins().jump(ploop, &[BlockArg::Value(i1)]);

    b.switch_to_block(insert);
    let f = b.ins().iconst(I64, bee_agg_insert as *const () as i64);
    let call = b.ins().call_indirect(insert_sig, f, &[args, lo, hi, row]);
    let gn = b.inst_results(call)[0];
    b.ins().jump(have, &[BlockArg::Value(gn)]);

    // The updates.
    b.switch_to_block(have);
    let at = b.ins().imul_imm_s(row, 4);
    let at = b.ins().iadd(gids, at);
    let g32 = b.ins().ireduce(I32, g);
    b.ins().store(WR, g32, at, 0);
    let g8 = b.ins().imul_imm_s(g, 8);
    let g16 = b.ins().imul_imm_s(g, 16);
    let one8 = b.ins().iconst(I8, 1);
    for (a, op) in spec.aggs.iter().enumerate() {
        let (data, nulls) = col(b, nkeys + a);
        let next = b.create_block();
        if *op != AggOp::CountStar {
            // A column without NULLs costs one predictable branch, no load.
            let check = b.create_block();
            let live = b.create_block();
            b.ins().brif(nulls, check, &[], live, &[]);
            b.switch_to_block(check);
            let at = b.ins().iadd(nulls, row);
            let flag = b.ins().load(I8, RO, at, 0);
            b.ins().brif(flag, next, &[], live, &[]);
            b.switch_to_block(live);
        }
        let p0 = b.ins().load(I64, ARGS, accs, 16 * a as i32);
        let p1 = if matches!(op, AggOp::CountStar | AggOp::Count) {
            p0
        } else {
            b.ins().load(I64, ARGS, accs, 16 * a as i32 + 8)
        };
        let int_in = |b: &mut FunctionBuilder<'_>, k: ValKind| -> Value {
            match k {
                ValKind::Bool => {
                    let at = b.ins().iadd(data, row);
                    let x = b.ins().load(I8, RO, at, 0);
                    b.ins().uextend(I64, x)
                }
                ValKind::Int(w) => {
                    let at = b.ins().imul_imm_s(row, w as i64);
                    let at = b.ins().iadd(data, at);
                    let x = b.ins().load(super::int_type(w as usize), RO, at, 0);
                    if w == 8 { x } else { b.ins().sextend(I64, x) }
                }
                ValKind::Float(_) => unreachable!(),
            }
        };
        let float_in = |b: &mut FunctionBuilder<'_>, w: u8| -> Value {
            let at = b.ins().imul_imm_s(row, w as i64);
            let at = b.ins().iadd(data, at);
            if w == 4 {
                let f = b.ins().load(types::F32, RO, at, 0);
                b.ins().fpromote(types::F64, f)
            } else {
                b.ins().load(types::F64, RO, at, 0)
            }
        };
        // acc[g] += 1 (i64) at `p`.
        let bump = |b: &mut FunctionBuilder<'_>, p: Value| {
            let at = b.ins().iadd(p, g8);
            let c = b.ins().load(I64, WR, at, 0);
            let c = b.ins().iadd_imm_s(c, 1);
            b.ins().store(WR, c, at, 0);
        };
        let set_has = |b: &mut FunctionBuilder<'_>, p: Value| {
            let at = b.ins().iadd(p, g);
            b.ins().store(WR, one8, at, 0);
        };
        let add_wide = |b: &mut FunctionBuilder<'_>, p: Value, x: Value| {
            let at = b.ins().iadd(p, g16);
            let s = b.ins().load(I128, WR, at, 0);
            let x = b.ins().sextend(I128, x);
            let s = b.ins().iadd(s, x);
            b.ins().store(WR, s, at, 0);
        };
        let add_float = |b: &mut FunctionBuilder<'_>, p: Value, x: Value| {
            let at = b.ins().iadd(p, g8);
            let s = b.ins().load(types::F64, WR, at, 0);
            let s = b.ins().fadd(s, x);
            b.ins().store(WR, s, at, 0);
        };
        match *op {
            AggOp::CountStar | AggOp::Count => bump(b, p0),
            AggOp::SumInt(w) => {
                let x = int_in(b, ValKind::Int(w));
                let at = b.ins().iadd(p0, g8);
                let s = b.ins().load(I64, WR, at, 0);
                let (s, of) = b.ins().sadd_overflow(s, x);
                let ok = b.create_block();
                let code = b.ins().iconst(I64, a as i64 + 1);
                b.ins().brif(of, exit, &[BlockArg::Value(code)], ok, &[]);
                b.switch_to_block(ok);
                b.ins().store(WR, s, at, 0);
                set_has(b, p1);
            }
            AggOp::SumWide(w) => {
                let x = int_in(b, ValKind::Int(w));
                add_wide(b, p0, x);
                set_has(b, p1);
            }
            AggOp::SumDec => {
                let x = int_in(b, ValKind::Int(8));
                add_wide(b, p0, x);
                set_has(b, p1);
            }
            AggOp::AvgInt(w) => {
                let x = int_in(b, ValKind::Int(w));
                add_wide(b, p0, x);
                bump(b, p1);
            }
            AggOp::AvgDec => {
                let x = int_in(b, ValKind::Int(8));
                add_wide(b, p0, x);
                bump(b, p1);
            }
            AggOp::SumFloat(w) => {
                let x = float_in(b, w);
                add_float(b, p0, x);
                set_has(b, p1);
            }
            AggOp::AvgFloat(w) => {
                let x = float_in(b, w);
                add_float(b, p0, x);
                bump(b, p1);
            }
            AggOp::Min(k) | AggOp::Max(k) => {
                let max = matches!(op, AggOp::Max(_));
                let at = b.ins().iadd(p0, g8);
                let hat = b.ins().iadd(p1, g);
                let h = b.ins().load(I8, WR, hat, 0);
                let fresh = b.ins().icmp_imm_s(IntCC::Equal, h, 0);
                let (x, better, t) = match k {
                    ValKind::Float(w) => {
                        let x = float_in(b, w);
                        let cur = b.ins().load(types::F64, WR, at, 0);
                        let xn = b.ins().fcmp(FloatCC::Unordered, x, x);
                        let cn = b.ins().fcmp(FloatCC::Unordered, cur, cur);
                        // NaN is the largest, all NaNs equal; −0 = 0 (ordered compares).
                        let (nan_wins, cc) = if max {
                            let not_cn = b.ins().bxor_imm_s(cn, 1);
                            (b.ins().band(xn, not_cn), FloatCC::GreaterThan)
                        } else {
                            let not_xn = b.ins().bxor_imm_s(xn, 1);
                            (b.ins().band(not_xn, cn), FloatCC::LessThan)
                        };
                        let c = b.ins().fcmp(cc, x, cur);
                        let better = b.ins().bor(nan_wins, c);
                        (x, (better, cur), types::F64)
                    }
                    k => {
                        let x = int_in(b, k);
                        let cur = b.ins().load(I64, WR, at, 0);
                        let cc = if max { IntCC::SignedGreaterThan } else { IntCC::SignedLessThan };
                        let better = b.ins().icmp(cc, x, cur);
                        (x, (better, cur), I64)
                    }
                };
                let _ = t;
                let (better, cur) = better;
                let take = b.ins().bor(better, fresh);
                let v = b.ins().select(take, x, cur);
                b.ins().store(WR, v, at, 0);
                b.ins().store(WR, one8, hat, 0);
            }
        }
        b.ins().jump(next, &[]);
        b.switch_to_block(next);
    }
    let row1 = b.ins().iadd_imm_s(row, 1);
    b.ins().jump(head, &[row1, lo, hi, g].map(BlockArg::Value));

    b.switch_to_block(exit);
    b.ins().return_(&[code]);
    Ok(())
}
