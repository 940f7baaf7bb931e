//! CREATE, DROP and ALTER of tables, indexes and views.

use std::sync::Arc;

use beedb_storage::btree::BTree;
use beedb_storage::heap::HeapFile;
use sqlparser::ast;

use super::Ctx;
use super::check;
use super::fk;
use super::dml::affected;
use super::sequence;
use super::query::{optimize, optimize_with, run, stream};
use crate::binder::scope::Scope;
use crate::binder::types::data_type;
use crate::binder::{Binder, ident, object_name};
use crate::catalog::{CheckDef, ColumnDef, IndexDef, TableDef, ViewDef};
use crate::error::{Error, Result};
use crate::exec::dml as xdml;
use crate::plan::{Access, Node, OutputColumn, Plan};
use crate::session::QueryResult;
use crate::types::Value;

fn index_column_names(cols: &[ast::IndexColumn]) -> Result<Vec<String>> {
    cols.iter()
        .map(|c| match &c.column.expr {
            ast::Expr::Identifier(i) => Ok(ident(i)),
            other => Err(Error::not_supported(format!("index on expression {other}"))),
        })
        .collect()
}

fn resolve_columns(t: &TableDef, names: &[String]) -> Result<Vec<usize>> {
    names
        .iter()
        .map(|n| {
            t.column_index(n)
                .ok_or_else(|| Error::undefined_column(n))
        })
        .collect()
}

/// The column type of PostgreSQL's `smallserial` / `serial` / `bigserial` (and
/// `serial2` / `serial4` / `serial8`), which are not types but a column with its own
/// sequence.
fn serial_type(t: &ast::DataType) -> Option<crate::types::DataType> {
    let ast::DataType::Custom(name, modifiers) = t else { return None };
    if !modifiers.is_empty() {
        return None;
    }
    let [ast::ObjectNamePart::Identifier(i)] = name.0.as_slice() else { return None };
    match ident(i).as_str() {
        "smallserial" | "serial2" => Some(crate::types::DataType::SmallInt),
        "serial" | "serial4" => Some(crate::types::DataType::Integer),
        "bigserial" | "serial8" => Some(crate::types::DataType::BigInt),
        _ => None,
    }
}

pub fn create_table(ctx: &mut Ctx<'_>, c: &ast::CreateTable) -> Result<QueryResult> {
    if let Some(clause) = unsupported_create_table_clause(c) {
        return Err(Error::not_supported(format!("{clause} is not supported")));
    }
    let name = object_name(&c.name)?;
    if ctx.catalog().object_kind(&name).is_some() {
        if c.if_not_exists {
            return Ok(QueryResult::command("CREATE TABLE"));
        }
        return Err(Error::duplicate_object("42P07", format!("relation \"{name}\" already exists")));
    }
    if let Some(q) = &c.query {
        return create_table_as(ctx, &name, q, &c.columns);
    }
    let mut columns: Vec<ColumnDef> = Vec::new();
    // (columns, unique, primary, constraint name)
    let mut keys: Vec<(Vec<String>, bool, Option<String>)> = Vec::new();
    let catalog = ctx.txn.catalog.clone();
    // The table's id; the sequences of its SERIAL and identity columns take the
    // ids after it, once it is in the catalog.
    let table_id = ctx.catalog().next_id;
    let mut sequences: Vec<crate::catalog::SequenceDef> = Vec::new();
    // CHECK constraints as declared (name, expression), bound once the columns are known.
    let mut checks: Vec<(Option<String>, &ast::Expr)> = Vec::new();
    // FOREIGN KEYs as declared (name, referencing columns, clause), bound once the
    // table's columns and keys are known (it may reference itself).
    let mut foreign_keys: Vec<(Option<String>, Vec<String>, &ast::ForeignKeyConstraint)> = Vec::new();
    for cd in &c.columns {
        let cname = ident(&cd.name);
        if columns.iter().any(|x| x.name == cname) {
            return Err(Error::semantic("42701", format!("column \"{cname}\" specified more than once")));
        }
        let serial = serial_type(&cd.data_type);
        let ty = match serial {
            Some(ty) => ty,
            None => data_type(&cd.data_type)?,
        };
        let mut col = ColumnDef { name: cname.clone(), ty, not_null: serial.is_some(), default: None };
        // SERIAL: an integer column whose DEFAULT is its own sequence's nextval.
        let mut numbered = serial.is_some();
        if serial.is_some() {
            let q = sequence::for_column(ctx, &name, table_id, &cname, ty, None, &[], &sequences, None)?;
            col.default = Some(sequence::nextval_default(&q.name));
            sequences.push(q);
        }
        let mut has_default = false;
        // An identity's `SEQUENCE NAME`, which the parser carries as a tag.
        let named: Vec<&str> = cd
            .options
            .iter()
            .filter_map(|o| match &o.option {
                ast::ColumnOption::Tags(t) => Some(t.tags.iter()),
                _ => None,
            })
            .flatten()
            .filter(|g| g.key.to_string() == crate::parser::SEQUENCE_NAME_TAG)
            .map(|g| g.value.as_str())
            .collect();
        if named.len() > 1 {
            return Err(Error::syntax("conflicting or redundant options"));
        }
        let sequence_name = named.first().map(|n| sequence::sequence_name_as_written(n)).transpose()?;
        for o in &cd.options {
            match &o.option {
                ast::ColumnOption::NotNull => col.not_null = true,
                ast::ColumnOption::Null => {}
                ast::ColumnOption::Default(e) => {
                    if serial.is_some() || has_default {
                        return Err(Error::syntax(format!(
                            "multiple default values specified for column \"{cname}\" of table \"{name}\""
                        )));
                    }
                    if numbered {
                        return Err(Error::syntax(format!(
                            "both default and identity specified for column \"{cname}\" of table \"{name}\""
                        )));
                    }
                    has_default = true;
                    // Check it binds now, store its text.
                    let mut b = Binder::new(&catalog, ctx.sql, 0);
                    b.bind_assignment(Scope::default(), e, &cname, ty)?;
                    col.default = Some(e.to_string());
                }
                ast::ColumnOption::Generated { generated_as, sequence_options, generation_expr, .. } => {
                    let identity = match generated_as {
                        _ if generation_expr.is_some() => {
                            return Err(Error::not_supported("generated columns (GENERATED ALWAYS AS (expression)) are not supported"));
                        }
                        ast::GeneratedAs::Always => crate::catalog::Identity::Always,
                        ast::GeneratedAs::ByDefault => crate::catalog::Identity::ByDefault,
                        ast::GeneratedAs::ExpStored => {
                            return Err(Error::not_supported("generated columns are not supported"));
                        }
                    };
                    if numbered {
                        return Err(Error::syntax(format!(
                            "multiple identity specifications for column \"{cname}\" of table \"{name}\""
                        )));
                    }
                    if has_default {
                        return Err(Error::syntax(format!(
                            "both default and identity specified for column \"{cname}\" of table \"{name}\""
                        )));
                    }
                    if !matches!(ty, crate::types::DataType::SmallInt | crate::types::DataType::Integer | crate::types::DataType::BigInt) {
                        return Err(Error::semantic("22023", "identity column type must be smallint, integer, or bigint"));
                    }
                    numbered = true;
                    let options = sequence_options.as_deref().unwrap_or(&[]);
                    let q = sequence::for_column(ctx, &name, table_id, &cname, ty, Some(identity), options, &sequences, sequence_name.as_deref())?;
                    col.default = Some(sequence::nextval_default(&q.name));
                    col.not_null = true;
                    sequences.push(q);
                }
                ast::ColumnOption::PrimaryKey(pk) => {
                    key_clauses_supported(pk.characteristics.as_ref(), &pk.include, ast::NullsDistinctOption::None)?;
                    col.not_null = true;
                    keys.push((vec![cname.clone()], true, o.name.as_ref().map(ident)));
                }
                ast::ColumnOption::Unique(u) => {
                    key_clauses_supported(u.characteristics.as_ref(), &u.include, u.nulls_distinct)?;
                    keys.push((vec![cname.clone()], false, o.name.as_ref().map(ident)));
                }
                ast::ColumnOption::Check(ck) => {
                    checks.push((check_name(o.name.as_ref().or(ck.name.as_ref()), ck)?, &ck.expr));
                }
                ast::ColumnOption::ForeignKey(fk) => {
                    if fk.referred_columns.len() > 1 {
                        return Err(Error::semantic(
                            "42830",
                            "number of referencing and referenced columns for foreign key disagree",
                        ));
                    }
                    foreign_keys.push((o.name.as_ref().or(fk.name.as_ref()).map(ident), vec![cname.clone()], fk));
                }
                ast::ColumnOption::Tags(t) if t.tags.iter().all(|g| g.key.to_string() == crate::parser::SEQUENCE_NAME_TAG) => {}
                other => return Err(Error::not_supported(format!("column option {other}"))),
            }
        }
        columns.push(col);
    }
    if columns.is_empty() {
        return Err(Error::not_supported("a table without columns"));
    }
    for tc in &c.constraints {
        match tc {
            ast::TableConstraint::PrimaryKey(pk) => {
                key_clauses_supported(pk.characteristics.as_ref(), &pk.include, ast::NullsDistinctOption::None)?;
                let names = index_column_names(&pk.columns)?;
                for n in &names {
                    match columns.iter_mut().find(|c| c.name == *n) {
                        Some(c) => c.not_null = true,
                        None => {
                            return Err(Error::undefined_column(n)
                                .with_message(format!("column \"{n}\" named in key does not exist")));
                        }
                    }
                }
                keys.push((names, true, pk.name.as_ref().map(ident)));
            }
            ast::TableConstraint::Unique(u) => {
                key_clauses_supported(u.characteristics.as_ref(), &u.include, u.nulls_distinct)?;
                keys.push((index_column_names(&u.columns)?, false, u.name.as_ref().map(ident)));
            }
            ast::TableConstraint::Check(ck) => checks.push((check_name(ck.name.as_ref(), ck)?, &ck.expr)),
            ast::TableConstraint::ForeignKey(fk) => {
                let cols: Vec<String> = fk.columns.iter().map(ident).collect();
                foreign_keys.push((fk.name.as_ref().map(ident), cols, fk));
            }
            other => return Err(Error::not_supported(format!("table constraint {other}"))),
        }
    }
    let mut check_defs: Vec<CheckDef> = Vec::new();
    for (cname, e) in checks {
        let (bound, expr) = check::bind_new(&catalog, ctx.sql, &name, &columns, e)?;
        let cname = match cname {
            Some(n) if check_defs.iter().any(|c| c.name == n) => {
                return Err(Error::duplicate_object("42710", format!("check constraint \"{n}\" already exists")));
            }
            Some(n) => n,
            None => {
                let pending: Vec<&str> = check_defs.iter().map(|c| c.name.as_str()).collect();
                check::default_name(&catalog, &name, &columns, &bound, &pending)
            }
        };
        check_defs.push(CheckDef { name: cname, expr });
    }
    if keys.iter().filter(|k| k.1).count() > 1 {
        return Err(Error::semantic("42P16", format!("multiple primary keys for table \"{name}\" are not allowed")));
    }
    let w = ctx.txn.writer()?;
    let heap = HeapFile::create(w)?;
    let id = table_id;
    let mut table = TableDef::new(id, name.clone(), columns, heap.first_page, vec![])?;
    for c in check_defs {
        table.add_check(c);
    }
    for (names, primary, cname) in keys {
        let cols = resolve_columns(&table, &names)?;
        let cat = ctx.catalog();
        let iname = match cname {
            Some(n) => {
                cat.check_name_free(&n)?;
                n
            }
            None if primary => cat.fresh_index_name(&format!("{name}_pkey")),
            None => cat.fresh_index_name(&format!("{name}_{}_key", names.join("_"))),
        };
        if table.indexes.iter().any(|i| i.name == iname) {
            return Err(Error::duplicate_object("42P07", format!("relation \"{iname}\" already exists")));
        }
        let tree = BTree::create(ctx.txn.writer()?, false)?;
        table.indexes.push(IndexDef { name: iname, columns: cols, unique: true, primary, root: tree.root(), clustered: false });
    }
    for (fname, cols, clause) in foreign_keys {
        let pending: Vec<&str> = table.checks.iter().map(|c| c.name.as_str()).collect();
        let def = fk::bind(ctx.catalog(), &table, clause, fname, &cols, &pending)?;
        table.foreign_keys.push(def);
    }
    ctx.txn.catalog_mut().next_id += 1;
    ctx.make_relation_bees(&table)?;
    let cat = ctx.txn.catalog_mut();
    cat.tables.insert(name, Arc::new(table));
    for q in sequences {
        sequence::add(ctx, q)?;
    }
    Ok(QueryResult::command("CREATE TABLE"))
}

/// The name a CHECK constraint was given, if any; clauses BeeDB does not keep are refused.
fn check_name(name: Option<&ast::Ident>, ck: &ast::CheckConstraint) -> Result<Option<String>> {
    if ck.no_inherit {
        return Err(Error::not_supported("CHECK … NO INHERIT is not supported (BeeDB has no table inheritance)"));
    }
    if ck.enforced.is_some() {
        return Err(Error::not_supported("CHECK … [NOT] ENFORCED is not supported"));
    }
    Ok(name.map(ident))
}

fn constraint_exists(constraint: &str, table: &str) -> Error {
    Error::duplicate_object("42710", format!("constraint \"{constraint}\" for relation \"{table}\" already exists"))
}

fn create_table_as(ctx: &mut Ctx<'_>, name: &str, q: &ast::Query, cols: &[ast::ColumnDef]) -> Result<QueryResult> {
    let catalog = ctx.txn.catalog.clone();
    let mut binder = Binder::new(&catalog, ctx.sql, ctx.params.len());
    binder.functions = Some(ctx.functions);
    let plan = binder.bind_query(q)?;
    let mut columns: Vec<ColumnDef> = Vec::new();
    for (i, c) in plan.schema.iter().enumerate() {
        let cname = cols.get(i).map(|c| ident(&c.name)).unwrap_or_else(|| c.name.clone());
        if columns.iter().any(|x| x.name == cname) {
            return Err(Error::semantic("42701", format!("column \"{cname}\" specified more than once")));
        }
        columns.push(ColumnDef { name: cname, ty: c.ty, not_null: false, default: None });
    }
    let bq = optimize_with(ctx, plan, binder.into_subqueries(), ctx.params)?;
    let w = ctx.txn.writer()?;
    let heap = HeapFile::create(w)?;
    let cat = ctx.txn.catalog_mut();
    let id = cat.next_id;
    cat.next_id += 1;
    let table = Arc::new(TableDef::new(id, name.to_string(), columns, heap.first_page, vec![])?);
    cat.tables.insert(name.to_string(), table.clone());
    // The rows are written as the query makes them, so the statement holds one batch,
    // not its whole result (memory_limit). The query was bound before the table
    // existed, so it cannot read the rows it writes.
    // The form bee's maker follows the table's expected size (`row_former`): the
    // query's estimated rows until the rows are counted.
    let id = table.id as u64;
    ctx.txn.remember_relation_size(id, ctx.bee_cache);
    let estimate = bq.plan.est.map_or(0, |e| e.rows as u64);
    let w = ctx.txn.writer()?;
    let mut former = None;
    let mut count = 0usize;
    stream(ctx, &bq, ctx.params, &mut |b| {
        for k in 0..b.rows() {
            if count % super::dml::CHECK_EVERY == 0 {
                ctx.interrupt.check()?;
            }
            count += 1;
            if count == super::FORM_BEE_MIN_ROWS {
                ctx.bee_cache.note_relation_size(id, estimate.max(count as u64));
                former = ctx.row_former(&table, count)?;
            }
            xdml::insert_row_with(w, &table, &b.row_values(k), former.as_mut())?;
        }
        Ok(true)
    })?;
    // The estimate gives way to the count.
    ctx.bee_cache.restore_relation_size(id, 0);
    ctx.note_inserts(&table, count);
    ctx.store_relation_size(&table);
    super::analyze::analyze_if_stale(ctx, &table)?;
    Ok(affected(format!("SELECT {count}"), count))
}

pub fn create_index(ctx: &mut Ctx<'_>, c: &ast::CreateIndex) -> Result<QueryResult> {
    if c.predicate.is_some() || !c.include.is_empty() {
        return Err(Error::not_supported("partial or covering indexes are not supported"));
    }
    // Clauses that would change what the index enforces or how it is stored are
    // refused rather than ignored (a `NULLS NOT DISTINCT` index that let a second
    // NULL in would be a wrong answer). CONCURRENTLY only changes locking, which a
    // single-writer engine needs no less of: accepted.
    if c.nulls_distinct == Some(false) {
        return Err(Error::not_supported("NULLS NOT DISTINCT is not supported"));
    }
    if let Some(using) = &c.using
        && !using.to_string().eq_ignore_ascii_case("btree")
    {
        let method = using.to_string().to_ascii_lowercase();
        return Err(Error::not_supported(format!("index method \"{method}\" is not supported (BeeDB's indexes are B-trees)")));
    }
    if !c.with.is_empty() || !c.index_options.is_empty() || !c.alter_options.is_empty() {
        return Err(Error::not_supported("index storage options are not supported"));
    }
    let tname = object_name(&c.table_name)?;
    let table = ctx.catalog().table(&tname).cloned().ok_or_else(|| Error::undefined_table(&tname))?;
    let names = index_column_names(&c.columns)?;
    let cols = resolve_columns(&table, &names)?;
    let iname = match &c.name {
        Some(n) => {
            let n = object_name(n)?;
            if ctx.catalog().object_kind(&n).is_some() {
                if c.if_not_exists {
                    return Ok(QueryResult::command("CREATE INDEX"));
                }
                return Err(Error::duplicate_object("42P07", format!("relation \"{n}\" already exists")));
            }
            n
        }
        None => ctx.catalog().fresh_index_name(&format!("{tname}_{}_idx", names.join("_"))),
    };
    let w = ctx.txn.writer()?;
    let tree = BTree::create(w, false)?;
    let index = IndexDef { name: iname, columns: cols, unique: c.unique, primary: false, root: tree.root(), clustered: false };
    let mut t2 = (*table).clone();
    t2.indexes.push(index);
    let pos = t2.indexes.len() - 1;
    xdml::create_index_entries(w, &t2, pos, ctx.memory_limit, &ctx.interrupt)?;
    let t2 = Arc::new(t2);
    ctx.txn.catalog_mut().tables.insert(tname, t2.clone());
    super::analyze::analyze_if_stale(ctx, &t2)?;
    Ok(QueryResult::command("CREATE INDEX"))
}

pub fn create_view(ctx: &mut Ctx<'_>, v: &ast::CreateView) -> Result<QueryResult> {
    if v.materialized || v.or_replace {
        return Err(Error::not_supported("materialized views / OR REPLACE"));
    }
    // Refused, not ignored: a temporary view would outlive the session, and the
    // other clauses would change nothing.
    let clauses: [(bool, &str); 8] = [
        (v.temporary, "CREATE TEMPORARY VIEW"),
        (v.options != ast::CreateTableOptions::None, "CREATE VIEW … WITH (options)"),
        (v.or_alter, "CREATE OR ALTER VIEW"),
        (v.secure, "CREATE SECURE VIEW"),
        (v.comment.is_some(), "a view COMMENT in CREATE VIEW"),
        (!v.cluster_by.is_empty() || v.to.is_some() || v.params.is_some(), "this kind of CREATE VIEW"),
        (v.with_no_schema_binding, "WITH NO SCHEMA BINDING"),
        (v.copy_grants, "COPY GRANTS"),
    ];
    if let Some((_, what)) = clauses.iter().find(|(on, _)| *on) {
        return Err(Error::not_supported(*what));
    }
    let name = object_name(&v.name)?;
    if ctx.catalog().object_kind(&name).is_some() {
        if v.if_not_exists {
            return Ok(QueryResult::command("CREATE VIEW"));
        }
        return Err(Error::duplicate_object("42P07", format!("relation \"{name}\" already exists")));
    }
    let catalog = ctx.txn.catalog.clone();
    let mut binder = Binder::new(&catalog, ctx.sql, 0);
    let plan = binder.bind_query(&v.query)?;
    let columns: Vec<String> = v.columns.iter().map(|c| ident(&c.name)).collect();
    if columns.len() > plan.schema.len() {
        return Err(Error::semantic("42601", "CREATE VIEW specifies more column names than columns"));
    }
    let mut seen: Vec<String> = Vec::new();
    for (i, c) in plan.schema.iter().enumerate() {
        let n = columns.get(i).cloned().unwrap_or_else(|| c.name.clone());
        if seen.contains(&n) {
            return Err(Error::semantic("42701", format!("column \"{n}\" specified more than once")));
        }
        seen.push(n);
    }
    let def = ViewDef { name: name.clone(), query: v.query.to_string(), columns };
    ctx.txn.catalog_mut().views.insert(name, Arc::new(def));
    Ok(QueryResult::command("CREATE VIEW"))
}

pub(super) fn drop_table_storage(ctx: &Ctx<'_>, t: &TableDef) -> Result<()> {
    let w = ctx.txn.writer()?;
    for i in &t.indexes {
        BTree::open(i.root).drop_tree(w)?;
    }
    HeapFile::open(t.heap).drop_heap(w, &t.layout)?;
    Ok(())
}

pub fn drop(
    ctx: &mut Ctx<'_>,
    kind: &ast::ObjectType,
    if_exists: bool,
    names: &[ast::ObjectName],
    cascade: bool,
) -> Result<QueryResult> {
    let (tag, what) = match kind {
        ast::ObjectType::Table => ("DROP TABLE", "table"),
        ast::ObjectType::View => ("DROP VIEW", "view"),
        ast::ObjectType::Index => ("DROP INDEX", "index"),
        other => return Err(Error::not_supported(format!("DROP {other}"))),
    };
    let all: Vec<String> = names.iter().map(object_name).collect::<Result<_>>()?;
    for n in names {
        let name = object_name(n)?;
        let found = match kind {
            ast::ObjectType::Table => ctx.catalog().table(&name).cloned().map(|t| {
                drop_foreign_keys_to(ctx, &t, &all, cascade)?;
                let r = drop_table_storage(ctx, &t);
                r.map(|_| {
                    ctx.txn.catalog_mut().tables.remove(&name);
                    // The sequences of its SERIAL and identity columns go with it.
                    sequence::drop_owned(ctx, t.id, None);
                })
            }),
            ast::ObjectType::View => ctx.catalog().view(&name).cloned().map(|_| {
                ctx.txn.catalog_mut().views.remove(&name);
                Ok(())
            }),
            _ => ctx.catalog().index(&name).map(|(t, pos)| (t.clone(), pos)).map(|(t, pos)| {
                if t.indexes[pos].primary {
                    return Err(Error::semantic(
                        "2BP01",
                        format!("cannot drop index {name} because constraint {name} on table {} requires it", t.name),
                    ));
                }
                let mut t2 = (*t).clone();
                t2.indexes.remove(pos);
                if let Some((child, fk)) = fk::orphaned_by(ctx.catalog(), &t2) {
                    return Err(Error::semantic(
                        "2BP01",
                        format!("cannot drop index {name} because other objects depend on it"),
                    )
                    .with_detail(format!("constraint {fk} on table {child} depends on index {name}")));
                }
                BTree::open(t.indexes[pos].root).drop_tree(ctx.txn.writer()?)?;
                ctx.txn.catalog_mut().tables.insert(t2.name.clone(), Arc::new(t2));
                Ok(())
            }),
        };
        match found {
            Some(r) => r?,
            None if if_exists => {}
            None => {
                let wrong_kind = ctx.catalog().object_kind(&name).is_some();
                return Err(if wrong_kind {
                    Error::semantic("42809", format!("\"{name}\" is not a {what}"))
                } else {
                    Error::semantic("42P01", format!("{what} \"{name}\" does not exist"))
                }
                .at(ctx_pos(ctx, n)));
            }
        }
    }
    Ok(QueryResult::command(tag))
}

/// DROP TABLE of `t`: the foreign keys of other tables that reference it (tables
/// not dropped by the same statement, `dropped`) are dropped with CASCADE, else an
/// error (2BP01), as in PostgreSQL.
fn drop_foreign_keys_to(ctx: &mut Ctx<'_>, t: &TableDef, dropped: &[String], cascade: bool) -> Result<()> {
    let dependents: Vec<(Arc<TableDef>, crate::catalog::ForeignKeyDef)> = ctx
        .catalog()
        .referencing(t.id)
        .into_iter()
        .filter(|(c, _)| c.id != t.id && !dropped.contains(&c.name))
        .collect();
    let Some((child, fk)) = dependents.first() else { return Ok(()) };
    if !cascade {
        return Err(Error::semantic("2BP01", format!("cannot drop table {} because other objects depend on it", t.name))
            .with_detail(format!("constraint {} on table {} depends on table {}", fk.name, child.name, t.name))
            .with_hint("Use DROP ... CASCADE to drop the dependent objects too."));
    }
    for (child, fk) in dependents {
        let current = ctx.catalog().table(&child.name).cloned().unwrap_or(child);
        let mut c2 = (*current).clone();
        c2.foreign_keys.retain(|f| f.name != fk.name);
        ctx.txn.catalog_mut().tables.insert(c2.name.clone(), Arc::new(c2));
    }
    Ok(())
}

fn ctx_pos(ctx: &Ctx<'_>, n: &ast::ObjectName) -> Option<usize> {
    crate::parser::span_offset(ctx.sql, sqlparser::ast::Spanned::span(n))
}

pub fn alter_table(ctx: &mut Ctx<'_>, a: &ast::AlterTable) -> Result<QueryResult> {
    let name = object_name(&a.name)?;
    for op in &a.operations {
        let Some(table) = ctx.catalog().table(&name).cloned() else {
            if a.if_exists {
                return Ok(QueryResult::command("ALTER TABLE"));
            }
            return Err(Error::undefined_table(&name).at(ctx_pos(ctx, &a.name)));
        };
        match op {
            ast::AlterTableOperation::RenameTable { table_name } => {
                let new = match table_name {
                    ast::RenameTableNameKind::As(n) | ast::RenameTableNameKind::To(n) => object_name(n)?,
                };
                ctx.catalog().check_name_free(&new)?;
                let mut t2 = (*table).clone();
                t2.name = new.clone();
                let cat = ctx.txn.catalog_mut();
                cat.tables.remove(&name);
                cat.tables.insert(new, Arc::new(t2));
                return Ok(QueryResult::command("ALTER TABLE"));
            }
            ast::AlterTableOperation::RenameColumn { old_column_name, new_column_name } => {
                let old = ident(old_column_name);
                let new = ident(new_column_name);
                let c = table.column_index(&old).ok_or_else(|| Error::undefined_column(&old))?;
                if table.column_index(&new).is_some() {
                    return Err(Error::semantic("42701", format!("column \"{new}\" of relation \"{name}\" already exists")));
                }
                let mut t2 = (*table).clone();
                t2.columns[c].name = new.clone();
                for ck in &mut t2.checks {
                    ck.expr = check::rename_column(&ck.expr, &old, &new)?;
                }
                let rename = |cols: &mut Vec<String>| cols.iter_mut().filter(|c| **c == old).for_each(|c| *c = new.clone());
                for f in &mut t2.foreign_keys {
                    rename(&mut f.columns);
                    if f.parent == table.id {
                        rename(&mut f.parent_columns);
                    }
                }
                ctx.txn.catalog_mut().tables.insert(name.clone(), Arc::new(t2));
                // Foreign keys of other tables referencing the column.
                for (child, _) in ctx.catalog().referencing(table.id) {
                    if child.id == table.id {
                        continue;
                    }
                    let current = ctx.catalog().table(&child.name).cloned().unwrap_or(child);
                    let mut c2 = (*current).clone();
                    for f in c2.foreign_keys.iter_mut().filter(|f| f.parent == table.id) {
                        rename(&mut f.parent_columns);
                    }
                    ctx.txn.catalog_mut().tables.insert(c2.name.clone(), Arc::new(c2));
                }
                sequence::rename_owner_column(ctx, table.id, &old, &new);
            }
            ast::AlterTableOperation::AddColumn { if_not_exists, column_def, .. } => {
                let cname = ident(&column_def.name);
                if table.column_index(&cname).is_some() {
                    if *if_not_exists {
                        continue;
                    }
                    return Err(Error::semantic("42701", format!("column \"{cname}\" of relation \"{name}\" already exists")));
                }
                if serial_type(&column_def.data_type).is_some() {
                    return Err(Error::not_supported("ADD COLUMN of a SERIAL column is not supported"));
                }
                let ty = data_type(&column_def.data_type)?;
                let mut col = ColumnDef { name: cname.clone(), ty, not_null: false, default: None };
                for o in &column_def.options {
                    match &o.option {
                        ast::ColumnOption::NotNull => col.not_null = true,
                        ast::ColumnOption::Null => {}
                        ast::ColumnOption::Default(e) => col.default = Some(e.to_string()),
                        other => return Err(Error::not_supported(format!("ADD COLUMN with {other}"))),
                    }
                }
                // The value existing rows get: the default, evaluated once.
                let mut t_tmp = (*table).clone();
                t_tmp.columns.push(col.clone());
                // PostgreSQL numbers existing rows with a DEFAULT that calls nextval;
                // BeeDB would give them all one value, so it refuses instead.
                let fill = match super::dml::RowDefault::of(ctx, &t_tmp, t_tmp.columns.len() - 1)? {
                    super::dml::RowDefault::Once(v) => v,
                    super::dml::RowDefault::PerRow(_) => {
                        return Err(Error::not_supported(
                            "ADD COLUMN with a DEFAULT that calls a sequence function is not supported",
                        ));
                    }
                };
                if col.not_null && fill.is_null() && table_has_rows(ctx, &table)? {
                    return Err(Error::constraint("23502", format!("column \"{cname}\" of relation \"{name}\" contains null values")));
                }
                let mut columns = table.columns.clone();
                columns.push(col);
                rewrite_table(ctx, &table, columns, |row| {
                    let mut r = row.to_vec();
                    r.push(fill.clone());
                    r
                }, None)?;
            }
            ast::AlterTableOperation::DropColumn { column_names, if_exists, .. } => {
                let mut table = table;
                for cn in column_names {
                    let cname = ident(cn);
                    let Some(c) = table.column_index(&cname) else {
                        if *if_exists {
                            continue;
                        }
                        return Err(Error::undefined_column(&cname)
                            .with_message(format!("column \"{cname}\" of relation \"{name}\" does not exist")));
                    };
                    if let Some((child, fk)) = fk::referencing_column(ctx.catalog(), &table, &cname) {
                        return Err(Error::semantic(
                            "2BP01",
                            format!("cannot drop column {cname} of table {name} because other objects depend on it"),
                        )
                        .with_detail(format!("constraint {fk} on table {child} depends on column {cname} of table {name}"))
                        .with_hint("Use DROP ... CASCADE to drop the dependent objects too."));
                    }
                    if table.columns.len() == 1 {
                        return Err(Error::not_supported("dropping the last column of a table"));
                    }
                    sequence::drop_owned(ctx, table.id, Some(&cname));
                    let mut columns = table.columns.clone();
                    columns.remove(c);
                    rewrite_table(ctx, &table, columns, |row| {
                        let mut r = row.to_vec();
                        r.remove(c);
                        r
                    }, Some(c))?;
                    table = ctx.catalog().table(&name).cloned().expect("rewritten table");
                }
            }
            ast::AlterTableOperation::AddConstraint { constraint: ast::TableConstraint::Check(ck), not_valid } => {
                if *not_valid {
                    return Err(Error::not_supported("ADD CONSTRAINT … NOT VALID is not supported"));
                }
                add_check(ctx, &table, check_name(ck.name.as_ref(), ck)?, &ck.expr)?;
            }
            ast::AlterTableOperation::AddConstraint { constraint: ast::TableConstraint::ForeignKey(clause), not_valid } => {
                if *not_valid {
                    return Err(Error::not_supported("ADD CONSTRAINT … NOT VALID is not supported"));
                }
                let cols: Vec<String> = clause.columns.iter().map(ident).collect();
                let def = fk::bind(ctx.catalog(), &table, clause, clause.name.as_ref().map(ident), &cols, &[])?;
                let mut t2 = (*table).clone();
                t2.foreign_keys.push(def.clone());
                let parent = if def.parent == table.id {
                    Arc::new(t2.clone())
                } else {
                    ctx.catalog().table_by_id(def.parent).cloned().ok_or_else(|| Error::internal("referenced table vanished"))?
                };
                let rows = scan_all(ctx, &table)?;
                fk::validate_existing(ctx, &t2, &parent, &def, &rows)?;
                ctx.txn.catalog_mut().tables.insert(name.clone(), Arc::new(t2));
            }
            ast::AlterTableOperation::DropConstraint { if_exists, name: cn, .. } => {
                let cname = ident(cn);
                let mut t2 = (*table).clone();
                if let Some(k) = t2.checks.iter().position(|c| c.name == cname) {
                    t2.checks.remove(k);
                } else if let Some(k) = t2.foreign_keys.iter().position(|f| f.name == cname) {
                    t2.foreign_keys.remove(k);
                } else if let Some(k) = t2.indexes.iter().position(|i| i.name == cname && i.unique) {
                    // A UNIQUE or PRIMARY KEY constraint: its index goes with it, unless a
                    // foreign key needs it.
                    let root = t2.indexes[k].root;
                    t2.indexes.remove(k);
                    if let Some((child, fk)) = fk::orphaned_by(ctx.catalog(), &t2) {
                        return Err(Error::semantic(
                            "2BP01",
                            format!("cannot drop constraint {cname} on table {name} because other objects depend on it"),
                        )
                        .with_detail(format!("constraint {fk} on table {child} depends on index {cname}"))
                        .with_hint("Use DROP ... CASCADE to drop the dependent objects too."));
                    }
                    BTree::open(root).drop_tree(ctx.txn.writer()?)?;
                } else if *if_exists {
                    continue;
                } else {
                    return Err(Error::semantic(
                        "42704",
                        format!("constraint \"{cname}\" of relation \"{name}\" does not exist"),
                    ));
                }
                ctx.txn.catalog_mut().tables.insert(name.clone(), Arc::new(t2));
            }
            other => return Err(Error::not_supported(format!("ALTER TABLE {other}"))),
        }
    }
    Ok(QueryResult::command("ALTER TABLE"))
}

/// ALTER TABLE … ADD [CONSTRAINT name] CHECK (expr): bound and named as in CREATE
/// TABLE, then tested on every existing row (23514 if one fails, as PostgreSQL).
fn add_check(ctx: &mut Ctx<'_>, table: &Arc<TableDef>, cname: Option<String>, e: &ast::Expr) -> Result<()> {
    let catalog = ctx.txn.catalog.clone();
    let (bound, expr) = check::bind_new(&catalog, ctx.sql, &table.name, &table.columns, e)?;
    let cname = match cname {
        Some(n) if table.checks.iter().any(|c| c.name == n) || table.indexes.iter().any(|i| i.unique && i.name == n) => {
            return Err(constraint_exists(&n, &table.name));
        }
        Some(n) => n,
        None => check::default_name(&catalog, &table.name, &table.columns, &bound, &[]),
    };
    let mut t2 = (**table).clone();
    t2.checks.clear();
    t2.add_check(CheckDef { name: cname.clone(), expr });
    let only_new = check::RowChecks::of(ctx, &t2)?;
    for row in scan_all(ctx, table)? {
        if only_new.failing(ctx, &row)?.is_some() {
            return Err(Error::constraint(
                "23514",
                format!("check constraint \"{cname}\" of relation \"{}\" is violated by some row", table.name),
            ));
        }
    }
    let new_check = t2.checks.pop().expect("the new check");
    let mut t2 = (**table).clone();
    t2.add_check(new_check);
    ctx.txn.catalog_mut().tables.insert(table.name.clone(), Arc::new(t2));
    Ok(())
}

fn table_has_rows(ctx: &Ctx<'_>, t: &Arc<TableDef>) -> Result<bool> {
    Ok(!scan_all(ctx, t)?.is_empty())
}

fn scan_all(ctx: &Ctx<'_>, t: &Arc<TableDef>) -> Result<Vec<Vec<Value>>> {
    let schema = t.columns.iter().map(|c| OutputColumn { name: c.name.clone(), ty: c.ty }).collect::<Vec<_>>();
    let plan = Plan::new(
        Node::TableScan {
            table: t.clone(),
            columns: (0..t.columns.len()).collect(),
            filter: None,
            access: Access::Heap,
            with_tid: false,
            bees: None,
        },
        schema,
    );
    run(ctx, &optimize(plan, vec![], &ctx.optimizer, &crate::optimizer::NoStats), &[], None)
}

/// Rewrites a table with new columns: a new heap and new indexes, rows mapped by
/// `map`. Indexes on a dropped column (`dropped`) are dropped; other index column
/// positions shift.
fn rewrite_table(
    ctx: &mut Ctx<'_>,
    old: &Arc<TableDef>,
    columns: Vec<ColumnDef>,
    map: impl Fn(&[Value]) -> Vec<Value>,
    dropped: Option<usize>,
) -> Result<()> {
    let rows = scan_all(ctx, old)?;
    let w = ctx.txn.writer()?;
    let heap = HeapFile::create(w)?;
    let mut indexes = Vec::new();
    for i in &old.indexes {
        if dropped.is_some_and(|d| i.columns.contains(&d)) {
            continue;
        }
        let cols = i.columns.iter().map(|&c| if dropped.is_some_and(|d| c > d) { c - 1 } else { c }).collect();
        let tree = BTree::create(w, false)?;
        indexes.push(IndexDef { name: i.name.clone(), columns: cols, unique: i.unique, primary: i.primary, root: tree.root(), clustered: i.clustered });
    }
    let mut new = TableDef::new(old.id, old.name.clone(), columns, heap.first_page, indexes)?;
    // CHECK constraints on a dropped column go with it, as in PostgreSQL.
    new.checks = old
        .checks
        .iter()
        .filter(|c| dropped.is_none_or(|d| !check::reads_column(&c.expr, &old.columns[d].name)))
        .cloned()
        .collect();
    // So do FOREIGN KEYs on it (a referenced column cannot be dropped).
    new.foreign_keys = old
        .foreign_keys
        .iter()
        .filter(|f| dropped.is_none_or(|d| !f.columns.contains(&old.columns[d].name)))
        .cloned()
        .collect();
    let new = Arc::new(new);
    for r in &rows {
        xdml::insert_row(w, &new, &map(r))?;
    }
    drop_table_storage(ctx, old)?;
    ctx.make_relation_bees(&new)?;
    ctx.txn.catalog_mut().tables.insert(old.name.clone(), new);
    Ok(())
}

/// The clause of `CREATE TABLE` that BeeDB parses but does not implement, if `c` has
/// one: refused (0A000) instead of ignored, so that nobody gets a permanent table
/// they asked to be temporary, or a table without the partitioning or inheritance
/// they declared. SQLite's `WITHOUT ROWID` and `STRICT` are accepted: BeeDB has no
/// rowids and its columns are always typed strictly, so they change nothing.
fn unsupported_create_table_clause(c: &ast::CreateTable) -> Option<&'static str> {
    let clauses: [(bool, &'static str); 27] = [
        (c.or_replace, "CREATE OR REPLACE TABLE"),
        (c.temporary, "CREATE TEMPORARY TABLE"),
        (c.unlogged, "CREATE UNLOGGED TABLE"),
        (c.external, "CREATE EXTERNAL TABLE"),
        (c.global.is_some(), "CREATE GLOBAL or LOCAL TABLE"),
        (c.dynamic || c.transient || c.volatile || c.iceberg || c.snapshot, "this kind of CREATE TABLE"),
        (c.like.is_some(), "CREATE TABLE ... LIKE"),
        (c.clone.is_some(), "CREATE TABLE ... CLONE"),
        (c.inherits.is_some(), "INHERITS"),
        (c.partition_of.is_some() || c.for_values.is_some(), "PARTITION OF"),
        (c.partition_by.is_some(), "PARTITION BY"),
        (c.on_commit.is_some(), "ON COMMIT"),
        (c.table_options != ast::CreateTableOptions::None, "table options (WITH (...), storage parameters, TABLESPACE)"),
        (c.hive_distribution != ast::HiveDistributionStyle::NONE, "PARTITIONED BY"),
        (c.hive_formats.is_some(), "ROW FORMAT, STORED AS, LOCATION"),
        (c.file_format.is_some() || c.location.is_some(), "STORED AS, LOCATION"),
        (c.version.is_some(), "a table version clause"),
        (c.comment.is_some(), "a table COMMENT in CREATE TABLE"),
        (c.on_cluster.is_some(), "ON CLUSTER"),
        (c.primary_key.is_some() || c.order_by.is_some(), "PRIMARY KEY or ORDER BY after the column list"),
        (c.cluster_by.is_some() || c.clustered_by.is_some(), "CLUSTER BY in CREATE TABLE (use CLUSTER)"),
        (c.copy_grants, "COPY GRANTS"),
        (c.enable_schema_evolution.is_some() || c.change_tracking.is_some(), "table properties"),
        (c.data_retention_time_in_days.is_some() || c.max_data_extension_time_in_days.is_some(), "table properties"),
        (c.with_aggregation_policy.is_some() || c.with_row_access_policy.is_some(), "row access and aggregation policies"),
        (c.with_tags.is_some() || c.with_storage_lifecycle_policy.is_some(), "table tags and policies"),
        (c.external_volume.is_some() || c.base_location.is_some() || c.catalog.is_some(), "external volumes and catalogs"),
    ];
    clauses.iter().find(|(present, _)| *present).map(|&(_, clause)| clause)
}

/// Refuses (0A000) what a PRIMARY KEY or UNIQUE constraint may declare but BeeDB
/// does not enforce as declared: keys checked at COMMIT (`DEFERRABLE`, `INITIALLY
/// DEFERRED`; BeeDB checks every row as it is written), keys not enforced, NULLS NOT
/// DISTINCT (BeeDB's unique indexes let any number of NULLs in), and INCLUDE columns.
fn key_clauses_supported(
    characteristics: Option<&ast::ConstraintCharacteristics>,
    include: &[ast::Ident],
    nulls: ast::NullsDistinctOption,
) -> Result<()> {
    if let Some(ch) = characteristics {
        if ch.deferrable == Some(true) || matches!(ch.initially, Some(ast::DeferrableInitial::Deferred)) {
            return Err(Error::not_supported("deferrable unique and primary key constraints are not supported"));
        }
        if ch.enforced == Some(false) {
            return Err(Error::not_supported("NOT ENFORCED constraints are not supported"));
        }
    }
    if !include.is_empty() {
        return Err(Error::not_supported("INCLUDE columns of a key are not supported"));
    }
    if matches!(nulls, ast::NullsDistinctOption::NotDistinct) {
        return Err(Error::not_supported("NULLS NOT DISTINCT is not supported"));
    }
    Ok(())
}
