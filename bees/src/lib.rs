//! # beedb-bees — the bee module
//!
//! Bees are routines specialized for one relation or one query, made at run time
//! from *specs* ([`spec`]): a relation's tuple layout (deform and form bees, the
//! paper's GCL and SCL relation bees) or a scan's predicate and projection (scan
//! bees, the paper's EVP query bee fused with deforming). Every bee has a generic
//! twin ([`generic`]) that defines its results; two makers build the fast versions:
//!
//! - [`compiled`]: Cranelift machine code with offsets and constants baked in and the
//!   whole tuple loop generated (200–400 µs to make);
//! - [`instantiated`]: pre-compiled monomorphized Rust kernels chosen and bound to
//!   constants at plan time (≈1 µs to make).
//!
//! [`policy`] chooses the maker per bee; [`cache`] keeps bees, accounts their code
//! memory and retires them. The crate knows no SQL: the engine translates its
//! catalog and expressions into specs and reads results from raw column buffers
//! ([`abi`]).

pub mod abi;
pub mod agg;
pub mod agg_generic;
pub mod agg_instantiated;
pub mod cache;
pub mod compiled;
pub mod generic;
pub mod instantiated;
pub mod join;
mod join_inst;
pub mod order;
pub mod policy;
pub mod spec;

mod bee;

pub use agg::{AggBee, AggSpec, AggTable};
pub use bee::{BeeInfo, BeeKind, FormBee, Maker, ScanBee, SortBee, SortData, SortInput};
pub use join::{JoinBee, JoinKeySpec};
pub use cache::{BeeCache, BeeOwner, BeeRow};
pub use policy::{MakerChoice, Policy};
