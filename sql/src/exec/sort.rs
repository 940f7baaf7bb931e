//! Sort, and top-N when a LIMIT sits directly on the sort: the buffer is cut back to
//! the first N rows whenever it holds twice that many.
//!
//! Out of core (issue 12, item 4): the rows and their evaluated sort keys gather in a
//! buffer; when it reaches half of `memory_limit` it is sorted and written as a
//! *run* to a temporary file ([`BatchFile`], unlinked at creation), and a new buffer
//! starts. At the end the runs — and the last buffer, sorted in memory — are merged
//! k ways through a binary heap of the runs' current rows, compared with
//! [`cmp_sort`] as the in-memory sort compares them; rows tied on every key come
//! out in run order, and runs are made in input order, so the result is the one the
//! stable in-memory sort gives. Each run is read a record at a time, its records
//! and read buffer sized from the limit, so that the merge's inputs together stay
//! within half the limit; when there are more runs than that allows, consecutive
//! runs are first merged into longer ones (more passes). When nothing spills the
//! sort is the in-memory sort, unchanged. The only error left is a single row wider
//! than the limit (53200), or a disk error; the files go when the sort's state is
//! dropped, whether it ended, failed or was cancelled.

use std::cmp::Ordering;

use beedb_bees::SortBee;

use super::interrupt::Interrupt;
use super::keys::cmp_sort;
use super::spill::{BatchFile, BatchReader};
use super::{Exec, Flow, Out, make_batch, memory_limit_error};
use crate::error::Result;
use crate::plan::{Plan, SortKey};
use crate::types::DataType;
use crate::vector::{BATCH_SIZE, Batch, Data, Vector};

/// Bounds of the size of one record (a batch of a run) and of a run file's read
/// and write buffer: a 256th of the memory limit within these.
const RECORD_BYTES_MIN: usize = 1 << 10;
const RECORD_BYTES_MAX: usize = 256 << 10;

/// Fewest rows a sort orders with its sort bee: below, encoding the keys costs about
/// what it saves (measured: see `bees/README.md`).
const MIN_BEE_ROWS: usize = 64;

/// Most runs merged at once (each holds a file open).
const MAX_FAN_IN: usize = 256;

/// Memory of one merge input besides its read buffer and current batch.
const INPUT_OVERHEAD_BYTES: usize = 512;

struct Buffer {
    cols: Vec<Vector>,
    keys: Vec<Vector>,
    len: usize,
}

impl Buffer {
    fn new(types: &[DataType], key_types: &[DataType]) -> Buffer {
        Buffer {
            cols: types.iter().map(|t| Vector::new(*t, 0)).collect(),
            keys: key_types.iter().map(|t| Vector::new(*t, 0)).collect(),
            len: 0,
        }
    }

    /// Rows `a` and `b` compared on every key.
    fn cmp_rows(&self, sort_keys: &[SortKey], a: u32, b: u32) -> Ordering {
        for (k, sk) in self.keys.iter().zip(sort_keys) {
            let o = cmp_sort(k, a as usize, k, b as usize, sk.desc, sk.nulls_first);
            if o != Ordering::Equal {
                return o;
            }
        }
        Ordering::Equal
    }

    /// The permutation that sorts the buffer, stably: by the sort bee's normalized
    /// keys when there is a bee and at least [`MIN_BEE_ROWS`] rows (and the key
    /// vectors fit its spec), else by the comparator ([`cmp_sort`] per key).
    fn order(&self, sort_keys: &[SortKey], bee: Option<&SortBee>) -> Vec<u32> {
        if let Some(bee) = bee
            && self.len >= MIN_BEE_ROWS
            && let Some(keys) = crate::bees::sort::encode(bee, &self.keys, self.len)
        {
            return bee.order(&keys, self.len, |a, b| self.cmp_rows(sort_keys, a, b));
        }
        let mut perm: Vec<u32> = (0..self.len as u32).collect();
        perm.sort_by(|&a, &b| self.cmp_rows(sort_keys, a, b));
        perm
    }

    /// Keeps only the first `n` rows in sort order.
    fn truncate_sorted(&mut self, sort_keys: &[SortKey], bee: Option<&SortBee>, n: usize) {
        let mut perm = self.order(sort_keys, bee);
        perm.truncate(n);
        self.cols = self.cols.iter().map(|c| c.gather(&perm)).collect();
        self.keys = self.keys.iter().map(|c| c.gather(&perm)).collect();
        self.len = perm.len();
    }

    fn bytes(&self) -> usize {
        self.cols
            .iter()
            .chain(&self.keys)
            .map(|c| c.heap_bytes())
            .sum::<usize>()
            + self.len * 4
    }

    /// About the bytes of the widest row (rows and keys).
    fn widest_row(&self) -> usize {
        let mut w = vec![0usize; self.len];
        for c in self.cols.iter().chain(&self.keys) {
            match &c.data {
                Data::Str(s) => w.iter_mut().enumerate().for_each(|(i, w)| *w += s.get(i).len() + 5),
                d => {
                    let each = d.heap_bytes() / self.len.max(1) + 1;
                    w.iter_mut().for_each(|w| *w += each);
                }
            }
        }
        w.into_iter().max().unwrap_or(0)
    }
}

/// A sorted run on disk.
struct Run {
    file: BatchFile,
    /// Bytes of its largest record.
    max_record: usize,
}

/// The sort's state: the buffer, and the runs spilled so far.
pub(super) struct Sorter<'k> {
    sort_keys: &'k [SortKey],
    /// The sort bee, when sort bees are on (see [`Buffer::order`]).
    bee: Option<&'k SortBee>,
    /// The rows' column types, then the keys'.
    file_types: Vec<DataType>,
    /// Number of row columns (the keys follow them in a run).
    ncols: usize,
    memory_limit: usize,
    top_n: Option<usize>,
    interrupt: &'k Interrupt,
    buf: Buffer,
    runs: Vec<Run>,
    /// Rows and bytes written to temporary files (merge passes included).
    pub(super) spilled_rows: u64,
    pub(super) spilled_bytes: u64,
    /// Runs merged into longer runs before the last merge (tests).
    pub(super) premerged: usize,
}

impl<'k> Sorter<'k> {
    pub(super) fn new(
        sort_keys: &'k [SortKey],
        bee: Option<&'k SortBee>,
        types: &[DataType],
        memory_limit: usize,
        top_n: Option<usize>,
        interrupt: &'k Interrupt,
    ) -> Sorter<'k> {
        let key_types: Vec<DataType> = sort_keys.iter().map(|k| k.expr.ty).collect();
        Sorter {
            sort_keys,
            bee,
            file_types: types.iter().chain(&key_types).copied().collect(),
            ncols: types.len(),
            memory_limit,
            top_n,
            interrupt,
            buf: Buffer::new(types, &key_types),
            runs: Vec::new(),
            spilled_rows: 0,
            spilled_bytes: 0,
            premerged: 0,
        }
    }

    /// Adds `n` rows: `cols` dense, of the rows' types, and `keys` their sort keys.
    pub(super) fn push(&mut self, cols: &[Vector], keys: &[Vector], n: usize) -> Result<()> {
        let buf = &mut self.buf;
        for (c, v) in buf.cols.iter_mut().zip(cols) {
            c.extend(v);
        }
        for (c, v) in buf.keys.iter_mut().zip(keys) {
            c.extend(v);
        }
        buf.len += n;
        if let Some(limit) = self.top_n
            && buf.len >= limit.saturating_mul(2).max(BATCH_SIZE)
        {
            buf.truncate_sorted(self.sort_keys, self.bee, limit);
        }
        if buf.bytes() >= self.memory_limit / 2 {
            self.spill()?;
        }
        Ok(())
    }

    /// The size of a record, and of a file's read and write buffer.
    fn record_bytes(&self) -> usize {
        (self.memory_limit / 256).clamp(RECORD_BYTES_MIN, RECORD_BYTES_MAX)
    }

    /// Rows per record for rows of `avg` bytes.
    fn record_rows(&self, avg: usize) -> usize {
        (self.record_bytes() / avg.max(1)).clamp(1, BATCH_SIZE)
    }

    /// Sorts the buffer and writes it as a run.
    fn spill(&mut self) -> Result<()> {
        let buf = std::mem::replace(&mut self.buf, Buffer::new(&[], &[]));
        if buf.len == 0 {
            self.buf = buf;
            return Ok(());
        }
        let bytes = buf.bytes();
        // A merge holds a row of each run: a row wider than the limit cannot be sorted.
        if bytes > self.memory_limit && buf.widest_row() > self.memory_limit {
            return Err(memory_limit_error("Sort", self.memory_limit));
        }
        let mut perm = buf.order(self.sort_keys, self.bee);
        if let Some(limit) = self.top_n {
            perm.truncate(limit);
        }
        let mut file = BatchFile::create_with_chunk(&self.file_types, self.record_bytes())?;
        let mut max_record = 0;
        for chunk in perm.chunks(self.record_rows(bytes / buf.len)) {
            self.interrupt.check()?;
            let cols: Vec<Vector> = buf.cols.iter().chain(&buf.keys).map(|c| c.gather(chunk)).collect();
            let before = file.bytes();
            file.push(&cols, chunk.len())?;
            max_record = max_record.max((file.bytes() - before) as usize);
        }
        file.flush_and_free()?;
        self.spilled_rows += file.rows();
        self.spilled_bytes += file.bytes();
        self.runs.push(Run { file, max_record });
        let (types, key_types) = self.file_types.split_at(self.ncols);
        self.buf = Buffer::new(types, key_types);
        // Each run holds an open file: past MAX_FAN_IN of them, the first ones are
        // merged into one now, so a long input never runs out of descriptors.
        if self.runs.len() >= MAX_FAN_IN {
            let fan_in = self.fan_in(self.record_bytes());
            self.premerge(self.runs.len() + 1 - fan_in, fan_in)?;
        }
        Ok(())
    }

    /// Pushes the sorted rows to `out` in batches of at most [`BATCH_SIZE`] rows.
    pub(super) fn finish(&mut self, out: Out) -> Result<Flow> {
        let (types, key_types) = self.file_types.split_at(self.ncols);
        let buf = std::mem::replace(&mut self.buf, Buffer::new(types, key_types));
        let mut perm = buf.order(self.sort_keys, self.bee);
        if let Some(limit) = self.top_n {
            perm.truncate(limit);
        }
        if self.runs.is_empty() {
            for chunk in perm.chunks(BATCH_SIZE) {
                let cols = buf.cols.iter().map(|c| c.gather(chunk)).collect();
                if out(make_batch(cols, chunk.len()))? == Flow::Stop {
                    return Ok(Flow::Stop);
                }
            }
            return Ok(Flow::Continue);
        }
        // The last buffer stays in memory: the last run of the merge.
        let file_rows: u64 = self.runs.iter().map(|r| r.file.rows()).sum();
        let file_bytes: u64 = self.runs.iter().map(|r| r.file.bytes()).sum();
        let avg = (file_bytes / file_rows.max(1)) as usize + 1;
        let out_rows = (self.memory_limit / 8 / avg).clamp(1, BATCH_SIZE);
        let in_memory = (buf.len > 0).then(|| {
            let rows = self.record_rows(buf.bytes() / buf.len);
            Source::Memory { buf, perm, at: 0, rows }
        });
        let fan_in = self.fan_in(out_rows * avg);
        let target = fan_in - in_memory.is_some() as usize;
        while self.runs.len() > target {
            self.premerge(target, fan_in)?;
        }
        let mut inputs: Vec<Source> = Vec::with_capacity(self.runs.len() + 1);
        for run in std::mem::take(&mut self.runs) {
            inputs.push(Source::File(run.file.into_reader()?));
        }
        inputs.extend(in_memory);
        let (types, _) = self.file_types.split_at(self.ncols);
        merge(self.sort_keys, self.ncols, inputs, types, self.top_n, out_rows, &mut |cols, n| out(make_batch(cols, n)))
    }

    /// How many runs one merge may read at once: each holds a read buffer and its
    /// current record (decoded), within half the limit less `out_bytes` for the
    /// merge's output.
    fn fan_in(&self, out_bytes: usize) -> usize {
        let max_record = self.runs.iter().map(|r| r.max_record).max().unwrap_or(0);
        let per_input = self.record_bytes().max(max_record + 8) + 2 * max_record + INPUT_OVERHEAD_BYTES;
        let budget = (self.memory_limit / 2).saturating_sub(out_bytes + self.record_bytes());
        (budget / per_input).clamp(2, MAX_FAN_IN)
    }

    /// Merges consecutive runs into longer ones, at most `fan_in` (≥ 2) at once, on
    /// the way to `target` (≥ 1) runs: when one merge of the first runs brings
    /// them down to `target`, just that one; else a pass over all of them in groups
    /// of `fan_in`.
    fn premerge(&mut self, target: usize, fan_in: usize) -> Result<()> {
        let n = self.runs.len();
        debug_assert!(n > target && target >= 1 && fan_in >= 2);
        let runs = std::mem::take(&mut self.runs);
        let mut groups: Vec<Vec<Run>> = Vec::new();
        let mut it = runs.into_iter();
        if n - target < fan_in {
            groups.push(it.by_ref().take(n - target + 1).collect());
            groups.extend(it.map(|r| vec![r]));
        } else {
            loop {
                let g: Vec<Run> = it.by_ref().take(fan_in).collect();
                if g.is_empty() {
                    break;
                }
                groups.push(g);
            }
        }
        for g in groups {
            let run = if g.len() == 1 { g.into_iter().next().expect("one run") } else { self.merge_runs(g)? };
            self.runs.push(run);
        }
        Ok(())
    }

    /// One run of the rows of `group`, in order.
    fn merge_runs(&mut self, group: Vec<Run>) -> Result<Run> {
        self.premerged += group.len();
        let rows: u64 = group.iter().map(|r| r.file.rows()).sum();
        let bytes: u64 = group.iter().map(|r| r.file.bytes()).sum();
        let record_rows = self.record_rows((bytes / rows.max(1)) as usize + 1);
        let mut inputs = Vec::with_capacity(group.len());
        for run in group {
            inputs.push(Source::File(run.file.into_reader()?));
        }
        let mut file = BatchFile::create_with_chunk(&self.file_types, self.record_bytes())?;
        let mut max_record = 0;
        let interrupt = self.interrupt;
        merge(self.sort_keys, self.ncols, inputs, &self.file_types, self.top_n, record_rows, &mut |cols, n| {
            interrupt.check()?;
            let before = file.bytes();
            file.push(&cols, n)?;
            max_record = max_record.max((file.bytes() - before) as usize);
            Ok(Flow::Continue)
        })?;
        file.flush_and_free()?;
        self.spilled_rows += file.rows();
        self.spilled_bytes += file.bytes();
        Ok(Run { file, max_record })
    }
}

/// Where a merge reads a sorted run from: a run's file, or the last buffer.
enum Source {
    File(BatchReader),
    Memory { buf: Buffer, perm: Vec<u32>, at: usize, rows: usize },
}

impl Source {
    /// The next rows, with their keys after the row columns; `None` at the end.
    fn next_batch(&mut self) -> Result<Option<Batch>> {
        match self {
            Source::File(r) => r.next_batch(),
            Source::Memory { buf, perm, at, rows } => {
                if *at >= perm.len() {
                    return Ok(None);
                }
                let end = (*at + *rows).min(perm.len());
                let chunk = &perm[*at..end];
                *at = end;
                let cols = buf.cols.iter().chain(&buf.keys).map(|c| c.gather(chunk)).collect();
                Ok(Some(make_batch(cols, chunk.len())))
            }
        }
    }
}

/// A merge input: its source and current batch.
struct Input {
    source: Source,
    batch: Batch,
    pos: usize,
}

/// Merges sorted `sources` (in run order) k ways, pushing the first `types.len()`
/// columns of the rows in order to `sink`, `out_rows` rows at a time, and the first
/// `limit` rows only. Ties go in run order.
#[allow(clippy::too_many_arguments)]
fn merge(
    sort_keys: &[SortKey],
    ncols: usize,
    sources: Vec<Source>,
    types: &[DataType],
    limit: Option<usize>,
    out_rows: usize,
    sink: &mut dyn FnMut(Vec<Vector>, usize) -> Result<Flow>,
) -> Result<Flow> {
    let mut inputs = Vec::with_capacity(sources.len());
    for mut source in sources {
        if let Some(batch) = source.next_batch()? {
            inputs.push(Input { source, batch, pos: 0 });
        }
    }
    // Whether input `a`'s current row goes before input `b`'s.
    let before = |inputs: &[Input], a: usize, b: usize| -> bool {
        let (x, y) = (&inputs[a], &inputs[b]);
        for (k, sk) in sort_keys.iter().enumerate() {
            let o = cmp_sort(&x.batch.columns[ncols + k], x.pos, &y.batch.columns[ncols + k], y.pos, sk.desc, sk.nulls_first);
            if o != Ordering::Equal {
                return o == Ordering::Less;
            }
        }
        a < b
    };
    let sift_down = |heap: &mut [usize], inputs: &[Input], mut i: usize| {
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut least = i;
            if l < heap.len() && before(inputs, heap[l], heap[least]) {
                least = l;
            }
            if r < heap.len() && before(inputs, heap[r], heap[least]) {
                least = r;
            }
            if least == i {
                return;
            }
            heap.swap(i, least);
            i = least;
        }
    };
    let mut heap: Vec<usize> = (0..inputs.len()).collect();
    for i in (0..heap.len() / 2).rev() {
        sift_down(&mut heap, &inputs, i);
    }
    let new_out = || types.iter().map(|t| Vector::new(*t, out_rows)).collect::<Vec<_>>();
    let mut out = new_out();
    let (mut n, mut left) = (0usize, limit.unwrap_or(usize::MAX));
    while let Some(&top) = heap.first() {
        if left == 0 {
            break;
        }
        let input = &mut inputs[top];
        for (o, c) in out.iter_mut().zip(&input.batch.columns) {
            o.push_from(c, input.pos);
        }
        n += 1;
        left -= 1;
        input.pos += 1;
        if input.pos == input.batch.rows() {
            match input.source.next_batch()? {
                Some(b) => {
                    input.batch = b;
                    input.pos = 0;
                }
                None => {
                    let last = heap.pop().expect("not empty");
                    if heap.is_empty() {
                        break;
                    }
                    heap[0] = last;
                }
            }
        }
        sift_down(&mut heap, &inputs, 0);
        if n == out_rows {
            if sink(std::mem::replace(&mut out, new_out()), n)? == Flow::Stop {
                return Ok(Flow::Stop);
            }
            n = 0;
        }
    }
    if n > 0 {
        return sink(out, n);
    }
    Ok(Flow::Continue)
}

pub(super) fn sort(
    ex: &Exec<'_>,
    id: usize,
    input: &Plan,
    sort_keys: &[SortKey],
    bee: Option<&crate::bees::SortBees>,
    top_n: Option<usize>,
    out: Out,
) -> Result<Flow> {
    let types = input.types();
    if top_n == Some(0) {
        return Ok(Flow::Continue);
    }
    let bee = bee.map(|b| &*b.0);
    let mut sorter = Sorter::new(sort_keys, bee, &types, ex.ctx.memory_limit, top_n, ex.ctx.interrupt);
    let read = ex
        .node(input, id + 1, None, &mut |b| {
            let n = b.rows();
            if n == 0 {
                return Ok(Flow::Continue);
            }
            let kv = sort_keys
                .iter()
                .map(|k| ex.eval(&k.expr, &b))
                .collect::<Result<Vec<_>>>()?;
            let b = super::dense(b, &types);
            sorter.push(&b.columns, &kv, n)?;
            Ok(Flow::Continue)
        });
    let r = read.and_then(|_| sorter.finish(out));
    if sorter.spilled_rows > 0 {
        ex.record_spill(id, sorter.spilled_rows, sorter.spilled_bytes);
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::Expr;
    use crate::types::{Date, Decimal, Interval, Timestamp, Value};

    /// Every sortable type (both decimal forms), then a row id and a text payload.
    fn types() -> Vec<DataType> {
        let mut types = crate::exec::spill::tests::all_types();
        types.extend([DataType::BigInt, DataType::Text]);
        types
    }
    const ID: usize = 13;

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    /// A random value of `ty` among about `card` distinct ones (so keys tie), NULL
    /// one time in six; NaN, -0.0 and infinities among the floats, equal decimals
    /// of different scales, `char(3)` values equal but for trailing blanks.
    fn value(ty: &DataType, rng: &mut Rng, card: u64) -> Value {
        if rng.next() % 6 == 0 {
            return Value::Null;
        }
        let r = rng.next();
        let x = (r % card) as i64 - card as i64 / 2;
        match ty {
            DataType::Boolean => Value::Boolean(x % 2 == 0),
            DataType::SmallInt => Value::SmallInt(x as i16),
            DataType::Integer => Value::Integer(x as i32),
            DataType::BigInt => Value::BigInt(x * 1_000_000_007),
            DataType::Real => Value::Real(match r % 13 {
                0 => f32::NAN,
                1 => -0.0,
                2 => f32::NEG_INFINITY,
                _ => x as f32 / 4.0,
            }),
            DataType::Double => Value::Double(match r % 13 {
                0 => f64::NAN,
                1 => -0.0,
                2 => f64::INFINITY,
                _ => x as f64 / 3.0,
            }),
            DataType::Date => Value::Date(Date(x as i32 * 37)),
            DataType::Timestamp => Value::Timestamp(Timestamp(x * 86_400_000_001)),
            DataType::Decimal { precision: Some(_), .. } => Value::Decimal(Decimal::new(x as i128, 2).unwrap()),
            DataType::Decimal { .. } => {
                let scale = (r >> 20) as u32 % 3;
                Value::Decimal(Decimal::new(x as i128 * 10i128.pow(scale), scale as u8).unwrap())
            }
            DataType::Interval => Value::Interval(Interval { months: (x % 3) as i32, days: x as i32, micros: x * 7 }),
            DataType::Text => Value::Text(match r % 5 {
                0 => String::new(),
                1 => format!("é{x}"),
                _ => format!("t{x}"),
            }),
            DataType::Char(_) => Value::Char(if r % 2 == 0 { format!("{}", x % 10) } else { format!("{} ", x % 10) }),
            _ => unreachable!(),
        }
    }

    /// `n` rows of [`types`]: random values, then the row's number, then a payload.
    fn input(n: usize, card: u64, seed: u64) -> Vec<Vector> {
        let mut rng = Rng(seed | 1);
        let types = types();
        let mut cols: Vec<Vector> = types.iter().map(|t| Vector::new(*t, n)).collect();
        for k in 0..n {
            for (i, (c, t)) in cols.iter_mut().zip(&types).enumerate() {
                let v = match i {
                    ID => Value::BigInt(k as i64),
                    14 => Value::Text(format!("payload {k} {}", "x".repeat(k % 50))),
                    _ => value(t, &mut rng, card),
                };
                c.push_value(&v);
            }
        }
        cols
    }

    fn sort_keys(keys: &[(usize, bool, bool)]) -> Vec<SortKey> {
        let types = types();
        keys.iter().map(|&(c, desc, nulls_first)| SortKey { expr: Expr::column(c, types[c]), desc, nulls_first }).collect()
    }

    fn rows(cols: &[Vector], n: usize) -> Vec<String> {
        (0..n).map(|k| cols.iter().map(|c| format!("{:?}", c.value(k))).collect::<Vec<_>>().join("|")).collect()
    }

    /// The input in order, independently: a stable sort of all row numbers.
    fn expected(cols: &[Vector], keys: &[SortKey], top_n: Option<usize>) -> Vec<String> {
        let n = cols[0].len();
        let mut perm: Vec<u32> = (0..n as u32).collect();
        perm.sort_by(|&a, &b| {
            for sk in keys {
                let crate::expr::ExprKind::Column(c) = sk.expr.kind else { unreachable!() };
                let o = cmp_sort(&cols[c], a as usize, &cols[c], b as usize, sk.desc, sk.nulls_first);
                if o != Ordering::Equal {
                    return o;
                }
            }
            Ordering::Equal
        });
        perm.truncate(top_n.unwrap_or(n));
        let sorted: Vec<Vector> = cols.iter().map(|c| c.gather(&perm)).collect();
        rows(&sorted, perm.len())
    }

    struct Outcome {
        rows: Vec<String>,
        spilled_rows: u64,
        premerged: usize,
    }

    /// Sorts `cols` pushed `batch` rows at a time within `limit` bytes.
    fn sort(cols: &[Vector], keys: &[SortKey], batch: usize, limit: usize, top_n: Option<usize>) -> Result<Outcome> {
        sort_with(cols, keys, None, batch, limit, top_n)
    }

    /// [`sort`] with a sort bee.
    fn sort_with(cols: &[Vector], keys: &[SortKey], bee: Option<&SortBee>, batch: usize, limit: usize, top_n: Option<usize>) -> Result<Outcome> {
        let n = cols[0].len();
        let interrupt = Interrupt::default();
        let types: Vec<DataType> = cols.iter().map(|c| c.ty).collect();
        let mut sorter = Sorter::new(keys, bee, &types, limit, top_n, &interrupt);
        let mut at = 0;
        while at < n {
            let end = (at + batch).min(n);
            let pos: Vec<u32> = (at as u32..end as u32).collect();
            let part: Vec<Vector> = cols.iter().map(|c| c.gather(&pos)).collect();
            let kv: Vec<Vector> = keys
                .iter()
                .map(|k| {
                    let crate::expr::ExprKind::Column(c) = k.expr.kind else { unreachable!() };
                    part[c].clone()
                })
                .collect();
            sorter.push(&part, &kv, end - at)?;
            at = end;
        }
        let mut out = Vec::new();
        sorter.finish(&mut |b: Batch| {
            assert!(b.rows() >= 1 && b.rows() <= BATCH_SIZE);
            out.extend(rows(&b.columns, b.rows()));
            Ok(Flow::Continue)
        })?;
        Ok(Outcome { rows: out, spilled_rows: sorter.spilled_rows, premerged: sorter.premerged })
    }

    /// Each type alone as the key, in all four directions (NULLs first or last,
    /// ascending or descending), with few distinct values so that most rows tie:
    /// spilled runs merge to exactly the stable in-memory order.
    #[test]
    fn runs_merge_to_the_in_memory_order_for_every_type() {
        let cols = input(1500, 40, 7);
        for c in 0..13 {
            for (d, (desc, nulls_first)) in [(false, false), (true, true), (false, true), (true, false)].into_iter().enumerate() {
                let keys = sort_keys(&[(c, desc, nulls_first)]);
                let batch = [1, 2, 1023, 1024, 1025][(c + d) % 5];
                let want = expected(&cols, &keys, None);
                let got = sort(&cols, &keys, batch, 16 << 10, None).unwrap();
                assert!(got.spilled_rows > 0);
                assert_eq!(got.rows, want, "key column {c}, desc {desc}, nulls first {nulls_first}, batches of {batch}");
                // Unlimited memory: the in-memory sort, nothing spilled.
                let mem = sort(&cols, &keys, batch, 1 << 30, None).unwrap();
                assert_eq!(mem.spilled_rows, 0);
                assert_eq!(mem.rows, want);
            }
        }
    }

    /// Several keys of mixed directions, each input batch size; ties checked for
    /// stability through the row numbers.
    #[test]
    fn mixed_keys_and_batch_sizes() {
        let cols = input(3000, 6, 11);
        let keys = sort_keys(&[(2, false, false), (11, true, true), (5, false, true), (9, true, false)]);
        let want = expected(&cols, &keys, None);
        for batch in [1, 2, 1023, 1024, 1025] {
            for limit in [8 << 10, 64 << 10, 1 << 20] {
                let got = sort(&cols, &keys, batch, limit, None).unwrap();
                assert!(got.spilled_rows > 0);
                assert_eq!(got.rows, want, "batches of {batch}, limit {limit}");
            }
        }
    }

    /// So many runs that the merge cannot read them all at once: they are merged in
    /// more than one pass, to the same order.
    #[test]
    fn many_runs_merge_in_several_passes() {
        let cols = input(20_000, 1000, 3);
        let keys = sort_keys(&[(3, true, false), (12, false, true)]);
        let want = expected(&cols, &keys, None);
        let got = sort(&cols, &keys, 1024, 8 << 10, None).unwrap();
        assert!(got.premerged > 0, "one pass only");
        assert!(got.spilled_rows > 2 * cols[0].len() as u64);
        assert_eq!(got.rows, want);
    }

    /// A top-N sort past the limit spills too, and returns the first N rows.
    #[test]
    fn top_n_over_the_limit() {
        let cols = input(5000, 50, 5);
        let keys = sort_keys(&[(1, false, true)]);
        for top in [1, 1024, 1500, 4999, 6000] {
            let got = sort(&cols, &keys, 1024, 8 << 10, Some(top)).unwrap();
            assert_eq!(got.rows, expected(&cols, &keys, Some(top)), "top {top}");
        }
    }

    /// A row wider than the limit cannot be merged: 53200. Narrower rows spill.
    #[test]
    fn a_row_wider_than_the_limit_is_an_error() {
        let mut v = Vector::new(DataType::Text, 3);
        for s in ["a", &"w".repeat(100_000), "b"] {
            v.push_value(&Value::Text(s.to_string()));
        }
        let keys = vec![SortKey { expr: Expr::column(0, DataType::Text), desc: false, nulls_first: false }];
        let e = sort(std::slice::from_ref(&v), &keys, 1, 64 << 10, None).err().expect("an error");
        assert_eq!(e.sqlstate, "53200", "{e}");
        let got = sort(std::slice::from_ref(&v), &keys, 1, 256 << 10, None).unwrap();
        assert_eq!(got.rows.len(), 3);
        assert!(got.spilled_rows > 0);
    }

    /// Empty input, and a sort with no row columns (only keys).
    #[test]
    fn empty_and_keys_only() {
        let cols = input(0, 10, 1);
        let keys = sort_keys(&[(2, false, false)]);
        assert!(sort(&cols, &keys, 10, 8 << 10, None).unwrap().rows.is_empty());
        let interrupt = Interrupt::default();
        let mut sorter = Sorter::new(&keys, None, &[], 4 << 10, None, &interrupt);
        let k = input(3000, 10, 2).swap_remove(2);
        for start in (0..3000).step_by(1000) {
            let pos: Vec<u32> = (start..start + 1000).collect();
            sorter.push(&[], &[k.gather(&pos)], 1000).unwrap();
        }
        let mut n = 0;
        sorter.finish(&mut |b: Batch| {
            n += b.rows();
            Ok(Flow::Continue)
        })
        .unwrap();
        assert!(sorter.spilled_rows > 0);
        assert_eq!(n, 3000);
    }

    /// A sort bee for `keys` made by `maker`.
    fn bee(keys: &[SortKey], maker: beedb_bees::Maker) -> SortBee {
        let spec = crate::bees::sort::spec(keys).expect("every test type has a kind");
        let jit = beedb_bees::compiled::Jit::new(true).ok();
        SortBee::make(spec, maker, jit.as_ref(), beedb_bees::BeeOwner::Query, "test".into()).unwrap()
    }

    /// With a sort bee, every type alone and in pairs, all four directions, in memory
    /// and spilled, top-N included: the same rows in the same order (ties in input
    /// order) as the comparator.
    #[test]
    fn the_sort_bee_orders_as_the_comparator() {
        let cols = input(1500, 40, 13);
        for c in 0..13 {
            for (d, (desc, nulls_first)) in [(false, false), (true, true), (false, true), (true, false)].into_iter().enumerate() {
                let keys = sort_keys(&[(c, desc, nulls_first), ((c + 5) % 13, !desc, nulls_first)]);
                let want = expected(&cols, &keys, None);
                let maker = [beedb_bees::Maker::Instantiated, beedb_bees::Maker::Compiled][(c + d) % 2];
                let b = bee(&keys, maker);
                assert_eq!(b.maker(), maker);
                let batch = [1, 2, 1023, 1024, 1025][(c + d) % 5];
                let got = sort_with(&cols, &keys, Some(&b), batch, 1 << 30, None).unwrap();
                assert_eq!(got.rows, want, "key column {c}, desc {desc}, nulls first {nulls_first}");
                let spilled = sort_with(&cols, &keys, Some(&b), 1024, 16 << 10, None).unwrap();
                assert!(spilled.spilled_rows > 0);
                assert_eq!(spilled.rows, want, "spilled: key column {c}");
                let top = sort_with(&cols, &keys, Some(&b), 1024, 1 << 30, Some(100)).unwrap();
                assert_eq!(top.rows, expected(&cols, &keys, Some(100)), "top 100: key column {c}");
                assert!(b.info().invocations() > 0);
            }
        }
    }

    /// Strings longer than the key's prefix that share it, `char(n)` padding, empty
    /// strings and NULLs: ties the normalized key cannot decide go to the comparator.
    #[test]
    fn the_sort_bee_breaks_long_string_ties_with_the_comparator() {
        let mut rng = Rng(99);
        let mut t = Vector::new(DataType::Text, 0);
        let mut ch = Vector::new(DataType::Char(20), 0);
        let mut id = Vector::new(DataType::BigInt, 0);
        for k in 0..3000 {
            let r = rng.next();
            let s = match r % 7 {
                0 => Value::Null,
                1 => Value::Text(String::new()),
                2 => Value::Text(format!("common-prefix-{}", r % 5)),
                3 => Value::Text(format!("common-prefix-{}\u{0}", r % 5)),
                4 => Value::Text(format!("common-prefix{}", "x".repeat((r % 9) as usize))),
                5 => Value::Text("common-prefix".into()),
                _ => Value::Text(format!("c{}", r % 3)),
            };
            t.push_value(&s);
            ch.push_value(&match r % 4 {
                0 => Value::Char(format!("abcdefghijklm{} ", r % 3)),
                1 => Value::Char(format!("abcdefghijklm{}", r % 3)),
                2 => Value::Null,
                _ => Value::Char("ab".into()),
            });
            id.push_value(&Value::BigInt(k));
        }
        let cols = vec![t, ch, id];
        for (desc, nulls_first) in [(false, false), (true, true), (false, true), (true, false)] {
            for key in [vec![0], vec![1], vec![0, 1], vec![1, 0]] {
                let keys: Vec<SortKey> = key
                    .iter()
                    .map(|&c| SortKey { expr: Expr::column(c, cols[c].ty), desc, nulls_first })
                    .collect();
                let want = expected(&cols, &keys, None);
                for maker in [beedb_bees::Maker::Instantiated, beedb_bees::Maker::Compiled] {
                    let b = bee(&keys, maker);
                    let got = sort_with(&cols, &keys, Some(&b), 1024, 1 << 30, None).unwrap();
                    assert_eq!(got.rows, want, "{maker}: keys {key:?} desc {desc} nulls first {nulls_first}");
                }
            }
        }
    }
}
