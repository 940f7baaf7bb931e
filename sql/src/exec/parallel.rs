//! Morsel-driven parallelism (Leis et al., SIGMOD 2014): several threads drive one
//! pipeline ([`crate::plan::pipeline`]) at once, each over the heap pages it takes
//! next, a run at a time, from a shared [`Morsels`] dispenser, each into its own state of the operator
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

use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use rustc_hash::FxHashMap;

use beedb_storage::heap::{HeapFile, HeapPages};
use beedb_storage::{PageRead, PageReadGuard};

use super::join::{self, Build, JoinSpec, Marks};
use super::key_filter::ScanKeyFilter;
use super::{Exec, ExecContext, Flow, StatementState};
use crate::error::{Error, Result};
use crate::plan::Node;
use crate::plan::pipeline::Pipeline;
use crate::types::Value;
use crate::vector::Batch;

/// Stack of each worker thread: as deep a plan as the calling thread's recursion
/// guard allows before it moves to a new segment (`crate::stack`).
const WORKER_STACK: usize = 8 * 1024 * 1024;

/// Pages a thread takes from the [`Morsels`] dispenser at a time: a run of pages
/// that follow each other in the heap's chain. One page at a time, the threads took
/// turns: every page cost a lock of the dispenser, and its lookup in the pool (the
/// WAL index's and the pool shard's locks) bounced between the cores, as did the
/// page the dispenser had just prefetched, which the other thread then read. A run
/// keeps the locks on one core for its pages, and the thread prefetches each next
/// page of its own run ([`ThreadPages`]).
const RUN_PAGES: usize = 16;

/// The pages of a heap, handed out in runs of [`RUN_PAGES`] to whichever thread asks next.
pub(super) struct Morsels<'r> {
    pages: Mutex<HeapPages<'r, dyn PageRead + Sync + 'r>>,
    /// Set when a thread failed, or its consumer needs no more rows (a semi join
    /// whose held rows have all matched): the others stop at their next page.
    stop: AtomicBool,
    /// Tuples the threads decoded, for the relation's size statistics.
    tuples: AtomicU64,
}

impl<'r> Morsels<'r> {
    fn new(heap: HeapFile, reader: &'r (dyn PageRead + Sync)) -> Morsels<'r> {
        Morsels {
            pages: Mutex::new(heap.pages(reader).without_prefetch()),
            stop: AtomicBool::new(false),
            tuples: AtomicU64::new(0),
        }
    }

    /// Moves the next run of pages, pinned and share-latched, into `run`; false at
    /// the end of the heap or once a thread stopped.
    fn take_run(&self, run: &mut VecDeque<PageReadGuard>) -> Result<bool> {
        // Waits for a free frame, below: at most this many times, `POOL_WAIT` apart.
        const POOL_WAITS: u32 = 5_000;
        const POOL_WAIT: std::time::Duration = std::time::Duration::from_micros(200);
        let mut waits = 0;
        loop {
            if self.stop.load(Ordering::Relaxed) {
                return Ok(false);
            }
            // A poisoned lock means a thread panicked while advancing: stop.
            let Ok(mut pages) = self.pages.lock() else { return Ok(false) };
            let mut exhausted = false;
            for _ in 0..RUN_PAGES {
                match pages.next() {
                    Some(Ok(g)) => run.push_back(g),
                    // The run's pages are pinned: in a buffer pool too small to pin
                    // them all, the run ends at the page that found no free frame (the
                    // walk resumes there).
                    Some(Err(beedb_storage::Error::PoolExhausted { .. })) if !run.is_empty() => break,
                    // With no page held, the frames are pinned by the other threads'
                    // runs (a small pool's shard holds 4 frames at 64 frames, and
                    // consecutive pages share a shard): they release them as they scan,
                    // so wait for one (`tests/pool_runs.rs`). Past the waits, the pool
                    // is too small: the error.
                    Some(Err(beedb_storage::Error::PoolExhausted { .. })) if waits < POOL_WAITS => {
                        exhausted = true;
                        break;
                    }
                    Some(Err(e)) => return Err(e.into()),
                    None => break,
                }
            }
            if !exhausted {
                return Ok(!run.is_empty());
            }
            drop(pages);
            waits += 1;
            std::thread::sleep(POOL_WAIT);
        }
    }
}

/// The pages a worker's scan reads: its thread's run of [`Morsels`], behind a trait
/// object, so that [`Worker`] (and so the executor holding it) stays covariant in
/// its lifetime.
pub(super) trait PageSource {
    /// The next page to scan, pinned and share-latched; `None` at the end or once a
    /// thread failed.
    fn next(&self) -> Option<Result<PageReadGuard>>;
    /// Counts tuples a thread decoded (the relation's size statistics).
    fn add_tuples(&self, n: u64);
}

/// One thread's pages: the run it took last from the shared dispenser.
struct ThreadPages<'a, 'r> {
    morsels: &'a Morsels<'r>,
    run: RefCell<VecDeque<PageReadGuard>>,
}

impl PageSource for ThreadPages<'_, '_> {
    fn add_tuples(&self, n: u64) {
        self.morsels.tuples.fetch_add(n, Ordering::Relaxed);
    }

    fn next(&self) -> Option<Result<PageReadGuard>> {
        let mut run = self.run.borrow_mut();
        if self.morsels.stop.load(Ordering::Relaxed) {
            run.clear();
            return None;
        }
        if run.is_empty() {
            match self.morsels.take_run(&mut run) {
                Ok(true) => {}
                Ok(false) => return None,
                Err(e) => return Some(Err(e)),
            }
        }
        let g = run.pop_front()?;
        // The caller works on this page for a while: have the next one loaded meanwhile.
        if let Some(next) = run.front() {
            beedb_storage::heap::prefetch_held(next);
        }
        Some(Ok(g))
    }
}

/// What a worker's executor needs to run its copy of a pipeline.
pub(crate) struct Worker<'a> {
    /// The pre-order id of the scan whose pages come from `morsels`.
    pub(super) scan_id: usize,
    pub(super) morsels: &'a (dyn PageSource + 'a),
    /// The hash tables of the pipeline's joins, by join node id.
    builds: &'a FxHashMap<usize, Build>,
    /// The build rows the threads matched, of the joins along the pipeline that
    /// output their unmatched build rows (right and full joins), by join node id.
    marks: &'a FxHashMap<usize, Marks>,
    /// Whether this is the calling thread's last pass, after every thread finished:
    /// its scan has no page left, and those joins output the build rows no thread
    /// matched.
    last_pass: bool,
}

impl Exec<'_> {
    /// The build of join node `id` made before this worker started, if this is one.
    pub(super) fn prebuilt(&self, id: usize) -> Option<&Build> {
        self.worker.and_then(|w| w.builds.get(&id))
    }

    /// The shared marks of join node `id`'s build rows (right and full joins along
    /// a parallel pipeline), and whether this is the last pass.
    pub(super) fn build_marks(&self, id: usize) -> Option<(&Marks, bool)> {
        self.worker.and_then(|w| w.marks.get(&id).map(|m| (m, w.last_pass)))
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
    run_pipeline_with(ex, p, root, root_id, threads, &[], make, &|ex, s, b| each(ex, s, b).map(|()| Flow::Continue))
}

/// [`run_pipeline`] whose consumer can stop early: when `each` returns
/// [`Flow::Stop`] in one thread, the others stop at their next page. The scans of the
/// pipeline test `key_filters` too (the held keys of a join above it that the
/// threads probe, `join::left_build`).
#[allow(clippy::too_many_arguments)]
pub(super) fn run_pipeline_with<S: Send>(
    ex: &Exec<'_>,
    p: &Pipeline<'_>,
    root: &crate::plan::Plan,
    root_id: usize,
    threads: usize,
    key_filters: &[ScanKeyFilter],
    make: &(dyn Fn() -> Result<S> + Sync),
    each: &(dyn Fn(&Exec<'_>, &mut S, Batch) -> Result<Flow> + Sync),
) -> Result<Vec<S>> {
    let Node::TableScan { table, bees, .. } = &p.scan.node else {
        return Err(Error::internal("a parallel pipeline not driven by a table scan"));
    };
    // The joins' right inputs, once, here, outermost first: the order the serial
    // path builds them in, each before it runs its left input.
    let mut builds = FxHashMap::default();
    for &(id, join_plan) in &p.builds {
        let spec = JoinSpec::of(join_plan).ok_or_else(|| Error::internal("a pipeline build that is not a join"))?;
        let build = join::build(ex, &spec, id)?;
        // An inner, right or semi join with an empty right side gives no rows, and
        // the serial join then never runs its left input (`join::probe`), so neither
        // the joins below it build their right sides. Building them anyway made 2
        // threads evaluate expressions 1 thread never reaches: a division by zero in
        // a derived table under a semi join whose IN list was empty failed with
        // 22012 on 2 threads and gave 0 rows on 1 (fuzz seed 20261128, schema seed
        // 20261188784568; `tests/parallel_builds.rs`). With the same plan, both must
        // meet the same rows: build nothing below it. The threads' probes of this
        // join return at once, as the serial one does, so nothing looks for the
        // builds below; a right or full join above still outputs its build rows.
        let empty = build.len() == 0 && spec.kind.outputs_matched_left_only();
        builds.insert(id, build);
        if empty {
            break;
        }
    }
    // Right and full joins mark the build rows their probes match: each thread its
    // own, added to these once it has finished.
    let marks: FxHashMap<usize, Marks> = p
        .builds
        .iter()
        .filter(|(_, j)| matches!(&j.node, Node::Join { kind, .. } if kind.outputs_unmatched_right()))
        .filter_map(|(id, _)| builds.get(id).map(|b| (*id, Marks::new(b.len(), b.len()))))
        .collect();
    let ctx = ex.ctx;
    let morsels = Morsels::new(HeapFile::open(table.heap), ctx.reader);
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
    let drive_into = |state: Option<S>, last_pass: bool| -> Result<S> {
        let sequences = clock.as_ref().map(|c| c as &dyn super::Sequences);
        let ctx = ExecContext { reader, params, subqueries, memory_limit, profile, interrupt, sequences };
        // A pipeline holds no CTE scan (`plan/pipeline.rs`): its CTE map stays empty.
        let shared = StatementState::default();
        let pages = ThreadPages { morsels: &morsels, run: RefCell::new(VecDeque::new()) };
        let worker = Worker { scan_id: p.scan_id, morsels: &pages, builds: &builds, marks: &marks, last_pass };
        let wex = shared.exec(&ctx, profile, Some(&worker));
        let mut state = match state {
            Some(s) => s,
            None => make()?,
        };
        let r = wex.with_key_filters(key_filters, || {
            wex.node(root, root_id, None, &mut |b| {
                let flow = each(&wex, &mut state, b)?;
                if flow == Flow::Stop {
                    morsels.stop.store(true, Ordering::Relaxed);
                }
                Ok(flow)
            })
        });
        if r.is_err() {
            morsels.stop.store(true, Ordering::Relaxed);
        }
        r.map(|_| state)
    };
    let drive = || drive_into(None, false);
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
    // A pipeline stopped early (a semi join's probe, an error) counted only part of
    // the relation: no count is noted as none at all, not as an empty relation.
    let counted = morsels.tuples.load(Ordering::Relaxed);
    if let Some(b) = bees
        && counted > 0
    {
        b.0.cache.note_relation_size(table.id as u64, counted);
    }
    let mut states = results.into_iter().collect::<Result<Vec<S>>>()?;
    // The build rows of right and full joins that no thread matched: one more pass
    // of the pipeline on this thread, into its state, with no page left to scan.
    if !marks.is_empty() && !morsels.stop.load(Ordering::Relaxed) {
        let first = states.remove(0);
        states.insert(0, drive_into(Some(first), true)?);
    }
    Ok(states)
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
