//! FOREIGN KEY constraints (MATCH SIMPLE, PostgreSQL's semantics): declaring one
//! (CREATE TABLE, ALTER TABLE … ADD), and enforcing it at the end of each statement
//! that writes a referencing or a referenced table.
//!
//! A statement that writes a table involved in a foreign key records what it did in
//! a [`Tracker`]: the rows whose key must find a referenced row (inserted, or
//! updated with a changed key) and the referenced keys it deleted or changed. At the
//! end of the statement (as PostgreSQL's NO ACTION triggers), [`Tracker::finish`]
//! applies the ON DELETE / ON UPDATE actions — which may delete or update rows of
//! other tables, whose own referenced keys are then handled in turn (chains,
//! self-referencing tables) — and then checks the referencing rows. Checking at the
//! end lets one statement insert a referenced row and a row referring to it.
//!
//! Lookups of a referenced key go through the referenced table's unique index.
//! Referencing rows of a deleted or changed key are found through an index of the
//! referencing table on exactly the key columns when there is one, else by one scan
//! of that table per statement round and constraint.
//!
//! An error leaves the statement's changes to the transaction's rollback (an error
//! ends the autocommit transaction or aborts the block), so checks may come after
//! the writes they check.

use std::collections::HashSet;
use std::sync::Arc;

use beedb_storage::btree::BTree;
use beedb_storage::heap::HeapFile;
use beedb_storage::{TupleId, WriteTxn};
use sqlparser::ast;

use super::Ctx;
use crate::binder::ident;
use crate::catalog::{Catalog, FkAction, ForeignKeyDef, IndexDef, TableDef};
use crate::error::{Error, Result};
use crate::exec::dml as xdml;
use crate::exec::tuple_codec::{decode_row, index_key};
use crate::types::{DataType, Value};

/// A value as PostgreSQL prints it in a DETAIL (`Key (a)=(1)`).
fn detail_text(v: &Value) -> String {
    match v {
        Value::Null => "null".to_string(),
        Value::Boolean(b) => if *b { "t" } else { "f" }.to_string(),
        v => v.to_string(),
    }
}

fn key_detail(columns: &[String], values: &[Value]) -> String {
    let values: Vec<String> = values.iter().map(detail_text).collect();
    format!("Key ({})=({})", columns.join(", "), values.join(", "))
}

fn positions(t: &TableDef, names: &[String]) -> Result<Vec<usize>> {
    names
        .iter()
        .map(|n| {
            t.column_index(n)
                .ok_or_else(|| Error::internal(format!("foreign key column \"{n}\" missing from \"{}\"", t.name)))
        })
        .collect()
}

/// The unique index of `t` on exactly the columns `cols` (in any order).
fn unique_index_on<'t>(t: &'t TableDef, cols: &[usize]) -> Option<&'t IndexDef> {
    let mut want = cols.to_vec();
    want.sort_unstable();
    t.indexes.iter().find(|i| {
        let mut have = i.columns.clone();
        have.sort_unstable();
        i.unique && have == want
    })
}

/// Any index of `t` on exactly the columns `cols` (in any order).
fn index_on<'t>(t: &'t TableDef, cols: &[usize]) -> Option<&'t IndexDef> {
    let mut want = cols.to_vec();
    want.sort_unstable();
    t.indexes.iter().find(|i| {
        let mut have = i.columns.clone();
        have.sort_unstable();
        have == want
    })
}

/// Whether a column of type `a` may reference one of type `b`: PostgreSQL needs an
/// equality operator of the referenced index's operator family, so integers with
/// integers, floats with floats, strings with strings, else the same type.
fn comparable(a: DataType, b: DataType) -> bool {
    use DataType as T;
    let int = |t| matches!(t, T::SmallInt | T::Integer | T::BigInt);
    let float = |t| matches!(t, T::Real | T::Double);
    (int(a) && int(b))
        || (float(a) && float(b))
        || (a.is_string() && b.is_string())
        || matches!((a, b), (T::Decimal { .. }, T::Decimal { .. }))
        || a == b
}

/// `values` cast to `types`; `None` when one does not fit (such a key cannot be
/// present in a column of that type).
fn cast_key(values: &[Value], types: &[DataType]) -> Option<Vec<Value>> {
    values.iter().zip(types).map(|(v, t)| v.cast(t).ok()).collect()
}

/// The encoded key of `values` (for the columns `cols` of `t`) in index `index`.
fn key_bytes(t: &TableDef, index: &IndexDef, cols: &[usize], values: &[Value]) -> Result<Vec<u8>> {
    let mut row = vec![Value::Null; t.columns.len()];
    for (&c, v) in cols.iter().zip(values) {
        row[c] = v.clone();
    }
    index_key(t, index, &row)
}

/// Whether the referenced table `parent` holds key `values` (of the referencing
/// columns' types) in its columns `pcols`.
fn parent_has(w: &WriteTxn, parent: &TableDef, pcols: &[usize], values: &[Value]) -> Result<bool> {
    let index = unique_index_on(parent, pcols).ok_or_else(|| no_unique_constraint(&parent.name))?;
    let types: Vec<DataType> = pcols.iter().map(|&c| parent.columns[c].ty).collect();
    let Some(values) = cast_key(values, &types) else { return Ok(false) };
    let key = key_bytes(parent, index, pcols, &values)?;
    Ok(xdml::find_key(w, index, &key)?.is_some())
}

fn no_unique_constraint(parent: &str) -> Error {
    Error::semantic(
        "42830",
        format!("there is no unique constraint matching given keys for referenced table \"{parent}\""),
    )
}

/// The rows of `child` whose columns `ccols` hold one of `keys` (values of the
/// referenced columns), with their tuple ids: through an index on exactly those
/// columns when `child` has one, else by one scan.
fn referencing_rows(
    w: &WriteTxn,
    child: &TableDef,
    ccols: &[usize],
    keys: &[Vec<Value>],
) -> Result<Vec<(TupleId, Vec<Value>)>> {
    let types: Vec<DataType> = ccols.iter().map(|&c| child.columns[c].ty).collect();
    let keys: Vec<Vec<Value>> = keys.iter().filter_map(|k| cast_key(k, &types)).collect();
    let mut out = Vec::new();
    if keys.is_empty() {
        return Ok(out);
    }
    if let Some(index) = index_on(child, ccols) {
        let mut seen = HashSet::new();
        let tree = BTree::open(index.root);
        for k in &keys {
            let key = key_bytes(child, index, ccols, k)?;
            for v in tree.get_all(w, &key)? {
                let tid = TupleId::from_bytes(&v?).ok_or_else(|| Error::internal("malformed index value"))?;
                if seen.insert(tid) {
                    out.push((tid, xdml::fetch_row(w, child, tid)?));
                }
            }
        }
        return Ok(out);
    }
    // A scan: the keys encoded as an index on the key columns would encode them.
    let spec = IndexDef { name: String::new(), columns: ccols.to_vec(), unique: false, primary: false, root: child.heap, clustered: false };
    let wanted: HashSet<Vec<u8>> = keys.iter().map(|k| key_bytes(child, &spec, ccols, k)).collect::<Result<_>>()?;
    let mut tuples = Vec::new();
    HeapFile::open(child.heap).for_each(w, |tid, t| {
        tuples.push((tid, t.to_vec()));
        Ok(())
    })?;
    for (tid, t) in tuples {
        let row = decode_row(w, child, &t)?;
        if ccols.iter().any(|&c| row[c].is_null()) {
            continue;
        }
        if wanted.contains(&index_key(child, &spec, &row)?) {
            out.push((tid, row));
        }
    }
    Ok(out)
}

/// What one statement did to tables involved in foreign keys, enforced by
/// [`Tracker::finish`] at its end.
#[derive(Default)]
pub struct Tracker {
    /// The statement's table references others: the positions of each key's columns.
    child_keys: Vec<Vec<usize>>,
    /// The statement's table is referenced (by some table, maybe itself).
    referenced: bool,
    table: u32,
    /// Rows (table id, values) whose keys must be present in the referenced tables.
    to_check: Vec<(u32, Vec<Value>)>,
    /// Rows of referenced tables that were deleted (new `None`) or updated:
    /// (table id, old values, new values).
    changed: Vec<(u32, Vec<Value>, Option<Vec<Value>>)>,
}

impl Tracker {
    /// A tracker for a statement writing `table`; it records nothing when the table
    /// takes part in no foreign key.
    pub fn of(catalog: &Catalog, table: &TableDef) -> Result<Tracker> {
        let child_keys = table
            .foreign_keys
            .iter()
            .map(|fk| positions(table, &fk.columns))
            .collect::<Result<Vec<_>>>()?;
        let referenced = catalog.tables.values().any(|t| t.foreign_keys.iter().any(|fk| fk.parent == table.id));
        Ok(Tracker { child_keys, referenced, table: table.id, ..Tracker::default() })
    }

    pub fn inserted(&mut self, row: &[Value]) {
        if !self.child_keys.is_empty() {
            self.to_check.push((self.table, row.to_vec()));
        }
    }

    pub fn updated(&mut self, old: &[Value], new: &[Value]) {
        // As PostgreSQL: a row whose key did not change is not checked again.
        if self.child_keys.iter().any(|cols| cols.iter().any(|&c| old[c] != new[c])) {
            self.to_check.push((self.table, new.to_vec()));
        }
        if self.referenced {
            self.changed.push((self.table, old.to_vec(), Some(new.to_vec())));
        }
    }

    pub fn deleted(&mut self, old: &[Value]) {
        if self.referenced {
            self.changed.push((self.table, old.to_vec(), None));
        }
    }

    /// Applies the actions for the referenced keys the statement deleted or changed
    /// (and those of the rows the actions changed in turn), then checks every
    /// written referencing row.
    pub fn finish(mut self, ctx: &mut Ctx<'_>) -> Result<()> {
        let mut rounds = 0usize;
        while !self.changed.is_empty() {
            rounds += 1;
            if rounds % 64 == 0 {
                ctx.interrupt.check()?;
            }
            let changed = std::mem::take(&mut self.changed);
            let mut parents: Vec<u32> = changed.iter().map(|c| c.0).collect();
            parents.sort_unstable();
            parents.dedup();
            for parent_id in parents {
                let catalog = ctx.txn.catalog.clone();
                let Some(parent) = catalog.table_by_id(parent_id) else { continue };
                for (child, fk) in catalog.referencing(parent_id) {
                    let rows = changed.iter().filter(|c| c.0 == parent_id).map(|c| (&c.1, c.2.as_ref()));
                    self.act(ctx, parent, &child, &fk, rows)?;
                }
            }
        }
        let catalog = ctx.txn.catalog.clone();
        let w = ctx.txn.writer()?;
        for (i, (id, row)) in self.to_check.iter().enumerate() {
            if i % super::dml::CHECK_EVERY == 0 {
                ctx.interrupt.check()?;
            }
            let Some(child) = catalog.table_by_id(*id) else { continue };
            for fk in &child.foreign_keys {
                let ccols = positions(child, &fk.columns)?;
                let key: Vec<Value> = ccols.iter().map(|&c| row[c].clone()).collect();
                if key.iter().any(Value::is_null) {
                    continue; // MATCH SIMPLE
                }
                let Some(parent) = catalog.table_by_id(fk.parent) else { continue };
                let pcols = positions(parent, &fk.parent_columns)?;
                if !parent_has(w, parent, &pcols, &key)? {
                    return Err(not_present(&child.name, fk, &parent.name, &key));
                }
            }
        }
        Ok(())
    }

    /// Handles the deleted or changed keys `rows` (old, new values of `parent`) for
    /// foreign key `fk` of `child`.
    fn act<'r>(
        &mut self,
        ctx: &mut Ctx<'_>,
        parent: &TableDef,
        child: &Arc<TableDef>,
        fk: &ForeignKeyDef,
        rows: impl Iterator<Item = (&'r Vec<Value>, Option<&'r Vec<Value>>)>,
    ) -> Result<()> {
        let pcols = positions(parent, &fk.parent_columns)?;
        let ccols = positions(child, &fk.columns)?;
        // The old keys that are gone, each with its new key (None: deleted).
        let mut gone: Vec<(Vec<Value>, Option<Vec<Value>>)> = Vec::new();
        for (old, new) in rows {
            let old_key: Vec<Value> = pcols.iter().map(|&c| old[c].clone()).collect();
            if old_key.iter().any(Value::is_null) {
                continue;
            }
            let new_key = new.map(|n| pcols.iter().map(|&c| n[c].clone()).collect::<Vec<_>>());
            if new_key.as_ref() == Some(&old_key) {
                continue;
            }
            gone.push((old_key, new_key));
        }
        if gone.is_empty() {
            return Ok(());
        }
        let types: Vec<DataType> = ccols.iter().map(|&c| child.columns[c].ty).collect();
        for (deleted, action) in [(true, fk.on_delete), (false, fk.on_update)] {
            let w = ctx.txn.writer()?;
            let mut keys: Vec<&(Vec<Value>, Option<Vec<Value>>)> =
                gone.iter().filter(|(_, new)| new.is_none() == deleted).collect();
            if keys.is_empty() {
                continue;
            }
            if action == FkAction::NoAction {
                // Only an error if the key is not there again at the statement's end.
                let mut still = Vec::new();
                for k in keys {
                    if !parent_has(w, parent, &pcols, &k.0)? {
                        still.push(k);
                    }
                }
                keys = still;
            }
            let old_keys: Vec<Vec<Value>> = keys.iter().map(|k| k.0.clone()).collect();
            let found = referencing_rows(w, child, &ccols, &old_keys)?;
            if found.is_empty() {
                continue;
            }
            // The referenced (old key, new key) a referencing row's key stands for.
            let referenced = |row: &[Value]| {
                let key: Vec<Value> = ccols.iter().map(|&c| row[c].clone()).collect();
                keys.iter().find(|k| cast_key(&k.0, &types).as_ref() == Some(&key)).copied()
            };
            let checks = super::check::RowChecks::of(ctx, child)?;
            let mut deleted_rows = 0;
            for (tid, row) in found {
                let new_values: Option<Vec<Value>> = match action {
                    FkAction::NoAction | FkAction::Restrict => {
                        let key = match referenced(&row) {
                            Some(k) => k.0.clone(),
                            None => ccols.iter().map(|&c| row[c].clone()).collect(),
                        };
                        return Err(still_referenced(&parent.name, fk, &child.name, &key));
                    }
                    FkAction::Cascade if deleted => None,
                    FkAction::Cascade => {
                        let new = referenced(&row)
                            .and_then(|k| k.1.clone())
                            .ok_or_else(|| Error::internal("a cascaded row without its new key"))?;
                        let mut r = row.clone();
                        for (&c, v) in ccols.iter().zip(new) {
                            r[c] = v.cast_for_assignment(&child.columns[c].ty)?;
                        }
                        Some(r)
                    }
                    FkAction::SetNull => {
                        let mut r = row.clone();
                        for &c in &ccols {
                            r[c] = Value::Null;
                        }
                        Some(r)
                    }
                    FkAction::SetDefault => {
                        let mut r = row.clone();
                        for &c in &ccols {
                            r[c] = super::dml::default_value(ctx, child, c)?;
                        }
                        // The default is the key that went: the row would still refer
                        // to it (PostgreSQL's RI_FKey_setdefault_del checks again).
                        if let Some(k) = referenced(&r) {
                            return Err(still_referenced(&parent.name, fk, &child.name, &k.0));
                        }
                        Some(r)
                    }
                };
                let w = ctx.txn.writer()?;
                match &new_values {
                    None => {
                        xdml::delete_row(w, child, tid, &row)?;
                        deleted_rows += 1;
                    }
                    Some(new) => {
                        checks
                            .verify(ctx, child, new)
                            .and_then(|()| xdml::update_row(w, child, tid, &row, new))
                            .map_err(|e| super::dml::with_constraint_detail(e, child, new))?;
                        if action == FkAction::SetDefault {
                            self.to_check.push((child.id, new.clone()));
                        }
                    }
                }
                self.changed.push((child.id, row, new_values));
            }
            if deleted_rows > 0 {
                ctx.note_deletes(child, deleted_rows);
            }
        }
        Ok(())
    }
}

/// 23503 for a referencing row whose key is not in the referenced table.
pub fn not_present(child: &str, fk: &ForeignKeyDef, parent: &str, key: &[Value]) -> Error {
    Error::constraint(
        "23503",
        format!("insert or update on table \"{child}\" violates foreign key constraint \"{}\"", fk.name),
    )
    .with_detail(format!("{} is not present in table \"{parent}\".", key_detail(&fk.columns, key)))
}

fn still_referenced(parent: &str, fk: &ForeignKeyDef, child: &str, key: &[Value]) -> Error {
    Error::constraint(
        "23503",
        format!(
            "update or delete on table \"{parent}\" violates foreign key constraint \"{}\" on table \"{child}\"",
            fk.name
        ),
    )
    .with_detail(format!("{} is still referenced from table \"{child}\".", key_detail(&fk.parent_columns, key)))
}

/// A FOREIGN KEY clause bound against the catalog: the referenced table (`this`
/// when it names the table being created, given with its columns and indexes),
/// columns, actions and name. `columns` are the referencing columns (for a column's
/// REFERENCES, that column). `pending` are constraint names already taken by the
/// table being created.
pub fn bind(
    catalog: &Catalog,
    this: &TableDef,
    fk: &ast::ForeignKeyConstraint,
    name: Option<String>,
    columns: &[String],
    pending: &[&str],
) -> Result<ForeignKeyDef> {
    if let Some(m) = &fk.match_kind
        && !matches!(m, ast::ConstraintReferenceMatchKind::Simple)
    {
        return Err(Error::not_supported(format!("{m} is not supported (BeeDB's foreign keys are MATCH SIMPLE)")));
    }
    if let Some(ch) = &fk.characteristics {
        if ch.deferrable == Some(true) || matches!(ch.initially, Some(ast::DeferrableInitial::Deferred)) {
            return Err(Error::not_supported("deferrable foreign key constraints are not supported"));
        }
        if ch.enforced.is_some() {
            return Err(Error::not_supported("FOREIGN KEY … [NOT] ENFORCED is not supported"));
        }
    }
    if fk.index_name.is_some() {
        return Err(Error::not_supported("an index name in FOREIGN KEY is not supported"));
    }
    let pname = crate::binder::object_name(&fk.foreign_table)?;
    let parent: &TableDef = if pname == this.name {
        this
    } else {
        catalog.table(&pname).map(|t| &**t).ok_or_else(|| {
            if catalog.view(&pname).is_some() {
                Error::semantic("42809", format!("referenced relation \"{pname}\" is not a table"))
            } else {
                Error::undefined_table(&pname)
            }
        })?
    };
    let missing = |n: &str| {
        Error::undefined_column(n).with_message(format!("column \"{n}\" referenced in foreign key constraint does not exist"))
    };
    let ccols: Vec<usize> = columns.iter().map(|n| this.column_index(n).ok_or_else(|| missing(n))).collect::<Result<_>>()?;
    let pcols: Vec<usize> = if fk.referred_columns.is_empty() {
        let pk = parent.primary_key().ok_or_else(|| {
            Error::semantic("42830", format!("there is no primary key for referenced table \"{}\"", parent.name))
        })?;
        pk.columns.clone()
    } else {
        fk.referred_columns
            .iter()
            .map(|i| {
                let n = ident(i);
                parent.column_index(&n).ok_or_else(|| missing(&n))
            })
            .collect::<Result<_>>()?
    };
    if ccols.len() != pcols.len() {
        return Err(Error::semantic("42830", "number of referencing and referenced columns for foreign key disagree"));
    }
    let mut sorted = pcols.clone();
    sorted.sort_unstable();
    sorted.dedup();
    if sorted.len() != pcols.len() || unique_index_on(parent, &pcols).is_none() {
        return Err(no_unique_constraint(&parent.name));
    }
    let base = format!("{}_{}_fkey", this.name, columns.join("_"));
    let name = match name {
        Some(n) => {
            let clash = pending.contains(&n.as_str())
                || this.checks.iter().any(|c| c.name == n)
                || this.foreign_keys.iter().any(|f| f.name == n)
                || this.indexes.iter().any(|i| i.unique && i.name == n);
            if clash {
                return Err(Error::duplicate_object(
                    "42710",
                    format!("constraint \"{n}\" for relation \"{}\" already exists", this.name),
                ));
            }
            n
        }
        None => {
            let mut taken: Vec<&str> = pending.to_vec();
            taken.extend(this.foreign_keys.iter().map(|f| f.name.as_str()));
            catalog.fresh_constraint_name(&base, &taken)
        }
    };
    for (&c, &p) in ccols.iter().zip(&pcols) {
        let (a, b) = (this.columns[c].ty, parent.columns[p].ty);
        if !comparable(a, b) {
            return Err(Error::datatype_mismatch(format!("foreign key constraint \"{name}\" cannot be implemented"))
                .with_detail(format!(
                    "Key columns \"{}\" and \"{}\" are of incompatible types: {a} and {b}.",
                    this.columns[c].name, parent.columns[p].name
                )));
        }
    }
    let action = |a: &Option<ast::ReferentialAction>| match a {
        None | Some(ast::ReferentialAction::NoAction) => FkAction::NoAction,
        Some(ast::ReferentialAction::Restrict) => FkAction::Restrict,
        Some(ast::ReferentialAction::Cascade) => FkAction::Cascade,
        Some(ast::ReferentialAction::SetNull) => FkAction::SetNull,
        Some(ast::ReferentialAction::SetDefault) => FkAction::SetDefault,
    };
    Ok(ForeignKeyDef {
        name,
        columns: columns.to_vec(),
        parent: parent.id,
        parent_columns: pcols.iter().map(|&p| parent.columns[p].name.clone()).collect(),
        on_delete: action(&fk.on_delete),
        on_update: action(&fk.on_update),
    })
}

/// ALTER TABLE … ADD FOREIGN KEY: every existing row of `child` must find its key
/// (23503 as for an insert, naming the first row that does not).
pub fn validate_existing(ctx: &Ctx<'_>, child: &TableDef, parent: &TableDef, fk: &ForeignKeyDef, rows: &[Vec<Value>]) -> Result<()> {
    let ccols = positions(child, &fk.columns)?;
    let pcols = positions(parent, &fk.parent_columns)?;
    let w = ctx.txn.writer()?;
    for (i, row) in rows.iter().enumerate() {
        if i % super::dml::CHECK_EVERY == 0 {
            ctx.interrupt.check()?;
        }
        let key: Vec<Value> = ccols.iter().map(|&c| row[c].clone()).collect();
        if key.iter().any(Value::is_null) {
            continue;
        }
        if !parent_has(w, parent, &pcols, &key)? {
            return Err(not_present(&child.name, fk, &parent.name, &key));
        }
    }
    Ok(())
}

/// The first foreign key (referencing table, constraint) that reads column `column`
/// of table `t` as a referenced column.
pub fn referencing_column(catalog: &Catalog, t: &TableDef, column: &str) -> Option<(String, String)> {
    catalog
        .referencing(t.id)
        .into_iter()
        .find(|(_, fk)| fk.parent_columns.iter().any(|c| c == column))
        .map(|(c, fk)| (c.name.clone(), fk.name))
}

/// The first foreign key referencing `t` that finds no unique index on its
/// referenced columns in `t` (after an index was dropped from it).
pub fn orphaned_by(catalog: &Catalog, t: &TableDef) -> Option<(String, String)> {
    for (child, fk) in catalog.referencing(t.id) {
        let Ok(pcols) = positions(t, &fk.parent_columns) else { return Some((child.name.clone(), fk.name)) };
        if unique_index_on(t, &pcols).is_none() {
            return Some((child.name.clone(), fk.name));
        }
    }
    None
}
