//! Predicates: every node yields i8 flags "is TRUE" / "is FALSE" (SQL's three-valued
//! logic without branches); every leaf is evaluated.

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{BlockArg, InstBuilder, Type, Value, types};

use super::scan::{Gen, Key};
use super::{RO, int_type, pieces};
use crate::generic::sql_float_cmp;
use crate::spec::{CmpOp, Const, IN_LIST_INLINE_MAX, Pred, ValueKind};

const I8: Type = types::I8;
const I32: Type = types::I32;
const I64: Type = types::I64;

/// String constants up to this long compare inline (length test, then 8/4/2/1-byte
/// loads); longer ones call [`super::bee_bytes_cmp`].
const INLINE_BYTES: usize = 16;

/// A node's value: `t` = is TRUE; `f` = is FALSE, `None` when the node is never
/// UNKNOWN (then `f = !t`).
#[derive(Clone, Copy)]
struct Tv {
    t: Value,
    f: Option<Value>,
}

/// Generates `p` in the current block; returns its "is TRUE" flag (i8 0/1).
pub(super) fn eval(g: &mut Gen<'_, '_>, p: &Pred) -> Result<Value, String> {
    Ok(node(g, p)?.t)
}

fn not(g: &mut Gen<'_, '_>, v: Value) -> Value {
    g.b.ins().bxor_imm_u(v, 1)
}

fn node(g: &mut Gen<'_, '_>, p: &Pred) -> Result<Tv, String> {
    Ok(match p {
        Pred::Cmp { attr, op, value } => {
            let r = cmp(g, *attr, *op, value)?;
            leaf(g, *attr, r)
        }
        Pred::InList { attr, values } if values.len() > IN_LIST_INLINE_MAX
            && !matches!(g.rel.kind(*attr), ValueKind::Bool | ValueKind::Raw(_)) =>
        {
            let r = in_set(g, *attr, values)?;
            leaf(g, *attr, r)
        }
        Pred::InList { attr, values } => {
            let mut r: Option<Value> = None;
            for v in values {
                let e = cmp(g, *attr, CmpOp::Eq, v)?;
                r = Some(match r {
                    None => e,
                    Some(x) => g.b.ins().bor(x, e),
                });
            }
            let r = r.ok_or("empty IN list")?;
            leaf(g, *attr, r)
        }
        Pred::IsNull { attr } => match g.is_null(*attr) {
            Some(n) => Tv { t: n, f: None },
            None => Tv {
                t: g.iconst(I8, 0),
                f: None,
            },
        },
        Pred::Prefix { attr, prefix } => {
            if g.rel.kind(*attr) != ValueKind::Bytes {
                return Err(format!("prefix test on fixed attribute {attr}"));
            }
            let r = prefix_test(g, *attr, prefix);
            leaf(g, *attr, r)
        }
        Pred::And(ps) | Pred::Or(ps) => {
            let and = matches!(p, Pred::And(_));
            let mut kids = Vec::with_capacity(ps.len());
            for k in ps {
                kids.push(node(g, k)?);
            }
            let first = *kids.first().ok_or("empty AND/OR")?;
            let mut t = first.t;
            for k in &kids[1..] {
                t = if and {
                    g.b.ins().band(t, k.t)
                } else {
                    g.b.ins().bor(t, k.t)
                };
            }
            let f = if kids.iter().all(|k| k.f.is_none()) {
                None
            } else {
                let mut acc: Option<Value> = None;
                for k in &kids {
                    let fk = match k.f {
                        Some(f) => f,
                        None => not(g, k.t),
                    };
                    acc = Some(match acc {
                        None => fk,
                        Some(a) if and => g.b.ins().bor(a, fk),
                        Some(a) => g.b.ins().band(a, fk),
                    });
                }
                acc
            };
            Tv { t, f }
        }
        Pred::Not(k) => {
            let c = node(g, k)?;
            match c.f {
                None => Tv {
                    t: not(g, c.t),
                    f: None,
                },
                Some(f) => Tv { t: f, f: Some(c.t) },
            }
        }
    })
}

/// A leaf's flags from its comparison result `r`: UNKNOWN when `attr` is NULL.
fn leaf(g: &mut Gen<'_, '_>, attr: usize, r: Value) -> Tv {
    match g.is_null(attr) {
        None => Tv { t: r, f: None },
        Some(n) => {
            let nn = not(g, n);
            let t = g.b.ins().band(r, nn);
            let nr = not(g, r);
            let f = g.b.ins().band(nr, nn);
            Tv { t, f: Some(f) }
        }
    }
}

fn int_cc(op: CmpOp, signed: bool) -> IntCC {
    match (op, signed) {
        (CmpOp::Eq, _) => IntCC::Equal,
        (CmpOp::Ne, _) => IntCC::NotEqual,
        (CmpOp::Lt, true) => IntCC::SignedLessThan,
        (CmpOp::Le, true) => IntCC::SignedLessThanOrEqual,
        (CmpOp::Gt, true) => IntCC::SignedGreaterThan,
        (CmpOp::Ge, true) => IntCC::SignedGreaterThanOrEqual,
        (CmpOp::Lt, false) => IntCC::UnsignedLessThan,
        (CmpOp::Le, false) => IntCC::UnsignedLessThanOrEqual,
        (CmpOp::Gt, false) => IntCC::UnsignedGreaterThan,
        (CmpOp::Ge, false) => IntCC::UnsignedGreaterThanOrEqual,
    }
}

/// A fixed attribute's value as comparisons see it: Bool as i8 0/1, Int sign-extended
/// to i64, Float as f32/f64, Decimal as i128. Loaded once per tuple.
fn fixed_val(g: &mut Gen<'_, '_>, attr: usize) -> Value {
    if let Some(&v) = g.cache.get(&Key::Fixed(attr)) {
        return v;
    }
    let (off, _) = g.fixed_at(attr);
    let off = off as i32;
    let tp = g.tp;
    let v = match g.rel.kind(attr) {
        ValueKind::Bool => {
            let b = g.b.ins().uload8(I32, RO, tp, off);
            g.b.ins().icmp_imm_u(IntCC::NotEqual, b, 0)
        }
        ValueKind::Int(2) => g.b.ins().sload16(I64, RO, tp, off),
        ValueKind::Int(4) => g.b.ins().sload32(RO, tp, off),
        ValueKind::Int(_) => g.b.ins().load(I64, RO, tp, off),
        ValueKind::Float(4) => g.b.ins().load(types::F32, RO, tp, off),
        ValueKind::Float(_) => g.b.ins().load(types::F64, RO, tp, off),
        ValueKind::Interval => {
            // (months × 30 + days) × µs per day + micros, in i128 (spec::interval_span).
            let months = g.b.ins().sload32(RO, tp, off);
            let days = g.b.ins().sload32(RO, tp, off + 4);
            let micros = g.b.ins().load(I64, RO, tp, off + 8);
            let m30 = g.b.ins().imul_imm_s(months, 30);
            let whole_days = g.b.ins().iadd(m30, days);
            let wide_days = g.b.ins().sextend(types::I128, whole_days);
            let lo = g.iconst(I64, crate::spec::MICROS_PER_DAY as i64);
            let hi = g.iconst(I64, 0);
            let per_day = g.b.ins().iconcat(lo, hi);
            let day_micros = g.b.ins().imul(wide_days, per_day);
            let wide_micros = g.b.ins().sextend(types::I128, micros);
            g.b.ins().iadd(day_micros, wide_micros)
        }
        ValueKind::Decimal | ValueKind::Raw(_) | ValueKind::Bytes => {
            g.b.ins().load(types::I128, RO, tp, off)
        }
    };
    g.cache.insert(Key::Fixed(attr), v);
    v
}

/// `attr op c` for a non-NULL attribute: i8 0/1.
fn cmp(g: &mut Gen<'_, '_>, attr: usize, op: CmpOp, c: &Const) -> Result<Value, String> {
    let kind = g.rel.kind(attr);
    Ok(match (kind, c) {
        (ValueKind::Bool, Const::Bool(k)) => {
            let v = fixed_val(g, attr);
            g.b.ins().icmp_imm_u(int_cc(op, false), v, *k as i64)
        }
        (ValueKind::Int(_), Const::Int(k)) => {
            let v = fixed_val(g, attr);
            g.b.ins().icmp_imm_s(int_cc(op, true), v, *k)
        }
        (ValueKind::Float(4), Const::F32(k)) => {
            let v = fixed_val(g, attr);
            let kv = (!k.is_nan()).then(|| g.b.ins().f32const(*k));
            float_cmp(g, v, op, kv)
        }
        (ValueKind::Float(w), Const::F64(k)) => {
            let mut v = fixed_val(g, attr);
            if w == 4 {
                v = g.b.ins().fpromote(types::F64, v);
            }
            let kv = (!k.is_nan()).then(|| g.b.ins().f64const(*k));
            float_cmp(g, v, op, kv)
        }
        (ValueKind::Decimal | ValueKind::Interval, Const::I128(k)) => {
            let v = fixed_val(g, attr);
            let lo = g.iconst(I64, *k as i64);
            let hi = g.iconst(I64, (*k >> 64) as i64);
            let kv = g.b.ins().iconcat(lo, hi);
            g.b.ins().icmp(int_cc(op, true), v, kv)
        }
        (ValueKind::Bytes, Const::Bytes(k)) => {
            let (ptr, len) = g.var_value(attr);
            if matches!(op, CmpOp::Eq | CmpOp::Ne) && k.len() <= INLINE_BYTES {
                let e = inline_eq(g, ptr, len, k, true);
                if op == CmpOp::Ne { not(g, e) } else { e }
            } else {
                let r = call_cmp(g, ptr, len, k);
                g.b.ins().icmp_imm_s(int_cc(op, true), r, 0)
            }
        }
        (k, c) => {
            return Err(format!(
                "constant {c:?} does not fit attribute {attr} ({k:?})"
            ));
        }
    })
}

/// SQL's float order: NaN equals NaN and is above every other value; `k` is the
/// constant, `None` when it is a NaN.
fn float_cmp(g: &mut Gen<'_, '_>, v: Value, op: CmpOp, k: Option<Value>) -> Value {
    match k {
        None => match op {
            // Only a NaN equals NaN; everything else is below it.
            CmpOp::Eq | CmpOp::Ge => g.b.ins().fcmp(FloatCC::Unordered, v, v),
            CmpOp::Ne | CmpOp::Lt => g.b.ins().fcmp(FloatCC::Ordered, v, v),
            CmpOp::Le => g.iconst(I8, 1),
            CmpOp::Gt => g.iconst(I8, 0),
        },
        Some(k) => {
            // A NaN attribute is above the (non-NaN) constant.
            let cc = match op {
                CmpOp::Eq => FloatCC::Equal,
                CmpOp::Ne => FloatCC::NotEqual,
                CmpOp::Lt => FloatCC::LessThan,
                CmpOp::Le => FloatCC::LessThanOrEqual,
                CmpOp::Gt => FloatCC::UnorderedOrGreaterThan,
                CmpOp::Ge => FloatCC::UnorderedOrGreaterThanOrEqual,
            };
            g.b.ins().fcmp(cc, v, k)
        }
    }
}

/// `attr IN (values)` for a non-NULL attribute and a long list: one call to a set
/// probe (`super::bee_in_*`) over members sorted and deduplicated here, kept in the
/// bee's constants. The code is the same size for 9 members or 100,000.
fn in_set(g: &mut Gen<'_, '_>, attr: usize, values: &[Const]) -> Result<Value, String> {
    let kind = g.rel.kind(attr);
    let misfit = |c: &Const| format!("constant {c:?} does not fit attribute {attr} ({kind:?})");
    match kind {
        ValueKind::Int(_) => {
            let mut ks = values
                .iter()
                .map(|c| match c {
                    Const::Int(k) => Ok(*k as u64),
                    c => Err(misfit(c)),
                })
                .collect::<Result<Vec<u64>, String>>()?;
            ks.sort_unstable_by_key(|&k| k as i64);
            ks.dedup();
            let v = fixed_val(g, attr);
            Ok(call_probe(g, super::bee_in_i64 as *const (), ks, &[v]))
        }
        ValueKind::Float(w) => {
            let mut ks = values
                .iter()
                .map(|c| match c {
                    Const::F32(k) => Ok(*k as f64),
                    Const::F64(k) => Ok(*k),
                    c => Err(misfit(c)),
                })
                .collect::<Result<Vec<f64>, String>>()?;
            ks.sort_by(|&a, &b| sql_float_cmp(a, b));
            ks.dedup_by(|a, b| sql_float_cmp(*a, *b).is_eq());
            let mut v = fixed_val(g, attr);
            if w == 4 {
                v = g.b.ins().fpromote(types::F64, v);
            }
            let ks = ks.into_iter().map(f64::to_bits).collect();
            Ok(call_probe(g, super::bee_in_f64 as *const (), ks, &[v]))
        }
        ValueKind::Decimal | ValueKind::Interval => {
            let mut ks = values
                .iter()
                .map(|c| match c {
                    Const::I128(k) => Ok(*k),
                    c => Err(misfit(c)),
                })
                .collect::<Result<Vec<i128>, String>>()?;
            ks.sort_unstable();
            ks.dedup();
            let v = fixed_val(g, attr);
            let (lo, hi) = g.b.ins().isplit(v);
            let words = ks.iter().flat_map(|&k| [k as u64, (k >> 64) as u64]).collect();
            Ok(call_probe(g, super::bee_in_i128 as *const (), words, &[lo, hi]))
        }
        ValueKind::Bytes => {
            let mut ks = values
                .iter()
                .map(|c| match c {
                    Const::Bytes(k) => Ok(&k[..]),
                    c => Err(misfit(c)),
                })
                .collect::<Result<Vec<&[u8]>, String>>()?;
            ks.sort_unstable();
            ks.dedup();
            // Offsets (n + 1 words) then the members' bytes, back to back.
            let mut offsets = Vec::with_capacity(ks.len() + 1);
            let mut data = Vec::new();
            for k in &ks {
                offsets.push(data.len() as u64);
                data.extend_from_slice(k);
            }
            offsets.push(data.len() as u64);
            let data = g.consts.bytes(&data);
            let data = g.iconst(I64, data);
            let (ptr, len) = g.var_value(attr);
            Ok(call_probe(g, super::bee_in_bytes as *const (), offsets, &[data, ptr, len]))
        }
        ValueKind::Bool | ValueKind::Raw(_) => Err(format!("no set probe for {kind:?}")),
    }
}

/// Calls the probe `f(words, count, args…)` -> i8, where `words` are kept in the bee's
/// constants and `count` is their number of members (words / member width is the
/// probe's business: the callers pass what it expects).
fn call_probe(g: &mut Gen<'_, '_>, f: *const (), words: Vec<u64>, args: &[Value]) -> Value {
    let n = words.len();
    let addr = g.consts.words(words);
    let mut sig = cranelift_codegen::ir::Signature::new(g.b.func.signature.call_conv);
    let mut params = vec![g.iconst(I64, addr), g.iconst(I64, n as i64)];
    params.extend_from_slice(args);
    for &p in &params {
        let ty = g.b.func.dfg.value_type(p);
        sig.params.push(cranelift_codegen::ir::AbiParam::new(ty));
    }
    sig.returns.push(cranelift_codegen::ir::AbiParam::new(I8));
    let sig = g.b.import_signature(sig);
    let callee = g.iconst(I64, f as i64);
    let call = g.b.ins().call_indirect(sig, callee, &params);
    g.b.inst_results(call)[0]
}

/// Calls [`super::bee_bytes_cmp`] on `(ptr, len)` and a copy of `k`: i32 -1/0/1.
fn call_cmp(g: &mut Gen<'_, '_>, ptr: Value, len: Value, k: &[u8]) -> Value {
    let addr = g.consts.bytes(k);
    let sig = g.cmp_sig();
    let callee = g.iconst(I64, super::bee_bytes_cmp as *const () as i64);
    let kp = g.iconst(I64, addr);
    let kl = g.iconst(I64, k.len() as i64);
    let call = g.b.ins().call_indirect(sig, callee, &[ptr, len, kp, kl]);
    g.b.inst_results(call)[0]
}

/// `(ptr, len)` starts with `p`.
fn prefix_test(g: &mut Gen<'_, '_>, attr: usize, p: &[u8]) -> Value {
    if p.is_empty() {
        return g.iconst(I8, 1);
    }
    let (ptr, len) = g.var_value(attr);
    if p.len() <= INLINE_BYTES {
        return inline_eq(g, ptr, len, p, false);
    }
    let pl = g.iconst(I64, p.len() as i64);
    let head = g.b.ins().umin(len, pl);
    let r = call_cmp(g, ptr, head, p);
    g.b.ins().icmp_imm_s(IntCC::Equal, r, 0)
}

/// `(ptr, len) == k` (`exact`) or starts with `k`: a length test, then (only when it
/// passes) inline compares of 8/4/2/1-byte pieces.
fn inline_eq(g: &mut Gen<'_, '_>, ptr: Value, len: Value, k: &[u8], exact: bool) -> Value {
    let cc = if exact {
        IntCC::Equal
    } else {
        IntCC::UnsignedGreaterThanOrEqual
    };
    let fits = g.b.ins().icmp_imm_u(cc, len, k.len() as i64);
    if k.is_empty() {
        return fits;
    }
    let arm = g.b.create_block();
    let join = g.b.create_block();
    let res = g.b.append_block_param(join, I8);
    let zero = g.iconst(I8, 0);
    g.b.ins()
        .brif(fits, arm, &[], join, &[BlockArg::Value(zero)]);
    g.b.switch_to_block(arm);
    let mut acc: Option<Value> = None;
    for (off, s) in pieces(0, k.len()) {
        let mut word = [0u8; 8];
        word[..s].copy_from_slice(&k[off..off + s]);
        let v = g.b.ins().load(int_type(s), RO, ptr, off as i32);
        let e =
            g.b.ins()
                .icmp_imm_u(IntCC::Equal, v, i64::from_le_bytes(word));
        acc = Some(match acc {
            None => e,
            Some(a) => g.b.ins().band(a, e),
        });
    }
    let acc = acc.expect("non-empty constant");
    g.b.ins().jump(join, &[BlockArg::Value(acc)]);
    g.b.switch_to_block(join);
    res
}
