//! Where a bee's output goes: the scan's column vectors.
//!
//! Columns whose vectors hold the slot format itself (boolean, the integer types,
//! date, timestamp, real, double) are written by the bee straight into the vector's
//! spare capacity; the rest (numeric, interval, strings) are staged as slots and
//! appended through the generic codec's own conversion
//! (`exec::tuple_codec::push_attr`), so bee and generic path produce the
//! same values by construction. NULL flags are staged per column and folded into the
//! vector's NULL mask only when a NULL appears.

use beedb_bees::abi::{ByteRef, ColumnOut};
use beedb_bees::spec::ValueKind;

use crate::error::Result;
use crate::exec::tuple_codec::push_attr;
use crate::types::DataType;
use crate::vector::{Data, Vector};

use super::translate::value_kind;

/// How one output column is filled.
struct Slot {
    kind: ValueKind,
    direct: bool,
    nullable: bool,
    /// Staged slots (indexed by row), for columns not written directly.
    staged: Vec<u64>,
    /// Staged NULL flags (indexed by row), for nullable columns.
    nulls: Vec<u8>,
}

/// The output buffers of one scan: its vectors plus the staging a bee writes into.
pub struct BeeOutput {
    cap: usize,
    slots: Vec<Slot>,
}

fn direct(ty: &DataType) -> bool {
    !matches!(
        ty,
        DataType::Decimal { .. }
            | DataType::Interval
            | DataType::Char(_)
            | DataType::Varchar(_)
            | DataType::Text
    )
}

impl BeeOutput {
    /// Buffers for columns of `types` (with their nullability), `cap` rows a batch.
    pub fn new(types: &[(DataType, bool)], cap: usize) -> BeeOutput {
        let slots = types
            .iter()
            .map(|(ty, nullable)| {
                let kind = value_kind(ty);
                let direct = direct(ty);
                Slot {
                    kind,
                    direct,
                    nullable: *nullable,
                    staged: if direct {
                        Vec::new()
                    } else {
                        vec![0; cap * kind.out_width().div_ceil(8)]
                    },
                    nulls: if *nullable { vec![0; cap] } else { Vec::new() },
                }
            })
            .collect();
        BeeOutput { cap, slots }
    }

    /// Rows a batch holds.
    pub fn cap(&self) -> usize {
        self.cap
    }

    /// Makes room for batches of `cap` rows (a scan that starts small for a point
    /// lookup grows its batches as it proves long).
    pub fn grow(&mut self, cap: usize) {
        if cap <= self.cap {
            return;
        }
        for s in &mut self.slots {
            if !s.direct {
                s.staged.resize(cap * s.kind.out_width().div_ceil(8), 0);
            }
            if s.nullable {
                s.nulls.resize(cap, 0);
            }
        }
        self.cap = cap;
    }

    /// The bee's column buffers for appending to `cols` (whose rows must be fewer
    /// than `cap`). Reserves the vectors' capacity for a whole batch.
    pub fn column_outs(&mut self, cols: &mut [Vector]) -> Vec<ColumnOut> {
        let cap = self.cap;
        self.slots
            .iter_mut()
            .zip(cols.iter_mut())
            .map(|(s, v)| {
                let data = if s.direct {
                    let len = v.data.len();
                    macro_rules! base {
                        ($x:expr) => {{
                            $x.reserve(cap.saturating_sub(len));
                            $x.as_mut_ptr() as *mut u8
                        }};
                    }
                    match &mut v.data {
                        Data::Bool(x) => base!(x),
                        Data::I16(x) => base!(x),
                        Data::I32(x) => base!(x),
                        Data::I64(x) => base!(x),
                        Data::F32(x) => base!(x),
                        Data::F64(x) => base!(x),
                        d => unreachable!("{:?} is not a direct column", d.physical_type()),
                    }
                } else {
                    s.staged.as_mut_ptr() as *mut u8
                };
                ColumnOut {
                    data,
                    nulls: if s.nullable {
                        s.nulls.as_mut_ptr()
                    } else {
                        std::ptr::null_mut()
                    },
                }
            })
            .collect()
    }

    /// Takes rows `row0..row0 + produced` the bee wrote into the vectors.
    ///
    /// # Safety
    /// The bee must have written those rows through buffers from
    /// [`Self::column_outs`] for the same `cols`, and the tuples its byte slots
    /// point into must still be alive.
    pub unsafe fn commit(&mut self, cols: &mut [Vector], row0: usize, produced: usize) -> Result<()> {
        for (s, v) in self.slots.iter_mut().zip(cols.iter_mut()) {
            debug_assert_eq!(v.data.len(), row0);
            let new_nulls = s.nullable && s.nulls[row0..row0 + produced].contains(&1);
            if s.direct {
                // SAFETY: the bee initialized these slots (caller's contract) and
                // `column_outs` reserved the capacity.
                unsafe {
                    match &mut v.data {
                        Data::Bool(x) => x.set_len(row0 + produced),
                        Data::I16(x) => x.set_len(row0 + produced),
                        Data::I32(x) => x.set_len(row0 + produced),
                        Data::I64(x) => x.set_len(row0 + produced),
                        Data::F32(x) => x.set_len(row0 + produced),
                        Data::F64(x) => x.set_len(row0 + produced),
                        _ => unreachable!(),
                    }
                }
                if new_nulls || v.nulls.is_some() {
                    let n = v.nulls.get_or_insert_with(|| vec![false; row0]);
                    n.extend(s.nulls[row0..row0 + produced].iter().map(|&b| b != 0));
                }
                continue;
            }
            let w = s.kind.out_width();
            let base = s.staged.as_ptr() as *const u8;
            if !new_nulls && v.nulls.is_none() {
                // SAFETY: as below (slots written by the bee, tuples alive).
                if unsafe { append_dense(v, base, s.kind, row0, produced)? } {
                    continue;
                }
            }
            for r in row0..row0 + produced {
                let is_null = s.nullable && s.nulls[r] != 0;
                if is_null {
                    v.push_null();
                    continue;
                }
                // SAFETY: the slot was written by the bee; a byte slot points into a
                // live tuple (caller's contract).
                let bytes: &[u8] = unsafe {
                    let p = base.add(r * w);
                    if s.kind == ValueKind::Bytes {
                        (p as *const ByteRef).read_unaligned().bytes()
                    } else {
                        std::slice::from_raw_parts(p, w)
                    }
                };
                push_attr(v, Some(bytes))?;
            }
        }
        Ok(())
    }
}

/// Appends `produced` non-NULL staged slots from row `row0` straight into a string or
/// constrained-numeric vector (the common cases, without per-value dispatch); `false`
/// if the vector is of another kind (the caller then goes value by value). The
/// conversions are the generic codec's: UTF-8 checked, decimals range-checked.
///
/// # Safety
/// The slots must have been written by a bee and byte slots must point into live
/// tuples.
unsafe fn append_dense(v: &mut Vector, base: *const u8, kind: ValueKind, row0: usize, produced: usize) -> Result<bool> {
    let w = kind.out_width();
    match (&mut v.data, v.ty) {
        (Data::Str(sv), _) if kind == ValueKind::Bytes => {
            // SAFETY: caller's contract.
            let pieces = (row0..row0 + produced)
                .map(|r| unsafe { (base.add(r * w) as *const ByteRef).read_unaligned().bytes() });
            sv.extend_from_utf8(pieces)
                .map_err(|_| crate::error::Error::internal("corrupt stored value: invalid UTF-8"))?;
            Ok(true)
        }
        (
            Data::Dec(dv),
            DataType::Decimal {
                precision: Some(_),
                scale,
            },
        ) => {
            for r in row0..row0 + produced {
                // SAFETY: caller's contract (16-byte slots).
                let u = unsafe { (base.add(r * w) as *const i128).read_unaligned() };
                dv.push(crate::types::Decimal::new(u, scale)?);
            }
            Ok(true)
        }
        (Data::Dec64(dv), _) if kind == ValueKind::Decimal => {
            let start = dv.values.len();
            for r in row0..row0 + produced {
                // SAFETY: caller's contract (16-byte slots).
                let u = unsafe { (base.add(r * w) as *const i128).read_unaligned() };
                match i64::try_from(u) {
                    Ok(x) => dv.values.push(x),
                    Err(_) => {
                        // More digits than the column's precision allows: not what
                        // the encoder stores; the caller's value-by-value path
                        // checks and reports it.
                        dv.values.truncate(start);
                        return Ok(false);
                    }
                }
            }
            Ok(true)
        }
        _ => Ok(false),
    }
}
