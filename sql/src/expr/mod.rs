//! Bound expressions and their vectorized evaluation.
//!
//! The binder turns SQL expressions into [`Expr`] trees whose every node has a
//! resolved result type and whose operands already have the types the operator
//! expects (the binder inserts the implicit casts PostgreSQL would). The evaluator
//! ([`eval`]) computes an expression over the live rows of a [`Batch`] into a
//! [`Vector`](crate::vector::Vector), one typed kernel per operator and operand type: there is no per-value
//! enum on the hot path. This is the generic evaluator the bee module's scan bees
//! replace for the predicates they can express.

mod cast;
mod dec64;
mod eval;
mod func;
mod functions;
mod kernels;
mod like;
mod row;
mod subquery;
#[cfg(test)]
mod tests;
pub mod udf;

pub use eval::{eval, eval_predicate};
pub(crate) use eval::push_value_as;
pub use row::{eval_row, eval_row_batch};
pub use func::Func;
pub use functions::common_type;

use crate::error::Result;
use crate::types::{DataType, DateField, Value};
use crate::vector::Batch;

/// A bound expression: what to compute and the type of its result.
#[derive(Debug)]
pub struct Expr {
    pub kind: ExprKind,
    /// The result type. The NULL literal whose type context could not decide is typed
    /// `text`, as PostgreSQL resolves `unknown`.
    pub ty: DataType,
}

// Cloning, comparing and dropping recurse once per level of the expression, whose
// depth the statement decides (a CASE nested 5,000 deep in a plan the optimizer
// copies): each level runs on a guarded stack (`crate::stack`), as the passes do.
impl Clone for Expr {
    fn clone(&self) -> Self {
        crate::stack::guarded(|| Expr { kind: self.kind.clone(), ty: self.ty.clone() })
    }
}

impl PartialEq for Expr {
    fn eq(&self, other: &Self) -> bool {
        self.ty == other.ty && crate::stack::guarded(|| self.kind == other.kind)
    }
}

impl Drop for Expr {
    fn drop(&mut self) {
        // Only a level with children can recurse; a column or literal drops in place.
        if !matches!(self.kind, ExprKind::Column(_) | ExprKind::Literal(_) | ExprKind::Param(_)) {
            let kind = std::mem::replace(&mut self.kind, ExprKind::Param(0));
            crate::stack::guarded(move || drop(kind));
        }
    }
}

/// Arithmetic operators. Operand types are decided by the binder:
/// - numeric (`smallint`, `integer`, `bigint`, `real`, `double`, `numeric`): both
///   operands have the result type; integer overflow and division by zero are errors;
///   integer division truncates toward zero; `Mod` follows the dividend's sign;
/// - `date + integer`, `integer + date`, `date - integer` → `date`;
///   `date - date` → `integer` (days);
/// - `date ± interval`, `timestamp ± interval`, `interval + date/timestamp` →
///   `timestamp`; `timestamp - timestamp` → `interval`;
/// - `interval ± interval` → `interval`; `interval * double`, `double * interval`,
///   `interval / double` → `interval` (the binder casts the number to `double`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ArithOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
}

/// Comparison operators. Both operands have the same type (the binder casts to a
/// common type), except that `char(n)` compares with PostgreSQL's blank-padded rules
/// whenever either side is `char(n)`, so trailing spaces do not count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CmpOp {
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
}

impl ArithOp {
    /// The operator as SQL spells it.
    pub fn symbol(self) -> &'static str {
        match self {
            ArithOp::Add => "+",
            ArithOp::Sub => "-",
            ArithOp::Mul => "*",
            ArithOp::Div => "/",
            ArithOp::Mod => "%",
        }
    }
}

impl CmpOp {
    /// The operator as SQL spells it.
    pub fn symbol(self) -> &'static str {
        match self {
            CmpOp::Eq => "=",
            CmpOp::NotEq => "<>",
            CmpOp::Lt => "<",
            CmpOp::LtEq => "<=",
            CmpOp::Gt => ">",
            CmpOp::GtEq => ">=",
        }
    }

    /// The operator with its operands swapped (`a < b` ⇔ `b > a`).
    pub fn flip(self) -> CmpOp {
        match self {
            CmpOp::Eq => CmpOp::Eq,
            CmpOp::NotEq => CmpOp::NotEq,
            CmpOp::Lt => CmpOp::Gt,
            CmpOp::LtEq => CmpOp::GtEq,
            CmpOp::Gt => CmpOp::Lt,
            CmpOp::GtEq => CmpOp::LtEq,
        }
    }

    /// Whether `ordering` (of left vs right) satisfies the operator.
    pub fn holds(self, ordering: std::cmp::Ordering) -> bool {
        use std::cmp::Ordering::*;
        match self {
            CmpOp::Eq => ordering == Equal,
            CmpOp::NotEq => ordering != Equal,
            CmpOp::Lt => ordering == Less,
            CmpOp::LtEq => ordering != Greater,
            CmpOp::Gt => ordering == Greater,
            CmpOp::GtEq => ordering != Less,
        }
    }
}

/// What a subquery expression computes from its subplan's rows.
#[derive(Debug, Clone, PartialEq)]
pub enum SubqueryKind {
    /// The single value of the single row (NULL when there is no row; an error when
    /// there is more than one).
    Scalar,
    /// Whether there is any row.
    Exists,
    /// `expr IN (subquery)` / `expr = ANY (subquery)` with SQL's three-valued result;
    /// `negated` is `NOT IN`. The subquery has one column, of `expr`'s type. A row
    /// `(expr, rest…) IN (subquery)` has `rest` non-empty and the subquery one column
    /// per operand, each of its operand's type; a subquery row matches when every
    /// pair is equal, and the result is NULL when no row matches and some row's
    /// comparison is NULL (PostgreSQL's row comparison).
    In { expr: Box<Expr>, negated: bool, rest: Vec<Expr> },
    /// `expr op ANY|ALL (subquery)`.
    Quantified {
        expr: Box<Expr>,
        op: CmpOp,
        all: bool,
    },
}

/// A subquery inside an expression. The subplan itself lives with the plan; the
/// evaluator runs it through [`EvalContext::subqueries`] by `id`.
#[derive(Debug, Clone, PartialEq)]
pub struct SubqueryExpr {
    /// Index of the subplan in the statement's subquery table.
    pub id: usize,
    pub kind: SubqueryKind,
    /// Values of the outer query the subplan refers to (correlated subqueries), in the
    /// subplan's parameter order; evaluated on the outer rows. Empty when the
    /// subquery is uncorrelated, so it is run once and its result reused.
    pub correlated: Vec<Expr>,
}

/// The node kinds of a bound expression.
#[derive(Debug, Clone, PartialEq)]
pub enum ExprKind {
    /// Column `index` of the input batch.
    Column(usize),
    /// A constant, already of type `ty` (or NULL).
    Literal(Value),
    /// Statement parameter `$n` (0-based here), of type `ty`; the value supplied at
    /// execution is cast to `ty` before evaluation.
    Param(usize),
    /// Cast to `ty`: explicit (`CAST`, `::`) cuts over-long strings silently, implicit
    /// assignment casts report them; both report overflow and bad text.
    Cast { expr: Box<Expr>, explicit: bool },
    /// Arithmetic negation.
    Neg(Box<Expr>),
    Arith {
        op: ArithOp,
        left: Box<Expr>,
        right: Box<Expr>,
    },
    /// Comparison; result `boolean`, NULL when either side is NULL.
    Compare {
        op: CmpOp,
        left: Box<Expr>,
        right: Box<Expr>,
    },
    /// `a IS [NOT] DISTINCT FROM b`: a comparison where NULL equals NULL; never NULL.
    IsDistinctFrom {
        left: Box<Expr>,
        right: Box<Expr>,
        negated: bool,
    },
    /// Three-valued AND of two or more boolean operands.
    And(Vec<Expr>),
    /// Three-valued OR of two or more boolean operands.
    Or(Vec<Expr>),
    Not(Box<Expr>),
    /// `IS [NOT] NULL`.
    IsNull { expr: Box<Expr>, negated: bool },
    /// `IS [NOT] TRUE` / `IS [NOT] FALSE`: never NULL.
    IsBool {
        expr: Box<Expr>,
        value: bool,
        negated: bool,
    },
    /// Searched CASE; the simple form `CASE x WHEN v …` is bound to `x = v` conditions.
    /// Every result has type `ty`. Branches are evaluated only on the rows that reach
    /// them, so `CASE WHEN x = 0 THEN 0 ELSE 1 / x END` never divides by zero.
    Case {
        whens: Vec<(Expr, Expr)>,
        else_: Option<Box<Expr>>,
    },
    /// `expr [NOT] IN (list)`, three-valued; list items have `expr`'s type.
    InList {
        expr: Box<Expr>,
        list: Vec<Expr>,
        negated: bool,
    },
    /// `expr [NOT] LIKE|ILIKE pattern [ESCAPE c]`; `%` and `_` wildcards; the default
    /// escape character is `\`.
    Like {
        expr: Box<Expr>,
        pattern: Box<Expr>,
        negated: bool,
        case_insensitive: bool,
        escape: Option<char>,
    },
    /// `COALESCE(a, b, …)`: the first non-NULL argument, evaluated lazily per row.
    Coalesce(Vec<Expr>),
    /// A scalar function.
    Func { func: Func, args: Vec<Expr> },
    /// A scalar function the application registered ([`udf`]); never constant.
    Udf { udf: udf::ScalarUdf, args: Vec<Expr> },
    /// `EXTRACT(field FROM x)` on a date, timestamp or interval → `numeric`.
    Extract { field: DateField, expr: Box<Expr> },
    Subquery(Box<SubqueryExpr>),
}

impl Expr {
    pub fn new(kind: ExprKind, ty: DataType) -> Expr {
        Expr { kind, ty }
    }

    /// The expression's node kind, taken out of it (`Expr` has a `Drop`, so its kind
    /// cannot be moved out by a pattern).
    pub fn into_kind(mut self) -> ExprKind {
        std::mem::replace(&mut self.kind, ExprKind::Param(0))
    }

    pub fn literal(value: Value, ty: DataType) -> Expr {
        Expr::new(ExprKind::Literal(value), ty)
    }

    pub fn column(index: usize, ty: DataType) -> Expr {
        Expr::new(ExprKind::Column(index), ty)
    }

    /// Calls `f` on every direct child expression.
    pub fn children(&self) -> Vec<&Expr> {
        match &self.kind {
            ExprKind::Column(_) | ExprKind::Literal(_) | ExprKind::Param(_) => vec![],
            ExprKind::Cast { expr, .. }
            | ExprKind::Neg(expr)
            | ExprKind::Not(expr)
            | ExprKind::IsNull { expr, .. }
            | ExprKind::IsBool { expr, .. }
            | ExprKind::Extract { expr, .. } => vec![expr],
            ExprKind::Arith { left, right, .. }
            | ExprKind::Compare { left, right, .. }
            | ExprKind::IsDistinctFrom { left, right, .. } => vec![left, right],
            ExprKind::And(v) | ExprKind::Or(v) | ExprKind::Coalesce(v) => v.iter().collect(),
            ExprKind::Func { args, .. } | ExprKind::Udf { args, .. } => args.iter().collect(),
            ExprKind::Case { whens, else_ } => {
                let mut out: Vec<&Expr> = whens.iter().flat_map(|(a, b)| [a, b]).collect();
                if let Some(e) = else_ {
                    out.push(e);
                }
                out
            }
            ExprKind::InList { expr, list, .. } => {
                let mut out = vec![&**expr];
                out.extend(list.iter());
                out
            }
            ExprKind::Like { expr, pattern, .. } => vec![expr, pattern],
            ExprKind::Subquery(s) => {
                let mut out: Vec<&Expr> = s.correlated.iter().collect();
                match &s.kind {
                    SubqueryKind::In { expr, rest, .. } => {
                        out.push(expr);
                        out.extend(rest.iter());
                    }
                    SubqueryKind::Quantified { expr, .. } => out.push(expr),
                    _ => {}
                }
                out
            }
        }
    }

    /// Every input column this expression reads.
    pub fn columns_used(&self, out: &mut Vec<usize>) {
        if let ExprKind::Column(i) = self.kind
            && !out.contains(&i)
        {
            out.push(i);
        }
        for c in self.children() {
            c.columns_used(out);
        }
    }

    /// Whether evaluating the expression can do something besides computing a value
    /// (call an application function, run a subquery, advance a sequence): such an
    /// expression is neither dropped when unread nor run on several threads.
    pub fn has_side_effects(&self) -> bool {
        match &self.kind {
            ExprKind::Udf { .. } | ExprKind::Subquery(_) => true,
            ExprKind::Func { func, .. } if func.is_sequence() || *func == Func::SingleRow => true,
            _ => self.children().into_iter().any(|c| crate::stack::guarded(|| c.has_side_effects())),
        }
    }

    /// Whether the expression is a constant (no columns, parameters or subqueries).
    pub fn is_constant(&self) -> bool {
        !self.varies_itself() && self.children().iter().all(|c| c.is_constant())
    }

    /// Whether this node, apart from its operands, can give different values for
    /// the same operands: a column, a parameter, a subquery, a sequence, the clock,
    /// or an application function (which may not be pure: a counter, a clock).
    pub fn varies_itself(&self) -> bool {
        match &self.kind {
            ExprKind::Column(_) | ExprKind::Param(_) | ExprKind::Subquery(_) | ExprKind::Udf { .. } => true,
            ExprKind::Func { func, .. } => func.is_sequence() || func.is_clock(),
            _ => false,
        }
    }
}

/// The result of running a subquery for one set of correlated values.
#[derive(Debug, Clone, PartialEq)]
pub enum SubqueryResult {
    /// For [`SubqueryKind::Scalar`]: the value (NULL when no row).
    Scalar(Value),
    /// For [`SubqueryKind::Exists`].
    Exists(bool),
    /// For `IN` and quantified comparisons: every value of the single column.
    Values(Vec<Value>),
}

/// Runs subplans on the evaluator's behalf (implemented by the executor).
pub trait SubqueryRunner {
    /// Runs subquery `id` with the given correlated values and returns what `kind`
    /// needs.
    fn run(&self, id: usize, kind: &SubqueryKind, correlated: &[Value]) -> Result<SubqueryResult>;

    /// Calls the sequence function `func` (`nextval`, `currval`, `setval`) for one
    /// row: `args` are its argument values (the sequence's name first). Only the
    /// executor, which runs inside a transaction, can; elsewhere it is an error.
    fn sequence(&self, func: Func, args: &[Value]) -> Result<Value> {
        let _ = args;
        Err(crate::error::Error::internal(format!("{func:?} evaluated where no sequence can be reached")))
    }
}

/// What evaluation needs besides the batch.
pub struct EvalContext<'a> {
    /// Values of `$1…$n`, already cast to the types the binder gave the parameters.
    pub params: &'a [Value],
    pub subqueries: &'a dyn SubqueryRunner,
}

/// A [`SubqueryRunner`] for contexts without subqueries (constant folding, DEFAULT
/// expressions): any subquery is an internal error.
pub struct NoSubqueries;

impl SubqueryRunner for NoSubqueries {
    fn run(&self, _: usize, _: &SubqueryKind, _: &[Value]) -> Result<SubqueryResult> {
        Err(crate::error::Error::internal(
            "subquery evaluated where none can run",
        ))
    }
}

/// Kept here so the signature the evaluator implements is visible next to the IR.
#[allow(dead_code)]
type EvalFn = fn(&Expr, &Batch, &EvalContext<'_>) -> Result<crate::vector::Vector>;
