//! The binder: resolves names and types in a parsed statement and produces a
//! [`Plan`]. Errors carry the byte offset of the offending token.
//!
//! - [`scope`]: which columns a query level sees;
//! - [`types`]: type names, common types, implicit and assignment casts;
//! - `expr`: expressions (operators, functions, subqueries, aggregates);
//! - `query`: SELECT, set operations, FROM and joins, CTEs, views.

mod expr;
mod query;
pub(crate) use query::{expr_is_volatile, plan_is_volatile};
/// Expression rewriting helpers shared with the planner.
pub mod query_util {
    pub use super::query::{for_each_child_mut, shift_columns};
}
pub mod scope;
pub mod system;
pub mod types;
mod window;

use std::collections::HashMap;
use std::sync::Arc;

use sqlparser::ast::{self, Spanned};

use crate::catalog::{Catalog, TableDef};
use crate::error::{Error, Result};
use crate::expr::{Expr, ExprKind};
use crate::parser;
use crate::plan::{Plan, Subplan};
use crate::types::{DataType, Value};

use scope::Scope;

/// What a binding attempt may have added, to undo it before binding again.
struct BindSnapshot {
    subqueries: usize,
    param_types: Vec<Option<DataType>>,
    next_question: usize,
    outer_refs: Vec<usize>,
}

/// One query nesting level (the top level or a subquery in an expression).
struct Frame {
    scope: Scope,
    /// Expressions of the enclosing level this level refers to; inside this level
    /// they are parameters `param_base + i`.
    outer_refs: Vec<Expr>,
    /// A frame that may not look outward (a view's body).
    barrier: bool,
    /// The clause of the enclosing level this subquery appears in ("SELECT",
    /// "WHERE", …): an aggregate over only enclosing columns belongs to that level,
    /// which decides whether it is allowed there.
    clause: &'static str,
}

/// A bound CTE: its plan and column names.
#[derive(Clone)]
struct CteDef {
    /// The CTE's bound plan, the only copy until its WITH settles: a reference
    /// (`Node::CteScan`) holds a placeholder meanwhile (`cte_placeholder`), so a chain
    /// of n CTEs holds n plans, not n²/2 copies.
    plan: Plan,
    /// Names its references (`Node::CteScan`) until the WITH's query is bound, when
    /// the CTE is materialized or its references inlined (`query.rs`,
    /// `settle_ctes`).
    id: crate::plan::CteId,
    /// References bound so far.
    refs: std::cell::Cell<usize>,
    /// `AS MATERIALIZED` (`Some(true)`) or `AS NOT MATERIALIZED` (`Some(false)`).
    materialized: Option<bool>,
    /// Whether the plan reads outer queries' columns (parameters after the
    /// statement's): such a CTE is inlined at every reference.
    correlated: bool,
    /// The frame level the CTE was bound at: its correlated parameters refer to that
    /// level's outer references.
    level: usize,
    /// Set while a `WITH RECURSIVE` CTE's own query binds: what a reference to the
    /// CTE from inside it means (`plan` is then unused).
    recursion: Option<Recursion>,
}

/// Where the binding of a `WITH RECURSIVE` CTE's own query is (`query.rs`,
/// `bind_recursive_cte`).
#[derive(Clone)]
enum Recursion {
    /// The query is not `base UNION [ALL] recursive`: a reference is an error.
    NotUnionForm,
    /// In the base term: a reference is an error.
    BaseTerm,
    /// In the recursive term: a reference is a scan of the working table, with
    /// the base term's columns.
    RecursiveTerm {
        work_table: crate::plan::WorkTableId,
        schema: crate::plan::Schema,
    },
}

pub struct Binder<'a> {
    pub catalog: &'a Catalog,
    /// The bee cache, for the `beedb_bees` system table.
    pub bees: Option<&'a beedb_bees::BeeCache>,
    sql: &'a str,
    /// Number of statement parameters; correlated values come after them.
    pub param_count: usize,
    /// Types the statement's parameters were inferred to have (`None`: unknown).
    pub param_types: Vec<Option<DataType>>,
    /// The parameters stand for literals (a statement shape, `engine/shape.rs`): an
    /// implicit cast retypes one, as it folds a literal (see `cast`).
    pub literal_params: bool,
    subqueries: Vec<Subplan>,
    frames: Vec<Frame>,
    ctes: Vec<HashMap<String, CteDef>>,
    /// Next `?` placeholder number.
    next_question: usize,
    /// Next id for a recursive CTE's working table.
    next_work_table: usize,
    /// Next id for a CTE (`CteDef::id`).
    next_cte: usize,
    /// The CTEs bound so far that call a volatile function, themselves or through
    /// the CTEs they read (a reason to materialize them): a reference is a placeholder until
    /// the WITH settles, so a CTE reading one learns it here.
    volatile_ctes: std::collections::HashSet<crate::plan::CteId>,
    /// The references to recursive CTEs bound so far: working table and position.
    recursive_refs: Vec<(crate::plan::WorkTableId, Option<usize>)>,
    /// Names of the views being expanded, outermost first.
    views: Vec<String>,
    /// Set while binding the expressions above an aggregation.
    agg: Option<expr::AggState>,
    /// The aggregation states of the enclosing SELECTs (innermost last), suspended
    /// while a nested SELECT binds: an aggregate over only their columns joins them.
    outer_aggs: Vec<Option<expr::AggState>>,
    /// Set when an aggregate in a subquery turned out to belong to the non-aggregating
    /// SELECT at this level: that SELECT binds its output again as an aggregation.
    outer_agg_request: Option<usize>,
    /// The window calls of the SELECT whose output is binding.
    window: Option<window::WindowState>,
    /// Set when the plan holds something read at bind time that a later execution
    /// must read again (the clock, a system table's rows): such a plan is not cached.
    pub reads_at_bind: bool,
    /// The functions and aggregates the connection's application registered.
    pub functions: Option<&'a crate::expr::udf::Functions>,
}

impl<'a> Binder<'a> {
    pub fn new(catalog: &'a Catalog, sql: &'a str, param_count: usize) -> Binder<'a> {
        Binder {
            catalog,
            bees: None,
            sql,
            param_count,
            param_types: vec![None; param_count],
            literal_params: false,
            reads_at_bind: false,
            subqueries: Vec::new(),
            frames: vec![Frame {
                scope: Scope::default(),
                outer_refs: Vec::new(),
                barrier: false,
                clause: "",
            }],
            ctes: Vec::new(),
            next_question: 0,
            next_work_table: 0,
            next_cte: 0,
            volatile_ctes: Default::default(),
            recursive_refs: Vec::new(),
            views: Vec::new(),
            agg: None,
            outer_aggs: Vec::new(),
            outer_agg_request: None,
            window: None,
            functions: None,
        }
    }

    /// Byte offset of a node in the statement text.
    fn pos(&self, node: &impl Spanned) -> Option<usize> {
        parser::span_offset(self.sql, node.span())
    }

    /// Finishes binding: the subqueries collected so far.
    pub fn into_subqueries(self) -> Vec<Subplan> {
        self.subqueries
    }

    /// The subqueries bound so far, leaving none (for a caller that still needs the
    /// binder's other state).
    pub fn take_subqueries(&mut self) -> Vec<Subplan> {
        std::mem::take(&mut self.subqueries)
    }

    fn set_scope(&mut self, scope: Scope) -> Scope {
        std::mem::replace(&mut self.frames.last_mut().expect("a frame").scope, scope)
    }

    /// Resolves a column name at nesting level `level`, registering outer references
    /// on the way (correlated subqueries).
    fn resolve_at(
        &mut self,
        level: usize,
        table: Option<&str>,
        name: &str,
    ) -> Result<Option<Expr>> {
        if let Some(c) = self.frames[level].scope.resolve(table, name)? {
            return Ok(Some(c.expr.clone()));
        }
        if level == 0 || self.frames[level].barrier {
            return Ok(None);
        }
        let Some(outer) = self.resolve_at(level - 1, table, name)? else {
            return Ok(None);
        };
        Ok(Some(self.outer_ref(level, outer)))
    }

    /// `outer`, an expression of level `level - 1`, as seen from level `level`: a
    /// parameter bound to it.
    fn outer_ref(&mut self, level: usize, outer: Expr) -> Expr {
        let frame = &mut self.frames[level];
        let k = match frame.outer_refs.iter().position(|e| *e == outer) {
            Some(k) => k,
            None => {
                frame.outer_refs.push(outer.clone());
                frame.outer_refs.len() - 1
            }
        };
        Expr::new(ExprKind::Param(self.param_count + k), outer.ty)
    }

    /// `e`, an expression of level `from`, as seen from the current (deeper) level.
    fn lift(&mut self, mut e: Expr, from: usize) -> Expr {
        let top = self.frames.len() - 1;
        for level in from + 1..=top {
            e = self.outer_ref(level, e);
        }
        e
    }

    /// The state a retried binding must start from (see `outer_agg_request`).
    fn snapshot(&self) -> BindSnapshot {
        BindSnapshot {
            subqueries: self.subqueries.len(),
            param_types: self.param_types.clone(),
            next_question: self.next_question,
            outer_refs: self.frames.iter().map(|f| f.outer_refs.len()).collect(),
        }
    }

    fn restore(&mut self, s: BindSnapshot) {
        self.subqueries.truncate(s.subqueries);
        self.param_types = s.param_types;
        self.next_question = s.next_question;
        for (f, n) in self.frames.iter_mut().zip(s.outer_refs) {
            f.outer_refs.truncate(n);
        }
    }

    fn resolve_column(&mut self, table: Option<&str>, name: &str) -> Result<Option<Expr>> {
        let top = self.frames.len() - 1;
        self.resolve_at(top, table, name)
    }

    /// Binds `q` as a subquery of the current level, appearing in its `clause`.
    fn bind_subquery(&mut self, q: &ast::Query, clause: &'static str) -> Result<(usize, Vec<Expr>, Plan)> {
        self.frames.push(Frame {
            scope: Scope::default(),
            outer_refs: Vec::new(),
            barrier: false,
            clause,
        });
        let saved_ctes = self.ctes.len();
        let result = self.bind_query(q);
        self.ctes.truncate(saved_ctes);
        let frame = self.frames.pop().expect("pushed frame");
        let plan = result?;
        let id = self.subqueries.len();
        self.subqueries.push(Subplan {
            plan: plan.clone(),
            param_base: self.param_count,
            correlated: !frame.outer_refs.is_empty(),
        });
        Ok((id, frame.outer_refs, plan))
    }

    fn lookup_cte(&self, name: &str) -> Option<&CteDef> {
        self.ctes.iter().rev().find_map(|m| m.get(name))
    }

    pub fn table(&self, name: &ast::ObjectName) -> Result<Arc<TableDef>> {
        let n = object_name(name)?;
        self.catalog
            .table(&n)
            .cloned()
            .ok_or_else(|| Error::undefined_table(&n).at(self.pos(name)))
    }

    /// Binds an expression over the columns `cols` (a single table's row), e.g. a
    /// DEFAULT or an UPDATE assignment.
    pub fn bind_scalar_over(
        &mut self,
        scope: Scope,
        e: &ast::Expr,
        clause: &'static str,
    ) -> Result<Expr> {
        let saved = self.set_scope(scope);
        let r = self.bind_expr(e, clause);
        self.set_scope(saved);
        r
    }

    /// Binds a DML statement's RETURNING list over `scope` (the target table's row,
    /// its columns at positions 0..n, so `*` is the table's columns): the
    /// expressions and the result columns they make, named as a SELECT list names them.
    pub fn bind_returning(
        &mut self,
        scope: Scope,
        items: &[ast::SelectItem],
    ) -> Result<(Vec<Expr>, Vec<crate::plan::OutputColumn>)> {
        let saved = self.set_scope(scope.clone());
        let r = self.bind_returning_items(&scope, items);
        self.set_scope(saved);
        r
    }

    fn bind_returning_items(
        &mut self,
        scope: &Scope,
        items: &[ast::SelectItem],
    ) -> Result<(Vec<Expr>, Vec<crate::plan::OutputColumn>)> {
        let mut exprs = Vec::new();
        let mut columns = Vec::new();
        let mut push = |e: Expr, name: String| {
            columns.push(crate::plan::OutputColumn { name, ty: e.ty });
            exprs.push(e);
        };
        for it in items {
            match it {
                ast::SelectItem::UnnamedExpr(e) => {
                    let b = self.bind_expr(e, "RETURNING")?;
                    push(b, expr::output_name(e));
                }
                ast::SelectItem::ExprWithAlias { expr: e, alias } => {
                    let b = self.bind_expr(e, "RETURNING")?;
                    push(b, ident(alias));
                }
                ast::SelectItem::Wildcard(_) => {
                    for &i in &scope.star {
                        let c = &scope.columns[i];
                        push(c.expr.clone(), c.name.clone());
                    }
                }
                ast::SelectItem::QualifiedWildcard(kind, _) => {
                    let ast::SelectItemQualifiedWildcardKind::ObjectName(n) = kind else {
                        return Err(Error::not_supported("expression.* in RETURNING"));
                    };
                    let t = object_name(n)?;
                    if !scope.has_table(&t) {
                        return Err(scope::Scope::missing_table(&t, std::iter::once(scope)).at(self.pos(it)));
                    }
                    for c in scope.columns.iter().filter(|c| c.table.as_deref() == Some(&t) && !c.unqualified_only) {
                        push(c.expr.clone(), c.name.clone());
                    }
                }
                ast::SelectItem::ExprWithAliases { .. } => return Err(Error::not_supported("multiple aliases")),
            }
        }
        Ok((exprs, columns))
    }

    /// Binds `e` and casts it for storage into a column of type `ty`.
    pub fn bind_assignment(
        &mut self,
        scope: Scope,
        e: &ast::Expr,
        column: &str,
        ty: DataType,
    ) -> Result<Expr> {
        let saved = self.set_scope(scope);
        // A numeric literal numeric cannot hold, stored in a float column, is that
        // float (PostgreSQL casts its exact numeric there); elsewhere it stays 22003.
        let r = match expr::wide_literal(e) {
            Some(f) if matches!(ty, DataType::Double | DataType::Real) => {
                Ok(Expr::literal(crate::types::Value::Double(f), DataType::Double))
            }
            _ => self.bind_expr(e, "VALUES"),
        }
        .and_then(|b| self.assign_cast(b, e, column, ty));
        self.set_scope(saved);
        r
    }

    /// Casts a bound value for storage into a column of type `ty`, with PostgreSQL's
    /// assignment rules.
    pub fn assign_cast(&mut self, b: Expr, e: &ast::Expr, column: &str, ty: DataType) -> Result<Expr> {
        if b.ty == ty {
            return Ok(b);
        }
        if is_unknown(e) || types::assignment_castable(&b.ty, &ty) {
            return self.cast(b, ty, false, e);
        }
        Err(Error::datatype_mismatch(format!(
            "column \"{column}\" is of type {} but expression is of type {}",
            types::type_name(&ty),
            types::type_name(&b.ty)
        ))
        .at(self.pos(e)))
    }

    /// Casts `b` to `ty`, folding constants (so bad literals are reported at bind
    /// time with their position).
    fn cast(&mut self, b: Expr, ty: DataType, explicit: bool, at: &ast::Expr) -> Result<Expr> {
        if b.ty == ty && !matches!(ty, DataType::Char(_) | DataType::Varchar(Some(_)) | DataType::Decimal { precision: Some(_), .. }) {
            return Ok(b);
        }
        // A column's values already fit its declared length or scale, so a cast to
        // that very type is a no-op; left in place, it would hide the column from
        // the index access rule (`c_last = $1` on a varchar(16) column read the
        // whole table instead of its index).
        if b.ty == ty && matches!(b.kind, ExprKind::Column(_)) {
            return Ok(b);
        }
        if let ExprKind::Param(i) = b.kind
            && i < self.param_count && self.param_types[i].is_none() {
                self.param_types[i] = Some(ty);
                return Ok(Expr::new(ExprKind::Param(i), ty));
            }
        // A statement shape's parameter stands for a literal, which an implicit
        // cast folds into a literal of the type: the parameter takes the type, and
        // its value is cast when the statement runs (`PlanCache::cast_params`, with
        // the cast a literal gets; a value that does not cast declines the shape, so
        // that the literal statement reports the error as it would).
        if let ExprKind::Param(i) = b.kind
            && self.literal_params
            && !explicit
            && i < self.param_count
        {
            self.param_types[i] = Some(ty);
            return Ok(Expr::new(ExprKind::Param(i), ty));
        }
        if let ExprKind::Literal(v) = &b.kind {
            let folded = if explicit { v.cast(&ty) } else { v.cast_for_assignment(&ty) };
            return match folded {
                Ok(v) => Ok(Expr::literal(v, ty)),
                Err(e) => Err(Error::from(e).at(self.pos(at))),
            };
        }
        Ok(Expr::new(
            ExprKind::Cast {
                expr: Box::new(b),
                explicit,
            },
            ty,
        ))
    }
}

/// Whether an expression is an untyped literal (a string, NULL or a parameter) whose
/// type comes from its context, as PostgreSQL's `unknown`.
pub fn is_unknown(e: &ast::Expr) -> bool {
    match e {
        ast::Expr::Value(v) => matches!(
            v.value,
            ast::Value::SingleQuotedString(_)
                | ast::Value::Null
                | ast::Value::Placeholder(_)
                | ast::Value::EscapedStringLiteral(_)
                | ast::Value::DollarQuotedString(_)
        ),
        ast::Expr::Nested(inner) => is_unknown(inner),
        _ => false,
    }
}

/// An identifier as PostgreSQL folds it: unquoted names to lower case.
pub fn ident(i: &ast::Ident) -> String {
    if i.quote_style.is_some() {
        i.value.clone()
    } else {
        i.value.to_lowercase()
    }
}

/// The object a (possibly schema-qualified) name denotes; only the default schema
/// (`public`, `main`) is known.
pub fn object_name(n: &ast::ObjectName) -> Result<String> {
    let parts: Vec<String> = n
        .0
        .iter()
        .map(|p| match p {
            ast::ObjectNamePart::Identifier(i) => Ok(ident(i)),
            other => Err(Error::not_supported(format!("name part {other}"))),
        })
        .collect::<Result<_>>()?;
    match parts.as_slice() {
        [name] => Ok(name.clone()),
        [schema, name] if schema == "public" || schema == "main" => Ok(name.clone()),
        [schema, name] if schema == "information_schema" => Ok(format!("information_schema.{name}")),
        _ => Err(Error::semantic(
            "3F000",
            format!("schema \"{}\" does not exist", parts[..parts.len() - 1].join(".")),
        )),
    }
}

/// A literal value as an expression of its own type.
pub fn literal(v: Value) -> Expr {
    let ty = v.data_type().unwrap_or(DataType::Text);
    Expr::literal(v, ty)
}
