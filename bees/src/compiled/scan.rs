//! Scan and deform bees: one function with the whole tuple loop (see the module doc
//! of [`super`] for the shape of the generated code).

use std::collections::HashMap;

use beedb_storage::tuple::AttrPlacement;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{
    AbiParam, Block, BlockArg, InstBuilder, SigRef, Signature, Type, Value, types,
};
use cranelift_frontend::FunctionBuilder;

use super::{ARGS, Consts, RO, WR, ZERO_BITMAP, int_type};
use crate::abi::{
    OFF_CAP, OFF_N, OFF_OUTS, OFF_PRODUCED, OFF_ROW0, OFF_SEL, OFF_TUPLES, OFF_VAR_LIMIT,
};
use crate::generic::var_walk_len;
use crate::spec::{RelationSpec, ScanSpec, ValueKind};

const I8: Type = types::I8;
const I32: Type = types::I32;
const I64: Type = types::I64;

/// Values cached in straight-line code (valid wherever their definition dominates).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Key {
    /// A loaded bitmap byte.
    NullByte(usize),
    /// An attribute's NULL flag (i8 0/1).
    Null(usize),
    /// A fixed attribute's loaded value (as the predicate compares it).
    Fixed(usize),
    /// `row << shift`.
    RowShift(u32),
}

/// What to do when a walked variable attribute is stored out of line.
#[derive(Clone, Copy)]
pub(super) enum Ext {
    /// Nothing needs it: skip it.
    Skip,
    /// Fall back now.
    Fallback,
    /// Raise a flag (tested once the predicate holds).
    Flag,
    /// Fall back if this output pointer is non-null (deform).
    FallbackIf(Value),
}

/// One output column.
struct Out {
    /// Output column number (its `ColumnOut` is `outs[k]`).
    k: usize,
    attr: usize,
    /// `data` and `nulls`, loaded at entry when few columns are output; otherwise
    /// read from `outs` where used.
    hoisted: Option<(Value, Option<Value>)>,
}

/// Up to this many output pointers are loaded once at entry and kept in registers;
/// beyond, they would be spilled to the stack and reloaded each row anyway, and
/// reading them from `outs` where they are used gives the register allocator (the
/// larger part of the compile time) much less to do and the loop fewer moves.
pub(super) const HOISTED_POINTERS: usize = 4;

/// Code generation state for one scan bee.
pub(super) struct Gen<'a, 'f> {
    pub b: &'a mut FunctionBuilder<'f>,
    pub rel: &'a RelationSpec,
    pub consts: &'a mut Consts,
    /// Fallback target: `exit(i, p)` with the current tuple's values.
    exit: Block,
    /// The loop head `head(i, p)`.
    head: Block,
    i: Value,
    p: Value,
    /// The `outs` array (column pointers are read from it where used: loop
    /// invariants held in registers would only be spilled).
    outs: Value,
    /// Tuple pointer and length.
    pub tp: Value,
    tl: Value,
    /// Bitmap pointer (the tuple's or a zero bitmap).
    bm: Value,
    /// Walk position (offset in the tuple).
    pos: Value,
    /// `(ptr, len)` of walked variable attributes whose value is needed.
    pub vars: HashMap<usize, (Value, Value)>,
    pub cache: HashMap<Key, Value>,
    cmp_sig: Option<SigRef>,
}

impl Gen<'_, '_> {
    pub fn iconst(&mut self, ty: Type, v: i64) -> Value {
        self.b.ins().iconst(ty, v)
    }

    /// Branches to the fallback exit when `cond` is nonzero; continues in a new block.
    fn fallback_if(&mut self, cond: Value) {
        let next = self.b.create_block();
        let args = [BlockArg::Value(self.i), BlockArg::Value(self.p)];
        self.b.ins().brif(cond, self.exit, &args, next, &[]);
        self.b.switch_to_block(next);
    }

    /// Runs `f` in code that does not dominate what follows (a conditional arm):
    /// values cached inside are forgotten afterwards.
    pub fn scoped<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        let saved = self.cache.clone();
        let r = f(self);
        self.cache = saved;
        r
    }

    /// The NULL flag (i8 0/1) of `attr`, `None` for a NOT NULL column.
    pub fn is_null(&mut self, attr: usize) -> Option<Value> {
        if !self.rel.nullable(attr) {
            return None;
        }
        if let Some(&v) = self.cache.get(&Key::Null(attr)) {
            return Some(v);
        }
        let byte = attr / 8;
        let loaded = match self.cache.get(&Key::NullByte(byte)) {
            Some(&v) => v,
            None => {
                let v = self.b.ins().uload8(I32, RO, self.bm, byte as i32);
                self.cache.insert(Key::NullByte(byte), v);
                v
            }
        };
        let bit = self.b.ins().band_imm_u(loaded, 1i64 << (attr % 8));
        let v = self.b.ins().icmp_imm_u(IntCC::NotEqual, bit, 0);
        self.cache.insert(Key::Null(attr), v);
        Some(v)
    }

    /// Address of a fixed attribute's bytes and its width.
    pub fn fixed_at(&self, attr: usize) -> (usize, usize) {
        match self.rel.placement(attr) {
            AttrPlacement::Fixed { offset, width } => (offset, width),
            AttrPlacement::Variable { .. } => unreachable!("variable attribute {attr}"),
        }
    }

    /// The `(ptr, len)` of a walked variable attribute (`(0, 0)` when NULL).
    pub fn var_value(&self, attr: usize) -> (Value, Value) {
        self.vars[&attr]
    }

    /// Signature of [`super::bee_bytes_cmp`].
    pub fn cmp_sig(&mut self) -> SigRef {
        if let Some(s) = self.cmp_sig {
            return s;
        }
        let mut sig = Signature::new(self.b.func.signature.call_conv);
        for _ in 0..4 {
            sig.params.push(AbiParam::new(I64));
        }
        sig.returns.push(AbiParam::new(I32));
        let s = self.b.import_signature(sig);
        self.cmp_sig = Some(s);
        s
    }

    /// Walks variable attribute number `k` (all earlier ones walked). When `need`,
    /// its `(ptr, len)` are left in [`Self::vars`]. Returns the "stored out of line"
    /// flag for [`Ext::Flag`].
    ///
    /// The hot path (a NULL or a short prefix) is straight-line code ending in one
    /// bounds check: the prefix byte is read from a zero byte instead when the walk
    /// is at the end of the tuple (making the bounds check fail), and a NULL attribute
    /// is turned into an empty step by selects.
    fn walk(&mut self, k: usize, need: bool, ext: Ext) -> Option<Value> {
        let attr = self.rel.layout().variable_attr(k);
        let (tp, tl, pos) = (self.tp, self.tl, self.pos);
        let null = self.is_null(attr);
        let zero = self.iconst(I64, 0);
        let zeros = self.iconst(I64, ZERO_BITMAP.as_ptr() as i64);
        let addr = self.b.ins().iadd(tp, pos);
        let inside = self.b.ins().icmp(IntCC::UnsignedLessThan, pos, tl);
        let src = self.b.ins().select(inside, addr, zeros);
        let mut first = self.b.ins().uload8(I64, RO, src, 0);
        let s = self.b.ins().iadd_imm_s(pos, 1);
        let mut e = self.b.ins().iadd(s, first);
        let mut p = self.b.ins().iadd(tp, s);
        if let Some(n) = null {
            first = self.b.ins().select(n, zero, first);
            e = self.b.ins().select(n, pos, e);
            p = self.b.ins().select(n, zero, p);
        }
        let flagged = matches!(ext, Ext::Flag);
        let check = self.b.create_block();
        let c_ptr = self.b.append_block_param(check, I64);
        let c_len = self.b.append_block_param(check, I64);
        let c_next = self.b.append_block_param(check, I64);
        let c_flag = flagged.then(|| self.b.append_block_param(check, I8));
        let args = |p, l, e, f: Option<Value>| {
            let mut v = vec![BlockArg::Value(p), BlockArg::Value(l), BlockArg::Value(e)];
            v.extend(f.map(BlockArg::Value));
            v
        };
        let (no, yes) = if flagged {
            (Some(self.iconst(I8, 0)), Some(self.iconst(I8, 1)))
        } else {
            (None, None)
        };
        let long = self.b.create_block();
        self.b.set_cold_block(long);
        let is_long = self
            .b
            .ins()
            .icmp_imm_u(IntCC::UnsignedGreaterThanOrEqual, first, 0xFE);
        self.b
            .ins()
            .brif(is_long, long, &[], check, &args(p, first, e, no));

        // 0xFE: u32 length (read from zeros when it would run past the end, which
        // then fails the bounds check); 0xFF: out of line.
        self.b.switch_to_block(long);
        let fe = self.b.create_block();
        let ext_blk = self.b.create_block();
        self.b.set_cold_block(fe);
        self.b.set_cold_block(ext_blk);
        let is_ext = self.b.ins().icmp_imm_u(IntCC::Equal, first, 0xFF);
        self.b.ins().brif(is_ext, ext_blk, &[], fe, &[]);

        self.b.switch_to_block(fe);
        let s = self.b.ins().iadd_imm_s(pos, 5);
        let over = self.b.ins().icmp(IntCC::UnsignedGreaterThan, s, tl);
        let src = self.b.ins().select(over, zeros, addr);
        let l = self.b.ins().uload32(RO, src, 1);
        let e = self.b.ins().iadd(s, l);
        let p = self.b.ins().iadd(tp, s);
        self.b.ins().jump(check, &args(p, l, e, no));

        self.b.switch_to_block(ext_blk);
        let e = self.b.ins().iadd_imm_s(pos, 9);
        let exit_args = [BlockArg::Value(self.i), BlockArg::Value(self.p)];
        match ext {
            Ext::Fallback => {
                self.b.ins().jump(self.exit, &exit_args);
            }
            Ext::FallbackIf(data) => {
                self.b
                    .ins()
                    .brif(data, self.exit, &exit_args, check, &args(zero, zero, e, no));
            }
            Ext::Skip | Ext::Flag => {
                self.b.ins().jump(check, &args(zero, zero, e, yes));
            }
        }

        self.b.switch_to_block(check);
        let over = self.b.ins().icmp(IntCC::UnsignedGreaterThan, c_next, tl);
        self.fallback_if(over);
        self.pos = c_next;
        if need {
            self.vars.insert(attr, (c_ptr, c_len));
        }
        c_flag
    }

    /// Output `out`'s `data` pointer.
    fn data_ptr(&mut self, out: &Out) -> Value {
        match out.hoisted {
            Some((d, _)) => d,
            None => self.b.ins().load(I64, RO, self.outs, (16 * out.k) as i32),
        }
    }

    /// `row << shift`, computed once per row.
    fn row_shift(&mut self, row: Value, shift: u32) -> Value {
        if shift == 0 {
            return row;
        }
        if let Some(&v) = self.cache.get(&Key::RowShift(shift)) {
            return v;
        }
        let v = self.b.ins().ishl_imm_u(row, shift as i64);
        self.cache.insert(Key::RowShift(shift), v);
        v
    }

    /// Writes output `out` of the current tuple into row `row` (variable attributes
    /// must have been walked with their value kept).
    fn write(&mut self, out: &Out, row: Value, data: Option<Value>) {
        let attr = out.attr;
        let kind = self.rel.kind(attr);
        let w = kind.out_width();
        let off = self.row_shift(row, w.trailing_zeros());
        let data = match data {
            Some(d) => d,
            None => self.data_ptr(out),
        };
        let dst = self.b.ins().iadd(data, off);
        let null = self.is_null(attr);
        match kind {
            ValueKind::Bytes => {
                let (p, l) = self.var_value(attr);
                self.b.ins().store(WR, p, dst, 0);
                self.b.ins().store(WR, l, dst, 8);
            }
            _ => {
                let (at, width) = self.fixed_at(attr);
                let parts: &[(usize, Type)] = match width {
                    16 => &[(0, I64), (8, I64)],
                    _ => &[(0, int_type(width))],
                };
                for &(o, ty) in parts {
                    let mut v = self.b.ins().load(ty, RO, self.tp, (at + o) as i32);
                    if kind == ValueKind::Bool {
                        v = self.b.ins().icmp_imm_u(IntCC::NotEqual, v, 0);
                    }
                    if let Some(n) = null {
                        let z = self.iconst(ty, 0);
                        v = self.b.ins().select(n, z, v);
                    }
                    self.b.ins().store(WR, v, dst, o as i32);
                }
            }
        }
        if let Some(n) = null {
            let nulls = match out.hoisted {
                Some((_, Some(nl))) => nl,
                _ => self
                    .b
                    .ins()
                    .load(I64, RO, self.outs, (16 * out.k + 8) as i32),
            };
            let dst = self.b.ins().iadd(nulls, row);
            self.b.ins().store(WR, n, dst, 0);
        }
    }
}

/// Generates the scan (or deform) bee of `spec` (checked) into `b`.
pub(super) fn build(
    b: &mut FunctionBuilder<'_>,
    spec: &ScanSpec,
    consts: &mut Consts,
) -> Result<(), String> {
    let rel = &*spec.relation;
    let lay = rel.layout();
    let natts = rel.natts();
    if natts > u16::MAX as usize || lay.null_bitmap_len() > ZERO_BITMAP.len() {
        return Err(format!("{natts} attributes: too many"));
    }
    if lay.fixed_end() + lay.null_bitmap_len() > i32::MAX as usize / 2 {
        return Err("fixed region too large".into());
    }
    if spec.outputs.len() > (i32::MAX as usize) / 16 {
        return Err(format!("{} outputs: too many", spec.outputs.len()));
    }
    let deform = spec.is_deform();

    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let args = b.block_params(entry)[0];
    let tuples = b.ins().load(I64, ARGS, args, OFF_TUPLES);
    let n = b.ins().load(I64, ARGS, args, OFF_N);
    let outs_ptr = b.ins().load(I64, ARGS, args, OFF_OUTS);
    let row0 = b.ins().load(I64, ARGS, args, OFF_ROW0);
    let cap = b.ins().load(I64, ARGS, args, OFF_CAP);
    let sel = b.ins().load(I64, ARGS, args, OFF_SEL);
    let var_limit = deform.then(|| b.ins().load(I64, ARGS, args, OFF_VAR_LIMIT));
    let mut outs: Vec<Out> = spec
        .outputs
        .iter()
        .enumerate()
        .map(|(k, &attr)| Out {
            k,
            attr,
            hoisted: None,
        })
        .collect();
    let pointers = outs.len() + outs.iter().filter(|o| rel.nullable(o.attr)).count();
    if pointers <= HOISTED_POINTERS {
        for o in &mut outs {
            let data = b.ins().load(I64, RO, outs_ptr, (16 * o.k) as i32);
            let nulls = rel
                .nullable(o.attr)
                .then(|| b.ins().load(I64, RO, outs_ptr, (16 * o.k + 8) as i32));
            o.hoisted = Some((data, nulls));
        }
    }

    let head = b.create_block();
    let i = b.append_block_param(head, I64);
    let p = b.append_block_param(head, I64);
    let exit = b.create_block();
    let exit_c = b.append_block_param(exit, I64);
    let exit_p = b.append_block_param(exit, I64);
    let zero = b.ins().iconst(I64, 0);
    b.ins()
        .jump(head, &[BlockArg::Value(zero), BlockArg::Value(zero)]);

    // exit(c, p): produced = p; return c.
    b.switch_to_block(exit);
    b.ins().store(ARGS, exit_p, args, OFF_PRODUCED);
    b.ins().return_(&[exit_c]);

    // head(i, p): stop at the end of the batch or of the room.
    b.switch_to_block(head);
    let end = b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, i, n);
    let full = b.ins().icmp(IntCC::Equal, p, cap);
    let stop = b.ins().bor(end, full);
    let body = b.create_block();
    b.ins().brif(
        stop,
        exit,
        &[BlockArg::Value(i), BlockArg::Value(p)],
        body,
        &[],
    );
    b.switch_to_block(body);
    let tref = b.ins().ishl_imm_u(i, 4);
    let tref = b.ins().iadd(tuples, tref);
    let tp = b.ins().load(I64, RO, tref, 0);
    let tl = b.ins().load(I64, RO, tref, 8);

    let mut g = Gen {
        b,
        rel,
        consts,
        exit,
        head,
        i,
        p,
        outs: outs_ptr,
        tp,
        tl,
        bm: zero,
        pos: zero,
        vars: HashMap::new(),
        cache: HashMap::new(),
        cmp_sig: None,
    };

    // Header: len >= 4, then (flags & !1, bee id, natts) == (0, 0, N) in one word.
    let short = g.b.ins().icmp_imm_u(IntCC::UnsignedLessThan, tl, 4);
    g.fallback_if(short);
    let word = g.b.ins().load(I32, RO, tp, 0);
    let masked = g.b.ins().band_imm_u(word, 0xFFFF_FFFEu32 as i64);
    let bad =
        g.b.ins()
            .icmp_imm_u(IntCC::NotEqual, masked, (natts as i64) << 16);
    g.fallback_if(bad);
    let has_nulls = g.b.ins().band_imm_u(word, 1);
    let fe = lay.fixed_end() as i64;
    let bl = lay.null_bitmap_len() as i64;
    let var_start = if bl == 0 {
        g.iconst(I64, fe)
    } else {
        let hn = g.b.ins().uextend(I64, has_nulls);
        let extra = g.b.ins().imul_imm_s(hn, bl);
        g.b.ins().iadd_imm_s(extra, fe)
    };
    let short = g.b.ins().icmp(IntCC::UnsignedLessThan, tl, var_start);
    g.fallback_if(short);
    if (0..natts).any(|a| rel.nullable(a)) {
        let own = g.b.ins().iadd_imm_s(tp, fe);
        let zeros = g.iconst(I64, ZERO_BITMAP.as_ptr() as i64);
        g.bm = g.b.ins().select(has_nulls, own, zeros);
    }
    g.pos = var_start;

    let next_i = g.b.ins().iadd_imm_s(i, 1);
    if deform {
        build_deform(&mut g, &outs, row0, sel, next_i, var_limit.expect("deform"));
    } else {
        build_scan(&mut g, spec, &outs, row0, sel, next_i)?;
    }
    Ok(())
}

/// Finishes a kept tuple: `sel[p] = i`, next tuple with `p + 1`.
fn keep(g: &mut Gen<'_, '_>, sel: Value, next_i: Value) {
    let at = g.b.ins().ishl_imm_u(g.p, 2);
    let at = g.b.ins().iadd(sel, at);
    let i32v = g.b.ins().ireduce(I32, g.i);
    g.b.ins().store(WR, i32v, at, 0);
    let p1 = g.b.ins().iadd_imm_s(g.p, 1);
    g.b.ins()
        .jump(g.head, &[BlockArg::Value(next_i), BlockArg::Value(p1)]);
}

/// Computes `row << shift` for every output width, in straight-line code.
fn row_shifts(g: &mut Gen<'_, '_>, outs: &[Out], row: Value) {
    for out in outs {
        let w = g.rel.kind(out.attr).out_width();
        g.row_shift(row, w.trailing_zeros());
    }
}

fn build_deform(
    g: &mut Gen<'_, '_>,
    outs: &[Out],
    row0: Value,
    sel: Value,
    next_i: Value,
    var_limit: Value,
) {
    let rel = g.rel;
    let lay = rel.layout();
    let row = g.b.ins().iadd(row0, g.p);
    row_shifts(g, outs, row);
    let tail = g.b.create_block();
    // NULL flags in straight-line code: the bitmap bytes are shared by the columns
    // (tested here once even if the column is skipped: a byte load from L1).
    for out in outs {
        if matches!(rel.placement(out.attr), AttrPlacement::Fixed { .. }) {
            g.is_null(out.attr);
        }
    }
    // Fixed attributes, at constant offsets.
    for out in outs {
        if matches!(rel.placement(out.attr), AttrPlacement::Variable { .. }) {
            continue;
        }
        let w = g.b.create_block();
        let skip = g.b.create_block();
        let data = g.data_ptr(out);
        g.b.ins().brif(data, w, &[], skip, &[]);
        g.b.switch_to_block(w);
        g.scoped(|g| g.write(out, row, Some(data)));
        g.b.ins().jump(skip, &[]);
        g.b.switch_to_block(skip);
    }
    // Variable attributes, walked while below var_limit.
    for k in 0..lay.variable_count() {
        let attr = lay.variable_attr(k);
        let out = &outs[attr];
        let stop =
            g.b.ins()
                .icmp_imm_u(IntCC::UnsignedLessThanOrEqual, var_limit, k as i64);
        let go = g.b.create_block();
        g.b.ins().brif(stop, tail, &[], go, &[]);
        g.b.switch_to_block(go);
        let data = g.data_ptr(out);
        g.walk(k, true, Ext::FallbackIf(data));
        let w = g.b.create_block();
        let skip = g.b.create_block();
        g.b.ins().brif(data, w, &[], skip, &[]);
        g.b.switch_to_block(w);
        g.scoped(|g| g.write(out, row, Some(data)));
        g.b.ins().jump(skip, &[]);
        g.b.switch_to_block(skip);
    }
    g.b.ins().jump(tail, &[]);
    g.b.switch_to_block(tail);
    keep(g, sel, next_i);
}

fn build_scan(
    g: &mut Gen<'_, '_>,
    spec: &ScanSpec,
    outs: &[Out],
    row0: Value,
    sel: Value,
    next_i: Value,
) -> Result<(), String> {
    let rel = g.rel;
    let lay = rel.layout();
    let pred_attrs = spec
        .predicate
        .as_ref()
        .map(|p| p.attrs())
        .unwrap_or_default();
    let pred_walk = var_walk_len(rel, pred_attrs.iter().copied());
    let out_walk = var_walk_len(rel, spec.outputs.iter().copied());
    let is_out = |a: usize| spec.outputs.contains(&a);

    // Phase 1: walk what the predicate reads; evaluate it.
    let mut flags = Vec::new();
    for k in 0..pred_walk {
        let attr = lay.variable_attr(k);
        let ext = if pred_attrs.contains(&attr) {
            Ext::Fallback
        } else if is_out(attr) {
            Ext::Flag
        } else {
            Ext::Skip
        };
        flags.extend(g.walk(k, pred_attrs.contains(&attr) || is_out(attr), ext));
    }
    if let Some(p) = &spec.predicate {
        let t = super::pred::eval(g, p)?;
        let kept = g.b.create_block();
        g.b.ins().brif(
            t,
            kept,
            &[],
            g.head,
            &[BlockArg::Value(next_i), BlockArg::Value(g.p)],
        );
        g.b.switch_to_block(kept);
    }
    // An output stored out of line, walked past for the predicate.
    if !flags.is_empty() {
        let mut any = flags[0];
        for &f in &flags[1..] {
            any = g.b.ins().bor(any, f);
        }
        g.fallback_if(any);
    }

    // Phase 2: outputs.
    let row = g.b.ins().iadd(row0, g.p);
    row_shifts(g, outs, row);
    for out in outs {
        match rel.placement(out.attr) {
            AttrPlacement::Fixed { .. } => g.write(out, row, None),
            AttrPlacement::Variable { index } if index < pred_walk => g.write(out, row, None),
            AttrPlacement::Variable { .. } => {}
        }
    }
    for k in pred_walk..out_walk {
        let attr = lay.variable_attr(k);
        let needed = is_out(attr);
        g.walk(k, needed, if needed { Ext::Fallback } else { Ext::Skip });
        for out in outs.iter().filter(|o| o.attr == attr) {
            g.write(out, row, None);
        }
    }
    keep(g, sel, next_i);
    Ok(())
}
