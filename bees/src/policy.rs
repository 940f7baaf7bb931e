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
        // Per row and sort key (`outputs`): a kernel pass per key replaced by one
        // straight-line row encoding.
        BeeKind::Sort => 1.0 * outputs as f64,
        // The compiled join probe measured neither consistently faster nor slower
        // than the instantiated one (criterion `join/`, 28 Nov: 0.93× to 1.56× of
        // its time, within the noise on most cases): `auto` instantiates.
        BeeKind::Join => 0.0,
        // Measured (bees/README.md, `makers_cost` in tests/agg_vs_generic.rs): the
        // compiled aggregate bee is no faster than the instantiated one (Q1-like
        // 23.1 vs 22.2 ns/row, an int8 key with 8 groups 11.8 vs 9.9, 100,000
        // groups 43.1 vs 37.2), so it never pays for its compile: `auto`
        // instantiates; `bee_maker = compiled` still compiles.
        BeeKind::Aggregate => 0.0,
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
        let maker = self.maker(kind, expected_tuples, outputs, pred_nodes);
        let why = match self.choice {
            _ if !self.compiler_available => "compiler unavailable".into(),
            MakerChoice::Compiled => "bee_maker = compiled".into(),
            MakerChoice::Instantiated => "bee_maker = instantiated".into(),
            MakerChoice::Auto => format!(
                "{expected_tuples} tuples × {:.1} ns {} 2 × {:.0} µs compile",
                saving_ns_per_tuple(kind, outputs, pred_nodes),
                if maker == Maker::Compiled { "≥" } else { "<" },
                self.compile_ns / 1000.0
            ),
        };
        (maker, why)
    }

    /// The maker [`Policy::choose`] picks, without its reason (for the checks made on
    /// every statement that reads a relation).
    pub fn maker(&self, kind: BeeKind, expected_tuples: u64, outputs: usize, pred_nodes: usize) -> Maker {
        if !self.compiler_available {
            return Maker::Instantiated;
        }
        match self.choice {
            MakerChoice::Compiled => Maker::Compiled,
            MakerChoice::Instantiated => Maker::Instantiated,
            MakerChoice::Auto => {
                let saving = expected_tuples as f64 * saving_ns_per_tuple(kind, outputs, pred_nodes);
                if saving >= 2.0 * self.compile_ns {
                    Maker::Compiled
                } else {
                    Maker::Instantiated
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auto(compile_ns: f64) -> Policy {
        Policy {
            choice: MakerChoice::Auto,
            compile_ns,
            compiler_available: true,
        }
    }

    #[test]
    fn auto_compiles_when_the_tuples_repay_the_compile_twice() {
        let p = auto(300_000.0);
        // 9 outputs: 7.2 ns a tuple; 2 × 300 µs = 600 µs ⇒ 83,334 tuples.
        assert_eq!(p.choose(BeeKind::Deform, 83_000, 9, 0).0, Maker::Instantiated);
        assert_eq!(p.choose(BeeKind::Deform, 84_000, 9, 0).0, Maker::Compiled);
        // Predicate nodes count too.
        assert_eq!(p.choose(BeeKind::Scan, 40_000, 1, 0).0, Maker::Instantiated);
        assert_eq!(p.choose(BeeKind::Scan, 40_000, 4, 12).0, Maker::Compiled);
        // Nothing known: instantiate.
        assert_eq!(p.choose(BeeKind::Form, 0, 16, 0).0, Maker::Instantiated);
        let (_, why) = p.choose(BeeKind::Deform, 84_000, 9, 0);
        assert!(why.contains("84000 tuples") && why.contains('≥'), "{why}");
    }

    #[test]
    fn settings_override_and_a_missing_compiler_wins() {
        let mut p = auto(300_000.0);
        p.choice = MakerChoice::Compiled;
        assert_eq!(p.choose(BeeKind::Scan, 0, 1, 1).0, Maker::Compiled);
        p.choice = MakerChoice::Instantiated;
        assert_eq!(p.choose(BeeKind::Scan, u64::MAX, 100, 100).0, Maker::Instantiated);
        p.choice = MakerChoice::Compiled;
        p.compiler_available = false;
        let (m, why) = p.choose(BeeKind::Scan, u64::MAX, 1, 1);
        assert_eq!((m, why.as_str()), (Maker::Instantiated, "compiler unavailable"));
    }

    #[test]
    fn maker_choice_parses_and_prints() {
        for c in [MakerChoice::Auto, MakerChoice::Compiled, MakerChoice::Instantiated] {
            assert_eq!(c.to_string().parse::<MakerChoice>(), Ok(c));
        }
        assert_eq!("COMPILED".parse::<MakerChoice>(), Ok(MakerChoice::Compiled));
        assert!("fast".parse::<MakerChoice>().is_err());
    }
}
