//! The catalog: tables, columns, indexes and views, stored in the database file.
//!
//! The catalog is a heap reachable from root slot [`CATALOG_ROOT_SLOT`] of the
//! database header. Each schema object is one tuple holding its serialized definition
//! ([`codec`]). A transaction that changes the schema works on its own copy of the
//! [`Catalog`] and, before it commits, writes the tuples of the objects that changed
//! (`Catalog::save`: it knows which tuple holds each object as stored); the session
//! layer installs the new copy for everyone when the commit succeeds, so a reader
//! always sees the catalog that matches its snapshot.

mod codec;
mod physical;

use std::collections::BTreeMap;
use std::sync::Arc;

use beedb_storage::heap::HeapFile;
use beedb_storage::tuple::{AttrValue, ColumnFormat, TupleLayout};
use beedb_storage::{PageId, PageRead, Store, TupleId, WriteTxn};

pub use physical::{UNCONSTRAINED_KEY_SCALE, column_format, index_key_spec, key_kind};

use crate::error::{Error, Result};
use crate::types::{DataType, Value};

/// Root slot of the database header that points at the catalog heap.
pub const CATALOG_ROOT_SLOT: usize = 0;

/// One column of a table.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnDef {
    pub name: String,
    pub ty: DataType,
    pub not_null: bool,
    /// The DEFAULT expression as SQL text, bound each time it is used.
    pub default: Option<String>,
}

/// An index on a table: a B+tree from the encoded key columns to tuple ids.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexDef {
    pub name: String,
    /// Positions of the key columns in the table, in key order.
    pub columns: Vec<usize>,
    pub unique: bool,
    /// The table's PRIMARY KEY (implies unique and NOT NULL columns).
    pub primary: bool,
    /// Root page of the B+tree (it never moves).
    pub root: PageId,
    /// The index the table was last clustered on (`CLUSTER t USING index`), which a
    /// bare `CLUSTER t` uses again: PostgreSQL's `indisclustered`. At most one per table.
    pub clustered: bool,
}

/// A CHECK constraint: a boolean expression over the table's own columns that no
/// row may make FALSE (NULL passes), as in PostgreSQL.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckDef {
    pub name: String,
    /// The expression as SQL text over unqualified column names, bound where it is
    /// enforced (`engine::check`); RENAME COLUMN rewrites it.
    pub expr: String,
}

/// What a FOREIGN KEY does to the referencing rows when the referenced key is
/// deleted or changed (`ON DELETE` / `ON UPDATE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FkAction {
    /// The default: an error unless, at the end of the statement, no row refers to
    /// the old key or the key exists again.
    NoAction,
    /// An error whenever a row refers to the old key.
    Restrict,
    /// Delete the referencing rows, or change their key with the referenced one.
    Cascade,
    SetNull,
    SetDefault,
}

impl FkAction {
    /// The clause as SQL (`SET NULL`).
    pub fn sql(self) -> &'static str {
        match self {
            FkAction::NoAction => "NO ACTION",
            FkAction::Restrict => "RESTRICT",
            FkAction::Cascade => "CASCADE",
            FkAction::SetNull => "SET NULL",
            FkAction::SetDefault => "SET DEFAULT",
        }
    }
}

/// A FOREIGN KEY constraint (MATCH SIMPLE), kept with the referencing table: every
/// row whose key columns are all non-NULL must find its key in the referenced table,
/// as in PostgreSQL. Enforced in `engine::fk`.
#[derive(Debug, Clone, PartialEq)]
pub struct ForeignKeyDef {
    pub name: String,
    /// The referencing columns (by name: RENAME COLUMN rewrites them).
    pub columns: Vec<String>,
    /// The referenced table's id (stable across RENAME).
    pub parent: u32,
    /// The referenced columns, in the order of `columns`; a unique index of the
    /// referenced table has exactly these columns.
    pub parent_columns: Vec<String>,
    pub on_delete: FkAction,
    pub on_update: FkAction,
}

/// A table: its columns, heap, indexes and constraints.
#[derive(Debug, Clone)]
pub struct TableDef {
    pub id: u32,
    pub name: String,
    pub columns: Vec<ColumnDef>,
    /// First page of the table's heap.
    pub heap: PageId,
    pub indexes: Vec<IndexDef>,
    /// CHECK constraints, ordered by name: PostgreSQL tests them in that order, so
    /// the first one a row fails is the one named.
    pub checks: Vec<CheckDef>,
    /// FOREIGN KEY constraints of this (referencing) table, in creation order.
    pub foreign_keys: Vec<ForeignKeyDef>,
    /// The stored tuple layout, derived from the column types.
    pub layout: TupleLayout,
}

/// Equal when everything but the layout (derived from the columns) is equal.
impl PartialEq for TableDef {
    fn eq(&self, other: &TableDef) -> bool {
        self.id == other.id
            && self.name == other.name
            && self.columns == other.columns
            && self.heap == other.heap
            && self.indexes == other.indexes
            && self.checks == other.checks
            && self.foreign_keys == other.foreign_keys
    }
}

impl TableDef {
    pub fn new(
        id: u32,
        name: String,
        columns: Vec<ColumnDef>,
        heap: PageId,
        indexes: Vec<IndexDef>,
    ) -> Result<TableDef> {
        let formats: Vec<ColumnFormat> = columns
            .iter()
            .map(|c| column_format(&c.ty, !c.not_null))
            .collect();
        let layout = TupleLayout::new(&formats).map_err(Error::from)?;
        Ok(TableDef {
            id,
            name,
            columns,
            heap,
            indexes,
            checks: Vec::new(),
            foreign_keys: Vec::new(),
            layout,
        })
    }

    /// Adds a CHECK constraint, keeping them ordered by name.
    pub fn add_check(&mut self, check: CheckDef) {
        let at = self.checks.partition_point(|c| c.name < check.name);
        self.checks.insert(at, check);
    }

    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name)
    }

    pub fn primary_key(&self) -> Option<&IndexDef> {
        self.indexes.iter().find(|i| i.primary)
    }
}

/// A view: a named query, stored as its SQL text and bound where it is used.
#[derive(Debug, Clone, PartialEq)]
pub struct ViewDef {
    pub name: String,
    /// The defining query (`SELECT …`).
    pub query: String,
    /// Column names given in `CREATE VIEW v (a, b)`, else empty.
    pub columns: Vec<String>,
}

/// A sequence (`CREATE SEQUENCE`, or made for a SERIAL or identity column): its
/// definition, which changes transactionally with the catalog. Its current value is
/// not here: values are handed out outside transactions (`engine::sequence`).
#[derive(Debug, Clone, PartialEq)]
pub struct SequenceDef {
    pub id: u32,
    pub name: String,
    /// `smallint`, `integer` or `bigint`: bounds the default MINVALUE / MAXVALUE.
    pub ty: DataType,
    pub start: i64,
    pub increment: i64,
    pub min: i64,
    pub max: i64,
    pub cycle: bool,
    /// The column it numbers, for a SERIAL or identity column (dropped with it).
    pub owner: Option<SequenceOwner>,
}

/// The column a sequence belongs to.
#[derive(Debug, Clone, PartialEq)]
pub struct SequenceOwner {
    /// The table's id (stable across RENAME).
    pub table: u32,
    pub column: String,
    /// `None` for SERIAL (a plain DEFAULT nextval(…)), else the identity kind.
    pub identity: Option<Identity>,
}

/// `GENERATED ALWAYS AS IDENTITY` or `GENERATED BY DEFAULT AS IDENTITY`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Identity {
    Always,
    ByDefault,
}

/// What the optimizer and the bee maker policy know of a table's contents, kept in
/// the catalog so it survives reopening. Approximate: the row count is refreshed by
/// COPY and ANALYZE; column statistics by ANALYZE, which runs by itself after bulk
/// writes and after enough rows were inserted or deleted (`engine::analyze`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TableStats {
    /// Live rows when last counted.
    pub rows: u64,
    /// Heap pages when last counted (PostgreSQL's `relpages`); 0 in statistics
    /// stored before pages were counted.
    pub pages: u64,
    /// One entry per table column, in column order, once ANALYZE ran (empty before,
    /// and for a table that was empty when analyzed).
    pub columns: Vec<ColumnStats>,
}

/// One column's statistics, as PostgreSQL's `pg_statistic` keeps them, computed from
/// a sample of rows.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnStats {
    /// The fraction of rows where the column is NULL.
    pub null_frac: f64,
    /// Distinct non-NULL values. Negative: minus a fraction of the rows (−1: every
    /// row's value differs), for columns whose distinct values grow with the table,
    /// as PostgreSQL's `n_distinct`.
    pub distinct: f64,
    /// Average stored width of the non-NULL values, in bytes.
    pub avg_width: f64,
    /// The most common values, most common first, with the fraction of all rows
    /// holding each.
    pub mcv: Vec<(Value, f64)>,
    /// Bounds of an equi-depth histogram of the values that are not in `mcv`,
    /// ascending: each bucket holds about the same number of rows. Empty when fewer
    /// than two such values were seen.
    pub histogram: Vec<Value>,
    /// The smallest and the largest value seen (NULL when the column held none).
    pub min: Value,
    pub max: Value,
    /// The correlation (−1 to 1) between the column's value order and the order of
    /// the rows in the heap: near ±1 when the table is stored sorted on it, so an
    /// index range scan reads pages in order.
    pub correlation: f64,
}

impl Default for ColumnStats {
    fn default() -> Self {
        ColumnStats {
            null_frac: 0.0,
            distinct: 0.0,
            avg_width: 0.0,
            mcv: Vec::new(),
            histogram: Vec::new(),
            min: Value::Null,
            max: Value::Null,
            correlation: 0.0,
        }
    }
}

impl ColumnStats {
    /// Distinct non-NULL values in a table of `rows` rows.
    pub fn distinct_in(&self, rows: f64) -> f64 {
        if self.distinct < 0.0 { -self.distinct * rows } else { self.distinct }
    }
}

/// Every schema object of a database at one point in time.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    pub tables: BTreeMap<String, Arc<TableDef>>,
    pub views: BTreeMap<String, Arc<ViewDef>>,
    pub sequences: BTreeMap<String, Arc<SequenceDef>>,
    /// Statistics by table id (tables never counted have none).
    pub stats: BTreeMap<u32, TableStats>,
    /// Next table id.
    pub next_id: u32,
    /// First page of the catalog heap, once the first object was created.
    pub heap: Option<PageId>,
    /// Names the schema this catalog holds (everything but `stats`): a number no
    /// other schema of any database in the process was given ([`fresh_schema_gen`]),
    /// set when the catalog is loaded and at every change of the schema, and kept
    /// by a change of statistics alone. Two catalogs with the same number hold the
    /// same tables, views and sequences, so a cached plan made under one may serve
    /// the other when their statistics agree (`engine::plan_cache`). Not stored.
    pub schema_gen: u64,
    /// Which tuple of the catalog heap holds each object, as the heap stands at the
    /// state this catalog was read or saved in. Not stored.
    stored: Arc<Stored>,
}

/// One stored catalog object's key: its tuple is rewritten only when the object
/// under the key changes.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum ObjectKey {
    Meta,
    Table(String),
    View(String),
    Sequence(String),
    Stats(u32),
}

/// An object as last stored: the definitions are the catalog's own `Arc`s, so an
/// unchanged one is recognised by pointer, without comparing or encoding it.
#[derive(Debug, Clone)]
enum StoredObject {
    Meta(u32),
    Table(Arc<TableDef>),
    View(Arc<ViewDef>),
    Sequence(Arc<SequenceDef>),
    Stats(Arc<TableStats>),
}

/// An object of the catalog being saved.
enum Current<'a> {
    Meta(u32),
    Table(&'a Arc<TableDef>),
    View(&'a Arc<ViewDef>),
    Sequence(&'a Arc<SequenceDef>),
    Stats(u32, &'a TableStats),
}

impl Current<'_> {
    fn to_stored(&self) -> StoredObject {
        match self {
            Current::Meta(n) => StoredObject::Meta(*n),
            Current::Table(t) => StoredObject::Table(Arc::clone(t)),
            Current::View(v) => StoredObject::View(Arc::clone(v)),
            Current::Sequence(q) => StoredObject::Sequence(Arc::clone(q)),
            Current::Stats(_, st) => StoredObject::Stats(Arc::new((*st).clone())),
        }
    }

    fn encode(&self) -> Vec<u8> {
        match self {
            Current::Meta(next_id) => codec::encode_meta(*next_id),
            Current::Table(t) => codec::encode_table(t),
            Current::View(v) => codec::encode_view(v),
            Current::Sequence(q) => codec::encode_sequence(q),
            Current::Stats(id, st) => codec::encode_stats(*id, st),
        }
    }
}

/// The catalog heap as last read or saved (see [`Catalog::save`]).
#[derive(Debug, Clone, Default)]
struct Stored {
    objects: BTreeMap<ObjectKey, (TupleId, StoredObject)>,
    /// Tuples no key owns (a second tuple for one key, never written by this
    /// version): deleted at the next save.
    orphans: Vec<TupleId>,
    /// Tuples deleted or moved, and empty pages, since the heap was last written
    /// whole: garbage the heap carries (it only appends). Past the live objects'
    /// count (and a floor), the next save writes a fresh heap.
    dead: usize,
}

/// Garbage below which the catalog heap is never rewritten whole.
const COMPACT_FLOOR: usize = 256;

/// A schema generation no catalog was given before (see [`Catalog::schema_gen`]).
pub fn fresh_schema_gen() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// What kind of object a name denotes (tables, views and indexes share one namespace,
/// as in PostgreSQL).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjectKind {
    Table,
    View,
    Index,
    Sequence,
}

impl Catalog {
    /// Reads the catalog from the committed state of `store`.
    pub fn load(store: &Store) -> Result<Catalog> {
        let r = store.begin_read();
        Catalog::read(&r, r.root(CATALOG_ROOT_SLOT)?)
    }

    fn read<R: PageRead + ?Sized>(r: &R, root: u64) -> Result<Catalog> {
        let mut catalog = Catalog { schema_gen: fresh_schema_gen(), ..Catalog::default() };
        if root == 0 {
            return Ok(catalog);
        }
        let first = PageId(root as u32);
        catalog.heap = Some(first);
        let heap = HeapFile::open(first);
        let layout = catalog_layout();
        let mut objects = Vec::new();
        let (mut pages, mut used_pages) = (0usize, 0usize);
        for g in heap.pages(r) {
            let g = g?;
            let page = g.id();
            pages += 1;
            let mut used = false;
            for (slot, tuple) in beedb_storage::heap::HeapPage::new(&g, page)?.tuples()? {
                used = true;
                let bytes = match layout.attribute(tuple, 0)? {
                    beedb_storage::tuple::Attr::Bytes(b) => b.to_vec(),
                    beedb_storage::tuple::Attr::External { len, first_page } => {
                        HeapFile::fetch_external(r, len, first_page)?
                    }
                    beedb_storage::tuple::Attr::Null => Vec::new(),
                };
                objects.push((TupleId { page, slot }, bytes));
            }
            used_pages += used as usize;
        }
        let mut stored = Stored { dead: pages - used_pages, ..Stored::default() };
        for (tid, bytes) in objects {
            let (key, object) = match codec::decode(&bytes)? {
                codec::Object::Table(t) => {
                    catalog.next_id = catalog.next_id.max(t.id + 1);
                    let t = Arc::new(t);
                    catalog.tables.insert(t.name.clone(), t.clone());
                    (ObjectKey::Table(t.name.clone()), StoredObject::Table(t))
                }
                codec::Object::View(v) => {
                    let v = Arc::new(v);
                    catalog.views.insert(v.name.clone(), v.clone());
                    (ObjectKey::View(v.name.clone()), StoredObject::View(v))
                }
                codec::Object::Sequence(q) => {
                    catalog.next_id = catalog.next_id.max(q.id + 1);
                    let q = Arc::new(q);
                    catalog.sequences.insert(q.name.clone(), q.clone());
                    (ObjectKey::Sequence(q.name.clone()), StoredObject::Sequence(q))
                }
                codec::Object::Meta { next_id } => {
                    catalog.next_id = catalog.next_id.max(next_id);
                    (ObjectKey::Meta, StoredObject::Meta(next_id))
                }
                codec::Object::Stats { table, stats } => {
                    catalog.stats.insert(table, stats.clone());
                    (ObjectKey::Stats(table), StoredObject::Stats(Arc::new(stats)))
                }
            };
            if let Some((old, _)) = stored.objects.insert(key, (tid, object)) {
                stored.orphans.push(old);
            }
        }
        catalog.stored = Arc::new(stored);
        Ok(catalog)
    }

    /// The objects this catalog stores, by key: the meta entry, the tables, views
    /// and sequences, and the statistics of tables that still exist (a dropped
    /// table's go with it).
    fn objects(&self) -> Vec<(ObjectKey, Current<'_>)> {
        let ids: std::collections::HashSet<u32> = self.tables.values().map(|t| t.id).collect();
        let mut out = vec![(ObjectKey::Meta, Current::Meta(self.next_id))];
        out.extend(self.tables.iter().map(|(n, t)| (ObjectKey::Table(n.clone()), Current::Table(t))));
        out.extend(self.views.iter().map(|(n, v)| (ObjectKey::View(n.clone()), Current::View(v))));
        out.extend(self.sequences.iter().map(|(n, q)| (ObjectKey::Sequence(n.clone()), Current::Sequence(q))));
        out.extend(
            self.stats
                .iter()
                .filter(|(id, _)| ids.contains(id))
                .map(|(id, st)| (ObjectKey::Stats(*id), Current::Stats(*id, st))),
        );
        out
    }

    /// Writes this catalog into the catalog heap inside `w`, so that the heap holds
    /// exactly it: only the objects that differ from what the heap holds (as this
    /// catalog's copy was read or last saved) are written: a changed one's tuple is
    /// replaced (in place when it fits), a new one inserted, a gone one deleted. So
    /// a DDL statement writes O(its change), where rewriting every object made n
    /// CREATE TABLEs O(n²) in time and in file size (2,000: 29 s, a 210 MB file).
    /// The heap only appends, so deleted and moved tuples leave garbage: once it
    /// outweighs the live objects, the save writes a fresh heap and frees the old
    /// one (amortized O(1) per change). All of it is inside `w`: a crash before the
    /// commit leaves the catalog as it was.
    pub fn save(&mut self, w: &WriteTxn) -> Result<()> {
        let layout = catalog_layout();
        let mut stored = (*self.stored).clone();
        let live = 1 + self.tables.len() + self.views.len() + self.sequences.len() + self.stats.len();
        let fresh = match self.heap {
            None => true,
            Some(_) => stored.dead > COMPACT_FLOOR.max(live),
        };
        if fresh {
            let h = HeapFile::create(w)?;
            w.set_root(CATALOG_ROOT_SLOT, h.first_page.0 as u64)?;
            if let Some(old) = self.heap.replace(h.first_page) {
                HeapFile::open(old).drop_heap(w, &layout)?;
            }
            stored = Stored::default();
        }
        let heap = HeapFile::open(self.heap.expect("set above"));
        for tid in std::mem::take(&mut stored.orphans) {
            heap.delete(w, tid, &layout)?;
            stored.dead += 1;
        }
        let mut old = std::mem::take(&mut stored.objects);
        for (key, object) in self.objects() {
            match old.remove(&key) {
                Some((tid, was)) if same(&was, &object) => {
                    stored.objects.insert(key, (tid, was));
                }
                Some((tid, _)) => {
                    let bytes = object.encode();
                    let moved = heap.update(w, tid, &[AttrValue::Variable(&bytes)], &layout)?;
                    stored.dead += (moved != tid) as usize;
                    stored.objects.insert(key, (moved, object.to_stored()));
                }
                None => {
                    let bytes = object.encode();
                    let tid = heap.insert(w, &[AttrValue::Variable(&bytes)], &layout)?;
                    stored.objects.insert(key, (tid, object.to_stored()));
                }
            }
        }
        for (tid, _) in old.into_values() {
            heap.delete(w, tid, &layout)?;
            stored.dead += 1;
        }
        self.stored = Arc::new(stored);
        Ok(())
    }

    pub fn table(&self, name: &str) -> Option<&Arc<TableDef>> {
        self.tables.get(name)
    }

    pub fn view(&self, name: &str) -> Option<&Arc<ViewDef>> {
        self.views.get(name)
    }

    /// The table owning index `name`, and the index's position in it.
    pub fn index(&self, name: &str) -> Option<(&Arc<TableDef>, usize)> {
        self.tables.values().find_map(|t| {
            t.indexes
                .iter()
                .position(|i| i.name == name)
                .map(|pos| (t, pos))
        })
    }

    /// What `name` denotes, if anything.
    pub fn object_kind(&self, name: &str) -> Option<ObjectKind> {
        if self.tables.contains_key(name) {
            Some(ObjectKind::Table)
        } else if self.views.contains_key(name) {
            Some(ObjectKind::View)
        } else if self.index(name).is_some() {
            Some(ObjectKind::Index)
        } else if self.sequences.contains_key(name) {
            Some(ObjectKind::Sequence)
        } else {
            None
        }
    }

    /// The table with id `id`.
    pub fn table_by_id(&self, id: u32) -> Option<&Arc<TableDef>> {
        self.tables.values().find(|t| t.id == id)
    }

    /// The foreign keys that reference table `parent_id` (including a table's own,
    /// for a self-referencing one), with their referencing tables.
    pub fn referencing(&self, parent_id: u32) -> Vec<(Arc<TableDef>, ForeignKeyDef)> {
        let mut out = Vec::new();
        for t in self.tables.values() {
            for fk in t.foreign_keys.iter().filter(|fk| fk.parent == parent_id) {
                out.push((t.clone(), fk.clone()));
            }
        }
        out
    }

    pub fn sequence(&self, name: &str) -> Option<&Arc<SequenceDef>> {
        self.sequences.get(name)
    }

    /// The sequences owned by columns of table `table_id` (SERIAL, identity).
    pub fn owned_sequences(&self, table_id: u32) -> impl Iterator<Item = &Arc<SequenceDef>> {
        self.sequences.values().filter(move |q| q.owner.as_ref().is_some_and(|o| o.table == table_id))
    }

    /// The identity kind of column `column` of `table`, if it is an identity column.
    pub fn identity(&self, table: &TableDef, column: &str) -> Option<Identity> {
        self.owned_sequences(table.id)
            .find_map(|q| q.owner.as_ref().filter(|o| o.column == column).and_then(|o| o.identity))
    }

    /// An error unless `name` is free for a new table, view or index.
    pub fn check_name_free(&self, name: &str) -> Result<()> {
        if self.object_kind(name).is_some() {
            return Err(Error::duplicate_object(
                "42P07",
                format!("relation \"{name}\" already exists"),
            ));
        }
        Ok(())
    }

    /// A name for a new constraint, derived as PostgreSQL's ChooseConstraintName does
    /// (`t_a_check`, then `t_a_check1`, …): unused by any constraint in the database
    /// — CHECK and FOREIGN KEY constraints, unique and primary key indexes — nor in
    /// `pending` (those of a table being created).
    pub fn fresh_constraint_name(&self, base: &str, pending: &[&str]) -> String {
        let taken = |n: &str| {
            pending.contains(&n)
                || self.tables.values().any(|t| {
                    t.checks.iter().any(|c| c.name == n)
                        || t.foreign_keys.iter().any(|f| f.name == n)
                        || t.indexes.iter().any(|i| i.unique && i.name == n)
                })
        };
        if !taken(base) {
            return base.to_string();
        }
        (1..)
            .map(|n| format!("{base}{n}"))
            .find(|n| !taken(n))
            .expect("an unused name")
    }

    /// An index name not yet used, derived as PostgreSQL does (`t_a_key`, `t_pkey`).
    pub fn fresh_index_name(&self, base: &str) -> String {
        if self.object_kind(base).is_none() {
            return base.to_string();
        }
        (1..)
            .map(|n| format!("{base}{n}"))
            .find(|n| self.object_kind(n).is_none())
            .expect("an unused name")
    }
}

/// Whether a stored object and the catalog's are the same (a definition by
/// pointer first; statistics, which are not shared, by value, then by encoding,
/// for a NaN).
fn same(was: &StoredObject, now: &Current<'_>) -> bool {
    match (was, now) {
        (StoredObject::Meta(a), Current::Meta(b)) => a == b,
        (StoredObject::Table(a), Current::Table(b)) => Arc::ptr_eq(a, b) || a == *b,
        (StoredObject::View(a), Current::View(b)) => Arc::ptr_eq(a, b) || a == *b,
        (StoredObject::Sequence(a), Current::Sequence(b)) => Arc::ptr_eq(a, b) || a == *b,
        (StoredObject::Stats(a), Current::Stats(id, b)) => {
            **a == **b || codec::encode_stats(*id, a) == codec::encode_stats(*id, b)
        }
        _ => false,
    }
}

/// The layout of catalog tuples: one variable attribute with the serialized object.
fn catalog_layout() -> TupleLayout {
    TupleLayout::new(&[ColumnFormat::variable(false)]).expect("a one-column layout")
}

#[cfg(test)]
mod tests {
    use super::*;
    use beedb_storage::StoreOptions;

    #[test]
    fn catalog_survives_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.beedb");
        {
            let (store, _) = Store::open(&path, StoreOptions::default()).unwrap();
            let mut c = Catalog::load(&store).unwrap();
            let w = store.begin_write().unwrap();
            let heap = HeapFile::create(&w).unwrap();
            let cols = vec![
                ColumnDef {
                    name: "id".into(),
                    ty: DataType::Integer,
                    not_null: true,
                    default: None,
                },
                ColumnDef {
                    name: "price".into(),
                    ty: DataType::decimal(12, 2).unwrap(),
                    not_null: false,
                    default: Some("0".into()),
                },
            ];
            let t = TableDef::new(c.next_id, "t".into(), cols, heap.first_page, vec![]).unwrap();
            c.stats.insert(t.id, TableStats { rows: 6_001_215, pages: 0, columns: vec![] });
            // A dropped table's statistics are not saved.
            c.stats.insert(t.id + 100, TableStats { rows: 5, pages: 0, columns: vec![] });
            c.next_id += 1;
            c.tables.insert("t".into(), Arc::new(t));
            c.views.insert(
                "v".into(),
                Arc::new(ViewDef {
                    name: "v".into(),
                    query: "SELECT id FROM t".into(),
                    columns: vec!["x".into()],
                }),
            );
            c.save(&w).unwrap();
            w.commit().unwrap();
            store.close().unwrap();
        }
        let (store, _) = Store::open(&path, StoreOptions::default()).unwrap();
        let c = Catalog::load(&store).unwrap();
        let t = c.table("t").unwrap();
        assert_eq!(t.columns.len(), 2);
        assert_eq!(t.columns[1].ty, DataType::decimal(12, 2).unwrap());
        assert_eq!(t.columns[1].default.as_deref(), Some("0"));
        assert_eq!(c.view("v").unwrap().columns, vec!["x".to_string()]);
        assert_eq!(c.stats.get(&t.id), Some(&TableStats { rows: 6_001_215, pages: 0, columns: vec![] }));
        assert_eq!(c.stats.len(), 1);
        assert_eq!(c.next_id, 1);
    }

    fn table(id: u32, name: &str, columns: usize) -> TableDef {
        let cols = (0..columns)
            .map(|i| ColumnDef { name: format!("c{i}"), ty: DataType::Integer, not_null: false, default: None })
            .collect();
        TableDef::new(id, name.into(), cols, PageId(1), vec![]).unwrap()
    }

    /// Every stored object, encoded, in key order: what a reopened catalog must equal.
    fn stored_form(c: &Catalog) -> Vec<Vec<u8>> {
        c.objects().iter().map(|(_, o)| o.encode()).collect()
    }

    fn heap_pages(store: &Store, c: &Catalog) -> usize {
        let r = store.begin_read();
        HeapFile::open(c.heap.unwrap()).pages(&r).count()
    }

    /// n CREATE TABLEs, each saved in its own transaction, write O(n) tuples: the
    /// catalog heap holds n small tuples in a few pages. Rewriting every object at
    /// every save appended 1 + 2 + … + n tuples (500 tables: about 1,500 pages).
    #[test]
    fn saving_one_more_table_writes_one_tuple() {
        let dir = tempfile::tempdir().unwrap();
        let (store, _) = Store::open(dir.path().join("c.beedb"), StoreOptions::default()).unwrap();
        let mut c = Catalog::load(&store).unwrap();
        for i in 0..500 {
            let w = store.begin_write().unwrap();
            let t = table(c.next_id, &format!("table_{i}"), 3);
            c.next_id += 1;
            c.tables.insert(t.name.clone(), Arc::new(t));
            c.save(&w).unwrap();
            w.commit().unwrap();
        }
        let pages = heap_pages(&store, &c);
        assert!(pages <= 20, "{pages} pages for 500 tables");
        let back = Catalog::load(&store).unwrap();
        assert_eq!(stored_form(&back), stored_form(&c));
        // Saving a changed table rewrites its tuple alone; saving an unchanged
        // catalog rewrites nothing.
        let tids = |c: &Catalog| c.stored.objects.iter().map(|(k, (tid, _))| (k.clone(), *tid)).collect::<Vec<_>>();
        let w = store.begin_write().unwrap();
        let mut same = back.clone();
        same.save(&w).unwrap();
        assert_eq!(tids(&same), tids(&back));
        let mut changed = back.clone();
        let t = table(changed.tables["table_7"].id, "table_7", 4);
        changed.tables.insert(t.name.clone(), Arc::new(t));
        changed.save(&w).unwrap();
        let differ: Vec<_> = tids(&changed).into_iter().zip(tids(&back)).filter(|(a, b)| a != b).collect();
        assert!(differ.len() <= 1, "{differ:?}");
        w.rollback();
    }

    /// Dropping and creating tables over and over leaves deleted tuples behind (the
    /// heap appends); past the live objects' count the save writes a fresh heap, so
    /// the heap stays within a small multiple of its contents.
    #[test]
    fn a_catalog_heap_full_of_garbage_is_rewritten() {
        let dir = tempfile::tempdir().unwrap();
        let (store, _) = Store::open(dir.path().join("c.beedb"), StoreOptions::default()).unwrap();
        let mut c = Catalog::load(&store).unwrap();
        let mut most = 0;
        for i in 0..3000 {
            let w = store.begin_write().unwrap();
            let name = format!("t{}", i % 10);
            if c.tables.remove(&name).is_none() {
                let t = table(c.next_id, &name, 1 + i % 5);
                c.next_id += 1;
                c.tables.insert(name, Arc::new(t));
            }
            c.stats.insert(c.next_id - 1, TableStats { rows: i as u64, ..TableStats::default() });
            c.save(&w).unwrap();
            w.commit().unwrap();
            most = most.max(heap_pages(&store, &c));
            if i % 1000 == 999 {
                // A reopened catalog knows its tuples too.
                let back = Catalog::load(&store).unwrap();
                assert_eq!(stored_form(&back), stored_form(&c));
                c = back;
            }
        }
        assert!(most <= 12, "the catalog heap grew to {most} pages");
        assert_eq!(stored_form(&Catalog::load(&store).unwrap()), stored_form(&c));
    }

    /// Seeded crash runs (the fault-injecting file system, as `storage/tests/crash.rs`)
    /// of transactions that change the catalog: tables created, changed, dropped;
    /// statistics (some long enough to be stored out of line), views and sequences;
    /// some transactions rolled back. Each run crashes at a random write, recovers,
    /// and the catalog read back must be the last committed one (or the one whose
    /// commit was in flight); then it goes on from the recovered catalog and crashes
    /// again. `BEEDB_CRASH_RUNS` sets the runs (default 60).
    #[test]
    fn catalog_saves_recover_after_crashes() {
        let runs: u64 = std::env::var("BEEDB_CRASH_RUNS").ok().and_then(|s| s.parse().ok()).unwrap_or(60);
        for seed in 0..runs {
            catalog_crash_run(seed).unwrap_or_else(|e| panic!("catalog crash run, seed {seed}: {e}"));
        }
    }

    fn random_change(rng: &mut rand::rngs::StdRng, c: &mut Catalog) {
        use rand::Rng;
        let name = format!("t{}", rng.random_range(0..12));
        match rng.random_range(0..7) {
            0 | 1 => {
                let columns = rng.random_range(1..6);
                let t = table(c.next_id, &name, columns);
                c.next_id += 1;
                c.tables.insert(name, Arc::new(t));
            }
            2 => {
                c.tables.remove(&name);
            }
            3 => {
                if let Some(t) = c.tables.get(&name) {
                    let id = t.id;
                    let n = if rng.random_range(0..4) == 0 { rng.random_range(500..3000) } else { rng.random_range(0..20) };
                    let column = ColumnStats {
                        histogram: (0..n).map(|i| Value::Text(format!("value {i}"))).collect(),
                        ..ColumnStats::default()
                    };
                    c.stats.insert(id, TableStats { rows: rng.random_range(0..1_000_000), columns: vec![column], ..TableStats::default() });
                }
            }
            4 => {
                let v = ViewDef { name: format!("v{}", rng.random_range(0..5)), query: "SELECT 1".repeat(rng.random_range(1..50)), columns: vec![] };
                if rng.random_range(0..3) == 0 {
                    c.views.remove(&v.name);
                } else {
                    c.views.insert(v.name.clone(), Arc::new(v));
                }
            }
            5 => {
                let q = SequenceDef {
                    id: c.next_id,
                    name: format!("s{}", rng.random_range(0..4)),
                    ty: DataType::BigInt,
                    start: 1,
                    increment: rng.random_range(1..9),
                    min: 1,
                    max: i64::MAX,
                    cycle: false,
                    owner: None,
                };
                c.next_id += 1;
                c.sequences.insert(q.name.clone(), Arc::new(q));
            }
            _ => c.next_id += 1,
        }
    }

    fn catalog_crash_run(seed: u64) -> std::result::Result<(), String> {
        use beedb_storage::file::{FaultConfig, FaultFileSystem};
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let fs = FaultFileSystem::new();
        let path = std::path::Path::new("catalog-crash.beedb");
        let page_size = [4096, 8192, 65536][(seed % 3) as usize];
        let opts = StoreOptions { page_size, ..StoreOptions::default() };
        for round in 0..2 {
            let (store, _) = Store::open_with(&fs, path, opts.clone()).map_err(|e| format!("round {round}: open: {e}"))?;
            let mut committed = Catalog::load(&store).map_err(|e| format!("round {round}: load: {e}"))?;
            let start = fs.operation_count();
            fs.set_config(FaultConfig { crash_at_op: Some(start + rng.random_range(1..400)), ..Default::default() });
            let mut in_doubt = None;
            loop {
                let Ok(w) = store.begin_write() else { break };
                let mut next = committed.clone();
                for _ in 0..rng.random_range(1..6) {
                    random_change(&mut rng, &mut next);
                }
                if next.save(&w).is_err() {
                    break;
                }
                if rng.random_range(0..10) == 0 {
                    w.rollback();
                    continue;
                }
                match w.commit() {
                    Ok(()) => committed = next,
                    Err(_) => {
                        in_doubt = Some(next);
                        break;
                    }
                }
            }
            fs.crash();
            drop(store);
            fs.restart(seed.wrapping_mul(31).wrapping_add(round));
            let (store, _) = Store::open_with(&fs, path, opts.clone()).map_err(|e| format!("round {round}: recovery: {e}"))?;
            let got = stored_form(&Catalog::load(&store).map_err(|e| format!("round {round}: load after the crash: {e}"))?);
            if got != stored_form(&committed) && in_doubt.as_ref().map(stored_form) != Some(got.clone()) {
                return Err(format!("round {round}: the recovered catalog is neither the committed one nor the one in flight"));
            }
            if let Some(heap) = Catalog::load(&store).unwrap().heap {
                let r = store.begin_read();
                HeapFile::open(heap).verify(&r).map_err(|e| format!("round {round}: {e}"))?;
            }
            store.close().map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    fn every_kind_of_value() -> Vec<Value> {
        use crate::types::{Date, Decimal, Interval, Timestamp};
        vec![
            Value::Null,
            Value::Boolean(true),
            Value::SmallInt(-7),
            Value::Integer(i32::MIN),
            Value::BigInt(i64::MAX),
            Value::Real(-0.5),
            Value::Double(f64::NAN),
            Value::Decimal(Decimal::new(-123_456_789_012_345_678_901_234_567, 9).unwrap()),
            Value::Date(Date(-3)),
            Value::Timestamp(Timestamp(1_700_000_000_000_000)),
            Value::Interval(Interval { months: -1, days: 2, micros: -3 }),
            Value::Char("ab  ".into()),
            Value::Varchar(String::new()),
            Value::Text("naïve, \"quoted\"".into()),
        ]
    }

    #[test]
    fn column_statistics_of_every_type_round_trip() {
        let values = every_kind_of_value();
        let columns: Vec<ColumnStats> = values
            .iter()
            .enumerate()
            .map(|(i, v)| ColumnStats {
                null_frac: i as f64 / 100.0,
                distinct: if i % 2 == 0 { -0.5 } else { i as f64 },
                avg_width: 3.5,
                mcv: vec![(v.clone(), 0.25), (Value::Integer(1), 0.125)],
                histogram: values.clone(),
                min: v.clone(),
                max: Value::Text("z".into()),
                correlation: -0.75,
            })
            .collect();
        let stats = TableStats { rows: 1 << 40, pages: 1 << 33, columns };
        match codec::decode(&codec::encode_stats(9, &stats)).unwrap() {
            codec::Object::Stats { table, stats: back } => {
                assert_eq!(table, 9);
                assert_eq!(back.rows, stats.rows);
                assert_eq!(back.pages, stats.pages);
                assert_eq!(back.columns.len(), stats.columns.len());
                // NaN is not equal to itself: compare the encodings instead.
                assert_eq!(codec::encode_stats(9, &back), codec::encode_stats(9, &stats));
                assert_eq!(back.columns[2].mcv[0].0, Value::SmallInt(-7));
                assert_eq!(back.columns[3].distinct, 3.0);
            }
            _ => panic!("not statistics"),
        }
    }

    #[test]
    fn statistics_of_the_earlier_format_read() {
        // Written before column statistics existed: the id and the row count only.
        let mut old = vec![1u8, 4];
        old.extend_from_slice(&5u32.to_le_bytes());
        old.extend_from_slice(&1234u64.to_le_bytes());
        match codec::decode(&old).unwrap() {
            codec::Object::Stats { table, stats } => {
                assert_eq!((table, stats.rows), (5, 1234));
                assert!(stats.columns.is_empty());
            }
            _ => panic!("not statistics"),
        }
    }

    #[test]
    fn damaged_statistics_are_an_error_not_a_huge_allocation() {
        let stats = TableStats { rows: 10, pages: 1, columns: vec![ColumnStats::default()] };
        let mut bytes = codec::encode_stats(1, &stats);
        // The column count claims four billion columns.
        bytes[14..18].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(codec::decode(&bytes).is_err());
        // Cut anywhere, the entry is an error — except just before the page count,
        // where it is an entry of the format before pages were counted.
        let whole = codec::encode_stats(1, &stats);
        let before_pages = whole.len() - 8;
        for cut in 15..whole.len() {
            if cut != before_pages {
                assert!(codec::decode(&whole[..cut]).is_err(), "cut at {cut}");
            }
        }
        match codec::decode(&whole[..before_pages]).unwrap() {
            codec::Object::Stats { stats: back, .. } => {
                assert_eq!((back.rows, back.pages, back.columns.len()), (10, 0, 1));
            }
            _ => panic!("not statistics"),
        }
    }
}
