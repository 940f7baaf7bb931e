//! Encoding rows with a relation's form bee (INSERT, UPDATE, COPY).
//!
//! Values become stored bytes through the generic codec's one conversion
//! ([`encode_value_into`], which also applies numeric typmods); the form bee then lays
//! them out as a tuple with the layout's offsets baked in, instead of the generic
//! encoder's per-attribute walk. Rows whose tuple would be longer than the heap's
//! inline limit go the generic way (which moves long values out of line); below it,
//! both ways give the same bytes.

use std::sync::Arc;

use beedb_bees::FormBee;
use beedb_bees::abi::{ByteRef, ColumnOut, FormArgs};
use beedb_bees::spec::ValueKind;
use beedb_storage::heap::external_threshold;

use crate::catalog::TableDef;
use crate::error::Result;
use crate::exec::tuple_codec::encode_value_into;
use crate::types::Value;

/// Zero bytes a NULL fixed attribute's slot points at (never read by a bee).
static ZEROS: [u8; 16] = [0; 16];

/// A relation's form bee with its scratch buffers, for many rows.
pub struct RowFormer {
    bee: Arc<FormBee>,
    kinds: Vec<ValueKind>,
    values: Vec<u8>,
    spans: Vec<(usize, usize)>,
    nulls: Vec<u8>,
    refs: Vec<ByteRef>,
    ins: Vec<ColumnOut>,
    tuple: Vec<u8>,
}

impl RowFormer {
    pub fn new(bee: Arc<FormBee>) -> RowFormer {
        let kinds = bee.relation().kinds().to_vec();
        let n = kinds.len();
        RowFormer {
            bee,
            kinds,
            values: Vec::new(),
            spans: vec![(0, 0); n],
            nulls: vec![0; n],
            refs: vec![ByteRef::NULL; n],
            ins: vec![ColumnOut::SKIP; n],
            tuple: Vec::new(),
        }
    }

    /// The stored tuple of `row` (values of the column types, NOT NULL already
    /// checked), or `None` when it must go the generic way (too long to stay inline).
    pub fn form(&mut self, table: &TableDef, row: &[Value], page_size: usize) -> Result<Option<&[u8]>> {
        self.values.clear();
        for (a, (v, c)) in row.iter().zip(&table.columns).enumerate() {
            let start = self.values.len();
            let present = encode_value_into(v, &c.ty, &mut self.values)?;
            self.nulls[a] = u8::from(!present);
            self.spans[a] = (start, self.values.len());
        }
        let max_tuple = external_threshold(page_size);
        if self.values.len() > max_tuple {
            return Ok(None);
        }
        // Slot pointers, now that `values` no longer grows.
        let base = self.values.as_ptr();
        for a in 0..self.kinds.len() {
            let (s, e) = self.spans[a];
            let null = self.nulls[a] != 0;
            let data = if self.kinds[a] == ValueKind::Bytes {
                self.refs[a] = if null {
                    ByteRef::NULL
                } else {
                    // SAFETY: `s..e` is within `values`.
                    ByteRef {
                        ptr: unsafe { base.add(s) },
                        len: e - s,
                    }
                };
                &mut self.refs[a] as *mut ByteRef as *mut u8
            } else if null {
                ZEROS.as_ptr() as *mut u8
            } else {
                // SAFETY: `s` is within `values`.
                unsafe { base.add(s) as *mut u8 }
            };
            self.ins[a] = ColumnOut {
                data,
                nulls: &mut self.nulls[a],
            };
        }
        self.tuple.resize(max_tuple, 0);
        let mut end = 0u64;
        let mut args = FormArgs {
            ins: self.ins.as_ptr(),
            row0: 0,
            n: 1,
            buf: self.tuple.as_mut_ptr(),
            buf_cap: max_tuple as u64,
            ends: &mut end,
            max_tuple: max_tuple as u64,
        };
        // SAFETY: one row of slots per attribute (`ins`), read-only; `buf` holds
        // `buf_cap` bytes and `ends` one entry.
        let formed = unsafe { self.bee.call(&mut args) };
        Ok((formed == 1).then(|| &self.tuple[..end as usize]))
    }
}
