//! Statement execution: transactions around the binder, planner and executor.
//!
//! - autocommit: each statement is its own transaction: a snapshot for queries, the
//!   write transaction for anything that changes data or schema;
//! - `BEGIN … COMMIT`: the first statement takes a snapshot; the first write takes the
//!   write lock, and fails with a serialization error if another connection committed
//!   since the snapshot. An error aborts the block until `ROLLBACK` (or `COMMIT`,
//!   which then rolls back), as in PostgreSQL.
//! - `BEGIN IMMEDIATE` / `BEGIN EXCLUSIVE` (SQLite's): the write lock at `BEGIN`
//!   (waiting up to `writer_timeout`), so every statement reads and writes through
//!   the writer and none can fail with a serialization error. Other writers wait
//!   until `COMMIT` or `ROLLBACK`, or until an error ends the transaction.
//!   `BEGIN DEFERRED` is plain `BEGIN`.
//! - `SAVEPOINT name`, `RELEASE [SAVEPOINT] name`, `ROLLBACK TO [SAVEPOINT] name`
//!   (PostgreSQL's): a savepoint keeps the transaction's catalog, the relation sizes
//!   it changed, and a storage savepoint of its write transaction (set when the write
//!   lock is taken, for savepoints set before). A block with savepoints that fails is
//!   kept (with its write lock) so that `ROLLBACK TO` can recover it; one without is
//!   rolled back at once. Sequence values are not rolled back, as in PostgreSQL.
//!
//! Schema changes work on the transaction's own copy of the catalog, written to the
//! catalog heap and installed for every connection when the transaction commits.

pub(crate) mod copy;
mod analyze;
mod cluster;
mod check;
mod fk;
mod ddl;
mod dml;
mod plan_cache;
pub(crate) mod shape;
mod truncate;
mod query;
pub(crate) mod sequence;
pub(crate) mod stream;

pub use plan_cache::PlanCache;

use std::collections::HashMap;
use std::sync::Arc;

use beedb_storage::{PageRead, ReadTxn, WriteTxn};
use sqlparser::ast::{self, Statement};

use beedb_bees::BeeCache;

use crate::bees::form::RowFormer;
use crate::bees::{BeeSettings, StatementBees};
use crate::catalog::Catalog;
use crate::error::{Error, Result};
use crate::exec::Interrupt;
use crate::session::{Connection, QueryResult, Shared};
use crate::types::Value;

/// A connection's transaction state.
#[derive(Default)]
pub enum TxnState {
    /// Autocommit: each statement is its own transaction.
    #[default]
    Idle,
    /// Inside BEGIN … COMMIT.
    Active(Box<Txn>),
    /// Inside a block after an error: everything but ROLLBACK, COMMIT (which rolls
    /// back) and ROLLBACK TO a savepoint fails with 25P02. The transaction is kept
    /// while it has savepoints (ROLLBACK TO brings it back), else it is gone already.
    Failed(Option<Box<Txn>>),
}

impl TxnState {
    pub fn in_block(&self) -> bool {
        !matches!(self, TxnState::Idle)
    }

    /// The open transaction's characteristics, if one is open.
    fn mode(&self) -> Option<TxnMode> {
        match self {
            TxnState::Active(t) | TxnState::Failed(Some(t)) => Some(t.mode),
            _ => None,
        }
    }
}

/// An open transaction: a snapshot, the write lock once it wrote, and its catalog.
/// Autocommit writes and BEGIN IMMEDIATE take the write lock without a snapshot.
/// Dropping it rolls back and releases the write lock.
pub struct Txn {
    read: Option<ReadTxn>,
    write: Option<WriteTxn>,
    catalog: Arc<Catalog>,
    catalog_changed: bool,
    /// Open savepoints, oldest first. Once the transaction holds the write lock, the
    /// write transaction has one storage savepoint for each, at the same position.
    savepoints: Vec<Savepoint>,
    /// READ ONLY / READ WRITE and the isolation level asked for.
    mode: TxnMode,
    /// Whether a statement (other than SET, SHOW and transaction control) ran in it:
    /// then its isolation level can no longer change, as in PostgreSQL.
    ran_query: bool,
    /// When it started: what `now()` and `current_timestamp` return in it.
    started: crate::types::Timestamp,
    /// Rows this transaction inserted, updated or deleted, by table id: added to the
    /// database's counts of changes since the last ANALYZE when it commits
    /// (`analyze.rs`, the automatic ANALYZE).
    changed: rustc_hash::FxHashMap<u32, u64>,
    /// Tables this transaction analyzed: their counts of changes start again from
    /// zero when it commits.
    analyzed: Vec<u32>,
}

/// The clock now, as a `timestamp` (UTC, microseconds since 2000-01-01).
fn clock_now() -> crate::types::Timestamp {
    let micros = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or(0);
    // 2000-01-01 is 946,684,800 s after the Unix epoch.
    crate::types::Timestamp(micros - 946_684_800_000_000)
}

/// A transaction's characteristics (`BEGIN ISOLATION LEVEL … READ ONLY`, `SET
/// TRANSACTION …`, `SET SESSION CHARACTERISTICS AS TRANSACTION …`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxnMode {
    /// READ ONLY: any statement that writes fails with 25006.
    pub read_only: bool,
    /// The level asked for, as `SHOW transaction_isolation` names it. Every level
    /// runs as BeeDB's one: serializable (see `sql/README.md`, Transactions).
    pub isolation: &'static str,
}

impl Default for TxnMode {
    fn default() -> Self {
        TxnMode { read_only: false, isolation: "serializable" }
    }
}

impl TxnMode {
    /// `mode` with the characteristics `modes` set; a level BeeDB cannot give is
    /// 0A000. Every SQL level is accepted: BeeDB's transactions are serializable,
    /// which is at least what each asks for.
    fn with(mut self, modes: &[ast::TransactionMode]) -> Result<TxnMode> {
        for m in modes {
            match m {
                ast::TransactionMode::AccessMode(ast::TransactionAccessMode::ReadOnly) => self.read_only = true,
                ast::TransactionMode::AccessMode(ast::TransactionAccessMode::ReadWrite) => self.read_only = false,
                ast::TransactionMode::IsolationLevel(level) => self.isolation = isolation_name(level)?,
            }
        }
        Ok(self)
    }
}

fn isolation_name(level: &ast::TransactionIsolationLevel) -> Result<&'static str> {
    use ast::TransactionIsolationLevel as L;
    Ok(match level {
        L::ReadUncommitted => "read uncommitted",
        L::ReadCommitted => "read committed",
        L::RepeatableRead => "repeatable read",
        L::Serializable => "serializable",
        L::Snapshot => {
            return Err(Error::not_supported(
                "ISOLATION LEVEL SNAPSHOT is not supported (BeeDB's transactions are SERIALIZABLE)",
            ));
        }
    })
}

/// What a transaction was at a savepoint, besides its pages (the storage savepoint).
struct Savepoint {
    name: String,
    catalog: Arc<Catalog>,
    catalog_changed: bool,
    /// The bee cache's size of each relation whose size the transaction changed since
    /// the savepoint (before a newer one was set), as it was before the first change.
    relation_sizes: HashMap<u64, u64>,
}

impl Txn {
    /// Snapshot transaction on the committed state.
    fn begin_read(shared: &Shared) -> Txn {
        let _g = shared.commit_lock.lock();
        let read = shared.store.begin_read();
        let catalog = shared.catalog.lock().clone();
        Txn {
            read: Some(read),
            write: None,
            catalog,
            catalog_changed: false,
            savepoints: Vec::new(),
            mode: TxnMode::default(),
            ran_query: false,
            started: clock_now(),
            changed: Default::default(),
            analyzed: Vec::new(),
        }
    }

    /// Write transaction from the start, without a snapshot (BEGIN IMMEDIATE /
    /// EXCLUSIVE): waits for the write lock; every read goes through the writer.
    fn begin_write(shared: &Shared) -> Result<Txn> {
        Ok(Txn::writing(shared.store.begin_write()?, shared))
    }

    /// A transaction around the write transaction `write`, over the committed catalog.
    fn writing(write: WriteTxn, shared: &Shared) -> Txn {
        Txn {
            read: None,
            write: Some(write),
            catalog: committed_catalog(shared),
            catalog_changed: false,
            savepoints: Vec::new(),
            mode: TxnMode::default(),
            ran_query: false,
            started: clock_now(),
            changed: Default::default(),
            analyzed: Vec::new(),
        }
    }

    /// Takes the write lock (once). Fails if the snapshot has become stale.
    fn ensure_write(&mut self, shared: &Shared) -> Result<()> {
        if self.write.is_some() {
            return Ok(());
        }
        let w = shared.store.begin_write()?;
        if let Some(r) = &self.read
            && w.base() > r.snapshot() {
                w.rollback();
                return Err(Error::transaction(
                    "40001",
                    "could not serialize access due to a concurrent update; retry the transaction",
                ));
            }
        // The catalog may have changed between our snapshot and now only if a commit
        // happened, which the check above excludes; refresh it for autocommit.
        if self.read.is_none() {
            self.catalog = committed_catalog(shared);
        }
        // Savepoints set before the first write: nothing was written at any of them.
        for _ in &self.savepoints {
            w.savepoint()?;
        }
        self.write = Some(w);
        // Every read goes through the writer now, whose base is the snapshot. A
        // snapshot kept registered would stop the commit from retiring the page
        // versions it supersedes (each commit would then copy its pages into fresh
        // memory instead of recycled buffers).
        self.read = None;
        Ok(())
    }

    /// `SET TRANSACTION …` inside the block: PostgreSQL's 25001 once a statement ran
    /// for a change of isolation level or to READ WRITE.
    fn set_mode(&mut self, modes: &[ast::TransactionMode]) -> Result<()> {
        let new = self.mode.with(modes)?;
        if self.ran_query && new.isolation != self.mode.isolation {
            return Err(Error::transaction("25001", "SET TRANSACTION ISOLATION LEVEL must be called before any query"));
        }
        if self.ran_query && self.mode.read_only && !new.read_only {
            return Err(Error::transaction("25001", "transaction read-write mode must be set before any query"));
        }
        self.mode = new;
        Ok(())
    }

    /// `SAVEPOINT name`.
    fn set_savepoint(&mut self, name: String) -> Result<()> {
        if let Some(w) = &self.write {
            w.savepoint()?;
        }
        self.savepoints.push(Savepoint {
            name,
            catalog: self.catalog.clone(),
            catalog_changed: self.catalog_changed,
            relation_sizes: HashMap::new(),
        });
        Ok(())
    }

    /// The newest savepoint called `name` (names may repeat), else 3B001.
    fn find_savepoint(&self, name: &str) -> Result<usize> {
        self.savepoints
            .iter()
            .rposition(|s| s.name == name)
            .ok_or_else(|| no_savepoint(name))
    }

    /// `ROLLBACK TO SAVEPOINT`: the transaction as it was at savepoint `index`, which
    /// stays; the ones set after it are gone.
    fn rollback_to_savepoint(&mut self, index: usize, shared: &Shared) -> Result<()> {
        if let Some(w) = &self.write {
            w.rollback_to_savepoint(index)?;
        }
        // Newest first: a relation changed under several savepoints gets the size the
        // oldest of them recorded.
        for undone in self.savepoints.drain(index + 1..).rev() {
            for (id, size) in undone.relation_sizes {
                shared.bees.restore_relation_size(id, size);
            }
        }
        let kept = &mut self.savepoints[index];
        for (&id, &size) in &kept.relation_sizes {
            shared.bees.restore_relation_size(id, size);
        }
        kept.relation_sizes.clear();
        self.catalog = kept.catalog.clone();
        self.catalog_changed = kept.catalog_changed;
        Ok(())
    }

    /// `RELEASE SAVEPOINT`: forgets savepoint `index` and the ones after it; their
    /// changes stay, as changes since the savepoint before it.
    fn release_savepoint(&mut self, index: usize) -> Result<()> {
        if let Some(w) = &self.write {
            w.release_savepoint(index)?;
        }
        let released: Vec<Savepoint> = self.savepoints.drain(index..).collect();
        if let Some(parent) = self.savepoints.last_mut() {
            for savepoint in released {
                for (id, size) in savepoint.relation_sizes {
                    parent.relation_sizes.entry(id).or_insert(size);
                }
            }
        }
        Ok(())
    }

    /// Remembers relation `id`'s size before the transaction changes it, so that
    /// `ROLLBACK TO` the newest savepoint can restore it.
    pub(crate) fn remember_relation_size(&mut self, id: u64, bees: &BeeCache) {
        if let Some(top) = self.savepoints.last_mut() {
            top.relation_sizes.entry(id).or_insert_with(|| bees.relation_size(id));
        }
    }

    fn reader(&self) -> &(dyn PageRead + Sync) {
        match (&self.write, &self.read) {
            (Some(w), _) => w,
            (None, Some(r)) => r,
            (None, None) => unreachable!("a transaction reads through a snapshot or the writer"),
        }
    }

    fn writer(&self) -> Result<&WriteTxn> {
        self.write
            .as_ref()
            .ok_or_else(|| Error::internal("write without the write transaction"))
    }

    /// The catalog, for changing its schema (a new schema generation: every cached
    /// plan is made again under it).
    fn catalog_mut(&mut self) -> &mut Catalog {
        self.catalog_changed = true;
        let catalog = Arc::make_mut(&mut self.catalog);
        catalog.schema_gen = crate::catalog::fresh_schema_gen();
        catalog
    }

    /// The catalog's statistics, for changing them and nothing else: the schema
    /// generation stays, so a cached plan reading other tables, or one the new
    /// statistics would not change, is kept (`plan_cache`).
    fn stats_mut(&mut self) -> &mut std::collections::BTreeMap<u32, crate::catalog::TableStats> {
        self.catalog_changed = true;
        &mut Arc::make_mut(&mut self.catalog).stats
    }

    fn commit(mut self, shared: &Shared) -> Result<()> {
        let Some(w) = self.write.take() else {
            return Ok(());
        };
        // Sequence values handed out since the file last got them (by this or any
        // other connection) are written with this commit.
        let sequences_written = shared.sequences.save(&w, &self.catalog)?;
        if self.catalog_changed {
            let mut cat = (*self.catalog).clone();
            cat.save(&w)?;
            let _g = shared.commit_lock.lock();
            w.commit()?;
            // Retire the bees of dropped tables and of tables whose layout changed.
            // The tables by id, once: scanning them all for each relation made every
            // schema change O(tables²) (2,000 CREATE TABLEs, one a transaction: 49 s,
            // most of it here once the catalog save wrote only the new table).
            let by_id: rustc_hash::FxHashMap<u64, &Arc<crate::catalog::TableDef>> =
                cat.tables.values().map(|t| (t.id as u64, t)).collect();
            shared.bees.retire_relations(|id, key| {
                by_id.get(&id).is_some_and(|t| crate::bees::translate::relation_spec(t).key() == key)
            });
            *shared.catalog.lock() = Arc::new(cat);
        } else {
            w.commit()?;
        }
        if let Some(changes) = sequences_written {
            shared.sequences.written(changes);
        }
        if !self.changed.is_empty() || !self.analyzed.is_empty() {
            let mut counts = shared.changes.lock();
            for id in &self.analyzed {
                counts.remove(id);
            }
            for (&id, &n) in &self.changed {
                *counts.entry(id).or_insert(0) += n;
            }
        }
        Ok(())
    }
}

/// The committed catalog, for a transaction that holds the write lock. A committer
/// releases the write lock inside `WriteTxn::commit` and installs its catalog after,
/// both under the commit lock; taking that lock here waits for the install.
fn committed_catalog(shared: &Shared) -> Arc<Catalog> {
    let _g = shared.commit_lock.lock();
    shared.catalog.lock().clone()
}

/// Rows a statement writes before the form bee encodes them: for fewer, looking the
/// bee up and making its buffers costs more than it saves (measured under callgrind on
/// TP1, whose statements write one row each: about 4k instructions a statement).
pub const FORM_BEE_MIN_ROWS: usize = 64;

/// What a statement needs from its transaction.
pub struct Ctx<'a> {
    pub txn: &'a mut Txn,
    pub sql: &'a str,
    pub params: &'a [Value],
    pub memory_limit: usize,
    /// The session's bee switches.
    pub bees: BeeSettings,
    /// The session's optimizer switches.
    pub optimizer: crate::optimizer::Rules,
    /// The session's `point_path` setting (`exec/point.rs`).
    pub point_path: bool,
    pub bee_cache: &'a Arc<BeeCache>,
    /// The prepared statement's query bees, if it is one.
    pub statement_bees: Option<&'a StatementBees>,
    /// The statement's plan cache, when it runs as a `Statement` (not a batch).
    pub plan_cache: Option<&'a PlanCache>,
    /// Cancel requests and `statement_timeout`, checked by long-running loops.
    pub interrupt: Interrupt,
    /// The application's functions registered on the connection.
    pub functions: &'a crate::expr::udf::Functions,
    /// The database's sequence values and the session's `currval`s.
    pub sequence_values: &'a sequence::SequenceValues,
    pub session_sequences: &'a sequence::SessionSequences,
}

impl Ctx<'_> {
    /// The sequences the statement's expressions reach (`nextval` and the others).
    pub fn sequences(&self) -> sequence::SequenceAccess<'_> {
        sequence::SequenceAccess {
            clock: self.txn.started,
            catalog: &self.txn.catalog,
            values: self.sequence_values,
            session: self.session_sequences,
        }
    }

    pub fn catalog(&self) -> &Catalog {
        &self.txn.catalog
    }

    /// Makes `table`'s relation bees now (CREATE TABLE, ALTER TABLE), so the first
    /// statement that reads or writes it finds them, when relation bees are on.
    pub fn make_relation_bees(&self, table: &crate::catalog::TableDef) -> Result<()> {
        if self.bees.deform() || self.bees.form() {
            let expected = self.bee_cache.relation_size(table.id as u64);
            crate::bees::relation_bees(self.bee_cache, table, expected, self.bees.maker)?;
        }
        Ok(())
    }

    /// The form bee of `table` with its buffers, when `bee_form` is on and the
    /// statement writes at least [`FORM_BEE_MIN_ROWS`] rows (`rows`: how many it will
    /// write, or has written so far when it streams them).
    pub fn row_former(&self, table: &crate::catalog::TableDef, rows: usize) -> Result<Option<RowFormer>> {
        if !self.bees.form() || rows < FORM_BEE_MIN_ROWS {
            return Ok(None);
        }
        let expected = self.bee_cache.relation_size(table.id as u64);
        let bees = crate::bees::relation_bees(self.bee_cache, table, expected, self.bees.maker)?;
        Ok(Some(RowFormer::new(bees.form.clone())))
    }

    /// Counts `rows` inserted into `table` toward its size (the maker policy's
    /// expected tuples).
    pub fn note_inserts(&mut self, table: &crate::catalog::TableDef, rows: usize) {
        self.txn.remember_relation_size(table.id as u64, self.bee_cache);
        self.bee_cache.note_inserts(table.id as u64, rows as u64);
        self.note_changes(table, rows);
    }

    /// Counts `rows` inserted, updated or deleted in `table` toward its changes since
    /// the last ANALYZE (added to the database's counts when the transaction
    /// commits; `analyze.rs`).
    pub fn note_changes(&mut self, table: &crate::catalog::TableDef, rows: usize) {
        if rows > 0 {
            *self.txn.changed.entry(table.id).or_insert(0) += rows as u64;
        }
    }

    /// Counts `rows` deleted from `table` off its size (when its size is known).
    pub fn note_deletes(&mut self, table: &crate::catalog::TableDef, rows: usize) {
        let id = table.id as u64;
        self.txn.remember_relation_size(id, self.bee_cache);
        let size = self.bee_cache.relation_size(id);
        if size > 0 {
            self.bee_cache.note_relation_size(id, size.saturating_sub(rows as u64).max(1));
        }
        self.note_changes(table, rows);
    }

    /// Stores `table`'s size as the bee cache knows it in the catalog's statistics
    /// (saved at commit), so it survives reopening. Called where a statement changed
    /// many rows at once (COPY) or counted them (ANALYZE).
    pub fn store_relation_size(&mut self, table: &crate::catalog::TableDef) {
        let rows = self.bee_cache.relation_size(table.id as u64);
        let known = self.txn.catalog.stats.get(&table.id).map(|s| s.rows);
        if known != Some(rows) {
            self.txn.stats_mut().entry(table.id).or_default().rows = rows;
        }
    }
}

/// Whether a statement may write (and so needs the write lock).
fn writes(ast: &Statement) -> bool {
    match ast {
        Statement::Query(_) | Statement::ShowVariable { .. } => false,
        Statement::Copy { to: true, .. } => false,
        Statement::Explain { statement, analyze, options, .. } => {
            let analyze = query::ExplainOptions::parse(*analyze, options.as_deref()).is_ok_and(|o| o.analyze);
            analyze && writes(statement)
        }
        _ => true,
    }
}

/// Runs one parsed statement.
pub fn execute(
    conn: &mut Connection,
    sql: &str,
    ast: &Statement,
    params: &[Value],
    statement_bees: Option<&StatementBees>,
    plan_cache: Option<&PlanCache>,
) -> Result<QueryResult> {
    // One statement at a time: an open result stream ends first (`stream.rs`).
    stream::settle(conn);
    let shared = conn.db.shared.clone();
    let functions = conn.functions.clone();
    match ast {
        Statement::StartTransaction { modifier, modes, .. } => {
            let mode = conn.default_mode.with(modes)?;
            return match conn.txn {
                TxnState::Idle => {
                    let immediate = matches!(
                        modifier,
                        Some(ast::TransactionModifier::Immediate | ast::TransactionModifier::Exclusive)
                    );
                    begin_block(conn, &shared, immediate, mode)?;
                    Ok(QueryResult::command("BEGIN"))
                }
                // PostgreSQL warns and goes on.
                _ => Ok(QueryResult::command("BEGIN")),
            };
        }
        Statement::Commit { chain, .. } => {
            // (sqlparser sets `chain` for AND CHAIN, not for AND NO CHAIN.)
            let chain = *chain;
            if chain && !conn.txn.in_block() {
                return Err(outside_block("COMMIT AND CHAIN"));
            }
            let mode = conn.txn.mode().unwrap_or(conn.block_mode);
            let r = match std::mem::take(&mut conn.txn) {
                TxnState::Idle => Ok(QueryResult::command("COMMIT")),
                TxnState::Failed(_) => Ok(QueryResult::command("ROLLBACK")),
                TxnState::Active(t) => t.commit(&shared).map(|()| QueryResult::command("COMMIT")),
            };
            // AND CHAIN: a new block at once, as the ended one began and with its
            // characteristics (a failed commit leaves none, as in PostgreSQL).
            if chain && r.is_ok() {
                begin_block(conn, &shared, conn.block_immediate, mode)?;
            }
            return r;
        }
        Statement::Rollback { savepoint: None, chain } => {
            let chain = *chain;
            if chain && !conn.txn.in_block() {
                return Err(outside_block("ROLLBACK AND CHAIN"));
            }
            let mode = conn.txn.mode().unwrap_or(conn.block_mode);
            conn.txn = TxnState::Idle;
            if chain {
                begin_block(conn, &shared, conn.block_immediate, mode)?;
            }
            return Ok(QueryResult::command("ROLLBACK"));
        }
        Statement::Rollback { savepoint: Some(name), .. } => {
            let name = crate::binder::ident(name);
            let txn = match std::mem::take(&mut conn.txn) {
                TxnState::Idle => return Err(outside_block("ROLLBACK TO SAVEPOINT")),
                TxnState::Failed(None) => {
                    conn.txn = TxnState::Failed(None);
                    return Err(no_savepoint(&name));
                }
                TxnState::Active(txn) | TxnState::Failed(Some(txn)) => txn,
            };
            let mut txn = txn;
            let r = txn
                .find_savepoint(&name)
                .and_then(|i| txn.rollback_to_savepoint(i, &shared));
            conn.txn = match &r {
                Ok(()) => TxnState::Active(txn),
                // An unknown name aborts the block (or leaves it aborted) as any error
                // does; a storage error while undoing leaves nothing to trust.
                Err(e) if e.sqlstate == "3B001" => TxnState::Failed(Some(txn)),
                Err(_) => TxnState::Failed(None),
            };
            return r.map(|()| QueryResult::command("ROLLBACK"));
        }
        Statement::Savepoint { name } => {
            let name = crate::binder::ident(name);
            return match &mut conn.txn {
                TxnState::Idle => Err(outside_block("SAVEPOINT")),
                TxnState::Failed(_) => Err(aborted()),
                TxnState::Active(txn) => match txn.set_savepoint(name) {
                    Ok(()) => Ok(QueryResult::command("SAVEPOINT")),
                    Err(e) => {
                        conn.txn = TxnState::Failed(None);
                        Err(e)
                    }
                },
            };
        }
        Statement::ReleaseSavepoint { name } => {
            let name = crate::binder::ident(name);
            return match std::mem::take(&mut conn.txn) {
                TxnState::Idle => Err(outside_block("RELEASE SAVEPOINT")),
                TxnState::Failed(t) => {
                    conn.txn = TxnState::Failed(t);
                    Err(aborted())
                }
                TxnState::Active(mut txn) => {
                    let r = txn.find_savepoint(&name).and_then(|i| txn.release_savepoint(i));
                    conn.txn = match &r {
                        Ok(()) => TxnState::Active(txn),
                        Err(_) => failed(txn),
                    };
                    r.map(|()| QueryResult::command("RELEASE"))
                }
            };
        }
        Statement::Set(ast::Set::SetTransaction { modes, snapshot, session }) => {
            if snapshot.is_some() {
                return Err(Error::not_supported("SET TRANSACTION SNAPSHOT is not supported"));
            }
            if *session {
                conn.default_mode = conn.default_mode.with(modes)?;
                return Ok(QueryResult::command("SET"));
            }
            return match &mut conn.txn {
                // PostgreSQL warns and changes nothing.
                TxnState::Idle => Ok(QueryResult::command("SET")),
                TxnState::Failed(_) => Err(aborted()),
                TxnState::Active(txn) => {
                    let r = txn.set_mode(modes);
                    if r.is_err()
                        && let TxnState::Active(txn) = std::mem::take(&mut conn.txn)
                    {
                        conn.txn = failed(txn);
                    }
                    r.map(|()| QueryResult::command("SET"))
                }
            };
        }
        Statement::ShowVariable { variable } if !matches!(conn.txn, TxnState::Failed(_)) => {
            let name = variable.iter().map(|i| i.value.to_ascii_lowercase()).collect::<Vec<_>>().join(" ");
            let mode = conn.txn.mode().unwrap_or(conn.default_mode);
            let value = match name.as_str() {
                "transaction_isolation" | "transaction isolation level" => Some(mode.isolation.to_string()),
                "transaction_read_only" => Some(if mode.read_only { "on" } else { "off" }.to_string()),
                _ => None,
            };
            if let Some(v) = value {
                let column = if name == "transaction_read_only" { "transaction_read_only" } else { "transaction_isolation" };
                return Ok(QueryResult {
                    columns: vec![col(column)],
                    rows: vec![crate::session::Row(vec![Value::Text(v)])],
                    tag: "SHOW".into(),
                    rows_affected: 1,
                });
            }
        }
        _ => {}
    }
    if let Statement::Set(_) | Statement::ShowVariable { .. } | Statement::Reset(_) = ast {
        if matches!(conn.txn, TxnState::Failed(_)) {
            return Err(aborted());
        }
        return settings_statement(conn, ast);
    }
    let env = Env {
        memory_limit: conn.settings.memory_limit,
        bees: conn.settings.bees,
        optimizer: conn.settings.optimizer,
        point_path: conn.settings.point_path,
        statement_bees,
        plan_cache,
        interrupt: conn.interrupt.start(conn.settings.statement_timeout),
        functions: &functions,
        session_sequences: conn.sequences.clone(),
    };
    match &mut conn.txn {
        TxnState::Failed(_) => Err(aborted()),
        TxnState::Active(txn) => {
            txn.ran_query = true;
            let r = run_in(txn, &shared, sql, ast, params, &env);
            // A declined statement shape did nothing yet: the session runs the
            // statement with its literals next (`shape.rs`).
            if r.as_ref().is_err_and(|e| shape::declined(e).is_none())
                && let TxnState::Active(txn) = std::mem::take(&mut conn.txn)
            {
                conn.txn = failed(txn);
            }
            r
        }
        TxnState::Idle => {
            let writes = writes(ast);
            if !writes {
                analyze_deferred(&shared, ast, &env);
            }
            let mut txn = if writes {
                Txn {
                    read: None,
                    write: None,
                    catalog: shared.catalog.lock().clone(),
                    catalog_changed: false,
                    savepoints: Vec::new(),
                    mode: conn.default_mode,
                    ran_query: false,
                    started: clock_now(),
                    changed: Default::default(),
                    analyzed: Vec::new(),
                }
            } else {
                let mut t = Txn::begin_read(&shared);
                t.mode = conn.default_mode;
                t
            };
            let r = run_in(&mut txn, &shared, sql, ast, params, &env)?;
            txn.commit(&shared)?;
            Ok(r)
        }
    }
}

/// The deferred automatic ANALYZE (`analyze.rs`): before an autocommit statement
/// that only reads plans, each table it names whose rows changed enough since its
/// last ANALYZE ([`analyze::deferred_sample`]) is analyzed — sampled through a
/// snapshot of its own, without the write lock, then its statistics stored by a
/// short transaction of their own. The write lock is only tried, never waited for:
/// when a writer (or a checkpoint) holds it, the table stays due and a later
/// statement analyzes it. So no INSERT, UPDATE or DELETE pays for the ANALYZE its
/// rows make due, and no writer waits for one. Best effort: an error leaves the
/// table due and the statement runs as without it.
fn analyze_deferred(shared: &Shared, ast: &Statement, env: &Env<'_>) {
    let due: Vec<(Arc<crate::catalog::TableDef>, u64, usize)> = {
        let counts = shared.changes.lock();
        if counts.is_empty() {
            return;
        }
        let catalog = shared.catalog.lock().clone();
        let retry = shared.analyze_retry.lock();
        let now = std::time::Instant::now();
        let mut due = Vec::new();
        let _ = ast::visit_relations(ast, |name| {
            if let Ok(name) = crate::binder::object_name(name)
                && let Some(t) = catalog.table(&name)
                && retry.get(&t.id).is_none_or(|&at| now >= at)
                && !due.iter().any(|(d, ..): &(Arc<crate::catalog::TableDef>, u64, usize)| d.id == t.id)
                && let Some(&changes) = counts.get(&t.id)
                && let Some(sample) = analyze::deferred_sample(&catalog, t, changes)
            {
                due.push((t.clone(), changes, sample));
            }
            std::ops::ControlFlow::<()>::Continue(())
        });
        due
    };
    for (table, changes, sample) in due {
        let mut retry = shared.analyze_retry.lock();
        retry.remove(&table.id);
        drop(retry);
        if analyze_one_deferred(shared, env, &table, changes, sample).is_err() {
            // Busy (or failed): readers do not sample the table again at once, each to
            // find the write lock taken.
            shared.analyze_retry.lock().insert(table.id, std::time::Instant::now() + ANALYZE_RETRY_AFTER);
        }
    }
}

/// How long after a deferred ANALYZE could not store its statistics (the write lock
/// was taken) readers leave the table alone.
const ANALYZE_RETRY_AFTER: std::time::Duration = std::time::Duration::from_millis(50);

/// [`analyze_deferred`] of one table, `changes` being its count of changes when
/// it was found due.
fn analyze_one_deferred(
    shared: &Shared,
    env: &Env<'_>,
    table: &crate::catalog::TableDef,
    changes: u64,
    sample: usize,
) -> Result<()> {
    let mut read = Txn::begin_read(shared);
    let schema_gen = read.catalog.schema_gen;
    let snapshot = read.read.as_ref().map(|r| r.snapshot());
    let stats = {
        let ctx = Ctx {
            txn: &mut read,
            sql: "",
            params: &[],
            memory_limit: env.memory_limit,
            bees: env.bees,
            optimizer: env.optimizer,
            point_path: env.point_path,
            bee_cache: &shared.bees,
            statement_bees: None,
            plan_cache: None,
            interrupt: env.interrupt.clone(),
            functions: env.functions,
            sequence_values: &shared.sequences,
            session_sequences: &env.session_sequences,
        };
        analyze::gather_deferred(&ctx, table, sample)?
    };
    drop(read);
    let w = shared.store.begin_write_timeout(std::time::Duration::ZERO)?;
    let current = snapshot == Some(w.base());
    let mut txn = Txn::writing(w, shared);
    // A schema change since the snapshot (the table altered, dropped or made
    // again) makes the sample the wrong table's: it stays due.
    if txn.catalog.schema_gen != schema_gen || !txn.catalog.tables.values().any(|t| t.id == table.id) {
        return Err(Error::internal("the schema changed under the deferred ANALYZE"));
    }
    let rows = stats.rows;
    txn.stats_mut().insert(table.id, stats);
    txn.commit(shared)?;
    // The row count is the snapshot's: the relation size when no commit came since.
    if current {
        shared.bees.note_relation_size(table.id as u64, rows.max(1));
    }
    let mut counts = shared.changes.lock();
    if let Some(c) = counts.get_mut(&table.id) {
        *c = c.saturating_sub(changes);
        if *c == 0 {
            counts.remove(&table.id);
        }
    }
    Ok(())
}

/// Opens a transaction block with characteristics `mode`: a snapshot, or
/// (`immediate`: BEGIN IMMEDIATE or EXCLUSIVE) the write lock at once; remembered so
/// AND CHAIN opens the next one alike.
fn begin_block(conn: &mut Connection, shared: &Shared, immediate: bool, mode: TxnMode) -> Result<()> {
    let mut txn = if immediate { Txn::begin_write(shared)? } else { Txn::begin_read(shared) };
    txn.mode = mode;
    conn.txn = TxnState::Active(Box::new(txn));
    conn.block_immediate = immediate;
    conn.block_mode = mode;
    Ok(())
}

/// A statement that failed before the engine saw it (a syntax error) aborts an open
/// block as any error in it does, as in PostgreSQL: 25P02 until ROLLBACK (or
/// ROLLBACK TO a savepoint).
pub fn abort_block(conn: &mut Connection) {
    stream::settle(conn);
    if let TxnState::Active(txn) = std::mem::take(&mut conn.txn) {
        conn.txn = failed(txn);
    }
}

/// The block after an error in it: kept for `ROLLBACK TO` while it has savepoints,
/// else rolled back now (releasing the write lock at once).
fn failed(txn: Box<Txn>) -> TxnState {
    if txn.savepoints.is_empty() {
        TxnState::Failed(None)
    } else {
        TxnState::Failed(Some(txn))
    }
}

fn outside_block(statement: &str) -> Error {
    Error::transaction("25P01", format!("{statement} can only be used in transaction blocks"))
}

fn no_savepoint(name: &str) -> Error {
    Error::transaction("3B001", format!("savepoint \"{name}\" does not exist"))
}

fn aborted() -> Error {
    Error::transaction(
        "25P02",
        "current transaction is aborted, commands ignored until end of transaction block",
    )
}

/// What a statement runs with besides its transaction.
struct Env<'a> {
    memory_limit: usize,
    bees: BeeSettings,
    optimizer: crate::optimizer::Rules,
    point_path: bool,
    statement_bees: Option<&'a StatementBees>,
    plan_cache: Option<&'a PlanCache>,
    interrupt: Interrupt,
    functions: &'a crate::expr::udf::Functions,
    session_sequences: Arc<sequence::SessionSequences>,
}

fn run_in(
    txn: &mut Txn,
    shared: &Shared,
    sql: &str,
    ast: &Statement,
    params: &[Value],
    env: &Env<'_>,
) -> Result<QueryResult> {
    if writes(ast) {
        // ANALYZE only refreshes statistics, which PostgreSQL allows too.
        if txn.mode.read_only && !matches!(ast, Statement::Analyze(_)) {
            return Err(Error::transaction(
                "25006",
                format!("cannot execute {} in a read-only transaction", written_statement_name(ast)),
            ));
        }
        txn.ensure_write(shared)?;
    }
    let mut ctx = Ctx {
        txn,
        sql,
        params,
        memory_limit: env.memory_limit,
        bees: env.bees,
        optimizer: env.optimizer,
        point_path: env.point_path,
        bee_cache: &shared.bees,
        statement_bees: env.statement_bees,
        plan_cache: env.plan_cache,
        interrupt: env.interrupt.clone(),
        functions: env.functions,
        sequence_values: &shared.sequences,
        session_sequences: &env.session_sequences,
    };
    dispatch(&mut ctx, ast)
}

fn dispatch(ctx: &mut Ctx<'_>, ast: &Statement) -> Result<QueryResult> {
    match ast {
        Statement::Query(q) => query::select(ctx, q),
        Statement::Explain {
            statement,
            analyze,
            options,
            ..
        } => {
            let options = query::ExplainOptions::parse(*analyze, options.as_deref())?;
            query::explain(ctx, statement, &options)
        }
        Statement::Insert(i) => dml::insert(ctx, i),
        Statement::Analyze(a) => analyze::analyze(ctx, a),
        // ALTER SEQUENCE and CLUSTER are carried in OptimizeTable (see `parser.rs`).
        Statement::OptimizeTable { name, has_table_keyword: true, include_final, zorder, .. } => {
            sequence::alter_sequence(ctx, name, *include_final, zorder.as_deref().unwrap_or(&[]))
        }
        Statement::OptimizeTable { name, on_cluster, .. } => cluster::cluster(ctx, name, on_cluster.as_ref()),
        Statement::Truncate(t) => truncate::truncate(ctx, t),
        Statement::Update(u) => dml::update(ctx, u),
        Statement::Delete(d) => dml::delete(ctx, d),
        Statement::CreateTable(c) => ddl::create_table(ctx, c),
        Statement::CreateIndex(c) => ddl::create_index(ctx, c),
        Statement::CreateView(v) => ddl::create_view(ctx, v),
        Statement::CreateSequence {
            temporary,
            if_not_exists,
            name,
            data_type,
            sequence_options,
            owned_by,
        } => sequence::create_sequence(
            ctx,
            *if_not_exists,
            name,
            data_type.as_ref(),
            sequence_options,
            owned_by.as_ref(),
            *temporary,
        ),
        Statement::Drop { object_type: ast::ObjectType::Sequence, if_exists, names, cascade, .. } => {
            sequence::drop_sequences(ctx, *if_exists, names, *cascade)
        }
        Statement::Drop {
            object_type,
            if_exists,
            names,
            cascade,
            ..
        } => ddl::drop(ctx, object_type, *if_exists, names, *cascade),
        Statement::AlterTable(a) => ddl::alter_table(ctx, a),
        Statement::Copy {
            source,
            to,
            target,
            options,
            legacy_options,
            ..
        } => copy::copy(ctx, source, *to, target, options, legacy_options),
        other => Err(Error::not_supported(format!("{} is not supported", statement_name(other)))),
    }
}

/// The statement that writes, named as PostgreSQL's read-only error names it
/// (`INSERT`, `CREATE INDEX`, `COPY FROM`; EXPLAIN ANALYZE by what it runs).
fn written_statement_name(ast: &Statement) -> String {
    match ast {
        Statement::Explain { statement, .. } => written_statement_name(statement),
        Statement::CreateIndex(_) => "CREATE INDEX".into(),
        Statement::Copy { .. } => "COPY FROM".into(),
        // ALTER SEQUENCE and CLUSTER are carried in sqlparser's OptimizeTable (see `parser.rs`).
        Statement::OptimizeTable { has_table_keyword: true, zorder, .. } => {
            let options = crate::parser::alter_sequence_options(zorder.as_deref().unwrap_or(&[]));
            if options.first().is_some_and(|(w, _)| w == "column") { "ALTER TABLE" } else { "ALTER SEQUENCE" }.into()
        }
        Statement::OptimizeTable { .. } => "CLUSTER".into(),
        Statement::Truncate(_) => "TRUNCATE TABLE".into(),
        other => statement_name(other),
    }
}

/// The leading keywords of a statement, to name it in an error (`VACUUM`,
/// `CREATE SEQUENCE`).
fn statement_name(ast: &Statement) -> String {
    let text = ast.to_string();
    let words: Vec<&str> = text.split_whitespace().collect();
    let n = match words.first().map(|w| w.to_ascii_uppercase()) {
        Some(w) if matches!(w.as_str(), "CREATE" | "DROP" | "ALTER") => 2,
        _ => 1,
    };
    words.iter().take(n).map(|w| w.to_ascii_uppercase()).collect::<Vec<_>>().join(" ")
}

fn setting_value(values: &[ast::Expr]) -> Result<String> {
    let parts: Vec<String> = values
        .iter()
        .map(|v| match v {
            ast::Expr::Value(v) => match &v.value {
                ast::Value::SingleQuotedString(s) => s.clone(),
                other => other.to_string(),
            },
            ast::Expr::Identifier(i) => i.value.clone(),
            other => other.to_string(),
        })
        .collect();
    Ok(parts.join(", "))
}

fn settings_statement(conn: &mut Connection, ast: &Statement) -> Result<QueryResult> {
    let shared = conn.db.shared.clone();
    let store = crate::session::SettingTargets {
        store: &shared.store,
        bees: &shared.bees,
    };
    match ast {
        Statement::Set(ast::Set::SingleAssignment {
            variable, values, scope, hivevar,
        }) => {
            // Settings last for the session: a SET whose scope is the transaction
            // (LOCAL) or the server (GLOBAL) would otherwise act as a plain SET.
            match scope {
                Some(ast::ContextModifier::Local) => {
                    return Err(Error::not_supported("SET LOCAL is not supported (SET applies to the session)"));
                }
                Some(ast::ContextModifier::Global) => {
                    return Err(Error::not_supported("SET GLOBAL is not supported (SET applies to the session)"));
                }
                Some(ast::ContextModifier::Session) | None => {}
            }
            if *hivevar {
                return Err(Error::not_supported("SET HIVEVAR is not supported"));
            }
            let name = variable.to_string().to_ascii_lowercase();
            let value = setting_value(values)?;
            if value.eq_ignore_ascii_case("default") {
                conn.settings.reset(&name, &store)?;
            } else {
                conn.settings.set(&name, &value, &store)?;
            }
            Ok(QueryResult::command("SET"))
        }
        Statement::Reset(r) => {
            match &r.reset {
                ast::Reset::ALL => {
                    for name in crate::session::SETTING_NAMES {
                        conn.settings.reset(name, &store)?;
                    }
                }
                ast::Reset::ConfigurationParameter(name) => {
                    conn.settings
                        .reset(&name.to_string().to_ascii_lowercase(), &store)?;
                }
                ast::Reset::SessionAuthorization => {
                    return Err(Error::not_supported("RESET SESSION AUTHORIZATION"));
                }
            }
            Ok(QueryResult::command("RESET"))
        }
        Statement::ShowVariable { variable } => {
            let name = variable
                .iter()
                .map(|i| i.value.to_ascii_lowercase())
                .collect::<Vec<_>>()
                .join(" ");
            let (columns, rows) = if name == "all" {
                let rows = crate::session::SETTING_NAMES
                    .iter()
                    .map(|n| {
                        Ok(crate::session::Row(vec![
                            Value::Text(n.to_string()),
                            Value::Text(conn.settings.show(n, &store)?),
                        ]))
                    })
                    .collect::<Result<Vec<_>>>()?;
                (vec![col("name"), col("setting")], rows)
            } else {
                let v = conn.settings.show(&name, &store)?;
                (vec![col(&name)], vec![crate::session::Row(vec![Value::Text(v)])])
            };
            let n = rows.len() as u64;
            Ok(QueryResult {
                columns,
                rows,
                tag: "SHOW".into(),
                rows_affected: n,
            })
        }
        _ => Err(Error::not_supported("this form of SET")),
    }
}

fn col(name: &str) -> crate::session::Column {
    crate::session::Column {
        name: name.to_string(),
        data_type: crate::types::DataType::Text,
    }
}
