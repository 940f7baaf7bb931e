//! The compiled maker of join bees: one generated function per [`JoinKeySpec`] whose
//! loop over the probe rows reads each key column (its element type, mask and bit
//! offset baked in), tests the NULL flags (a select of the flag's address, no
//! branch per column), packs the key, reuses the previous row's id when the key
//! repeats, else hashes it ([`crate::join::hash64`] / [`crate::join::hash128`]
//! inline) and walks the build's slots inline (key compare against the slot,
//! stop at an empty slot), and stores the id. Nothing is called.
//!
//! ```text
//! head(r, last_lo, last_hi, have_last, last_id):  r >= n               -> exit
//!   null = OR of the parts' NULL bytes            null?               -> head(r + 1, …)  (ids[r] stays NO_ID)
//!   key = OR of bits(part) & mask << offset
//!   have_last and key == last?                                          -> store(last_id)
//!   i = hash(key) & mask
//! probe(i): id = slot[i].id; id == NO_ID -> store(NO_ID); slot[i].key == key -> store(id)
//!           probe((i + 1) & mask)
//! store(id): ids[r] = id                                                -> head(r + 1, key, 1, id)
//! ```

use std::mem::offset_of;

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{BlockArg, InstBuilder, MemFlagsData, Type, types};
use cranelift_frontend::FunctionBuilder;

use super::agg::{mix64, place};
use super::{ARGS, CompiledCode, Jit, RO, WR, compile_one};
use crate::join::{JoinData, JoinInput, JoinKeySpec, JoinLoad, JoinSlot, JoinTable, NO_ID};

const I8: Type = types::I8;
const I32: Type = types::I32;
const I64: Type = types::I64;

/// A compiled join probe's entry point (the return value is meaningless).
pub type JoinFn = unsafe extern "C" fn(*mut JoinArgs) -> u64;

/// What the generated code reads.
#[repr(C)]
pub struct JoinArgs {
    n: u64,
    /// Per part: (data, nulls or null).
    cols: *const [*const u8; 2],
    slots: *const u8,
    mask: u64,
    ids: *mut u32,
    zero: *const u8,
}

const OFF_N: i32 = offset_of!(JoinArgs, n) as i32;
const OFF_COLS: i32 = offset_of!(JoinArgs, cols) as i32;
const OFF_SLOTS: i32 = offset_of!(JoinArgs, slots) as i32;
const OFF_MASK: i32 = offset_of!(JoinArgs, mask) as i32;
const OFF_IDS: i32 = offset_of!(JoinArgs, ids) as i32;
const OFF_ZERO: i32 = offset_of!(JoinArgs, zero) as i32;

static ZERO: [u8; 16] = [0; 16];

/// The layout of a slot `(K, u32)` as the compiler laid it out: (size, key offset,
/// id offset), measured on a value.
fn slot_layout<K: Default + Copy>() -> (usize, usize, usize) {
    let s: (K, u32) = (K::default(), 0);
    let base = &s as *const (K, u32) as usize;
    let k = &s.0 as *const K as usize - base;
    let id = &s.1 as *const u32 as usize - base;
    (size_of::<(K, u32)>(), k, id)
}

pub fn compile_join(jit: &Jit, spec: &JoinKeySpec) -> Result<(CompiledCode, JoinFn), String> {
    spec.check()?;
    let layout = if spec.wide { slot_layout::<u128>() } else { slot_layout::<u64>() };
    let (code, ptr) = compile_one(jit, |b, _| build(b, spec, layout))?;
    // SAFETY: the function was generated with the JoinFn signature.
    let f = unsafe { std::mem::transmute::<*const u8, JoinFn>(ptr) };
    Ok((code, f))
}

/// Runs the compiled probe (the call checked: kinds, lengths, a power-of-two table
/// with an empty slot; `ids` holds `n` ids, all `NO_ID`).
pub(crate) fn call(f: JoinFn, _spec: &JoinKeySpec, cols: &[JoinInput<'_>], n: usize, table: JoinTable<'_>, ids: &mut [u32]) {
    let ptrs: Vec<[*const u8; 2]> = cols
        .iter()
        .map(|c| {
            let data = match c.data {
                JoinData::Bool(d) => d.as_ptr() as *const u8,
                JoinData::I16(d) => d.as_ptr() as *const u8,
                JoinData::I32(d) => d.as_ptr() as *const u8,
                JoinData::I64(d) => d.as_ptr() as *const u8,
                JoinData::F32(d) => d.as_ptr() as *const u8,
                JoinData::F64(d) => d.as_ptr() as *const u8,
            };
            [data, c.nulls.map_or(std::ptr::null(), |m| m.as_ptr() as *const u8)]
        })
        .collect();
    let (slots, len) = match table {
        JoinTable::Narrow(s) => (s.as_ptr() as *const u8, s.len()),
        JoinTable::Wide(s) => (s.as_ptr() as *const u8, s.len()),
    };
    let mut a = JoinArgs {
        n: n as u64,
        cols: ptrs.as_ptr(),
        slots,
        mask: len as u64 - 1,
        ids: ids.as_mut_ptr(),
        zero: ZERO.as_ptr(),
    };
    // SAFETY: the columns hold at least `n` rows, the table is a power of two long
    // with an empty slot (checked by the caller), `ids` holds `n` ids.
    unsafe { f(&mut a) };
}

fn build(b: &mut FunctionBuilder<'_>, spec: &JoinKeySpec, (slot_size, key_off, id_off): (usize, usize, usize)) -> Result<(), String> {
    let wide = spec.wide;
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let args = b.block_params(entry)[0];
    let n = b.ins().load(I64, ARGS, args, OFF_N);
    let cols = b.ins().load(I64, ARGS, args, OFF_COLS);
    let slots = b.ins().load(I64, ARGS, args, OFF_SLOTS);
    let mask = b.ins().load(I64, ARGS, args, OFF_MASK);
    let ids = b.ins().load(I64, ARGS, args, OFF_IDS);
    let zero_at = b.ins().load(I64, ARGS, args, OFF_ZERO);
    let hoist = 2 * spec.parts.len() <= super::scan::HOISTED_POINTERS;
    let hoisted: Vec<_> = if hoist {
        (0..spec.parts.len())
            .map(|c| (b.ins().load(I64, RO, cols, 16 * c as i32), b.ins().load(I64, RO, cols, 16 * c as i32 + 8)))
            .collect()
    } else {
        Vec::new()
    };

    let head = b.create_block();
    let row = b.append_block_param(head, I64);
    let last_lo = b.append_block_param(head, I64);
    let last_hi = b.append_block_param(head, I64);
    let have_last = b.append_block_param(head, I64);
    let last_id = b.append_block_param(head, I64);
    let exit = b.create_block();
    let zero = b.ins().iconst(I64, 0);
    b.ins().jump(head, &[zero, zero, zero, zero, zero].map(BlockArg::Value));

    b.switch_to_block(head);
    let done = b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, row, n);
    let body = b.create_block();
    b.ins().brif(done, exit, &[], body, &[]);
    b.switch_to_block(body);
    let row1 = b.ins().iadd_imm_s(row, 1);

    let mut key = (zero, zero);
    let mut any_null = None;
    for (c, p) in spec.parts.iter().enumerate() {
        let (data, nulls) = if hoist {
            hoisted[c]
        } else {
            (b.ins().load(I64, RO, cols, 16 * c as i32), b.ins().load(I64, RO, cols, 16 * c as i32 + 8))
        };
        let at = b.ins().iadd(nulls, row);
        let at = b.ins().select(nulls, at, zero_at);
        let flag = b.ins().load(I8, RO, at, 0);
        any_null = Some(match any_null {
            None => flag,
            Some(f) => b.ins().bor(f, flag),
        });
        let load = |b: &mut FunctionBuilder<'_>, t: Type, w: i64| {
            let at = b.ins().imul_imm_s(row, w);
            let at = b.ins().iadd(data, at);
            b.ins().load(t, RO, at, 0)
        };
        let v = match p.load {
            JoinLoad::Bool => {
                let x = load(b, I8, 1);
                b.ins().uextend(I64, x)
            }
            JoinLoad::I16 => {
                let x = load(b, types::I16, 2);
                b.ins().sextend(I64, x)
            }
            JoinLoad::I32 => {
                let x = load(b, I32, 4);
                b.ins().sextend(I64, x)
            }
            JoinLoad::I64 => load(b, I64, 8),
            JoinLoad::F32 | JoinLoad::F64 => {
                let f = if p.load == JoinLoad::F32 {
                    let f = load(b, types::F32, 4);
                    b.ins().fpromote(types::F64, f)
                } else {
                    load(b, types::F64, 8)
                };
                let bits = b.ins().bitcast(I64, MemFlagsData::new(), f);
                let fz = b.ins().f64const(0.0);
                let is_zero = b.ins().fcmp(FloatCC::Equal, f, fz);
                let bits = b.ins().select(is_zero, zero, bits);
                let is_nan = b.ins().fcmp(FloatCC::Unordered, f, f);
                let nan = b.ins().iconst(I64, 0x7FF8_0000_0000_0000);
                b.ins().select(is_nan, nan, bits)
            }
        };
        let v = match p.slot {
            JoinSlot::Int(8) | JoinSlot::Float => v,
            s => b.ins().band_imm_s(v, s.mask() as i64),
        };
        key = place(b, key, v, p.offset, p.slot.bits());
    }
    let (lo, hi) = key;
    let next_row = b.create_block();
    let packed = b.create_block();
    b.ins().brif(any_null.unwrap(), next_row, &[], packed, &[]);
    b.switch_to_block(next_row);
    b.ins().jump(head, &[row1, last_lo, last_hi, have_last, last_id].map(BlockArg::Value));

    b.switch_to_block(packed);
    let store = b.create_block();
    let id = b.append_block_param(store, I64);
    let probe_start = b.create_block();
    let same = b.ins().icmp(IntCC::Equal, lo, last_lo);
    let same = if wide {
        let s2 = b.ins().icmp(IntCC::Equal, hi, last_hi);
        b.ins().band(same, s2)
    } else {
        same
    };
    let valid = b.ins().icmp_imm_s(IntCC::NotEqual, have_last, 0);
    let same = b.ins().band(same, valid);
    b.ins().brif(same, store, &[BlockArg::Value(last_id)], probe_start, &[]);

    b.switch_to_block(probe_start);
    let h = if wide {
        let mh = mix64(b, hi);
        let r = b.ins().rotl_imm_s(mh, 17);
        let x = b.ins().bxor(lo, r);
        mix64(b, x)
    } else {
        mix64(b, lo)
    };
    let i0 = b.ins().band(h, mask);
    let ploop = b.create_block();
    let i = b.append_block_param(ploop, I64);
    b.ins().jump(ploop, &[BlockArg::Value(i0)]);

    b.switch_to_block(ploop);
    let at = b.ins().imul_imm_s(i, slot_size as i64);
    let at = b.ins().iadd(slots, at);
    let sid = b.ins().load(I32, RO, at, id_off as i32);
    let sid64 = b.ins().uextend(I64, sid);
    let is_empty = b.ins().icmp_imm_s(IntCC::Equal, sid, -1);
    let check = b.create_block();
    b.ins().brif(is_empty, store, &[BlockArg::Value(sid64)], check, &[]);
    b.switch_to_block(check);
    let klo = b.ins().load(I64, RO, at, key_off as i32);
    let eq = b.ins().icmp(IntCC::Equal, klo, lo);
    let eq = if wide {
        let khi = b.ins().load(I64, RO, at, key_off as i32 + 8);
        let e2 = b.ins().icmp(IntCC::Equal, khi, hi);
        b.ins().band(eq, e2)
    } else {
        eq
    };
    let next = b.create_block();
    b.ins().brif(eq, store, &[BlockArg::Value(sid64)], next, &[]);
    b.switch_to_block(next);
    let i1 = b.ins().iadd_imm_s(i, 1);
    let i1 = b.ins().band(i1, mask);
    b.ins().jump(ploop, &[BlockArg::Value(i1)]);

    b.switch_to_block(store);
    let at = b.ins().imul_imm_s(row, 4);
    let at = b.ins().iadd(ids, at);
    let id32 = b.ins().ireduce(I32, id);
    b.ins().store(WR, id32, at, 0);
    let one = b.ins().iconst(I64, 1);
    b.ins().jump(head, &[row1, lo, hi, one, id].map(BlockArg::Value));

    b.switch_to_block(exit);
    b.ins().return_(&[zero]);
    const _: () = assert!(NO_ID == u32::MAX);
    Ok(())
}
