//! Deep statements on a guarded stack.
//!
//! A statement's shape is the user's: 2,500 joined tables, 1,800 UNION arms or 2,500
//! CTEs make trees that deep, and every pass over them (binder, planner, executor build
//! and the push of each batch up the operator tree, the evaluator) recurses once per
//! level. Each recursive step calls [`guarded`]: when less than [`RED_ZONE`] bytes of
//! stack are left it continues on a fresh [`SEGMENT`]-byte segment (`stacker`), so the
//! depth is bounded by memory, never by the caller's thread stack. The parser's own
//! limit (`parser::MAX_NESTING`) and the binder's view depth limit are what refuse
//! (SQLSTATE 54001), before a pass could use unbounded memory.

/// Headroom below which a recursive step moves to a new stack segment: larger than
/// the deepest non-recursive call chain below one step (a bee build, a hash join's
/// build phase, the evaluator's kernels).
pub const RED_ZONE: usize = 256 * 1024;
/// Size of each new stack segment.
pub const SEGMENT: usize = 4 * 1024 * 1024;

/// Runs `f`, first moving to a new stack segment if this one is nearly used up.
#[inline]
pub fn guarded<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(RED_ZONE, SEGMENT, f)
}
