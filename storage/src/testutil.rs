//! Helpers shared by the randomized unit tests.

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

use rand::SeedableRng;
use rand::rngs::StdRng;

/// Runs `f` once per seed with a generator seeded from it and prints the seed if `f`
/// panics, so any failure replays with `BEEDB_SEED=<seed> cargo test <name>`. Setting
/// `BEEDB_SEED` runs only that seed.
pub fn for_seeds(name: &str, seeds: std::ops::Range<u64>, mut f: impl FnMut(u64, &mut StdRng)) {
    let only = std::env::var("BEEDB_SEED")
        .ok()
        .and_then(|s| s.parse::<u64>().ok());
    let seeds: Vec<u64> = match only {
        Some(s) => vec![s],
        None => seeds.collect(),
    };
    for seed in seeds {
        let mut rng = StdRng::seed_from_u64(seed);
        if let Err(panic) = catch_unwind(AssertUnwindSafe(|| f(seed, &mut rng))) {
            eprintln!("{name}: failed with seed {seed} (replay with BEEDB_SEED={seed})");
            resume_unwind(panic);
        }
    }
}
