//! Join bees on the SQL side: a hash join's key types as a [`JoinKeySpec`] (plan
//! time). The spec follows the packed layout the join's key table gives the build
//! keys ([`crate::exec::key_table`]: a slot per key column, then a NULL bit each, in
//! a `u64` or `u128`), with each probe column's vector type as the part's load:
//! `boolean` → `Bool`, `smallint` → `I16`, `integer` and `date` → `I32`, `bigint`
//! and `timestamp` → `I64`, `real` → `F32`, `double` → `F64`, `numeric(p ≤ 18, s)`
//! → `I64` (its `Dec64` vector) when the build key has the same scale. Keys with a
//! string slot, a generic (unpacked) layout, a probe column wider than its slot, or
//! several parts packed into more than 64 bits get no bee. At run time the table probes through the bee only while it is still
//! packed and the probe vectors are what the spec says
//! ([`crate::exec::key_table::KeyTable::find_bee`]); otherwise the generic path runs.

use std::sync::Arc;

use beedb_bees::{JoinBee, JoinKeySpec};

use crate::types::DataType;

/// The spec of a join bee probing a table of `build` keys with `probe` keys; `None`
/// too for keys of several parts packed into 128 bits: there the instantiated bee
/// was measured slower than the generic probe (`join/int_int_1m` in
/// `bees/README.md`), and a bee that does not pay is not used. (One part in 128
/// bits — a bigint and its NULL bit — measured about even: `join/bigint_1m`.)
pub fn spec(build: &[DataType], probe: &[DataType]) -> Option<JoinKeySpec> {
    crate::exec::key_table::join_key_spec(build, probe).filter(|s| !s.wide || s.parts.len() == 1)
}

/// A join bee in a plan node (compared by identity).
#[derive(Clone)]
pub struct JoinBees(pub Arc<JoinBee>);

impl PartialEq for JoinBees {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for JoinBees {}

impl std::fmt::Debug for JoinBees {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "JoinBees(join #{})", self.0.info().id)
    }
}
