//! Joins: hash join on the planner's equality keys (build on the right side, probe
//! with the left; semi and anti joins the optimizer marks `build: Left` hold the left
//! side instead, [`left_build`]), and nested loops when there are no keys. Both check the residual
//! condition `on` on the combined rows of candidate pairs, in batches.

use super::key_filter::ScanKeyFilter;
use super::key_table::{KeyTable, NO_ID, ProbeScratch, key_hashes};
use super::spill::{BatchFile, MAX_LEVELS, Partitions};
use super::{Exec, Flow, Out, gather_opt, make_batch};
use crate::error::{Error, Result};
use crate::expr::Expr;
use crate::plan::{JoinKind, Plan};
use crate::types::DataType;
use crate::vector::{BATCH_SIZE, Batch, Vector};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

pub(super) struct JoinSpec<'p> {
    pub left: &'p Plan,
    pub right: &'p Plan,
    pub kind: JoinKind,
    pub on: Option<&'p Expr>,
    pub left_keys: &'p [Expr],
    pub right_keys: &'p [Expr],
    /// Threads that run the right input (`Plan::workers`): while it is built, or
    /// (`build: Left`) while it probes the held left rows ([`left_build`]).
    pub workers: usize,
    /// Whether the probe side's scans test the build's keys
    /// (`JoinMethod::Hash { key_filter }`, [`super::key_filter`]).
    pub key_filter: bool,
    /// The join bee that probes the key table (`JoinMethod::Hash { bee }`).
    pub bee: Option<&'p beedb_bees::JoinBee>,
}

/// One probe (left) batch being joined, with what every step of joining it needs, so
/// the steps ([`Probe::nested_loop`], [`Probe::flush`], [`Probe::check_fetched`],
/// [`Probe::finish_left`]) are passed only what varies from call to call.
struct Probe<'a> {
    ex: &'a Exec<'a>,
    s: &'a JoinSpec<'a>,
    /// The probe batch, dense.
    b: &'a Batch,
    out_types: &'a [DataType],
    /// Which rows of `b` have matched a build row so far.
    left_matched: Vec<bool>,
    /// Whether matched pairs are output (inner and outer joins; not semi or anti).
    emits_pairs: bool,
    out: Out<'a>,
}

/// The materialized right side. Only read while probing, so the threads of a
/// parallel pipeline share one (`exec/parallel.rs`); which rows matched, for right
/// and full joins, is kept apart.
pub(super) struct Build {
    cols: Vec<Vector>,
    len: usize,
    /// Key → rows (None when joining without keys: every row is a candidate).
    map: Option<HashIndex>,
    /// What the probe side's scans test before decoding a tuple ([`super::key_filter`]).
    key_filters: Vec<ScanKeyFilter>,
}

/// The build rows by key: the distinct keys in a [`KeyTable`], and the rows of key `id`
/// at `rows[starts[id]..starts[id + 1]]`, ascending.
struct HashIndex {
    table: KeyTable,
    /// The key id of each build row ([`NO_ID`] for a NULL key), until `finish`.
    row_ids: Vec<u32>,
    starts: Vec<u32>,
    rows: Vec<u32>,
}

impl HashIndex {
    /// Groups the build rows by key id (a counting sort, so rows stay in order).
    fn finish(&mut self) {
        let nkeys = self.table.len();
        let mut starts = vec![0u32; nkeys + 1];
        for &id in &self.row_ids {
            if id != NO_ID {
                starts[id as usize + 1] += 1;
            }
        }
        for i in 0..nkeys {
            starts[i + 1] += starts[i];
        }
        let mut next = starts.clone();
        let mut rows = vec![0u32; starts[nkeys] as usize];
        for (r, &id) in self.row_ids.iter().enumerate() {
            if id != NO_ID {
                rows[next[id as usize] as usize] = r as u32;
                next[id as usize] += 1;
            }
        }
        self.row_ids = Vec::new();
        self.starts = starts;
        self.rows = rows;
    }

    fn candidates(&self, id: u32) -> &[u32] {
        &self.rows[self.starts[id as usize] as usize..self.starts[id as usize + 1] as usize]
    }
}

impl Build {
    /// Rows held.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// A build without rows, of rows of `types` and keys of `key_types` (none: a
    /// join without keys).
    fn empty(types: &[DataType], key_types: &[DataType]) -> Build {
        Build {
            cols: types.iter().map(|t| Vector::new(*t, 0)).collect(),
            len: 0,
            map: (!key_types.is_empty()).then(|| HashIndex {
                table: KeyTable::new(key_types),
                row_ids: Vec::new(),
                starts: Vec::new(),
                rows: Vec::new(),
            }),
            key_filters: Vec::new(),
        }
    }

    /// Bytes the build holds: its rows, key table and per-row key ids.
    fn heap_bytes(&self) -> usize {
        let keys = self.map.as_ref().map_or(0, |m| m.table.heap_bytes() + m.row_ids.capacity() * 4);
        keys + self.cols.iter().map(|c| c.heap_bytes()).sum::<usize>() + self.len * 5
    }
}

impl<'p> JoinSpec<'p> {
    /// The join of node `plan`, if it is one.
    pub(super) fn of(plan: &'p Plan) -> Option<JoinSpec<'p>> {
        let crate::plan::Node::Join { left, right, kind, on, left_keys, right_keys, method } = &plan.node else {
            return None;
        };
        let key_filter = matches!(method, crate::plan::JoinMethod::Hash { key_filter: true, .. });
        let bee = match method {
            crate::plan::JoinMethod::Hash { bee: Some(b), .. } => Some(&*b.0),
            _ => None,
        };
        Some(JoinSpec { left, right, kind: *kind, on: on.as_ref(), left_keys, right_keys, workers: plan.workers, key_filter, bee })
    }

    /// A semi, anti or mark join on keys alone needs only whether a key is present:
    /// the build side's rows are not kept (TPC-H Q4's EXISTS over lineitem would
    /// otherwise hold every lineitem column of millions of rows), and a probe row is
    /// decided by one lookup.
    fn keys_only(&self) -> bool {
        !self.left_keys.is_empty() && self.kind.is_left_only() && self.on.is_none()
    }
}

pub(super) fn join(
    ex: &Exec<'_>,
    plan: &Plan,
    id: usize,
    s: JoinSpec<'_>,
    out: Out,
) -> Result<Flow> {
    // The threads of a parallel pipeline probe the build made before they started.
    if let Some(build) = ex.prebuilt(id) {
        return ex.with_key_filters(&build.key_filters, || probe(ex, plan, id, &s, build, out));
    }
    match build_or_spill(ex, &s, id, 0)? {
        Materialized::Memory(build) => ex.with_key_filters(&build.key_filters, || probe(ex, plan, id, &s, &build, out)),
        Materialized::Spilled(parts, null_rows) => {
            let left_types = s.left.types();
            grace(ex, plan, id, &s, parts, null_rows, 0, &mut |each| left_input(ex, &s, id, &left_types, each), out)
        }
    }
}

/// Runs the left input of join node `id`, handing each batch (dense) and its
/// evaluated keys to `each`.
fn left_input(ex: &Exec<'_>, s: &JoinSpec<'_>, id: usize, left_types: &[DataType], each: &mut ProbeEach<'_>) -> Result<Flow> {
    ex.node(s.left, id + 1, None, &mut |b| {
        if b.rows() == 0 {
            return Ok(Flow::Continue);
        }
        let b = super::dense(b, left_types);
        let kv = s.left_keys.iter().map(|e| ex.eval(e, &b)).collect::<Result<Vec<_>>>()?;
        each(b, kv)
    })
}

/// Where a probe's batches come from: the left input's plan, or a part of it spilled
/// to a temporary file. It calls the consumer with each batch and its keys.
type LeftSource<'a> = &'a mut dyn FnMut(&mut ProbeEach<'_>) -> Result<Flow>;
type ProbeEach<'e> = dyn FnMut(Batch, Vec<Vector>) -> Result<Flow> + 'e;

/// Reads spilled records (key columns, then the row's columns) back as batches and
/// their keys.
fn read_records(ex: &Exec<'_>, file: BatchFile, nkeys: usize, each: &mut ProbeEach<'_>) -> Result<Flow> {
    let mut reader = file.into_reader()?;
    while let Some(b) = reader.next_batch()? {
        ex.ctx.interrupt.check()?;
        let (n, mut cols) = (b.rows(), b.columns);
        let rest = cols.split_off(nkeys);
        let batch = if rest.is_empty() { Batch::empty_rows(n) } else { make_batch(rest, n) };
        if each(batch, cols)? == Flow::Stop {
            return Ok(Flow::Stop);
        }
    }
    Ok(Flow::Continue)
}

/// A hash join whose build side outgrew the memory threshold (a *grace* hash
/// join): the build rows are in `build_parts`, split by a hash of their keys at
/// `level`. The left input is split the same way (a row goes to the part its key
/// hashes to; a row that can only match, in an inner, right or semi join, is dropped
/// when its part has no build row), and then each part is joined alone: its build
/// rows read into a hash table — split again at the next level if they still do
/// not fit — and its left rows probed against them. A key's rows on both sides are
/// in the same part, so each part gives exactly its share of the join's output
/// (unmatched rows of outer and anti joins included); only the order of the
/// output rows differs from the join in memory.
fn grace(
    ex: &Exec<'_>,
    plan: &Plan,
    id: usize,
    s: &JoinSpec<'_>,
    build_parts: Partitions,
    null_rows: Option<BatchFile>,
    level: u32,
    left: LeftSource<'_>,
    out: Out,
) -> Result<Flow> {
    let build_files = build_parts.finish_recorded(ex, id)?;
    let left_types = s.left.types();
    let record_types: Vec<DataType> = s.left_keys.iter().map(|e| e.ty).chain(left_types.iter().copied()).collect();
    let only_matches = s.kind.outputs_matched_left_only();
    let mut left_parts = Partitions::new(&record_types, level, ex.ctx.memory_limit / 8);
    let mut hashes = Vec::new();
    left(&mut |b: Batch, kv: Vec<Vector>| {
        let n = b.rows();
        key_hashes(&kv, n, &mut hashes);
        let rows: Vec<u32> = (0..n as u32)
            .filter(|&k| !only_matches || build_files[Partitions::part_of(hashes[k as usize], level)].is_some())
            .collect();
        let mut record = kv;
        record.extend(b.columns);
        left_parts.push(&record, &rows, &hashes)?;
        ex.check_mem("Hash Join", left_parts.heap_bytes())?;
        Ok(Flow::Continue)
    })?;
    let left_files = left_parts.finish_recorded(ex, id)?;
    if join_parts(ex, plan, id, s, build_files, left_files, level, out)? == Flow::Stop {
        return Ok(Flow::Stop);
    }
    // The build rows with a NULL key matched nothing: NULL-extended, as unmatched.
    let Some(file) = null_rows else { return Ok(Flow::Continue) };
    ex.record_spill(id, file.rows(), file.bytes());
    let (left_types, out_types) = (s.left.types(), plan.types());
    let mut reader = file.into_reader()?;
    while let Some(b) = reader.next_batch()? {
        ex.ctx.interrupt.check()?;
        let n = b.rows();
        let rows: Vec<u32> = (0..n as u32).collect();
        if out(right_only(&left_types, &out_types, &b.columns, &rows))? == Flow::Stop {
            return Ok(Flow::Stop);
        }
    }
    Ok(Flow::Continue)
}

/// Joins the parts of a spilled join one by one: part `p`'s build rows
/// (`build_files[p]`, records of the right keys and, unless the join needs keys
/// only, the right columns) into a hash table — split again at `level + 1` if they
/// do not fit — probed by its left rows (`left_files[p]`, records of the left keys
/// and columns).
#[allow(clippy::too_many_arguments)]
fn join_parts(
    ex: &Exec<'_>,
    plan: &Plan,
    id: usize,
    s: &JoinSpec<'_>,
    build_files: Vec<Option<BatchFile>>,
    left_files: Vec<Option<BatchFile>>,
    level: u32,
    out: Out,
) -> Result<Flow> {
    let nkeys = s.left_keys.len();
    let only_matches = s.kind.outputs_matched_left_only();
    let key_types: Vec<DataType> = s.right_keys.iter().map(|e| e.ty).collect();
    let right_types = s.right.types();
    let outputs_build = s.kind.outputs_unmatched_right();
    for (build_file, left_file) in build_files.into_iter().zip(left_files) {
        let needed = match (left_file.is_some(), build_file.is_some()) {
            // Without left rows only a right or full join has output: its build rows.
            (false, has_build) => outputs_build && has_build,
            // Without build rows only the joins that output unmatched left rows do.
            (true, false) => !only_matches,
            (true, true) => true,
        };
        if !needed {
            continue;
        }
        let mut sink = BuildSink::new(&right_types, &key_types, !s.keys_only(), NullKeyRows::of_build(s.kind), level + 1);
        if let Some(file) = build_file {
            read_records(ex, file, key_types.len(), &mut |b, kv| {
                sink.add(ex, kv, b)?;
                Ok(Flow::Continue)
            })?;
        }
        let mut left_file = left_file;
        let mut from_file = |each: &mut ProbeEach<'_>| match left_file.take() {
            Some(f) => read_records(ex, f, nkeys, each),
            None => Ok(Flow::Continue),
        };
        let flow = match sink.finish()? {
            Materialized::Memory(build) => probe_from(ex, plan, s, &build, None, &mut from_file, out)?,
            Materialized::Spilled(parts, null_rows) => grace(ex, plan, id, s, parts, null_rows, level + 1, &mut from_file, out)?,
        };
        if flow == Flow::Stop {
            return Ok(Flow::Stop);
        }
    }
    Ok(Flow::Continue)
}

/// A semi or anti join that builds its hash table on the left input
/// ([`crate::plan::JoinMethod::Hash`] with `build: Left`): chosen when the right
/// input is much the larger (TPC-H Q4's EXISTS over 3.8M lineitem rows for 57k
/// orders, Q21's two over lineitem). The left rows are held with their keys; the
/// right input streams past, each of its rows marking the held rows it matches (for
/// a pair of equal keys, when `on` holds over the pair); at the end the held rows
/// come out in their input order, the matched ones (semi) or the others (anti) —
/// the rows and order a probe by the left input gives. A semi join stops reading
/// the right input once every held row has matched. With `workers` (`Plan::workers`)
/// each input that is a pipeline runs on that many threads: the left one's batches
/// are held by this thread (in the threads' order), and the right one's threads
/// probe the held keys and mark in one shared [`Marks`].
pub(super) fn left_build(ex: &Exec<'_>, plan: &Plan, id: usize, s: &JoinSpec<'_>, out: Out) -> Result<Flow> {
    let left_id = id + 1;
    let right_id = left_id + ex.subtree_size(s.left);
    let right_types = s.right.types();
    let out_types = plan.types();
    let want_matched = match s.kind {
        JoinKind::Semi => true,
        JoinKind::Anti => false,
        _ => return Err(crate::error::Error::internal("a join building on its left input that is not a semi or anti join")),
    };
    // The threads that probe (below) scan the left input too when it is a pipeline
    // (`materialize`: they keep their batches, this thread holds the rows).
    let workers = if ex.worker.is_none() { s.workers } else { 1 };
    let mut held = match materialize(ex, s.left, left_id, s.left_keys, true, NullKeyRows::Keep, workers, 0)? {
        Materialized::Memory(held) => held,
        // The held left rows outgrew the limit (they are in hash parts as probe
        // records: keys, then columns): the right input is split the same way, and
        // each part is joined with its right rows as the build, as a grace join does.
        Materialized::Spilled(left_parts, _) => {
            let left_files = left_parts.finish_recorded(ex, id)?;
            let key_types: Vec<DataType> = s.right_keys.iter().map(|e| e.ty).collect();
            let mut sink = BuildSink::new(&right_types, &key_types, !s.keys_only(), NullKeyRows::Drop, 0);
            sink.start_spilling(ex.ctx.memory_limit / 8)?;
            let Materialized::Spilled(right_parts, _) = materialize_into(ex, s.right, right_id, s.right_keys, 1, sink)? else {
                return Err(Error::internal("a spilling build ended in memory"));
            };
            let build_files = right_parts.finish_recorded(ex, id)?;
            return join_parts(ex, plan, id, s, build_files, left_files, 0, out);
        }
    };
    if held.len == 0 {
        return Ok(Flow::Continue);
    }
    let map = held
        .map
        .as_mut()
        .ok_or_else(|| crate::error::Error::internal("a join building on its left input without keys"))?;
    let nkeys = map.table.len();
    // The right rows whose key no held row has mark nothing: the scans they come
    // from drop them before decoding them.
    let key_filters = if s.key_filter {
        super::key_filter::for_input(s.right, right_id, s.right_keys, s.left_keys, map.table.keys())
    } else {
        Vec::new()
    };
    // Without `on`, a key decides for all of its rows at once, and the rows of a key
    // are never listed (`row_ids` says each row's key); with `on`, each held row is
    // decided by the pairs it forms, through the rows grouped by key.
    if s.on.is_some() {
        map.finish();
    }
    let map = held.map.as_ref().expect("a join with keys");
    // Rows (or keys) that can still match (rows with a NULL key never do); a semi
    // join is done when none can.
    let open = if s.on.is_none() { nkeys } else { map.rows.len() };
    let marks = Marks::new(if s.on.is_none() { nkeys } else { held.len }, open);
    let held_cols = &held.cols;
    let mark = |ex: &Exec<'_>, t: &mut MarkScratch, b: Batch| -> Result<Flow> {
        let n = b.rows();
        if n == 0 {
            return Ok(Flow::Continue);
        }
        let b = super::dense(b, &right_types);
        let kv = s.right_keys.iter().map(|e| ex.eval(e, &b)).collect::<Result<Vec<_>>>()?;
        probe_keys(&map.table, s.bee, &kv, n, &mut t.probe_ids, &mut t.scratch);
        let newly = match s.on {
            None => t.probe_ids.iter().filter(|&&k| k != NO_ID && marks.set(k as usize)).count(),
            Some(on) => {
                let mut newly = 0;
                for (r, &k) in t.probe_ids.iter().enumerate() {
                    if k == NO_ID {
                        continue;
                    }
                    for &l in map.candidates(k) {
                        if !marks.is_set(l as usize) {
                            t.pairs.push((l, r as u32));
                            if t.pairs.len() >= BATCH_SIZE {
                                newly += mark_pairs(ex, on, held_cols, &b, &mut t.pairs, &marks)?;
                            }
                        }
                    }
                }
                newly + mark_pairs(ex, on, held_cols, &b, &mut t.pairs, &marks)?
            }
        };
        Ok(if marks.close(newly) && want_matched { Flow::Stop } else { Flow::Continue })
    };
    // The right input on several threads (`Plan::workers`, when it is a pipeline
    // over a heap scan and this is not itself a worker): each thread probes the held
    // keys with its own pages' rows and marks in the shared `marks`; the held rows
    // come out below, on this thread, once all have finished.
    let parallel = (workers > 1)
        .then(|| crate::plan::pipeline::pipeline(s.right, right_id))
        .flatten();
    if open > 0 {
        match parallel {
            Some(p) => {
                let make = || Ok(MarkScratch::default());
                super::parallel::run_pipeline_with(ex, &p, s.right, right_id, workers, &key_filters, &make, &mark)?;
            }
            None => {
                let mut t = MarkScratch::default();
                ex.with_key_filters(&key_filters, || ex.node(s.right, right_id, None, &mut |b| mark(ex, &mut t, b)))?;
            }
        }
    }
    let matched = |r: usize| match s.on {
        None => map.row_ids[r] != NO_ID && marks.is_set(map.row_ids[r] as usize),
        Some(_) => marks.is_set(r),
    };
    let rows: Vec<u32> = (0..held.len).filter(|&r| matched(r) == want_matched).map(|r| r as u32).collect();
    for chunk in rows.chunks(BATCH_SIZE) {
        let cols = held
            .cols
            .iter()
            .zip(&out_types)
            .map(|(c, t)| {
                let mut v = c.gather(chunk);
                v.ty = *t;
                v
            })
            .collect();
        if out(make_batch(cols, chunk.len()))? == Flow::Stop {
            return Ok(Flow::Stop);
        }
    }
    Ok(Flow::Continue)
}

/// Checks `on` over candidate pairs (held left row, right row of `right`), marks the
/// held rows of the pairs that pass and empties `pairs`; returns how many held rows
/// this call marked first.
fn mark_pairs(
    ex: &Exec<'_>,
    on: &Expr,
    held: &[Vector],
    right: &Batch,
    pairs: &mut Vec<(u32, u32)>,
    marks: &Marks,
) -> Result<usize> {
    if pairs.is_empty() {
        return Ok(0);
    }
    let lpos: Vec<u32> = pairs.iter().map(|p| p.0).collect();
    let rpos: Vec<u32> = pairs.iter().map(|p| p.1).collect();
    pairs.clear();
    let mut cols: Vec<Vector> = held.iter().map(|c| c.gather(&lpos)).collect();
    cols.extend(right.columns.iter().map(|c| c.gather(&rpos)));
    let combined = make_batch(cols, lpos.len());
    Ok(ex.pred(on, &combined)?.into_iter().filter(|&k| marks.set(lpos[k as usize] as usize)).count())
}

/// Which held rows (or keys) of a `build: left` join have matched, a bit each, and
/// how many can still match. The threads probing the right input in parallel share
/// one: a bit is only ever set (`fetch_or`, after a plain load, so a key matched
/// again costs no write to a shared line), and the held rows are read only after
/// every thread has finished.
pub(super) struct Marks {
    bits: Vec<AtomicU64>,
    open: AtomicUsize,
}

impl Marks {
    /// `n` bits, of which `open` can be set.
    pub(super) fn new(n: usize, open: usize) -> Marks {
        Marks { bits: (0..n.div_ceil(64)).map(|_| AtomicU64::new(0)).collect(), open: AtomicUsize::new(open) }
    }

    #[inline]
    fn is_set(&self, i: usize) -> bool {
        self.bits[i / 64].load(Ordering::Relaxed) & (1 << (i % 64)) != 0
    }

    /// Sets bit `i`; whether this call set it.
    #[inline]
    fn set(&self, i: usize) -> bool {
        let (word, bit) = (&self.bits[i / 64], 1u64 << (i % 64));
        word.load(Ordering::Relaxed) & bit == 0 && word.fetch_or(bit, Ordering::Relaxed) & bit == 0
    }

    /// Counts `newly` more as matched; whether none is left open.
    fn close(&self, newly: usize) -> bool {
        if newly == 0 {
            return self.open.load(Ordering::Relaxed) == 0;
        }
        self.open.fetch_sub(newly, Ordering::Relaxed) == newly
    }
}

/// What one thread probing a `build: left` join's held keys reuses from batch to batch.
#[derive(Default)]
struct MarkScratch {
    probe_ids: Vec<u32>,
    scratch: ProbeScratch,
    pairs: Vec<(u32, u32)>,
}

/// Runs the right input of join node `id` and materializes it, its rows grouped by key.
pub(super) fn build(ex: &Exec<'_>, s: &JoinSpec<'_>, id: usize) -> Result<Build> {
    match build_or_spill(ex, s, id, MAX_LEVELS)? {
        Materialized::Memory(build) => Ok(build),
        Materialized::Spilled(..) => Err(Error::internal("a join build spilled where it may not")),
    }
}

/// Materializes join node `id`'s right input ([`materialize`]) with its key filters;
/// over the memory threshold, the rows go to temporary files split at `level`
/// instead (no spilling at [`MAX_LEVELS`]: the builds of a parallel pipeline, which
/// its threads share in memory).
fn build_or_spill(ex: &Exec<'_>, s: &JoinSpec<'_>, id: usize, level: u32) -> Result<Materialized> {
    let right_id = id + 1 + ex.subtree_size(s.left);
    let mut build = match materialize(ex, s.right, right_id, s.right_keys, !s.keys_only(), NullKeyRows::of_build(s.kind), s.workers, level)? {
        Materialized::Memory(build) => build,
        spilled => return Ok(spilled),
    };
    if let Some(map) = &mut build.map {
        map.finish();
        if s.key_filter {
            build.key_filters = super::key_filter::for_input(s.left, id + 1, s.left_keys, s.right_keys, map.table.keys());
        }
    }
    if !build.key_filters.is_empty() {
        let filters: usize = build.key_filters.iter().map(|f| f.filter.heap_bytes()).sum();
        ex.check_mem("Hash Join", build.heap_bytes() + filters)?;
    }
    Ok(Materialized::Memory(build))
}

/// A build side, in memory or — once it outgrew the threshold — in hash parts on
/// disk (records of the key columns, then the row's columns).
enum Materialized {
    Memory(Build),
    /// The parts, and (right and full joins) the build rows with a NULL key, which
    /// match nothing and are output unmatched: kept apart, since they would all
    /// hash to one part that no further split could divide.
    Spilled(Partitions, Option<BatchFile>),
}

/// What a spilling build does with its rows whose key is NULL (they match nothing).
#[derive(Clone, Copy, PartialEq)]
enum NullKeyRows {
    /// Dropped: the join outputs only matches of the build rows.
    Drop,
    /// Kept in the parts with the others: a left input held by a semi or anti join
    /// (`left_build`), whose parts are probed as they are.
    Keep,
    /// Written to a file of their own (a right or full join outputs them
    /// unmatched, NULL-extended).
    Apart,
}

impl NullKeyRows {
    /// For the right input a join of `kind` builds on.
    fn of_build(kind: JoinKind) -> NullKeyRows {
        if kind.outputs_unmatched_right() { NullKeyRows::Apart } else { NullKeyRows::Drop }
    }
}

/// Gathers a build side batch by batch: into a [`Build`], until it passes three
/// quarters of the memory limit with spilling allowed (keys, a level below
/// [`MAX_LEVELS`]); from then on into [`Partitions`], the rows held so far first.
struct BuildSink {
    types: Vec<DataType>,
    key_types: Vec<DataType>,
    keep_rows: bool,
    /// What happens to rows with a NULL key once spilling.
    null_keys: NullKeyRows,
    /// The NULL-key rows' columns under [`NullKeyRows::Apart`], once there are some.
    null_rows: Option<BatchFile>,
    /// Write buffer of `null_rows` (a share of the limit, set when spilling starts).
    null_chunk: usize,
    build: Build,
    ids: Vec<u32>,
    level: u32,
    spill: Option<Partitions>,
    hashes: Vec<u64>,
}

impl BuildSink {
    fn new(types: &[DataType], key_types: &[DataType], keep_rows: bool, null_keys: NullKeyRows, level: u32) -> BuildSink {
        BuildSink {
            types: types.to_vec(),
            key_types: key_types.to_vec(),
            keep_rows,
            null_keys,
            null_rows: None,
            null_chunk: 0,
            build: Build::empty(types, key_types),
            ids: Vec::new(),
            level,
            spill: None,
            hashes: Vec::new(),
        }
    }

    /// Adds batch `b` (dense) whose keys are `kv`.
    fn add(&mut self, ex: &Exec<'_>, kv: Vec<Vector>, b: Batch) -> Result<()> {
        let n = b.rows();
        if n == 0 {
            return Ok(());
        }
        if self.spill.is_some() {
            let cols = if self.keep_rows { b.columns } else { Vec::new() };
            let null_bytes = self.push_records(kv, cols, n)?;
            let parts = self.spill.as_ref().expect("spilling");
            return ex.check_mem("Hash Join", parts.heap_bytes() + null_bytes);
        }
        if let Some(map) = &mut self.build.map {
            // NULL keys never match: such rows get no key id.
            map.table.insert(&kv, n, true, &mut self.ids);
            map.row_ids.extend_from_slice(&self.ids);
        }
        if self.keep_rows {
            let b = super::dense(b, &self.types);
            for (c, v) in self.build.cols.iter_mut().zip(&b.columns) {
                c.extend(v);
            }
        }
        self.build.len += n;
        let bytes = self.build.heap_bytes();
        if self.build.map.is_some() && self.level < MAX_LEVELS && bytes > ex.ctx.memory_limit / 4 * 3 {
            return self.start_spilling(ex.ctx.memory_limit / 8);
        }
        ex.check_mem("Hash Join", bytes)
    }

    /// Moves the rows held so far into hash parts; later rows follow them there.
    fn start_spilling(&mut self, budget_bytes: usize) -> Result<()> {
        let record_types: Vec<DataType> =
            self.key_types.iter().chain(if self.keep_rows { &self.types[..] } else { &[] }).copied().collect();
        self.spill = Some(Partitions::new(&record_types, self.level, budget_bytes));
        self.null_chunk = budget_bytes.clamp(4 << 10, 256 << 10);
        let build = std::mem::replace(&mut self.build, Build::empty(&self.types, &self.key_types));
        let map = build.map.as_ref().ok_or_else(|| Error::internal("spilling a join build without keys"))?;
        let keys = map.table.keys();
        let mut start = 0;
        while start < build.len {
            let end = (start + BATCH_SIZE).min(build.len);
            // A row's key is its key id's key; a NULL key (no id) stays NULL.
            let ids: Vec<Option<u32>> = map.row_ids[start..end].iter().map(|&k| (k != NO_ID).then_some(k)).collect();
            let kv = keys.iter().zip(&self.key_types).map(|(k, t)| gather_opt(k, &ids, *t)).collect();
            let rows: Vec<u32> = (start as u32..end as u32).collect();
            let cols = if self.keep_rows { build.cols.iter().map(|c| c.gather(&rows)).collect() } else { Vec::new() };
            self.push_records(kv, cols, end - start)?;
            start = end;
        }
        Ok(())
    }

    /// Adds `n` rows, their keys `kv` and their columns `cols`, as records to the
    /// parts; a row with a NULL key as `null_keys` says. Returns the bytes the
    /// NULL-key file holds in memory.
    fn push_records(&mut self, kv: Vec<Vector>, cols: Vec<Vector>, n: usize) -> Result<usize> {
        let parts = self.spill.as_mut().ok_or_else(|| Error::internal("records pushed to a build in memory"))?;
        key_hashes(&kv, n, &mut self.hashes);
        let has_null = |k: usize| kv.iter().any(|c| c.is_null(k));
        let rows: Vec<u32> = (0..n as u32)
            .filter(|&k| self.null_keys == NullKeyRows::Keep || !has_null(k as usize))
            .collect();
        if self.null_keys == NullKeyRows::Apart && rows.len() < n {
            let nulls: Vec<u32> = (0..n as u32).filter(|&k| has_null(k as usize)).collect();
            let file = match &mut self.null_rows {
                Some(f) => f,
                None => self.null_rows.insert(BatchFile::create_with_chunk(&self.types, self.null_chunk)?),
            };
            let picked: Vec<Vector> = cols.iter().map(|c| c.gather(&nulls)).collect();
            file.push(&picked, nulls.len())?;
        }
        let mut record = kv;
        record.extend(cols);
        parts.push(&record, &rows, &self.hashes)?;
        Ok(self.null_rows.as_ref().map_or(0, BatchFile::heap_bytes))
    }

    fn finish(self) -> Result<Materialized> {
        Ok(match self.spill {
            Some(parts) => Materialized::Spilled(parts, self.null_rows),
            None => {
                let mut build = self.build;
                if let Some(map) = &mut build.map {
                    map.finish();
                }
                Materialized::Memory(build)
            }
        })
    }
}

/// Runs `input` (node `input_id`) and holds what a hash join needs of it: the key
/// id of each row in a key table over `keys` (none without keys), and the rows
/// themselves unless `keep_rows` is false. The key ids stay per row (`row_ids`;
/// [`HashIndex::finish`] groups them by key, which the caller does). `workers` > 1
/// runs a pipeline input on that many threads. Over the threshold, with keys and
/// `level` below [`MAX_LEVELS`], the rows go to hash parts on disk instead.
fn materialize(
    ex: &Exec<'_>,
    input: &Plan,
    input_id: usize,
    keys: &[Expr],
    keep_rows: bool,
    null_keys: NullKeyRows,
    workers: usize,
    level: u32,
) -> Result<Materialized> {
    let types = input.types();
    let key_types: Vec<DataType> = keys.iter().map(|e| e.ty).collect();
    let sink = BuildSink::new(&types, &key_types, keep_rows, null_keys, if keys.is_empty() { MAX_LEVELS } else { level });
    materialize_into(ex, input, input_id, keys, workers, sink)
}

/// [`materialize`] into `sink` (which may be spilling from the start).
fn materialize_into(
    ex: &Exec<'_>,
    input: &Plan,
    input_id: usize,
    keys: &[Expr],
    workers: usize,
    mut sink: BuildSink,
) -> Result<Materialized> {
    let types = input.types();
    let add = |ex: &Exec<'_>, sink: &mut BuildSink, b: Batch| -> Result<()> {
        if b.rows() == 0 {
            return Ok(());
        }
        let b = super::dense(b, &types);
        let kv = keys.iter().map(|e| ex.eval(e, &b)).collect::<Result<Vec<_>>>()?;
        sink.add(ex, kv, b)
    };
    // A right input the optimizer gave several threads (a pipeline over a large
    // scan) is scanned and filtered by all of them, each holding what it produced;
    // the hash table is then filled from their batches here.
    let parallel = (workers > 1)
        .then(|| crate::plan::pipeline::pipeline(input, input_id))
        .flatten();
    let serial = |sink: &mut BuildSink| {
        ex.node(input, input_id, None, &mut |b| {
            add(ex, sink, b)?;
            Ok(Flow::Continue)
        })
    };
    match parallel {
        Some(p) => {
            let keep = |ex: &Exec<'_>, held: &mut (Vec<Batch>, usize), b: Batch| -> Result<()> {
                if b.rows() == 0 {
                    return Ok(());
                }
                let b = super::dense(b, &types);
                held.1 += b.columns.iter().map(|c| c.heap_bytes()).sum::<usize>();
                held.0.push(b);
                ex.check_mem("Hash Join", held.1)
            };
            let make = || Ok((Vec::new(), 0));
            match super::parallel::run_pipeline(ex, &p, input, input_id, workers, &make, &keep) {
                Ok(held) => {
                    for (batches, _) in held {
                        for b in batches {
                            add(ex, &mut sink, b)?;
                        }
                    }
                }
                // The threads hold their rows in memory: a build that does not fit
                // them runs again on one thread, which can spill.
                Err(e) if e.sqlstate == "53200" && sink.level < MAX_LEVELS => {
                    serial(&mut sink)?;
                }
                Err(e) => return Err(e),
            }
        }
        None => {
            serial(&mut sink)?;
        }
    }
    Ok(match sink.spill {
        Some(parts) => Materialized::Spilled(parts, sink.null_rows),
        None => Materialized::Memory(sink.build),
    })
}

/// Runs the left input of join node `id` and joins each of its batches with `build`.
fn probe(
    ex: &Exec<'_>,
    plan: &Plan,
    id: usize,
    s: &JoinSpec<'_>,
    build: &Build,
    out: Out,
) -> Result<Flow> {
    let left_types = s.left.types();
    let shared = ex.build_marks(id);
    probe_from(ex, plan, s, build, shared, &mut |each| left_input(ex, s, id, &left_types, each), out)
}

/// Joins each batch `left` gives with `build`, then outputs the build rows no
/// batch matched (right and full joins).
fn probe_from(
    ex: &Exec<'_>,
    plan: &Plan,
    s: &JoinSpec<'_>,
    build: &Build,
    shared: Option<(&Marks, bool)>,
    left: LeftSource<'_>,
    out: Out,
) -> Result<Flow> {
    let left_types = s.left.types();
    let out_types = plan.types();
    let keys_only = s.keys_only();
    if build.len == 0 && s.kind.outputs_matched_left_only() {
        return Ok(Flow::Continue);
    }
    // Right and full joins output the build rows no probe row matched.
    let marks_build = s.kind.outputs_unmatched_right();
    let mut matched = vec![false; if marks_build { build.len } else { 0 }];
    let emits_pairs = matches!(
        s.kind,
        JoinKind::Inner | JoinKind::Left | JoinKind::Right | JoinKind::Full
    );
    let mut stopped = false;
    let mut probe_ids = Vec::new();
    let mut scratch = ProbeScratch::default();
    let r = left(&mut |b: Batch, kv: Vec<Vector>| {
        let n = b.rows();
        if n == 0 {
            return Ok(Flow::Continue);
        }
        let mut p = Probe::new(ex, s, &b, &out_types, emits_pairs, &mut *out);
        let Some(map) = &build.map else {
            let all_right: Vec<u32> = (0..build.len as u32).collect();
            if p.nested_loop(build, &mut matched, &all_right)? == Flow::Stop {
                stopped = true;
                return Ok(Flow::Stop);
            }
            return p.finish_left(build, &mut stopped);
        };
        probe_keys(&map.table, s.bee, &kv, n, &mut probe_ids, &mut scratch);
        if keys_only {
            for (m, &id) in p.left_matched.iter_mut().zip(&probe_ids) {
                *m = id != NO_ID;
            }
            return p.finish_left(build, &mut stopped);
        }
        let mut pairs: Vec<(u32, u32)> = Vec::with_capacity(BATCH_SIZE);
        let mut flow = Flow::Continue;
        'rows: for (l, &id) in probe_ids.iter().enumerate() {
            if id == NO_ID {
                continue;
            }
            for &r in map.candidates(id) {
                pairs.push((l as u32, r));
                if pairs.len() >= BATCH_SIZE && p.flush(&build.cols, &mut matched, &mut pairs)? == Flow::Stop {
                    flow = Flow::Stop;
                    break 'rows;
                }
            }
        }
        if flow == Flow::Continue {
            flow = p.flush(&build.cols, &mut matched, &mut pairs)?;
        }
        if flow == Flow::Stop {
            stopped = true;
            return Ok(Flow::Stop);
        }
        p.finish_left(build, &mut stopped)
    })?;
    if stopped || r == Flow::Stop {
        return Ok(Flow::Stop);
    }

    // Unmatched right rows. A thread of a parallel pipeline (`shared`) only adds the
    // rows it matched to the threads' shared marks; the calling thread's last pass
    // over the pipeline, once every thread has finished, outputs the rows none
    // matched (`exec/parallel.rs`).
    if marks_build {
        if let Some((marks, last_pass)) = shared {
            if !last_pass {
                for r in (0..build.len).filter(|&r| matched[r]) {
                    marks.set(r);
                }
                return Ok(Flow::Continue);
            }
            for (r, m) in matched.iter_mut().enumerate() {
                *m |= marks.is_set(r);
            }
        }
        let unmatched: Vec<u32> = (0..build.len as u32)
            .filter(|&r| !matched[r as usize])
            .collect();
        for chunk in unmatched.chunks(BATCH_SIZE) {
            if out(right_only(&left_types, &out_types, &build.cols, chunk))? == Flow::Stop {
                return Ok(Flow::Stop);
            }
        }
    }
    Ok(Flow::Continue)
}

/// The key id of each of the `n` rows of key columns `kv` in `table` ([`NO_ID`] when
/// absent or NULL): through the join bee when there is one and it applies, else
/// generically.
#[inline]
fn probe_keys(table: &KeyTable, bee: Option<&beedb_bees::JoinBee>, kv: &[Vector], n: usize, ids: &mut Vec<u32>, scratch: &mut ProbeScratch) {
    if let Some(bee) = bee
        && table.find_bee(bee, kv, n, ids)
    {
        return;
    }
    table.find(kv, n, ids, scratch);
}

/// Rows `rows` of the right columns `right` as a join's output rows with every
/// left column NULL (the unmatched right rows of a right or full join).
fn right_only(left_types: &[DataType], out_types: &[DataType], right: &[Vector], rows: &[u32]) -> Batch {
    let nl = left_types.len();
    let none = vec![None; rows.len()];
    let mut cols = Vec::with_capacity(out_types.len());
    for (k, t) in out_types.iter().enumerate().take(nl) {
        cols.push(gather_opt(&Vector::new(left_types[k], 0), &none, *t));
    }
    for (k, c) in right.iter().enumerate() {
        let mut v = c.gather(rows);
        v.ty = out_types[nl + k];
        cols.push(v);
    }
    make_batch(cols, rows.len())
}

impl<'a> Probe<'a> {
    /// The probe of batch `b`, none of whose rows has matched yet.
    fn new(
        ex: &'a Exec<'a>,
        s: &'a JoinSpec<'a>,
        b: &'a Batch,
        out_types: &'a [DataType],
        emits_pairs: bool,
        out: Out<'a>,
    ) -> Self {
        Probe { ex, s, b, out_types, left_matched: vec![false; b.rows()], emits_pairs, out }
    }

    /// Left rows with no match (LEFT, FULL: NULL-extended; ANTI: as they are), left
    /// rows with a match (SEMI), every left row with whether it matched (MARK).
    fn finish_left(&mut self, build: &Build, stopped: &mut bool) -> Result<Flow> {
        let (s, b, out_types) = (self.s, self.b, self.out_types);
        if s.kind == JoinKind::Mark {
            let mut cols: Vec<Vector> = b
                .columns
                .iter()
                .zip(out_types)
                .map(|(c, t)| Vector { ty: *t, ..c.clone() })
                .collect();
            let marks = std::mem::take(&mut self.left_matched);
            cols.push(Vector::from_data(DataType::Boolean, crate::vector::Data::Bool(marks), None));
            let f = (self.out)(make_batch(cols, b.len))?;
            if f == Flow::Stop {
                *stopped = true;
            }
            return Ok(f);
        }
        let want_matched = match s.kind {
            JoinKind::Semi => true,
            JoinKind::Anti | JoinKind::Left | JoinKind::Full => false,
            _ => return Ok(Flow::Continue),
        };
        let rows: Vec<u32> = (0..b.len as u32)
            .filter(|&l| self.left_matched[l as usize] == want_matched)
            .collect();
        if rows.is_empty() {
            return Ok(Flow::Continue);
        }
        let mut cols: Vec<Vector> = b
            .columns
            .iter()
            .zip(out_types)
            .map(|(c, t)| {
                let mut v = c.gather(&rows);
                v.ty = *t;
                v
            })
            .collect();
        if matches!(s.kind, JoinKind::Left | JoinKind::Full) {
            let nl = b.columns.len();
            let none = vec![None; rows.len()];
            for (k, c) in build.cols.iter().enumerate() {
                cols.push(gather_opt(c, &none, out_types[nl + k]));
            }
        }
        let f = (self.out)(make_batch(cols, rows.len()))?;
        if f == Flow::Stop {
            *stopped = true;
        }
        Ok(f)
    }

    /// Every (left row, right row) pair of the batch, in chunks.
    fn nested_loop(&mut self, build: &Build, matched: &mut [bool], right_rows: &[u32]) -> Result<Flow> {
        let mut pairs = Vec::with_capacity(BATCH_SIZE);
        for l in 0..self.b.len as u32 {
            if !self.emits_pairs && self.left_matched[l as usize] {
                continue;
            }
            for &r in right_rows {
                pairs.push((l, r));
                if pairs.len() >= BATCH_SIZE && self.flush(&build.cols, matched, &mut pairs)? == Flow::Stop {
                    return Ok(Flow::Stop);
                }
            }
        }
        self.flush(&build.cols, matched, &mut pairs)
    }

    /// Checks `on` over the candidate pairs of probe rows and `right` rows, records
    /// matches (in `matched` too when it has a flag per right row: right and full
    /// joins) and emits matched pairs (for the joins that output them).
    fn flush(&mut self, right: &[Vector], matched: &mut [bool], pairs: &mut Vec<(u32, u32)>) -> Result<Flow> {
        if pairs.is_empty() {
            return Ok(Flow::Continue);
        }
        let lpos: Vec<u32> = pairs.iter().map(|p| p.0).collect();
        let rpos: Vec<u32> = pairs.iter().map(|p| p.1).collect();
        pairs.clear();
        let mut cols: Vec<Vector> = self.b.columns.iter().map(|c| c.gather(&lpos)).collect();
        cols.extend(right.iter().map(|c| c.gather(&rpos)));
        let n = lpos.len();
        let mut combined = make_batch(cols, n);
        let passing: Vec<u32> = match self.s.on {
            Some(on) => self.ex.pred(on, &combined)?,
            None => (0..n as u32).collect(),
        };
        for &k in &passing {
            self.left_matched[lpos[k as usize] as usize] = true;
            if let Some(m) = matched.get_mut(rpos[k as usize] as usize) {
                *m = true;
            }
        }
        if !self.emits_pairs || passing.is_empty() {
            return Ok(Flow::Continue);
        }
        for (c, t) in combined.columns.iter_mut().zip(self.out_types) {
            c.ty = *t;
        }
        if passing.len() < n {
            combined.sel = Some(passing);
        }
        (self.out)(combined)
    }

    /// Applies the right scan's `filter` to the rows fetched since the last call, joins
    /// the pairs that survive through `on` ([`Probe::flush`]), and empties the fetched
    /// rows.
    fn check_fetched(
        &mut self,
        build: &mut Build,
        pairs: &mut Vec<(u32, u32)>,
        filter: Option<&Expr>,
        decoder: &super::tuple_codec::RowDecoder,
    ) -> Result<Flow> {
        if build.len == 0 {
            return Ok(Flow::Continue);
        }
        let cols = std::mem::replace(&mut build.cols, decoder.new_vectors(BATCH_SIZE));
        let fetched = make_batch(cols, build.len);
        let keep = match filter {
            Some(f) => self.ex.pred(f, &fetched)?,
            None => (0..build.len as u32).collect(),
        };
        let mut keep_mask = vec![false; build.len];
        for &k in &keep {
            keep_mask[k as usize] = true;
        }
        pairs.retain(|p| keep_mask[p.1 as usize]);
        build.len = 0;
        self.flush(&fetched.columns, &mut [], pairs)
    }
}

/// An index nested-loop join ([`crate::plan::JoinMethod::IndexNestedLoop`]): for
/// each left row, the right table's rows whose index key equals the row's key
/// values are fetched and decoded, the right scan's filter keeps some, and the
/// pairs go through `on` as in the hash join. Rows fetched for a left batch are
/// handled at most a batch at a time. Inner, left, semi and anti joins.
pub(super) fn index_nested_loop(
    ex: &Exec<'_>,
    plan: &Plan,
    id: usize,
    s: JoinSpec<'_>,
    index: usize,
    out: Out,
) -> Result<Flow> {
    use beedb_storage::TupleId;
    use beedb_storage::btree::BTree;
    use beedb_storage::btree::key_encoding::prefix_successor;
    use beedb_storage::heap::HeapFile;
    use std::ops::Bound;

    use super::tuple_codec::{OwnedKey, RowDecoder, index_prefix, key_of};
    use crate::error::Error;
    use crate::plan::Node;

    let Node::TableScan { table, columns, filter, .. } = &s.right.node else {
        return Err(Error::internal("index nested-loop join over something other than a table scan"));
    };
    let idx = table
        .indexes
        .get(index)
        .filter(|i| i.columns.len() >= s.right_keys.len())
        .ok_or_else(|| Error::internal(format!("no index {index} on \"{}\" for a join", table.name)))?;
    if !matches!(s.kind, JoinKind::Inner | JoinKind::Left) && !s.kind.is_left_only() {
        return Err(Error::internal("index nested-loop join of an unsupported kind"));
    }
    let left_id = id + 1;
    let right_id = left_id + ex.subtree_size(s.left);
    let left_types = s.left.types();
    let out_types = plan.types();
    let decoder = RowDecoder::new(table, columns);
    let tree = BTree::open(idx.root);
    let heap = HeapFile::open(table.heap);
    let r = ex.ctx.reader;
    let emits_pairs = matches!(s.kind, JoinKind::Inner | JoinKind::Left);
    let (mut fetched, mut lookups) = (0u64, 0u64);
    let start = std::time::Instant::now();
    let mut stopped = false;
    let mut tids: Vec<TupleId> = Vec::new();
    let mut tuple = Vec::new();
    let mut keys: Vec<OwnedKey> = Vec::with_capacity(s.left_keys.len());
    let flow = ex.node(s.left, left_id, None, &mut |b| {
        let n = b.rows();
        if n == 0 {
            return Ok(Flow::Continue);
        }
        let b = super::dense(b, &left_types);
        let kv = s.left_keys.iter().map(|e| ex.eval(e, &b)).collect::<Result<Vec<_>>>()?;
        let mut p = Probe::new(ex, &s, &b, &out_types, emits_pairs, &mut *out);
        let mut build = Build { cols: decoder.new_vectors(BATCH_SIZE), len: 0, map: None, key_filters: Vec::new() };
        // (left row, fetched row) for the rows fetched since the last flush.
        let mut pairs: Vec<(u32, u32)> = Vec::with_capacity(BATCH_SIZE);
        'rows: for l in 0..n {
            // A semi, anti or mark join decides a left row by its first match.
            if !emits_pairs && p.left_matched[l] {
                continue;
            }
            keys.clear();
            for (k, v) in kv.iter().enumerate() {
                if v.is_null(l) {
                    continue 'rows; // NULL keys never match
                }
                match key_of(&v.value(l), &table.columns[idx.columns[k]].ty, None)? {
                    Ok(key) => keys.push(key),
                    Err(_) => continue 'rows, // no stored key can equal it
                }
            }
            let prefix = index_prefix(table, idx, &keys)?;
            let hi = prefix_successor(&prefix);
            let hi = hi.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
            tids.clear();
            {
                let mut cursor = tree.range(r, Bound::Included(&prefix), hi, beedb_storage::btree::Direction::Forward)?;
                while let Some((_, v)) = cursor.next_entry()? {
                    tids.push(TupleId::from_bytes(v).ok_or_else(|| Error::internal("malformed index value"))?);
                    if tids.len() % 4096 == 0 {
                        ex.check_mem("Index Nested Loop", tids.len() * std::mem::size_of::<TupleId>())?;
                    }
                }
            }
            lookups += 1;
            for &tid in &tids {
                if !heap.get_into(r, tid, &mut tuple)? {
                    return Err(Error::internal(format!(
                        "index of \"{}\" names tuple {tid}, which does not exist",
                        table.name
                    )));
                }
                decoder.decode_into(r, table, &tuple, &mut build.cols)?;
                pairs.push((l as u32, build.len as u32));
                build.len += 1;
                fetched += 1;
                if build.len == BATCH_SIZE
                    && p.check_fetched(&mut build, &mut pairs, filter.as_ref(), &decoder)? == Flow::Stop
                {
                    stopped = true;
                    return Ok(Flow::Stop);
                }
            }
        }
        if p.check_fetched(&mut build, &mut pairs, filter.as_ref(), &decoder)? == Flow::Stop {
            stopped = true;
            return Ok(Flow::Stop);
        }
        p.finish_left(&build, &mut stopped)
    });
    if let Some(p) = ex.profile {
        // The right scan's line: rows fetched, one loop per lookup.
        p.record_loops(right_id, fetched, lookups, start.elapsed());
    }
    let flow = flow?;
    Ok(if stopped { Flow::Stop } else { flow })
}
