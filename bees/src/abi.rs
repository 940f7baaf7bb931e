//! The calling convention every bee routine follows, whatever made it.
//!
//! A bee is called on a run of stored tuples (`tuples[0..n]`, each a pointer and a
//! length) and writes the values it produces into caller-owned column buffers
//! ([`ColumnOut`]), one row per qualifying tuple, starting at row `row0`. Keeping the
//! interface to raw buffers is what lets one routine shape serve a Cranelift function
//! (`extern "C" fn(*mut RunArgs) -> u64`) and a Rust closure alike, and keeps this
//! crate free of the SQL engine's vector types.
//!
//! Output slots per column ([`crate::spec::ValueKind::out_width`]):
//!
//! | kind        | slot                      | NULL writes        |
//! |-------------|---------------------------|--------------------|
//! | `Bool`      | 1 byte, 0 or 1            | 0                  |
//! | `Int(w)`    | `w` bytes, little-endian  | 0                  |
//! | `Float(w)`  | `w` bytes (f32 / f64)     | 0.0 (all zero)     |
//! | `Decimal`   | 16 bytes, i128 unscaled   | 0                  |
//! | `Interval`  | the stored 16 bytes       | zero bytes         |
//! | `Raw(w)`    | the stored `w` bytes      | zero bytes         |
//! | `Bytes`     | a [`ByteRef`] (16 bytes)  | `{ptr: null, len: 0}` |
//!
//! A [`ByteRef`] output points *into the tuple*: it is valid as long as the tuple
//! bytes the caller passed are.

/// A pointer and a length: a stored tuple handed to a bee, or a variable-length value
/// a bee hands back (pointing into its tuple).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ByteRef {
    pub ptr: *const u8,
    pub len: usize,
}

impl ByteRef {
    pub const NULL: ByteRef = ByteRef {
        ptr: std::ptr::null(),
        len: 0,
    };

    pub fn of(bytes: &[u8]) -> ByteRef {
        ByteRef {
            ptr: bytes.as_ptr(),
            len: bytes.len(),
        }
    }

    /// The bytes referred to.
    ///
    /// # Safety
    /// `ptr..ptr+len` must be valid for reads for `'a` (or `len` must be 0).
    pub unsafe fn bytes<'a>(self) -> &'a [u8] {
        if self.len == 0 {
            &[]
        } else {
            // SAFETY: the caller guarantees the range is readable.
            unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
        }
    }
}

/// Where a bee writes one output column.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ColumnOut {
    /// Slot array (`row * out_width` bytes in). For a deform bee a null `data` means
    /// "this column is not needed": the bee neither writes it nor falls back on it.
    pub data: *mut u8,
    /// One byte per row, 1 = NULL. Written for nullable columns only (must then be
    /// non-null when `data` is); never read.
    pub nulls: *mut u8,
}

impl ColumnOut {
    pub const SKIP: ColumnOut = ColumnOut {
        data: std::ptr::null_mut(),
        nulls: std::ptr::null_mut(),
    };
}

/// The arguments of one bee call, in memory so that generated code takes one pointer.
/// Field offsets are part of the ABI (see the `OFF_*` constants).
#[repr(C)]
#[derive(Debug)]
pub struct RunArgs {
    /// `n` tuples to consume in order.
    pub tuples: *const ByteRef,
    pub n: u64,
    /// One entry per output column of the spec.
    pub outs: *const ColumnOut,
    /// Row index (in the output buffers) of the first row this call writes.
    pub row0: u64,
    /// The call stops before producing row `row0 + cap`: buffers hold `row0 + cap` rows.
    pub cap: u64,
    /// `sel[k]` receives the index (into `tuples`) of the tuple output row `row0 + k`
    /// came from. Must hold `cap` entries.
    pub sel: *mut u32,
    /// Deform bees: only the first `var_limit` variable attributes are read (callers
    /// that need none of the later ones save the walk). Scan bees ignore it.
    pub var_limit: u64,
    /// Out: rows produced by this call.
    pub produced: u64,
}

pub const OFF_TUPLES: i32 = 0;
pub const OFF_N: i32 = 8;
pub const OFF_OUTS: i32 = 16;
pub const OFF_ROW0: i32 = 24;
pub const OFF_CAP: i32 = 32;
pub const OFF_SEL: i32 = 40;
pub const OFF_VAR_LIMIT: i32 = 48;
pub const OFF_PRODUCED: i32 = 56;

const _: () = {
    assert!(std::mem::offset_of!(RunArgs, tuples) == OFF_TUPLES as usize);
    assert!(std::mem::offset_of!(RunArgs, n) == OFF_N as usize);
    assert!(std::mem::offset_of!(RunArgs, outs) == OFF_OUTS as usize);
    assert!(std::mem::offset_of!(RunArgs, row0) == OFF_ROW0 as usize);
    assert!(std::mem::offset_of!(RunArgs, cap) == OFF_CAP as usize);
    assert!(std::mem::offset_of!(RunArgs, sel) == OFF_SEL as usize);
    assert!(std::mem::offset_of!(RunArgs, var_limit) == OFF_VAR_LIMIT as usize);
    assert!(std::mem::offset_of!(RunArgs, produced) == OFF_PRODUCED as usize);
    assert!(size_of::<ByteRef>() == 16);
    assert!(size_of::<ColumnOut>() == 16);
};

/// How a call ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// Every tuple was consumed.
    Done,
    /// `cap` rows were produced; call again from `consumed` with fresh room.
    Full,
    /// Tuple `consumed` is one the bee does not handle (see [`crate::spec`]'s fallback
    /// rules): the caller decodes it with its generic path and calls again from
    /// `consumed + 1`.
    Fallback,
}

/// The result of one call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    /// Tuples consumed (all of them produced a row or were rejected by the predicate).
    pub consumed: usize,
    /// Rows written.
    pub produced: usize,
    pub stop: Stop,
}

impl Progress {
    /// Classifies a routine's return (consumed count) and `produced`.
    pub fn classify(n: usize, consumed: usize, produced: usize, cap: usize) -> Progress {
        let stop = if consumed >= n {
            Stop::Done
        } else if produced >= cap {
            Stop::Full
        } else {
            Stop::Fallback
        };
        Progress {
            consumed,
            produced,
            stop,
        }
    }
}

/// The arguments of one form-bee call: encode rows `row0..row0+n` of the input
/// columns (`ins`, one per attribute, in the output slot format of [`crate::abi`] —
/// a [`ColumnOut`] read instead of written) into stored tuples, back to back in
/// `buf`. Each tuple starts at the next multiple of 8 after the previous one's end
/// (the first at 0); `ends[k]` receives the end offset of row `row0 + k`'s tuple.
#[repr(C)]
#[derive(Debug)]
pub struct FormArgs {
    pub ins: *const ColumnOut,
    pub row0: u64,
    pub n: u64,
    pub buf: *mut u8,
    pub buf_cap: u64,
    pub ends: *mut u64,
    /// A row whose tuple would be longer than this is not formed: the bee falls back
    /// (the caller's generic path moves long values out of line).
    pub max_tuple: u64,
}

pub const FORM_OFF_INS: i32 = 0;
pub const FORM_OFF_ROW0: i32 = 8;
pub const FORM_OFF_N: i32 = 16;
pub const FORM_OFF_BUF: i32 = 24;
pub const FORM_OFF_BUF_CAP: i32 = 32;
pub const FORM_OFF_ENDS: i32 = 40;
pub const FORM_OFF_MAX_TUPLE: i32 = 48;

const _: () = {
    assert!(std::mem::offset_of!(FormArgs, ins) == FORM_OFF_INS as usize);
    assert!(std::mem::offset_of!(FormArgs, row0) == FORM_OFF_ROW0 as usize);
    assert!(std::mem::offset_of!(FormArgs, n) == FORM_OFF_N as usize);
    assert!(std::mem::offset_of!(FormArgs, buf) == FORM_OFF_BUF as usize);
    assert!(std::mem::offset_of!(FormArgs, buf_cap) == FORM_OFF_BUF_CAP as usize);
    assert!(std::mem::offset_of!(FormArgs, ends) == FORM_OFF_ENDS as usize);
    assert!(std::mem::offset_of!(FormArgs, max_tuple) == FORM_OFF_MAX_TUPLE as usize);
};

/// One sort key column handed to a sort bee: `n` slots in the output slot format of
/// its kind (table above; a `Bytes` slot is a [`ByteRef`], which may be null for a
/// NULL row) and one NULL byte per row (1 = NULL), or a null `nulls` when no row is
/// NULL.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct SortColumn {
    pub data: *const u8,
    pub nulls: *const u8,
}

/// The arguments of one sort-bee call: encode the normalized keys
/// ([`crate::spec::SortSpec`]) of rows `0..n` of `cols` (one per part) into
/// `keys`, `stride` bytes per row (`n × stride` bytes, written whole).
#[repr(C)]
#[derive(Debug)]
pub struct SortArgs {
    pub cols: *const SortColumn,
    pub n: u64,
    pub keys: *mut u8,
    pub stride: u64,
}

pub const SORT_OFF_COLS: i32 = 0;
pub const SORT_OFF_N: i32 = 8;
pub const SORT_OFF_KEYS: i32 = 16;
pub const SORT_OFF_STRIDE: i32 = 24;

const _: () = {
    assert!(std::mem::offset_of!(SortArgs, cols) == SORT_OFF_COLS as usize);
    assert!(std::mem::offset_of!(SortArgs, n) == SORT_OFF_N as usize);
    assert!(std::mem::offset_of!(SortArgs, keys) == SORT_OFF_KEYS as usize);
    assert!(std::mem::offset_of!(SortArgs, stride) == SORT_OFF_STRIDE as usize);
    assert!(size_of::<SortColumn>() == 16);
};
