//! Sequences: `CREATE SEQUENCE`, `DROP SEQUENCE`, the sequences behind SERIAL and
//! identity columns, and `nextval` / `currval` / `setval`.
//!
//! A sequence's definition ([`SequenceDef`]) lives in the catalog and changes with
//! its transaction, as any schema object. Its *value* does not: as in PostgreSQL,
//! a value handed out by `nextval` is never handed out again, even when the
//! transaction that took it rolls back. The values are kept once per database in
//! [`SequenceValues`] (shared by every connection, behind a mutex, so two
//! connections never get the same value) and written to the database file, in a
//! heap of their own under root slot [`SEQUENCE_VALUES_ROOT_SLOT`], by the next
//! write transaction that commits, and when the database closes. So a committed row
//! never shares its number with a later one; after a crash, values handed out but
//! never committed (a rolled-back INSERT, a `SELECT nextval(…)`) since the last
//! commit may be handed out again, which PostgreSQL also allows for values that
//! were never logged.
//!
//! `currval` is per session: the value `nextval` last returned to the connection,
//! or `setval` set ([`SessionSequences`]), 55000 before the first.

use std::collections::HashMap;

use beedb_storage::heap::HeapFile;
use beedb_storage::tuple::{AttrValue, ColumnFormat, TupleLayout};
use beedb_storage::{PageId, Store, WriteTxn};
use parking_lot::Mutex;
use sqlparser::ast;

use super::Ctx;
use crate::binder::object_name;
use crate::catalog::{Catalog, ObjectKind, SequenceDef, SequenceOwner};
use crate::error::{Error, Result};
use crate::expr::Func;
use crate::session::QueryResult;
use crate::types::{DataType, Value};

/// Root slot of the database header that points at the heap of sequence values.
pub const SEQUENCE_VALUES_ROOT_SLOT: usize = 1;

/// Where a sequence stands: the last value handed out (or, before the first
/// `nextval`, the one the first call returns).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Position {
    last: i64,
    /// Whether `last` was handed out (PostgreSQL's `is_called`).
    called: bool,
}

/// The values of every sequence of a database, shared by its connections.
#[derive(Default)]
pub struct SequenceValues {
    state: Mutex<ValuesState>,
}

#[derive(Default)]
struct ValuesState {
    positions: HashMap<u32, Position>,
    /// Changes so far, and how many of them the file holds: the values are written
    /// when the two differ.
    changes: u64,
    written: u64,
}

/// The values `nextval` returned to one session, by sequence id (for `currval`),
/// and the sequence it was last called on (for `lastval`).
pub type SessionSequences = Mutex<SessionValues>;

/// See [`SessionSequences`]; reads as the map of values.
#[derive(Debug, Default)]
pub struct SessionValues {
    values: HashMap<u32, i64>,
    /// The sequence `nextval` was last called on in this session.
    last: Option<u32>,
}

impl std::ops::Deref for SessionValues {
    type Target = HashMap<u32, i64>;
    fn deref(&self) -> &HashMap<u32, i64> {
        &self.values
    }
}

impl std::ops::DerefMut for SessionValues {
    fn deref_mut(&mut self) -> &mut HashMap<u32, i64> {
        &mut self.values
    }
}

fn values_layout() -> TupleLayout {
    TupleLayout::new(&[ColumnFormat::variable(false)]).expect("a one-column layout")
}

impl SequenceValues {
    /// Reads the values written in `store` (none in a new database).
    pub fn load(store: &Store) -> Result<SequenceValues> {
        let r = store.begin_read();
        let root = r.root(SEQUENCE_VALUES_ROOT_SLOT)?;
        let mut state = ValuesState::default();
        if root != 0 {
            let heap = HeapFile::open(PageId(root as u32));
            let layout = values_layout();
            let mut tuples = Vec::new();
            heap.for_each(&r, |_, tuple| {
                tuples.push(match layout.attribute(tuple, 0)? {
                    beedb_storage::tuple::Attr::Bytes(b) => b.to_vec(),
                    beedb_storage::tuple::Attr::External { len, first_page } => {
                        HeapFile::fetch_external(&r, len, first_page)?
                    }
                    beedb_storage::tuple::Attr::Null => Vec::new(),
                });
                Ok(())
            })?;
            for bytes in tuples {
                // Entries of 13 bytes: id (u32), last value (i64), called (u8).
                if bytes.len() % 13 != 0 {
                    return Err(Error::new(
                        crate::error::ErrorKind::Storage,
                        "XX001",
                        "sequence values are damaged",
                    ));
                }
                for e in bytes.chunks_exact(13) {
                    let id = u32::from_le_bytes(e[0..4].try_into().expect("4 bytes"));
                    let last = i64::from_le_bytes(e[4..12].try_into().expect("8 bytes"));
                    state.positions.insert(id, Position { last, called: e[12] != 0 });
                }
            }
        }
        Ok(SequenceValues { state: Mutex::new(state) })
    }

    /// Starts `q` afresh (at its creation: an id of a creation that rolled back may
    /// come again).
    pub fn reset(&self, q: &SequenceDef) {
        let mut s = self.state.lock();
        s.positions.insert(q.id, Position { last: q.start, called: false });
        s.changes += 1;
    }

    fn next(&self, q: &SequenceDef) -> Result<i64> {
        let mut s = self.state.lock();
        let p = *s.positions.get(&q.id).unwrap_or(&Position { last: q.start, called: false });
        let value = if !p.called {
            p.last
        } else {
            match p.last.checked_add(q.increment).filter(|v| (q.min..=q.max).contains(v)) {
                Some(v) => v,
                None if q.cycle => {
                    if q.increment > 0 { q.min } else { q.max }
                }
                None => {
                    let (which, bound) = if q.increment > 0 { ("maximum", q.max) } else { ("minimum", q.min) };
                    return Err(Error::data(
                        "2200H",
                        format!("nextval: reached {which} value of sequence \"{}\" ({bound})", q.name),
                    ));
                }
            }
        };
        s.positions.insert(q.id, Position { last: value, called: true });
        s.changes += 1;
        Ok(value)
    }

    fn set(&self, q: &SequenceDef, value: i64, called: bool) -> Result<i64> {
        if !(q.min..=q.max).contains(&value) {
            return Err(Error::data(
                "22003",
                format!("setval: value {value} is out of bounds for sequence \"{}\" ({}..{})", q.name, q.min, q.max),
            ));
        }
        let mut s = self.state.lock();
        s.positions.insert(q.id, Position { last: value, called });
        s.changes += 1;
        Ok(value)
    }

    /// Starts sequence `id` at `value`, not yet handed out (ALTER SEQUENCE RESTART).
    fn restart_at(&self, id: u32, value: i64) {
        let mut s = self.state.lock();
        s.positions.insert(id, Position { last: value, called: false });
        s.changes += 1;
    }

    /// Where `q` stands: its last value (or the one the next `nextval` returns).
    fn last(&self, q: &SequenceDef) -> i64 {
        self.state.lock().positions.get(&q.id).map_or(q.start, |p| p.last)
    }

    /// Writes the values of `catalog`'s sequences into `w` when they changed since
    /// they were last written; returns the change count written, for
    /// [`SequenceValues::written`] once `w` committed.
    pub fn save(&self, w: &WriteTxn, catalog: &Catalog) -> Result<Option<u64>> {
        let s = self.state.lock();
        if s.changes == s.written {
            return Ok(None);
        }
        let layout = values_layout();
        // The root is read through `w`: a heap made by a transaction that did not
        // commit is not there.
        let heap = match w.root(SEQUENCE_VALUES_ROOT_SLOT)? {
            0 => {
                let h = HeapFile::create(w)?;
                w.set_root(SEQUENCE_VALUES_ROOT_SLOT, h.first_page.0 as u64)?;
                h
            }
            root => HeapFile::open(PageId(root as u32)),
        };
        let mut old = Vec::new();
        heap.for_each(w, |tid, _| {
            old.push(tid);
            Ok(())
        })?;
        for tid in old {
            heap.delete(w, tid, &layout)?;
        }
        let mut bytes = Vec::new();
        for q in catalog.sequences.values() {
            if let Some(p) = s.positions.get(&q.id) {
                bytes.extend_from_slice(&q.id.to_le_bytes());
                bytes.extend_from_slice(&p.last.to_le_bytes());
                bytes.push(p.called as u8);
            }
        }
        heap.insert(w, &[AttrValue::Variable(&bytes)], &layout)?;
        Ok(Some(s.changes))
    }

    /// Records that the file holds the values up to change `changes` (its write
    /// transaction committed). When the commit failed the values stay unwritten.
    pub fn written(&self, changes: u64) {
        let mut s = self.state.lock();
        s.written = s.written.max(changes);
    }

    /// Whether some value changed since the file last got them.
    pub fn unwritten(&self) -> bool {
        let s = self.state.lock();
        s.changes != s.written
    }
}

/// The sequences one statement reaches: its transaction's catalog, the database's
/// values and its session's `currval`s.
pub struct SequenceAccess<'a> {
    /// When the statement's transaction started: what `now()` returns.
    pub clock: crate::types::Timestamp,
    pub catalog: &'a Catalog,
    pub values: &'a SequenceValues,
    pub session: &'a SessionSequences,
}

impl SequenceAccess<'_> {
    /// The sequence a `regclass`-style name denotes: `'s'`, `'S'` (folded),
    /// `'"S"'` (quoted), `'public.s'`.
    fn find(&self, name: &str) -> Result<&SequenceDef> {
        let name = name.trim();
        let name = name.strip_prefix("public.").unwrap_or(name);
        let name = match name.strip_prefix('"').and_then(|n| n.strip_suffix('"')) {
            Some(quoted) => quoted.replace("\"\"", "\""),
            None => name.to_lowercase(),
        };
        match self.catalog.sequence(&name) {
            Some(q) => Ok(q),
            None if self.catalog.object_kind(&name).is_some() => {
                Err(Error::semantic("42809", format!("\"{name}\" is not a sequence")))
            }
            None => Err(Error::undefined_table(&name)),
        }
    }
}

fn text(v: &Value) -> Result<&str> {
    match v {
        Value::Text(s) | Value::Varchar(s) | Value::Char(s) => Ok(s),
        other => Err(Error::internal(format!("sequence name of unexpected type: {other:?}"))),
    }
}

impl crate::exec::Sequences for SequenceAccess<'_> {
    fn call(&self, func: Func, args: &[Value]) -> Result<Value> {
        match func {
            Func::Now => return Ok(Value::Timestamp(self.clock)),
            Func::CurrentDate => {
                let day = self.clock.0.div_euclid(86_400_000_000) as i32;
                return Ok(Value::Date(crate::types::Date(day)));
            }
            _ => {}
        }
        if func == Func::LastVal {
            // As PostgreSQL's: the current value of the sequence `nextval` was last
            // called on (a later setval included), unless it has been dropped since.
            let not_defined = || {
                Error::new(crate::error::ErrorKind::Transaction, "55000", "lastval is not yet defined in this session")
            };
            let session = self.session.lock();
            let id = session.last.ok_or_else(not_defined)?;
            if !self.catalog.sequences.values().any(|q| q.id == id) {
                return Err(not_defined());
            }
            return session.get(&id).map(|&v| Value::BigInt(v)).ok_or_else(not_defined);
        }
        let q = self.find(text(args.first().ok_or_else(|| Error::internal("sequence call without a name"))?)?)?;
        match func {
            Func::NextVal => {
                let v = self.values.next(q)?;
                let mut session = self.session.lock();
                session.insert(q.id, v);
                session.last = Some(q.id);
                Ok(Value::BigInt(v))
            }
            Func::CurrVal => match self.session.lock().get(&q.id) {
                Some(&v) => Ok(Value::BigInt(v)),
                None => Err(Error::new(
                    crate::error::ErrorKind::Transaction,
                    "55000",
                    format!("currval of sequence \"{}\" is not yet defined in this session", q.name),
                )),
            },
            Func::SetVal => {
                let Some(Value::BigInt(v)) = args.get(1) else {
                    return Err(Error::internal("setval without a bigint value"));
                };
                let called = !matches!(args.get(2), Some(Value::Boolean(false)));
                let v = self.values.set(q, *v, called)?;
                // As in PostgreSQL, a value set as handed out is the session's currval.
                if called {
                    self.session.lock().insert(q.id, v);
                }
                Ok(Value::BigInt(v))
            }
            other => Err(Error::internal(format!("{other:?} is not a sequence function"))),
        }
    }
}

/// Sequence calls in an expression evaluated outside a plan (`eval_row` over a
/// column DEFAULT in COPY); such an expression holds no subquery.
pub struct SequenceRunner<'a>(pub &'a SequenceAccess<'a>);

impl crate::expr::SubqueryRunner for SequenceRunner<'_> {
    fn run(&self, _: usize, _: &crate::expr::SubqueryKind, _: &[Value]) -> Result<crate::expr::SubqueryResult> {
        Err(Error::internal("a subquery evaluated outside a plan"))
    }

    fn sequence(&self, func: Func, args: &[Value]) -> Result<Value> {
        crate::exec::Sequences::call(self.0, func, args)
    }
}

// ---------------------------------------------------------------------------------
// Definitions

/// The range of a sequence type.
fn type_bounds(ty: DataType) -> Result<(i64, i64)> {
    match ty {
        DataType::SmallInt => Ok((i16::MIN as i64, i16::MAX as i64)),
        DataType::Integer => Ok((i32::MIN as i64, i32::MAX as i64)),
        DataType::BigInt => Ok((i64::MIN, i64::MAX)),
        _ => Err(Error::semantic("22023", "sequence type must be smallint, integer, or bigint")),
    }
}

/// An integer option value (`START 5`, `INCREMENT BY -1`).
fn option_value(e: &ast::Expr) -> Result<i64> {
    let bad = || Error::syntax(format!("syntax error at or near \"{e}\""));
    match e {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::Number(n, _) => n.parse::<i64>().map_err(|_| {
                Error::data("22003", format!("value \"{n}\" is out of range for type bigint"))
            }),
            _ => Err(bad()),
        },
        ast::Expr::UnaryOp { op: ast::UnaryOperator::Minus, expr } => {
            let v = option_value(expr)?;
            v.checked_neg().ok_or_else(|| Error::data("22003", "bigint out of range"))
        }
        ast::Expr::UnaryOp { op: ast::UnaryOperator::Plus, expr } => option_value(expr),
        ast::Expr::Nested(inner) => option_value(inner),
        _ => Err(bad()),
    }
}

/// A sequence definition from `CREATE SEQUENCE`'s (or an identity column's) type and
/// options, with PostgreSQL's defaults and checks (`DefineSequence` / `init_params`).
pub fn define(id: u32, name: String, ty: DataType, options: &[ast::SequenceOptions]) -> Result<SequenceDef> {
    let (type_min, type_max) = type_bounds(ty)?;
    let mut increment = 1i64;
    let (mut min, mut max, mut start) = (None, None, None);
    let mut cycle = false;
    for o in options {
        match o {
            ast::SequenceOptions::IncrementBy(e, _) => increment = option_value(e)?,
            ast::SequenceOptions::MinValue(e) => min = e.as_ref().map(option_value).transpose()?,
            ast::SequenceOptions::MaxValue(e) => max = e.as_ref().map(option_value).transpose()?,
            ast::SequenceOptions::StartWith(e, _) => start = Some(option_value(e)?),
            ast::SequenceOptions::Cache(e) => {
                // Accepted as in PostgreSQL; BeeDB hands values out one at a time.
                let cache = option_value(e)?;
                if cache <= 0 {
                    return Err(Error::semantic("22023", format!("CACHE ({cache}) must be greater than zero")));
                }
            }
            ast::SequenceOptions::Cycle(no) => cycle = !*no,
        }
    }
    if increment == 0 {
        return Err(Error::semantic("22023", "INCREMENT must not be zero"));
    }
    let type_name = crate::binder::types::type_name(&ty);
    let max = max.unwrap_or(if increment > 0 { type_max } else { -1 });
    if !(type_min..=type_max).contains(&max) {
        return Err(Error::semantic(
            "22023",
            format!("MAXVALUE ({max}) is out of range for sequence data type {type_name}"),
        ));
    }
    let min = min.unwrap_or(if increment > 0 { 1 } else { type_min });
    if !(type_min..=type_max).contains(&min) {
        return Err(Error::semantic(
            "22023",
            format!("MINVALUE ({min}) is out of range for sequence data type {type_name}"),
        ));
    }
    if min >= max {
        return Err(Error::semantic("22023", format!("MINVALUE ({min}) must be less than MAXVALUE ({max})")));
    }
    let start = start.unwrap_or(if increment > 0 { min } else { max });
    if start < min {
        return Err(Error::semantic("22023", format!("START value ({start}) cannot be less than MINVALUE ({min})")));
    }
    if start > max {
        return Err(Error::semantic("22023", format!("START value ({start}) cannot be greater than MAXVALUE ({max})")));
    }
    Ok(SequenceDef { id, name, ty, start, increment, min, max, cycle, owner: None })
}

/// Adds `q` to the transaction's catalog (taking its id) and starts its value.
pub fn add(ctx: &mut Ctx<'_>, mut q: SequenceDef) -> Result<()> {
    ctx.catalog().check_name_free(&q.name)?;
    let cat = ctx.txn.catalog_mut();
    q.id = cat.next_id;
    cat.next_id += 1;
    ctx.sequence_values.reset(&q);
    ctx.txn.catalog_mut().sequences.insert(q.name.clone(), std::sync::Arc::new(q));
    Ok(())
}

/// The sequence of a SERIAL or identity column `column` of the table being made
/// (whose id is `table`): named `{table}_{column}_seq` (made unique as PostgreSQL
/// does), of the column's type.
#[allow(clippy::too_many_arguments)]
pub fn for_column(
    ctx: &Ctx<'_>,
    table_name: &str,
    table: u32,
    column: &str,
    ty: DataType,
    identity: Option<crate::catalog::Identity>,
    options: &[ast::SequenceOptions],
    pending: &[SequenceDef],
    named: Option<&str>,
) -> Result<SequenceDef> {
    // Unique among the catalog's names and those of the table's other columns'
    // sequences, not yet in the catalog.
    let taken = |n: &str| ctx.catalog().object_kind(n).is_some() || pending.iter().any(|q| q.name == n) || n == table_name;
    let name = match named {
        // An identity's `SEQUENCE NAME`: that name or 42P07, as in PostgreSQL.
        Some(n) if taken(n) => return Err(Error::duplicate_object("42P07", format!("relation \"{n}\" already exists"))),
        Some(n) => n.to_string(),
        None => {
            let base = default_name(table_name, column);
            std::iter::once(base.clone())
                .chain((1..).map(|k| format!("{base}{k}")))
                .find(|n| !taken(n))
                .expect("an unused name")
        }
    };
    let mut q = define(0, name, ty, options)?;
    q.owner = Some(SequenceOwner { table, column: column.to_string(), identity });
    Ok(q)
}

/// The name a SERIAL or identity column's sequence gets unless that is taken (or
/// an identity's `SEQUENCE NAME` says otherwise): `table_column_seq`.
pub fn default_name(table_name: &str, column: &str) -> String {
    format!("{table_name}_{column}_seq")
}

/// `nextval('name')` as a column DEFAULT's text, with the name quoted for
/// `SequenceAccess::find` when folding would change it.
pub fn nextval_default(name: &str) -> String {
    if name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_') {
        format!("nextval('{name}')")
    } else {
        format!("nextval('\"{}\"')", name.replace('\'', "''").replace('"', "\"\""))
    }
}

pub fn create_sequence(
    ctx: &mut Ctx<'_>,
    if_not_exists: bool,
    name: &ast::ObjectName,
    data_type: Option<&ast::DataType>,
    options: &[ast::SequenceOptions],
    owned_by: Option<&ast::ObjectName>,
    temporary: bool,
) -> Result<QueryResult> {
    if temporary {
        return Err(Error::not_supported("temporary sequences are not supported"));
    }
    if owned_by.is_some() {
        return Err(Error::not_supported("CREATE SEQUENCE … OWNED BY is not supported"));
    }
    let name = object_name(name)?;
    if ctx.catalog().object_kind(&name).is_some() {
        if if_not_exists {
            return Ok(QueryResult::command("CREATE SEQUENCE"));
        }
        return Err(Error::duplicate_object("42P07", format!("relation \"{name}\" already exists")));
    }
    let ty = match data_type {
        Some(t) => crate::binder::types::data_type(t)?,
        None => DataType::BigInt,
    };
    let q = define(0, name, ty, options)?;
    add(ctx, q)?;
    Ok(QueryResult::command("CREATE SEQUENCE"))
}

/// `DROP SEQUENCE name, …`: a sequence a SERIAL or identity column owns goes with
/// its column, not alone (2BP01, as PostgreSQL without CASCADE).
pub fn drop_sequences(ctx: &mut Ctx<'_>, if_exists: bool, names: &[ast::ObjectName], cascade: bool) -> Result<QueryResult> {
    for n in names {
        let name = object_name(n)?;
        let Some(q) = ctx.catalog().sequence(&name).cloned() else {
            if if_exists {
                continue;
            }
            let kind = ctx.catalog().object_kind(&name);
            return Err(match kind {
                Some(ObjectKind::Sequence) | None => {
                    Error::semantic("42P01", format!("sequence \"{name}\" does not exist"))
                }
                Some(_) => Error::semantic("42809", format!("\"{name}\" is not a sequence")),
            });
        };
        if let Some(owner) = &q.owner {
            let table = ctx.catalog().tables.values().find(|t| t.id == owner.table).map(|t| t.name.clone());
            if cascade {
                return Err(Error::not_supported("DROP SEQUENCE … CASCADE of a column's sequence is not supported"));
            }
            // PostgreSQL's wording: a SERIAL column's DEFAULT depends on the sequence;
            // an identity column owns it.
            let message = match owner.identity {
                None => format!("cannot drop sequence {name} because other objects depend on it"),
                Some(_) => format!(
                    "cannot drop sequence {name} because column {} of table {} requires it",
                    owner.column,
                    table.unwrap_or_default()
                ),
            };
            return Err(Error::semantic("2BP01", message));
        }
        ctx.txn.catalog_mut().sequences.remove(&name);
    }
    Ok(QueryResult::command("DROP SEQUENCE"))
}

/// Drops the sequences the columns of table `table_id` own (DROP TABLE), or only
/// column `column`'s (DROP COLUMN).
pub fn drop_owned(ctx: &mut Ctx<'_>, table_id: u32, column: Option<&str>) {
    let owned: Vec<String> = ctx
        .catalog()
        .owned_sequences(table_id)
        .filter(|q| column.is_none_or(|c| q.owner.as_ref().is_some_and(|o| o.column == c)))
        .map(|q| q.name.clone())
        .collect();
    if !owned.is_empty() {
        let cat = ctx.txn.catalog_mut();
        for name in owned {
            cat.sequences.remove(&name);
        }
    }
}

/// A column renamed: the sequence it owns follows it.
pub fn rename_owner_column(ctx: &mut Ctx<'_>, table_id: u32, old: &str, new: &str) {
    let owned: Vec<String> = ctx
        .catalog()
        .owned_sequences(table_id)
        .filter(|q| q.owner.as_ref().is_some_and(|o| o.column == old))
        .map(|q| q.name.clone())
        .collect();
    for name in owned {
        let cat = ctx.txn.catalog_mut();
        if let Some(q) = cat.sequences.get(&name) {
            let mut q2 = (**q).clone();
            if let Some(o) = &mut q2.owner {
                o.column = new.to_string();
            }
            cat.sequences.insert(name, std::sync::Arc::new(q2));
        }
    }
}

// ---------------------------------------------------------------------------------
// ALTER SEQUENCE and RESTART

/// Puts `new` (a changed definition of the sequence `old`) in the transaction's
/// catalog. With `restart`, the sequence starts again at that value as PostgreSQL's
/// ALTER SEQUENCE RESTART and TRUNCATE … RESTART IDENTITY do it, transactionally:
/// PostgreSQL gives the sequence a new relfilenode, BeeDB a new id, whose value
/// starts afresh while the old id keeps the old value, so a rollback (which brings
/// back the old definition, and with it the old id) brings back the old value too,
/// and `nextval` calls made in between are forgotten with it. The session's
/// `currval` carries over to the new id, as PostgreSQL's (kept by the sequence's
/// OID) does.
fn install(ctx: &mut Ctx<'_>, old: &SequenceDef, mut new: SequenceDef, restart: Option<i64>) {
    if let Some(value) = restart {
        let cat = ctx.txn.catalog_mut();
        new.id = cat.next_id;
        cat.next_id += 1;
        ctx.sequence_values.restart_at(new.id, value);
        let mut session = ctx.session_sequences.lock();
        if let Some(&v) = session.get(&old.id) {
            session.insert(new.id, v);
        }
        if session.last == Some(old.id) {
            session.last = Some(new.id);
        }
    }
    ctx.txn.catalog_mut().sequences.insert(new.name.clone(), std::sync::Arc::new(new));
}

/// Restarts `q` at its START value (TRUNCATE … RESTART IDENTITY), see [`install`].
pub fn restart(ctx: &mut Ctx<'_>, q: &SequenceDef) {
    install(ctx, q, q.clone(), Some(q.start));
}

/// `ALTER SEQUENCE [IF EXISTS] name option …` (as `parser::alter_sequence` carries
/// it), with PostgreSQL 15's rules (`init_params` with `isInit` false): options not
/// given keep their values; `NO MINVALUE` / `NO MAXVALUE` take the defaults for the
/// (new) increment's sign; `AS type` moves a bound that was the old type's limit to
/// the new type's; `START` changes only the value a bare `RESTART` goes back to;
/// `RESTART [WITH n]` makes `n` (else START) the next value `nextval` returns. The
/// checks are `CREATE SEQUENCE`'s plus the current value (or the RESTART value)
/// against the new bounds (22023 "RESTART value (n) cannot be less than MINVALUE").
/// The definition changes with the transaction; a RESTART does too ([`install`]).
pub fn alter_sequence(ctx: &mut Ctx<'_>, name: &ast::ObjectName, if_exists: bool, options: &[ast::Expr]) -> Result<QueryResult> {
    let name = object_name(name)?;
    let options = crate::parser::alter_sequence_options(options);
    // `ALTER TABLE t ALTER COLUMN c RESTART …`: the identity column's sequence.
    let (name, options, tag) = match options.split_first() {
        Some(((word, Some(ast::Expr::Value(v))), rest)) if word == "column" => {
            let column = match &v.value {
                ast::Value::SingleQuotedString(s) => s.clone(),
                other => other.to_string(),
            };
            let Some(table) = ctx.catalog().table(&name).cloned() else {
                if if_exists {
                    return Ok(QueryResult::command("ALTER TABLE"));
                }
                return Err(Error::undefined_table(&name));
            };
            if !table.columns.iter().any(|c| c.name == column) {
                return Err(Error::semantic("42703", format!("column \"{column}\" of relation \"{name}\" does not exist")));
            }
            match rest.first() {
                Some((word, Some(ast::Expr::Value(v)))) if word == "add_identity" => {
                    let kind = identity_kind(&v.value);
                    return add_identity(ctx, &table, &column, kind, &rest[1..]);
                }
                Some((word, Some(ast::Expr::Value(v)))) if word == "drop_identity" => {
                    return drop_identity(ctx, &table, &column, v.value == ast::Value::Boolean(true));
                }
                _ => {}
            }
            let Some(q) = ctx
                .catalog()
                .owned_sequences(table.id)
                .find(|q| q.owner.as_ref().is_some_and(|o| o.column == column && o.identity.is_some()))
                .cloned()
            else {
                return Err(Error::semantic(
                    "55000",
                    format!("column \"{column}\" of relation \"{name}\" is not an identity column"),
                ));
            };
            (q.name.clone(), rest.to_vec(), "ALTER TABLE")
        }
        _ => (name, options, "ALTER SEQUENCE"),
    };
    let Some(old) = ctx.catalog().sequence(&name).cloned() else {
        if if_exists {
            return Ok(QueryResult::command(tag));
        }
        return Err(match ctx.catalog().object_kind(&name) {
            Some(ObjectKind::Sequence) | None => Error::semantic("42P01", format!("relation \"{name}\" does not exist")),
            Some(_) => Error::semantic("42809", format!("\"{name}\" is not a sequence")),
        });
    };
    let mut q = (*old).clone();
    let (mut min, mut max) = (None, None);
    let (mut reset_min, mut reset_max) = (false, false);
    let mut restart: Option<Option<i64>> = None;
    for (word, value) in &options {
        let v = |e: Option<&ast::Expr>| e.map(option_value).transpose();
        match word.as_str() {
            "unsupported" => {
                let text = match value {
                    Some(ast::Expr::Value(v)) => match &v.value {
                        ast::Value::SingleQuotedString(s) => s.clone(),
                        other => other.to_string(),
                    },
                    _ => "this ALTER SEQUENCE form".into(),
                };
                return Err(Error::not_supported(format!("{text} is not supported")));
            }
            "as" => {
                let Some(ast::Expr::Cast { data_type, .. }) = value else { continue };
                let ty = crate::binder::types::data_type(data_type)?;
                let (old_min, old_max) = type_bounds(q.ty)?;
                type_bounds(ty)?;
                reset_max = q.max == old_max;
                reset_min = q.min == old_min;
                q.ty = ty;
            }
            "increment" => q.increment = v(*value)?.unwrap_or(1),
            "minvalue" => min = Some(v(*value)?),
            "maxvalue" => max = Some(v(*value)?),
            "start" => q.start = v(*value)?.unwrap_or(q.start),
            "restart" => restart = Some(v(*value)?),
            "cache" => {
                let cache = v(*value)?.unwrap_or(1);
                if cache <= 0 {
                    return Err(Error::semantic("22023", format!("CACHE ({cache}) must be greater than zero")));
                }
            }
            "cycle" => q.cycle = matches!(value, Some(ast::Expr::Value(v)) if v.value == ast::Value::Boolean(true)),
            // `ALTER COLUMN c SET GENERATED {ALWAYS | BY DEFAULT}`.
            "generated" => {
                if let (Some(ast::Expr::Value(v)), Some(owner)) = (value, q.owner.as_mut()) {
                    owner.identity = Some(identity_kind(&v.value));
                }
            }
            _ => {}
        }
    }
    if q.increment == 0 {
        return Err(Error::semantic("22023", "INCREMENT must not be zero"));
    }
    let (type_min, type_max) = type_bounds(q.ty)?;
    let type_name = crate::binder::types::type_name(&q.ty);
    match max {
        Some(Some(m)) => q.max = m,
        Some(None) => q.max = if q.increment > 0 { type_max } else { -1 },
        None if reset_max => q.max = type_max,
        None => {}
    }
    if !(type_min..=type_max).contains(&q.max) {
        return Err(Error::semantic(
            "22023",
            format!("MAXVALUE ({}) is out of range for sequence data type {type_name}", q.max),
        ));
    }
    match min {
        Some(Some(m)) => q.min = m,
        Some(None) => q.min = if q.increment < 0 { type_min } else { 1 },
        None if reset_min => q.min = type_min,
        None => {}
    }
    if !(type_min..=type_max).contains(&q.min) {
        return Err(Error::semantic(
            "22023",
            format!("MINVALUE ({}) is out of range for sequence data type {type_name}", q.min),
        ));
    }
    if q.min >= q.max {
        return Err(Error::semantic("22023", format!("MINVALUE ({}) must be less than MAXVALUE ({})", q.min, q.max)));
    }
    if q.start < q.min {
        return Err(Error::semantic("22023", format!("START value ({}) cannot be less than MINVALUE ({})", q.start, q.min)));
    }
    if q.start > q.max {
        return Err(Error::semantic("22023", format!("START value ({}) cannot be greater than MAXVALUE ({})", q.start, q.max)));
    }
    let restart = restart.map(|v| v.unwrap_or(q.start));
    let current = restart.unwrap_or_else(|| ctx.sequence_values.last(&old));
    if current < q.min {
        return Err(Error::semantic("22023", format!("RESTART value ({current}) cannot be less than MINVALUE ({})", q.min)));
    }
    if current > q.max {
        return Err(Error::semantic("22023", format!("RESTART value ({current}) cannot be greater than MAXVALUE ({})", q.max)));
    }
    install(ctx, &old, q, restart);
    Ok(QueryResult::command(tag))
}

/// The identity kind a carried `'always'` / `'by default'` names.
fn identity_kind(v: &ast::Value) -> crate::catalog::Identity {
    match v {
        ast::Value::SingleQuotedString(s) if s == "always" => crate::catalog::Identity::Always,
        _ => crate::catalog::Identity::ByDefault,
    }
}

/// `ALTER TABLE t ALTER COLUMN c ADD GENERATED {ALWAYS | BY DEFAULT} AS IDENTITY
/// [(options)]`: the column gets its own sequence (named as CREATE TABLE names it)
/// and `nextval` as its DEFAULT. As PostgreSQL (and in its order): the column
/// must be a smallint, integer or bigint (22023), NOT NULL, not yet an identity
/// column and without a default (55000). Existing
/// rows keep their values; the sequence starts at its START.
fn add_identity(
    ctx: &mut Ctx<'_>,
    table: &crate::catalog::TableDef,
    column: &str,
    kind: crate::catalog::Identity,
    options: &[(String, Option<&ast::Expr>)],
) -> Result<QueryResult> {
    let Some(k) = table.column_index(column) else {
        return Err(Error::semantic("42703", format!("column \"{column}\" of relation \"{}\" does not exist", table.name)));
    };
    let col = &table.columns[k];
    if !matches!(col.ty, DataType::SmallInt | DataType::Integer | DataType::BigInt) {
        return Err(Error::semantic("22023", "identity column type must be smallint, integer, or bigint"));
    }
    if !col.not_null {
        return Err(Error::semantic(
            "55000",
            format!("column \"{column}\" of relation \"{}\" must be declared NOT NULL before identity can be added", table.name),
        ));
    }
    let owned = ctx.catalog().owned_sequences(table.id).any(|q| q.owner.as_ref().is_some_and(|o| o.column == column && o.identity.is_some()));
    if owned {
        return Err(Error::semantic(
            "55000",
            format!("column \"{column}\" of relation \"{}\" is already an identity column", table.name),
        ));
    }
    if col.default.is_some() {
        return Err(Error::semantic(
            "55000",
            format!("column \"{column}\" of relation \"{}\" already has a default value", table.name),
        ));
    }
    let named = match options.iter().find(|(w, _)| w == "sequence_name") {
        Some((_, Some(ast::Expr::Value(v)))) => match &v.value {
            ast::Value::SingleQuotedString(n) => Some(sequence_name_as_written(n)?),
            _ => None,
        },
        _ => None,
    };
    let options: Vec<ast::SequenceOptions> =
        options.iter().filter_map(|(w, v)| crate::parser::sequence_option_of(w, *v)).collect();
    let q = for_column(ctx, &table.name, table.id, column, col.ty, Some(kind), &options, &[], named.as_deref())?;
    let mut t2 = table.clone();
    t2.columns[k].default = Some(nextval_default(&q.name));
    add(ctx, q)?;
    ctx.txn.catalog_mut().tables.insert(t2.name.clone(), std::sync::Arc::new(t2));
    Ok(QueryResult::command("ALTER TABLE"))
}

/// An identity's `SEQUENCE NAME` as written (`s`, `"My Seq"`, `public.s`), as the
/// name it gives (folded and unquoted, as every name).
pub fn sequence_name_as_written(text: &str) -> Result<String> {
    let dialect = sqlparser::dialect::PostgreSqlDialect {};
    let name = sqlparser::parser::Parser::new(&dialect)
        .try_with_sql(text)
        .and_then(|mut p| p.parse_object_name(false))
        .map_err(|_| Error::syntax(format!("invalid sequence name \"{text}\"")))?;
    object_name(&name)
}

/// `ALTER TABLE t ALTER COLUMN c DROP IDENTITY [IF EXISTS]`: the column's sequence
/// goes and the column has no DEFAULT (it stays NOT NULL), as in PostgreSQL; 55000
/// for a column that is not an identity column (nothing with IF EXISTS).
fn drop_identity(ctx: &mut Ctx<'_>, table: &crate::catalog::TableDef, column: &str, if_exists: bool) -> Result<QueryResult> {
    let identity = ctx.catalog().owned_sequences(table.id).any(|q| q.owner.as_ref().is_some_and(|o| o.column == column && o.identity.is_some()));
    if !identity {
        if if_exists {
            return Ok(QueryResult::command("ALTER TABLE"));
        }
        return Err(Error::semantic(
            "55000",
            format!("column \"{column}\" of relation \"{}\" is not an identity column", table.name),
        ));
    }
    drop_owned(ctx, table.id, Some(column));
    let mut t2 = table.clone();
    if let Some(k) = t2.column_index(column) {
        t2.columns[k].default = None;
    }
    ctx.txn.catalog_mut().tables.insert(t2.name.clone(), std::sync::Arc::new(t2));
    Ok(QueryResult::command("ALTER TABLE"))
}
