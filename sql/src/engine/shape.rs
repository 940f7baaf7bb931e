//! Statement shapes ("simple parameterization", as SQL Server calls it; MySQL's
//! statement digest): a statement run by text with literals in it is run as the
//! prepared statement of its *shape* — the text with those literals replaced by
//! parameters — so statements that differ only in their literals share one parse,
//! one binding and one plan (`session::Connection::execute`, setting
//! `statement_shapes`).
//!
//! [`shape`] is one pass over the text, no parser: it finds the literals in
//! positions where a parameter binds exactly as the literal does, and gives up
//! (returns `None`, the statement then runs as before) on anything it is not sure
//! of. A literal is replaced only when
//! - the statement starts with SELECT, INSERT, UPDATE or DELETE and holds no `$`
//!   (parameters, dollar quotes), `?`, backslash or second statement;
//! - it is an unsigned number or a plain `'…'` string (not `E'…'`, `B'…'`, `U&'…'`,
//!   not a typed literal such as `DATE '…'`, not NULL, TRUE or FALSE);
//! - it stands right after a comparison operator (`=`, `<>`, `!=`, `<`, `>`, `<=`,
//!   `>=`) whose left operand is a column name, or as an item of an `IN (…)` list or
//!   of a `VALUES (…)` row, and is followed by `)`, `,`, the end, or one of AND, OR,
//!   WHERE, RETURNING, ORDER, GROUP, HAVING, LIMIT, OFFSET (so never an operand of
//!   arithmetic, `::`, COLLATE, AT TIME ZONE, BETWEEN, LIKE, CASE, LIMIT or OFFSET);
//! - no enclosing parenthesis is a function call's or a type modifier's.
//!
//! Each literal becomes a parameter that binds as the literal would: a string `$n`
//! (untyped, so its type comes from its context, as the literal's does), an integer
//! that fits int4 `$n::int4`, one that fits int8 `$n::int8`, any other number
//! `$n::numeric` (only when its numeric value prints back as written, so that
//! nothing is rounded). The shape text is the cache key, so it carries each
//! literal's kind.
//!
//! What the engine adds (`plan_cache.rs`): a shaped statement's plan is kept only
//! when no literal value could have changed it (an index lookup of one row,
//! or no table read at all); otherwise the shape is declined and remembered as
//! such, and its statements are planned with their literals as before. A value that
//! does not cast to the type its parameter was given declines that one execution.

use crate::error::{Error, ErrorKind};
use crate::types::{Decimal, Value};

/// A statement's shape: the text with its literals as parameters, their values, and
/// where each literal was (to map an error's position back to the original text).
#[derive(Debug)]
pub struct Shape {
    /// The shaped text (the cache key).
    pub text: String,
    pub values: Vec<Value>,
    /// Each replaced literal: (start in `text`, end in `text`, start in the original,
    /// end in the original).
    spans: Vec<(usize, usize, usize, usize)>,
}

impl Shape {
    /// The position in the original text of byte `p` of the shaped text.
    pub fn original_position(&self, p: usize) -> usize {
        let mut delta: isize = 0;
        for &(s, e, os, oe) in &self.spans {
            if p < s {
                break;
            }
            if p < e {
                return os;
            }
            delta = oe as isize - e as isize;
        }
        (p as isize + delta).max(0) as usize
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Tok {
    Word,
    QuotedIdent,
    /// A string literal; `plain` when it has no prefix (`E'…'` and the like).
    Str { plain: bool },
    Num,
    Op,
    Open,
    Close,
    Comma,
    Semi,
    Other,
}

#[derive(Clone, Copy, PartialEq)]
enum Paren {
    InList,
    Values,
    /// A function call's or type modifier's arguments: nothing inside is shaped.
    Call,
    Other,
}

struct Token {
    tok: Tok,
    start: usize,
    end: usize,
}

fn is_word_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80
}

fn is_op_char(b: u8) -> bool {
    b"+-*/<>=~!@#%^&|`:".contains(&b)
}

/// The tokens of `sql`, or `None` for anything the scanner does not handle.
fn tokens(sql: &str) -> Option<Vec<Token>> {
    let b = sql.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let start = i;
        match c {
            b' ' | b'\t' | b'\n' | b'\r' | b'\x0c' => {
                i += 1;
                continue;
            }
            b'-' if b.get(i + 1) == Some(&b'-') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                // An unclosed comment is the parser's error to report.
                i = crate::parser::block_comment_end(b, i)?;
                continue;
            }
            b'$' | b'?' | b'\\' => return None,
            b'\'' => {
                let plain = !(i > 0 && (is_word_char(b[i - 1]) || b[i - 1] == b'&'));
                i += 1;
                loop {
                    match b.get(i) {
                        None => return None,
                        Some(b'\'') if b.get(i + 1) == Some(&b'\'') => i += 2,
                        Some(b'\'') => {
                            i += 1;
                            break;
                        }
                        Some(_) => i += 1,
                    }
                }
                if !plain {
                    // The prefix was scanned as a word: it is part of this literal.
                    if out.last().is_some_and(|t: &Token| t.end == start && t.tok == Tok::Word) {
                        out.pop();
                    }
                }
                out.push(Token { tok: Tok::Str { plain }, start, end: i });
                continue;
            }
            b'"' => {
                i += 1;
                loop {
                    match b.get(i) {
                        None => return None,
                        Some(b'"') if b.get(i + 1) == Some(&b'"') => i += 2,
                        Some(b'"') => {
                            i += 1;
                            break;
                        }
                        Some(_) => i += 1,
                    }
                }
                out.push(Token { tok: Tok::QuotedIdent, start, end: i });
                continue;
            }
            b'0'..=b'9' | b'.' if c != b'.' || b.get(i + 1).is_some_and(u8::is_ascii_digit) => {
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
                if b.get(i) == Some(&b'.') {
                    i += 1;
                    while i < b.len() && b[i].is_ascii_digit() {
                        i += 1;
                    }
                }
                if matches!(b.get(i), Some(b'e' | b'E')) {
                    i += 1;
                    if matches!(b.get(i), Some(b'+' | b'-')) {
                        i += 1;
                    }
                    if !b.get(i).is_some_and(u8::is_ascii_digit) {
                        return None;
                    }
                    while i < b.len() && b[i].is_ascii_digit() {
                        i += 1;
                    }
                }
                // `1abc`, `0x1F`, `1_000`, `1.2.3`: not the scanner's business.
                if b.get(i).is_some_and(|&c| is_word_char(c) || c == b'.') {
                    return None;
                }
                out.push(Token { tok: Tok::Num, start, end: i });
                continue;
            }
            b'(' | b'[' => out.push(Token { tok: Tok::Open, start, end: i + 1 }),
            b')' | b']' => out.push(Token { tok: Tok::Close, start, end: i + 1 }),
            b',' => out.push(Token { tok: Tok::Comma, start, end: i + 1 }),
            b';' => out.push(Token { tok: Tok::Semi, start, end: i + 1 }),
            c if is_word_char(c) => {
                while i < b.len() && is_word_char(b[i]) {
                    i += 1;
                }
                out.push(Token { tok: Tok::Word, start, end: i });
                continue;
            }
            c if is_op_char(c) => {
                while i < b.len()
                    && is_op_char(b[i])
                    && !(b[i] == b'-' && b.get(i + 1) == Some(&b'-'))
                    && !(b[i] == b'/' && b.get(i + 1) == Some(&b'*'))
                {
                    i += 1;
                }
                out.push(Token { tok: Tok::Op, start, end: i });
                continue;
            }
            _ => out.push(Token { tok: Tok::Other, start, end: i + 1 }),
        }
        i += 1;
    }
    Some(out)
}

/// Keywords that may stand right before a comparison operator without being a
/// column name, or before `(` without making it a call.
const KEYWORDS: &[&str] = &[
    "select", "from", "where", "and", "or", "not", "on", "join", "inner", "left", "right", "full", "cross",
    "natural", "outer", "exists", "as", "with", "union", "intersect", "except", "all", "any", "some",
    "having", "when", "then", "else", "end", "case", "set", "returning", "by", "using", "into", "lateral",
    "distinct", "between", "is", "like", "ilike", "similar", "in", "values", "null", "true", "false",
    "default", "over", "order", "group", "limit", "offset", "update", "delete", "insert", "array", "row",
    "interval", "date", "time", "timestamp", "collate", "escape", "filter", "within", "only", "do",
    "conflict", "nothing", "current_date", "current_time", "current_timestamp", "localtime",
    "localtimestamp", "user", "current_user", "session_user",
];

/// Keywords that may follow a shaped literal.
const FOLLOWERS: &[&str] =
    &["and", "or", "where", "returning", "order", "group", "having", "limit", "offset"];

/// The shape of `sql`, or `None` when it has no literal to replace or anything the
/// scanner is not sure of (see the module's documentation).
pub fn shape(sql: &str) -> Option<Shape> {
    let toks = tokens(sql)?;
    let word = |t: &Token| &sql[t.start..t.end];
    let is_kw = |t: &Token, set: &[&str]| t.tok == Tok::Word && set.iter().any(|k| word(t).eq_ignore_ascii_case(k));
    let first = toks.first()?;
    if !is_kw(first, &["select", "insert", "update", "delete"]) {
        return None;
    }
    // One statement: a `;` only at the end.
    if let Some(at) = toks.iter().position(|t| t.tok == Tok::Semi)
        && at + 1 != toks.len()
    {
        return None;
    }
    // The binder matches GROUP BY, HAVING, window PARTITION/ORDER BY, DISTINCT's ORDER
    // BY, a set operation's ORDER BY and an ON CONFLICT target with the select list
    // by equality of their bound expressions: with each literal a parameter of its
    // own, `SELECT a > 1 … GROUP BY a > 1` would compare `a > $1` with `a > $2` and
    // fail (42803). Such statements run with their literals.
    if toks.iter().any(|t| is_kw(t, &["group", "having", "distinct", "over", "window", "conflict", "union", "intersect", "except"])) {
        return None;
    }
    // Each parenthesis's kind, and for each `)` the kind of the group it closed.
    let mut stack: Vec<Paren> = Vec::new();
    let mut closed: Vec<Option<Paren>> = vec![None; toks.len()];
    let mut calls = 0usize;
    let mut replace: Vec<(usize, &'static str, Value)> = Vec::new();
    for (i, t) in toks.iter().enumerate() {
        let prev = i.checked_sub(1).map(|j| &toks[j]);
        match t.tok {
            Tok::Open => {
                let kind = if sql.as_bytes()[t.start] == b'[' {
                    Paren::Call
                } else {
                    match prev {
                        Some(p) if is_kw(p, &["in"]) => Paren::InList,
                        Some(p) if is_kw(p, &["values"]) => Paren::Values,
                        Some(p) if p.tok == Tok::Comma && i >= 2 && closed[i - 2] == Some(Paren::Values) => {
                            Paren::Values
                        }
                        Some(p) if p.tok == Tok::Word && !is_kw(p, KEYWORDS) => Paren::Call,
                        Some(p) if p.tok == Tok::QuotedIdent => Paren::Call,
                        _ => Paren::Other,
                    }
                };
                if kind == Paren::Call {
                    calls += 1;
                }
                stack.push(kind);
            }
            Tok::Close => {
                let kind = stack.pop()?;
                if kind == Paren::Call {
                    calls -= 1;
                }
                closed[i] = Some(kind);
            }
            Tok::Num | Tok::Str { plain: true } if calls == 0 => {
                let Some(p) = prev else { continue };
                let next = toks.get(i + 1);
                let ends = match next {
                    None => true,
                    Some(n) => matches!(n.tok, Tok::Close | Tok::Comma | Tok::Semi) || is_kw(n, FOLLOWERS),
                };
                if !ends {
                    continue;
                }
                let listed = matches!(stack.last(), Some(Paren::InList | Paren::Values));
                let position_ok = match p.tok {
                    Tok::Op => {
                        matches!(word(p), "=" | "<>" | "!=" | "<" | ">" | "<=" | ">=")
                            && i >= 2
                            && {
                                let pp = &toks[i - 2];
                                pp.tok == Tok::QuotedIdent || (pp.tok == Tok::Word && !is_kw(pp, KEYWORDS))
                            }
                    }
                    Tok::Open | Tok::Comma => listed && matches!(next.map(|n| n.tok), Some(Tok::Close | Tok::Comma)),
                    _ => false,
                };
                if !position_ok {
                    continue;
                }
                let text = word(t);
                let (cast, value) = if t.tok == Tok::Num {
                    match number(text) {
                        Some(x) => x,
                        None => continue,
                    }
                } else {
                    ("", Value::Text(text[1..text.len() - 1].replace("''", "'")))
                };
                replace.push((i, cast, value));
            }
            _ => {}
        }
    }
    if !stack.is_empty() || replace.is_empty() {
        return None;
    }
    let mut text = String::with_capacity(sql.len() + 8 * replace.len());
    let mut values = Vec::with_capacity(replace.len());
    let mut spans = Vec::with_capacity(replace.len());
    let mut at = 0;
    for (n, (i, cast, value)) in replace.into_iter().enumerate() {
        let t = &toks[i];
        text.push_str(&sql[at..t.start]);
        let s = text.len();
        use std::fmt::Write;
        let _ = write!(text, "${}{cast}", n + 1);
        spans.push((s, text.len(), t.start, t.end));
        values.push(value);
        at = t.end;
    }
    text.push_str(&sql[at..]);
    Some(Shape { text, values, spans })
}

/// A number literal's cast suffix and value, as the binder types the literal
/// (`binder::expr::number_literal`): int4, int8, else numeric when its value prints
/// back exactly as written (nothing rounded, no exponent); `None` otherwise.
fn number(text: &str) -> Option<(&'static str, Value)> {
    if let Ok(i) = text.parse::<i32>() {
        return Some(("::int4", Value::Integer(i)));
    }
    if let Ok(i) = text.parse::<i64>() {
        return Some(("::int8", Value::BigInt(i)));
    }
    let d = Decimal::parse(text).ok()?;
    (d.to_string() == text).then_some(("::numeric", Value::Decimal(d)))
}

/// SQLSTATEs of the engine's "not as a shape" answers (never seen by a caller: the
/// session runs the statement with its literals instead).
const DECLINED_SHAPE: &str = "XXS01";
const DECLINED_VALUES: &str = "XXS02";

/// The plan of a shaped statement could depend on its literals' values: the shape
/// is not used (now or again).
pub fn declined_shape() -> Error {
    Error::new(ErrorKind::Internal, DECLINED_SHAPE, "statement shape declined: its plan depends on literal values")
}

/// A value does not cast to its parameter's type: this execution runs with its
/// literals (which report the error as the literal statement does).
pub fn declined_values() -> Error {
    Error::new(ErrorKind::Internal, DECLINED_VALUES, "statement shape declined for these values")
}

/// `Some(true)` for [`declined_shape`], `Some(false)` for [`declined_values`].
pub fn declined(e: &Error) -> Option<bool> {
    match e.sqlstate {
        DECLINED_SHAPE => Some(true),
        DECLINED_VALUES => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(sql: &str) -> Option<String> {
        shape(sql).map(|s| s.text)
    }

    #[test]
    fn literals_in_safe_positions_become_parameters() {
        assert_eq!(key("SELECT * FROM t WHERE k = 5").as_deref(), Some("SELECT * FROM t WHERE k = $1::int4"));
        assert_eq!(
            key("UPDATE t SET v = 'it''s', w = 3000000000 WHERE k = 1.50").as_deref(),
            Some("UPDATE t SET v = $1, w = $2::int8 WHERE k = $3::numeric")
        );
        assert_eq!(
            key("INSERT INTO t VALUES (1, 'a', now(), 2), (3, 'b', f(4), 5)").as_deref(),
            Some("INSERT INTO t VALUES ($1::int4, $2, now(), $3::int4), ($4::int4, $5, f(4), $6::int4)")
        );
        assert_eq!(key("SELECT a FROM t WHERE a IN (1, 2) AND b = 'x'").as_deref(), Some("SELECT a FROM t WHERE a IN ($1::int4, $2::int4) AND b = $3"));
        let s = shape("SELECT * FROM t WHERE k = 'abc'").unwrap();
        assert_eq!(s.values, vec![Value::Text("abc".into())]);
        assert_eq!(s.original_position(s.text.len() - 1), "SELECT * FROM t WHERE k = ".len());
    }

    #[test]
    fn unsafe_positions_stay() {
        for sql in [
            "SELECT 1",
            "SELECT * FROM t WHERE k = -5",
            "SELECT * FROM t WHERE k = 5::int8",
            "SELECT * FROM t WHERE k = 5 + 1",
            "SELECT * FROM t WHERE k BETWEEN 1 AND 5",
            "SELECT * FROM t LIMIT 5",
            "SELECT * FROM t WHERE k = $1",
            "SELECT * FROM t WHERE k = ?",
            "SELECT * FROM t WHERE k = E'a\\nb'",
            "SELECT * FROM t WHERE d = DATE '2020-01-01'",
            "SELECT * FROM t WHERE f(k = 5)",
            "SELECT to_char(d, 'YYYY') FROM t",
            "SELECT * FROM t WHERE k = 1e5",
            "SELECT * FROM t WHERE k = .5",
            "SELECT * FROM t WHERE k = 5; SELECT 2",
            "EXPLAIN SELECT * FROM t WHERE k = 5",
            "SET x = 5",
            "SELECT * FROM t WHERE k = NULL",
            "SELECT * FROM t ORDER BY 1",
            "SELECT CASE WHEN k = 1 THEN 2 END FROM t",
            "SELECT * FROM t WHERE k = 'a' 'b'",
            "CREATE TABLE t (a varchar(5) DEFAULT 'x')",
            "SELECT * FROM t WHERE k = 5 /* unterminated",
        ] {
            assert_eq!(key(sql), None, "{sql}");
        }
        // Comments are kept, and a literal inside one is not a literal.
        assert_eq!(
            key("SELECT * /* k = 1 */ FROM t -- k = 2\n WHERE k = 3").as_deref(),
            Some("SELECT * /* k = 1 */ FROM t -- k = 2\n WHERE k = $1::int4")
        );
    }
}
