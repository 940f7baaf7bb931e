//! Form bees: one function encoding a batch of rows into stored tuples (see the
//! module doc of [`super`]).

use beedb_storage::tuple::{AttrPlacement, TUPLE_HEADER_SIZE, VARLEN_LONG, VARLEN_SHORT_MAX};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{AbiParam, BlockArg, InstBuilder, Signature, Type, Value, types};
use cranelift_frontend::FunctionBuilder;

use super::{ARGS, RO, WR, ZERO_BITMAP, int_type, pieces};
use crate::abi::{
    FORM_OFF_BUF, FORM_OFF_BUF_CAP, FORM_OFF_ENDS, FORM_OFF_INS, FORM_OFF_MAX_TUPLE, FORM_OFF_N,
    FORM_OFF_ROW0,
};
use crate::spec::RelationSpec;

const I8: Type = types::I8;
const I32: Type = types::I32;
const I64: Type = types::I64;

/// One input column's pointers, when loaded at entry.
struct In {
    data: Option<Value>,
    nulls: Option<Value>,
}

/// Generates the form bee of `rel` into `b`.
pub(super) fn build(b: &mut FunctionBuilder<'_>, rel: &RelationSpec) -> Result<(), String> {
    let lay = rel.layout();
    let natts = rel.natts();
    if natts > u16::MAX as usize || lay.null_bitmap_len() > ZERO_BITMAP.len() {
        return Err(format!("{natts} attributes: too many"));
    }
    if lay.fixed_end() + lay.null_bitmap_len() > i32::MAX as usize / 2 {
        return Err("fixed region too large".into());
    }
    let fe = lay.fixed_end() as i64;
    let bl = lay.null_bitmap_len() as i64;
    let any_nullable = (0..natts).any(|a| rel.nullable(a));

    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let args = b.block_params(entry)[0];
    let ins_ptr = b.ins().load(I64, ARGS, args, FORM_OFF_INS);
    let row0 = b.ins().load(I64, ARGS, args, FORM_OFF_ROW0);
    let n = b.ins().load(I64, ARGS, args, FORM_OFF_N);
    let buf = b.ins().load(I64, ARGS, args, FORM_OFF_BUF);
    let buf_cap = b.ins().load(I64, ARGS, args, FORM_OFF_BUF_CAP);
    let ends = b.ins().load(I64, ARGS, args, FORM_OFF_ENDS);
    let max_tuple = b.ins().load(I64, ARGS, args, FORM_OFF_MAX_TUPLE);
    // Input pointers: loaded once when few, else read from `ins` where used (see
    // `scan::HOISTED_POINTERS`).
    let pointers = natts + (0..natts).filter(|&a| rel.nullable(a)).count();
    let hoist = pointers <= super::scan::HOISTED_POINTERS;
    let ins: Vec<In> = (0..natts)
        .map(|a| In {
            data: hoist.then(|| b.ins().load(I64, RO, ins_ptr, (16 * a) as i32)),
            nulls: (hoist && rel.nullable(a))
                .then(|| b.ins().load(I64, RO, ins_ptr, (16 * a + 8) as i32)),
        })
        .collect();
    let data_ptr = |b: &mut FunctionBuilder<'_>, a: usize| match ins[a].data {
        Some(d) => d,
        None => b.ins().load(I64, RO, ins_ptr, (16 * a) as i32),
    };
    let mut copy_sig = Signature::new(b.func.signature.call_conv);
    for _ in 0..3 {
        copy_sig.params.push(AbiParam::new(I64));
    }
    let copy_sig = b.import_signature(copy_sig);

    let head = b.create_block();
    let k = b.append_block_param(head, I64);
    let at = b.append_block_param(head, I64);
    let ret = b.create_block();
    let ret_k = b.append_block_param(ret, I64);
    let zero = b.ins().iconst(I64, 0);
    b.ins()
        .jump(head, &[BlockArg::Value(zero), BlockArg::Value(zero)]);

    b.switch_to_block(ret);
    b.ins().return_(&[ret_k]);

    // head(k, at): row k of the batch; the previous tuple ended at `at`.
    b.switch_to_block(head);
    let done = b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, k, n);
    let body = b.create_block();
    b.ins().brif(done, ret, &[BlockArg::Value(k)], body, &[]);
    b.switch_to_block(body);
    let row = b.ins().iadd(row0, k);

    // NULL flags of the nullable inputs.
    let nulls: Vec<Option<Value>> = (0..natts)
        .map(|a| {
            rel.nullable(a).then(|| {
                let np = match ins[a].nulls {
                    Some(np) => np,
                    None => b.ins().load(I64, RO, ins_ptr, (16 * a + 8) as i32),
                };
                let a = b.ins().iadd(np, row);
                let v = b.ins().uload8(I32, RO, a, 0);
                b.ins().icmp_imm_u(IntCC::NotEqual, v, 0)
            })
        })
        .collect();
    let mut any_null = b.ins().iconst(I8, 0);
    for &nf in nulls.iter().flatten() {
        any_null = b.ins().bor(any_null, nf);
    }

    // Length: fixed part, bitmap, variable values.
    let row16 = b.ins().ishl_imm_u(row, 4);
    let mut total = b.ins().iconst(I64, fe);
    if any_nullable && bl > 0 {
        let anyw = b.ins().uextend(I64, any_null);
        let bm = b.ins().imul_imm_s(anyw, bl);
        total = b.ins().iadd(total, bm);
    }
    let mut too_big: Option<Value> = None;
    let mut vals = Vec::new();
    for k in 0..lay.variable_count() {
        let a = lay.variable_attr(k);
        let data = data_ptr(b, a);
        let src = b.ins().iadd(data, row16);
        let ptr = b.ins().load(I64, RO, src, 0);
        let len = b.ins().load(I64, RO, src, 8);
        let short =
            b.ins()
                .icmp_imm_u(IntCC::UnsignedLessThanOrEqual, len, VARLEN_SHORT_MAX as i64);
        let one = b.ins().iconst(I64, 1);
        let five = b.ins().iconst(I64, 5);
        let prefix = b.ins().select(short, one, five);
        let mut size = b.ins().iadd(len, prefix);
        let mut big = b
            .ins()
            .icmp_imm_u(IntCC::UnsignedGreaterThan, len, u32::MAX as i64);
        if let Some(nf) = nulls[a] {
            size = b.ins().select(nf, zero, size);
            let nn = b.ins().bxor_imm_u(nf, 1);
            big = b.ins().band(big, nn);
        }
        total = b.ins().iadd(total, size);
        too_big = Some(match too_big {
            None => big,
            Some(x) => b.ins().bor(x, big),
        });
        vals.push((a, ptr, len, short));
    }

    // Stop at a row over max_tuple or not fitting what is left of buf.
    let start = b.ins().iadd_imm_s(at, 7);
    let start = b.ins().band_imm_s(start, !7);
    let end = b.ins().iadd(start, total);
    let mut stop = b.ins().icmp(IntCC::UnsignedGreaterThan, total, max_tuple);
    let over = b.ins().icmp(IntCC::UnsignedGreaterThan, end, buf_cap);
    stop = b.ins().bor(stop, over);
    if let Some(x) = too_big {
        stop = b.ins().bor(stop, x);
    }
    let write = b.create_block();
    b.ins().brif(stop, ret, &[BlockArg::Value(k)], write, &[]);
    b.switch_to_block(write);
    let tp = b.ins().iadd(buf, start);

    // Header: flags, bee id 0, natts.
    let hdr = b.ins().uextend(I32, any_null);
    let hdr = b.ins().bor_imm_u(hdr, (natts as i64) << 16);
    b.ins().store(WR, hdr, tp, 0);

    // Fixed region: zero the alignment gaps, store every attribute.
    let mut covered = vec![false; fe as usize];
    covered[..TUPLE_HEADER_SIZE].fill(true);
    for (a, &null) in nulls.iter().enumerate() {
        let AttrPlacement::Fixed { offset, width } = rel.placement(a) else {
            continue;
        };
        covered[offset..offset + width].fill(true);
        let src_off = b.ins().ishl_imm_u(row, width.trailing_zeros() as i64);
        let data = data_ptr(b, a);
        let src = b.ins().iadd(data, src_off);
        let parts: &[(usize, Type)] = match width {
            16 => &[(0, I64), (8, I64)],
            _ => &[(0, int_type(width))],
        };
        for &(o, ty) in parts {
            let mut v = b.ins().load(ty, RO, src, o as i32);
            if let Some(nf) = null {
                let z = b.ins().iconst(ty, 0);
                v = b.ins().select(nf, z, v);
            }
            b.ins().store(WR, v, tp, (offset + o) as i32);
        }
    }
    let mut gap = 0;
    while gap < covered.len() {
        if covered[gap] {
            gap += 1;
            continue;
        }
        let from = gap;
        while gap < covered.len() && !covered[gap] {
            gap += 1;
        }
        for (o, s) in pieces(from, gap - from) {
            let z = b.ins().iconst(int_type(s), 0);
            b.ins().store(WR, z, tp, o as i32);
        }
    }

    // Bitmap, when some input is NULL.
    if any_nullable && bl > 0 {
        let bm = b.create_block();
        let after = b.create_block();
        b.ins().brif(any_null, bm, &[], after, &[]);
        b.switch_to_block(bm);
        for (o, s) in pieces(0, bl as usize) {
            let ty = int_type(s);
            let mut v = b.ins().iconst(ty, 0);
            let group = (8 * o)..(8 * (o + s)).min(natts);
            for (a, nf) in group.clone().zip(&nulls[group]) {
                let Some(nf) = *nf else { continue };
                let x = if ty == I8 {
                    nf
                } else {
                    b.ins().uextend(ty, nf)
                };
                let x = b.ins().ishl_imm_u(x, (a - 8 * o) as i64);
                v = b.ins().bor(v, x);
            }
            b.ins().store(WR, v, tp, (fe as usize + o) as i32);
        }
        b.ins().jump(after, &[]);
        b.switch_to_block(after);
    }

    // Variable region: prefix and bytes of each non-NULL value.
    let mut wp = b.ins().iadd_imm_s(tp, fe);
    if any_nullable && bl > 0 {
        let anyw = b.ins().uextend(I64, any_null);
        let bm = b.ins().imul_imm_s(anyw, bl);
        wp = b.ins().iadd(wp, bm);
    }
    let copy = b.ins().iconst(I64, super::bee_copy as *const () as i64);
    for (a, ptr, len, short) in vals {
        let skip = b.create_block();
        let next_wp = b.append_block_param(skip, I64);
        if let Some(nf) = nulls[a] {
            let w = b.create_block();
            b.ins().brif(nf, skip, &[BlockArg::Value(wp)], w, &[]);
            b.switch_to_block(w);
        }
        let sh = b.create_block();
        let lg = b.create_block();
        let cp = b.create_block();
        let dst = b.append_block_param(cp, I64);
        b.ins().brif(short, sh, &[], lg, &[]);

        b.switch_to_block(sh);
        b.ins().istore8(WR, len, wp, 0);
        let d = b.ins().iadd_imm_s(wp, 1);
        b.ins().jump(cp, &[BlockArg::Value(d)]);

        b.set_cold_block(lg);
        b.switch_to_block(lg);
        let fe_byte = b.ins().iconst(I8, VARLEN_LONG as i64);
        b.ins().store(WR, fe_byte, wp, 0);
        b.ins().istore32(WR, len, wp, 1);
        let d = b.ins().iadd_imm_s(wp, 5);
        b.ins().jump(cp, &[BlockArg::Value(d)]);

        b.switch_to_block(cp);
        b.ins().call_indirect(copy_sig, copy, &[dst, ptr, len]);
        let e = b.ins().iadd(dst, len);
        b.ins().jump(skip, &[BlockArg::Value(e)]);

        b.switch_to_block(skip);
        wp = next_wp;
    }

    // ends[k] = end; next row.
    let eo = b.ins().ishl_imm_u(k, 3);
    let ea = b.ins().iadd(ends, eo);
    b.ins().store(WR, end, ea, 0);
    let k1 = b.ins().iadd_imm_s(k, 1);
    b.ins()
        .jump(head, &[BlockArg::Value(k1), BlockArg::Value(end)]);
    Ok(())
}
