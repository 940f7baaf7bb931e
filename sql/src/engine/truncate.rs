//! `TRUNCATE [TABLE] [ONLY] t [*], … [RESTART IDENTITY | CONTINUE IDENTITY]
//! [CASCADE | RESTRICT]`, as PostgreSQL 15 runs it: every named table gets a new,
//! empty heap and new, empty indexes, and the old storage is dropped — all in the
//! statement's transaction, so a ROLLBACK (of the block, or to a savepoint before
//! it) brings the rows back. Nothing is scanned and no row is deleted one by one
//! (no foreign-key actions run, as in PostgreSQL: TRUNCATE fires no ON DELETE).
//!
//! A table referenced by a foreign key of a table that is not truncated with it is
//! 0A000 `cannot truncate a table referenced in a foreign key constraint` (DETAIL
//! and HINT as PostgreSQL's) unless CASCADE, which adds the referencing tables, and
//! theirs, to the set. `RESTART IDENTITY` restarts the sequences the truncated
//! tables' SERIAL and identity columns own, transactionally too
//! ([`super::sequence::restart`]).
//!
//! `ONLY` and `*` change nothing (there is no inheritance). sqlparser's extensions
//! of other dialects (`IF EXISTS`, `PARTITION (…)`, `ON CLUSTER`) are 0A000.

use std::sync::Arc;

use beedb_storage::btree::BTree;
use beedb_storage::heap::HeapFile;
use sqlparser::ast;

use super::Ctx;
use crate::binder::object_name;
use crate::catalog::{ObjectKind, TableDef};
use crate::error::{Error, Result};
use crate::session::QueryResult;

pub fn truncate(ctx: &mut Ctx<'_>, t: &ast::Truncate) -> Result<QueryResult> {
    if t.if_exists {
        return Err(Error::not_supported("TRUNCATE IF EXISTS is not supported"));
    }
    if t.partitions.is_some() {
        return Err(Error::not_supported("TRUNCATE … PARTITION is not supported"));
    }
    if t.on_cluster.is_some() {
        return Err(Error::not_supported("TRUNCATE … ON CLUSTER is not supported"));
    }
    let cascade = matches!(t.cascade, Some(ast::CascadeOption::Cascade));
    let restart = matches!(t.identity, Some(ast::TruncateIdentityOption::Restart));

    // The named tables, each once, in the order named.
    let mut set: Vec<Arc<TableDef>> = Vec::new();
    for target in &t.table_names {
        let name = object_name(&target.name)?;
        let Some(table) = ctx.catalog().table(&name).cloned() else {
            return Err(match ctx.catalog().object_kind(&name) {
                Some(ObjectKind::View | ObjectKind::Index | ObjectKind::Sequence) => {
                    Error::semantic("42809", format!("\"{name}\" is not a table"))
                }
                _ => Error::undefined_table(&name),
            });
        };
        if !set.iter().any(|s| s.id == table.id) {
            set.push(table);
        }
    }

    // Foreign keys into the set from outside it: CASCADE adds their tables (until
    // nothing more is added), RESTRICT refuses.
    let mut i = 0;
    while i < set.len() {
        let parent = set[i].clone();
        for (child, _) in ctx.catalog().referencing(parent.id) {
            if set.iter().any(|s| s.id == child.id) {
                continue;
            }
            if !cascade {
                return Err(Error::not_supported("cannot truncate a table referenced in a foreign key constraint")
                    .with_detail(format!("Table \"{}\" references \"{}\".", child.name, parent.name))
                    .with_hint(format!(
                        "Truncate table \"{}\" at the same time, or use TRUNCATE ... CASCADE.",
                        child.name
                    )));
            }
            set.push(child);
        }
        i += 1;
    }

    for table in &set {
        empty_table(ctx, table)?;
    }
    if restart {
        let owned: Vec<Arc<crate::catalog::SequenceDef>> = set
            .iter()
            .flat_map(|t| ctx.catalog().owned_sequences(t.id).cloned().collect::<Vec<_>>())
            .collect();
        for q in owned {
            super::sequence::restart(ctx, &q);
        }
    }
    Ok(QueryResult::command("TRUNCATE TABLE"))
}

/// Gives `table` a new empty heap and new empty indexes (same definitions) and drops
/// the old storage, in the transaction's catalog; its statistics say it is empty.
fn empty_table(ctx: &mut Ctx<'_>, table: &Arc<TableDef>) -> Result<()> {
    let w = ctx.txn.writer()?;
    let heap = HeapFile::create(w)?;
    let mut new = (**table).clone();
    new.heap = heap.first_page;
    for index in new.indexes.iter_mut() {
        index.root = BTree::create(w, false)?.root();
    }
    let new = Arc::new(new);
    super::ddl::drop_table_storage(ctx, table)?;
    ctx.make_relation_bees(&new)?;
    ctx.txn.catalog_mut().tables.insert(new.name.clone(), new.clone());
    super::analyze::analyze_table(ctx, &new)
}
