//! The public API: [`Database`] (one open database file, shared by its connections),
//! [`Connection`] (a session: settings and a transaction), [`Statement`] (a prepared
//! statement with `$1`/`?` parameters) and [`QueryResult`].
//!
//! ```
//! use beedb_sql::{Database, Value};
//!
//! # fn main() -> beedb_sql::Result<()> {
//! let db = Database::open(":memory:")?;
//! let mut conn = db.connect();
//! conn.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT);
//!                     INSERT INTO t VALUES (1, 'one'), (2, 'two');")?;
//! let result = conn.query("SELECT name FROM t WHERE id = $1", &[Value::Integer(2)])?;
//! assert_eq!(result.rows[0].get::<String>(0)?, "two");
//! # Ok(())
//! # }
//! ```

mod result;
mod settings;
mod stream;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use beedb_bees::BeeCache;
use beedb_storage::{Store, StoreOptions};
use parking_lot::Mutex;

pub use result::{Column, FromValue, QueryResult, Row};
pub use settings::{SETTING_NAMES, SettingTargets, Settings};
pub use stream::{ColumnSlice, ColumnValues, ResultBatch, ResultStream};

pub use crate::exec::InterruptHandle;

use crate::bees::StatementBees;
use crate::catalog::Catalog;
use crate::engine;
use crate::error::{Error, Result};
use crate::expr::udf::{AggregateFunction, Arity, Functions, ScalarFunction};
use crate::parser;
use crate::types::Value;

/// Options for [`Database::open_with`].
#[derive(Debug, Clone, Default)]
pub struct DatabaseOptions {
    pub storage: StoreOptions,
}

/// An open database. Cheap to clone; every clone and every connection shares the one
/// store and catalog. Dropping the last one closes the file.
#[derive(Clone)]
pub struct Database {
    pub(crate) shared: Arc<Shared>,
}

pub(crate) struct Shared {
    pub store: Store,
    pub path: PathBuf,
    /// The committed catalog. Swapped (under `commit_lock`) when a transaction that
    /// changed the schema commits; a reader takes it together with its snapshot.
    pub catalog: Mutex<Arc<Catalog>>,
    /// Held while a transaction commits and installs its catalog, and while a reader
    /// takes its snapshot and catalog, so the two always match.
    pub commit_lock: Mutex<()>,
    /// The bee cache: relation bees of every table, one-off query bees.
    pub bees: Arc<BeeCache>,
    /// Every sequence's value, handed out outside transactions.
    pub sequences: engine::sequence::SequenceValues,
    /// Rows inserted, updated or deleted by committed transactions since each
    /// table's last ANALYZE, by table id: what the automatic ANALYZE follows
    /// (`engine/analyze.rs`). In memory only: after reopening, counting starts again.
    pub changes: Mutex<rustc_hash::FxHashMap<u32, u64>>,
    /// Tables whose deferred ANALYZE found the write lock taken, and when readers
    /// may try again (`engine::analyze_deferred`).
    pub analyze_retry: Mutex<rustc_hash::FxHashMap<u32, std::time::Instant>>,
}

impl Drop for Shared {
    /// Writes the sequence values handed out since the last commit (a rolled-back
    /// INSERT's, a `SELECT nextval(…)`'s), so a reopened database does not hand them
    /// out again. Best effort: a read-only or failing store keeps its last values.
    fn drop(&mut self) {
        if !self.sequences.unwritten() {
            return;
        }
        let catalog = self.catalog.lock().clone();
        if let Ok(w) = self.store.begin_write() {
            match self.sequences.save(&w, &catalog) {
                Ok(Some(changes)) if w.commit().is_ok() => self.sequences.written(changes),
                _ => {}
            }
        }
    }
}

impl Database {
    /// Opens (creating if needed) the database at `path`; `":memory:"` is a private
    /// in-memory database.
    pub fn open(path: impl AsRef<Path>) -> Result<Database> {
        Database::open_with(path, DatabaseOptions::default())
    }

    pub fn open_with(path: impl AsRef<Path>, options: DatabaseOptions) -> Result<Database> {
        let path = path.as_ref();
        let (store, _report) = Store::open(path, options.storage)?;
        let catalog = Catalog::load(&store)?;
        let sequences = engine::sequence::SequenceValues::load(&store)?;
        // Relation bees are made from the catalog's layouts at open: rebuilding them
        // costs microseconds per table, less than loading stored code would.
        let bees = Arc::new(BeeCache::new());
        for table in catalog.tables.values() {
            // The stored row count: the optimizer's relation size and the maker
            // policy's expected tuples from the first statement on.
            let rows = catalog.stats.get(&table.id).map_or(0, |s| s.rows);
            if rows > 0 {
                bees.note_relation_size(table.id as u64, rows);
            }
            crate::bees::relation_bees(&bees, table, rows, Default::default())?;
        }
        Ok(Database {
            shared: Arc::new(Shared {
                store,
                path: path.to_path_buf(),
                catalog: Mutex::new(Arc::new(catalog)),
                commit_lock: Mutex::new(()),
                bees,
                sequences,
                changes: Mutex::new(Default::default()),
                analyze_retry: Mutex::new(Default::default()),
            }),
        })
    }

    /// A new session on this database.
    pub fn connect(&self) -> Connection {
        Connection {
            db: self.clone(),
            settings: Settings::default(),
            txn: engine::TxnState::default(),
            statements: StatementCache::default(),
            shapes: ShapeCache::default(),
            parses: 0,
            interrupt: InterruptHandle::default(),
            functions: Arc::new(Functions::default()),
            sequences: Default::default(),
            block_immediate: false,
            block_mode: engine::TxnMode::default(),
            default_mode: engine::TxnMode::default(),
            open_stream: None,
        }
    }

    pub fn path(&self) -> &Path {
        &self.shared.path
    }

    /// The storage engine underneath (for tools and tests).
    pub fn store(&self) -> &Store {
        &self.shared.store
    }

    /// The bee cache (for tools and tests; SQL sees it as `beedb_bees`).
    pub fn bees(&self) -> &BeeCache {
        &self.shared.bees
    }
}

/// A session: its settings and its transaction. Statements run one at a time.
pub struct Connection {
    pub(crate) db: Database,
    pub(crate) settings: Settings,
    pub(crate) txn: engine::TxnState,
    /// Statements run by [`Connection::execute`], by SQL text, so a repeated text is
    /// not parsed again.
    statements: StatementCache,
    /// Statement shapes run by [`Connection::execute`] (`engine/shape.rs`).
    shapes: ShapeCache,
    /// Statements parsed so far (for tests: whether a statement was parsed again).
    parses: u64,
    pub(crate) interrupt: InterruptHandle,
    /// Functions and aggregates the application registered on this connection
    /// (shared with running statements; replaced, never changed in place).
    pub(crate) functions: Arc<Functions>,
    /// What `nextval` last returned to this session, by sequence (for `currval`).
    pub(crate) sequences: Arc<engine::sequence::SessionSequences>,
    /// Whether the current (or last) transaction block began with BEGIN IMMEDIATE:
    /// COMMIT / ROLLBACK AND CHAIN begin the next one the same way.
    pub(crate) block_immediate: bool,
    /// The characteristics the current (or last) block began with.
    pub(crate) block_mode: engine::TxnMode,
    /// `SET SESSION CHARACTERISTICS AS TRANSACTION …`: what BEGIN and autocommit
    /// statements start with.
    pub(crate) default_mode: engine::TxnMode,
    /// The result stream whose statement runs now, if any (see `engine/stream.rs`):
    /// the next statement settles it first.
    pub(crate) open_stream: Option<engine::stream::OpenStream>,
}

impl Connection {
    pub fn database(&self) -> &Database {
        &self.db
    }

    /// A handle that cancels the statement this connection is running, from any
    /// thread: the statement fails with SQLSTATE 57014 and changes nothing (a `BEGIN`
    /// block it ran in is aborted until `ROLLBACK`). See also `statement_timeout`.
    pub fn interrupt_handle(&self) -> InterruptHandle {
        self.interrupt.clone()
    }

    /// Runs exactly one statement, with values for its `$1…$n` (or `?`) parameters.
    /// The parsed statement is kept in the connection's statement cache (the last
    /// [`STATEMENT_CACHE_SIZE`] distinct texts), so running the same text again skips
    /// parsing. Its query bees stay one-off (shared through the bee cache's LRU).
    ///
    /// A statement without parameters whose literals stand where a parameter binds
    /// as they do (`WHERE k = 42`, `VALUES (1, 'x')`, `SET v = 7`) runs as the
    /// prepared statement of its shape, the literals as its parameters, when its
    /// plan cannot depend on their values (setting `statement_shapes`; see
    /// `engine/shape.rs`): statements that differ only in their literals are parsed
    /// and planned once.
    pub fn execute(&mut self, sql: &str, params: &[Value]) -> Result<QueryResult> {
        if params.is_empty()
            && self.settings.statement_shapes
            && let Some(r) = self.run_shaped(sql, |stmt, conn, values| stmt.execute(conn, values))
        {
            return r;
        }
        self.cached_statement(sql)?.execute(self, params)
    }

    /// Runs `sql` as its shape's statement through `run` (which executes or streams
    /// it), or `None` when it has no shape, its shape is declined (its plan could
    /// depend on the literals' values), or these values do not cast to the shape's
    /// parameter types: the caller then runs the text itself, which gives the result
    /// and errors the literals give.
    fn run_shaped<T>(
        &mut self,
        sql: &str,
        run: impl FnOnce(&Statement, &mut Connection, &[Value]) -> Result<T>,
    ) -> Option<Result<T>> {
        // A text too long to cache (a VALUES list of many rows) is not scanned for its
        // shape either: the scan's tokens and values would hold several times the
        // text, outside memory_limit (3M VALUES rows grew the peak by 718 MB).
        if sql.len() > STATEMENT_CACHE_TEXT_BYTES_MAX {
            return None;
        }
        let shape = engine::shape::shape(sql)?;
        let stmt = match self.shapes.get(&shape.text) {
            Some(None) => return None,
            Some(Some(stmt)) => stmt,
            None => {
                if shape.text.len() > STATEMENT_CACHE_TEXT_BYTES_MAX
                    || parser::check_parse_size(&shape.text, self.settings.memory_limit).is_err()
                {
                    return None;
                }
                self.parses += 1;
                let parsed = guarded(self, |_| parser::parse(&shape.text));
                let ast = match parsed {
                    Ok(mut statements) if statements.len() == 1 => statements.remove(0),
                    // The literal text reports its own error.
                    _ => {
                        self.shapes.insert(shape.text.clone(), None);
                        return None;
                    }
                };
                let stmt = Arc::new(Statement {
                    param_count: parser::count_params(&shape.text),
                    sql: shape.text.clone(),
                    ast,
                    bees: None,
                    plan: Arc::new(engine::PlanCache::shaped()),
                });
                if stmt.param_count != shape.values.len() {
                    self.shapes.insert(shape.text.clone(), None);
                    return None;
                }
                self.shapes.insert(shape.text.clone(), Some(stmt.clone()));
                stmt
            }
        };
        match run(&stmt, self, &shape.values) {
            Err(e) => match engine::shape::declined(&e) {
                Some(for_good) => {
                    if for_good {
                        self.shapes.insert(shape.text, None);
                    }
                    None
                }
                None => Some(Err(Error {
                    position: e.position.map(|p| shape.original_position(p)),
                    ..e
                })),
            },
            ok => Some(ok),
        }
    }

    /// How many statements this connection has parsed (for tests and tools: a
    /// statement found in the statement cache or run as a known shape is not).
    pub fn statements_parsed(&self) -> u64 {
        self.parses
    }

    /// The parsed statement of `sql`: from the connection's statement cache, or parsed
    /// now and kept there. A long text (a VALUES list of many rows) is rarely run
    /// again, and its syntax tree is large: it is not kept.
    fn cached_statement(&mut self, sql: &str) -> Result<Arc<Statement>> {
        if let Some(stmt) = self.statements.get(sql) {
            return Ok(stmt);
        }
        let stmt = Arc::new(self.parse_one(sql, false)?);
        if sql.len() <= STATEMENT_CACHE_TEXT_BYTES_MAX {
            self.statements.insert(stmt.clone());
        }
        Ok(stmt)
    }

    /// [`Connection::execute`], named for statements that return rows.
    pub fn query(&mut self, sql: &str, params: &[Value]) -> Result<QueryResult> {
        self.execute(sql, params)
    }

    /// Runs one statement and returns its result as a [`ResultStream`]: a query's rows
    /// come from the executor batch by batch as they are read, so the result is never
    /// held whole; its columns are known at once. Any other statement runs to its end
    /// here. The statement runs in the connection's transaction as
    /// [`Connection::execute`] would run it; see [`ResultStream`] for errors midway,
    /// dropping it early and using the connection while it is open.
    ///
    /// ```
    /// # fn main() -> beedb_sql::Result<()> {
    /// let db = beedb_sql::Database::open(":memory:")?;
    /// let mut conn = db.connect();
    /// let mut stream = conn.query_stream("SELECT * FROM generate_series(1, 100000)", &[])?;
    /// assert_eq!(stream.columns()[0].name, "generate_series");
    /// let mut sum = 0i64;
    /// while let Some(batch) = stream.next_batch()? {
    ///     for k in 0..batch.len() {
    ///         sum += batch.row(k).get::<i64>(0)?;
    ///     }
    /// }
    /// assert_eq!(sum, 5_000_050_000);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// A statement without parameters runs as its shape's statement when it has one
    /// and the shape is not declined, as in [`Connection::execute`].
    pub fn query_stream(&mut self, sql: &str, params: &[Value]) -> Result<ResultStream> {
        if params.is_empty()
            && self.settings.statement_shapes
            && let Some(r) = self.run_shaped(sql, |stmt, conn, values| stmt.query_stream(conn, values))
        {
            return r;
        }
        self.cached_statement(sql)?.query_stream(self, params)
    }

    /// Runs every statement in `sql` in order and returns their results; stops at
    /// the first error. A text of one statement runs as its shape's statement when
    /// it has one, as in [`Connection::execute`] (a text of several is never shaped:
    /// the shape scanner gives up at a second statement).
    pub fn execute_batch(&mut self, sql: &str) -> Result<Vec<QueryResult>> {
        if self.settings.statement_shapes
            && let Some(r) = self.run_shaped(sql, |stmt, conn, values| stmt.execute(conn, values))
        {
            return r.map(|r| vec![r]);
        }
        if let Err(e) = parser::check_parse_size(sql, self.settings.memory_limit) {
            engine::abort_block(self);
            return Err(e);
        }
        guarded(self, |conn| {
            conn.parses += 1;
            let statements = parser::parse(sql).inspect_err(|_| engine::abort_block(conn))?;
            let mut results = Vec::with_capacity(statements.len());
            for ast in &statements {
                results.push(engine::execute(conn, sql, ast, &[], None, None)?);
            }
            Ok(results)
        })
    }

    /// Parses one statement for repeated execution. Its query bees are made at its
    /// first execution and kept until the statement is dropped.
    pub fn prepare(&mut self, sql: &str) -> Result<Statement> {
        self.parse_one(sql, true)
    }

    /// Parses one statement. A text that does not parse aborts an open transaction
    /// block, as any failed statement in it does (PostgreSQL parses inside the block).
    fn parse_one(&mut self, sql: &str, keep_bees: bool) -> Result<Statement> {
        self.parses += 1;
        let parsed = parser::check_parse_size(sql, self.settings.memory_limit)
            .and_then(|()| guarded(self, |_| parser::parse(sql)));
        let mut statements = parsed.inspect_err(|_| engine::abort_block(self))?;
        match statements.len() {
            1 => {}
            // An empty text is no error in PostgreSQL (the block goes on); BeeDB
            // refuses it without touching the block.
            0 => return Err(Error::syntax("empty statement").at(Some(0))),
            _ => {
                engine::abort_block(self);
                return Err(Error::syntax(
                    "cannot insert multiple commands into a prepared statement",
                ));
            }
        }
        let ast = statements.remove(0);
        let param_count = parser::count_params(sql);
        Ok(Statement {
            sql: sql.to_string(),
            ast,
            param_count,
            bees: keep_bees.then(|| Arc::new(StatementBees::new())),
            plan: Arc::new(engine::PlanCache::default()),
        })
    }

    /// Registers a scalar function the connection's statements can call as `name`
    /// with `nargs` arguments (`None`: any number), replacing one of the same name
    /// and argument count; `function = None` removes it. Names are case-insensitive
    /// and found before built-in functions of the same name (as in SQLite). A
    /// function lives as long as the connection and is not stored in the database,
    /// so views and column defaults cannot use it.
    pub fn create_scalar_function(
        &mut self,
        name: &str,
        nargs: Option<usize>,
        function: Option<Arc<dyn ScalarFunction>>,
    ) -> Result<()> {
        let arity = nargs.map_or(Arity::Any, Arity::Exactly);
        Arc::make_mut(&mut self.functions).set_scalar(name, arity, function)
    }

    /// Registers (or with `None` removes) an aggregate function, as
    /// [`Connection::create_scalar_function`] does a scalar one.
    pub fn create_aggregate_function(
        &mut self,
        name: &str,
        nargs: Option<usize>,
        function: Option<Arc<dyn AggregateFunction>>,
    ) -> Result<()> {
        let arity = nargs.map_or(Arity::Any, Arity::Exactly);
        Arc::make_mut(&mut self.functions).set_aggregate(name, arity, function)
    }

    /// Whether a transaction block (BEGIN … COMMIT) is open.
    pub fn in_transaction(&self) -> bool {
        // A stream in a block holds the block's transaction while it runs.
        self.txn.in_block() || self.open_stream.as_ref().is_some_and(|s| s.in_block())
    }

    /// Where the session stands: outside a block, inside one, or inside one that
    /// failed (only ROLLBACK, COMMIT and ROLLBACK TO run) — what psql's prompt and
    /// libpq's `PQtransactionStatus` report.
    pub fn transaction_status(&self) -> TransactionStatus {
        if let Some(stream) = self.open_stream.as_ref().filter(|s| s.in_block()) {
            return if stream.failed() { TransactionStatus::Failed } else { TransactionStatus::InBlock };
        }
        match self.txn {
            engine::TxnState::Idle => TransactionStatus::Idle,
            engine::TxnState::Active(_) => TransactionStatus::InBlock,
            engine::TxnState::Failed(_) => TransactionStatus::Failed,
        }
    }

    /// The session's settings (`SET`/`SHOW`).
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Sets a session setting, as `SET name = value` does.
    pub fn set(&mut self, name: &str, value: &str) -> Result<()> {
        let shared = self.db.shared.clone();
        let t = SettingTargets {
            store: &shared.store,
            bees: &shared.bees,
        };
        self.settings.set(name, value, &t)
    }
}

/// A session's transaction state ([`Connection::transaction_status`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransactionStatus {
    /// No block open: each statement commits on its own.
    Idle,
    /// Inside BEGIN … COMMIT.
    InBlock,
    /// Inside a block after an error: statements fail (25P02) until ROLLBACK.
    Failed,
}

/// Distinct SQL texts a connection keeps parsed for [`Connection::execute`].
pub const STATEMENT_CACHE_SIZE: usize = 32;

/// Longest SQL text (bytes) whose parse [`Connection::execute`] keeps: a parse holds
/// about 100 bytes per byte of text, so 32 kept texts stay within about 200 MB.
pub const STATEMENT_CACHE_TEXT_BYTES_MAX: usize = 64 * 1024;

/// The parsed statements of the last [`STATEMENT_CACHE_SIZE`] distinct texts, most
/// recently used first. A parse depends on the text alone (not on the catalog or
/// the settings), so an entry is never stale: each execution still plans against the
/// catalog of its transaction. A linear search over a few entries costs less than
/// hashing the text would for the short statements this is for.
#[derive(Default)]
struct StatementCache {
    entries: Vec<Arc<Statement>>,
}

impl StatementCache {
    fn get(&mut self, sql: &str) -> Option<Arc<Statement>> {
        let at = self.entries.iter().position(|s| s.sql == sql)?;
        // Move to the front, keeping the others in recency order.
        self.entries[..=at].rotate_right(1);
        Some(self.entries[0].clone())
    }

    fn insert(&mut self, stmt: Arc<Statement>) {
        if self.entries.len() >= STATEMENT_CACHE_SIZE {
            self.entries.pop();
        }
        self.entries.insert(0, stmt);
    }
}

/// Distinct statement shapes a connection keeps (`engine/shape.rs`).
pub const SHAPE_CACHE_SIZE: usize = 64;

/// Declined shapes a connection remembers; past this many it forgets them all (each
/// is then declined once more, at the cost of one plan).
pub const DECLINED_SHAPES_MAX: usize = 1024;

/// The statements of the last [`SHAPE_CACHE_SIZE`] distinct live shapes, found by
/// hashing the shape's text, and apart from them the shapes declined (their plans
/// could depend on their literals), so that statements with declined shapes — a
/// stream of ranges, IN lists or joins — never push the live ones out.
#[derive(Default)]
struct ShapeCache {
    /// Each live shape's statement and the tick of its last use: past
    /// [`SHAPE_CACHE_SIZE`] the least recently used goes.
    live: rustc_hash::FxHashMap<String, (Arc<Statement>, u64)>,
    declined: rustc_hash::FxHashSet<String>,
    tick: u64,
}

impl ShapeCache {
    /// `Some(Some(statement))` for a live shape, `Some(None)` for a declined one,
    /// `None` for a shape not seen (or forgotten).
    fn get(&mut self, text: &str) -> Option<Option<Arc<Statement>>> {
        if let Some((stmt, used)) = self.live.get_mut(text) {
            self.tick += 1;
            *used = self.tick;
            return Some(Some(stmt.clone()));
        }
        self.declined.contains(text).then_some(None)
    }

    fn insert(&mut self, text: String, stmt: Option<Arc<Statement>>) {
        match stmt {
            None => {
                self.live.remove(&text);
                if self.declined.len() >= DECLINED_SHAPES_MAX {
                    self.declined.clear();
                }
                self.declined.insert(text);
            }
            Some(stmt) => {
                self.declined.remove(&text);
                if !self.live.contains_key(&text)
                    && self.live.len() >= SHAPE_CACHE_SIZE
                    && let Some(oldest) = self.live.iter().min_by_key(|(_, (_, used))| *used).map(|(t, _)| t.clone())
                {
                    self.live.remove(&oldest);
                }
                self.tick += 1;
                self.live.insert(text, (stmt, self.tick));
            }
        }
    }
}

/// A parsed statement. A query's plan is kept across executions and made again
/// when the catalog (schema or statistics) changed since, so a prepared statement
/// survives schema changes and never runs a stale plan (see `engine::plan_cache`).
#[derive(Debug, Clone)]
pub struct Statement {
    sql: String,
    ast: sqlparser::ast::Statement,
    param_count: usize,
    /// The statement's query bees (prepared statements only).
    bees: Option<Arc<StatementBees>>,
    /// Its query plan, kept across executions (see `engine::plan_cache`).
    plan: Arc<engine::PlanCache>,
}

/// A long statement's syntax tree may be thousands of levels deep (a chain of
/// operators): taken apart before it is dropped (`parser::dismantle`).
impl Drop for Statement {
    fn drop(&mut self) {
        if self.sql.len() > crate::parser::DEEP_TEXT_BYTES {
            crate::parser::dismantle(&mut self.ast);
        }
    }
}

impl Statement {
    pub fn sql(&self) -> &str {
        &self.sql
    }

    /// Whether a plan is kept for the next execution (for tests).
    #[cfg(test)]
    pub(crate) fn plan_is_cached(&self) -> bool {
        self.plan.is_cached()
    }

    /// How many times a plan was made and kept (for tests).
    #[cfg(test)]
    pub(crate) fn plans_kept(&self) -> usize {
        self.plan.plans_kept()
    }

    /// Number of parameters (`$1…$n`, or each `?`).
    pub fn param_count(&self) -> usize {
        self.param_count
    }

    pub fn execute(&self, conn: &mut Connection, params: &[Value]) -> Result<QueryResult> {
        self.check_param_count(params)?;
        guarded(conn, |conn| {
            engine::execute(conn, &self.sql, &self.ast, params, self.bees.as_deref(), Some(&self.plan))
        })
    }

    /// Runs the statement and returns its result as a [`ResultStream`], as
    /// [`Connection::query_stream`] does.
    pub fn query_stream(&self, conn: &mut Connection, params: &[Value]) -> Result<ResultStream> {
        self.check_param_count(params)?;
        guarded(conn, |conn| {
            engine::stream::execute_stream(conn, &self.sql, &self.ast, params, self.bees.as_deref(), Some(&self.plan))
        })
    }

    fn check_param_count(&self, params: &[Value]) -> Result<()> {
        if params.len() != self.param_count {
            return Err(Error::semantic(
                "08P01",
                format!(
                    "statement has {} parameters but {} values were supplied",
                    self.param_count,
                    params.len()
                ),
            ));
        }
        Ok(())
    }
}

/// Turns a panic (a bug) into an internal error instead of unwinding through the
/// caller: the transaction it was in is abandoned. (Deep statements cannot overflow
/// the stack: the parser bounds nesting and operator chains, and the binder and the
/// evaluator recurse on fresh stack segments when they run low.)
fn guarded<T>(conn: &mut Connection, f: impl FnOnce(&mut Connection) -> Result<T>) -> Result<T> {
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&mut *conn)));
    match r {
        Ok(r) => r,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            conn.txn = if conn.txn.in_block() {
                engine::TxnState::Failed(None)
            } else {
                engine::TxnState::Idle
            };
            Err(Error::internal(format!("internal error (a bug in BeeDB): {what}")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transaction_status_follows_the_block() {
        let db = Database::open(":memory:").unwrap();
        let mut c = db.connect();
        assert_eq!(c.transaction_status(), TransactionStatus::Idle);
        c.execute("BEGIN", &[]).unwrap();
        assert_eq!(c.transaction_status(), TransactionStatus::InBlock);
        assert!(c.execute("SELECT 1/0", &[]).is_err());
        assert_eq!(c.transaction_status(), TransactionStatus::Failed);
        c.execute("ROLLBACK", &[]).unwrap();
        assert_eq!(c.transaction_status(), TransactionStatus::Idle);
        // An error outside a block leaves no block behind.
        assert!(c.execute("SELECT 1/0", &[]).is_err());
        assert_eq!(c.transaction_status(), TransactionStatus::Idle);
    }

    /// Plans that read a system table at bind time are made again at each
    /// execution; others are kept, those that read the clock (read at each
    /// execution: the transaction's start) and INSERTs included.
    #[test]
    fn plans_read_at_bind_time_are_not_cached() {
        let db = Database::open(":memory:").unwrap();
        let mut c = db.connect();
        c.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER, ts TIMESTAMP)").unwrap();
        let kept = c.prepare("SELECT v FROM t WHERE id = $1").unwrap();
        kept.execute(&mut c, &[Value::Integer(1)]).unwrap();
        assert!(kept.plan_is_cached());
        let update = c.prepare("UPDATE t SET v = v + 1 WHERE id = $1").unwrap();
        update.execute(&mut c, &[Value::Integer(1)]).unwrap();
        assert!(update.plan_is_cached());
        for sql in [
            "SELECT now()",
            "SELECT id FROM t WHERE v < extract(year from current_date)",
            "UPDATE t SET v = 1 WHERE current_timestamp > now()",
            "INSERT INTO t VALUES (1, 2, CURRENT_TIMESTAMP)",
        ] {
            let stmt = c.prepare(sql).unwrap();
            stmt.execute(&mut c, &[]).unwrap();
            assert!(stmt.plan_is_cached(), "{sql}");
        }
        let stmt = c.prepare("SELECT count(*) FROM information_schema.tables").unwrap();
        stmt.execute(&mut c, &[]).unwrap();
        assert!(!stmt.plan_is_cached());
        // A cached plan reads the clock again in each transaction, and once in one.
        let now = c.prepare("SELECT now()").unwrap();
        let read = |c: &mut Connection| now.execute(c, &[]).unwrap().rows[0].0[0].clone();
        let first = read(&mut c);
        std::thread::sleep(std::time::Duration::from_millis(2));
        c.execute("BEGIN", &[]).unwrap();
        let second = read(&mut c);
        assert_ne!(first, second);
        std::thread::sleep(std::time::Duration::from_millis(2));
        assert_eq!(read(&mut c), second, "now() is the transaction's start");
        c.execute("COMMIT", &[]).unwrap();
        assert_eq!(now.plans_kept(), 1);
    }

    /// A kept plan is made again when the optimizer switches change or a relation
    /// it reads changed size more than 2× (its join order and build sides were
    /// chosen for the old sizes), and only then.
    #[test]
    fn plans_are_made_again_for_other_switches_or_sizes() {
        let db = Database::open(":memory:").unwrap();
        let mut c = db.connect();
        c.execute_batch(
            "CREATE TABLE a (id INTEGER PRIMARY KEY, v INTEGER); CREATE TABLE b (id INTEGER, w INTEGER);
             INSERT INTO a VALUES (1, 1), (2, 2); INSERT INTO b VALUES (1, 5)",
        )
        .unwrap();
        let q = c.prepare("SELECT count(*) FROM a JOIN b ON a.id = b.id").unwrap();
        let count = |c: &mut Connection| q.execute(c, &[]).unwrap().rows[0].get::<i64>(0).unwrap();
        assert_eq!(count(&mut c), 1);
        assert_eq!(count(&mut c), 1);
        assert_eq!(q.plans_kept(), 1, "the same plan runs twice");
        c.execute("SET optimizer_build_side = off", &[]).unwrap();
        assert_eq!(count(&mut c), 1);
        assert_eq!(q.plans_kept(), 2, "other switches: planned again");
        assert_eq!(count(&mut c), 1);
        assert_eq!(q.plans_kept(), 2);
        // One row more in b (1 → 2) is within 2×; then b grows to 100 rows.
        c.execute("INSERT INTO b VALUES (2, 6)", &[]).unwrap();
        assert_eq!(count(&mut c), 2);
        assert_eq!(q.plans_kept(), 2, "a small change keeps the plan");
        for i in 0..98 {
            c.execute(&format!("INSERT INTO b VALUES ({}, {i})", i % 2 + 1), &[]).unwrap();
        }
        assert_eq!(count(&mut c), 100);
        assert_eq!(q.plans_kept(), 3, "b grew 50×: planned again");
    }

    /// A change of statistics alone (ANALYZE, the automatic ANALYZE after inserts)
    /// makes a kept plan again only when the plan reads the analyzed table and its
    /// statistics moved enough to change the plan.
    #[test]
    fn statistics_replan_only_the_plans_they_could_change() {
        let db = Database::open(":memory:").unwrap();
        let mut c = db.connect();
        c.execute_batch(
            "CREATE TABLE a (id INTEGER PRIMARY KEY, v INTEGER); CREATE TABLE h (x INTEGER);
             INSERT INTO a SELECT g, g FROM generate_series(1, 1000) g; INSERT INTO h VALUES (0)",
        )
        .unwrap();
        let point = c.prepare("SELECT v FROM a WHERE id = $1").unwrap();
        let scan = c.prepare("SELECT count(*) FROM a WHERE v = $1").unwrap();
        let insert = c.prepare("INSERT INTO h VALUES ($1)").unwrap();
        let run = |c: &mut Connection| {
            assert_eq!(point.execute(c, &[Value::Integer(7)]).unwrap().rows[0].get::<i32>(0).unwrap(), 7);
            scan.execute(c, &[Value::Integer(7)]).unwrap().rows[0].get::<i64>(0).unwrap()
        };
        assert_eq!(run(&mut c), 1);
        let stats_of_h = |db: &Database| {
            let cat = db.shared.catalog.lock().clone();
            let id = cat.table("h").unwrap().id;
            cat.stats.get(&id).map(|s| s.rows)
        };
        // h grows row by row from 1 to 401 rows; the INSERTs leave its automatic
        // ANALYZE to the next statement that reads it: the plans on a are kept, and
        // so is the INSERT's, which reads no table.
        for i in 0..400 {
            insert.execute(&mut c, &[Value::Integer(i)]).unwrap();
        }
        assert!(stats_of_h(&db).is_none_or(|rows| rows < 300), "an INSERT analyzed h: {:?}", stats_of_h(&db));
        c.execute("SELECT count(*) FROM h", &[]).unwrap();
        assert!(stats_of_h(&db).is_some_and(|rows| rows > 300), "h was analyzed: {:?}", stats_of_h(&db));
        assert_eq!(run(&mut c), 1);
        assert_eq!((point.plans_kept(), scan.plans_kept(), insert.plans_kept()), (1, 1, 1));
        // ANALYZE of a that finds the same statistics keeps them too.
        c.execute("ANALYZE a", &[]).unwrap();
        assert_eq!(run(&mut c), 1);
        assert_eq!((point.plans_kept(), scan.plans_kept()), (1, 1));
        // Every v becomes 7 (1,000 distinct values → 1, the same row count): 1,000
        // updated rows make a due, the next reader analyzes it, and both plans on a
        // are made again; an ANALYZE after that finds the same statistics.
        c.execute("UPDATE a SET v = 7", &[]).unwrap();
        assert_eq!(run(&mut c), 1000);
        assert_eq!((point.plans_kept(), scan.plans_kept()), (2, 2));
        c.execute("ANALYZE a", &[]).unwrap();
        assert_eq!(run(&mut c), 1000);
        assert_eq!((point.plans_kept(), scan.plans_kept()), (2, 2));
        assert_eq!(insert.plans_kept(), 1);
        // A schema change makes every plan again, as before.
        c.execute("CREATE TABLE other (i INTEGER)", &[]).unwrap();
        assert_eq!(run(&mut c), 1000);
        insert.execute(&mut c, &[Value::Integer(1)]).unwrap();
        assert_eq!((point.plans_kept(), scan.plans_kept(), insert.plans_kept()), (3, 3, 2));
    }

    /// A kept UPDATE keeps its CHECK constraints bound with its plan, and a
    /// constraint added or dropped since is enforced or not at its next execution.
    #[test]
    fn a_kept_update_follows_its_check_constraints() {
        let db = Database::open(":memory:").unwrap();
        let mut c = db.connect();
        c.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER CHECK (v >= 0)); INSERT INTO t VALUES (1, 1)")
            .unwrap();
        let update = c.prepare("UPDATE t SET v = $1 WHERE id = 1").unwrap();
        let set = |c: &mut Connection, v: i32| update.execute(c, &[Value::Integer(v)]).map_err(|e| e.sqlstate);
        assert_eq!(set(&mut c, 5).map(|r| r.rows_affected), Ok(1));
        assert_eq!(set(&mut c, -1).map(|r| r.rows_affected), Err("23514"));
        assert_eq!(set(&mut c, 50).map(|r| r.rows_affected), Ok(1));
        assert_eq!(update.plans_kept(), 1);
        c.execute("ALTER TABLE t ADD CONSTRAINT small CHECK (v < 60)", &[]).unwrap();
        assert_eq!(set(&mut c, 70).map(|r| r.rows_affected), Err("23514"));
        assert_eq!(set(&mut c, -1).map(|r| r.rows_affected), Err("23514"));
        assert_eq!(set(&mut c, 59).map(|r| r.rows_affected), Ok(1));
        c.execute("ALTER TABLE t DROP CONSTRAINT small", &[]).unwrap();
        assert_eq!(set(&mut c, 70).map(|r| r.rows_affected), Ok(1));
        assert_eq!(update.plans_kept(), 3);
    }
}
