//! What every workload shares: the engines taking part, where their databases and the
//! generated data live, progress, notes, and measuring one item on every engine with
//! its answers checked against each other.

use std::path::PathBuf;

use crate::engine::{Cell, Engine, EngineKind, LabResult, Outcome, Peers, Place};
use crate::progress::Progress;
use crate::report::{EngineInfo, Measurement};
use crate::verify;

/// The state of one `beedb bench` run.
pub struct Ctx {
    /// Engines taking part, in report order (peers that are missing are left out).
    pub kinds: Vec<EngineKind>,
    pub peers: Peers,
    /// Databases (`<out>/work`): recreated by each workload.
    pub work: PathBuf,
    /// Generated data (`<out>/data`): kept and reused across runs.
    pub data: PathBuf,
    pub progress: Progress,
    /// Measured runs per item (after one warm-up run).
    pub runs: usize,
    /// Print EXPLAIN ANALYZE of each BeeDB query.
    pub profile: bool,
    pub notes: Vec<String>,
    /// Items whose answers differed or that failed: the run exits with status 1.
    pub failures: Vec<String>,
}

/// One open database of one engine.
pub struct Open {
    pub kind: EngineKind,
    pub engine: Box<dyn Engine>,
}

impl Ctx {
    pub fn note(&mut self, text: impl Into<String>) {
        let text = text.into();
        self.progress.note(&text);
        self.notes.push(text);
    }

    pub fn fail(&mut self, text: impl Into<String>) {
        let text = text.into();
        self.progress.note(&format!("FAILED: {text}"));
        self.failures.push(text);
    }

    pub fn engine_infos(&self) -> Vec<EngineInfo> {
        self.kinds
            .iter()
            .map(|k| {
                let mut version = self.peers.version(*k);
                if *k == EngineKind::Beedb {
                    version.push_str(", bees on");
                } else if *k == EngineKind::BeedbGeneric {
                    version.push_str(", bees off");
                }
                EngineInfo { name: k.name().to_string(), version }
            })
            .collect()
    }

    /// A workload's report on this run's machine and engines.
    pub fn report(
        &self,
        workload: &str,
        parameters: Vec<(String, String)>,
        items: Vec<(String, String)>,
        results: Vec<Measurement>,
    ) -> crate::report::Report {
        crate::report::Report {
            workload: workload.to_string(),
            parameters,
            machine: crate::machine::describe(),
            engines: self.engine_infos(),
            results,
            notes: Vec::new(),
            items,
            profiles: Vec::new(),
            sections: Vec::new(),
        }
    }

    /// A fresh database named `name` for every engine taking part; an engine that
    /// cannot open one is noted and left out of this workload.
    pub fn open_all(&mut self, name: &str) -> Vec<Open> {
        let place = Place { dir: self.work.clone(), name: name.to_string() };
        let mut open = Vec::new();
        for kind in self.kinds.clone() {
            match self.peers.open_fresh(kind, &place) {
                Ok(engine) => open.push(Open { kind, engine }),
                Err(e) => self.fail(format!("{kind}: could not open a database: {e}")),
            }
        }
        open
    }
}

/// How a workload turns one run of a statement into an answer to compare.
pub type Checker<'a> = dyn FnMut(&mut dyn Engine, Outcome) -> LabResult<Vec<Vec<Cell>>> + 'a;

/// Runs `statements[0]` as a warm-up and the rest as measured runs on every engine,
/// checks that every engine's answers equal the first engine's, and returns one
/// measurement (median milliseconds) per engine. `check` turns an outcome into the
/// answer to compare (and may clean up, e.g. drop a result table).
pub fn measure_statements(
    ctx: &mut Ctx,
    engines: &mut [Open],
    item: &str,
    statements: &[String],
    check: &mut Checker<'_>,
) -> Vec<Measurement> {
    measure_statement_runs(ctx, engines, item, statements, 1, check)
}

/// As [`measure_statements`], with each run made of `per_run` consecutive statements
/// (the first `per_run` the warm-up): a run's figure is their mean time. A statement of
/// 10–90 µs timed alone measures the clock and the scheduler more than the engine, so
/// single-row statements are timed in groups (each with its own key).
pub fn measure_statement_runs(
    ctx: &mut Ctx,
    engines: &mut [Open],
    item: &str,
    statements: &[String],
    per_run: usize,
    check: &mut Checker<'_>,
) -> Vec<Measurement> {
    let per_run = per_run.max(1);
    let mut reference: Option<(EngineKind, Vec<Vec<Vec<Cell>>>)> = None;
    let mut out = Vec::new();
    for open in engines.iter_mut() {
        let mut times = Vec::new();
        let mut answers = Vec::new();
        let mut failed = None;
        let mut group_ms = 0.0;
        for (i, sql) in statements.iter().enumerate() {
            let outcome = match open.engine.run(sql, &[]) {
                Ok(o) => o,
                Err(e) => {
                    failed = Some(format!("{item} on {}: {e}\n    statement: {}", open.kind, clip(sql)));
                    break;
                }
            };
            let ms = outcome.elapsed.as_secs_f64() * 1e3;
            match check(open.engine.as_mut(), outcome) {
                Ok(answer) => answers.push(verify::canonical(answer)),
                Err(e) => {
                    failed = Some(format!("{item} on {}: checking the answer: {e}", open.kind));
                    break;
                }
            }
            group_ms += ms;
            if (i + 1) % per_run == 0 {
                if i + 1 > per_run {
                    times.push(group_ms / per_run as f64);
                }
                group_ms = 0.0;
            }
        }
        if let Some(f) = failed {
            ctx.fail(f);
            continue;
        }
        let verified = match &reference {
            None => {
                reference = Some((open.kind, answers));
                true
            }
            Some((ref_kind, expected)) => {
                let mut ok = true;
                for (run, (e, a)) in expected.iter().zip(&answers).enumerate() {
                    if let Some(d) = verify::difference(e, a) {
                        ctx.fail(format!(
                            "{item} on {}: answer differs from {ref_kind}'s (run {run}): {d}",
                            open.kind
                        ));
                        ok = false;
                        break;
                    }
                }
                ok
            }
        };
        out.push(Measurement {
            timed_out: false,
            item: item.to_string(),
            engine: open.kind.name().to_string(),
            value: verify::median(&times),
            unit: "ms".into(),
            verified,
            runs: times,
        });
    }
    out
}

fn clip(sql: &str) -> String {
    if sql.len() > 200 { format!("{}…", &sql[..sql.floor_char_boundary(200)]) } else { sql.to_string() }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::time::Duration;

    use super::*;
    use crate::engine::{Durability, LabError, Param};

    /// An engine that answers every statement with one row, `value`, instantly.
    struct Fixed {
        kind: EngineKind,
        value: i64,
    }

    impl Engine for Fixed {
        fn kind(&self) -> EngineKind {
            self.kind
        }
        fn run(&mut self, _: &str, _: &[Param]) -> LabResult<Outcome> {
            Ok(Outcome { elapsed: Duration::from_micros(1), rows: vec![vec![Cell::Int(self.value)]], affected: 0 })
        }
        fn begin_write(&mut self) -> LabResult<()> {
            Ok(())
        }
        fn set_durability(&mut self, _: Durability) -> LabResult<()> {
            Ok(())
        }
        fn bulk_load(&mut self, _: &str, _: &Path) -> LabResult<u64> {
            Err(LabError::new("no"))
        }
        fn bytes_on_disk(&mut self) -> LabResult<u64> {
            Ok(0)
        }
        fn connect_another(&self) -> LabResult<Box<dyn Engine>> {
            Err(LabError::new("no"))
        }
    }

    fn ctx() -> Ctx {
        Ctx {
            kinds: vec![EngineKind::Beedb, EngineKind::Sqlite],
            peers: Peers { duckdb: None, postgres: None },
            work: PathBuf::new(),
            data: PathBuf::new(),
            progress: Progress::new(true),
            runs: 2,
            profile: false,
            notes: Vec::new(),
            failures: Vec::new(),
        }
    }

    #[test]
    fn a_fast_wrong_answer_fails_the_run() {
        let mut ctx = ctx();
        let mut engines = vec![
            Open { kind: EngineKind::Beedb, engine: Box::new(Fixed { kind: EngineKind::Beedb, value: 1 }) },
            Open { kind: EngineKind::Sqlite, engine: Box::new(Fixed { kind: EngineKind::Sqlite, value: 2 }) },
        ];
        let statements = vec!["SELECT 1".to_string(); 3];
        let m = measure_statements(&mut ctx, &mut engines, "q1", &statements, &mut |_, o| Ok(o.rows));
        assert_eq!(m.len(), 2);
        assert!(m[0].verified);
        assert!(!m[1].verified, "the second engine's answer differs");
        assert_eq!(m[1].runs.len(), 2, "the warm-up is not measured");
        assert_eq!(ctx.failures.len(), 1);
        assert!(ctx.failures[0].contains("answer differs"), "{:?}", ctx.failures);
    }

    #[test]
    fn equal_answers_verify() {
        let mut ctx = ctx();
        let mut engines = vec![
            Open { kind: EngineKind::Beedb, engine: Box::new(Fixed { kind: EngineKind::Beedb, value: 7 }) },
            Open { kind: EngineKind::Sqlite, engine: Box::new(Fixed { kind: EngineKind::Sqlite, value: 7 }) },
        ];
        let m = measure_statements(&mut ctx, &mut engines, "q1", &["x".to_string(), "x".to_string()], &mut |_, o| Ok(o.rows));
        assert!(m.iter().all(|m| m.verified) && ctx.failures.is_empty());
    }
}
