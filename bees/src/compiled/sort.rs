//! Sort bees: one function encoding the normalized keys of a batch of rows (see
//! [`crate::spec::SortSpec`]), every part of a row in one pass.
//!
//! ```text
//! entry(args):  load cols, n, keys; per part its data and nulls pointers
//!               bee_zero(keys, n × stride); jump head(0, keys)
//! head(r, kp):  if r >= n                                          -> exit
//!               per part at its constant offset o:
//!                 NULL (nulls ≠ 0 and nulls[r] ≠ 0)? store the NULL byte -> next part
//!                 store 1 at kp + o; load slot r; transform; byte-swap;
//!                 invert when DESC; store at kp + o + 1
//!                 (Bytes: bee_copy of ≤ 12 bytes, the length byte; a long value
//!                  sets the flag byte and ends the row)
//!               jump head(r + 1, kp + stride)
//! ```
//!
//! Integers flip their sign bit and are byte-swapped; floats are canonicalized (NaN,
//! −0) with two selects and flipped by `b ^ ((b >>ₐ (w−1)) | sign)`; decimals are two
//! swapped words; an interval's span is computed by a helper ([`bee_interval_key`]),
//! as is the prefix copy ([`super::bee_copy`]).

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{AbiParam, BlockArg, InstBuilder, Signature, Type, Value, types};
use cranelift_frontend::FunctionBuilder;

use super::{ARGS, RO, WR, bee_copy};
use crate::abi::{SORT_OFF_COLS, SORT_OFF_KEYS, SORT_OFF_N};
use crate::spec::{SORT_PREFIX, SortSpec, ValueKind};

const I8: Type = types::I8;
const I64: Type = types::I64;

/// Zeroes `len` bytes at `dst`.
///
/// # Safety
/// `dst..dst+len` must be writable (or `len` 0).
pub unsafe extern "C" fn bee_zero(dst: *mut u8, len: usize) {
    if len != 0 {
        // SAFETY: the generated code passes the caller's key buffer.
        unsafe { std::ptr::write_bytes(dst, 0, len) };
    }
}

/// Writes the 16 normalized-key bytes of the interval slot at `slot` to `out`
/// (inverted when `desc` ≠ 0).
///
/// # Safety
/// `slot` must hold 16 readable bytes and `out` 16 writable ones.
pub unsafe extern "C" fn bee_interval_key(slot: *const u8, out: *mut u8, desc: u64) {
    // SAFETY: per the contract above.
    unsafe {
        let s = (slot as *const [u8; 16]).read_unaligned();
        let x = crate::spec::stored_interval_span(&s);
        let mut b = ((x as u128) ^ (1 << 127)).to_be_bytes();
        if desc != 0 {
            b.iter_mut().for_each(|v| *v = !*v);
        }
        (out as *mut [u8; 16]).write_unaligned(b);
    }
}

/// Generates the sort bee of `spec` into `b`.
pub(super) fn build(b: &mut FunctionBuilder<'_>, spec: &SortSpec) -> Result<(), String> {
    let stride = spec.stride() as i64;
    let offsets = spec.offsets();
    let flag = spec.key_width() as i32 - 1;
    if offsets.len() > 4096 {
        return Err("too many sort keys".into());
    }

    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let args = b.block_params(entry)[0];
    let cols = b.ins().load(I64, ARGS, args, SORT_OFF_COLS);
    let n = b.ins().load(I64, ARGS, args, SORT_OFF_N);
    let keys = b.ins().load(I64, ARGS, args, SORT_OFF_KEYS);
    let hoist = 2 * spec.parts.len() <= super::scan::HOISTED_POINTERS;
    let ptrs: Vec<Option<(Value, Value)>> = (0..spec.parts.len())
        .map(|i| {
            hoist.then(|| {
                (b.ins().load(I64, RO, cols, (16 * i) as i32), b.ins().load(I64, RO, cols, (16 * i + 8) as i32))
            })
        })
        .collect();

    let cc = b.func.signature.call_conv;
    let sig = |b: &mut FunctionBuilder<'_>, params: usize| {
        let mut s = Signature::new(cc);
        for _ in 0..params {
            s.params.push(AbiParam::new(I64));
        }
        b.import_signature(s)
    };
    let sig2 = sig(b, 2);
    let sig3 = sig(b, 3);
    let zero_fn = b.ins().iconst(I64, bee_zero as *const () as i64);
    let total = b.ins().imul_imm_s(n, stride);
    b.ins().call_indirect(sig2, zero_fn, &[keys, total]);

    let head = b.create_block();
    let row = b.append_block_param(head, I64);
    let kp = b.append_block_param(head, I64);
    let exit = b.create_block();
    let zero = b.ins().iconst(I64, 0);
    b.ins().jump(head, &[BlockArg::Value(zero), BlockArg::Value(keys)]);

    b.switch_to_block(head);
    let done = b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, row, n);
    let body = b.create_block();
    b.ins().brif(done, exit, &[], body, &[]);
    b.switch_to_block(body);
    let row_end = b.create_block();

    for (i, (p, &o)) in spec.parts.iter().zip(&offsets).enumerate() {
        let o = o as i32;
        let (data, nulls) = match ptrs[i] {
            Some(pn) => pn,
            None => (b.ins().load(I64, RO, cols, (16 * i) as i32), b.ins().load(I64, RO, cols, (16 * i + 8) as i32)),
        };
        let next = b.create_block();
        let value = b.create_block();
        let is_null = b.create_block();
        // NULL?
        let check = b.create_block();
        b.ins().brif(nulls, check, &[], value, &[]);
        b.switch_to_block(check);
        let at = b.ins().iadd(nulls, row);
        let nb = b.ins().load(I8, RO, at, 0);
        b.ins().brif(nb, is_null, &[], value, &[]);
        b.switch_to_block(is_null);
        let nv = b.ins().iconst(I8, if p.nulls_first { 0 } else { 2 });
        b.ins().store(WR, nv, kp, o);
        b.ins().jump(next, &[]);

        b.switch_to_block(value);
        let one = b.ins().iconst(I8, 1);
        b.ins().store(WR, one, kp, o);
        let v = o + 1;
        // Stores `x` (of type `t`) big-endian at kp + off, inverted when DESC.
        let put = |b: &mut FunctionBuilder<'_>, x: Value, t: Type, off: i32| {
            let x = if t == I8 { x } else { b.ins().bswap(x) };
            let x = if p.desc { b.ins().bnot(x) } else { x };
            b.ins().store(WR, x, kp, off);
        };
        match p.kind {
            ValueKind::Bool => {
                let at = b.ins().iadd(data, row);
                let x = b.ins().load(I8, RO, at, 0);
                let nz = b.ins().icmp_imm_s(IntCC::NotEqual, x, 0);
                put(b, nz, I8, v);
            }
            ValueKind::Int(w) => {
                let t = super::int_type(w as usize);
                let off = b.ins().imul_imm_s(row, w as i64);
                let at = b.ins().iadd(data, off);
                let x = b.ins().load(t, RO, at, 0);
                let sign = b.ins().iconst(t, sign_mask(w));
                let x = b.ins().bxor(x, sign);
                put(b, x, t, v);
            }
            ValueKind::Float(w) => {
                let (ft, it) = if w == 4 { (types::F32, types::I32) } else { (types::F64, types::I64) };
                let off = b.ins().imul_imm_s(row, w as i64);
                let at = b.ins().iadd(data, off);
                let f = b.ins().load(ft, RO, at, 0);
                let bits = b.ins().load(it, RO, at, 0);
                let nan_bits = b.ins().iconst(it, if w == 4 { f32::NAN.to_bits() as i64 } else { f64::NAN.to_bits() as i64 });
                let zero_bits = b.ins().iconst(it, 0);
                let fz = if w == 4 { b.ins().f32const(0.0) } else { b.ins().f64const(0.0) };
                let is_zero = b.ins().fcmp(FloatCC::Equal, f, fz);
                let bits = b.ins().select(is_zero, zero_bits, bits);
                let is_nan = b.ins().fcmp(FloatCC::Unordered, f, f);
                let bits = b.ins().select(is_nan, nan_bits, bits);
                let sh = b.ins().sshr_imm_s(bits, 8 * w as i64 - 1);
                let sign = b.ins().iconst(it, sign_mask(w));
                let mask = b.ins().bor(sh, sign);
                let x = b.ins().bxor(bits, mask);
                put(b, x, it, v);
            }
            ValueKind::Decimal => {
                let off = b.ins().imul_imm_s(row, 16);
                let at = b.ins().iadd(data, off);
                let lo = b.ins().load(I64, RO, at, 0);
                let hi = b.ins().load(I64, RO, at, 8);
                let sign = b.ins().iconst(I64, i64::MIN);
                let hi = b.ins().bxor(hi, sign);
                put(b, hi, I64, v);
                put(b, lo, I64, v + 8);
            }
            ValueKind::Interval => {
                let off = b.ins().imul_imm_s(row, 16);
                let at = b.ins().iadd(data, off);
                let out = b.ins().iadd_imm_s(kp, v as i64);
                let desc = b.ins().iconst(I64, p.desc as i64);
                let f = b.ins().iconst(I64, bee_interval_key as *const () as i64);
                b.ins().call_indirect(sig3, f, &[at, out, desc]);
            }
            ValueKind::Bytes => {
                let off = b.ins().imul_imm_s(row, 16);
                let at = b.ins().iadd(data, off);
                let ptr = b.ins().load(I64, RO, at, 0);
                let len = b.ins().load(I64, RO, at, 8);
                let pre = b.ins().iconst(I64, SORT_PREFIX as i64);
                let k = b.ins().umin(len, pre);
                let dst = b.ins().iadd_imm_s(kp, v as i64);
                let f = b.ins().iconst(I64, bee_copy as *const () as i64);
                b.ins().call_indirect(sig3, f, &[dst, ptr, k]);
                let pre1 = b.ins().iconst(I64, SORT_PREFIX as i64 + 1);
                let lb = b.ins().umin(len, pre1);
                let lb = b.ins().ireduce(I8, lb);
                b.ins().store(WR, lb, kp, v + SORT_PREFIX as i32);
                if p.desc {
                    // Invert the prefix and the length byte: 8 + 4 + 1 bytes.
                    for (d, t) in [(0, I64), (8, types::I32), (12, I8)] {
                        let x = b.ins().load(t, WR, kp, v + d);
                        let x = b.ins().bnot(x);
                        b.ins().store(WR, x, kp, v + d);
                    }
                    const _: () = assert!(SORT_PREFIX + 1 == 13);
                }
                let long = b.ins().icmp_imm_s(IntCC::UnsignedGreaterThan, len, SORT_PREFIX as i64);
                let set = b.create_block();
                b.ins().brif(long, set, &[], next, &[]);
                b.switch_to_block(set);
                let one = b.ins().iconst(I8, 1);
                b.ins().store(WR, one, kp, flag);
                b.ins().jump(row_end, &[]);
                b.switch_to_block(next);
                continue;
            }
            ValueKind::Raw(_) => return Err("a Raw sort key".into()),
        }
        b.ins().jump(next, &[]);
        b.switch_to_block(next);
    }
    b.ins().jump(row_end, &[]);
    b.switch_to_block(row_end);
    let row1 = b.ins().iadd_imm_s(row, 1);
    let kp1 = b.ins().iadd_imm_s(kp, stride);
    b.ins().jump(head, &[BlockArg::Value(row1), BlockArg::Value(kp1)]);

    b.switch_to_block(exit);
    b.ins().return_(&[zero]);
    Ok(())
}

/// The sign bit of a `w`-byte integer, as the i64 immediate of that type.
fn sign_mask(w: u8) -> i64 {
    match w {
        1 => 0x80,
        2 => 0x8000,
        4 => 0x8000_0000,
        _ => i64::MIN,
    }
}
