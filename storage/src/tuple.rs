//! The stored tuple format: what a heap slot holds, what the generic decoder reads and
//! what scan bees will decode with constant offsets.
//!
//! A relation's columns each have a physical [`ColumnFormat`]: fixed width (1, 2, 4, 8
//! or 16 bytes) or variable length, nullable or not. [`TupleLayout::new`] computes,
//! once per relation, where every attribute lives. A stored tuple is:
//!
//! | offset            | size            | field         | meaning                                                        |
//! |------------------:|----------------:|---------------|----------------------------------------------------------------|
//! | 0                 | 1               | flags         | bit 0 `HAS_NULLS`; bits 1..=7 reserved, must be 0              |
//! | 1                 | 1               | tuple-bee id  | 0 = plain tuple; nonzero is reserved for tuple bees (rejected) |
//! | 2                 | 2               | natts         | u16 LE: number of attributes stored in this tuple              |
//! | 4                 | 0 or 4          | padding       | zero; present when the widest fixed attribute is ≥ 8 bytes     |
//! | `offset(i)`       | `width(i)`      | fixed attrs   | every fixed attribute, widest first, at its alignment          |
//! | `fixed_end`       | ⌈natts/8⌉       | null bitmap   | only when `HAS_NULLS`; bit i (byte i/8, bit i%8) = attr i NULL |
//! | `var_start`       | …               | var attrs     | variable attributes in declaration order, NULLs absent         |
//!
//! Each variable attribute starts with a length prefix:
//!
//! | first byte    | then                                   | meaning                               |
//! |---------------|----------------------------------------|---------------------------------------|
//! | `0x00..=0xFD` | that many bytes                        | inline value of 0..=253 bytes         |
//! | `0xFE`        | u32 LE length, then that many bytes    | inline value of any length            |
//! | `0xFF`        | u32 LE total length, u32 LE first page | value stored out of line (overflow)   |
//!
//! `var_start = fixed_end + (HAS_NULLS ? ⌈natts/8⌉ : 0)`, and the tuple ends exactly
//! where its last variable attribute ends. All integers are little-endian.
//!
//! Why this shape:
//! - **Fixed attributes sit at constants of the layout.** A fixed attribute keeps its
//!   slot even when NULL (zeroed), so its offset depends on the layout alone, never on
//!   the values or the NULLs of the row. A generic decoder reads it with one load and a
//!   code generator bakes the offset into the instruction. This is PostgreSQL's
//!   `attcacheoff` made unconditional: PostgreSQL can cache offsets only up to the
//!   first NULL or varlena; here every fixed attribute is cached.
//! - **Widest first.** Sorting fixed attributes by descending width (ties in
//!   declaration order) means at most one padding gap (after the 4-byte header), instead
//!   of padding between a `bool` and the `int8` after it as in declaration order.
//! - **Alignment is capped at 8.** Tuples start 8-byte aligned in their page, so a
//!   16-byte attribute aligned to 16 *relative to the tuple* would not be 16-aligned in
//!   memory anyway; aligning it to 8 gives all the benefit there is (one cache line
//!   split at most, aligned 8-byte halves) and wastes no bytes. This is the one
//!   deviation from "natural alignment": natural for widths 1..=8, 8 for width 16.
//! - **Variable attributes walk once.** Their start depends only on `HAS_NULLS`; each
//!   prefix gives the next attribute's offset, so decoding all of them is one sequential
//!   pass, and 1 byte of overhead covers values up to 253 bytes (most strings).
//! - **The stored attribute count** makes `ALTER TABLE ADD COLUMN` free: old tuples keep
//!   their count and the attributes beyond it read as NULL (the caller substitutes a
//!   default if the column has one). Because the fixed region is sorted by width,
//!   adding a column can move the *existing* fixed attributes in the new layout, so a
//!   tuple storing `k` attributes is always laid out exactly as
//!   `TupleLayout::new(&columns[..k])` lays it out — which is precisely the layout the
//!   relation had when the tuple was written. [`TupleLayout::prefix`] returns (and
//!   caches) that layout; decoding such a tuple costs one extra branch. A bee
//!   specialized for the current layout checks `natts == layout.natts()` and leaves
//!   older tuples to the generic path. A tuple storing *more* attributes than the layout
//!   has is rejected: its fixed offsets depend on columns the layout does not know.
//! - **NULL bits are checked against nullability.** A bee may skip the bitmap test for
//!   a NOT NULL column, so the generic decoder treats a NULL bit on a NOT NULL column as
//!   corruption, keeping both paths in agreement on every tuple they accept.
//! - **Tuple-bee id.** A tuple bee would hold attribute values shared by many tuples in
//!   its code and leave them out of the tuple, so the generic decoder cannot decode
//!   such a tuple. Nothing writes a nonzero id yet: the generic decoder rejects one with
//!   [`Error::CorruptTuple`], and [`read_header`] exposes it for a future dispatcher.
//!
//! Decoding never panics and never reads outside the tuple slice: malformed bytes give
//! [`Error::CorruptTuple`].

use std::fmt;
use std::sync::OnceLock;

use crate::error::{Error, Result};
use crate::ids::PageId;

/// Size of the tuple header.
pub const TUPLE_HEADER_SIZE: usize = 4;
/// Offset of the flags byte.
pub const FLAGS_OFFSET: usize = 0;
/// Offset of the tuple-bee id byte.
pub const BEE_ID_OFFSET: usize = 1;
/// Offset of the u16 stored attribute count.
pub const NATTS_OFFSET: usize = 2;
/// Flag: the tuple has a null bitmap (at least one stored attribute is NULL).
pub const FLAG_HAS_NULLS: u8 = 0x01;
/// Tuples start at a multiple of this in their page.
pub const TUPLE_ALIGN: usize = 8;
/// Largest alignment a fixed attribute gets (relative to the tuple start).
pub const MAX_FIXED_ALIGN: usize = 8;
/// Largest length stored in the one-byte length prefix.
pub const VARLEN_SHORT_MAX: u8 = 0xFD;
/// Prefix byte: a u32 LE length follows, then the value inline.
pub const VARLEN_LONG: u8 = 0xFE;
/// Prefix byte: u32 LE total length and u32 LE first overflow page follow.
pub const VARLEN_EXTERNAL: u8 = 0xFF;
/// Bytes an out-of-line value occupies in the tuple (prefix + length + page id).
pub const EXTERNAL_POINTER_SIZE: usize = 9;
/// Most attributes a layout may have (the stored count is a u16).
pub const MAX_ATTRIBUTES: usize = u16::MAX as usize;

/// Physical format of one column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ColumnFormat {
    /// Always `width` bytes; `width` is 1, 2, 4, 8 or 16.
    Fixed { width: u8, nullable: bool },
    /// Length-prefixed bytes, possibly stored out of line.
    Variable { nullable: bool },
}

impl ColumnFormat {
    pub const fn fixed(width: u8, nullable: bool) -> Self {
        ColumnFormat::Fixed { width, nullable }
    }

    pub const fn variable(nullable: bool) -> Self {
        ColumnFormat::Variable { nullable }
    }

    pub const fn nullable(self) -> bool {
        match self {
            ColumnFormat::Fixed { nullable, .. } | ColumnFormat::Variable { nullable } => nullable,
        }
    }

    /// The width of a fixed column, `None` for a variable one.
    pub const fn fixed_width(self) -> Option<usize> {
        match self {
            ColumnFormat::Fixed { width, .. } => Some(width as usize),
            ColumnFormat::Variable { .. } => None,
        }
    }
}

/// One attribute value handed to the encoder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttrValue<'a> {
    Null,
    /// Exactly the column's width in bytes.
    Fixed(&'a [u8]),
    /// A variable-length value stored inline.
    Variable(&'a [u8]),
    /// A variable-length value already stored in an overflow chain.
    External {
        len: u32,
        first_page: PageId,
    },
}

/// One decoded attribute, borrowing from the tuple bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Attr<'a> {
    #[default]
    Null,
    /// A fixed attribute's `width` bytes, or an inline variable value.
    Bytes(&'a [u8]),
    /// A variable value stored out of line: read it with
    /// [`crate::heap::HeapFile::fetch_external`].
    External { len: u32, first_page: PageId },
}

/// Where an attribute lives in a tuple of this layout (for code generators).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttrPlacement {
    /// At `offset` from the tuple start, `width` bytes, NULL or not.
    Fixed { offset: usize, width: usize },
    /// The `index`-th variable attribute (0-based, declaration order) of the region.
    Variable { index: usize },
}

/// The decoded 4-byte tuple header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TupleHeader {
    pub flags: u8,
    pub bee_id: u8,
    pub natts: u16,
}

impl TupleHeader {
    pub fn has_nulls(&self) -> bool {
        self.flags & FLAG_HAS_NULLS != 0
    }
}

/// Reads the header of a stored tuple (no validation beyond its length).
#[inline]
pub fn read_header(tuple: &[u8]) -> Result<TupleHeader> {
    match tuple.first_chunk::<TUPLE_HEADER_SIZE>() {
        Some(h) => Ok(TupleHeader {
            flags: h[FLAGS_OFFSET],
            bee_id: h[BEE_ID_OFFSET],
            natts: u16::from_le_bytes([h[NATTS_OFFSET], h[NATTS_OFFSET + 1]]),
        }),
        None => Err(malformed(format!(
            "{} bytes is shorter than the {TUPLE_HEADER_SIZE}-byte header",
            tuple.len()
        ))),
    }
}

/// Bytes a variable value of `len` bytes occupies inline, prefix included.
#[inline]
pub const fn variable_encoded_size(len: usize) -> usize {
    if len <= VARLEN_SHORT_MAX as usize {
        1 + len
    } else {
        5 + len
    }
}

#[cold]
fn malformed(detail: String) -> Error {
    Error::CorruptTuple(detail)
}

/// Per-attribute facts, packed for the decode loop.
#[derive(Clone, Copy, Debug)]
struct AttrInfo {
    /// Offset of a fixed attribute; unused for a variable one.
    offset: u32,
    /// Width of a fixed attribute; 0 for a variable one.
    width: u8,
    nullable: bool,
    /// Index among the variable attributes; unused for a fixed one.
    var_index: u16,
}

/// Where every attribute of a relation's tuples lives. Computed once per relation.
#[derive(Clone)]
pub struct TupleLayout {
    columns: Box<[ColumnFormat]>,
    attrs: Box<[AttrInfo]>,
    /// Attribute numbers of the variable attributes, in declaration order.
    var_attrs: Box<[u16]>,
    fixed_end: usize,
    bitmap_len: usize,
    /// Layouts of tuples storing fewer attributes, built on first use (index = count).
    prefixes: OnceLock<Box<[OnceLock<Box<TupleLayout>>]>>,
}

impl fmt::Debug for TupleLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let placements: Vec<AttrPlacement> = (0..self.natts()).map(|i| self.placement(i)).collect();
        f.debug_struct("TupleLayout")
            .field("columns", &self.columns)
            .field("placements", &placements)
            .field("fixed_end", &self.fixed_end)
            .finish_non_exhaustive()
    }
}

impl TupleLayout {
    /// Computes the layout of `columns`. Fails on a width other than 1, 2, 4, 8, 16 or
    /// on more than [`MAX_ATTRIBUTES`] columns.
    pub fn new(columns: &[ColumnFormat]) -> Result<TupleLayout> {
        if columns.len() > MAX_ATTRIBUTES {
            return Err(Error::InvalidArgument(format!(
                "{} columns exceed the limit of {MAX_ATTRIBUTES}",
                columns.len()
            )));
        }
        for (i, c) in columns.iter().enumerate() {
            if let ColumnFormat::Fixed { width, .. } = c
                && !matches!(width, 1 | 2 | 4 | 8 | 16)
            {
                return Err(Error::InvalidArgument(format!(
                    "column {i}: fixed width {width} is not 1, 2, 4, 8 or 16"
                )));
            }
        }
        Ok(Self::build(columns))
    }

    fn build(columns: &[ColumnFormat]) -> TupleLayout {
        let n = columns.len();
        let mut attrs: Vec<AttrInfo> = columns
            .iter()
            .map(|c| AttrInfo {
                offset: 0,
                width: 0,
                nullable: c.nullable(),
                var_index: 0,
            })
            .collect();
        let mut fixed: Vec<(usize, usize)> = columns
            .iter()
            .enumerate()
            .filter_map(|(i, c)| c.fixed_width().map(|w| (i, w)))
            .collect();
        // Stable sort: ties stay in declaration order.
        fixed.sort_by_key(|&(_, w)| std::cmp::Reverse(w));
        let mut off = TUPLE_HEADER_SIZE;
        for (i, w) in fixed {
            off = off.next_multiple_of(w.min(MAX_FIXED_ALIGN));
            attrs[i].offset = off as u32;
            attrs[i].width = w as u8;
            off += w;
        }
        let mut var_attrs = Vec::new();
        for (i, c) in columns.iter().enumerate() {
            if c.fixed_width().is_none() {
                attrs[i].var_index = var_attrs.len() as u16;
                var_attrs.push(i as u16);
            }
        }
        TupleLayout {
            columns: columns.into(),
            attrs: attrs.into(),
            var_attrs: var_attrs.into(),
            fixed_end: off,
            bitmap_len: n.div_ceil(8),
            prefixes: OnceLock::new(),
        }
    }

    // ----- Layout facts (read-only; what a code generator needs) -----

    /// Number of attributes in the layout.
    #[inline]
    pub fn natts(&self) -> usize {
        self.columns.len()
    }

    pub fn columns(&self) -> &[ColumnFormat] {
        &self.columns
    }

    pub fn column(&self, i: usize) -> ColumnFormat {
        self.columns[i]
    }

    /// Where attribute `i` lives. Panics if `i >= natts()`.
    pub fn placement(&self, i: usize) -> AttrPlacement {
        let a = self.attrs[i];
        if a.width == 0 {
            AttrPlacement::Variable {
                index: a.var_index as usize,
            }
        } else {
            AttrPlacement::Fixed {
                offset: a.offset as usize,
                width: a.width as usize,
            }
        }
    }

    /// Offset of attribute `i` if it is fixed.
    pub fn fixed_offset(&self, i: usize) -> Option<usize> {
        match self.placement(i) {
            AttrPlacement::Fixed { offset, .. } => Some(offset),
            AttrPlacement::Variable { .. } => None,
        }
    }

    /// Attribute `i`'s NULL bit: (byte offset within the bitmap, bit mask). The bitmap
    /// starts at [`Self::null_bitmap_offset`] when the tuple's `HAS_NULLS` flag is set.
    pub fn null_bit(&self, i: usize) -> (usize, u8) {
        (i / 8, 1 << (i % 8))
    }

    /// End of the fixed region = start of the null bitmap (from the tuple start).
    #[inline]
    pub fn fixed_end(&self) -> usize {
        self.fixed_end
    }

    /// Bytes of the fixed region after the header (padding included).
    pub fn fixed_region_size(&self) -> usize {
        self.fixed_end - TUPLE_HEADER_SIZE
    }

    /// Offset of the null bitmap (present only when `HAS_NULLS` is set).
    pub fn null_bitmap_offset(&self) -> usize {
        self.fixed_end
    }

    /// Length of the null bitmap: ⌈natts/8⌉.
    pub fn null_bitmap_len(&self) -> usize {
        self.bitmap_len
    }

    /// Offset where the variable region starts.
    #[inline]
    pub fn var_region_offset(&self, has_nulls: bool) -> usize {
        if has_nulls {
            self.fixed_end + self.bitmap_len
        } else {
            self.fixed_end
        }
    }

    /// Number of variable attributes.
    pub fn variable_count(&self) -> usize {
        self.var_attrs.len()
    }

    /// Attribute number of the `index`-th variable attribute.
    pub fn variable_attr(&self, index: usize) -> usize {
        self.var_attrs[index] as usize
    }

    /// The layout of tuples storing only the first `k` attributes (written before
    /// columns were added). `k == natts()` gives `self`. Built on first use and cached.
    /// Panics if `k > natts()`.
    pub fn prefix(&self, k: usize) -> &TupleLayout {
        let n = self.natts();
        assert!(k <= n, "prefix of {k} attributes of a {n}-attribute layout");
        if k == n {
            return self;
        }
        let table = self
            .prefixes
            .get_or_init(|| (0..n).map(|_| OnceLock::new()).collect());
        table[k].get_or_init(|| Box::new(Self::build(&self.columns[..k])))
    }

    // ----- Encoding -----

    /// Checks `values` (at most `natts()`, matching the columns) and returns the encoded
    /// length and whether any value is NULL.
    fn check_values(&self, values: &[AttrValue<'_>]) -> Result<(usize, bool)> {
        if values.len() > self.natts() {
            return Err(Error::InvalidArgument(format!(
                "{} values for a layout of {} attributes",
                values.len(),
                self.natts()
            )));
        }
        let lay = self.prefix(values.len());
        let mut has_nulls = false;
        let mut var_len = 0usize;
        for (i, (v, c)) in values.iter().zip(lay.columns.iter()).enumerate() {
            match (*v, *c) {
                (AttrValue::Null, c) => {
                    if !c.nullable() {
                        return Err(Error::InvalidArgument(format!(
                            "NULL for NOT NULL attribute {i}"
                        )));
                    }
                    has_nulls = true;
                }
                (AttrValue::Fixed(b), ColumnFormat::Fixed { width, .. }) => {
                    if b.len() != width as usize {
                        return Err(Error::InvalidArgument(format!(
                            "attribute {i} is {width} bytes wide, got {} bytes",
                            b.len()
                        )));
                    }
                }
                (AttrValue::Variable(b), ColumnFormat::Variable { .. }) => {
                    if b.len() > u32::MAX as usize {
                        return Err(Error::TooLarge {
                            what: "variable-length value",
                            size: b.len(),
                            limit: u32::MAX as usize,
                        });
                    }
                    var_len += variable_encoded_size(b.len());
                }
                (AttrValue::External { .. }, ColumnFormat::Variable { .. }) => {
                    var_len += EXTERNAL_POINTER_SIZE;
                }
                (v, c) => {
                    return Err(Error::InvalidArgument(format!(
                        "attribute {i}: value {} does not match column format {c:?}",
                        match v {
                            AttrValue::Fixed(_) => "Fixed",
                            AttrValue::Variable(_) => "Variable",
                            AttrValue::External { .. } => "External",
                            AttrValue::Null => "Null",
                        }
                    )));
                }
            }
        }
        Ok((lay.var_region_offset(has_nulls) + var_len, has_nulls))
    }

    /// Length `values` would encode to (validating them).
    pub fn encoded_len(&self, values: &[AttrValue<'_>]) -> Result<usize> {
        Ok(self.check_values(values)?.0)
    }

    /// Encodes a row. `values` may be shorter than the layout (the tuple then stores
    /// only that many attributes, laid out as [`Self::prefix`] of that count); it may
    /// not be longer.
    pub fn encode(&self, values: &[AttrValue<'_>]) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.encode_into(values, &mut out)?;
        Ok(out)
    }

    /// [`Self::encode`] into a reused buffer (cleared first).
    pub fn encode_into(&self, values: &[AttrValue<'_>], out: &mut Vec<u8>) -> Result<()> {
        let (len, has_nulls) = self.check_values(values)?;
        let lay = self.prefix(values.len());
        out.clear();
        out.resize(len, 0);
        out[FLAGS_OFFSET] = if has_nulls { FLAG_HAS_NULLS } else { 0 };
        out[BEE_ID_OFFSET] = 0;
        out[NATTS_OFFSET..NATTS_OFFSET + 2].copy_from_slice(&(values.len() as u16).to_le_bytes());
        let bitmap = lay.fixed_end;
        let mut pos = lay.var_region_offset(has_nulls);
        for (i, (v, a)) in values.iter().zip(lay.attrs.iter()).enumerate() {
            match *v {
                AttrValue::Null => out[bitmap + i / 8] |= 1 << (i % 8),
                AttrValue::Fixed(b) => {
                    let at = a.offset as usize;
                    out[at..at + b.len()].copy_from_slice(b);
                }
                AttrValue::Variable(b) => {
                    if b.len() <= VARLEN_SHORT_MAX as usize {
                        out[pos] = b.len() as u8;
                        pos += 1;
                    } else {
                        out[pos] = VARLEN_LONG;
                        out[pos + 1..pos + 5].copy_from_slice(&(b.len() as u32).to_le_bytes());
                        pos += 5;
                    }
                    out[pos..pos + b.len()].copy_from_slice(b);
                    pos += b.len();
                }
                AttrValue::External { len, first_page } => {
                    out[pos] = VARLEN_EXTERNAL;
                    out[pos + 1..pos + 5].copy_from_slice(&len.to_le_bytes());
                    out[pos + 5..pos + 9].copy_from_slice(&first_page.0.to_le_bytes());
                    pos += EXTERNAL_POINTER_SIZE;
                }
            }
        }
        debug_assert_eq!(pos, len);
        Ok(())
    }

    // ----- Decoding -----

    /// Checks the header and returns the layout the tuple is stored in and its
    /// `HAS_NULLS` flag. The tuple is guaranteed to reach the variable region.
    #[inline]
    fn stored_layout(&self, tuple: &[u8]) -> Result<(&TupleLayout, bool)> {
        let h = read_header(tuple)?;
        if h.flags & !FLAG_HAS_NULLS != 0 {
            return Err(malformed(format!(
                "reserved flag bits set: {:#04x}",
                h.flags
            )));
        }
        if h.bee_id != 0 {
            return Err(malformed(format!(
                "tuple-bee id {} (tuple bees are not supported by the generic decoder)",
                h.bee_id
            )));
        }
        let stored = h.natts as usize;
        if stored > self.natts() {
            return Err(malformed(format!(
                "stores {stored} attributes, the layout has {}",
                self.natts()
            )));
        }
        let lay = self.prefix(stored);
        let has_nulls = h.has_nulls();
        let var_start = lay.var_region_offset(has_nulls);
        if tuple.len() < var_start {
            return Err(malformed(format!(
                "{} bytes is shorter than its fixed region and null bitmap ({var_start} bytes)",
                tuple.len()
            )));
        }
        Ok((lay, has_nulls))
    }

    /// Decodes the first `out.len()` attributes (at most `natts()`) into `out`.
    /// Attributes beyond the tuple's stored count read as [`Attr::Null`]. Fixed
    /// attributes are read at their constant offsets; the variable region is walked
    /// once, as far as `out` needs. When every stored attribute is decoded, the tuple
    /// must end exactly where its last attribute ends.
    pub fn deform<'t>(&self, tuple: &'t [u8], out: &mut [Attr<'t>]) -> Result<()> {
        if out.len() > self.natts() {
            return Err(Error::InvalidArgument(format!(
                "asked for {} attributes of a {}-attribute layout",
                out.len(),
                self.natts()
            )));
        }
        let (lay, has_nulls) = self.stored_layout(tuple)?;
        let stored = lay.natts();
        let (head, tail) = if out.len() > stored {
            out.split_at_mut(stored)
        } else {
            (out, &mut [][..])
        };
        tail.fill(Attr::Null);
        let mut pos = lay.var_region_offset(has_nulls);
        if has_nulls {
            let bitmap = &tuple[lay.fixed_end..pos];
            for (i, (slot, a)) in head.iter_mut().zip(lay.attrs.iter()).enumerate() {
                if bitmap[i / 8] & (1 << (i % 8)) != 0 {
                    if !a.nullable {
                        return Err(null_in_not_null(i));
                    }
                    *slot = Attr::Null;
                } else if a.width != 0 {
                    let at = a.offset as usize;
                    *slot = Attr::Bytes(&tuple[at..at + a.width as usize]);
                } else {
                    (*slot, pos) = read_var(tuple, pos)?;
                }
            }
        } else {
            for (slot, a) in head.iter_mut().zip(lay.attrs.iter()) {
                if a.width != 0 {
                    let at = a.offset as usize;
                    *slot = Attr::Bytes(&tuple[at..at + a.width as usize]);
                } else {
                    (*slot, pos) = read_var(tuple, pos)?;
                }
            }
        }
        if head.len() == stored && pos != tuple.len() {
            return Err(trailing_bytes(tuple.len(), pos));
        }
        Ok(())
    }

    /// Decodes attribute `i` alone: a fixed attribute with one load, a variable one by
    /// skipping the variable attributes before it. `i` must be below `natts()`.
    pub fn attribute<'t>(&self, tuple: &'t [u8], i: usize) -> Result<Attr<'t>> {
        self.check_attr(i)?;
        let (lay, has_nulls) = self.stored_layout(tuple)?;
        lay.attribute_in(tuple, has_nulls, i)
    }

    /// Attribute `i`'s bytes read at its fixed offset, when `tuple` is plain: stored
    /// with every attribute of this layout, no NULL among them, no tuple bee.
    /// `None` for any other tuple and for a variable attribute: the caller reads those
    /// through [`Self::attribute`], which checks what this skips. One header load and
    /// one bounds check: what a scan that tests one column of every tuple wants.
    #[inline]
    pub fn plain_fixed<'t>(&self, tuple: &'t [u8], i: usize) -> Option<&'t [u8]> {
        let a = self.attrs.get(i)?;
        let h = tuple.first_chunk::<TUPLE_HEADER_SIZE>()?;
        if a.width == 0
            || h[FLAGS_OFFSET] != 0
            || h[BEE_ID_OFFSET] != 0
            || u16::from_le_bytes([h[NATTS_OFFSET], h[NATTS_OFFSET + 1]]) as usize != self.natts()
        {
            return None;
        }
        let at = a.offset as usize;
        tuple.get(at..at + a.width as usize)
    }

    /// Decodes the attributes `cols` (each below `natts()`) into `out` (as long as
    /// `cols`), as [`Self::attribute`] would one by one, reading the tuple's header
    /// once: what a column-at-a-time decoder wants for a few columns of each tuple.
    pub fn attributes<'t>(&self, tuple: &'t [u8], cols: &[usize], out: &mut [Attr<'t>]) -> Result<()> {
        if out.len() != cols.len() {
            return Err(Error::InvalidArgument(format!(
                "{} attributes asked for with room for {}",
                cols.len(),
                out.len()
            )));
        }
        let (lay, has_nulls) = self.stored_layout(tuple)?;
        for (slot, &i) in out.iter_mut().zip(cols) {
            self.check_attr(i)?;
            *slot = lay.attribute_in(tuple, has_nulls, i)?;
        }
        Ok(())
    }

    fn check_attr(&self, i: usize) -> Result<()> {
        if i >= self.natts() {
            return Err(Error::InvalidArgument(format!(
                "attribute {i} of a {}-attribute layout",
                self.natts()
            )));
        }
        Ok(())
    }

    /// Attribute `i` of `tuple`, whose stored layout is `self` (a prefix of the
    /// relation's, from [`Self::stored_layout`]); NULL past the stored attributes.
    fn attribute_in<'t>(&self, tuple: &'t [u8], has_nulls: bool, i: usize) -> Result<Attr<'t>> {
        let lay = self;
        if i >= lay.natts() {
            return Ok(Attr::Null);
        }
        let is_null = |j: usize| has_nulls && tuple[lay.fixed_end + j / 8] & (1 << (j % 8)) != 0;
        let a = lay.attrs[i];
        if is_null(i) {
            return if a.nullable {
                Ok(Attr::Null)
            } else {
                Err(null_in_not_null(i))
            };
        }
        if a.width != 0 {
            let at = a.offset as usize;
            return Ok(Attr::Bytes(&tuple[at..at + a.width as usize]));
        }
        let mut pos = lay.var_region_offset(has_nulls);
        for &j in &lay.var_attrs[..a.var_index as usize] {
            let j = j as usize;
            if is_null(j) {
                if !lay.attrs[j].nullable {
                    return Err(null_in_not_null(j));
                }
                continue;
            }
            pos = skip_var(tuple, pos)?;
        }
        Ok(read_var(tuple, pos)?.0)
    }

    /// Checks a whole tuple: header, NULL bits (none on NOT NULL attributes, none past
    /// the stored count), every length prefix, and that nothing follows the last
    /// attribute.
    pub fn validate(&self, tuple: &[u8]) -> Result<()> {
        let (lay, has_nulls) = self.stored_layout(tuple)?;
        let stored = lay.natts();
        let mut pos = lay.var_region_offset(has_nulls);
        if has_nulls {
            let bitmap = &tuple[lay.fixed_end..pos];
            if stored % 8 != 0 && bitmap[stored / 8] >> (stored % 8) != 0 {
                return Err(malformed("NULL bits set past the stored attributes".into()));
            }
            for (i, a) in lay.attrs.iter().enumerate() {
                if bitmap[i / 8] & (1 << (i % 8)) != 0 {
                    if !a.nullable {
                        return Err(null_in_not_null(i));
                    }
                } else if a.width == 0 {
                    pos = skip_var(tuple, pos)?;
                }
            }
        } else {
            for _ in lay.var_attrs.iter() {
                pos = skip_var(tuple, pos)?;
            }
        }
        if pos != tuple.len() {
            return Err(trailing_bytes(tuple.len(), pos));
        }
        Ok(())
    }

    /// The out-of-line values of a tuple, as `(total length, first overflow page)`.
    /// Allocates only if there are some.
    pub fn external_refs(&self, tuple: &[u8]) -> Result<Vec<(u32, PageId)>> {
        let (lay, has_nulls) = self.stored_layout(tuple)?;
        let mut refs = Vec::new();
        let mut pos = lay.var_region_offset(has_nulls);
        for &j in lay.var_attrs.iter() {
            let j = j as usize;
            if has_nulls && tuple[lay.fixed_end + j / 8] & (1 << (j % 8)) != 0 {
                continue;
            }
            let (attr, next) = read_var(tuple, pos)?;
            if let Attr::External { len, first_page } = attr {
                refs.push((len, first_page));
            }
            pos = next;
        }
        Ok(refs)
    }
}

#[cold]
fn null_in_not_null(i: usize) -> Error {
    malformed(format!("NULL bit set for NOT NULL attribute {i}"))
}

#[cold]
fn trailing_bytes(len: usize, end: usize) -> Error {
    malformed(format!("{len} bytes but the attributes end at byte {end}"))
}

#[cold]
fn overrun(pos: usize, len: usize) -> Error {
    malformed(format!(
        "variable attribute at byte {pos} runs past the end of the {len}-byte tuple"
    ))
}

#[inline]
fn u32_at(tuple: &[u8], at: usize) -> Option<u32> {
    tuple
        .get(at..)?
        .first_chunk::<4>()
        .map(|b| u32::from_le_bytes(*b))
}

/// Reads the variable attribute at `pos`; returns it and the offset after it.
#[inline]
fn read_var(tuple: &[u8], pos: usize) -> Result<(Attr<'_>, usize)> {
    let Some(&b) = tuple.get(pos) else {
        return Err(overrun(pos, tuple.len()));
    };
    let (start, len) = match b {
        VARLEN_EXTERNAL => {
            return match (u32_at(tuple, pos + 1), u32_at(tuple, pos + 5)) {
                (Some(len), Some(page)) => Ok((
                    Attr::External {
                        len,
                        first_page: PageId(page),
                    },
                    pos + EXTERNAL_POINTER_SIZE,
                )),
                _ => Err(overrun(pos, tuple.len())),
            };
        }
        VARLEN_LONG => match u32_at(tuple, pos + 1) {
            Some(len) => (pos + 5, len as usize),
            None => return Err(overrun(pos, tuple.len())),
        },
        short => (pos + 1, short as usize),
    };
    match start.checked_add(len).and_then(|end| tuple.get(start..end)) {
        Some(bytes) => Ok((Attr::Bytes(bytes), start + len)),
        None => Err(overrun(pos, tuple.len())),
    }
}

/// Skips the variable attribute at `pos`; returns the offset after it.
#[inline]
fn skip_var(tuple: &[u8], pos: usize) -> Result<usize> {
    Ok(read_var(tuple, pos)?.1)
}

#[cfg(test)]
mod tests {
    use rand::Rng;
    use rand::rngs::StdRng;

    use super::*;
    use crate::testutil::for_seeds;

    /// An owned value, convertible to an [`AttrValue`].
    #[derive(Clone, Debug, PartialEq)]
    enum Val {
        Null,
        Fixed(Vec<u8>),
        Var(Vec<u8>),
        Ext(u32, PageId),
    }

    impl Val {
        fn as_value(&self) -> AttrValue<'_> {
            match self {
                Val::Null => AttrValue::Null,
                Val::Fixed(b) => AttrValue::Fixed(b),
                Val::Var(b) => AttrValue::Variable(b),
                Val::Ext(len, first_page) => AttrValue::External {
                    len: *len,
                    first_page: *first_page,
                },
            }
        }

        fn matches(&self, a: &Attr<'_>) -> bool {
            match (self, a) {
                (Val::Null, Attr::Null) => true,
                (Val::Fixed(b) | Val::Var(b), Attr::Bytes(x)) => b.as_slice() == *x,
                (Val::Ext(l, p), Attr::External { len, first_page }) => l == len && p == first_page,
                _ => false,
            }
        }
    }

    const WIDTHS: [u8; 5] = [1, 2, 4, 8, 16];

    fn random_columns(rng: &mut StdRng, n: usize) -> Vec<ColumnFormat> {
        (0..n)
            .map(|_| {
                let nullable = rng.random_bool(0.5);
                if rng.random_bool(0.6) {
                    ColumnFormat::fixed(WIDTHS[rng.random_range(0..5)], nullable)
                } else {
                    ColumnFormat::variable(nullable)
                }
            })
            .collect()
    }

    /// Lengths that exercise every prefix form and its boundaries.
    fn random_var_len(rng: &mut StdRng) -> usize {
        match rng.random_range(0..20) {
            0 => 0,
            1 => 0xFD,
            2 => 0xFE,
            3 => 0xFF,
            4 => rng.random_range(256..5000),
            5 => 65536,
            _ => rng.random_range(0..40),
        }
    }

    fn random_row(rng: &mut StdRng, columns: &[ColumnFormat], null_p: f64) -> Vec<Val> {
        columns
            .iter()
            .map(|c| {
                if c.nullable() && rng.random_bool(null_p) {
                    return Val::Null;
                }
                match *c {
                    ColumnFormat::Fixed { width, .. } => {
                        let mut b = vec![0u8; width as usize];
                        rng.fill(&mut b[..]);
                        Val::Fixed(b)
                    }
                    ColumnFormat::Variable { .. } => {
                        if rng.random_bool(0.1) {
                            Val::Ext(rng.random(), PageId(rng.random()))
                        } else {
                            let mut b = vec![0u8; random_var_len(rng)];
                            rng.fill(&mut b[..]);
                            Val::Var(b)
                        }
                    }
                }
            })
            .collect()
    }

    fn values(row: &[Val]) -> Vec<AttrValue<'_>> {
        row.iter().map(Val::as_value).collect()
    }

    fn check_decodes(layout: &TupleLayout, tuple: &[u8], row: &[Val]) {
        let n = layout.natts();
        let mut out = vec![Attr::Null; n];
        layout.deform(tuple, &mut out).unwrap();
        for (i, got) in out.iter().enumerate() {
            let want = row.get(i).unwrap_or(&Val::Null);
            assert!(want.matches(got), "attr {i}: want {want:?}, got {got:?}");
            let one = layout.attribute(tuple, i).unwrap();
            assert_eq!(one, *got, "attribute({i}) disagrees with deform");
            // The fast read answers for a fixed attribute of a plain tuple, and then as
            // the decoder does.
            let plain = !read_header(tuple).unwrap().has_nulls() && row.len() == n;
            match layout.plain_fixed(tuple, i) {
                Some(b) => assert_eq!(Attr::Bytes(b), *got, "plain_fixed({i}) disagrees with deform"),
                None => assert!(!plain || layout.fixed_offset(i).is_none(), "plain_fixed({i}) declined a plain tuple"),
            }
        }
        assert_eq!(layout.plain_fixed(tuple, n), None);
        // Several at once, in any order and repeated, agree with one by one.
        let cols: Vec<usize> = (0..n).rev().chain(0..n.min(2)).collect();
        let mut picked = vec![Attr::Null; cols.len()];
        layout.attributes(tuple, &cols, &mut picked).unwrap();
        for (&c, got) in cols.iter().zip(&picked) {
            assert_eq!(*got, out[c], "attributes() disagrees with deform at {c}");
        }
        assert!(layout.attributes(tuple, &[n], &mut [Attr::Null]).is_err());
        assert!(layout.attributes(tuple, &cols, &mut []).is_err() || cols.is_empty());
        // A prefix deform agrees with the full one.
        let k = n / 2;
        let mut part = vec![Attr::Null; k];
        layout.deform(tuple, &mut part).unwrap();
        assert_eq!(&part[..], &out[..k]);
        layout.validate(tuple).unwrap();
        let ext: Vec<(u32, PageId)> = row
            .iter()
            .filter_map(|v| match v {
                Val::Ext(l, p) => Some((*l, *p)),
                _ => None,
            })
            .collect();
        assert_eq!(layout.external_refs(tuple).unwrap(), ext);
    }

    #[test]
    fn random_layouts_round_trip() {
        for_seeds("random_layouts_round_trip", 0..150, |_, rng| {
            let n = rng.random_range(1..=100);
            let columns = random_columns(rng, n);
            let layout = TupleLayout::new(&columns).unwrap();
            let mut buf = Vec::new();
            for _ in 0..8 {
                let null_p = [0.0, 0.2, 0.9][rng.random_range(0..3)];
                let row = random_row(rng, &columns, null_p);
                let vals = values(&row);
                layout.encode_into(&vals, &mut buf).unwrap();
                assert_eq!(buf.len(), layout.encoded_len(&vals).unwrap());
                let h = read_header(&buf).unwrap();
                assert_eq!(h.natts as usize, n);
                assert_eq!(h.has_nulls(), row.contains(&Val::Null));
                check_decodes(&layout, &buf, &row);
            }
        });
    }

    #[test]
    fn every_width_and_prefix_form_round_trips() {
        let mut columns: Vec<ColumnFormat> = WIDTHS
            .iter()
            .map(|&w| ColumnFormat::fixed(w, true))
            .collect();
        columns.push(ColumnFormat::variable(true));
        let layout = TupleLayout::new(&columns).unwrap();
        for len in [
            0usize, 1, 0xFC, 0xFD, 0xFE, 0xFF, 0x100, 4096, 65535, 65536, 70000,
        ] {
            let mut row: Vec<Val> = WIDTHS
                .iter()
                .map(|&w| Val::Fixed(vec![w; w as usize]))
                .collect();
            row.push(Val::Var((0..len).map(|i| i as u8).collect()));
            let t = layout.encode(&values(&row)).unwrap();
            let expect_prefix = if len <= 0xFD { 1 } else { 5 };
            assert_eq!(t.len(), layout.fixed_end() + expect_prefix + len);
            check_decodes(&layout, &t, &row);
        }
        // The external form.
        let mut row: Vec<Val> = WIDTHS
            .iter()
            .map(|&w| Val::Fixed(vec![w; w as usize]))
            .collect();
        row.push(Val::Ext(u32::MAX, PageId(77)));
        let t = layout.encode(&values(&row)).unwrap();
        assert_eq!(t.len(), layout.fixed_end() + EXTERNAL_POINTER_SIZE);
        check_decodes(&layout, &t, &row);
    }

    #[test]
    fn fixed_attributes_are_sorted_aligned_and_at_constant_offsets() {
        for_seeds("fixed_offsets", 0..100, |_, rng| {
            let n = rng.random_range(1..=60);
            let columns = random_columns(rng, n);
            let layout = TupleLayout::new(&columns).unwrap();
            // Layout shape: widest first, ties in declaration order, aligned, no overlap.
            let mut fixed: Vec<(usize, usize, usize)> = (0..n)
                .filter_map(|i| match layout.placement(i) {
                    AttrPlacement::Fixed { offset, width } => Some((offset, width, i)),
                    AttrPlacement::Variable { .. } => None,
                })
                .collect();
            fixed.sort();
            let mut end = TUPLE_HEADER_SIZE;
            for w in fixed.windows(2) {
                let ((_, w0, i0), (_, w1, i1)) = (w[0], w[1]);
                assert!(w0 > w1 || (w0 == w1 && i0 < i1), "order {:?}", w);
            }
            for &(off, width, _) in &fixed {
                assert_eq!(off % width.min(8), 0);
                assert!(off >= end);
                assert!(off - end < 8, "padding only for alignment");
                end = off + width;
            }
            assert_eq!(layout.fixed_end(), end);
            // Variable indexes are in declaration order.
            let var: Vec<usize> = (0..n)
                .filter(|&i| matches!(layout.placement(i), AttrPlacement::Variable { .. }))
                .collect();
            for (k, &i) in var.iter().enumerate() {
                assert_eq!(layout.placement(i), AttrPlacement::Variable { index: k });
                assert_eq!(layout.variable_attr(k), i);
            }
            // The same row with different NULL patterns keeps every non-NULL fixed
            // attribute at its offset.
            let row = random_row(rng, &columns, 0.0);
            for null_p in [0.0, 0.3, 0.7, 1.0] {
                let mut r = row.clone();
                for (v, c) in r.iter_mut().zip(&columns) {
                    if c.nullable() && rng.random_bool(null_p) {
                        *v = Val::Null;
                    }
                }
                let t = layout.encode(&values(&r)).unwrap();
                for &(off, width, i) in &fixed {
                    match &r[i] {
                        Val::Fixed(b) => assert_eq!(&t[off..off + width], &b[..]),
                        Val::Null => assert!(t[off..off + width].iter().all(|&x| x == 0)),
                        _ => unreachable!(),
                    }
                }
                if r.contains(&Val::Null) {
                    for (i, v) in r.iter().enumerate() {
                        let (byte, mask) = layout.null_bit(i);
                        let set = t[layout.null_bitmap_offset() + byte] & mask != 0;
                        assert_eq!(set, *v == Val::Null);
                    }
                }
            }
        });
    }

    #[test]
    fn known_layout_offsets() {
        use ColumnFormat as C;
        let layout = TupleLayout::new(&[
            C::fixed(1, false),  // a: bool
            C::variable(true),   // b: text
            C::fixed(8, false),  // c: int8
            C::fixed(4, true),   // d: int4
            C::fixed(16, false), // e: decimal
            C::fixed(2, false),  // f: int2
            C::fixed(8, true),   // g: float8
        ])
        .unwrap();
        // 4 header + 4 padding, then e@8, c@24, g@32, d@40, f@44, a@46; end 47.
        assert_eq!(layout.fixed_offset(4), Some(8));
        assert_eq!(layout.fixed_offset(2), Some(24));
        assert_eq!(layout.fixed_offset(6), Some(32));
        assert_eq!(layout.fixed_offset(3), Some(40));
        assert_eq!(layout.fixed_offset(5), Some(44));
        assert_eq!(layout.fixed_offset(0), Some(46));
        assert_eq!(layout.placement(1), AttrPlacement::Variable { index: 0 });
        assert_eq!(layout.fixed_end(), 47);
        assert_eq!(layout.fixed_region_size(), 43);
        assert_eq!(layout.var_region_offset(false), 47);
        assert_eq!(layout.var_region_offset(true), 48);
        // No fixed attribute of width ≥ 8: no padding.
        let small = TupleLayout::new(&[C::fixed(2, false), C::fixed(4, false)]).unwrap();
        assert_eq!(small.fixed_offset(1), Some(4));
        assert_eq!(small.fixed_offset(0), Some(8));
    }

    #[test]
    fn attributes_beyond_the_stored_count_read_as_null() {
        for_seeds("beyond_stored_count", 0..100, |_, rng| {
            let n = rng.random_range(2..=60);
            let columns = random_columns(rng, n);
            let full = TupleLayout::new(&columns).unwrap();
            let k = rng.random_range(0..n);
            // A tuple written before columns k.. were added, under the old layout…
            let old = TupleLayout::new(&columns[..k]).unwrap();
            let row = random_row(rng, &columns[..k], 0.3);
            let t = old.encode(&values(&row)).unwrap();
            // …is what the new layout writes for a k-value row…
            assert_eq!(full.encode(&values(&row)).unwrap(), t);
            assert_eq!(full.prefix(k).fixed_end(), old.fixed_end());
            // …and reads with NULLs for the added attributes.
            check_decodes(&full, &t, &row);
            for i in k..n {
                assert_eq!(full.attribute(&t, i).unwrap(), Attr::Null);
            }
        });
    }

    #[test]
    fn adding_a_wider_column_keeps_old_tuples_readable() {
        use ColumnFormat as C;
        let old = TupleLayout::new(&[C::fixed(4, false), C::fixed(2, false)]).unwrap();
        let t = old
            .encode(&[AttrValue::Fixed(&[1, 2, 3, 4]), AttrValue::Fixed(&[5, 6])])
            .unwrap();
        // ADD COLUMN int8 NOT NULL: it sorts before the old ones in the new layout.
        let new = TupleLayout::new(&[C::fixed(4, false), C::fixed(2, false), C::fixed(8, false)])
            .unwrap();
        assert_ne!(new.fixed_offset(0), old.fixed_offset(0));
        let mut out = [Attr::Null; 3];
        new.deform(&t, &mut out).unwrap();
        assert_eq!(
            out,
            [Attr::Bytes(&[1, 2, 3, 4]), Attr::Bytes(&[5, 6]), Attr::Null]
        );
        assert_eq!(new.attribute(&t, 1).unwrap(), Attr::Bytes(&[5, 6]));
    }

    #[test]
    fn encoder_rejects_bad_rows() {
        use ColumnFormat as C;
        let layout =
            TupleLayout::new(&[C::fixed(4, false), C::variable(false), C::fixed(8, true)]).unwrap();
        let four = [0u8; 4];
        let eight = [0u8; 8];
        let bad: Vec<Vec<AttrValue<'_>>> = vec![
            vec![AttrValue::Fixed(&eight)],                         // wrong width
            vec![AttrValue::Null],                                  // NULL in NOT NULL
            vec![AttrValue::Variable(&four)],                       // variable for fixed
            vec![AttrValue::Fixed(&four), AttrValue::Fixed(&four)], // fixed for variable
            vec![AttrValue::External {
                len: 1,
                first_page: PageId(1),
            }], // external for fixed
            vec![AttrValue::Fixed(&four), AttrValue::Null],         // NULL in NOT NULL
            vec![
                AttrValue::Fixed(&four),
                AttrValue::Variable(&[]),
                AttrValue::Null,
                AttrValue::Null,
            ], // too many
        ];
        for row in bad {
            let err = layout.encode(&row).unwrap_err();
            assert!(matches!(err, Error::InvalidArgument(_)), "{row:?}: {err}");
        }
        assert!(TupleLayout::new(&[C::fixed(3, false)]).is_err());
        assert!(TupleLayout::new(&[C::fixed(0, false)]).is_err());
        assert!(TupleLayout::new(&[C::fixed(32, false)]).is_err());
        assert!(TupleLayout::new(&vec![C::fixed(1, false); MAX_ATTRIBUTES + 1]).is_err());
        assert_eq!(
            TupleLayout::new(&[]).unwrap().encode(&[]).unwrap(),
            vec![0, 0, 0, 0]
        );
    }

    #[test]
    fn decoder_rejects_bad_headers() {
        use ColumnFormat as C;
        let layout = TupleLayout::new(&[C::fixed(4, false), C::variable(true)]).unwrap();
        let good = layout
            .encode(&[AttrValue::Fixed(&[1; 4]), AttrValue::Variable(b"hi")])
            .unwrap();
        let mut out = [Attr::Null; 2];
        layout.deform(&good, &mut out).unwrap();

        let mut bee = good.clone();
        bee[BEE_ID_OFFSET] = 3;
        let err = layout.deform(&bee, &mut out).unwrap_err();
        assert!(err.to_string().contains("tuple-bee id 3"), "{err}");
        assert_eq!(read_header(&bee).unwrap().bee_id, 3);

        let mut flags = good.clone();
        flags[FLAGS_OFFSET] = 0x80;
        assert!(matches!(
            layout.deform(&flags, &mut out),
            Err(Error::CorruptTuple(_))
        ));

        let mut many = good.clone();
        many[NATTS_OFFSET] = 3;
        assert!(layout.attribute(&many, 0).is_err());

        let mut trailing = good.clone();
        trailing.push(0);
        assert!(layout.deform(&trailing, &mut out).is_err());
        assert!(layout.validate(&trailing).is_err());
        // A prefix deform does not look that far.
        layout.deform(&trailing, &mut out[..1]).unwrap();

        // A NULL bit on the NOT NULL attribute 0.
        let with_null = layout
            .encode(&[AttrValue::Fixed(&[1; 4]), AttrValue::Null])
            .unwrap();
        let mut bad_null = with_null.clone();
        bad_null[layout.null_bitmap_offset()] |= 1;
        assert!(layout.deform(&bad_null, &mut out).is_err());
        assert!(layout.attribute(&bad_null, 0).is_err());
        assert!(layout.validate(&bad_null).is_err());
        // A NULL bit past the stored count.
        let mut past = with_null.clone();
        past[layout.null_bitmap_offset()] |= 0x80;
        assert!(layout.validate(&past).is_err());

        // Asking for more attributes than the layout has, or a bad attribute number.
        let mut too_many = [Attr::Null; 3];
        assert!(matches!(
            layout.deform(&good, &mut too_many),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            layout.attribute(&good, 2),
            Err(Error::InvalidArgument(_))
        ));

        for len in 0..good.len() {
            assert!(layout.validate(&good[..len]).is_err(), "truncated to {len}");
            assert!(
                layout.deform(&good[..len], &mut out).is_err(),
                "truncated to {len}"
            );
        }
    }

    #[test]
    fn malformed_tuples_never_panic() {
        for_seeds("malformed_tuples_never_panic", 0..60, |_, rng| {
            let n = rng.random_range(1..=30);
            let columns = random_columns(rng, n);
            let layout = TupleLayout::new(&columns).unwrap();
            let mut valid = Vec::new();
            for _ in 0..4 {
                let mut row = random_row(rng, &columns, 0.3);
                // Keep tuples small so mutations hit the interesting bytes.
                for v in &mut row {
                    if let Val::Var(b) = v {
                        b.truncate(300);
                    }
                }
                valid.push(layout.encode(&values(&row)).unwrap());
            }
            for _ in 0..200 {
                let mut t = valid[rng.random_range(0..valid.len())].clone();
                for _ in 0..rng.random_range(1..=4) {
                    match rng.random_range(0..6) {
                        0 if !t.is_empty() => {
                            let i = rng.random_range(0..t.len());
                            t[i] ^= 1 << rng.random_range(0..8);
                        }
                        1 if !t.is_empty() => {
                            let i = rng.random_range(0..t.len());
                            t[i] = [0x00, 0xFD, 0xFE, 0xFF, rng.random()][rng.random_range(0..5)];
                        }
                        2 => {
                            let len = rng.random_range(0..=t.len());
                            t.truncate(len);
                        }
                        3 => t.extend((0..rng.random_range(1..20)).map(|_| rng.random::<u8>())),
                        4 if t.len() >= 4 => {
                            let natts = rng.random_range(0..=n as u16 + 2);
                            t[2..4].copy_from_slice(&natts.to_le_bytes());
                        }
                        _ => rng.fill(&mut t[..]),
                    }
                }
                // Any outcome but a panic is fine; consistent ones are checked.
                let mut out = vec![Attr::Null; n];
                let full = layout.deform(&t, &mut out);
                let valid = layout.validate(&t);
                if valid.is_ok() {
                    assert!(full.is_ok(), "validate accepts what deform rejects");
                }
                for (i, a) in out.iter().enumerate() {
                    let one = layout.attribute(&t, i);
                    if full.is_ok() {
                        assert_eq!(one.unwrap(), *a);
                    }
                    // What the fast read returns is what the decoder reads, whenever
                    // the decoder accepts the tuple at all.
                    if let (Some(b), Ok(one)) = (layout.plain_fixed(&t, i), layout.attribute(&t, i)) {
                        assert_eq!(Attr::Bytes(b), one);
                    }
                }
                let cols: Vec<usize> = (0..n).rev().collect();
                let mut picked = vec![Attr::Null; n];
                let all = layout.attributes(&t, &cols, &mut picked);
                if full.is_ok() {
                    assert!(all.is_ok(), "attributes() rejects what deform accepts");
                    assert!(cols.iter().zip(&picked).all(|(&c, a)| *a == out[c]));
                }
                let k = rng.random_range(0..=n);
                let _ = layout.deform(&t, &mut out[..k]);
                let _ = layout.external_refs(&t);
            }
        });
    }
}
