//! What a run produced, and how it is shown: the text table, the JSON object, the raw
//! numbers and the charts saved under `--out`.

use serde::Serialize;

/// The machine a run was measured on.
#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    pub cpu: String,
    pub cores: usize,
    pub memory_gib: f64,
    pub os: String,
}

/// An engine as it took part in the run.
#[derive(Debug, Clone, Serialize)]
pub struct EngineInfo {
    pub name: String,
    pub version: String,
}

/// One figure: the median of `runs` for one item on one engine.
#[derive(Debug, Clone, Serialize)]
pub struct Measurement {
    /// What was measured: a query (`q7`), a TP1 configuration
    /// (`tpcb sync=full clients=1`), a table (`lineitem`).
    pub item: String,
    pub engine: String,
    /// The median of `runs`.
    pub value: f64,
    /// `ms` (lower is better), `s` (lower), `tps` (higher), `bytes` (lower).
    pub unit: String,
    /// The engine's answer equalled every other engine's (or the known answer).
    pub verified: bool,
    /// Every measured run, in order (after the warm-up).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<f64>,
}

/// Everything one `beedb bench WORKLOAD` produced.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub workload: String,
    /// The workload's parameters as given (`n=10000`, `runs=5`, …).
    pub parameters: Vec<(String, String)>,
    pub machine: Machine,
    pub engines: Vec<EngineInfo>,
    pub results: Vec<Measurement>,
    /// What the reader should know: peers missing, deviations, failures.
    pub notes: Vec<String>,
}

/// Whether a larger value of `unit` is better.
pub fn higher_is_better(unit: &str) -> bool {
    unit == "tps"
}
