//! WITH RECURSIVE: the RecursiveUnion operator and the scan of its working table,
//! run as PostgreSQL runs them (`nodeRecursiveunion.c`).
//!
//! 1. The base term runs; its rows go out and become the *working table*.
//! 2. While the working table has rows: the recursive term runs, its
//!    [`Node::WorkTableScan`](crate::plan::Node::WorkTableScan) reading the working
//!    table; its rows go out and are collected into the *intermediate table*, which
//!    then replaces the working table.
//!
//! With UNION (not ALL) a row equal to any row output before (NULLs equal) is
//! dropped before it goes out or into the intermediate table, so a recursion over a
//! graph with cycles ends once no new row appears. With UNION ALL nothing is
//! dropped: the recursive term's own WHERE must end it. A recursion that never ends
//! is stopped by the consumer (a LIMIT above stops it after enough rows), by
//! `statement_timeout` or a cancel request (checked at every round and, as
//! everywhere, at every batch), or by `memory_limit` when the working table or the
//! UNION's set of seen rows outgrows it. PostgreSQL has no recursion depth limit
//! either.
//!
//! The working tables of the running recursive unions are kept in
//! [`Exec::work_tables`], keyed by [`WorkTableId`]; a union saves the entry it
//! replaces and puts it back when it ends, so two runs of the same CTE (a CTE
//! referenced twice is planned twice) never see each other's rows.

use std::rc::Rc;

use rustc_hash::FxHashSet;

use super::{Exec, Flow, Out};
use crate::error::{Error, Result};
use crate::plan::{Plan, WorkTableId};
use crate::types::DataType;
use crate::vector::Batch;

/// What one RecursiveUnion holds while it runs.
struct Rounds {
    types: Vec<DataType>,
    distinct: bool,
    /// Keys of every row output so far (UNION only).
    seen: FxHashSet<Vec<u8>>,
    seen_bytes: usize,
    /// The rows of the round running now: the next round's working table.
    next: Vec<Batch>,
    next_bytes: usize,
    /// Bytes of the working table the running round reads.
    working_bytes: usize,
}

impl Rounds {
    /// Runs `node` (the base or the recursive term) and hands on the rows this round
    /// keeps ([`Rounds::take`]).
    fn run(&mut self, ex: &Exec<'_>, node: &Plan, id: usize, out: Out) -> Result<Flow> {
        ex.node(node, id, None, &mut |b| {
            if b.rows() == 0 {
                return Ok(Flow::Continue);
            }
            match self.take(ex, b)? {
                Some(b) => out(b),
                None => Ok(Flow::Continue),
            }
        })
    }

    /// The rows of `b` to output (all, or under UNION the ones never seen), also
    /// kept for the next round.
    fn take(&mut self, ex: &Exec<'_>, b: Batch) -> Result<Option<Batch>> {
        let b = if self.distinct {
            match super::setop::first_seen(
                ex,
                "Recursive Union",
                b,
                &self.types,
                &mut self.seen,
                &mut self.seen_bytes,
            )? {
                Some(b) => b,
                None => return Ok(None),
            }
        } else {
            super::dense(b, &self.types)
        };
        let kept = b.clone().compact();
        self.next_bytes += kept.heap_bytes();
        self.next.push(kept);
        ex.check_mem(
            "Recursive Union",
            self.seen_bytes + self.next_bytes + self.working_bytes,
        )?;
        Ok(Some(b))
    }
}

#[allow(clippy::too_many_arguments)]
pub(super) fn recursive_union(
    ex: &Exec<'_>,
    plan: &Plan,
    id: usize,
    work_table: WorkTableId,
    distinct: bool,
    base: &Plan,
    recursive: &Plan,
    out: Out,
) -> Result<Flow> {
    let base_id = id + 1;
    let recursive_id = base_id + ex.subtree_size(base);
    let mut rounds = Rounds {
        types: plan.types(),
        distinct,
        seen: FxHashSet::default(),
        seen_bytes: 0,
        next: Vec::new(),
        next_bytes: 0,
        working_bytes: 0,
    };
    let f = rounds.run(ex, base, base_id, out)?;
    if f == Flow::Stop {
        return Ok(Flow::Stop);
    }
    let saved = ex.work_tables.borrow_mut().remove(&work_table);
    let result = (|| {
        while !rounds.next.is_empty() {
            ex.ctx.interrupt.check()?;
            let working = Rc::new(std::mem::take(&mut rounds.next));
            rounds.working_bytes = std::mem::take(&mut rounds.next_bytes);
            ex.work_tables.borrow_mut().insert(work_table, working);
            let f = rounds.run(ex, recursive, recursive_id, out)?;
            if f == Flow::Stop {
                return Ok(Flow::Stop);
            }
        }
        Ok(Flow::Continue)
    })();
    let mut tables = ex.work_tables.borrow_mut();
    match saved {
        Some(t) => tables.insert(work_table, t),
        None => tables.remove(&work_table),
    };
    result
}

/// Pushes the working table of the running recursive union `work_table`.
pub(super) fn work_table_scan(
    ex: &Exec<'_>,
    work_table: WorkTableId,
    name: &str,
    out: Out,
) -> Result<Flow> {
    // Held for the scan: the table is replaced only after this round's scans end.
    let working = ex
        .work_tables
        .borrow()
        .get(&work_table)
        .cloned()
        .ok_or_else(|| Error::internal(format!("no working table for \"{name}\"")))?;
    for b in working.iter() {
        if out(b.clone())? == Flow::Stop {
            return Ok(Flow::Stop);
        }
    }
    Ok(Flow::Continue)
}
