//! `CLUSTER [table [USING index]]`: rewrites a table in the order of one of its
//! indexes, as PostgreSQL does — a new heap written in index key order, every index
//! rebuilt on it, the old heap and indexes dropped — and gathers the table's
//! statistics again, so the index's correlation with heap order (ANALYZE's
//! `ColumnStats::correlation`) is about 1 and the cost model reads the index as
//! clustered (`optimizer/cost.rs`, `index_row`). All of it is one transaction's work:
//! a rollback leaves the table as it was.
//!
//! The index is remembered (`IndexDef::clustered`), so `CLUSTER t` reuses it and a
//! bare `CLUSTER` reclusters every table that has one. As in PostgreSQL, the order is
//! not maintained: rows written later go where the heap puts them.
//!
//! Errors as PostgreSQL's: an unknown table 42P01, an unknown index 42704, an index of
//! another table (or a relation that is no index) 42809, `CLUSTER t` with no index
//! remembered 42704.

use std::sync::Arc;

use beedb_storage::btree::BTree;
use beedb_storage::heap::HeapFile;
use sqlparser::ast;

use super::Ctx;
use super::query::{optimize, run};
use crate::binder::{ident, object_name};
use crate::catalog::TableDef;
use crate::error::{Error, Result};
use crate::expr::Expr;
use crate::exec::dml as xdml;
use crate::plan::{Access, Node, OutputColumn, Plan, SortKey};
use crate::session::QueryResult;

/// `CLUSTER name [USING index]`; an empty `name` is the bare `CLUSTER`.
pub fn cluster(ctx: &mut Ctx<'_>, name: &ast::ObjectName, index: Option<&ast::Ident>) -> Result<QueryResult> {
    if name.0.is_empty() {
        let clustered: Vec<(Arc<TableDef>, usize)> = ctx
            .catalog()
            .tables
            .values()
            .filter_map(|t| t.indexes.iter().position(|i| i.clustered).map(|p| (t.clone(), p)))
            .collect();
        for (table, pos) in clustered {
            rewrite_in_index_order(ctx, &table, pos)?;
        }
        return Ok(QueryResult::command("CLUSTER"));
    }
    let tname = object_name(name)?;
    let table = ctx.catalog().table(&tname).cloned().ok_or_else(|| Error::undefined_table(&tname))?;
    let pos = match index {
        Some(i) => {
            let iname = ident(i);
            match table.indexes.iter().position(|x| x.name == iname) {
                Some(p) => p,
                None if ctx.catalog().index(&iname).is_some() => {
                    return Err(Error::semantic("42809", format!("\"{iname}\" is not an index for table \"{tname}\"")));
                }
                None if ctx.catalog().object_kind(&iname).is_some() => {
                    return Err(Error::semantic("42809", format!("\"{iname}\" is not an index")));
                }
                None => {
                    return Err(Error::semantic("42704", format!("index \"{iname}\" for table \"{tname}\" does not exist")));
                }
            }
        }
        None => table.indexes.iter().position(|x| x.clustered).ok_or_else(|| {
            Error::semantic("42704", format!("there is no previously clustered index for table \"{tname}\""))
        })?,
    };
    rewrite_in_index_order(ctx, &table, pos)?;
    Ok(QueryResult::command("CLUSTER"))
}

/// `table`'s rows read in the order of index `pos`: a sort on the index's columns,
/// ascending with NULLs last (a B-tree's order in PostgreSQL).
fn rows_in_index_order(ctx: &Ctx<'_>, table: &Arc<TableDef>, pos: usize) -> Result<Vec<Vec<crate::types::Value>>> {
    let schema: Vec<OutputColumn> = table.columns.iter().map(|c| OutputColumn { name: c.name.clone(), ty: c.ty }).collect();
    let scan = Plan::new(
        Node::TableScan {
            table: table.clone(),
            columns: (0..table.columns.len()).collect(),
            filter: None,
            access: Access::Heap,
            with_tid: false,
            bees: None,
        },
        schema.clone(),
    );
    let keys = table.indexes[pos]
        .columns
        .iter()
        .map(|&c| SortKey { expr: Expr::column(c, table.columns[c].ty), desc: false, nulls_first: false })
        .collect();
    let plan = Plan::new(Node::Sort { input: Box::new(scan), keys, bee: None }, schema);
    run(ctx, &optimize(plan, vec![], &ctx.optimizer, &crate::optimizer::NoStats), &[], None)
}

/// Writes `table` anew in the order of its index `pos` (see the module comment).
fn rewrite_in_index_order(ctx: &mut Ctx<'_>, table: &Arc<TableDef>, pos: usize) -> Result<()> {
    let rows = rows_in_index_order(ctx, table, pos)?;
    let w = ctx.txn.writer()?;
    let heap = HeapFile::create(w)?;
    // Everything else about the table (columns, constraints, names) stays as it is.
    let mut new = (**table).clone();
    new.heap = heap.first_page;
    for (i, index) in new.indexes.iter_mut().enumerate() {
        index.root = BTree::create(w, false)?.root();
        index.clustered = i == pos;
    }
    let new = Arc::new(new);
    let mut former = ctx.row_former(&new, rows.len())?;
    let w = ctx.txn.writer()?;
    for r in &rows {
        xdml::insert_row_with(w, &new, r, former.as_mut())?;
    }
    super::ddl::drop_table_storage(ctx, table)?;
    ctx.make_relation_bees(&new)?;
    ctx.txn.catalog_mut().tables.insert(new.name.clone(), new.clone());
    super::analyze::analyze_table(ctx, &new)
}
