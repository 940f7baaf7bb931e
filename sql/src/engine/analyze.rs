//! ANALYZE: a table's row count and its columns' statistics ([`ColumnStats`]), from
//! a sample of its rows, stored in the catalog; and the automatic ANALYZE that runs
//! after bulk writes and after enough changed rows, so no user has to run it (the lesson of
//! the POSTGRES study: statistics nobody gathers are statistics nobody has).
//!
//! The automatic ANALYZE never runs inside an INSERT, UPDATE or DELETE. They count
//! the rows they change per table ([`super::Ctx::note_changes`]); at commit a
//! transaction's counts join the database's counts of changes since each table's
//! last ANALYZE. A table is due when its changes exceed [`AUTO_ANALYZE_ROWS`] +
//! [`AUTO_ANALYZE_FRACTION`] of its rows at that ANALYZE (PostgreSQL's autovacuum
//! threshold; [`deferred_sample`]). The next autocommit statement that only reads
//! and names a due table analyzes it before it plans (`engine::analyze_deferred`):
//! sampled through a snapshot of its own, with no lock held, the statistics stored by
//! a short transaction that only tries the write lock (a busy lock leaves the table
//! due). COPY, CREATE TABLE AS and CREATE INDEX analyze the table themselves when its
//! row count moved enough ([`analyze_if_stale`]).
//!
//! A run's cost is bounded by the changes that made it due: a table that already has
//! statistics is re-analyzed from a sample of about as many rows as changed (at least
//! [`AUTO_SAMPLE_ROWS_MIN`], at most [`SAMPLE_ROWS`]), drawn uniformly from the whole
//! table ([`sample_by_pages`]: the live tuples are counted page by page, and only the
//! sampled tuples are copied and decoded). Amortized, each changed row pays for about
//! one sampled row, however often the threshold fires. A table without statistics, a
//! bulk write (COPY of many rows) and `ANALYZE` itself sample up to [`SAMPLE_ROWS`]
//! rows.
//!
//! `ANALYZE` makes one pass over the heap that counts the live tuples and keeps a
//! uniform random sample of [`SAMPLE_ROWS`] of them (reservoir sampling, seeded by the
//! table id so a plan does not change between two runs of ANALYZE on the same data).
//! Only the sampled tuples are decoded. From the sample, per column, as PostgreSQL's `analyze.c`
//! computes them: the NULL fraction, the distinct count (Haas and Stokes' Duj1
//! estimator), the most common values, an equi-depth histogram of the rest, the
//! minimum and maximum, the average width, and the correlation between value order
//! and heap order.

use std::cmp::Ordering;
use std::sync::Arc;

use beedb_storage::heap::{HeapFile, HeapPage};
use sqlparser::ast;

use super::Ctx;
use crate::binder::object_name;
use crate::catalog::{ColumnStats, TableDef, TableStats};
use crate::error::{Error, Result};
use crate::exec::tuple_codec::{RowDecoder, encode_value_into};
use crate::session::QueryResult;
use crate::types::text::bpchar_trim;
use crate::types::{DataType, Value};
use crate::vector::{Data, Vector};

/// Rows sampled per table: PostgreSQL's 300 × its default statistics target (100).
/// Errors of the distinct-count and histogram estimates shrink with the sample, not
/// with the table, so a fixed sample serves tables of any size.
pub const SAMPLE_ROWS: usize = 30_000;
/// Most common values kept per column, and histogram buckets (PostgreSQL's default
/// statistics target).
pub const STATISTICS_TARGET: usize = 100;
/// Values wider than this (in bytes) are left out of the common values and the
/// histogram: they would bloat the catalog, and equality with a long value is rare.
const MAX_STORED_WIDTH: usize = 256;
/// Automatic ANALYZE runs when a table's row count moved by more than this many rows
/// plus [`AUTO_ANALYZE_FRACTION`] of the count at the last ANALYZE (PostgreSQL's
/// autovacuum defaults).
pub const AUTO_ANALYZE_ROWS: u64 = 50;
pub const AUTO_ANALYZE_FRACTION: f64 = 0.1;
/// The fewest rows an automatic re-ANALYZE samples (PostgreSQL's sample at a
/// statistics target of 1): below it the common values and distinct counts of small
/// tables would swing from run to run.
pub const AUTO_SAMPLE_ROWS_MIN: usize = 300;

/// `ANALYZE [table]`: statistics of one table, or of every table.
pub fn analyze(ctx: &mut Ctx<'_>, a: &ast::Analyze) -> Result<QueryResult> {
    if a.partitions.is_some() || !a.columns.is_empty() || a.for_columns || a.noscan || a.cache_metadata {
        return Err(Error::not_supported("ANALYZE with options or a column list is not supported"));
    }
    let tables: Vec<Arc<TableDef>> = match &a.table_name {
        Some(n) => {
            let name = object_name(n)?;
            vec![ctx.catalog().table(&name).cloned().ok_or_else(|| Error::undefined_table(&name))?]
        }
        None => ctx.catalog().tables.values().cloned().collect(),
    };
    for t in tables {
        analyze_table(ctx, &t)?;
    }
    Ok(QueryResult::command("ANALYZE"))
}

/// After a statement wrote rows (COPY, CREATE TABLE AS, CREATE INDEX, INSERT,
/// DELETE):
/// analyzes `table` when it has no column statistics yet or its size moved enough
/// ([`auto_analyze_sample`]).
pub fn analyze_if_stale(ctx: &mut Ctx<'_>, table: &TableDef) -> Result<()> {
    if let Some(sample_rows) = auto_analyze_sample(ctx, table) {
        analyze_sampled(ctx, table, sample_rows)?;
    }
    Ok(())
}

/// When `table`'s statistics are missing or stale — its row count (as the engine
/// knows it, from inserts and full scans) moved by more than the automatic ANALYZE
/// threshold since the last ANALYZE — the rows the
/// automatic ANALYZE samples: [`SAMPLE_ROWS`] for a table without statistics, else
/// as many as its count moved by since the last ANALYZE, within
/// [`AUTO_SAMPLE_ROWS_MIN`]..=[`SAMPLE_ROWS`] (see the module's documentation).
fn auto_analyze_sample(ctx: &Ctx<'_>, table: &TableDef) -> Option<usize> {
    let now = ctx.bee_cache.relation_size(table.id as u64);
    match ctx.catalog().stats.get(&table.id) {
        Some(s) if !s.columns.is_empty() => {
            let moved = now.abs_diff(s.rows);
            let threshold = AUTO_ANALYZE_ROWS as f64 + AUTO_ANALYZE_FRACTION * s.rows as f64;
            (moved as f64 > threshold)
                .then(|| usize::try_from(moved).unwrap_or(usize::MAX).clamp(AUTO_SAMPLE_ROWS_MIN, SAMPLE_ROWS))
        }
        // Never analyzed (or empty when analyzed): as soon as it holds rows.
        _ => (now > 0).then_some(SAMPLE_ROWS),
    }
}

/// Counts `table`'s rows, samples them, and stores the row count and column
/// statistics in the transaction's catalog (saved at commit).
pub fn analyze_table(ctx: &mut Ctx<'_>, table: &TableDef) -> Result<()> {
    analyze_sampled(ctx, table, SAMPLE_ROWS)
}

/// [`analyze_table`] from a sample of at most `sample_rows` rows (the whole table
/// when it holds no more).
fn analyze_sampled(ctx: &mut Ctx<'_>, table: &TableDef, sample_rows: usize) -> Result<()> {
    let stats = gather(ctx, table, sample_rows)?;
    ctx.txn.remember_relation_size(table.id as u64, ctx.bee_cache);
    ctx.bee_cache.note_relation_size(table.id as u64, stats.rows.max(1));
    ctx.txn.stats_mut().insert(table.id, stats);
    // The table's count of changes starts again when this transaction commits.
    ctx.txn.changed.remove(&table.id);
    ctx.txn.analyzed.push(table.id);
    Ok(())
}

/// `table`'s statistics from a sample of at most `sample_rows` rows, read through
/// the statement's transaction (a snapshot or the writer); stores nothing.
fn gather(ctx: &Ctx<'_>, table: &TableDef, sample_rows: usize) -> Result<TableStats> {
    let (rows, pages, sample) = if sample_rows >= SAMPLE_ROWS {
        self::sample_rows(ctx, table)?
    } else {
        sample_by_pages(ctx, table, sample_rows)?
    };
    let columns = if sample.is_empty() { Vec::new() } else { column_stats(ctx, table, rows, &sample)? };
    Ok(TableStats { rows, pages, columns })
}

/// Whether `table`, with `changes` rows inserted, updated or deleted since its last
/// ANALYZE, is due for the automatic one, and if so the rows to sample: a table with
/// statistics when the changes exceed [`AUTO_ANALYZE_ROWS`] +
/// [`AUTO_ANALYZE_FRACTION`] of its rows at that ANALYZE (PostgreSQL's
/// autovacuum threshold), sampling about as many rows as changed (within
/// [`AUTO_SAMPLE_ROWS_MIN`]..=[`SAMPLE_ROWS`]); a table without column statistics as
/// soon as it changed, sampling up to [`SAMPLE_ROWS`].
pub(super) fn deferred_sample(catalog: &crate::catalog::Catalog, table: &TableDef, changes: u64) -> Option<usize> {
    if changes == 0 {
        return None;
    }
    match catalog.stats.get(&table.id) {
        Some(s) if !s.columns.is_empty() => {
            let threshold = AUTO_ANALYZE_ROWS as f64 + AUTO_ANALYZE_FRACTION * s.rows as f64;
            (changes as f64 > threshold)
                .then(|| usize::try_from(changes).unwrap_or(usize::MAX).clamp(AUTO_SAMPLE_ROWS_MIN, SAMPLE_ROWS))
        }
        _ => Some(SAMPLE_ROWS),
    }
}

/// The deferred automatic ANALYZE of one table (`engine::analyze_deferred`): its
/// statistics from a sample read through `ctx`'s snapshot, with no lock held.
pub(super) fn gather_deferred(ctx: &Ctx<'_>, table: &TableDef, sample_rows: usize) -> Result<TableStats> {
    gather(ctx, table, sample_rows)
}

/// A sampled tuple: its ordinal in heap order and its bytes.
type Sampled = (u64, Vec<u8>);

/// SplitMix64: a small, fast generator whose quality is ample for choosing samples.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0); the bias of the modulo is below 2⁻⁴⁰ for the
    /// table sizes a sample is drawn from.
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// One pass over the heap: the live tuple count, the heap's page count and a uniform
/// sample (Vitter's algorithm R), returned in heap order.
fn sample_rows(ctx: &Ctx<'_>, table: &TableDef) -> Result<(u64, u64, Vec<Sampled>)> {
    let r = ctx.txn.reader();
    let mut rng = SplitMix64(0x5EED ^ table.id as u64);
    let mut sample: Vec<Sampled> = Vec::new();
    let mut seen = 0u64;
    let mut pages = 0u64;
    for g in HeapFile::open(table.heap).pages(r) {
        let g = g?;
        pages += 1;
        for (_, tuple) in HeapPage::new(&g, g.id())?.tuples()? {
            if sample.len() < SAMPLE_ROWS {
                sample.push((seen, tuple.to_vec()));
            } else {
                let j = rng.below(seen + 1) as usize;
                if j < SAMPLE_ROWS {
                    let slot = &mut sample[j];
                    slot.0 = seen;
                    slot.1.clear();
                    slot.1.extend_from_slice(tuple);
                }
            }
            seen += 1;
        }
        ctx.interrupt.check()?;
    }
    sample.sort_unstable_by_key(|s| s.0);
    Ok((seen, pages, sample))
}

/// The live tuple count, the heap's page count and a uniform sample of `limit` of
/// them (all, when the table
/// holds no more), in heap order, for the automatic ANALYZE: a first pass counts each
/// page's live tuples (slot entries only, no tuple is copied), then `limit` ordinals
/// are drawn (Floyd's algorithm) and only the pages holding them are read again. The
/// cost is the page count plus the sample, where reservoir sampling
/// ([`sample_rows`]) copies a tuple for every replacement it makes.
fn sample_by_pages(ctx: &Ctx<'_>, table: &TableDef, limit: usize) -> Result<(u64, u64, Vec<Sampled>)> {
    let r = ctx.txn.reader();
    let mut pages: Vec<(beedb_storage::PageId, u64)> = Vec::new();
    let mut rows = 0u64;
    let mut heap_pages = 0u64;
    for g in HeapFile::open(table.heap).pages(r) {
        let g = g?;
        heap_pages += 1;
        let live = HeapPage::new(&g, g.id())?.tuples()?.count() as u64;
        if live > 0 {
            pages.push((g.id(), live));
            rows += live;
        }
    }
    ctx.interrupt.check()?;
    let mut sample: Vec<Sampled> = Vec::with_capacity(limit.min(rows as usize));
    if rows <= limit as u64 {
        for &(id, _) in &pages {
            let g = r.read_page(id)?;
            for (_, tuple) in HeapPage::new(&g, id)?.tuples()? {
                sample.push((sample.len() as u64, tuple.to_vec()));
            }
        }
        return Ok((sample.len() as u64, heap_pages, sample));
    }
    // Floyd's algorithm: `limit` distinct ordinals in 0..rows, each set equally likely.
    let mut rng = SplitMix64(0x5EED ^ table.id as u64 ^ rows.rotate_left(32));
    let mut chosen: std::collections::HashSet<u64> = std::collections::HashSet::with_capacity(limit);
    for j in rows - limit as u64..rows {
        let t = rng.below(j + 1);
        if !chosen.insert(t) {
            chosen.insert(j);
        }
    }
    let mut ordinals: Vec<u64> = chosen.into_iter().collect();
    ordinals.sort_unstable();
    let mut next = 0usize;
    let mut first = 0u64;
    for &(id, live) in &pages {
        if next == ordinals.len() {
            break;
        }
        if ordinals[next] >= first + live {
            first += live;
            continue;
        }
        let g = r.read_page(id)?;
        for (k, (_, tuple)) in HeapPage::new(&g, id)?.tuples()?.enumerate() {
            if next < ordinals.len() && ordinals[next] == first + k as u64 {
                sample.push((ordinals[next], tuple.to_vec()));
                next += 1;
            }
        }
        first += live;
    }
    ctx.interrupt.check()?;
    Ok((rows, heap_pages, sample))
}

/// Every column's statistics from the sample of a table of `rows` rows.
fn column_stats(ctx: &Ctx<'_>, table: &TableDef, rows: u64, sample: &[Sampled]) -> Result<Vec<ColumnStats>> {
    let r = ctx.txn.reader();
    let all: Vec<usize> = (0..table.columns.len()).collect();
    let decoder = RowDecoder::new(table, &all);
    let mut vectors = decoder.new_vectors(sample.len());
    for (_, tuple) in sample {
        decoder.decode_into(r, table, tuple, &mut vectors)?;
    }
    ctx.interrupt.check()?;
    let whole_table = sample.len() as u64 == rows;
    let mut out = Vec::with_capacity(vectors.len());
    for (v, c) in vectors.iter().zip(&table.columns) {
        out.push(one_column(v, &c.ty, rows, whole_table)?);
        ctx.interrupt.check()?;
    }
    Ok(out)
}

/// One column's statistics from its sampled values `v` (in heap order).
fn one_column(v: &Vector, ty: &DataType, rows: u64, whole_table: bool) -> Result<ColumnStats> {
    let n_sample = v.len();
    let present: Vec<u32> = (0..n_sample).filter(|&i| !v.is_null(i)).map(|i| i as u32).collect();
    let n = present.len();
    let null_frac = (n_sample - n) as f64 / n_sample.max(1) as f64;
    if n == 0 {
        return Ok(ColumnStats { null_frac, ..ColumnStats::default() });
    }
    let avg_width = average_width(v, ty, &present)?;
    let values = Ordered::new(v, &present);
    let correlation = correlation(&values, n_sample);

    // Runs of equal values: (first index in `values`, length).
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for i in 0..n {
        match runs.last_mut() {
            Some((start, len)) if values.same(*start, i) => *len += 1,
            _ => runs.push((i, 1)),
        }
    }
    let d = runs.len() as f64;
    let f1 = runs.iter().filter(|r| r.1 == 1).count() as f64;
    let nonnull_rows = (rows as f64 * (1.0 - null_frac)).max(n as f64);
    let mut distinct = if whole_table {
        d
    } else if f1 == d {
        // Every sampled value differs: take the column as unique.
        nonnull_rows
    } else {
        // Duj1: n·d / (n − f1 + f1·n/N).
        let n = n as f64;
        (n * d / (n - f1 + f1 * n / nonnull_rows)).clamp(d, nonnull_rows)
    };
    // A column whose distinct values are a tenth of the rows or more grows with the
    // table: store it as a fraction of the rows.
    let total = rows.max(1) as f64;
    if distinct > 0.1 * total {
        distinct = -(distinct / total).min(1.0);
    }
    let ndv = if distinct < 0.0 { -distinct * total } else { distinct };

    // Most common values: seen at least twice and clearly more often than the average
    // value; all of them when the sample saw every value of the column.
    let storable = |i: usize| values.storable(v, i);
    let mut by_count: Vec<(usize, usize)> = runs.iter().copied().filter(|&(s, len)| len >= 2 && storable(s)).collect();
    by_count.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let all_seen = runs.len() <= STATISTICS_TARGET && (whole_table || f1 == 0.0);
    let min_count = if all_seen { 1.0 } else { (1.25 * n as f64 / ndv.max(1.0)).max(2.0) };
    let mcv_runs: Vec<(usize, usize)> = if all_seen {
        let mut all: Vec<(usize, usize)> = runs.iter().copied().filter(|&(s, _)| storable(s)).collect();
        all.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        all
    } else {
        by_count.into_iter().filter(|&(_, len)| len as f64 >= min_count).take(STATISTICS_TARGET).collect()
    };
    let mcv: Vec<(Value, f64)> =
        mcv_runs.iter().map(|&(s, len)| (values.value(v, s), len as f64 / n_sample as f64)).collect();

    // The histogram: equi-depth bounds over the values not among the common ones.
    let mut in_mcv = vec![false; runs.len()];
    for &(s, _) in &mcv_runs {
        // Runs are in order of their first index.
        if let Ok(k) = runs.binary_search_by_key(&s, |r| r.0) {
            in_mcv[k] = true;
        }
    }
    // Indexes into `values` of the values not among the common ones, in value order.
    let rest: Vec<usize> = runs
        .iter()
        .enumerate()
        .filter(|&(k, &(s, _))| !in_mcv[k] && storable(s))
        .flat_map(|(_, &(s, len))| s..s + len)
        .collect();
    let distinct_rest = runs.iter().enumerate().filter(|&(k, &(s, _))| !in_mcv[k] && storable(s)).count();
    let histogram = if distinct_rest >= 2 {
        let buckets = rest.len().min(STATISTICS_TARGET + 1);
        let mut bounds: Vec<usize> = Vec::with_capacity(buckets);
        for b in 0..buckets {
            let i = rest[b * (rest.len() - 1) / (buckets - 1)];
            if bounds.last().is_none_or(|&last| !values.same(last, i)) {
                bounds.push(i);
            }
        }
        if bounds.len() >= 2 { bounds.iter().map(|&i| values.value(v, i)).collect() } else { Vec::new() }
    } else {
        Vec::new()
    };
    let keep = |i: usize| if storable(i) { values.value(v, i) } else { Value::Null };
    Ok(ColumnStats {
        null_frac,
        distinct,
        avg_width,
        mcv,
        histogram,
        min: keep(0),
        max: keep(n - 1),
        correlation,
    })
}

/// The average stored width of the non-NULL values at `present`: the bytes of each
/// string; one value's encoding for the other types, whose width is fixed.
fn average_width(v: &Vector, ty: &DataType, present: &[u32]) -> Result<f64> {
    let total = match &v.data {
        Data::Str(s) => present.iter().map(|&i| s.get(i as usize).len()).sum::<usize>(),
        _ => {
            let mut scratch = Vec::new();
            encode_value_into(&v.value(present[0] as usize), ty, &mut scratch)?;
            scratch.len() * present.len()
        }
    };
    Ok(total as f64 / present.len() as f64)
}

/// A column's non-NULL sampled values in value order (as `cmp_sql` orders them),
/// ties in heap order, each with its position in the sample. Integers, dates,
/// timestamps, floats, booleans and decimals of a fixed scale sort by an `i64` key
/// that orders and equates exactly as `cmp_sql` does; strings by their bytes
/// (`char(n)` without its trailing blanks); the rest by value. The typed forms sort
/// 16-byte entries without a `Value` per row: ANALYZE of a fresh table runs inside
/// COPY and CREATE TABLE AS, so its cost is theirs.
enum Ordered<'v> {
    Keys(Vec<(i64, u32)>),
    Strs(Vec<(&'v str, u32)>),
    Values(Vec<(Value, u32)>),
}

impl<'v> Ordered<'v> {
    fn new(v: &'v Vector, present: &[u32]) -> Ordered<'v> {
        fn keyed(present: &[u32], key: impl Fn(usize) -> i64) -> Ordered<'static> {
            let mut keys: Vec<(i64, u32)> = present.iter().map(|&i| (key(i as usize), i)).collect();
            keys.sort_unstable();
            Ordered::Keys(keys)
        }
        match &v.data {
            Data::Bool(x) => keyed(present, |i| x[i] as i64),
            Data::I16(x) => keyed(present, |i| x[i] as i64),
            Data::I32(x) => keyed(present, |i| x[i] as i64),
            Data::I64(x) => keyed(present, |i| x[i]),
            Data::F32(x) => keyed(present, |i| float_key(x[i] as f64)),
            Data::F64(x) => keyed(present, |i| float_key(x[i])),
            // One column's 64-bit decimals share its scale: their unscaled values order
            // as the decimals do.
            Data::Dec64(x) => keyed(present, |i| x.values[i]),
            Data::Str(s) => {
                let bpchar = matches!(v.ty, DataType::Char(_));
                let mut strs: Vec<(&str, u32)> = present
                    .iter()
                    .map(|&i| {
                        let x = s.get(i as usize);
                        (if bpchar { bpchar_trim(x) } else { x }, i)
                    })
                    .collect();
                strs.sort_unstable();
                Ordered::Strs(strs)
            }
            Data::Dec(_) | Data::Interval(_) => {
                let mut values: Vec<(Value, u32)> = present.iter().map(|&i| (v.value(i as usize), i)).collect();
                // Values of one column always compare; `Equal` only guards against a type
                // the comparison does not know. Stable: ties keep heap order.
                values.sort_by(|a, b| a.0.cmp_sql(&b.0).unwrap_or(Ordering::Equal));
                Ordered::Values(values)
            }
        }
    }

    fn len(&self) -> usize {
        match self {
            Ordered::Keys(k) => k.len(),
            Ordered::Strs(s) => s.len(),
            Ordered::Values(v) => v.len(),
        }
    }

    /// The sample position of the `k`th value in order.
    fn position(&self, k: usize) -> usize {
        (match self {
            Ordered::Keys(x) => x[k].1,
            Ordered::Strs(x) => x[k].1,
            Ordered::Values(x) => x[k].1,
        }) as usize
    }

    /// Whether the `a`th and `b`th values are equal.
    fn same(&self, a: usize, b: usize) -> bool {
        match self {
            Ordered::Keys(x) => x[a].0 == x[b].0,
            Ordered::Strs(x) => x[a].0 == x[b].0,
            Ordered::Values(x) => x[a].0.cmp_sql(&x[b].0).unwrap_or(Ordering::Equal) == Ordering::Equal,
        }
    }

    /// The `k`th value (as the column stores it).
    fn value(&self, v: &Vector, k: usize) -> Value {
        match self {
            Ordered::Values(x) => x[k].0.clone(),
            _ => v.value(self.position(k)),
        }
    }

    /// Whether the `k`th value is short enough to keep in the statistics.
    fn storable(&self, v: &Vector, k: usize) -> bool {
        match (self, &v.data) {
            (Ordered::Strs(_), Data::Str(s)) => s.get(self.position(k)).len() <= MAX_STORED_WIDTH,
            _ => true,
        }
    }
}

/// `x`'s bits made order-preserving as an i64 (IEEE 754 totally ordered once the
/// sign bit is folded), after `-0` becomes `0` and every NaN one NaN above infinity.
fn float_key(x: f64) -> i64 {
    let x = if x == 0.0 { 0.0 } else if x.is_nan() { f64::NAN } else { x };
    let bits = x.to_bits() as i64;
    if bits < 0 { bits ^ i64::MAX } else { bits }
}

/// Pearson's correlation between the heap positions of `sorted`'s values (in value
/// order, ties in heap order) and their rank: 1 when the heap is in value order, −1
/// in reverse order, near 0 when unrelated. `n_sample` bounds the positions.
fn correlation(sorted: &Ordered<'_>, n_sample: usize) -> f64 {
    let len = sorted.len();
    let n = len as f64;
    if len < 2 {
        return 1.0;
    }
    // Ranks 0..n and positions are both permutations' worth of numbers; positions
    // are ranked too (sample positions skip NULLs): a position's rank is the number of
    // sampled non-NULL positions below it, counted in one pass over the positions.
    let mut present = vec![false; n_sample];
    for k in 0..len {
        present[sorted.position(k)] = true;
    }
    let mut rank_of = vec![0u32; n_sample];
    let mut next = 0u32;
    for (p, &here) in present.iter().enumerate() {
        if here {
            rank_of[p] = next;
            next += 1;
        }
    }
    let mean = (n - 1.0) / 2.0;
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for value_rank in 0..len {
        let x = value_rank as f64 - mean;
        let p = rank_of[sorted.position(value_rank)] as f64;
        sxy += x * (p - mean);
        sxx += x * x;
    }
    if sxx == 0.0 { 1.0 } else { (sxy / sxx).clamp(-1.0, 1.0) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ints(xs: &[Option<i64>]) -> Vector {
        let mut v = Vector::new(DataType::BigInt, xs.len());
        for x in xs {
            match x {
                Some(x) => v.push_value(&Value::BigInt(*x)),
                None => v.push_null(),
            }
        }
        v
    }

    #[test]
    fn a_unique_column_sampled_from_a_larger_table_is_a_fraction_of_the_rows() {
        let v = ints(&(0..1000).map(Some).collect::<Vec<_>>());
        let s = one_column(&v, &DataType::BigInt, 1_000_000, false).unwrap();
        assert_eq!(s.distinct, -1.0);
        assert_eq!(s.distinct_in(2_000_000.0), 2_000_000.0);
        assert!(s.mcv.is_empty());
        assert_eq!(s.histogram.len(), STATISTICS_TARGET + 1);
        assert_eq!(s.histogram[0], Value::BigInt(0));
        assert_eq!(s.histogram[STATISTICS_TARGET], Value::BigInt(999));
        assert_eq!((s.min.clone(), s.max.clone()), (Value::BigInt(0), Value::BigInt(999)));
        assert!((s.correlation - 1.0).abs() < 1e-9);
        assert_eq!(s.avg_width, 8.0);
    }

    #[test]
    fn few_values_are_all_common_values_with_their_frequencies() {
        // 3 values, a quarter NULL, in descending heap order.
        let mut xs = Vec::new();
        for _ in 0..300 {
            xs.push(Some(3));
        }
        for _ in 0..200 {
            xs.push(Some(2));
        }
        for _ in 0..100 {
            xs.push(Some(1));
        }
        for _ in 0..200 {
            xs.push(None);
        }
        let s = one_column(&ints(&xs), &DataType::BigInt, 800, true).unwrap();
        assert_eq!(s.null_frac, 0.25);
        assert_eq!(s.distinct, 3.0);
        assert_eq!(
            s.mcv,
            vec![(Value::BigInt(3), 300.0 / 800.0), (Value::BigInt(2), 0.25), (Value::BigInt(1), 100.0 / 800.0)]
        );
        assert!(s.histogram.is_empty());
        // Stored in descending blocks (ties keep heap order, as PostgreSQL ranks them).
        assert!(s.correlation < -0.5, "{}", s.correlation);
    }

    #[test]
    fn skewed_column_keeps_its_heavy_hitters_and_a_histogram_of_the_rest() {
        // Value 0 in half the rows, the rest unique: sampled from a table 10× larger.
        let xs: Vec<Option<i64>> = (0..2000).map(|i| Some(if i % 2 == 0 { 0 } else { i })).collect();
        let s = one_column(&ints(&xs), &DataType::BigInt, 20_000, false).unwrap();
        assert_eq!(s.mcv.len(), 1);
        assert_eq!(s.mcv[0].0, Value::BigInt(0));
        assert!((s.mcv[0].1 - 0.5).abs() < 1e-9);
        assert!(!s.histogram.iter().any(|b| *b == Value::BigInt(0)));
        // Duj1 on 2,000 values, 1,001 distinct, 1,000 seen once, of 20,000 rows:
        // n·d / (n − f1 + f1·n/N) = 2,000·1,001 / 1,100. (The table holds 10,001:
        // Duj1 underestimates under such skew, as it does in PostgreSQL.)
        let ndv = s.distinct_in(20_000.0);
        assert!((ndv - 2_002_000.0 / 1_100.0).abs() < 1e-6, "{ndv}");
    }

    #[test]
    fn correlation_follows_heap_order() {
        let up = one_column(&ints(&(0..500).map(Some).collect::<Vec<_>>()), &DataType::BigInt, 500, true).unwrap();
        let down = one_column(&ints(&(0..500).rev().map(Some).collect::<Vec<_>>()), &DataType::BigInt, 500, true).unwrap();
        // A shuffled column: every 7th value mod a prime, no order to speak of.
        let mixed: Vec<Option<i64>> = (0..500).map(|i| Some(i * 211 % 499)).collect();
        let mixed = one_column(&ints(&mixed), &DataType::BigInt, 500, true).unwrap();
        assert!((up.correlation - 1.0).abs() < 1e-9);
        assert!((down.correlation + 1.0).abs() < 1e-9);
        assert!(mixed.correlation.abs() < 0.2, "{}", mixed.correlation);
    }

    /// Every typed order (keys, strings) sorts a column as a stable sort by
    /// `cmp_sql` does, ties in heap order; NULLs are left out.
    #[test]
    fn typed_orders_sort_as_cmp_sql() {
        use crate::types::{Date, Decimal, Timestamp};
        let doubles = [f64::NEG_INFINITY, -1e300, -2.5, -1.0, -1e-300, -0.0, 0.0, 1e-300, 1.0, 2.5, f64::INFINITY, f64::NAN, -f64::NAN];
        let dec = |s: &str| Value::Decimal(Decimal::parse(s).unwrap().apply_typmod(12, 2).unwrap());
        let columns: Vec<(DataType, Vec<Value>)> = vec![
            (DataType::Double, doubles.iter().map(|&x| Value::Double(x)).collect()),
            (DataType::Real, doubles.iter().map(|&x| Value::Real(x as f32)).collect()),
            (DataType::BigInt, [i64::MIN, 7, -7, -1, 0, 1, 7, i64::MAX, 0].iter().map(|&x| Value::BigInt(x)).collect()),
            (DataType::Integer, [3i32, -3, 0, 3, i32::MIN].iter().map(|&x| Value::Integer(x)).collect()),
            (DataType::SmallInt, [3i16, -3, 0, 3].iter().map(|&x| Value::SmallInt(x)).collect()),
            (DataType::Date, [5, -5, 0, 5].iter().map(|&x| Value::Date(Date(x))).collect()),
            (DataType::Timestamp, [5i64, -5, 0, 5].iter().map(|&x| Value::Timestamp(Timestamp(x))).collect()),
            (DataType::Boolean, [true, false, true, false].iter().map(|&x| Value::Boolean(x)).collect()),
            (
                DataType::Decimal { precision: Some(12), scale: 2 },
                ["1.5", "-1.5", "0", "-0.01", "1.50", "9999999999.99", "-9999999999.99"].iter().map(|s| dec(s)).collect(),
            ),
            (
                DataType::Decimal { precision: None, scale: 0 },
                ["1.5", "-1.5", "0", "1.50", "123456789012345678901234567890"].iter().map(|s| Value::Decimal(Decimal::parse(s).unwrap())).collect(),
            ),
            (DataType::Text, ["b", "a", "", "ab", "a ", "é", "a", "B"].iter().map(|s| Value::Text(s.to_string())).collect()),
            (DataType::Char(3), ["b  ", "a  ", "   ", "ab ", "a  ", "B  "].iter().map(|s| Value::Char(s.to_string())).collect()),
        ];
        for (ty, vals) in columns {
            let mut v = Vector::new(ty.clone(), vals.len() + 1);
            v.push_null();
            for x in &vals {
                v.push_value(x);
            }
            let present: Vec<u32> = (1..=vals.len() as u32).collect();
            let ordered = Ordered::new(&v, &present);
            let mut expected: Vec<usize> = (1..=vals.len()).collect();
            expected.sort_by(|&a, &b| v.value(a).cmp_sql(&v.value(b)).unwrap());
            let got: Vec<usize> = (0..ordered.len()).map(|k| ordered.position(k)).collect();
            assert_eq!(got, expected, "{ty}");
            for k in 1..ordered.len() {
                let equal = v.value(got[k - 1]).cmp_sql(&v.value(got[k])) == Some(Ordering::Equal);
                assert_eq!(ordered.same(k - 1, k), equal, "{ty} at {k}");
            }
        }
    }

    #[test]
    fn an_all_null_column_has_only_its_null_fraction() {
        let s = one_column(&ints(&[None, None]), &DataType::BigInt, 2, true).unwrap();
        assert_eq!(s.null_frac, 1.0);
        assert_eq!(s.distinct, 0.0);
        assert!(s.mcv.is_empty() && s.histogram.is_empty());
        assert_eq!(s.min, Value::Null);
    }

    #[test]
    fn long_strings_are_counted_but_not_stored() {
        let long = "x".repeat(MAX_STORED_WIDTH + 1);
        let mut v = Vector::new(DataType::Text, 4);
        for s in [&long, &long, &"a".to_string(), &"b".to_string()] {
            v.push_value(&Value::Text(s.clone()));
        }
        let s = one_column(&v, &DataType::Text, 4, true).unwrap();
        assert_eq!(s.distinct_in(4.0), 3.0);
        assert!(s.mcv.iter().all(|(x, _)| *x != Value::Text(long.clone())));
        assert_eq!(s.max, Value::Null);
    }
}
