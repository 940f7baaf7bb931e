//! Scalar functions: name resolution (which function, which argument casts, which
//! result type) and their vectorized kernels.

use crate::error::Result;
use crate::types::DataType;

/// A resolved scalar function. Argument types are fixed by [`Func::resolve`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Func {
    // strings
    Upper,
    Lower,
    /// `length`, `char_length`, `character_length`: characters (char(n) without its
    /// padding).
    Length,
    OctetLength,
    /// `substring(s, start [, count])` / `substr`; 1-based, PostgreSQL's rules for
    /// starts before 1; a negative count is an error.
    Substring,
    /// `trim([both|leading|trailing] [chars] from s)`, `btrim`, `ltrim`, `rtrim`.
    Btrim,
    Ltrim,
    Rtrim,
    /// `position(sub in s)` / `strpos(s, sub)`: 1-based, 0 when absent.
    Position,
    Repeat,
    /// `||` and `concat_ws`-free concatenation of two strings (NULL if either is NULL).
    Concat,
    /// `concat(a, b, …)`: NULLs are skipped.
    ConcatAll,
    Replace,
    Left,
    Right,
    Lpad,
    Rpad,
    Reverse,
    // numbers
    Abs,
    /// `round(x)` and `round(numeric, scale)`.
    Round,
    Trunc,
    Floor,
    Ceil,
    Sqrt,
    Power,
    Sign,
    Mod,
    /// `gcd(a, b)` / `lcm(a, b)` of integers (of their type) and numerics (at the
    /// larger scale).
    Gcd,
    Lcm,
    // dates and times
    /// `date_trunc(unit, timestamp)`: the timestamp truncated to the unit
    /// (microseconds … millennium, week: the Monday).
    DateTrunc,
    /// `to_char(timestamp | interval | number, template)`: the value formatted by
    /// PostgreSQL's template patterns (`types::to_char`).
    ToChar,
    // comparisons
    NullIf,
    Greatest,
    Least,
    // sequences (evaluated row by row through `SubqueryRunner::sequence`, never
    // folded: each call changes or reads the sequence's state)
    /// `nextval(name)`: the sequence's next value (`bigint`).
    NextVal,
    /// `currval(name)`: the value `nextval` last returned in this session.
    CurrVal,
    /// `setval(name, value [, is_called])`.
    SetVal,
    /// `lastval()`: the value `nextval` last returned in this session, of any
    /// sequence.
    LastVal,
    // the clock (evaluated once per call site and batch through
    // `SubqueryRunner::sequence`, never folded: a cached plan reads it at each
    // execution)
    /// `now()`, `current_timestamp`, `localtimestamp`: the time the transaction
    /// started, as PostgreSQL's (UTC, as a `timestamp`: BeeDB has no time zones).
    Now,
    /// `current_date`: the date of [`Func::Now`].
    CurrentDate,
    // the optimizer's own (no SQL name resolves to it)
    /// `single_row(rows, value)`: `value`, or error 21000 ("more than one row
    /// returned by a subquery used as an expression") where `rows` > 1. What a
    /// scalar subquery without an aggregate becomes when decorrelation turns it
    /// into a join (`optimizer/decorrelate.rs`); never folded (its operands are
    /// columns) and kept even when unread ([`crate::expr::Expr::has_side_effects`]).
    SingleRow,
}

impl Func {
    /// The name a call of the function is written with in SQL (what EXPLAIN prints):
    /// `octet_length`, `date_trunc`, `strpos` (whose arguments are `(s, sub)`,
    /// also for `position(sub IN s)`). [`Func::Concat`] is the `||` operator and
    /// [`Func::CurrentDate`] takes no parentheses: [`crate::plan::explain`] writes
    /// both apart.
    pub fn sql_name(self) -> &'static str {
        match self {
            Func::Upper => "upper",
            Func::Lower => "lower",
            Func::Length => "length",
            Func::OctetLength => "octet_length",
            Func::Substring => "substring",
            Func::Btrim => "btrim",
            Func::Ltrim => "ltrim",
            Func::Rtrim => "rtrim",
            Func::Position => "strpos",
            Func::Repeat => "repeat",
            Func::Concat => "||",
            Func::ConcatAll => "concat",
            Func::Replace => "replace",
            Func::Left => "left",
            Func::Right => "right",
            Func::Lpad => "lpad",
            Func::Rpad => "rpad",
            Func::Reverse => "reverse",
            Func::Abs => "abs",
            Func::Round => "round",
            Func::Trunc => "trunc",
            Func::Floor => "floor",
            Func::Ceil => "ceil",
            Func::Sqrt => "sqrt",
            Func::Power => "power",
            Func::Sign => "sign",
            Func::Mod => "mod",
            Func::Gcd => "gcd",
            Func::Lcm => "lcm",
            Func::DateTrunc => "date_trunc",
            Func::ToChar => "to_char",
            Func::NullIf => "nullif",
            Func::Greatest => "greatest",
            Func::Least => "least",
            Func::NextVal => "nextval",
            Func::CurrVal => "currval",
            Func::SetVal => "setval",
            Func::LastVal => "lastval",
            Func::Now => "now",
            Func::CurrentDate => "CURRENT_DATE",
            Func::SingleRow => "single_row",
        }
    }

    /// Whether the function reads or changes a sequence (not a pure kernel).
    pub fn is_sequence(self) -> bool {
        matches!(self, Func::NextVal | Func::CurrVal | Func::SetVal | Func::LastVal)
    }

    /// Whether the function reads the transaction's clock (`now()`,
    /// `current_date`): constant within a transaction, but not across executions.
    pub fn is_clock(self) -> bool {
        matches!(self, Func::Now | Func::CurrentDate)
    }
}

impl Func {
    /// Resolves a call of `name` (lower case) with arguments of `args` types.
    /// Returns the function, the type each argument must be cast to, and the result
    /// type; `Ok(None)` when no function of that name exists, an error with
    /// PostgreSQL's wording (`function foo(integer) does not exist`) when the name
    /// exists but not for these argument types or this many arguments.
    pub fn resolve(name: &str, args: &[DataType]) -> Result<Option<(Func, Vec<DataType>, DataType)>> {
        super::eval::resolve_func(name, args)
    }
}
