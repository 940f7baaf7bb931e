//! Which maker makes a bee.
//!
//! Instantiating costs about a microsecond; compiling costs 200–400 µs (measured by
//! this cache as it goes: [`Policy::compile_ns`] is the running mean of the compiles
//! it has done, seeded with [`DEFAULT_COMPILE_NS`]). A compiled bee saves a few
//! nanoseconds per tuple over an instantiated one, more the more columns and
//! predicate nodes it covers ([`saving_ns_per_tuple`]). Under
//! [`MakerChoice::Auto`] the policy compiles when the expected tuples would repay
//! the compile twice over:
//!
//! ```text
//! compiled  ⇔  expected_tuples × saving_ns_per_tuple ≥ 2 × compile_ns
//! ```
//!
//! The factor 2 leaves room for a wrong estimate: a bee compiled for nothing costs
//! a compile, while one left instantiated costs the difference on every tuple.
//! `SET bee_maker = compiled | instantiated` overrides the choice.

use std::fmt;
use std::str::FromStr;

use crate::bee::{BeeKind, Maker};

/// Compile cost assumed before the cache has measured one (ns).
pub const DEFAULT_COMPILE_NS: f64 = 300_000.0;

/// The `bee_maker` setting.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum MakerChoice {
    /// Choose per bee from expected tuples and compile cost.
    #[default]
    Auto,
    Compiled,
    Instantiated,
}

impl fmt::Display for MakerChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MakerChoice::Auto => "auto",
            MakerChoice::Compiled => "compiled",
            MakerChoice::Instantiated => "instantiated",
        })
    }
}

impl FromStr for MakerChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "auto" => Ok(MakerChoice::Auto),
            "compiled" => Ok(MakerChoice::Compiled),
            "instantiated" => Ok(MakerChoice::Instantiated),
            _ => Err(format!(
                "invalid value for bee_maker: \"{s}\" (expected auto, compiled or instantiated)"
            )),
        }
    }
}

/// Estimated nanoseconds per tuple a compiled bee saves over an instantiated one:
/// per output column (a function-pointer call and a generic copy replaced by one
/// load and store) and per predicate node (a `dyn` call replaced by one compare).
/// Calibrated from `cargo bench -p beedb-bees` (see `bees/README.md`).
pub fn saving_ns_per_tuple(kind: BeeKind, outputs: usize, pred_nodes: usize) -> f64 {
    match kind {
        BeeKind::Deform => 0.8 * outputs as f64,
        BeeKind::Scan => 0.8 * outputs as f64 + 1.5 * pred_nodes as f64,
        BeeKind::Form => 1.0 * outputs as f64,
    }
}

/// A snapshot of the policy's inputs.
#[derive(Clone, Copy, Debug)]
pub struct Policy {
    pub choice: MakerChoice,
    /// Mean measured compile time (ns).
    pub compile_ns: f64,
    /// Whether the compiled maker works on this machine.
    pub compiler_available: bool,
}

impl Policy {
    /// The maker for a bee of `kind` covering `outputs` columns and `pred_nodes`
    /// predicate nodes over about `expected_tuples`, and why.
    pub fn choose(
        &self,
        kind: BeeKind,
        expected_tuples: u64,
        outputs: usize,
        pred_nodes: usize,
    ) -> (Maker, String) {
        if !self.compiler_available {
            return (Maker::Instantiated, "compiler unavailable".into());
        }
        match self.choice {
            MakerChoice::Compiled => (Maker::Compiled, "bee_maker = compiled".into()),
            MakerChoice::Instantiated => (Maker::Instantiated, "bee_maker = instantiated".into()),
            MakerChoice::Auto => {
                let saving = expected_tuples as f64 * saving_ns_per_tuple(kind, outputs, pred_nodes);
                let cost = 2.0 * self.compile_ns;
                let why = format!(
                    "{expected_tuples} tuples × {:.1} ns {} 2 × {:.0} µs compile",
                    saving_ns_per_tuple(kind, outputs, pred_nodes),
                    if saving >= cost { "≥" } else { "<" },
                    self.compile_ns / 1000.0
                );
                if saving >= cost {
                    (Maker::Compiled, why)
                } else {
                    (Maker::Instantiated, why)
                }
            }
        }
    }
}
