//! Per-row LATERAL (`Node::Apply`, a dependent join): for each input row the right
//! plan runs with the row's parameter values, and its rows are appended to the input
//! row (under LEFT, a row without any gets NULLs). Rows of one batch with equal
//! parameter values run the right plan once; its rows are held (counted against
//! `memory_limit`) while that batch is joined.

use std::cell::RefCell;

use rustc_hash::FxHashMap;

use super::{Exec, Flow, Out, make_batch};
use crate::error::Result;
use crate::expr::Expr;
use crate::plan::Plan;
use crate::types::Value;
use crate::vector::{BATCH_SIZE, Batch, Vector};

#[allow(clippy::too_many_arguments)]
pub(super) fn apply(
    ex: &Exec<'_>,
    plan: &Plan,
    id: usize,
    input: &Plan,
    right: &Plan,
    params: &[Expr],
    param_base: usize,
    left_join: bool,
    out: Out,
) -> Result<Flow> {
    let types = plan.types();
    let nleft = input.schema.len();
    let right_types = right.types();
    let right_id = id + 1 + ex.subtree_size(input);
    let fresh = |types: &[crate::types::DataType]| -> Vec<Vector> { types.iter().map(|t| Vector::new(*t, BATCH_SIZE)).collect() };
    let mut cols = fresh(&types);
    let mut n = 0usize;
    let flow = ex.node(input, id + 1, None, &mut |b: Batch| {
        let b = b.compact();
        let rows = b.rows();
        if rows == 0 {
            return Ok(Flow::Continue);
        }
        let pcols: Vec<Vector> = params.iter().map(|e| ex.eval(e, &b)).collect::<Result<_>>()?;
        // The right side's rows per distinct parameter values of this batch.
        let mut seen: FxHashMap<String, usize> = FxHashMap::default();
        let mut results: Vec<(Vec<Vector>, usize)> = Vec::new();
        let mut bytes = 0usize;
        for k in 0..rows {
            let vals: Vec<Value> = pcols.iter().map(|c| c.value(if c.len() == 1 { 0 } else { k })).collect();
            let key = format!("{vals:?}");
            let r = match seen.get(&key) {
                Some(&r) => r,
                None => {
                    let mut all: Vec<Value> = ex.ctx.params.to_vec();
                    all.truncate(param_base.min(all.len()));
                    all.resize(param_base, Value::Null);
                    all.extend(vals);
                    let sub = Exec {
                        ctx: ex.ctx,
                        params: &all,
                        cache: ex.cache,
                        work_tables: ex.work_tables,
                        ctes: ex.ctes,
                        profile: ex.profile,
                        worker: None,
                        key_filters: RefCell::new(Vec::new()),
                        subtree_sizes: RefCell::new(FxHashMap::default()),
                    };
                    let mut rcols = fresh(&right_types);
                    let mut m = 0usize;
                    sub.node(right, right_id, None, &mut |rb: Batch| {
                        for j in 0..rb.rows() {
                            let p = rb.position(j);
                            for (c, v) in rcols.iter_mut().zip(&rb.columns) {
                                c.push_from(v, p);
                            }
                            m += 1;
                        }
                        // The keys finished before this one, plus this key's rows so far.
                        ex.check_mem("LATERAL rows", bytes + rcols.iter().map(|c| c.heap_bytes()).sum::<usize>())?;
                        Ok(Flow::Continue)
                    })?;
                    bytes += rcols.iter().map(|c| c.heap_bytes()).sum::<usize>();
                    results.push((rcols, m));
                    seen.insert(key, results.len() - 1);
                    results.len() - 1
                }
            };
            let (rcols, m) = &results[r];
            let emit = |cols: &mut Vec<Vector>, j: Option<usize>| {
                for (c, v) in cols.iter_mut().zip(&b.columns) {
                    c.push_from(v, k);
                }
                for (c, rc) in cols[nleft..].iter_mut().zip(rcols) {
                    match j {
                        Some(j) => c.push_from(rc, j),
                        None => c.push_null(),
                    }
                }
            };
            let matches: Vec<Option<usize>> = if *m == 0 && left_join { vec![None] } else { (0..*m).map(Some).collect() };
            for j in matches {
                emit(&mut cols, j);
                n += 1;
                if n == BATCH_SIZE {
                    let full = std::mem::replace(&mut cols, fresh(&types));
                    n = 0;
                    if out(make_batch(full, BATCH_SIZE))? == Flow::Stop {
                        return Ok(Flow::Stop);
                    }
                }
            }
        }
        Ok(Flow::Continue)
    })?;
    if flow == Flow::Stop || n == 0 {
        return Ok(flow);
    }
    out(make_batch(cols, n))
}
