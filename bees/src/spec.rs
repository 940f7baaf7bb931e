//! Bee specs: what a bee is specialized for. A spec is plain data, independent of
//! SQL: a relation's physical tuple layout with a [`ValueKind`] per attribute, and for
//! a scan bee a predicate over those attributes with constants plus the attributes to
//! output.
//!
//! # Semantics every maker implements
//!
//! The generic twin ([`crate::generic`]) is the executable definition; the compiled
//! and instantiated makers must agree with it on every input, malformed tuples
//! included. For one tuple `t` of a relation with `N` attributes:
//!
//! 1. **Header.** `t` must be at least 4 bytes, its flags byte 0 or `HAS_NULLS`, its
//!    tuple-bee id 0 and its stored attribute count exactly `N`; otherwise the bee
//!    *falls back* (stops before `t`, see [`crate::abi::Stop::Fallback`]). Tuples
//!    written before an `ADD COLUMN` (count < `N`) therefore go to the generic path.
//! 2. **Fixed region.** `t` must reach the start of its variable region
//!    (`layout.var_region_offset(has_nulls)`), else fall back.
//! 3. **NULLs.** Attribute `i` is NULL iff its column is nullable, `HAS_NULLS` is set
//!    and bit `i` of the bitmap is set. A bee never reads the bit of a NOT NULL column
//!    (storage's decoder reports such a bit as corruption; pages are checksummed).
//! 4. **Variable region.** Variable attributes are walked in order from the region's
//!    start; a NULL one occupies nothing. A length prefix (or its value) that runs
//!    past the end of `t` makes the bee fall back. A value stored out of line (prefix
//!    `0xFF`) is skipped when walked past; the bee falls back when the predicate reads
//!    one (any leaf, whatever the other leaves say) or when it must output one. Bytes
//!    after the last attribute walked are not checked.
//! 5. **Predicate first.** A scan bee walks the variable region only as far as the
//!    predicate's last variable attribute, evaluates the predicate with SQL's
//!    three-valued logic ([`Pred`]), and drops the tuple unless it is TRUE. Only then
//!    does it walk on to its last output attribute and write the outputs.
//! 6. **Outputs.** One row per kept tuple, in tuple order, in the slots of
//!    [`crate::abi`]; `sel` gets the tuple's index.
//!
//! A **form bee** encodes rows given in the slot format of [`crate::abi`] into
//! tuples byte-identical to `TupleLayout::encode_into` of the same values (all `N`
//! attributes, inline): `HAS_NULLS` iff some attribute is NULL, zero padding and zero
//! NULL slots, NULL bits for NULL attributes only, a 1-byte length prefix up to 253
//! bytes and `0xFE` + u32 beyond. NULL bytes are read for nullable attributes only
//! (the caller enforces NOT NULL before forming). It stops early at a row whose tuple
//! would exceed `max_tuple` or would not fit in what is left of `buf`.
//!
//! A deform bee is a scan bee with no predicate whose outputs are all the relation's
//! attributes, each of which the caller may skip (null `data`), and which walks only
//! the first `var_limit` variable attributes.

use std::fmt;
use std::sync::Arc;

use beedb_storage::tuple::{AttrPlacement, ColumnFormat, TupleLayout};

/// How a bee reads, compares and outputs one stored attribute.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ValueKind {
    /// 1 byte, nonzero = true; compares false < true.
    Bool,
    /// Signed little-endian integer of 2, 4 or 8 bytes (also dates, timestamps).
    Int(u8),
    /// IEEE float of 4 or 8 bytes; compares with SQL's rules (NaN = NaN, NaN largest).
    Float(u8),
    /// 16-byte i128 unscaled decimal; compares as an integer (one scale per column).
    Decimal,
    /// An interval: months i32, days i32, micros i64 (16 bytes); compares by its
    /// total span ([`interval_span`]), as PostgreSQL's `interval_cmp`.
    Interval,
    /// Fixed bytes the bee copies but cannot compare.
    Raw(u8),
    /// A variable-length value; compares bytewise (memcmp, then length).
    Bytes,
}

impl ValueKind {
    /// Bytes one output slot takes (see [`crate::abi`]).
    pub fn out_width(self) -> usize {
        match self {
            ValueKind::Bool => 1,
            ValueKind::Int(w) | ValueKind::Float(w) | ValueKind::Raw(w) => w as usize,
            ValueKind::Decimal | ValueKind::Interval => 16,
            ValueKind::Bytes => size_of::<crate::abi::ByteRef>(),
        }
    }

    /// The stored width of a fixed kind, `None` for [`ValueKind::Bytes`].
    pub fn stored_width(self) -> Option<usize> {
        match self {
            ValueKind::Bytes => None,
            k => Some(k.out_width()),
        }
    }
}

/// A relation as bees see it: its tuple layout and the kind of each attribute.
pub struct RelationSpec {
    layout: TupleLayout,
    kinds: Vec<ValueKind>,
}

impl fmt::Debug for RelationSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RelationSpec")
            .field("kinds", &self.kinds)
            .field("nullable", &self.nullable_mask())
            .finish()
    }
}

impl RelationSpec {
    /// Checks that each kind fits its column's format (width; variable ↔ `Bytes`).
    pub fn new(layout: TupleLayout, kinds: Vec<ValueKind>) -> Result<RelationSpec, String> {
        if kinds.len() != layout.natts() {
            return Err(format!(
                "{} kinds for a layout of {} attributes",
                kinds.len(),
                layout.natts()
            ));
        }
        for (i, (k, c)) in kinds.iter().zip(layout.columns()).enumerate() {
            let ok = match (k, c) {
                (ValueKind::Bytes, ColumnFormat::Variable { .. }) => true,
                (ValueKind::Bool, ColumnFormat::Fixed { width: 1, .. }) => true,
                (ValueKind::Int(w), ColumnFormat::Fixed { width, .. }) => {
                    matches!(w, 2 | 4 | 8) && w == width
                }
                (ValueKind::Float(w), ColumnFormat::Fixed { width, .. }) => {
                    matches!(w, 4 | 8) && w == width
                }
                (ValueKind::Decimal | ValueKind::Interval, ColumnFormat::Fixed { width: 16, .. }) => {
                    true
                }
                (ValueKind::Raw(w), ColumnFormat::Fixed { width, .. }) => w == width,
                _ => false,
            };
            if !ok {
                return Err(format!("attribute {i}: kind {k:?} does not fit format {c:?}"));
            }
        }
        Ok(RelationSpec { layout, kinds })
    }

    pub fn layout(&self) -> &TupleLayout {
        &self.layout
    }

    pub fn kinds(&self) -> &[ValueKind] {
        &self.kinds
    }

    pub fn natts(&self) -> usize {
        self.kinds.len()
    }

    pub fn kind(&self, attr: usize) -> ValueKind {
        self.kinds[attr]
    }

    pub fn nullable(&self, attr: usize) -> bool {
        self.layout.column(attr).nullable()
    }

    pub fn placement(&self, attr: usize) -> AttrPlacement {
        self.layout.placement(attr)
    }

    fn nullable_mask(&self) -> Vec<bool> {
        (0..self.natts()).map(|i| self.nullable(i)).collect()
    }

    /// Whether `other` has the same key ([`RelationSpec::key`]) as this spec, without
    /// making either key: the bee cache asks on every statement that reads the
    /// relation.
    pub fn same_key(&self, other: &RelationSpec) -> bool {
        self.kinds == other.kinds && (0..self.natts()).all(|i| self.nullable(i) == other.nullable(i))
    }

    /// A stable text identity (kinds, nullability): equal layouts give equal keys.
    pub fn key(&self) -> String {
        let mut s = String::new();
        for i in 0..self.natts() {
            let k = match self.kinds[i] {
                ValueKind::Bool => "b".to_string(),
                ValueKind::Int(w) => format!("i{w}"),
                ValueKind::Float(w) => format!("f{w}"),
                ValueKind::Decimal => "d".to_string(),
                ValueKind::Interval => "t".to_string(),
                ValueKind::Raw(w) => format!("r{w}"),
                ValueKind::Bytes => "v".to_string(),
            };
            s.push_str(&k);
            s.push(if self.nullable(i) { '?' } else { '!' });
        }
        s
    }
}

/// Microseconds per day, for [`interval_span`].
pub const MICROS_PER_DAY: i128 = 86_400_000_000;

/// The total span of an interval with 30-day months and 24-hour days, in
/// microseconds: what interval comparisons compare.
pub const fn interval_span(months: i32, days: i32, micros: i64) -> i128 {
    (months as i128 * 30 + days as i128) * MICROS_PER_DAY + micros as i128
}

/// [`interval_span`] of a stored interval (months, days, micros, little-endian).
pub fn stored_interval_span(b: &[u8; 16]) -> i128 {
    let months = i32::from_le_bytes(b[0..4].try_into().unwrap());
    let days = i32::from_le_bytes(b[4..8].try_into().unwrap());
    let micros = i64::from_le_bytes(b[8..16].try_into().unwrap());
    interval_span(months, days, micros)
}

/// Comparison operators of predicate leaves (`column op constant`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl CmpOp {
    pub fn holds(self, o: std::cmp::Ordering) -> bool {
        use std::cmp::Ordering::*;
        match self {
            CmpOp::Eq => o == Equal,
            CmpOp::Ne => o != Equal,
            CmpOp::Lt => o == Less,
            CmpOp::Le => o != Greater,
            CmpOp::Gt => o == Greater,
            CmpOp::Ge => o != Less,
        }
    }

    pub fn symbol(self) -> &'static str {
        match self {
            CmpOp::Eq => "=",
            CmpOp::Ne => "<>",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
        }
    }
}

/// A constant of a predicate leaf. Which constants fit which kind:
/// `Bool`↔`Bool`; `Int(_)`↔`Int` (the attribute is sign-extended to i64);
/// `Float(4)`↔`F32` or `F64` (the attribute is widened, exactly); `Float(8)`↔`F64`;
/// `Decimal`↔`I128` (at the column's scale); `Interval`↔`I128` (a span, see
/// [`interval_span`]); `Bytes`↔`Bytes`. `Raw` compares with nothing.
#[derive(Clone, Debug, PartialEq)]
pub enum Const {
    Bool(bool),
    Int(i64),
    F32(f32),
    F64(f64),
    I128(i128),
    Bytes(Vec<u8>),
}

impl Const {
    fn fits(&self, kind: ValueKind) -> bool {
        matches!(
            (kind, self),
            (ValueKind::Bool, Const::Bool(_))
                | (ValueKind::Int(_), Const::Int(_))
                | (ValueKind::Float(4), Const::F32(_))
                | (ValueKind::Float(_), Const::F64(_))
                | (ValueKind::Decimal | ValueKind::Interval, Const::I128(_))
                | (ValueKind::Bytes, Const::Bytes(_))
        )
    }
}

/// A predicate over one tuple's attributes (numbered as in the relation), evaluated
/// with SQL's three-valued logic: a leaf on a NULL attribute is UNKNOWN (except
/// `IsNull`), `And`/`Or`/`Not` are Kleene's, and a tuple is kept only when the whole
/// predicate is TRUE.
/// IN lists up to this long are tested member by member (unrolled compares in compiled
/// code, a linear scan in instantiated kernels); longer ones probe a set built once
/// when the bee is made (a hash set of strings, a sorted array of fixed-width values
/// searched in SQL's order), so neither the code nor the time to make it grows with
/// the list.
pub const IN_LIST_INLINE_MAX: usize = 8;

#[derive(Clone, Debug, PartialEq)]
pub enum Pred {
    /// `attr op constant`.
    Cmp { attr: usize, op: CmpOp, value: Const },
    /// `attr IN (values)`: TRUE if equal to one of them, FALSE otherwise (the list
    /// holds no NULL), UNKNOWN when the attribute is NULL.
    InList { attr: usize, values: Vec<Const> },
    /// `attr IS NULL` (never UNKNOWN).
    IsNull { attr: usize },
    /// The attribute's bytes start with `prefix` (`LIKE 'prefix%'`).
    Prefix { attr: usize, prefix: Vec<u8> },
    And(Vec<Pred>),
    Or(Vec<Pred>),
    Not(Box<Pred>),
}

impl Pred {
    /// Calls `f` on every attribute the predicate reads.
    pub fn for_each_attr(&self, f: &mut impl FnMut(usize)) {
        match self {
            Pred::Cmp { attr, .. }
            | Pred::InList { attr, .. }
            | Pred::IsNull { attr }
            | Pred::Prefix { attr, .. } => f(*attr),
            Pred::And(v) | Pred::Or(v) => v.iter().for_each(|p| p.for_each_attr(f)),
            Pred::Not(p) => p.for_each_attr(f),
        }
    }

    /// Attributes the predicate reads, sorted, without repeats.
    pub fn attrs(&self) -> Vec<usize> {
        let mut v = Vec::new();
        self.for_each_attr(&mut |a| v.push(a));
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Nodes of code a maker generates for the predicate: like [`Pred::size`], but an
    /// IN list longer than [`IN_LIST_INLINE_MAX`] is one set probe whatever its length,
    /// so the cost of making a bee is bounded by the predicate's shape, not its
    /// constants. The policy predicts compile cost and saving from this.
    pub fn code_nodes(&self) -> usize {
        match self {
            Pred::And(v) | Pred::Or(v) => 1 + v.iter().map(Pred::code_nodes).sum::<usize>(),
            Pred::Not(p) => 1 + p.code_nodes(),
            Pred::InList { values, .. } if values.len() > IN_LIST_INLINE_MAX => 2,
            Pred::InList { values, .. } => 1 + values.len(),
            _ => 1,
        }
    }

    /// Number of nodes (for cost estimates and EXPLAIN).
    pub fn size(&self) -> usize {
        match self {
            Pred::And(v) | Pred::Or(v) => 1 + v.iter().map(Pred::size).sum::<usize>(),
            Pred::Not(p) => 1 + p.size(),
            Pred::InList { values, .. } => 1 + values.len(),
            _ => 1,
        }
    }

    fn check(&self, rel: &RelationSpec) -> Result<(), String> {
        let attr_ok = |a: usize| {
            if a < rel.natts() {
                Ok(rel.kind(a))
            } else {
                Err(format!("predicate reads attribute {a} of {}", rel.natts()))
            }
        };
        match self {
            Pred::Cmp { attr, value, .. } => {
                let k = attr_ok(*attr)?;
                if !value.fits(k) {
                    return Err(format!("constant {value:?} does not fit attribute {attr} ({k:?})"));
                }
            }
            Pred::InList { attr, values } => {
                let k = attr_ok(*attr)?;
                if values.is_empty() {
                    return Err("empty IN list".into());
                }
                if let Some(v) = values.iter().find(|v| !v.fits(k)) {
                    return Err(format!("constant {v:?} does not fit attribute {attr} ({k:?})"));
                }
            }
            Pred::IsNull { attr } => {
                attr_ok(*attr)?;
            }
            Pred::Prefix { attr, .. } => {
                if attr_ok(*attr)? != ValueKind::Bytes {
                    return Err(format!("prefix test on fixed attribute {attr}"));
                }
            }
            Pred::And(v) | Pred::Or(v) => {
                if v.is_empty() {
                    return Err("empty AND/OR".into());
                }
                for p in v {
                    p.check(rel)?;
                }
            }
            Pred::Not(p) => p.check(rel)?,
        }
        Ok(())
    }
}

/// What a scan (or deform) bee does: read tuples of `relation`, keep those where
/// `predicate` is TRUE (all, when there is none), write `outputs` of each.
#[derive(Clone, Debug)]
pub struct ScanSpec {
    pub relation: Arc<RelationSpec>,
    pub predicate: Option<Pred>,
    /// Attribute numbers, in output column order (repeats allowed).
    pub outputs: Vec<usize>,
}

impl ScanSpec {
    /// The deform bee of a relation: every attribute, no predicate.
    pub fn deform(relation: Arc<RelationSpec>) -> ScanSpec {
        let outputs = (0..relation.natts()).collect();
        ScanSpec {
            relation,
            predicate: None,
            outputs,
        }
    }

    /// Checks attribute numbers and constant kinds.
    pub fn check(&self) -> Result<(), String> {
        if let Some(p) = &self.predicate {
            p.check(&self.relation)?;
        }
        if let Some(a) = self.outputs.iter().find(|&&a| a >= self.relation.natts()) {
            return Err(format!("output attribute {a} of {}", self.relation.natts()));
        }
        Ok(())
    }

    /// Whether this is a deform bee (no predicate, all attributes in order): such a
    /// bee honours skipped outputs and `var_limit`.
    pub fn is_deform(&self) -> bool {
        self.predicate.is_none()
            && self.outputs.len() == self.relation.natts()
            && self.outputs.iter().enumerate().all(|(i, &a)| i == a)
    }

    /// A stable text identity of the spec (relation key, predicate, outputs).
    pub fn key(&self) -> String {
        format!(
            "{}|{:?}|{:?}",
            self.relation.key(),
            self.predicate,
            self.outputs
        )
    }
}

/// Bytes of a `Bytes` sort key kept in its normalized key ([`SortSpec`]).
pub const SORT_PREFIX: usize = 12;

/// One key of a sort: the kind of its values, its direction and where its NULLs go.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SortPart {
    /// Any kind but `Raw`.
    pub kind: ValueKind,
    pub desc: bool,
    /// NULLs before every value (else after), whatever `desc` says.
    pub nulls_first: bool,
}

/// A sort bee's spec: the sort keys, most significant first.
///
/// # Semantics: the normalized key
///
/// A sort bee encodes each row's keys into a fixed-width byte string, the row's
/// *normalized key*, `stride()` bytes apart in the output. Comparing two keys as
/// unsigned bytes (memcmp over `key_width()`) gives the SQL order of the rows, except
/// that equal keys of a spec with a `Bytes` part whose *flag* is set (the last byte) may
/// still differ: the caller decides those with its own comparator (a *tie*). Per
/// part, at consecutive offsets:
///
/// 1. one NULL byte: 1 for a value; for a NULL 0 when `nulls_first`, else 2 — and
///    then the value bytes are all zero;
/// 2. the value, big-endian so that memcmp is numeric order, every byte inverted
///    (`!b`) when `desc`:
///    - `Bool`: 0 or 1; `Int(w)`: the `w`-byte two's complement with its sign bit
///      flipped; `Decimal`: the same over 16 bytes (one scale per column);
///    - `Float(w)`: the IEEE bits of the value with −0 as +0 and every NaN as the
///      positive quiet NaN, then the sign bit flipped for a positive value or every
///      bit for a negative one (NaN sorts above +∞, NaN = NaN, −0 = 0);
///    - `Interval`: its total span ([`interval_span`]) as a 16-byte integer;
///    - `Bytes`: the first [`SORT_PREFIX`] bytes, zero-padded, then one byte
///      `min(len, SORT_PREFIX + 1)`. Two values whose prefixes and length bytes are
///      equal are equal unless both are longer than the prefix. A value longer than
///      the prefix ends the row's key: every later part's bytes are zero (those
///      parts must not decide before the comparator has seen the whole string).
/// 3. after the last part, when some part is `Bytes`, the flag byte: 1 when a
///    non-NULL `Bytes` value of the row is longer than [`SORT_PREFIX`]. Equal bytes
///    before it imply equal flags.
///
/// Bytes from `key_width()` to `stride()` are zero. Inputs are column slots in the
/// formats of [`crate::abi`] with a NULL byte per row ([`crate::abi::SortColumn`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SortSpec {
    pub parts: Vec<SortPart>,
}

impl SortSpec {
    /// Checks the kinds: every part must be comparable (not `Raw`) and of a valid width.
    pub fn check(&self) -> Result<(), String> {
        if self.parts.is_empty() {
            return Err("a sort bee needs a key".into());
        }
        for (i, p) in self.parts.iter().enumerate() {
            let ok = match p.kind {
                ValueKind::Int(w) => matches!(w, 2 | 4 | 8),
                ValueKind::Float(w) => matches!(w, 4 | 8),
                ValueKind::Raw(_) => false,
                _ => true,
            };
            if !ok {
                return Err(format!("sort key {i}: kind {:?} is not sortable", p.kind));
            }
        }
        Ok(())
    }

    /// Bytes of a part's value in the normalized key (its NULL byte not included).
    pub fn value_width(kind: ValueKind) -> usize {
        match kind {
            ValueKind::Bool => 1,
            ValueKind::Int(w) | ValueKind::Float(w) | ValueKind::Raw(w) => w as usize,
            ValueKind::Decimal | ValueKind::Interval => 16,
            ValueKind::Bytes => SORT_PREFIX + 1,
        }
    }

    /// Offset of each part's NULL byte in the key.
    pub fn offsets(&self) -> Vec<usize> {
        let mut at = 0;
        self.parts
            .iter()
            .map(|p| {
                let o = at;
                at += 1 + Self::value_width(p.kind);
                o
            })
            .collect()
    }

    /// Whether equal keys may still differ (some part is `Bytes`): the key then ends
    /// with the flag byte.
    pub fn has_ties(&self) -> bool {
        self.parts.iter().any(|p| p.kind == ValueKind::Bytes)
    }

    /// Bytes of a key that are compared (flag included).
    pub fn key_width(&self) -> usize {
        self.parts.iter().map(|p| 1 + Self::value_width(p.kind)).sum::<usize>() + self.has_ties() as usize
    }

    /// Bytes from one row's key to the next: `key_width` rounded up to 8.
    pub fn stride(&self) -> usize {
        self.key_width().div_ceil(8) * 8
    }

    /// A stable text identity of the spec.
    pub fn key(&self) -> String {
        format!("sort|{:?}", self.parts)
    }
}
