//! Sort, and top-N when a LIMIT sits directly on the sort: the buffer is cut back to
//! the first N rows whenever it holds twice that many.

use std::cmp::Ordering;

use super::keys::cmp_sort;
use super::{Exec, Flow, Out, make_batch};
use crate::error::Result;
use crate::plan::{Plan, SortKey};
use crate::vector::{BATCH_SIZE, Vector};

struct Buffer {
    cols: Vec<Vector>,
    keys: Vec<Vector>,
    len: usize,
}

impl Buffer {
    fn order(&self, sort_keys: &[SortKey]) -> Vec<u32> {
        let mut perm: Vec<u32> = (0..self.len as u32).collect();
        perm.sort_by(|&a, &b| {
            for (k, sk) in self.keys.iter().zip(sort_keys) {
                let o = cmp_sort(k, a as usize, k, b as usize, sk.desc, sk.nulls_first);
                if o != Ordering::Equal {
                    return o;
                }
            }
            Ordering::Equal
        });
        perm
    }

    /// Keeps only the first `n` rows in sort order.
    fn truncate_sorted(&mut self, sort_keys: &[SortKey], n: usize) {
        let mut perm = self.order(sort_keys);
        perm.truncate(n);
        self.cols = self.cols.iter().map(|c| c.gather(&perm)).collect();
        self.keys = self.keys.iter().map(|c| c.gather(&perm)).collect();
        self.len = perm.len();
    }

    fn bytes(&self) -> usize {
        self.cols
            .iter()
            .chain(&self.keys)
            .map(|c| c.heap_bytes())
            .sum::<usize>()
            + self.len * 4
    }
}

pub(super) fn sort(
    ex: &Exec<'_>,
    id: usize,
    input: &Plan,
    sort_keys: &[SortKey],
    top_n: Option<usize>,
    out: Out,
) -> Result<Flow> {
    let types = input.types();
    let mut buf = Buffer {
        cols: types.iter().map(|t| Vector::new(*t, 0)).collect(),
        keys: sort_keys
            .iter()
            .map(|k| Vector::new(k.expr.ty, 0))
            .collect(),
        len: 0,
    };
    if top_n == Some(0) {
        return Ok(Flow::Continue);
    }
    ex.node(input, id + 1, None, &mut |b| {
        let n = b.rows();
        if n == 0 {
            return Ok(Flow::Continue);
        }
        let kv = sort_keys
            .iter()
            .map(|k| ex.eval(&k.expr, &b))
            .collect::<Result<Vec<_>>>()?;
        let b = super::dense(b, &types);
        for (c, v) in buf.cols.iter_mut().zip(&b.columns) {
            c.extend(v);
        }
        for (c, v) in buf.keys.iter_mut().zip(&kv) {
            c.extend(v);
        }
        buf.len += n;
        if let Some(limit) = top_n
            && buf.len >= limit.saturating_mul(2).max(BATCH_SIZE)
        {
            buf.truncate_sorted(sort_keys, limit);
        }
        ex.check_mem("Sort", buf.bytes())?;
        Ok(Flow::Continue)
    })?;
    let mut perm = buf.order(sort_keys);
    if let Some(limit) = top_n {
        perm.truncate(limit);
    }
    for chunk in perm.chunks(BATCH_SIZE) {
        let cols = buf.cols.iter().map(|c| c.gather(chunk)).collect();
        if out(make_batch(cols, chunk.len()))? == Flow::Stop {
            return Ok(Flow::Stop);
        }
    }
    Ok(Flow::Continue)
}
