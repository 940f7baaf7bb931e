//! A statement's result read as it is produced: [`ResultStream`] (see
//! `engine/stream.rs` for how the push executor is pulled).

use std::sync::Arc;
use std::thread::JoinHandle;

use super::result::{Column, QueryResult, Row};
use crate::engine::stream::StreamLink;
use crate::error::Result;
use crate::exec::InterruptHandle;
use crate::types::{Decimal, Interval, Value};
use crate::vector::{Batch, Data};

/// One column of a [`ResultBatch`] as typed slices ([`ResultBatch::column_slices`]):
/// what a columnar consumer (the Python module's batch path) copies whole, without a
/// [`Value`] per cell. Every slice has [`ResultBatch::len`] elements (`Str`:
/// `len + 1` offsets); a NULL row holds a default value.
#[derive(Debug, Clone, Copy)]
pub struct ColumnSlice<'a> {
    pub values: ColumnValues<'a>,
    /// `nulls[k]` is true when row `k` is NULL; `None` when no row is.
    pub nulls: Option<&'a [bool]>,
}

/// A column's values by physical type (see `vector/mod.rs` for which SQL type uses
/// which).
#[derive(Debug, Clone, Copy)]
pub enum ColumnValues<'a> {
    Bool(&'a [bool]),
    I16(&'a [i16]),
    /// `integer`; `date` as days since 2000-01-01.
    I32(&'a [i32]),
    /// `bigint`; `timestamp` as microseconds since 2000-01-01.
    I64(&'a [i64]),
    F32(&'a [f32]),
    F64(&'a [f64]),
    /// `numeric` values as `value × 10^scale`, one scale for the whole slice.
    Dec64 { scale: u8, values: &'a [i64] },
    /// `numeric` values each with its own scale.
    Dec(&'a [Decimal]),
    Interval(&'a [Interval]),
    /// Text: string `k` is `bytes[offsets[k]..offsets[k + 1]]` (UTF-8); the offsets
    /// need not start at 0.
    Str { offsets: &'a [u32], bytes: &'a [u8] },
}

/// Up to [`crate::vector::BATCH_SIZE`] rows of a result, as the executor produced
/// them (column vectors) or as a finished statement returned them (rows).
#[derive(Debug)]
pub struct ResultBatch {
    rows: BatchRows,
}

#[derive(Debug)]
enum BatchRows {
    Columns(Batch),
    Rows(Vec<Row>),
}

impl ResultBatch {
    /// Number of rows.
    pub fn len(&self) -> usize {
        match &self.rows {
            BatchRows::Columns(b) => b.rows(),
            BatchRows::Rows(r) => r.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Row `k` (0-based; panics past [`ResultBatch::len`], as slice indexing does).
    pub fn row(&self, k: usize) -> Row {
        match &self.rows {
            BatchRows::Columns(b) => Row(b.row_values(k)),
            BatchRows::Rows(r) => r[k].clone(),
        }
    }

    /// Value `column` of row `k` (panics past the batch's rows or columns).
    pub fn value(&self, k: usize, column: usize) -> Value {
        match &self.rows {
            BatchRows::Columns(b) => b.columns[column].value(b.position(k)),
            BatchRows::Rows(r) => r[k].0[column].clone(),
        }
    }

    /// The columns as typed slices, when the batch holds the executor's column
    /// vectors (a query's batch not read into by `next_row`); `None` when it holds
    /// rows (a finished statement's, or the rest of a partly read batch). A batch
    /// whose rows a filter selected is compacted first (once).
    pub fn column_slices(&mut self) -> Option<Vec<ColumnSlice<'_>>> {
        let BatchRows::Columns(b) = &mut self.rows else {
            return None;
        };
        if b.sel.is_some() {
            *b = std::mem::replace(b, Batch::empty_rows(0)).compact();
        }
        let slices = b
            .columns
            .iter()
            .map(|c| ColumnSlice {
                values: match &c.data {
                    Data::Bool(v) => ColumnValues::Bool(v),
                    Data::I16(v) => ColumnValues::I16(v),
                    Data::I32(v) => ColumnValues::I32(v),
                    Data::I64(v) => ColumnValues::I64(v),
                    Data::F32(v) => ColumnValues::F32(v),
                    Data::F64(v) => ColumnValues::F64(v),
                    Data::Dec64(v) => ColumnValues::Dec64 { scale: v.scale, values: &v.values },
                    Data::Dec(v) => ColumnValues::Dec(v),
                    Data::Interval(v) => ColumnValues::Interval(v),
                    Data::Str(v) => {
                        let (offsets, bytes) = v.raw_parts();
                        ColumnValues::Str { offsets, bytes }
                    }
                },
                nulls: c.nulls.as_deref(),
            })
            .collect();
        Some(slices)
    }

    /// The rows, in order.
    pub fn into_rows(self) -> Vec<Row> {
        match self.rows {
            BatchRows::Columns(b) => (0..b.rows()).map(|k| Row(b.row_values(k))).collect(),
            BatchRows::Rows(r) => r,
        }
    }
}

/// A statement's result, read batch by batch ([`ResultStream::next_batch`]) or row
/// by row (`next_row`, or as an iterator of `Result<Row>`), with its columns known
/// before the first row. Made by [`super::Connection::query_stream`] and
/// [`super::Statement::query_stream`].
///
/// A query streams from the executor: the result is never held whole (see
/// `engine/stream.rs`). Any other statement (and a query expected to return few rows)
/// has run to its end already and is returned as a finished stream.
///
/// - An error the statement meets midway is returned by the `next_*` call that
///   reaches it (once; then the stream ends).
/// - Dropping the stream before its end cancels the statement and releases its
///   snapshot before `drop` returns; the connection (and its `BEGIN` block) goes on.
/// - Starting another statement on the connection while the stream is open first
///   runs the stream's statement to its end and keeps the rest of its rows in the
///   stream (which still returns all of them): a connection runs one statement at a
///   time, and never fails or waits forever for that.
pub struct ResultStream {
    columns: Vec<Column>,
    source: Source,
    /// The batch being read row by row, and its next row.
    current: Option<(ResultBatch, usize)>,
    rows_read: u64,
    done: bool,
}

enum Source {
    /// A finished statement: its rows, tag and count.
    Finished { rows: std::vec::IntoIter<Row>, tag: String, rows_affected: u64 },
    /// A query run at once (expected to be small): its batches.
    Batches(std::vec::IntoIter<Batch>),
    /// A query running on a producer thread.
    Producer {
        link: Arc<StreamLink>,
        thread: Option<JoinHandle<()>>,
        /// The connection's cancel flag: set on drop so a sort or hash build stops
        /// inside its input loop (the next statement's start clears it).
        interrupt: InterruptHandle,
    },
}

impl std::fmt::Debug for ResultStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResultStream")
            .field("columns", &self.columns)
            .field("rows_read", &self.rows_read)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl ResultStream {
    pub(crate) fn finished(r: QueryResult) -> ResultStream {
        ResultStream {
            columns: r.columns,
            source: Source::Finished { rows: r.rows.into_iter(), tag: r.tag, rows_affected: r.rows_affected },
            current: None,
            rows_read: 0,
            done: false,
        }
    }

    pub(crate) fn from_batches(columns: Vec<Column>, batches: Vec<Batch>) -> ResultStream {
        ResultStream { columns, source: Source::Batches(batches.into_iter()), current: None, rows_read: 0, done: false }
    }

    pub(crate) fn from_producer(
        columns: Vec<Column>,
        link: Arc<StreamLink>,
        thread: JoinHandle<()>,
        interrupt: InterruptHandle,
    ) -> ResultStream {
        ResultStream {
            columns,
            source: Source::Producer { link, thread: Some(thread), interrupt },
            current: None,
            rows_read: 0,
            done: false,
        }
    }

    /// The output columns (empty for a statement that returns no rows).
    pub fn columns(&self) -> &[Column] {
        &self.columns
    }

    /// Whether the statement returns rows (a query, EXPLAIN, SHOW), even if zero.
    pub fn has_rows(&self) -> bool {
        !self.columns.is_empty()
    }

    /// Rows handed out so far.
    pub fn rows_read(&self) -> u64 {
        self.rows_read
    }

    /// Rows inserted, updated, deleted or copied by a finished statement; for a query,
    /// the rows it returned once the stream has ended, `None` before.
    pub fn rows_affected(&self) -> Option<u64> {
        match &self.source {
            Source::Finished { rows_affected, .. } => Some(*rows_affected),
            _ if self.done => Some(self.rows_read),
            _ => None,
        }
    }

    /// PostgreSQL's command tag (`SELECT 3`, `INSERT 0 5`); a query's once the stream
    /// has ended, `None` before.
    pub fn tag(&self) -> Option<String> {
        match &self.source {
            Source::Finished { tag, .. } => Some(tag.clone()),
            _ if self.done => Some(format!("SELECT {}", self.rows_read)),
            _ => None,
        }
    }

    /// Whether every row has been handed out (or the statement failed).
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Whether the rows come from a producer thread that dropping the stream cancels
    /// and waits for (false for a result that ran at once, such as a point lookup's:
    /// dropping that only frees its batches).
    pub fn has_producer(&self) -> bool {
        matches!(&self.source, Source::Producer { thread: Some(_), .. })
    }

    /// The next batch of rows (the rest of a batch partly read by `next_row`), waiting
    /// for the executor to produce it; `None` at the end.
    pub fn next_batch(&mut self) -> Result<Option<ResultBatch>> {
        if let Some((batch, at)) = self.current.take() {
            let rest = if at == 0 {
                batch
            } else {
                let mut rows = batch.into_rows();
                rows.drain(..at);
                ResultBatch { rows: BatchRows::Rows(rows) }
            };
            if !rest.is_empty() {
                self.rows_read += rest.len() as u64;
                return Ok(Some(rest));
            }
        }
        let next = self.pull();
        match &next {
            Ok(Some(b)) => self.rows_read += b.len() as u64,
            Ok(None) | Err(_) => self.end(),
        }
        next
    }

    /// The next row, waiting for the executor to produce it; `None` at the end.
    pub fn next_row(&mut self) -> Result<Option<Row>> {
        loop {
            if let Some((batch, at)) = &mut self.current
                && *at < batch.len()
            {
                let row = batch.row(*at);
                *at += 1;
                self.rows_read += 1;
                return Ok(Some(row));
            }
            self.current = None;
            match self.pull() {
                Ok(Some(b)) => self.current = Some((b, 0)),
                Ok(None) => {
                    self.end();
                    return Ok(None);
                }
                Err(e) => {
                    self.end();
                    return Err(e);
                }
            }
        }
    }

    /// Reads the rest of the stream into a [`QueryResult`].
    pub fn into_result(mut self) -> Result<QueryResult> {
        let mut rows = Vec::new();
        while let Some(b) = self.next_batch()? {
            rows.extend(b.into_rows());
        }
        Ok(QueryResult {
            columns: std::mem::take(&mut self.columns),
            rows,
            tag: self.tag().unwrap_or_default(),
            rows_affected: self.rows_affected().unwrap_or(0),
        })
    }

    fn pull(&mut self) -> Result<Option<ResultBatch>> {
        if self.done {
            return Ok(None);
        }
        match &mut self.source {
            Source::Finished { rows, .. } => {
                let chunk: Vec<Row> = rows.by_ref().take(crate::vector::BATCH_SIZE).collect();
                Ok((!chunk.is_empty()).then_some(ResultBatch { rows: BatchRows::Rows(chunk) }))
            }
            Source::Batches(batches) => Ok(batches.next().map(|b| ResultBatch { rows: BatchRows::Columns(b) })),
            Source::Producer { link, .. } => {
                Ok(link.next_batch()?.map(|b| ResultBatch { rows: BatchRows::Columns(b) }))
            }
        }
    }

    /// The end (or the error): the producer thread has finished or is finishing.
    fn end(&mut self) {
        self.done = true;
        if let Source::Producer { thread, .. } = &mut self.source
            && let Some(t) = thread.take()
        {
            let _ = t.join();
        }
    }
}

impl Iterator for ResultStream {
    type Item = Result<Row>;

    fn next(&mut self) -> Option<Result<Row>> {
        self.next_row().transpose()
    }
}

impl Drop for ResultStream {
    /// Cancels a statement still running and waits for its producer to end, so its
    /// snapshot is released (and a block's transaction is back for the connection)
    /// when the drop returns.
    fn drop(&mut self) {
        if let Source::Producer { link, thread, interrupt } = &mut self.source
            && let Some(t) = thread.take()
        {
            link.cancel(interrupt);
            let _ = t.join();
        }
    }
}
