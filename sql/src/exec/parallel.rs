//! Morsel-driven parallelism (Leis et al., SIGMOD 2014): several threads drive one
//! pipeline ([`crate::plan::pipeline`]) at once, each over the heap pages it takes
//! next from a shared [`Morsels`] dispenser, each into its own state of the operator
//! the pipeline feeds (a hash aggregate's groups: `agg.rs` merges them at the end).
//!
//! What the threads share is only read: the plan, the transaction's snapshot, the
//! statement's parameters, the bees (made once, before the threads start), and the
//! hash tables of the joins along the pipeline, built once by the calling thread
//! before the others start ([`join::build`]). Each thread has its own evaluator
//! state, batches and subquery cache. The calling thread is one of the workers.
//!
//! An error in any thread stops the others at their next page and is returned; the
//! memory limit is divided among the threads, so their states together stay within
//! it.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use rustc_hash::FxHashMap;

use beedb_storage::heap::{HeapFile, HeapPages};
use beedb_storage::{PageRead, PageReadGuard};

use super::join::{self, Build, JoinSpec};
use super::{Exec, ExecContext, Flow, StatementState};
use crate::error::{Error, Result};
use crate::plan::Node;
use crate::plan::pipeline::Pipeline;
use crate::types::Value;
use crate::vector::Batch;

/// Stack of each worker thread: as deep a plan as the calling thread's recursion
/// guard allows before it moves to a new segment (`crate::stack`).
const WORKER_STACK: usize = 8 * 1024 * 1024;

/// The pages of a heap, handed out one at a time to whichever thread asks next.
pub(super) struct Morsels<'r> {
    pages: Mutex<HeapPages<'r, dyn PageRead + Sync + 'r>>,
    /// Set when a thread failed: the others stop at their next page.
    failed: AtomicBool,
    /// Tuples the threads decoded, for the relation's size statistics.
    tuples: AtomicU64,
}

impl<'r> Morsels<'r> {
    fn new(heap: HeapFile, reader: &'r (dyn PageRead + Sync)) -> Morsels<'r> {
        Morsels { pages: Mutex::new(heap.pages(reader)), failed: AtomicBool::new(false), tuples: AtomicU64::new(0) }
    }

}

/// The pages a worker's scan reads: [`Morsels`] behind a trait object, so that
/// [`Worker`] (and so the executor holding it) stays covariant in its lifetime.
pub(super) trait PageSource: Sync {
    /// The next page to scan, pinned and share-latched; `None` at the end or once a
    /// thread failed.
    fn next(&self) -> Option<Result<PageReadGuard>>;
    /// Counts tuples a thread decoded (the relation's size statistics).
    fn add_tuples(&self, n: u64);
}

impl PageSource for Morsels<'_> {
    fn add_tuples(&self, n: u64) {
        self.tuples.fetch_add(n, Ordering::Relaxed);
    }

    fn next(&self) -> Option<Result<PageReadGuard>> {
        if self.failed.load(Ordering::Relaxed) {
            return None;
        }
        // A poisoned lock means a thread panicked while advancing: stop.
        let mut pages = self.pages.lock().ok()?;
        pages.next().map(|r| r.map_err(Error::from))
    }
}

/// What a worker's executor needs to run its copy of a pipeline.
pub(crate) struct Worker<'a> {
    /// The pre-order id of the scan whose pages come from `morsels`.
    pub(super) scan_id: usize,
    pub(super) morsels: &'a (dyn PageSource + 'a),
    /// The hash tables of the pipeline's joins, by join node id.
    builds: &'a FxHashMap<usize, Build>,
}

impl Exec<'_> {
    /// The build of join node `id` made before this worker started, if this is one.
    pub(super) fn prebuilt(&self, id: usize) -> Option<&Build> {
        self.worker.and_then(|w| w.builds.get(&id))
    }

    /// The shared pages for scan node `id`, when this executor is a worker of a
    /// pipeline that scan drives.
    pub(super) fn morsels_for(&self, id: usize) -> Option<&dyn PageSource> {
        self.worker.filter(|w| w.scan_id == id).map(|w| w.morsels)
    }
}

/// Runs pipeline `p` (rooted at node `root`, pre-order id `root_id`) on `threads`
/// threads, each feeding the batches it produces to `each` with its own state made by
/// `make`; returns the states, the calling thread's first.
pub(super) fn run_pipeline<S: Send>(
    ex: &Exec<'_>,
    p: &Pipeline<'_>,
    root: &crate::plan::Plan,
    root_id: usize,
    threads: usize,
    make: &(dyn Fn() -> Result<S> + Sync),
    each: &(dyn Fn(&Exec<'_>, &mut S, Batch) -> Result<()> + Sync),
) -> Result<Vec<S>> {
    let Node::TableScan { table, bees, .. } = &p.scan.node else {
        return Err(Error::internal("a parallel pipeline not driven by a table scan"));
    };
    // The joins' right inputs, once, here.
    let mut builds = FxHashMap::default();
    for &(id, join_plan) in &p.builds {
        let spec = JoinSpec::of(join_plan).ok_or_else(|| Error::internal("a pipeline build that is not a join"))?;
        builds.insert(id, join::build(ex, &spec, id)?);
    }
    let ctx = ex.ctx;
    let morsels = Morsels::new(HeapFile::open(table.heap), ctx.reader);
    let worker = Worker { scan_id: p.scan_id, morsels: &morsels, builds: &builds };
    // What every thread's context is made of: only what threads may share (the
    // sequences never reach a parallel pipeline: `Expr::has_side_effects`; the
    // clock does, read here once).
    let (reader, params, subqueries, profile, interrupt) = (ctx.reader, ex.params, ctx.subqueries, ex.profile, ctx.interrupt);
    let memory_limit = ctx.memory_limit / threads;
    let clock = match ctx.sequences {
        Some(s) => match s.call(crate::expr::Func::Now, &[])? {
            Value::Timestamp(t) => Some(WorkerClock(t)),
            _ => None,
        },
        None => None,
    };
    let drive = || -> Result<S> {
        let sequences = clock.as_ref().map(|c| c as &dyn super::Sequences);
        let ctx = ExecContext { reader, params, subqueries, memory_limit, profile, interrupt, sequences };
        // A pipeline holds no CTE scan (`plan/pipeline.rs`): its CTE map stays empty.
        let shared = StatementState::default();
        let wex = shared.exec(&ctx, profile, Some(&worker));
        let mut state = make()?;
        let r = wex.node(root, root_id, None, &mut |b| {
            each(&wex, &mut state, b)?;
            Ok(Flow::Continue)
        });
        if r.is_err() {
            morsels.failed.store(true, Ordering::Relaxed);
        }
        r.map(|_| state)
    };
    let results: Vec<Result<S>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (1..threads)
            .map(|_| {
                std::thread::Builder::new()
                    .name("beedb-worker".into())
                    .stack_size(WORKER_STACK)
                    .spawn_scoped(scope, &drive)
            })
            .collect();
        let mut results = vec![drive()];
        for h in handles {
            results.push(match h {
                Ok(h) => h.join().unwrap_or_else(|_| Err(Error::internal("a worker thread panicked"))),
                // No thread to be had: the others did its share.
                Err(_) => continue,
            });
        }
        results
    });
    if let Some(b) = bees {
        b.0.cache.note_relation_size(table.id as u64, morsels.tuples.load(Ordering::Relaxed));
    }
    results.into_iter().collect()
}

/// What a parallel pipeline's threads see of the session's functions: the clock
/// (`now()`, `current_date`: the transaction's start, read once by the calling
/// thread). Sequence functions never reach a worker (`Expr::has_side_effects`).
struct WorkerClock(crate::types::Timestamp);

impl super::Sequences for WorkerClock {
    fn call(&self, func: crate::expr::Func, _args: &[Value]) -> Result<Value> {
        match func {
            crate::expr::Func::Now => Ok(Value::Timestamp(self.0)),
            crate::expr::Func::CurrentDate => Ok(Value::Date(self.0.date())),
            _ => Err(Error::internal("a sequence function in a parallel pipeline")),
        }
    }
}
