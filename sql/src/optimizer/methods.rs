//! The physical method switches: PostgreSQL's `enable_seqscan`, `enable_indexscan`,
//! `enable_hashjoin` and `enable_nestloop`. Where the rule switches (`optimizer_…`)
//! turn a rewrite off, these force a physical choice, so the plan the optimizer
//! chose can be timed against each alternative (the POSTGRES study's optimizer
//! tests, `beedb bench optimizer`). As in PostgreSQL a switched-off method is still
//! used where nothing else can run the query (a scan without a usable index reads
//! the heap; a join without equality keys is a nested loop).
//!
//! - `enable_seqscan = off`: a filtered scan with a usable index reads through it
//!   whatever the estimate says (`access`).
//! - `enable_indexscan = off`: no index is read at all: no index access, no ORDER BY
//!   or MIN/MAX through an index, no index nested-loop join.
//! - `enable_hashjoin = off`: an equi-join looks its inner rows up through an index
//!   when one fits its keys (`physical::index_join`, taken whatever it costs), else
//!   is a nested loop whose condition holds the key equalities ([`without_hash`]).
//!   Right and full outer joins keep their hash join (PostgreSQL has no nested loop
//!   for them either).
//! - `enable_nestloop = off`: no index nested-loop join (PostgreSQL counts those as
//!   nested loops too); joins without keys stay nested loops.

use super::{Rules, remap};
use crate::expr::{CmpOp, Expr, ExprKind};
use crate::plan::{JoinKind, JoinMethod, Node, Plan};
use crate::types::DataType;

/// The four switches (all on by default).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Methods {
    pub seqscan: bool,
    pub indexscan: bool,
    pub hashjoin: bool,
    pub nestloop: bool,
}

impl Default for Methods {
    fn default() -> Self {
        Methods { seqscan: true, indexscan: true, hashjoin: true, nestloop: true }
    }
}

/// `rules` as the method switches leave them: without index scans no rule may read
/// an index; without nested loops no join is an index nested loop.
pub fn effective(rules: &Rules) -> Rules {
    let m = rules.methods;
    Rules {
        index_access: rules.index_access && m.indexscan,
        index_order: rules.index_order && m.indexscan,
        index_join: rules.index_join && m.indexscan && m.nestloop,
        ..*rules
    }
}

/// A hash join (inner, left, semi or anti) as a nested loop: its key equalities move
/// into its condition and the keys are cleared, which is what makes the executor
/// pair every row with every row. Key equality and `=` agree (a NULL key matches
/// nothing), so the answer is the same. Anything else comes back as it is.
pub(crate) fn without_hash(mut plan: Plan) -> Plan {
    let Node::Join { left, right, kind, on, left_keys, right_keys, method } = &mut plan.node else {
        return plan;
    };
    if !matches!(method, JoinMethod::Hash { .. })
        || !(matches!(kind, JoinKind::Inner | JoinKind::Left) || kind.is_left_only())
    {
        return plan;
    }
    let (nl, nr) = (left.schema.len(), right.schema.len());
    // Right key columns are numbered within the right input; in `on` they follow the left's.
    let shift: Vec<usize> = (0..nr).map(|c| c + nl).collect();
    let mut parts: Vec<Expr> = left_keys
        .drain(..)
        .zip(right_keys.drain(..))
        .map(|(l, mut r)| {
            remap(&mut r, &shift);
            Expr::new(ExprKind::Compare { op: CmpOp::Eq, left: Box::new(l), right: Box::new(r) }, DataType::Boolean)
        })
        .collect();
    if let Some(existing) = on.take() {
        parts.push(existing);
    }
    *on = super::and_all(parts);
    *method = JoinMethod::NestedLoop;
    plan
}
