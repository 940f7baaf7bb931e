//! The instantiated maker: bees assembled from pre-compiled, monomorphized Rust
//! kernels. Making one chooses a kernel per attribute and per predicate leaf — generic
//! over value type × operator, so each is a tight loop body the Rust compiler already
//! optimized — and binds it to the layout's offsets and the query's constants. That
//! takes about a microsecond, so this maker serves every bee the compiled maker would
//! not pay for (small relations, one-off queries) and stands in when the code-memory
//! budget is spent.
//!
//! The price is a dynamic call per predicate leaf and per output column per tuple
//! (`dyn` kernels and function pointers), where the compiled maker has straight-line
//! code; the results are the same (see [`crate::spec`]).

use std::cmp::Ordering;
use std::marker::PhantomData;

use beedb_storage::tuple::{AttrPlacement, TUPLE_HEADER_SIZE};

use crate::abi::{ByteRef, ColumnOut, FormArgs, RunArgs};
use crate::generic::{sql_float_cmp, sql_float32_cmp, var_walk_len};
use crate::spec::{CmpOp, Const, IN_LIST_INLINE_MAX, Pred, RelationSpec, ScanSpec, ValueKind};

/// One variable attribute found by the walk: `start`, `len`, and its state.
#[derive(Clone, Copy, Default)]
struct VarSlot {
    start: u32,
    len: u32,
    state: u8,
}
const VAR_NULL: u8 = 0;
const VAR_INLINE: u8 = 1;
const VAR_EXTERNAL: u8 = 2;

/// A tuple being read: its bytes, whether it has a bitmap, and its walked variables.
struct View<'t, 'v> {
    t: &'t [u8],
    has_nulls: bool,
    bitmap: usize,
    vars: &'v [VarSlot],
}

impl View<'_, '_> {
    #[inline(always)]
    fn null_bit(&self, (byte, mask): (usize, u8)) -> bool {
        self.has_nulls && self.t[self.bitmap + byte] & mask != 0
    }
}

/// Three-valued truth: 0 false, 1 true, 2 unknown.
type Tri = u8;
const FALSE: Tri = 0;
const TRUE: Tri = 1;
const UNKNOWN: Tri = 2;

/// A predicate kernel bound to its offsets and constants.
trait PredKernel: Send + Sync {
    fn eval(&self, v: &View<'_, '_>) -> Tri;
}

/// A value type a fixed attribute is loaded as, with SQL's order.
trait Load: Send + Sync + 'static {
    type T: Copy + Send + Sync;
    const WIDTH: usize;
    fn load(b: &[u8]) -> Self::T;
    fn cmp(a: Self::T, b: Self::T) -> Ordering;
}

macro_rules! int_load {
    ($name:ident, $t:ty, $w:expr) => {
        struct $name;
        impl Load for $name {
            type T = i64;
            const WIDTH: usize = $w;
            #[inline(always)]
            fn load(b: &[u8]) -> i64 {
                <$t>::from_le_bytes(b[..$w].try_into().unwrap()) as i64
            }
            #[inline(always)]
            fn cmp(a: i64, b: i64) -> Ordering {
                a.cmp(&b)
            }
        }
    };
}
int_load!(LoadI16, i16, 2);
int_load!(LoadI32, i32, 4);
int_load!(LoadI64, i64, 8);

struct LoadBool;
impl Load for LoadBool {
    type T = bool;
    const WIDTH: usize = 1;
    #[inline(always)]
    fn load(b: &[u8]) -> bool {
        b[0] != 0
    }
    #[inline(always)]
    fn cmp(a: bool, b: bool) -> Ordering {
        a.cmp(&b)
    }
}

struct LoadF32;
impl Load for LoadF32 {
    type T = f32;
    const WIDTH: usize = 4;
    #[inline(always)]
    fn load(b: &[u8]) -> f32 {
        f32::from_le_bytes(b[..4].try_into().unwrap())
    }
    #[inline(always)]
    fn cmp(a: f32, b: f32) -> Ordering {
        sql_float32_cmp(a, b)
    }
}

/// A `real` attribute compared with a `double` constant.
struct LoadF32As64;
impl Load for LoadF32As64 {
    type T = f64;
    const WIDTH: usize = 4;
    #[inline(always)]
    fn load(b: &[u8]) -> f64 {
        f32::from_le_bytes(b[..4].try_into().unwrap()) as f64
    }
    #[inline(always)]
    fn cmp(a: f64, b: f64) -> Ordering {
        sql_float_cmp(a, b)
    }
}

struct LoadF64;
impl Load for LoadF64 {
    type T = f64;
    const WIDTH: usize = 8;
    #[inline(always)]
    fn load(b: &[u8]) -> f64 {
        f64::from_le_bytes(b[..8].try_into().unwrap())
    }
    #[inline(always)]
    fn cmp(a: f64, b: f64) -> Ordering {
        sql_float_cmp(a, b)
    }
}

struct LoadI128;
impl Load for LoadI128 {
    type T = i128;
    const WIDTH: usize = 16;
    #[inline(always)]
    fn load(b: &[u8]) -> i128 {
        i128::from_le_bytes(b[..16].try_into().unwrap())
    }
    #[inline(always)]
    fn cmp(a: i128, b: i128) -> Ordering {
        a.cmp(&b)
    }
}

/// An interval, compared by its total span.
struct LoadInterval;
impl Load for LoadInterval {
    type T = i128;
    const WIDTH: usize = 16;
    #[inline(always)]
    fn load(b: &[u8]) -> i128 {
        crate::spec::stored_interval_span(b[..16].try_into().unwrap())
    }
    #[inline(always)]
    fn cmp(a: i128, b: i128) -> Ordering {
        a.cmp(&b)
    }
}

/// A comparison operator as a type, so each (type, operator) pair is its own kernel.
trait Op: Send + Sync + 'static {
    fn holds(o: Ordering) -> bool;
}
macro_rules! op {
    ($name:ident, $p:pat) => {
        struct $name;
        impl Op for $name {
            #[inline(always)]
            fn holds(o: Ordering) -> bool {
                matches!(o, $p)
            }
        }
    };
}
op!(OpEq, Ordering::Equal);
op!(OpNe, Ordering::Less | Ordering::Greater);
op!(OpLt, Ordering::Less);
op!(OpLe, Ordering::Less | Ordering::Equal);
op!(OpGt, Ordering::Greater);
op!(OpGe, Ordering::Greater | Ordering::Equal);

/// `fixed attribute op constant`.
struct CmpFixed<L: Load, O: Op> {
    offset: usize,
    null: Option<(usize, u8)>,
    k: L::T,
    _p: PhantomData<(L, O)>,
}

impl<L: Load, O: Op> PredKernel for CmpFixed<L, O> {
    #[inline]
    fn eval(&self, v: &View<'_, '_>) -> Tri {
        if let Some(bit) = self.null
            && v.null_bit(bit)
        {
            return UNKNOWN;
        }
        let x = L::load(&v.t[self.offset..self.offset + L::WIDTH]);
        O::holds(L::cmp(x, self.k)) as Tri
    }
}

/// `fixed attribute IN (constants)`.
struct InFixed<L: Load> {
    offset: usize,
    null: Option<(usize, u8)>,
    ks: Vec<L::T>,
}

impl<L: Load> PredKernel for InFixed<L> {
    fn eval(&self, v: &View<'_, '_>) -> Tri {
        if let Some(bit) = self.null
            && v.null_bit(bit)
        {
            return UNKNOWN;
        }
        let x = L::load(&v.t[self.offset..self.offset + L::WIDTH]);
        if self.ks.len() <= IN_LIST_INLINE_MAX {
            self.ks.iter().any(|&k| L::cmp(x, k) == Ordering::Equal) as Tri
        } else {
            self.ks.binary_search_by(|&k| L::cmp(k, x)).is_ok() as Tri
        }
    }
}

impl<L: Load> InFixed<L> {
    /// The members sorted in `L`'s (SQL's) order without repeats, for binary search.
    fn new(offset: usize, null: Option<(usize, u8)>, mut ks: Vec<L::T>) -> InFixed<L> {
        ks.sort_by(|&a, &b| L::cmp(a, b));
        ks.dedup_by(|a, b| L::cmp(*a, *b) == Ordering::Equal);
        InFixed { offset, null, ks }
    }
}

#[inline(always)]
fn var_bytes<'t>(v: &View<'t, '_>, index: usize) -> Option<&'t [u8]> {
    let s = v.vars[index];
    (s.state == VAR_INLINE).then(|| &v.t[s.start as usize..(s.start + s.len) as usize])
}

/// `variable attribute op bytes`.
struct CmpVar<O: Op> {
    index: usize,
    k: Vec<u8>,
    _p: PhantomData<O>,
}

impl<O: Op> PredKernel for CmpVar<O> {
    fn eval(&self, v: &View<'_, '_>) -> Tri {
        match var_bytes(v, self.index) {
            Some(b) => O::holds(b.cmp(&self.k)) as Tri,
            None => UNKNOWN,
        }
    }
}

struct InVar {
    index: usize,
    /// Short lists: compared one by one.
    ks: Vec<Vec<u8>>,
    /// Long lists (more than [`IN_LIST_INLINE_MAX`]): a hash set instead.
    set: Option<std::collections::HashSet<Vec<u8>>>,
}

impl InVar {
    fn new(index: usize, ks: Vec<Vec<u8>>) -> InVar {
        if ks.len() > IN_LIST_INLINE_MAX {
            InVar {
                index,
                ks: Vec::new(),
                set: Some(ks.into_iter().collect()),
            }
        } else {
            InVar { index, ks, set: None }
        }
    }
}

impl PredKernel for InVar {
    fn eval(&self, v: &View<'_, '_>) -> Tri {
        match var_bytes(v, self.index) {
            Some(b) => match &self.set {
                Some(set) => set.contains(b) as Tri,
                None => self.ks.iter().any(|k| k[..] == *b) as Tri,
            },
            None => UNKNOWN,
        }
    }
}

struct PrefixVar {
    index: usize,
    prefix: Vec<u8>,
}

impl PredKernel for PrefixVar {
    fn eval(&self, v: &View<'_, '_>) -> Tri {
        match var_bytes(v, self.index) {
            Some(b) => b.starts_with(&self.prefix) as Tri,
            None => UNKNOWN,
        }
    }
}

struct IsNullFixed {
    null: Option<(usize, u8)>,
}

impl PredKernel for IsNullFixed {
    fn eval(&self, v: &View<'_, '_>) -> Tri {
        self.null.is_some_and(|bit| v.null_bit(bit)) as Tri
    }
}

struct IsNullVar {
    index: usize,
}

impl PredKernel for IsNullVar {
    fn eval(&self, v: &View<'_, '_>) -> Tri {
        (v.vars[self.index].state == VAR_NULL) as Tri
    }
}

struct And(Vec<Box<dyn PredKernel>>);
impl PredKernel for And {
    fn eval(&self, v: &View<'_, '_>) -> Tri {
        let mut r = TRUE;
        for p in &self.0 {
            match p.eval(v) {
                FALSE => return FALSE,
                UNKNOWN => r = UNKNOWN,
                _ => {}
            }
        }
        r
    }
}

struct Or(Vec<Box<dyn PredKernel>>);
impl PredKernel for Or {
    fn eval(&self, v: &View<'_, '_>) -> Tri {
        let mut r = FALSE;
        for p in &self.0 {
            match p.eval(v) {
                TRUE => return TRUE,
                UNKNOWN => r = UNKNOWN,
                _ => {}
            }
        }
        r
    }
}

struct Not(Box<dyn PredKernel>);
impl PredKernel for Not {
    fn eval(&self, v: &View<'_, '_>) -> Tri {
        match self.0.eval(v) {
            TRUE => FALSE,
            FALSE => TRUE,
            u => u,
        }
    }
}

fn null_of(rel: &RelationSpec, attr: usize) -> Option<(usize, u8)> {
    rel.nullable(attr)
        .then(|| rel.layout().null_bit(attr))
}

fn cmp_fixed<L: Load>(offset: usize, null: Option<(usize, u8)>, op: CmpOp, k: L::T) -> Box<dyn PredKernel> {
    fn mk<L: Load, O: Op>(offset: usize, null: Option<(usize, u8)>, k: L::T) -> Box<dyn PredKernel> {
        Box::new(CmpFixed::<L, O> {
            offset,
            null,
            k,
            _p: PhantomData,
        })
    }
    match op {
        CmpOp::Eq => mk::<L, OpEq>(offset, null, k),
        CmpOp::Ne => mk::<L, OpNe>(offset, null, k),
        CmpOp::Lt => mk::<L, OpLt>(offset, null, k),
        CmpOp::Le => mk::<L, OpLe>(offset, null, k),
        CmpOp::Gt => mk::<L, OpGt>(offset, null, k),
        CmpOp::Ge => mk::<L, OpGe>(offset, null, k),
    }
}

fn cmp_var(index: usize, op: CmpOp, k: Vec<u8>) -> Box<dyn PredKernel> {
    fn mk<O: Op>(index: usize, k: Vec<u8>) -> Box<dyn PredKernel> {
        Box::new(CmpVar::<O> {
            index,
            k,
            _p: PhantomData,
        })
    }
    match op {
        CmpOp::Eq => mk::<OpEq>(index, k),
        CmpOp::Ne => mk::<OpNe>(index, k),
        CmpOp::Lt => mk::<OpLt>(index, k),
        CmpOp::Le => mk::<OpLe>(index, k),
        CmpOp::Gt => mk::<OpGt>(index, k),
        CmpOp::Ge => mk::<OpGe>(index, k),
    }
}

/// Chooses and binds the kernel of one predicate node.
fn bind(rel: &RelationSpec, p: &Pred) -> Box<dyn PredKernel> {
    let fixed_at = |attr: usize| match rel.placement(attr) {
        AttrPlacement::Fixed { offset, .. } => offset,
        AttrPlacement::Variable { .. } => unreachable!("fixed kind on a variable attribute"),
    };
    let var_index = |attr: usize| match rel.placement(attr) {
        AttrPlacement::Variable { index } => index,
        AttrPlacement::Fixed { .. } => unreachable!("bytes kind on a fixed attribute"),
    };
    match p {
        Pred::Cmp { attr, op, value } => {
            let a = *attr;
            let null = null_of(rel, a);
            match (rel.kind(a), value) {
                (ValueKind::Bytes, Const::Bytes(k)) => cmp_var(var_index(a), *op, k.clone()),
                (ValueKind::Bool, Const::Bool(k)) => cmp_fixed::<LoadBool>(fixed_at(a), null, *op, *k),
                (ValueKind::Int(2), Const::Int(k)) => cmp_fixed::<LoadI16>(fixed_at(a), null, *op, *k),
                (ValueKind::Int(4), Const::Int(k)) => cmp_fixed::<LoadI32>(fixed_at(a), null, *op, *k),
                (ValueKind::Int(_), Const::Int(k)) => cmp_fixed::<LoadI64>(fixed_at(a), null, *op, *k),
                (ValueKind::Float(4), Const::F32(k)) => cmp_fixed::<LoadF32>(fixed_at(a), null, *op, *k),
                (ValueKind::Float(4), Const::F64(k)) => {
                    cmp_fixed::<LoadF32As64>(fixed_at(a), null, *op, *k)
                }
                (ValueKind::Float(_), Const::F64(k)) => cmp_fixed::<LoadF64>(fixed_at(a), null, *op, *k),
                (ValueKind::Decimal, Const::I128(k)) => cmp_fixed::<LoadI128>(fixed_at(a), null, *op, *k),
                (ValueKind::Interval, Const::I128(k)) => {
                    cmp_fixed::<LoadInterval>(fixed_at(a), null, *op, *k)
                }
                (k, c) => unreachable!("checked spec: {k:?} against {c:?}"),
            }
        }
        Pred::InList { attr, values } => {
            let a = *attr;
            let null = null_of(rel, a);
            fn list<L: Load>(
                offset: usize,
                null: Option<(usize, u8)>,
                values: &[Const],
                f: impl Fn(&Const) -> L::T,
            ) -> Box<dyn PredKernel> {
                Box::new(InFixed::<L>::new(offset, null, values.iter().map(f).collect()))
            }
            macro_rules! lst {
                ($l:ty, $pat:pat => $e:expr) => {
                    list::<$l>(fixed_at(a), null, values, |c| match c {
                        $pat => $e,
                        c => unreachable!("checked spec: {c:?}"),
                    })
                };
            }
            match rel.kind(a) {
                ValueKind::Bytes => Box::new(InVar::new(
                    var_index(a),
                    values
                        .iter()
                        .map(|c| match c {
                            Const::Bytes(b) => b.clone(),
                            c => unreachable!("checked spec: {c:?}"),
                        })
                        .collect(),
                )),
                ValueKind::Bool => lst!(LoadBool, Const::Bool(b) => *b),
                ValueKind::Int(2) => lst!(LoadI16, Const::Int(x) => *x),
                ValueKind::Int(4) => lst!(LoadI32, Const::Int(x) => *x),
                ValueKind::Int(_) => lst!(LoadI64, Const::Int(x) => *x),
                // A list may mix real and double constants; widening a real is exact,
                // so every member compares as a double.
                ValueKind::Float(4) => list::<LoadF32As64>(fixed_at(a), null, values, |c| match c {
                    Const::F32(x) => *x as f64,
                    Const::F64(x) => *x,
                    c => unreachable!("checked spec: {c:?}"),
                }),
                ValueKind::Float(_) => lst!(LoadF64, Const::F64(x) => *x),
                ValueKind::Decimal => lst!(LoadI128, Const::I128(x) => *x),
                ValueKind::Interval => lst!(LoadInterval, Const::I128(x) => *x),
                k @ ValueKind::Raw(_) => unreachable!("checked spec: IN on {k:?}"),
            }
        }
        Pred::IsNull { attr } => match rel.placement(*attr) {
            AttrPlacement::Fixed { .. } => Box::new(IsNullFixed {
                null: null_of(rel, *attr),
            }),
            AttrPlacement::Variable { index } => Box::new(IsNullVar { index }),
        },
        Pred::Prefix { attr, prefix } => Box::new(PrefixVar {
            index: var_index(*attr),
            prefix: prefix.clone(),
        }),
        Pred::And(ps) => Box::new(And(ps.iter().map(|p| bind(rel, p)).collect())),
        Pred::Or(ps) => Box::new(Or(ps.iter().map(|p| bind(rel, p)).collect())),
        Pred::Not(p) => Box::new(Not(bind(rel, p))),
    }
}

/// Writes one output column's slot for a row; `false` = the value is out of line.
type WriteFn = unsafe fn(&OutCol, &ColumnOut, &View<'_, '_>, usize) -> bool;

struct OutCol {
    write: WriteFn,
    out: usize,
    /// Fixed: offset in the tuple. Variable: index among variable attributes.
    at: usize,
    null: Option<(usize, u8)>,
    /// Variable attributes: which walked index (to skip beyond `var_limit`).
    var_index: Option<usize>,
}

unsafe fn write_fixed<const W: usize, const NULLABLE: bool>(c: &OutCol, o: &ColumnOut, v: &View<'_, '_>, row: usize) -> bool {
    // SAFETY: RunArgs contract (buffers hold the row); offsets are within the tuple.
    unsafe {
        let dst = o.data.add(row * W);
        let is_null = NULLABLE && c.null.is_some_and(|bit| v.null_bit(bit));
        if is_null {
            std::ptr::write_bytes(dst, 0, W);
        } else {
            std::ptr::copy_nonoverlapping(v.t.as_ptr().add(c.at), dst, W);
        }
        if NULLABLE {
            *o.nulls.add(row) = is_null as u8;
        }
    }
    true
}

unsafe fn write_bool<const NULLABLE: bool>(c: &OutCol, o: &ColumnOut, v: &View<'_, '_>, row: usize) -> bool {
    // SAFETY: as in `write_fixed`.
    unsafe {
        let is_null = NULLABLE && c.null.is_some_and(|bit| v.null_bit(bit));
        *o.data.add(row) = (!is_null && v.t[c.at] != 0) as u8;
        if NULLABLE {
            *o.nulls.add(row) = is_null as u8;
        }
    }
    true
}

unsafe fn write_var<const NULLABLE: bool>(c: &OutCol, o: &ColumnOut, v: &View<'_, '_>, row: usize) -> bool {
    let s = v.vars[c.at];
    if s.state == VAR_EXTERNAL {
        return false;
    }
    // SAFETY: as in `write_fixed`; the walk bounds-checked the value.
    unsafe {
        let r = if s.state == VAR_INLINE {
            ByteRef {
                ptr: v.t.as_ptr().add(s.start as usize),
                len: s.len as usize,
            }
        } else {
            ByteRef::NULL
        };
        (o.data.add(row * 16) as *mut ByteRef).write_unaligned(r);
        if NULLABLE {
            *o.nulls.add(row) = (s.state == VAR_NULL) as u8;
        }
    }
    true
}

fn write_fn(kind: ValueKind, nullable: bool) -> WriteFn {
    macro_rules! w {
        ($n:expr) => {
            if nullable { write_fixed::<$n, true> } else { write_fixed::<$n, false> }
        };
    }
    match kind {
        ValueKind::Bytes => {
            if nullable {
                write_var::<true>
            } else {
                write_var::<false>
            }
        }
        ValueKind::Bool => {
            if nullable {
                write_bool::<true>
            } else {
                write_bool::<false>
            }
        }
        k => match k.out_width() {
            1 => w!(1),
            2 => w!(2),
            4 => w!(4),
            8 => w!(8),
            _ => w!(16),
        },
    }
}

/// An instantiated scan or deform bee.
pub struct Scan {
    natts: usize,
    fixed_end: usize,
    var_start_plain: usize,
    var_start_nulls: usize,
    /// `(attr, nullable)` of each variable attribute in walk order.
    vars: Vec<(usize, bool)>,
    pred: Option<Box<dyn PredKernel>>,
    /// Variable indices any predicate leaf reads (to detect out-of-line values).
    pred_vars: Vec<usize>,
    pred_walk: usize,
    out_walk: usize,
    deform: bool,
    outs: Vec<OutCol>,
}

impl Scan {
    /// Chooses and binds the kernels for `spec` (which must pass `spec.check()`).
    pub fn new(spec: &ScanSpec) -> Scan {
        let rel = &*spec.relation;
        let lay = rel.layout();
        let vars = (0..lay.variable_count())
            .map(|k| {
                let a = lay.variable_attr(k);
                (a, rel.nullable(a))
            })
            .collect();
        let pred_attrs = spec.predicate.as_ref().map(Pred::attrs).unwrap_or_default();
        let pred_vars = pred_attrs
            .iter()
            .filter_map(|&a| match rel.placement(a) {
                AttrPlacement::Variable { index } => Some(index),
                AttrPlacement::Fixed { .. } => None,
            })
            .collect();
        let outs = spec
            .outputs
            .iter()
            .enumerate()
            .map(|(k, &a)| {
                let (at, var_index) = match rel.placement(a) {
                    AttrPlacement::Fixed { offset, .. } => (offset, None),
                    AttrPlacement::Variable { index } => (index, Some(index)),
                };
                OutCol {
                    write: write_fn(rel.kind(a), rel.nullable(a)),
                    out: k,
                    at,
                    null: null_of(rel, a),
                    var_index,
                }
            })
            .collect();
        Scan {
            natts: rel.natts(),
            fixed_end: lay.fixed_end(),
            var_start_plain: lay.var_region_offset(false),
            var_start_nulls: lay.var_region_offset(true),
            vars,
            pred: spec.predicate.as_ref().map(|p| bind(rel, p)),
            pred_vars,
            pred_walk: spec.predicate.as_ref().map_or(0, |p| var_walk_len(rel, p.attrs())),
            out_walk: var_walk_len(rel, spec.outputs.iter().copied()),
            deform: spec.is_deform(),
            outs,
        }
    }

    /// Walks variable attributes until `slots.len() == count`; `false` = fall back.
    #[inline]
    fn walk(&self, t: &[u8], has_nulls: bool, pos: &mut usize, slots: &mut Vec<VarSlot>, count: usize) -> bool {
        while slots.len() < count {
            let (attr, nullable) = self.vars[slots.len()];
            if nullable && has_nulls && t[self.fixed_end + attr / 8] & (1 << (attr % 8)) != 0 {
                slots.push(VarSlot::default());
                continue;
            }
            let p = *pos;
            let Some(&b) = t.get(p) else { return false };
            let (slot, next) = match b {
                0xFF => (
                    VarSlot {
                        start: 0,
                        len: 0,
                        state: VAR_EXTERNAL,
                    },
                    p + 9,
                ),
                0xFE => {
                    let Some(l) = t.get(p + 1..p + 5) else { return false };
                    let len = u32::from_le_bytes(l.try_into().unwrap()) as usize;
                    (
                        VarSlot {
                            start: (p + 5) as u32,
                            len: len as u32,
                            state: VAR_INLINE,
                        },
                        p + 5 + len,
                    )
                }
                short => (
                    VarSlot {
                        start: (p + 1) as u32,
                        len: short as u32,
                        state: VAR_INLINE,
                    },
                    p + 1 + short as usize,
                ),
            };
            if next > t.len() {
                return false;
            }
            slots.push(slot);
            *pos = next;
        }
        true
    }

    /// Runs the bee (see [`crate::abi::RunArgs`]); returns tuples consumed.
    ///
    /// # Safety
    /// The [`RunArgs`] contract for this bee's spec.
    pub unsafe fn run(&self, args: &mut RunArgs) -> u64 {
        let n = args.n as usize;
        // SAFETY: RunArgs contract.
        let tuples = unsafe { std::slice::from_raw_parts(args.tuples, n) };
        let outs_in = unsafe { std::slice::from_raw_parts(args.outs, self.outs.len()) };
        let out_walk = if self.deform {
            (args.var_limit as usize).min(self.vars.len())
        } else {
            self.out_walk
        };
        // The columns this call writes (a deform bee skips null buffers and variable
        // attributes past `var_limit`).
        let cols: Vec<(&OutCol, &ColumnOut)> = self
            .outs
            .iter()
            .map(|c| (c, &outs_in[c.out]))
            .filter(|(c, o)| {
                !self.deform || (!o.data.is_null() && c.var_index.is_none_or(|i| i < out_walk))
            })
            .collect();
        let walk_to = self.pred_walk.max(out_walk);
        let mut slots: Vec<VarSlot> = Vec::with_capacity(self.vars.len());
        let cap = args.cap as usize;
        let row0 = args.row0 as usize;
        let mut produced = 0usize;
        let mut consumed = n;
        'tuples: for (i, tr) in tuples.iter().enumerate() {
            if produced == cap {
                consumed = i;
                break;
            }
            // SAFETY: RunArgs contract.
            let t = unsafe { tr.bytes() };
            if t.len() < TUPLE_HEADER_SIZE
                || t[0] & !1 != 0
                || t[1] != 0
                || u16::from_le_bytes([t[2], t[3]]) as usize != self.natts
            {
                consumed = i;
                break;
            }
            let has_nulls = t[0] & 1 != 0;
            let mut pos = if has_nulls { self.var_start_nulls } else { self.var_start_plain };
            if t.len() < pos {
                consumed = i;
                break;
            }
            slots.clear();
            if let Some(pred) = &self.pred {
                if !self.walk(t, has_nulls, &mut pos, &mut slots, self.pred_walk)
                    || self.pred_vars.iter().any(|&k| slots[k].state == VAR_EXTERNAL)
                {
                    consumed = i;
                    break;
                }
                let view = View {
                    t,
                    has_nulls,
                    bitmap: self.fixed_end,
                    vars: &slots,
                };
                if pred.eval(&view) != TRUE {
                    continue;
                }
            }
            if !self.walk(t, has_nulls, &mut pos, &mut slots, walk_to) {
                consumed = i;
                break;
            }
            let view = View {
                t,
                has_nulls,
                bitmap: self.fixed_end,
                vars: &slots,
            };
            for &(c, o) in &cols {
                // SAFETY: RunArgs contract.
                if !unsafe { (c.write)(c, o, &view, row0 + produced) } {
                    consumed = i;
                    break 'tuples;
                }
            }
            // SAFETY: RunArgs contract.
            unsafe { *args.sel.add(produced) = i as u32 };
            produced += 1;
        }
        args.produced = produced as u64;
        consumed as u64
    }
}

/// An instantiated form bee: per attribute a copy kernel bound to its offset.
pub struct Form {
    natts: usize,
    fixed_end: usize,
    bitmap_len: usize,
    /// `(attr, offset, width, nullable)` of fixed attributes.
    fixed: Vec<(usize, usize, usize, bool)>,
    /// `(attr, nullable)` of variable attributes in order.
    vars: Vec<(usize, bool)>,
    nullable: Vec<usize>,
}

impl Form {
    pub fn new(rel: &RelationSpec) -> Form {
        let lay = rel.layout();
        let mut fixed = Vec::new();
        for a in 0..rel.natts() {
            if let AttrPlacement::Fixed { offset, width } = rel.placement(a) {
                fixed.push((a, offset, width, rel.nullable(a)));
            }
        }
        Form {
            natts: rel.natts(),
            fixed_end: lay.fixed_end(),
            bitmap_len: lay.null_bitmap_len(),
            fixed,
            vars: (0..lay.variable_count())
                .map(|k| {
                    let a = lay.variable_attr(k);
                    (a, rel.nullable(a))
                })
                .collect(),
            nullable: (0..rel.natts()).filter(|&a| rel.nullable(a)).collect(),
        }
    }

    /// Forms rows (see [`crate::abi::FormArgs`]); returns rows formed.
    ///
    /// # Safety
    /// The [`FormArgs`] contract for this bee's relation.
    pub unsafe fn run(&self, args: &mut FormArgs) -> u64 {
        // SAFETY: FormArgs contract throughout.
        unsafe {
            let ins = std::slice::from_raw_parts(args.ins, self.natts);
            let mut at = 0usize;
            for k in 0..args.n as usize {
                let row = args.row0 as usize + k;
                let is_null = |a: usize| *ins[a].nulls.add(row) != 0;
                let has_nulls = self.nullable.iter().any(|&a| is_null(a));
                let var_start = if has_nulls { self.fixed_end + self.bitmap_len } else { self.fixed_end };
                let mut len = var_start;
                for &(a, nullable) in &self.vars {
                    if nullable && is_null(a) {
                        continue;
                    }
                    let r = (ins[a].data.add(row * 16) as *const ByteRef).read_unaligned();
                    len += if r.len <= 0xFD { 1 } else { 5 } + r.len;
                }
                let start = at.next_multiple_of(8);
                if len as u64 > args.max_tuple || (start + len) as u64 > args.buf_cap {
                    return k as u64;
                }
                let out = args.buf.add(start);
                std::ptr::write_bytes(out, 0, var_start);
                *out = has_nulls as u8;
                let natts = (self.natts as u16).to_le_bytes();
                *out.add(2) = natts[0];
                *out.add(3) = natts[1];
                for &(a, offset, width, nullable) in &self.fixed {
                    if nullable && is_null(a) {
                        *out.add(self.fixed_end + a / 8) |= 1 << (a % 8);
                        continue;
                    }
                    std::ptr::copy_nonoverlapping(ins[a].data.add(row * width), out.add(offset), width);
                }
                let mut pos = var_start;
                for &(a, nullable) in &self.vars {
                    if nullable && is_null(a) {
                        *out.add(self.fixed_end + a / 8) |= 1 << (a % 8);
                        continue;
                    }
                    let r = (ins[a].data.add(row * 16) as *const ByteRef).read_unaligned();
                    if r.len <= 0xFD {
                        *out.add(pos) = r.len as u8;
                        pos += 1;
                    } else {
                        *out.add(pos) = 0xFE;
                        std::ptr::copy_nonoverlapping((r.len as u32).to_le_bytes().as_ptr(), out.add(pos + 1), 4);
                        pos += 5;
                    }
                    if r.len > 0 {
                        std::ptr::copy_nonoverlapping(r.ptr, out.add(pos), r.len);
                    }
                    pos += r.len;
                }
                *args.ends.add(k) = (start + len) as u64;
                at = start + len;
            }
            args.n
        }
    }
}

/// How one kind's value slot becomes its normalized-key bytes (big-endian, before any
/// DESC inversion); for `Bytes`, whether the value is longer than the prefix.
trait SortEnc {
    /// Bytes written ([`crate::spec::SortSpec::value_width`]).
    const W: usize;
    /// # Safety
    /// `data` holds slot `row`; `out` has room for `W` zeroed bytes.
    unsafe fn put(data: *const u8, row: usize, out: *mut u8) -> bool;
}

macro_rules! sort_int {
    ($name:ident, $t:ty, $u:ty) => {
        struct $name;
        impl SortEnc for $name {
            const W: usize = size_of::<$t>();
            #[inline(always)]
            unsafe fn put(data: *const u8, row: usize, out: *mut u8) -> bool {
                unsafe {
                    let x = (data as *const $t).add(row).read_unaligned();
                    let u = (x as $u) ^ (1 << (<$u>::BITS - 1));
                    (out as *mut [u8; size_of::<$t>()]).write_unaligned(u.to_be_bytes());
                }
                false
            }
        }
    };
}
sort_int!(SortI16, i16, u16);
sort_int!(SortI32, i32, u32);
sort_int!(SortI64, i64, u64);
sort_int!(SortI128, i128, u128);

struct SortBool;
impl SortEnc for SortBool {
    const W: usize = 1;
    #[inline(always)]
    unsafe fn put(data: *const u8, row: usize, out: *mut u8) -> bool {
        unsafe { *out = (*data.add(row) != 0) as u8 };
        false
    }
}

struct SortF32;
impl SortEnc for SortF32 {
    const W: usize = 4;
    #[inline(always)]
    unsafe fn put(data: *const u8, row: usize, out: *mut u8) -> bool {
        unsafe {
            let f = (data as *const f32).add(row).read_unaligned();
            let b = if f.is_nan() { f32::NAN.to_bits() } else if f == 0.0 { 0 } else { f.to_bits() };
            let b = if b >> 31 == 1 { !b } else { b | (1 << 31) };
            (out as *mut [u8; 4]).write_unaligned(b.to_be_bytes());
        }
        false
    }
}

struct SortF64;
impl SortEnc for SortF64 {
    const W: usize = 8;
    #[inline(always)]
    unsafe fn put(data: *const u8, row: usize, out: *mut u8) -> bool {
        unsafe {
            let f = (data as *const f64).add(row).read_unaligned();
            let b = if f.is_nan() { f64::NAN.to_bits() } else if f == 0.0 { 0 } else { f.to_bits() };
            let b = if b >> 63 == 1 { !b } else { b | (1 << 63) };
            (out as *mut [u8; 8]).write_unaligned(b.to_be_bytes());
        }
        false
    }
}

struct SortInterval;
impl SortEnc for SortInterval {
    const W: usize = 16;
    #[inline(always)]
    unsafe fn put(data: *const u8, row: usize, out: *mut u8) -> bool {
        unsafe {
            let s = (data as *const [u8; 16]).add(row).read_unaligned();
            let x = crate::spec::stored_interval_span(&s);
            (out as *mut [u8; 16]).write_unaligned(((x as u128) ^ (1 << 127)).to_be_bytes());
        }
        false
    }
}

struct SortBytes;
impl SortEnc for SortBytes {
    const W: usize = crate::spec::SORT_PREFIX + 1;
    #[inline(always)]
    unsafe fn put(data: *const u8, row: usize, out: *mut u8) -> bool {
        use crate::spec::SORT_PREFIX;
        unsafe {
            let r = (data as *const ByteRef).add(row).read_unaligned();
            let k = r.len.min(SORT_PREFIX);
            if k > 0 {
                std::ptr::copy_nonoverlapping(r.ptr, out, k);
            }
            *out.add(SORT_PREFIX) = r.len.min(SORT_PREFIX + 1) as u8;
            r.len > SORT_PREFIX
        }
    }
}

/// Encodes one part of every row: its NULL byte and value at `off`, and the flag
/// byte at `flag` (`usize::MAX`: none) of rows whose value is long. With `after`
/// (a `Bytes` part precedes this one), rows whose flag is already set are skipped.
type SortKernel = unsafe fn(col: crate::abi::SortColumn, n: usize, keys: *mut u8, stride: usize, off: usize, flag: usize, after: bool);

unsafe fn sort_part<E: SortEnc, const DESC: bool, const NULLS_FIRST: bool>(
    col: crate::abi::SortColumn,
    n: usize,
    keys: *mut u8,
    stride: usize,
    off: usize,
    flag: usize,
    after: bool,
) {
    for row in 0..n {
        // SAFETY: the SortArgs contract (the buffer was zeroed by the caller).
        unsafe {
            if after && *keys.add(row * stride + flag) != 0 {
                continue;
            }
            let k = keys.add(row * stride + off);
            if !col.nulls.is_null() && *col.nulls.add(row) != 0 {
                *k = if NULLS_FIRST { 0 } else { 2 };
                continue;
            }
            *k = 1;
            let v = k.add(1);
            let long = E::put(col.data, row, v);
            if DESC {
                for i in 0..E::W {
                    *v.add(i) = !*v.add(i);
                }
            }
            if long {
                *keys.add(row * stride + flag) = 1;
            }
        }
    }
}

fn sort_kernel(p: &crate::spec::SortPart) -> SortKernel {
    macro_rules! k {
        ($e:ty) => {
            match (p.desc, p.nulls_first) {
                (false, false) => sort_part::<$e, false, false>,
                (false, true) => sort_part::<$e, false, true>,
                (true, false) => sort_part::<$e, true, false>,
                (true, true) => sort_part::<$e, true, true>,
            }
        };
    }
    match p.kind {
        ValueKind::Bool => k!(SortBool),
        ValueKind::Int(2) => k!(SortI16),
        ValueKind::Int(4) => k!(SortI32),
        ValueKind::Int(_) => k!(SortI64),
        ValueKind::Float(4) => k!(SortF32),
        ValueKind::Float(_) => k!(SortF64),
        ValueKind::Decimal => k!(SortI128),
        ValueKind::Interval => k!(SortInterval),
        ValueKind::Bytes => k!(SortBytes),
        ValueKind::Raw(_) => unreachable!("checked by SortSpec::check"),
    }
}

/// An instantiated sort bee: a kernel per part, monomorphized over the kind, the
/// direction and the NULL placement, bound to its offset in the key; each encodes its
/// column for every row in turn.
pub struct Sort {
    /// Kernel, offset, whether a `Bytes` part precedes.
    parts: Vec<(SortKernel, usize, bool)>,
    flag: usize,
}

impl Sort {
    /// Binds the kernels for `spec` (which must pass `spec.check()`).
    pub fn new(spec: &crate::spec::SortSpec) -> Sort {
        let parts = spec
            .parts
            .iter()
            .zip(spec.offsets())
            .enumerate()
            .map(|(i, (p, off))| (sort_kernel(p), off, spec.parts[..i].iter().any(|q| q.kind == ValueKind::Bytes)))
            .collect();
        Sort { parts, flag: if spec.has_ties() { spec.key_width() - 1 } else { usize::MAX } }
    }

    /// # Safety
    /// `args` must satisfy the [`crate::abi::SortArgs`] contract for this bee's spec.
    pub unsafe fn run(&self, args: &crate::abi::SortArgs) {
        let (n, stride) = (args.n as usize, args.stride as usize);
        // SAFETY: forwarded contract.
        unsafe {
            std::ptr::write_bytes(args.keys, 0, n * stride);
            for (i, &(kernel, off, after)) in self.parts.iter().enumerate() {
                kernel(*args.cols.add(i), n, args.keys, stride, off, self.flag, after);
            }
        }
    }
}
