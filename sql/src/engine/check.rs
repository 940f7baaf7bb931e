//! CHECK constraints: binding a constraint's expression when it is declared, naming
//! it as PostgreSQL does, and enforcing it on every row a statement writes (INSERT,
//! UPDATE, ON CONFLICT DO UPDATE, COPY FROM) and on the existing rows when ALTER
//! TABLE adds one.
//!
//! A constraint is kept in the catalog as SQL text over the table's unqualified
//! column names ([`CheckDef`]) and bound for each statement that writes the table,
//! as column DEFAULTs are; a kept INSERT or UPDATE plan keeps its table's
//! constraints bound with it (`plan_cache`), made again after a schema change.

use std::ops::ControlFlow;

use sqlparser::ast;
use sqlparser::ast::{Spanned, Visit, VisitMut, Visitor, VisitorMut};

use super::Ctx;
use crate::binder::scope::Scope;
use crate::binder::{Binder, ident};
use crate::catalog::{Catalog, ColumnDef, TableDef};
use crate::error::{Error, Result};
use crate::expr::Expr;
use crate::types::{DataType, Value};

/// Binds a CHECK expression over the columns of table `table` (as it is being
/// created or altered) and returns it bound, with the text to store: PostgreSQL's
/// rules — only the table's columns, no subqueries (0A000), no aggregates (42803) or
/// window functions (42P20), and boolean (42804).
pub fn bind_new(
    catalog: &Catalog,
    sql: &str,
    table: &str,
    columns: &[ColumnDef],
    e: &ast::Expr,
) -> Result<(Expr, String)> {
    struct FindSubquery(Option<ast::Expr>);
    impl Visitor for FindSubquery {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &ast::Expr) -> ControlFlow<()> {
            if matches!(e, ast::Expr::Subquery(_) | ast::Expr::Exists { .. } | ast::Expr::InSubquery { .. }) {
                self.0 = Some(e.clone());
                return ControlFlow::Break(());
            }
            ControlFlow::Continue(())
        }
    }
    let mut find = FindSubquery(None);
    let _ = Visit::visit(e, &mut find);
    if let Some(sub) = find.0 {
        return Err(Error::not_supported("cannot use subquery in check constraint")
            .at(crate::parser::span_offset(sql, sub.span())));
    }
    let bound = bind(catalog, sql, table, columns, e)?;
    if bound.ty != DataType::Boolean {
        return Err(Error::datatype_mismatch(format!(
            "argument of CHECK must be type boolean, not type {}",
            bound.ty
        ))
        .at(crate::parser::span_offset(sql, e.span())));
    }
    // Stored over unqualified names, so renaming the table leaves it valid.
    let mut stored = e.clone();
    let _ = VisitMut::visit(&mut stored, &mut Unqualify);
    Ok((bound, stored.to_string()))
}

/// `t.a` → `a` (binding checked that `t` is the table).
struct Unqualify;

impl VisitorMut for Unqualify {
    type Break = ();
    fn post_visit_expr(&mut self, e: &mut ast::Expr) -> ControlFlow<()> {
        if let ast::Expr::CompoundIdentifier(parts) = e
            && let Some(last) = parts.last()
        {
            *e = ast::Expr::Identifier(last.clone());
        }
        ControlFlow::Continue(())
    }
}

fn bind(catalog: &Catalog, sql: &str, table: &str, columns: &[ColumnDef], e: &ast::Expr) -> Result<Expr> {
    let cols: Vec<(String, DataType)> = columns.iter().map(|c| (c.name.clone(), c.ty)).collect();
    let mut binder = Binder::new(catalog, sql, 0);
    binder.bind_scalar_over(Scope::relation(Some(table), &cols, 0), e, "check constraints")
}

/// The name PostgreSQL gives an unnamed CHECK constraint: `t_a_check` when the
/// expression reads exactly one column, else `t_check`; a number is appended while
/// the name is taken (`t_a_check1`).
pub fn default_name(catalog: &Catalog, table: &str, columns: &[ColumnDef], bound: &Expr, pending: &[&str]) -> String {
    let mut used = Vec::new();
    bound.columns_used(&mut used);
    used.sort_unstable();
    used.dedup();
    let base = match used.as_slice() {
        [c] => format!("{table}_{}_check", columns[*c].name),
        _ => format!("{table}_check"),
    };
    catalog.fresh_constraint_name(&base, pending)
}

/// The stored text of a CHECK expression with column `old` renamed to `new`.
pub fn rename_column(expr: &str, old: &str, new: &str) -> Result<String> {
    struct Rename<'a>(&'a str, &'a str);
    impl VisitorMut for Rename<'_> {
        type Break = ();
        fn post_visit_expr(&mut self, e: &mut ast::Expr) -> ControlFlow<()> {
            if let ast::Expr::Identifier(i) = e
                && ident(i) == self.0
            {
                *i = quoted(self.1);
            }
            ControlFlow::Continue(())
        }
    }
    let mut e = crate::parser::parse_expr(expr)?;
    let _ = VisitMut::visit(&mut e, &mut Rename(old, new));
    Ok(e.to_string())
}

/// An identifier for column `name`, quoted when reading it unquoted would not give
/// `name` back.
fn quoted(name: &str) -> ast::Ident {
    let text = crate::binder::system::quote_ident(name);
    if text.starts_with('"') { ast::Ident::with_quote('"', name) } else { ast::Ident::new(name) }
}

/// Whether the stored CHECK expression reads column `column`.
pub fn reads_column(expr: &str, column: &str) -> bool {
    struct Reads<'a>(&'a str);
    impl Visitor for Reads<'_> {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &ast::Expr) -> ControlFlow<()> {
            if let ast::Expr::Identifier(i) = e
                && ident(i) == self.0
            {
                return ControlFlow::Break(());
            }
            ControlFlow::Continue(())
        }
    }
    // A text that no longer parses reads everything: it is dropped with any column.
    match crate::parser::parse_expr(expr) {
        Ok(e) => Visit::visit(&e, &mut Reads(column)).is_break(),
        Err(_) => true,
    }
}

/// A table's CHECK constraints bound for one statement that writes it.
pub struct RowChecks {
    checks: Vec<(String, Expr)>,
}

impl RowChecks {
    pub fn of(ctx: &Ctx<'_>, table: &TableDef) -> Result<RowChecks> {
        let mut checks = Vec::with_capacity(table.checks.len());
        for c in &table.checks {
            let e = crate::parser::parse_expr(&c.expr)?;
            let bound = bind(ctx.catalog(), &c.expr, &table.name, &table.columns, &e).map_err(|mut err| {
                err.position = None;
                err
            })?;
            checks.push((c.name.clone(), bound));
        }
        Ok(RowChecks { checks })
    }

    /// The name of the first constraint (by name, as PostgreSQL tests them) that
    /// `row` makes FALSE.
    pub fn failing(&self, ctx: &Ctx<'_>, row: &[Value]) -> Result<Option<&str>> {
        if self.checks.is_empty() {
            return Ok(None);
        }
        let sequences = ctx.sequences();
        let runner = super::sequence::SequenceRunner(&sequences);
        let eval = crate::expr::EvalContext { params: &[], subqueries: &runner };
        for (name, e) in &self.checks {
            if crate::expr::eval_row(e, row, &eval)? == Value::Boolean(false) {
                return Ok(Some(name));
            }
        }
        Ok(None)
    }

    /// An error (23514) when `row`, about to be written into `table`, fails a
    /// constraint. NOT NULL is tested first, as PostgreSQL does, so a row failing
    /// both reports the NULL. The caller adds the DETAIL with the row
    /// (`dml::with_constraint_detail`).
    pub fn verify(&self, ctx: &Ctx<'_>, table: &TableDef, row: &[Value]) -> Result<()> {
        if self.checks.is_empty() {
            return Ok(());
        }
        crate::exec::dml::check_not_null(table, row)?;
        match self.failing(ctx, row)? {
            None => Ok(()),
            Some(name) => Err(Error::constraint(
                "23514",
                format!("new row for relation \"{}\" violates check constraint \"{name}\"", table.name),
            )),
        }
    }
}
