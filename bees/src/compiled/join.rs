//! The compiled maker of join bees (not written yet: `compile_join` reports so, and
//! the cache makes the bee instantiated with that reason).

use super::{CompiledCode, Jit};
use crate::join::{JoinInput, JoinKeySpec, JoinTable};

/// A compiled join probe's entry point.
pub type JoinFn = unsafe extern "C" fn(*const u8);

pub fn compile_join(_jit: &Jit, _spec: &JoinKeySpec) -> Result<(CompiledCode, JoinFn), String> {
    Err("no compiled maker for join bees yet".into())
}

pub(crate) fn call(_f: JoinFn, _spec: &JoinKeySpec, _cols: &[JoinInput<'_>], _n: usize, _table: JoinTable<'_>, _ids: &mut [u32]) {
    unreachable!("no compiled join bee is ever made")
}
