//! Streaming a query's result ([`crate::Connection::query_stream`]).
//!
//! The executor pushes batches into a closure (`exec::run`); a stream's consumer pulls
//! them. The two meet through a *producer thread*: the query is planned on the
//! caller's thread (so a bind or planning error is returned by `query_stream` and the
//! columns are known at once), then the executor runs on its own thread, which owns
//! the statement's transaction while it runs and hands batches to the consumer through
//! a queue of [`QUEUE_BATCHES`] batches ([`StreamLink`]). When the queue is full the
//! producer waits, so a result is never held whole: at most the queue, the batch the
//! consumer reads and what the operators hold themselves.
//!
//! Why a thread, not a resumable executor: the push executor's operators keep their
//! state on the stack of their loops (a join's hash table, a sort's runs, a limit's
//! counters), and making every operator resumable would rewrite all of them. A thread
//! keeps the one executor; its costs are a thread start per streamed statement (tens
//! of microseconds) and a hand-off per batch. A query the optimizer expects to return
//! at most [`STREAM_INLINE_ROWS_MAX`] rows runs at once on the caller's thread instead
//! (no thread, no hand-off): a point lookup pays nothing for streaming.
//!
//! The invariants, and who keeps them:
//! 1. A connection runs one statement at a time. The open stream is registered on its
//!    connection ([`OpenStream`]); every statement the connection starts (and an
//!    aborted parse) first *settles* it ([`settle`]): the producer runs to the end
//!    into an unbounded queue, so the stream still returns every row, as of its own
//!    snapshot, and the transaction is back on the connection before the next
//!    statement runs. Never an error, never a deadlock.
//! 2. In autocommit the stream's snapshot is its own (taken at `query_stream`,
//!    released by the producer when it ends). In a `BEGIN` block the producer borrows
//!    the block's transaction and hands it back when it ends; an error mid-stream
//!    aborts the block (25P02 until `ROLLBACK`), exactly as the error of a
//!    materialized query would.
//! 3. Dropping the stream cancels the statement (the consumer-gone flag stops the
//!    producer at its next batch, and the connection's interrupt flag stops a sort or
//!    a hash build inside its input loop) and waits for the producer to end, so when
//!    the drop returns the snapshot is released and the block's transaction is back
//!    in the link. A dropped stream is no error: the block stays usable.
//! 4. `memory_limit`, `statement_timeout` and `InterruptHandle::interrupt` apply to
//!    the producer as to any statement; the timeout counts from `query_stream` until
//!    the stream ends (the statement holds its snapshot that long).
//! 5. A panic in the producer (a bug) becomes an internal error at the consumer, and
//!    aborts the block, as `session::guarded` does for a materialized statement.

use std::collections::VecDeque;
use std::sync::Arc;
use std::thread::JoinHandle;

use parking_lot::{Condvar, Mutex};
use sqlparser::ast::Statement;

use super::{Ctx, Txn, TxnState, aborted, failed, query, sequence};
use crate::bees::StatementBees;
use crate::error::{Error, Result};
use crate::exec::{self, ExecContext, Interrupt};
use crate::plan::BoundQuery;
use crate::session::{Connection, ResultStream, Shared};
use crate::types::Value;
use crate::vector::Batch;

use super::PlanCache;

/// Batches the queue between producer and consumer holds before the producer waits:
/// two, so the producer fills one while the consumer reads the other.
pub const QUEUE_BATCHES: usize = 2;

/// Rows up to which a query the optimizer estimates runs at once on the caller's
/// thread rather than on a producer thread (four batches: a thread start costs more
/// than holding them).
pub const STREAM_INLINE_ROWS_MAX: f64 = 4096.0;

/// Where a stream's producer and its consumer (and the connection that settles it)
/// meet.
pub struct StreamLink {
    state: Mutex<LinkState>,
    /// Room in the queue, the consumer gone, or settling began.
    producer_wake: Condvar,
    /// A batch arrived or the producer finished.
    consumer_wake: Condvar,
}

struct LinkState {
    queue: VecDeque<Batch>,
    /// Batches the queue holds before the producer waits; unbounded once the
    /// connection settles the stream.
    capacity: usize,
    /// The stream was dropped: the producer stops at its next batch.
    consumer_gone: bool,
    /// The producer ended (its snapshot released, the block's transaction below).
    finished: bool,
    /// How it ended, until the consumer takes it (an error mid-stream).
    end: Option<Result<()>>,
    /// The block's transaction, handed back by the producer (in-block streams only).
    txn: Option<Box<Txn>>,
    /// Whether the statement failed (not counting a cancel by dropping the stream),
    /// which aborts the block.
    failed: bool,
}

impl StreamLink {
    fn new() -> StreamLink {
        StreamLink {
            state: Mutex::new(LinkState {
                queue: VecDeque::with_capacity(QUEUE_BATCHES),
                capacity: QUEUE_BATCHES,
                consumer_gone: false,
                finished: false,
                end: None,
                txn: None,
                failed: false,
            }),
            producer_wake: Condvar::new(),
            consumer_wake: Condvar::new(),
        }
    }

    /// The producer's sink: queues `batch`, waiting for room; `false` (stop) once the
    /// consumer is gone.
    fn push(&self, batch: Batch) -> bool {
        let mut s = self.state.lock();
        while s.queue.len() >= s.capacity && !s.consumer_gone {
            self.producer_wake.wait(&mut s);
        }
        if s.consumer_gone {
            return false;
        }
        s.queue.push_back(batch);
        self.consumer_wake.notify_all();
        true
    }

    /// The producer's end.
    fn finish(&self, outcome: Result<()>, txn: Option<Box<Txn>>) {
        let mut s = self.state.lock();
        // A statement stopped because its stream was dropped did not fail.
        s.failed = outcome.is_err() && !s.consumer_gone;
        s.end = Some(outcome);
        s.txn = txn;
        s.finished = true;
        self.consumer_wake.notify_all();
    }

    /// The next batch, waiting for it; `None` at the end; the statement's error once.
    pub(crate) fn next_batch(&self) -> Result<Option<Batch>> {
        let mut s = self.state.lock();
        loop {
            if let Some(b) = s.queue.pop_front() {
                self.producer_wake.notify_all();
                return Ok(Some(b));
            }
            if s.finished {
                return match s.end.take() {
                    Some(Err(e)) => Err(e),
                    _ => Ok(None),
                };
            }
            self.consumer_wake.wait(&mut s);
        }
    }

    /// The consumer is gone: the producer stops at its next batch, and through the
    /// connection's cancel flag `interrupt` inside an operator's input loop. The flag
    /// is set under the lock, so only while the producer has not finished: a
    /// statement the connection starts after settling this one (which clears the flag
    /// at its start) is never cancelled by it.
    pub(crate) fn cancel(&self, interrupt: &crate::exec::InterruptHandle) {
        let mut s = self.state.lock();
        if !s.finished {
            interrupt.interrupt();
        }
        s.consumer_gone = true;
        s.queue.clear();
        self.producer_wake.notify_all();
    }

    /// Runs the producer to its end with an unbounded queue (the rest of the result
    /// stays for the consumer); returns the block's transaction and whether the
    /// statement failed.
    fn settle(&self) -> (Option<Box<Txn>>, bool) {
        let mut s = self.state.lock();
        s.capacity = usize::MAX;
        self.producer_wake.notify_all();
        while !s.finished {
            self.consumer_wake.wait(&mut s);
        }
        (s.txn.take(), s.failed)
    }
}

/// The stream a connection has open, until the next statement settles it.
pub struct OpenStream {
    link: Arc<StreamLink>,
    /// The stream runs in a `BEGIN` block, whose transaction it holds.
    in_block: bool,
}

impl OpenStream {
    pub(crate) fn in_block(&self) -> bool {
        self.in_block
    }

    /// Whether the stream ended with an error (so its block is aborted).
    pub(crate) fn failed(&self) -> bool {
        let s = self.link.state.lock();
        s.finished && s.failed
    }
}

/// Ends the connection's open stream, if any (invariant 1): waits for its producer,
/// buffering the rest of its result, and puts the block's transaction back, aborted
/// if the statement failed.
pub fn settle(conn: &mut Connection) {
    let Some(open) = conn.open_stream.take() else {
        return;
    };
    let (txn, statement_failed) = open.link.settle();
    if open.in_block {
        conn.txn = match txn {
            Some(txn) if !statement_failed => TxnState::Active(txn),
            Some(txn) => failed(txn),
            None => TxnState::Failed(None),
        };
    }
}

/// Starts statement `ast` as a stream: a query streams from the executor; any other
/// statement runs to its end here and its result is returned as a finished stream.
pub fn execute_stream(
    conn: &mut Connection,
    sql: &str,
    ast: &Statement,
    params: &[Value],
    statement_bees: Option<&StatementBees>,
    plan_cache: Option<&PlanCache>,
) -> Result<ResultStream> {
    settle(conn);
    let Statement::Query(q) = ast else {
        return super::execute(conn, sql, ast, params, statement_bees, plan_cache).map(ResultStream::finished);
    };
    if matches!(conn.txn, TxnState::Failed(_)) {
        return Err(aborted());
    }
    let shared = conn.db.shared.clone();
    let functions = conn.functions.clone();
    let interrupt = conn.interrupt.start(conn.settings.statement_timeout);
    let in_block = matches!(conn.txn, TxnState::Active(_));
    // Autocommit: the statement's own snapshot (the stream keeps it); in a block, the
    // block's transaction, which stays on the connection until the producer starts.
    let mut own = (!in_block).then(|| {
        let mut t = Txn::begin_read(&shared);
        t.mode = conn.default_mode;
        Box::new(t)
    });
    let txn: &mut Txn = match (&mut conn.txn, &mut own) {
        (TxnState::Active(t), _) => t,
        (_, Some(t)) => t,
        _ => return Err(Error::internal("a stream without a transaction")),
    };
    txn.ran_query = true;
    let ctx = Ctx {
        txn,
        sql,
        params,
        memory_limit: conn.settings.memory_limit,
        bees: conn.settings.bees,
        optimizer: conn.settings.optimizer,
        point_path: conn.settings.point_path,
        bee_cache: &shared.bees,
        statement_bees,
        plan_cache,
        interrupt: interrupt.clone(),
        functions: &functions,
        sequence_values: &shared.sequences,
        session_sequences: &conn.sequences,
    };
    let planned = match plan_cache {
        Some(cache) => cache.plan_query(&ctx, q),
        None => query::plan_query(&ctx, q).map(|(bq, params)| (Arc::new(bq), params)),
    };
    let (bq, params) = match planned {
        Ok(p) => p,
        Err(e) => {
            // A declined statement shape did nothing yet: the session runs the
            // statement with its literals next (`shape.rs`).
            if super::shape::declined(&e).is_none() {
                super::abort_block(conn);
            }
            return Err(e);
        }
    };
    let columns = query::columns(&bq.plan);
    let expected_small = bq.plan.est.is_some_and(|e| e.rows <= STREAM_INLINE_ROWS_MAX);
    if expected_small {
        let mut batches = Vec::new();
        let r = query::stream(&ctx, &bq, &params, &mut |b| {
            batches.push(b);
            Ok(true)
        });
        if r.is_err() {
            super::abort_block(conn);
        }
        r?;
        return Ok(ResultStream::from_batches(columns, batches));
    }
    drop(ctx);
    let txn = match own {
        Some(t) => t,
        None => match std::mem::take(&mut conn.txn) {
            TxnState::Active(t) => t,
            other => {
                conn.txn = other;
                return Err(Error::internal("a streamed block without its transaction"));
            }
        },
    };
    let link = Arc::new(StreamLink::new());
    let producer = Producer {
        link: link.clone(),
        txn,
        in_block,
        query: bq,
        params,
        shared,
        session_sequences: conn.sequences.clone(),
        memory_limit: conn.settings.memory_limit,
        interrupt,
    };
    let thread = spawn(producer).inspect_err(|_| {
        // The thread did not start and dropped the block's transaction with its
        // closure (rolled back): the block is aborted, as after any failed statement.
        if in_block {
            conn.txn = TxnState::Failed(None);
        }
    })?;
    conn.open_stream = Some(OpenStream { link: link.clone(), in_block });
    Ok(ResultStream::from_producer(columns, link, thread, conn.interrupt.clone()))
}

/// What the producer thread owns.
struct Producer {
    link: Arc<StreamLink>,
    txn: Box<Txn>,
    in_block: bool,
    query: Arc<BoundQuery>,
    params: Vec<Value>,
    shared: Arc<Shared>,
    session_sequences: Arc<sequence::SessionSequences>,
    memory_limit: usize,
    interrupt: Interrupt,
}

fn spawn(producer: Producer) -> Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("beedb-stream".into())
        .spawn(move || producer.run())
        .map_err(|e| {
            Error::new(
                crate::error::ErrorKind::Limit,
                "53000",
                format!("could not start the thread of a result stream: {e}"),
            )
        })
}

impl Producer {
    fn run(self) {
        let Producer { link, txn, in_block, query, params, shared, session_sequences, memory_limit, interrupt } = self;
        let outcome = {
            let sequences = sequence::SequenceAccess {
                clock: txn.started,
                catalog: &txn.catalog,
                values: &shared.sequences,
                session: &session_sequences,
            };
            let ectx = ExecContext {
                reader: txn.reader(),
                params: &params,
                subqueries: &query.subqueries,
                memory_limit,
                profile: None,
                interrupt: &interrupt,
                sequences: Some(&sequences),
            };
            let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                exec::run(&query.plan, &ectx, &mut |b| Ok(link.push(b)))
            }));
            match run {
                Ok(r) => r,
                Err(panic) => {
                    let what = panic
                        .downcast_ref::<&str>()
                        .map(|s| s.to_string())
                        .or_else(|| panic.downcast_ref::<String>().cloned())
                        .unwrap_or_else(|| "unknown panic".into());
                    Err(Error::internal(format!("internal error (a bug in BeeDB): {what}")))
                }
            }
        };
        // The plan (and its bees) and an autocommit snapshot are released before the
        // consumer learns the end.
        drop(query);
        let txn = if in_block { Some(txn) } else { None };
        link.finish(outcome, txn);
    }
}
