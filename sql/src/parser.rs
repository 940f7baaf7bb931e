//! Parsing: the `sqlparser` crate with its PostgreSQL dialect, and the glue that turns
//! its errors and source spans into byte offsets of the statement text.
//!
//! Three additions to the PostgreSQL dialect: SQLite's `BEGIN {DEFERRED | IMMEDIATE |
//! EXCLUSIVE} [TRANSACTION]` (see [`begin_with_modifier`]) and its `INTEGER PRIMARY
//! KEY AUTOINCREMENT` (an identity column, see [`autoincrement_as_identity`]), and
//! PostgreSQL's own `CLUSTER` and `ALTER SEQUENCE`, which sqlparser does not read
//! ([`cluster`], [`alter_sequence`]).

use sqlparser::ast::{BeginTransactionKind, Statement, TransactionModifier};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Location, Span, Token};

use crate::error::{Error, Result};

/// Deepest expression or query nesting the parser accepts (deeper input is an error,
/// not a stack overflow): parentheses (subqueries among them), NOTs in a row, unary
/// `-`/`+` in a row and open CASEs, counted together by [`check_chains`] before parsing, which refuses deeper
/// statements with SQLSTATE 54001.
pub const MAX_NESTING: usize = 200;

/// sqlparser's own recursion limit. sqlparser spends up to about three of its levels on
/// one level of ours (a subquery: the parenthesis, the query, the expression), and some
/// of its paths turn its limit into a syntax error at the next token (197 NOTs said
/// `column "not" does not exist`, 198 `syntax error at or near "true"`), so its limit
/// sits far above what [`check_chains`] lets through: every statement within
/// [`MAX_NESTING`] parses, and deeper ones get the pre-check's clear 54001. Its levels
/// are stack frames: a statement nested more than [`SHALLOW`] levels is parsed on a
/// fresh stack segment of [`PARSE_STACK`] bytes.
const SQLPARSER_RECURSION_LIMIT: usize = 5 * MAX_NESTING + 50;

/// Nesting (as [`check_chains`] counts it) up to which a statement is parsed on the
/// caller's stack: sqlparser used up to 200 levels there before.
const SHALLOW: usize = 40;

/// The stack a deeply nested statement is parsed on (mapped lazily: only the pages
/// touched are memory); sqlparser's frames at [`SQLPARSER_RECURSION_LIMIT`] fit
/// several times over.
const PARSE_STACK: usize = 64 << 20;

/// Deepest nesting of views one statement may expand: each level is bound on a
/// guarded stack (`crate::stack`), so the limit bounds the work of re-binding a view
/// chain (quadratic when views are created one on another), not the stack. Deeper is
/// SQLSTATE 54001; a view that reaches itself is PostgreSQL's 42P17 "infinite recursion".
pub const MAX_VIEW_DEPTH: usize = 200;

/// Most operators one expression may chain without parentheses or commas: a chain
/// such as `1+1+…` or `a AND b AND …` becomes a tree as deep as it is long.
pub const MAX_OPERATOR_CHAIN: usize = 2000;

/// Bytes the parser holds, about, per byte of SQL outside string literals: the
/// token list (about 90 bytes a token) and the syntax tree built from it. Measured
/// on a 28 MB `INSERT … VALUES` of 1M three-column rows, which peaked at 2.6 GB
/// (95 bytes per byte of text); a string literal costs about its own length.
pub const PARSE_BYTES_PER_SQL_BYTE: usize = 100;

/// Bytes the parse of a statement holds, about, for each string literal beyond its
/// text: its token, its syntax-tree node, the value bound from it and, in an `IN`
/// list, its set entry. Measured (issue 16): an `IN` list of 100,000 110-byte
/// strings, 11 MB of SQL, peaked at 316 MB, about 3 KB a literal, where the estimate
/// charged its text once and its quotes and comma 100 times (about 500 bytes).
pub const PARSE_BYTES_PER_LITERAL: usize = 2048;

/// What parsing `sql` holds at its peak, about (see [`PARSE_BYTES_PER_SQL_BYTE`]):
/// bytes inside string literals — `'…'`, `E'…'` with its backslash escapes, and
/// `$tag$…$tag$` — count once, and each literal [`PARSE_BYTES_PER_LITERAL`] more;
/// every other byte counts 100 times. Quotes inside comments and
/// double-quoted identifiers start nothing, so text after `-- it's` is not taken for
/// a literal (that would let a long statement through at a hundredth of its cost).
pub fn parse_bytes_estimate(sql: &str) -> usize {
    let b = sql.as_bytes();
    let is_ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80;
    let mut quoted = 0usize;
    let mut literals = 0usize;
    let mut i = 0;
    while i < b.len() {
        if let Some(end) = comment_end(b, i) {
            i = end;
            continue;
        }
        match b[i] {
            b'\'' => {
                // An E'…' literal reads backslash escapes; `xE'` is an identifier
                // followed by a plain literal.
                let escapes = i >= 1 && matches!(b[i - 1], b'e' | b'E') && (i < 2 || !is_ident(b[i - 2]));
                let start = i + 1;
                i += 1;
                while i < b.len() {
                    if escapes && b[i] == b'\\' {
                        i += 2;
                        continue;
                    }
                    if b[i] == b'\'' {
                        if b.get(i + 1) == Some(&b'\'') {
                            i += 2;
                            continue;
                        }
                        break;
                    }
                    i += 1;
                }
                quoted += i.min(b.len()) - start;
                literals += 1;
                i += 1;
            }
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += 1;
                }
                i += 1;
            }
            // `$tag$…$tag$` (the tag empty or an identifier not starting with a digit;
            // `$1` is a parameter), not inside an identifier (`a$b`).
            b'$' if i == 0 || !is_ident(b[i - 1]) => {
                let mut j = i + 1;
                while j < b.len() && is_ident(b[j]) && b[j] != b'$' {
                    j += 1;
                }
                let tag_ok = b.get(j) == Some(&b'$') && !b.get(i + 1).is_some_and(|c| c.is_ascii_digit());
                if !tag_ok {
                    i += 1;
                    continue;
                }
                let tag = &b[i..=j];
                let start = j + 1;
                let end = b[start..].windows(tag.len()).position(|w| w == tag).map_or(b.len(), |p| start + p);
                quoted += end - start;
                literals += 1;
                i = (end + tag.len()).min(b.len());
            }
            _ => i += 1,
        }
    }
    (sql.len() - quoted)
        .saturating_mul(PARSE_BYTES_PER_SQL_BYTE)
        .saturating_add(literals.saturating_mul(PARSE_BYTES_PER_LITERAL))
        .saturating_add(quoted)
}

/// Refuses, before parsing, SQL whose parse would hold more than `memory_limit`
/// bytes (SQLSTATE 53200): the syntax tree of a statement, above all a long `VALUES`
/// list, is held whole, at about 100 times the text (issue 16: 1M rows of VALUES,
/// 28 MB of text, took 2.6 GB). Under the default limit of 1 GB that allows about
/// 10 MB of SQL outside string literals; COPY loads rows of any number.
pub fn check_parse_size(sql: &str, memory_limit: usize) -> Result<()> {
    let needs = parse_bytes_estimate(sql);
    if needs <= memory_limit {
        return Ok(());
    }
    let suggest = (needs / (1024 * 1024)).saturating_add(1);
    Err(Error::limit(format!(
        "memory limit exceeded: parsing {} bytes of SQL needs about {needs} bytes, more than {memory_limit}; \
         raise it with SET memory_limit = '{suggest}MB', or load rows with COPY",
        sql.len()
    )))
}

/// Where the comment starting at `b[i]` ends (the index past it, or past its line
/// for `--`), when one starts there: `-- …` to the end of the line, `/* … */`
/// nested as PostgreSQL nests them (an unterminated one runs to the end).
fn comment_end(b: &[u8], i: usize) -> Option<usize> {
    match (b.get(i), b.get(i + 1)) {
        (Some(b'-'), Some(b'-')) => Some(b[i..].iter().position(|&c| c == b'\n').map_or(b.len(), |p| i + p)),
        (Some(b'/'), Some(b'*')) => Some(block_comment_end(b, i).unwrap_or(b.len())),
        _ => None,
    }
}

/// Where the block comment opening at `b[i]` (`/*`) closes: the index past its `*/`,
/// comments nested inside it counted as PostgreSQL counts them; `None` when it is
/// never closed.
pub(crate) fn block_comment_end(b: &[u8], mut i: usize) -> Option<usize> {
    let mut depth = 0usize;
    while i + 1 < b.len() {
        if b[i] == b'/' && b[i + 1] == b'*' {
            depth += 1;
            i += 2;
        } else if b[i] == b'*' && b[i + 1] == b'/' {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return Some(i);
            }
        } else {
            i += 1;
        }
    }
    None
}

/// Rewrites `?` placeholders (outside strings, identifiers and comments) as `$1`,
/// `$2`, … so both parameter styles reach the PostgreSQL dialect. Returns `None`
/// when there is none. Positions after a rewritten `?` move by the added digits.
fn number_question_marks(sql: &str) -> Option<String> {
    if !sql.contains('?') {
        return None;
    }
    let b = sql.as_bytes();
    let mut out = String::with_capacity(sql.len() + 8);
    let mut n = 0;
    let mut i = 0;
    let mut last = 0;
    while i < b.len() {
        if let Some(end) = comment_end(b, i) {
            i = end;
            continue;
        }
        match b[i] {
            q @ (b'\'' | b'"') => {
                i += 1;
                while i < b.len() {
                    if b[i] == q {
                        if i + 1 < b.len() && b[i + 1] == q {
                            i += 2;
                            continue;
                        }
                        break;
                    }
                    i += 1;
                }
                i += 1;
            }
            b'?' => {
                n += 1;
                out.push_str(&sql[last..i]);
                out.push_str(&format!("${n}"));
                i += 1;
                last = i;
            }
            _ => i += 1,
        }
    }
    if n == 0 {
        return None;
    }
    out.push_str(&sql[last.min(sql.len())..]);
    Some(out)
}

/// SQLite's `INTEGER PRIMARY KEY AUTOINCREMENT`, which sqlparser's PostgreSQL
/// dialect reads and then drops, rewritten as the PostgreSQL column it stands for:
/// `… PRIMARY KEY GENERATED BY DEFAULT AS IDENTITY` (numbered unless a value is
/// given). Only the word right after `KEY` is rewritten, where SQLite allows it.
/// `None` when there is none. Positions after it move by the added characters.
fn autoincrement_as_identity(sql: &str) -> Option<String> {
    if !sql.to_ascii_lowercase().contains("autoincrement") {
        return None;
    }
    let dialect = PostgreSqlDialect {};
    let tokens = sqlparser::tokenizer::Tokenizer::new(&dialect, sql).tokenize_with_location().ok()?;
    let mut out = String::with_capacity(sql.len() + 32);
    let mut last = 0;
    let mut previous: Option<&Token> = None;
    for t in &tokens {
        if matches!(t.token, Token::Whitespace(_)) {
            continue;
        }
        if let Token::Word(w) = &t.token
            && w.quote_style.is_none()
            && w.keyword == Keyword::AUTOINCREMENT
            && matches!(previous, Some(Token::Word(k)) if k.quote_style.is_none() && k.keyword == Keyword::KEY)
        {
            let start = offset_of(sql, t.span.start)?;
            let end = offset_of(sql, t.span.end)?;
            out.push_str(&sql[last..start]);
            out.push_str("GENERATED BY DEFAULT AS IDENTITY");
            last = end;
        }
        previous = Some(&t.token);
    }
    if last == 0 {
        return None;
    }
    out.push_str(&sql[last..]);
    Some(out)
}

/// Parses every statement in `sql`.
pub fn parse(sql: &str) -> Result<Vec<Statement>> {
    if let Some(rewritten) = number_question_marks(sql) {
        return parse(&rewritten);
    }
    if let Some(rewritten) = autoincrement_as_identity(sql) {
        return parse(&rewritten);
    }
    if let Some(rewritten) = identity_options_in_order(sql) {
        return parse(&rewritten);
    }
    if let Some((blanked, names)) = identity_sequence_names(sql) {
        let mut statements = parse(&blanked)?;
        mark_sequence_names(sql, &mut statements, &names)?;
        return Ok(statements);
    }
    if let Some((blanked, marks)) = overriding_clauses(sql) {
        let mut statements = parse(&blanked)?;
        mark_overriding(sql, &mut statements, &marks)?;
        return Ok(statements);
    }
    let depth = check_chains(sql)?;
    let parse = || {
        let dialect = PostgreSqlDialect {};
        let parser = Parser::new(&dialect).with_recursion_limit(SQLPARSER_RECURSION_LIMIT);
        let mut parser = parser.try_with_sql(sql).map_err(|e| parse_error(sql, e))?;
        parse_statements(&mut parser).map_err(|e| parse_error(sql, e))
    };
    let statements = if depth <= SHALLOW { parse()? } else { stacker::grow(PARSE_STACK, parse)? };
    for s in &statements {
        refuse_reserved_relation_names(sql, s)?;
    }
    Ok(statements)
}

/// Takes a statement's syntax tree apart so that dropping it recurses no deeper than
/// the nesting [`MAX_NESTING`] bounds. A chain of operators (`x = 1 OR x = 1 OR …`,
/// 2,000 of them at each of 200 levels of parentheses) is a tree as deep as it is
/// long, and the tree's drop glue takes stack frames per level on whatever stack the
/// caller has: a 50,000-term chain overflowed a 2 MiB thread when the statement was
/// dropped. Chains are moved out of the tree and dropped one node at a time. Only
/// texts longer than [`DEEP_TEXT_BYTES`] can hold chains that deep; a caller may skip
/// shorter ones.
pub fn dismantle(statement: &mut Statement) {
    use sqlparser::ast::{Expr, VisitMut, VisitorMut};
    use std::ops::ControlFlow;
    struct Flatten;
    impl VisitorMut for Flatten {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
            flatten(e);
            ControlFlow::Continue(())
        }
    }
    fn flatten(e: &mut Expr) {
        if !is_chain(e) {
            return;
        }
        let mut todo = vec![std::mem::replace(e, Expr::value(sqlparser::ast::Value::Null))];
        while let Some(x) = todo.pop() {
            match x {
                Expr::BinaryOp { left, right, .. }
                | Expr::IsDistinctFrom(left, right)
                | Expr::IsNotDistinctFrom(left, right)
                | Expr::AnyOp { left, right, .. }
                | Expr::AllOp { left, right, .. } => {
                    todo.push(*left);
                    todo.push(*right);
                }
                Expr::IsFalse(x)
                | Expr::IsNotFalse(x)
                | Expr::IsTrue(x)
                | Expr::IsNotTrue(x)
                | Expr::IsNull(x)
                | Expr::IsNotNull(x)
                | Expr::IsUnknown(x)
                | Expr::IsNotUnknown(x)
                | Expr::Nested(x)
                | Expr::UnaryOp { expr: x, .. } => todo.push(*x),
                // Anything else may hold chains of its own (a function's arguments, a
                // CASE, a subquery): one level of nesting, on the guarded stack.
                mut other => crate::stack::guarded(|| {
                    let _ = other.visit(&mut Flatten);
                    drop(other);
                }),
            }
        }
    }
    fn is_chain(e: &Expr) -> bool {
        matches!(
            e,
            Expr::BinaryOp { .. }
                | Expr::IsDistinctFrom(..)
                | Expr::IsNotDistinctFrom(..)
                | Expr::AnyOp { .. }
                | Expr::AllOp { .. }
                | Expr::IsFalse(_)
                | Expr::IsNotFalse(_)
                | Expr::IsTrue(_)
                | Expr::IsNotTrue(_)
                | Expr::IsNull(_)
                | Expr::IsNotNull(_)
                | Expr::IsUnknown(_)
                | Expr::IsNotUnknown(_)
                | Expr::Nested(_)
                | Expr::UnaryOp { .. }
        )
    }
    crate::stack::guarded(|| {
        let _ = statement.visit(&mut Flatten);
    });
}

/// Statement texts up to this long make trees shallow enough to drop as they are (see
/// [`dismantle`]): each level of a tree takes at least one byte of text.
pub const DEEP_TEXT_BYTES: usize = 4096;

/// PostgreSQL's reserved key words (those that may not name a table, not even a
/// function or type), lower case.
const RESERVED: &[&str] = &[
    "all", "analyse", "analyze", "and", "any", "array", "as", "asc", "asymmetric", "authorization", "binary",
    "both", "case", "cast", "check", "collate", "collation", "column", "concurrently", "constraint", "create",
    "cross", "current_catalog", "current_date", "current_role", "current_schema", "current_time",
    "current_timestamp", "current_user", "default", "deferrable", "desc", "distinct", "do", "else", "end",
    "except", "false", "fetch", "for", "foreign", "freeze", "from", "full", "grant", "group", "having", "ilike",
    "in", "initially", "inner", "intersect", "into", "is", "isnull", "join", "lateral", "leading", "left", "like",
    "limit", "localtime", "localtimestamp", "natural", "not", "notnull", "null", "offset", "on", "only", "or",
    "order", "outer", "overlaps", "placing", "primary", "references", "returning", "right", "select",
    "session_user", "similar", "some", "symmetric", "table", "tablesample", "then", "to", "trailing", "true",
    "union", "unique", "user", "using", "variadic", "verbose", "when", "where", "window", "with",
];

/// sqlparser reads a reserved word where a table name or a table alias goes
/// (`SELECT FROM WHERE` reads a table named "where"); PostgreSQL does not: 42601
/// `syntax error at or near "where"` at the word. Quoted names are names.
fn refuse_reserved_relation_names(sql: &str, statement: &Statement) -> Result<()> {
    use sqlparser::ast::{Ident, ObjectName, ObjectNamePart, TableFactor, Visit, Visitor};
    use std::ops::ControlFlow;
    struct Find(Option<Ident>);
    impl Find {
        fn check(&mut self, i: &Ident) -> ControlFlow<()> {
            if i.quote_style.is_none() && RESERVED.contains(&i.value.to_ascii_lowercase().as_str()) {
                self.0 = Some(i.clone());
                return ControlFlow::Break(());
            }
            ControlFlow::Continue(())
        }
    }
    impl Visitor for Find {
        type Break = ();
        fn pre_visit_relation(&mut self, name: &ObjectName) -> ControlFlow<()> {
            for part in &name.0 {
                if let ObjectNamePart::Identifier(i) = part {
                    self.check(i)?;
                }
            }
            ControlFlow::Continue(())
        }
        fn pre_visit_table_factor(&mut self, t: &TableFactor) -> ControlFlow<()> {
            if let TableFactor::Table { alias: Some(a), .. } | TableFactor::Derived { alias: Some(a), .. } = t {
                self.check(&a.name)?;
            }
            ControlFlow::Continue(())
        }
    }
    let mut find = Find(None);
    let _ = statement.visit(&mut find);
    match find.0 {
        None => Ok(()),
        Some(word) => Err(Error::syntax(format!("syntax error at or near \"{}\"", word.value))
            .at(span_offset(sql, word.span))),
    }
}

/// `Parser::parse_statements`: statements separated by semicolons (empty ones
/// skipped), each read by the PostgreSQL dialect except SQLite's `BEGIN` forms,
/// which [`begin_with_modifier`] reads. (Unlike sqlparser's loop, this one does not
/// stop silently at an `END` where a statement should end: that is a syntax error.)
fn parse_statements(parser: &mut Parser) -> Result<Vec<Statement>, ParserError> {
    let mut statements = Vec::new();
    loop {
        while parser.consume_token(&Token::SemiColon) {}
        if parser.peek_token_ref().token == Token::EOF {
            return Ok(statements);
        }
        let statement = match begin_with_modifier(parser) {
            Some(statement) => statement,
            None => match cluster(parser)? {
                Some(statement) => statement,
                None => match alter_sequence(parser)? {
                    Some(statement) => statement,
                    None => match parser.maybe_parse(create_sequence)? {
                        Some(statement) => statement,
                        None => parser.parse_statement()?,
                    },
                },
            },
        };
        statements.push(statement);
        if !matches!(parser.peek_token_ref().token, Token::SemiColon | Token::EOF) {
            return parser.expected_ref("end of statement", parser.peek_token_ref());
        }
    }
}

/// SQLite's `BEGIN {DEFERRED | IMMEDIATE | EXCLUSIVE} [TRANSACTION]`, which the
/// PostgreSQL dialect rejects (in PostgreSQL no such word may follow `BEGIN`, so no
/// statement PostgreSQL accepts is read differently). `None`, consuming nothing,
/// for any other statement. Whatever follows is left to the caller, which wants the
/// end of the statement: `BEGIN IMMEDIATE WORK` is a syntax error at `WORK`.
fn begin_with_modifier(parser: &mut Parser) -> Option<Statement> {
    let modifier = [
        (Keyword::DEFERRED, TransactionModifier::Deferred),
        (Keyword::IMMEDIATE, TransactionModifier::Immediate),
        (Keyword::EXCLUSIVE, TransactionModifier::Exclusive),
    ]
    .into_iter()
    .find_map(|(word, modifier)| parser.parse_keywords(&[Keyword::BEGIN, word]).then_some(modifier))?;
    let transaction = parser
        .parse_keyword(Keyword::TRANSACTION)
        .then_some(BeginTransactionKind::Transaction);
    Some(Statement::StartTransaction {
        modes: vec![],
        begin: true,
        transaction,
        modifier: Some(modifier),
        statements: vec![],
        exception: None,
        has_end_keyword: false,
    })
}

/// PostgreSQL's `CLUSTER [VERBOSE] [table [USING index]]`, which sqlparser has no
/// statement for. It is carried in [`Statement::OptimizeTable`], a statement the
/// PostgreSQL dialect never produces (it is ClickHouse's and Databricks'): `name` is
/// the table (empty for a bare `CLUSTER`), `on_cluster` the index. `None`, consuming
/// nothing, for any other statement. The engine reads it in `engine/cluster.rs`.
fn cluster(parser: &mut Parser) -> Result<Option<Statement>, ParserError> {
    if !parser.parse_keyword(Keyword::CLUSTER) {
        return Ok(None);
    }
    // VERBOSE reports progress in PostgreSQL; there is nothing to report here.
    let _ = parser.parse_keyword(Keyword::VERBOSE);
    let at_end = matches!(parser.peek_token_ref().token, Token::SemiColon | Token::EOF);
    let name = if at_end { sqlparser::ast::ObjectName(vec![]) } else { parser.parse_object_name(false)? };
    let index = if !at_end && parser.parse_keyword(Keyword::USING) { Some(parser.parse_identifier()?) } else { None };
    Ok(Some(Statement::OptimizeTable {
        name,
        has_table_keyword: false,
        on_cluster: index,
        partition: None,
        include_final: false,
        deduplicate: None,
        predicate: None,
        zorder: None,
    }))
}

/// PostgreSQL's `ALTER SEQUENCE [IF EXISTS] name [AS type] [INCREMENT [BY] n]
/// [MINVALUE n | NO MINVALUE] [MAXVALUE n | NO MAXVALUE] [START [WITH] n]
/// [RESTART [[WITH] n]] [CACHE n] [[NO] CYCLE]` (options in any order), which
/// sqlparser 0.63 has no statement for. Like CLUSTER it is carried in
/// [`Statement::OptimizeTable`] (which the PostgreSQL dialect never produces), told
/// apart by `has_table_keyword: true`: `name` is the sequence, `include_final` is IF
/// EXISTS, and `zorder` holds the options in order, each a tuple `(word, value)`:
/// `(increment, n)`, `(minvalue)` for NO MINVALUE, `(as, CAST(NULL AS type))`,
/// `(restart)` without a value, `(cycle, true|false)`; a form BeeDB does not run
/// (`RENAME TO`, `OWNED BY`, `SET …`, `OWNER TO`) is `(unsupported, 'text')`, so
/// the engine reports it with 0A000. Read back by [`alter_sequence_options`].
fn alter_sequence(parser: &mut Parser) -> Result<Option<Statement>, ParserError> {
    use sqlparser::ast::{Expr, Ident, Value};
    if let Some(statement) = parser.maybe_parse(alter_column_restart)? {
        return Ok(Some(statement));
    }
    if !parser.parse_keywords(&[Keyword::ALTER, Keyword::SEQUENCE]) {
        return Ok(None);
    }
    let if_exists = parser.parse_keywords(&[Keyword::IF, Keyword::EXISTS]);
    let name = parser.parse_object_name(false)?;
    let word = |w: &str| Expr::Identifier(Ident::new(w));
    let mut options = Vec::new();
    let unsupported = |text: &str| {
        Expr::Tuple(vec![word("unsupported"), Expr::value(Value::SingleQuotedString(text.into()))])
    };
    if parser.parse_keywords(&[Keyword::RENAME, Keyword::TO]) {
        parser.parse_identifier()?;
        options.push(unsupported("ALTER SEQUENCE … RENAME TO"));
    } else if parser.parse_keywords(&[Keyword::OWNER, Keyword::TO]) {
        parser.parse_identifier()?;
        options.push(unsupported("ALTER SEQUENCE … OWNER TO"));
    } else if parser.parse_keyword(Keyword::SET) {
        let what = parser.next_token().to_string();
        if what.eq_ignore_ascii_case("schema") {
            parser.parse_identifier()?;
        }
        options.push(unsupported(&format!("ALTER SEQUENCE … SET {}", what.to_uppercase())));
    } else {
        loop {
            if parser.parse_keyword(Keyword::AS) {
                let ty = parser.parse_data_type()?;
                let cast = Expr::Cast {
                    kind: sqlparser::ast::CastKind::Cast,
                    expr: Box::new(Expr::value(Value::Null)),
                    data_type: ty,
                    format: None,
                };
                options.push(Expr::Tuple(vec![word("as"), cast]));
            } else if parser.parse_keyword(Keyword::INCREMENT) {
                let _ = parser.parse_keyword(Keyword::BY);
                options.push(Expr::Tuple(vec![word("increment"), parser.parse_number()?]));
            } else if parser.parse_keywords(&[Keyword::NO, Keyword::MINVALUE]) {
                options.push(Expr::Tuple(vec![word("minvalue")]));
            } else if parser.parse_keywords(&[Keyword::NO, Keyword::MAXVALUE]) {
                options.push(Expr::Tuple(vec![word("maxvalue")]));
            } else if parser.parse_keywords(&[Keyword::NO, Keyword::CYCLE]) {
                options.push(Expr::Tuple(vec![word("cycle"), Expr::value(Value::Boolean(false))]));
            } else if parser.parse_keyword(Keyword::MINVALUE) {
                options.push(Expr::Tuple(vec![word("minvalue"), parser.parse_number()?]));
            } else if parser.parse_keyword(Keyword::MAXVALUE) {
                options.push(Expr::Tuple(vec![word("maxvalue"), parser.parse_number()?]));
            } else if parser.parse_keyword(Keyword::START) {
                let _ = parser.parse_keyword(Keyword::WITH);
                options.push(Expr::Tuple(vec![word("start"), parser.parse_number()?]));
            } else if parser.parse_keyword(Keyword::RESTART) {
                let with = parser.parse_keyword(Keyword::WITH);
                let value_follows = with
                    || matches!(parser.peek_token_ref().token, Token::Number(..) | Token::Minus | Token::Plus);
                if value_follows {
                    options.push(Expr::Tuple(vec![word("restart"), parser.parse_number()?]));
                } else {
                    options.push(Expr::Tuple(vec![word("restart")]));
                }
            } else if parser.parse_keyword(Keyword::CACHE) {
                options.push(Expr::Tuple(vec![word("cache"), parser.parse_number()?]));
            } else if parser.parse_keyword(Keyword::CYCLE) {
                options.push(Expr::Tuple(vec![word("cycle"), Expr::value(Value::Boolean(true))]));
            } else if parser.parse_keywords(&[Keyword::OWNED, Keyword::BY]) {
                parser.parse_object_name(false)?;
                options.push(unsupported("ALTER SEQUENCE … OWNED BY"));
            } else {
                break;
            }
        }
        if options.is_empty() {
            return parser.expected_ref("an ALTER SEQUENCE option", parser.peek_token_ref()).map(|_: ()| None);
        }
    }
    Ok(Some(carried_alter_sequence(name, if_exists, options)))
}

/// The statement that carries an ALTER SEQUENCE (or an identity column's RESTART)
/// past sqlparser, which cannot read it: [`Statement::OptimizeTable`] with
/// `has_table_keyword: true` (CLUSTER's is false), the options as `zorder` and IF
/// EXISTS as `include_final`.
fn carried_alter_sequence(name: sqlparser::ast::ObjectName, if_exists: bool, options: Vec<sqlparser::ast::Expr>) -> Statement {
    Statement::OptimizeTable {
        name,
        has_table_keyword: true,
        on_cluster: None,
        partition: None,
        include_final: if_exists,
        deduplicate: None,
        predicate: None,
        zorder: Some(options),
    }
}

/// An identity column's ALTER TABLE forms, alone in their statement:
/// `ALTER TABLE [IF EXISTS] [ONLY] t ALTER [COLUMN] c` followed by one or more of
/// `RESTART [[WITH] n]`, `SET GENERATED {ALWAYS | BY DEFAULT}` and `SET <sequence
/// option>`, or by `ADD GENERATED {ALWAYS | BY DEFAULT} AS IDENTITY [(options)]` or
/// `DROP IDENTITY [IF EXISTS]`. Carried as [`alter_sequence`] carries ALTER SEQUENCE,
/// with the table as the name and a first option `(column, c)`; then `(generated,
/// 'always'|'by default')`, `(add_identity, 'always'|'by default')` followed by its
/// options, `(drop_identity, true|false)` (IF EXISTS), and ALTER SEQUENCE's option
/// tuples. An error (any other ALTER TABLE) makes the caller read the statement
/// afresh.
fn alter_column_restart(parser: &mut Parser) -> Result<Statement, ParserError> {
    use sqlparser::ast::{Expr, Ident, Value};
    parser.expect_keywords(&[Keyword::ALTER, Keyword::TABLE])?;
    let if_exists = parser.parse_keywords(&[Keyword::IF, Keyword::EXISTS]);
    let _ = parser.parse_keyword(Keyword::ONLY);
    let name = parser.parse_object_name(false)?;
    parser.expect_keyword(Keyword::ALTER)?;
    let _ = parser.parse_keyword(Keyword::COLUMN);
    let column = parser.parse_identifier()?;
    let word = |w: &str| Expr::Identifier(Ident::new(w));
    let text = |t: &str| Expr::value(Value::SingleQuotedString(t.into()));
    let mut options = vec![Expr::Tuple(vec![word("column"), text(&column.value)])];
    let generated = |parser: &mut Parser| -> Result<&'static str, ParserError> {
        if parser.parse_keyword(Keyword::ALWAYS) {
            Ok("always")
        } else {
            parser.expect_keywords(&[Keyword::BY, Keyword::DEFAULT])?;
            Ok("by default")
        }
    };
    if parser.parse_keywords(&[Keyword::ADD, Keyword::GENERATED]) {
        let kind = generated(parser)?;
        parser.expect_keywords(&[Keyword::AS, Keyword::IDENTITY])?;
        options.push(Expr::Tuple(vec![word("add_identity"), text(kind)]));
        if parser.consume_token(&Token::LParen) {
            let parsed = sequence_options_any_order(parser, false)?;
            parser.expect_token(&Token::RParen)?;
            if let Some(n) = &parsed.sequence_name {
                options.push(Expr::Tuple(vec![word("sequence_name"), text(&n.to_string())]));
            }
            options.extend(parsed.options.iter().map(carried_option));
        }
    } else if parser.parse_keywords(&[Keyword::DROP, Keyword::IDENTITY]) {
        let if_exists = parser.parse_keywords(&[Keyword::IF, Keyword::EXISTS]);
        options.push(Expr::Tuple(vec![word("drop_identity"), Expr::value(Value::Boolean(if_exists))]));
    } else {
        loop {
            if parser.parse_keyword(Keyword::RESTART) {
                let with = parser.parse_keyword(Keyword::WITH);
                if with || matches!(parser.peek_token_ref().token, Token::Number(..) | Token::Minus | Token::Plus) {
                    options.push(Expr::Tuple(vec![word("restart"), parser.parse_number()?]));
                } else {
                    options.push(Expr::Tuple(vec![word("restart")]));
                }
            } else if parser.parse_keywords(&[Keyword::SET, Keyword::GENERATED]) {
                let kind = generated(parser)?;
                options.push(Expr::Tuple(vec![word("generated"), text(kind)]));
            } else if parser.parse_keyword(Keyword::SET) {
                let option = sequence_option(parser)?
                    .ok_or_else(|| ParserError::ParserError("Expected: a sequence option after SET".into()))?;
                options.push(carried_option(&option));
            } else {
                break;
            }
        }
        if options.len() == 1 {
            return parser.expected_ref("RESTART or SET", parser.peek_token_ref());
        }
    }
    if !matches!(parser.peek_token_ref().token, Token::SemiColon | Token::EOF) {
        return parser.expected_ref("end of statement", parser.peek_token_ref());
    }
    Ok(carried_alter_sequence(name, if_exists, options))
}

/// A CREATE SEQUENCE option as ALTER SEQUENCE's carried tuple ([`alter_sequence`]).
fn carried_option(o: &sqlparser::ast::SequenceOptions) -> sqlparser::ast::Expr {
    use sqlparser::ast::{Expr, Ident, SequenceOptions as O, Value};
    let word = |w: &str| Expr::Identifier(Ident::new(w));
    match o {
        O::IncrementBy(e, _) => Expr::Tuple(vec![word("increment"), e.clone()]),
        O::MinValue(Some(e)) => Expr::Tuple(vec![word("minvalue"), e.clone()]),
        O::MinValue(None) => Expr::Tuple(vec![word("minvalue")]),
        O::MaxValue(Some(e)) => Expr::Tuple(vec![word("maxvalue"), e.clone()]),
        O::MaxValue(None) => Expr::Tuple(vec![word("maxvalue")]),
        O::StartWith(e, _) => Expr::Tuple(vec![word("start"), e.clone()]),
        O::Cache(e) => Expr::Tuple(vec![word("cache"), e.clone()]),
        O::Cycle(no) => Expr::Tuple(vec![word("cycle"), Expr::value(Value::Boolean(!*no))]),
    }
}

/// A carried option tuple back as a CREATE SEQUENCE option (`None` for others).
pub fn sequence_option_of(word: &str, value: Option<&sqlparser::ast::Expr>) -> Option<sqlparser::ast::SequenceOptions> {
    use sqlparser::ast::{SequenceOptions as O, Value};
    Some(match (word, value) {
        ("increment", Some(e)) => O::IncrementBy(e.clone(), true),
        ("minvalue", e) => O::MinValue(e.cloned()),
        ("maxvalue", e) => O::MaxValue(e.cloned()),
        ("start", Some(e)) => O::StartWith(e.clone(), true),
        ("cache", Some(e)) => O::Cache(e.clone()),
        ("cycle", Some(sqlparser::ast::Expr::Value(v))) => O::Cycle(v.value != Value::Boolean(true)),
        _ => return None,
    })
}

/// One option of CREATE SEQUENCE / an identity column (sqlparser's
/// `SequenceOptions`, where `Cycle(true)` is NO CYCLE); `None`, consuming nothing,
/// when no option follows.
fn sequence_option(parser: &mut Parser) -> Result<Option<sqlparser::ast::SequenceOptions>, ParserError> {
    use sqlparser::ast::SequenceOptions as O;
    Ok(Some(if parser.parse_keyword(Keyword::INCREMENT) {
        let by = parser.parse_keyword(Keyword::BY);
        O::IncrementBy(parser.parse_number()?, by)
    } else if parser.parse_keywords(&[Keyword::NO, Keyword::MINVALUE]) {
        O::MinValue(None)
    } else if parser.parse_keywords(&[Keyword::NO, Keyword::MAXVALUE]) {
        O::MaxValue(None)
    } else if parser.parse_keywords(&[Keyword::NO, Keyword::CYCLE]) {
        O::Cycle(true)
    } else if parser.parse_keyword(Keyword::MINVALUE) {
        O::MinValue(Some(parser.parse_number()?))
    } else if parser.parse_keyword(Keyword::MAXVALUE) {
        O::MaxValue(Some(parser.parse_number()?))
    } else if parser.parse_keyword(Keyword::START) {
        let with = parser.parse_keyword(Keyword::WITH);
        O::StartWith(parser.parse_number()?, with)
    } else if parser.parse_keyword(Keyword::CACHE) {
        O::Cache(parser.parse_number()?)
    } else if parser.parse_keyword(Keyword::CYCLE) {
        O::Cycle(false)
    } else {
        return Ok(None);
    }))
}

/// What [`sequence_options_any_order`] read.
struct SequenceClauses {
    data_type: Option<sqlparser::ast::DataType>,
    owned_by: Option<sqlparser::ast::ObjectName>,
    /// An identity column's `SEQUENCE NAME name`.
    sequence_name: Option<sqlparser::ast::ObjectName>,
    options: Vec<sqlparser::ast::SequenceOptions>,
}

/// CREATE SEQUENCE's options in any order, as PostgreSQL reads them (sqlparser 0.63
/// only in its fixed order, and pg_dump writes START before INCREMENT); with
/// `create`, also `AS type` and `OWNED BY`, else (an identity column's) `SEQUENCE
/// NAME name`. An option given twice is PostgreSQL's "conflicting or redundant
/// options".
fn sequence_options_any_order(parser: &mut Parser, create: bool) -> Result<SequenceClauses, ParserError> {
    use sqlparser::ast::SequenceOptions as O;
    let mut out = SequenceClauses { data_type: None, owned_by: None, sequence_name: None, options: Vec::new() };
    let redundant = || ParserError::ParserError("conflicting or redundant options".into());
    loop {
        if create && parser.parse_keyword(Keyword::AS) {
            if out.data_type.is_some() {
                return Err(redundant());
            }
            out.data_type = Some(parser.parse_data_type()?);
        } else if create && parser.parse_keywords(&[Keyword::OWNED, Keyword::BY]) {
            if out.owned_by.is_some() {
                return Err(redundant());
            }
            out.owned_by = Some(parser.parse_object_name(false)?);
        } else if !create && parser.parse_keywords(&[Keyword::SEQUENCE, Keyword::NAME]) {
            if out.sequence_name.is_some() {
                return Err(redundant());
            }
            out.sequence_name = Some(parser.parse_object_name(false)?);
        } else if let Some(o) = sequence_option(parser)? {
            let same = |a: &O, b: &O| std::mem::discriminant(a) == std::mem::discriminant(b);
            if out.options.iter().any(|x| same(x, &o)) {
                return Err(redundant());
            }
            out.options.push(o);
        } else {
            return Ok(out);
        }
    }
}

/// `CREATE [TEMP | TEMPORARY] SEQUENCE [IF NOT EXISTS] name [options in any order]`
/// as [`Statement::CreateSequence`]. An error makes the caller read the statement
/// afresh with sqlparser (and report sqlparser's error).
fn create_sequence(parser: &mut Parser) -> Result<Statement, ParserError> {
    parser.expect_keyword(Keyword::CREATE)?;
    let temporary = parser.parse_one_of_keywords(&[Keyword::TEMP, Keyword::TEMPORARY]).is_some();
    parser.expect_keyword(Keyword::SEQUENCE)?;
    let if_not_exists = parser.parse_keywords(&[Keyword::IF, Keyword::NOT, Keyword::EXISTS]);
    let name = parser.parse_object_name(false)?;
    let c = sequence_options_any_order(parser, true)?;
    if !matches!(parser.peek_token_ref().token, Token::SemiColon | Token::EOF) {
        return parser.expected_ref("end of statement", parser.peek_token_ref());
    }
    Ok(Statement::CreateSequence {
        temporary,
        if_not_exists,
        name,
        data_type: c.data_type,
        sequence_options: c.options,
        owned_by: c.owned_by,
    })
}

/// An identity column's options (`GENERATED … AS IDENTITY (START WITH 10 INCREMENT
/// BY 5)`) written in another order than the one sqlparser 0.63 reads, rewritten in
/// that order (PostgreSQL takes any). `None` when there is nothing to reorder.
/// Positions after the options may move.
fn identity_options_in_order(sql: &str) -> Option<String> {
    use sqlparser::ast::SequenceOptions as O;
    if !sql.to_ascii_lowercase().contains("identity") {
        return None;
    }
    let dialect = PostgreSqlDialect {};
    let tokens = sqlparser::tokenizer::Tokenizer::new(&dialect, sql).tokenize_with_location().ok()?;
    let tokens: Vec<_> = tokens.iter().filter(|t| !matches!(t.token, Token::Whitespace(_))).collect();
    let rank = |o: &O| match o {
        O::IncrementBy(..) => 0,
        O::MinValue(_) => 1,
        O::MaxValue(_) => 2,
        O::StartWith(..) => 3,
        O::Cache(_) => 4,
        O::Cycle(_) => 5,
    };
    let mut out = String::with_capacity(sql.len());
    let mut last = 0;
    for (i, t) in tokens.iter().enumerate() {
        let Token::Word(w) = &t.token else { continue };
        if w.quote_style.is_some() || w.keyword != Keyword::IDENTITY || tokens.get(i + 1).map(|t| &t.token) != Some(&Token::LParen) {
            continue;
        }
        // The matching `)`.
        let mut depth = 0usize;
        let mut close = None;
        for (k, u) in tokens.iter().enumerate().skip(i + 1) {
            match u.token {
                Token::LParen => depth += 1,
                Token::RParen => {
                    depth -= 1;
                    if depth == 0 {
                        close = Some(k);
                        break;
                    }
                }
                _ => {}
            }
        }
        let close = close?;
        let start = offset_of(sql, tokens[i + 1].span.end)?;
        let end = offset_of(sql, tokens[close].span.start)?;
        if start < last {
            continue;
        }
        let inner = &sql[start..end];
        let Ok(mut p) = Parser::new(&dialect).try_with_sql(inner) else { continue };
        let Ok(c) = sequence_options_any_order(&mut p, false) else { continue };
        if p.peek_token_ref().token != Token::EOF || c.options.windows(2).all(|w| rank(&w[0]) <= rank(&w[1])) {
            continue;
        }
        let mut options = c.options;
        options.sort_by_key(|o| rank(o));
        out.push_str(&sql[last..start]);
        // Left for `identity_sequence_names`, which takes it out keeping positions.
        if let Some(n) = &c.sequence_name {
            out.push_str(&format!("SEQUENCE NAME {n} "));
        }
        for o in &options {
            out.push_str(&o.to_string());
        }
        out.push(' ');
        last = end;
    }
    if last == 0 {
        return None;
    }
    out.push_str(&sql[last..]);
    Some(out)
}

/// The marker [`mark_sequence_names`] attaches to an identity column whose
/// `SEQUENCE NAME` it took out: a Snowflake `TAG (beedb_sequence_name = 'name')`
/// column option, which the PostgreSQL dialect never reads, so nothing a user
/// writes looks like it. The value is the name as written (quoted or not).
pub const SEQUENCE_NAME_TAG: &str = "beedb_sequence_name";

/// `SEQUENCE NAME name` among an identity column's options in CREATE TABLE
/// (`GENERATED … AS IDENTITY (SEQUENCE NAME s START 5)`), which sqlparser 0.63 does
/// not read: blanked out (spaces, so positions stay), and each one's place and name
/// (as written) returned, for [`mark_sequence_names`]. ALTER TABLE's `ADD
/// GENERATED` reads it itself ([`alter_column_restart`]). Runs after
/// [`identity_options_in_order`], so no later rewrite moves the places. `None` when
/// there is none.
fn identity_sequence_names(sql: &str) -> Option<(String, Vec<(usize, String)>)> {
    let lower = sql.to_ascii_lowercase();
    if !lower.contains("identity") || !lower.contains("sequence") {
        return None;
    }
    let dialect = PostgreSqlDialect {};
    let tokens = sqlparser::tokenizer::Tokenizer::new(&dialect, sql).tokenize_with_location().ok()?;
    let tokens: Vec<_> = tokens.iter().filter(|t| !matches!(t.token, Token::Whitespace(_))).collect();
    let word = |k: usize| match tokens.get(k).map(|t| &t.token) {
        Some(Token::Word(w)) if w.quote_style.is_none() => Some(w.keyword),
        _ => None,
    };
    let mut blanked = sql.to_string();
    let mut names = Vec::new();
    // The statement's first word (CREATE), and parentheses open in it.
    let mut first: Option<Keyword> = None;
    let mut depth = 0usize;
    // The depth inside an identity's option list, while in one.
    let mut in_identity: Option<usize> = None;
    let mut k = 0;
    while k < tokens.len() {
        match &tokens[k].token {
            Token::SemiColon if depth == 0 => {
                first = None;
                k += 1;
                continue;
            }
            Token::LParen => {
                if word(k.wrapping_sub(1)) == Some(Keyword::IDENTITY) && first == Some(Keyword::CREATE) {
                    in_identity = Some(depth + 1);
                }
                depth += 1;
            }
            Token::RParen => {
                if in_identity == Some(depth) {
                    in_identity = None;
                }
                depth = depth.saturating_sub(1);
            }
            _ => {}
        }
        if first.is_none() {
            first = Some(word(k).unwrap_or(Keyword::NoKeyword));
        }
        if in_identity == Some(depth) && word(k) == Some(Keyword::SEQUENCE) && word(k + 1) == Some(Keyword::NAME) {
            // The name: words joined by dots.
            let mut end = k + 2;
            if !matches!(tokens.get(end).map(|t| &t.token), Some(Token::Word(_))) {
                k += 1;
                continue;
            }
            while matches!(tokens.get(end + 1).map(|t| &t.token), Some(Token::Period))
                && matches!(tokens.get(end + 2).map(|t| &t.token), Some(Token::Word(_)))
            {
                end += 2;
            }
            let start = offset_of(sql, tokens[k].span.start)?;
            let name_start = offset_of(sql, tokens[k + 2].span.start)?;
            let stop = offset_of(sql, tokens[end].span.end)?;
            names.push((start, sql[name_start..stop].to_string()));
            blanked.replace_range(start..stop, &" ".repeat(stop - start));
            k = end + 1;
            continue;
        }
        k += 1;
    }
    if names.is_empty() {
        return None;
    }
    Some((blanked, names))
}

/// Attaches each `SEQUENCE NAME` [`identity_sequence_names`] took out to the CREATE
/// TABLE column it was declared on (the last column starting before it), as a
/// [`SEQUENCE_NAME_TAG`] option. One found nowhere else is a syntax error at it.
fn mark_sequence_names(sql: &str, statements: &mut [Statement], names: &[(usize, String)]) -> Result<()> {
    use sqlparser::ast::{ColumnOption, ColumnOptionDef, Ident, ObjectName, Tag, TagsColumnOption};
    for (at, name) in names {
        let column = statements
            .iter_mut()
            .filter_map(|s| match s {
                Statement::CreateTable(ct) => Some(ct.columns.iter_mut()),
                _ => None,
            })
            .flatten()
            .filter_map(|c| offset_of(sql, c.name.span.start).filter(|start| start < at).map(|start| (start, c)))
            .max_by_key(|(start, _)| *start)
            .map(|(_, c)| c);
        let Some(c) = column else {
            return Err(Error::syntax("syntax error at or near \"SEQUENCE\"").at(Some(*at)));
        };
        let tag = Tag { key: ObjectName::from(vec![Ident::new(SEQUENCE_NAME_TAG)]), value: name.clone() };
        c.options.push(ColumnOptionDef { name: None, option: ColumnOption::Tags(TagsColumnOption { with: false, tags: vec![tag] }) });
    }
    Ok(())
}

/// `INSERT INTO t [(…)] OVERRIDING {SYSTEM | USER} VALUE …`, which sqlparser 0.63 does
/// not read: the clause is blanked out (spaces, so positions stay) and its place
/// and kind returned (`true`: SYSTEM), for [`mark_overriding`]. `None` when there
/// is none.
fn overriding_clauses(sql: &str) -> Option<(String, Vec<(usize, bool)>)> {
    if !sql.to_ascii_lowercase().contains("overriding") {
        return None;
    }
    let dialect = PostgreSqlDialect {};
    let tokens = sqlparser::tokenizer::Tokenizer::new(&dialect, sql).tokenize_with_location().ok()?;
    let tokens: Vec<_> = tokens.iter().filter(|t| !matches!(t.token, Token::Whitespace(_))).collect();
    let is = |k: usize, w: &str| {
        matches!(tokens.get(k).map(|t| &t.token), Some(Token::Word(x)) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w))
    };
    let mut blanked = sql.to_string();
    let mut marks = Vec::new();
    for k in 0..tokens.len() {
        if is(k, "overriding") && (is(k + 1, "system") || is(k + 1, "user")) && is(k + 2, "value") {
            let start = offset_of(sql, tokens[k].span.start)?;
            let end = offset_of(sql, tokens[k + 2].span.end)?;
            blanked.replace_range(start..end, &" ".repeat(end - start));
            marks.push((start, is(k + 1, "system")));
        }
    }
    if marks.is_empty() {
        return None;
    }
    Some((blanked, marks))
}

/// Records each OVERRIDING clause [`overriding_clauses`] blanked out in the INSERT it
/// was in, as a setting `overriding = 'system' | 'user'` (`Insert::settings`, which
/// the PostgreSQL dialect never fills); one anywhere else is a syntax error at it.
fn mark_overriding(sql: &str, statements: &mut [Statement], marks: &[(usize, bool)]) -> Result<()> {
    use sqlparser::ast::{Expr, Ident, Setting, Value};
    for &(at, system) in marks {
        let owner = statements
            .iter_mut()
            .filter_map(|s| match s {
                Statement::Insert(ins) => {
                    let start = offset_of(sql, ins.insert_token.0.span.start)?;
                    let end = ins.source.as_ref().and_then(|q| offset_of(sql, sqlparser::ast::Spanned::span(&**q).start));
                    (start < at && end.is_none_or(|e| at < e)).then_some(ins)
                }
                _ => None,
            })
            .last();
        let Some(ins) = owner else {
            return Err(Error::syntax("syntax error at or near \"OVERRIDING\"").at(Some(at)));
        };
        if ins.settings.is_some() {
            return Err(Error::syntax("syntax error at or near \"OVERRIDING\"").at(Some(at)));
        }
        let kind = if system { "system" } else { "user" };
        ins.settings = Some(vec![Setting {
            key: Ident::new("overriding"),
            value: Expr::value(Value::SingleQuotedString(kind.into())),
        }]);
    }
    Ok(())
}

/// One `ALTER SEQUENCE` option as [`alter_sequence`] carries it: the option's word
/// and its value (`None` for `NO MINVALUE`, `NO MAXVALUE` and a bare `RESTART`).
pub fn alter_sequence_options(options: &[sqlparser::ast::Expr]) -> Vec<(String, Option<&sqlparser::ast::Expr>)> {
    options
        .iter()
        .filter_map(|o| match o {
            sqlparser::ast::Expr::Tuple(parts) => match parts.as_slice() {
                [sqlparser::ast::Expr::Identifier(w), rest @ ..] => Some((w.value.clone(), rest.first())),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// Rejects statements nested deeper than [`MAX_NESTING`] or whose operator chains
/// would make trees deeper than the engine walks safely (see [`MAX_OPERATOR_CHAIN`]),
/// with SQLSTATE 54001. Returns how deep the statement nests, about: an upper bound of
/// the levels sqlparser recurses through, over [`SQLPARSER_RECURSION_LIMIT`] divided by
/// its share of it (0 when a count of bytes shows it is shallow).
fn check_chains(sql: &str) -> Result<usize> {
    use sqlparser::tokenizer::Tokenizer;
    use sqlparser::keywords::Keyword as K;
    // Cheap pre-check: every level of nesting takes a `(`, a `-` or `+` (a unary
    // operator), or at least four bytes (`NOT `, `CASE … END`), and a chain one
    // operator byte each: few of them bound the depth without tokenizing.
    let b = sql.as_bytes();
    let openers = b.iter().filter(|&&c| matches!(c, b'(' | b'-' | b'+' | b'[')).count();
    if openers + b.len() / 4 <= SHALLOW {
        return Ok(0);
    }
    let dialect = PostgreSqlDialect {};
    let Ok(tokens) = Tokenizer::new(&dialect, sql).tokenize() else {
        // The parser reports the tokenizer error with its position; parse on the
        // large stack, as nothing bounds the depth.
        return Ok(usize::MAX);
    };
    let too_deep = || {
        Error::new(
            crate::error::ErrorKind::Limit,
            "54001",
            format!(
                "statement is too deeply nested: more than {MAX_NESTING} levels of NOT, CASE, unary operators and parentheses (subqueries among them)"
            ),
        )
    };
    let mut chain = vec![0usize];
    // Prefix NOTs in a row, unary `-` and `+` in a row and open CASEs nest like
    // parentheses, and all of them add up. (sqlparser's own recursion limit would catch
    // them too, but some of its paths report that as a syntax error at the next token.)
    let (mut nots, mut cases, mut unary) = (0usize, 0usize, 0usize);
    let mut deepest = 0usize;
    let mut previous_is_operand = false;
    for t in tokens {
        match &t {
            Token::Word(w) if w.keyword == K::NOT => nots += 1,
            Token::Whitespace(_) => {}
            _ => nots = 0,
        }
        if let Token::Word(w) = &t {
            match w.keyword {
                K::CASE => cases += 1,
                K::END => cases = cases.saturating_sub(1),
                _ => {}
            }
        }
        match &t {
            Token::Minus | Token::Plus if !previous_is_operand => unary += 1,
            Token::Whitespace(_) => {}
            _ => unary = 0,
        }
        if !matches!(t, Token::Whitespace(_)) {
            previous_is_operand = matches!(
                &t,
                Token::Number(..) | Token::SingleQuotedString(_) | Token::Placeholder(_) | Token::RParen | Token::RBracket
            ) || matches!(&t, Token::Word(w) if w.keyword == K::NoKeyword || w.quote_style.is_some());
        }
        let nesting = (chain.len() - 1) + nots + cases + unary;
        if nesting > MAX_NESTING {
            return Err(too_deep());
        }
        // (A chain of binary operators is a loop in sqlparser, not a recursion.)
        deepest = deepest.max(nesting);
        // A clause keyword starts a new expression: a chain of operators does not run
        // through it (`… JOIN t2 ON t2.x = t1.x JOIN t3 ON …` is many short
        // expressions, not one of thousands of operators).
        if let Token::Word(w) = &t
            && matches!(
                w.keyword,
                K::SELECT
                    | K::FROM
                    | K::WHERE
                    | K::JOIN
                    | K::ON
                    | K::USING
                    | K::GROUP
                    | K::HAVING
                    | K::ORDER
                    | K::LIMIT
                    | K::OFFSET
                    | K::UNION
                    | K::INTERSECT
                    | K::EXCEPT
                    | K::WITH
                    | K::AS
                    | K::SET
                    | K::VALUES
                    | K::RETURNING
                    | K::WHEN
                    | K::THEN
                    | K::ELSE
            )
        {
            *chain.last_mut().expect("a level") = 0;
        }
        match t {
            Token::LParen => chain.push(0),
            Token::RParen => {
                if chain.len() > 1 {
                    chain.pop();
                }
            }
            Token::Comma | Token::SemiColon => *chain.last_mut().expect("a level") = 0,
            // `x IS TRUE IS TRUE …` nests one level per IS, like a binary operator.
            Token::Word(w)
                if !matches!(
                    w.keyword,
                    sqlparser::keywords::Keyword::AND
                        | sqlparser::keywords::Keyword::OR
                        | sqlparser::keywords::Keyword::NOT
                        | sqlparser::keywords::Keyword::IS
                        | sqlparser::keywords::Keyword::NoKeyword
                ) => {}
            Token::Word(w) if w.keyword == sqlparser::keywords::Keyword::NoKeyword => {}
            // `t1.x` is one name, no operator.
            Token::Whitespace(_)
            | Token::Number(..)
            | Token::SingleQuotedString(_)
            | Token::Placeholder(_)
            | Token::Period => {}
            _ => {
                let c = chain.last_mut().expect("a level");
                *c += 1;
                if *c > MAX_OPERATOR_CHAIN {
                    return Err(Error::new(
                        crate::error::ErrorKind::Limit,
                        "54001",
                        format!("statement is too complex: more than {MAX_OPERATOR_CHAIN} operators in one expression"),
                    ));
                }
            }
        }
    }
    Ok(deepest)
}

/// Parses a lone expression (a stored DEFAULT).
/// Under the same limits as [`parse`]: a stored expression (a DEFAULT, a CHECK) was
/// accepted by `parse` in its CREATE or ALTER statement and must parse again here.
pub fn parse_expr(sql: &str) -> Result<sqlparser::ast::Expr> {
    let depth = check_chains(sql)?;
    let parse = || {
        let dialect = PostgreSqlDialect {};
        let parser = Parser::new(&dialect).with_recursion_limit(SQLPARSER_RECURSION_LIMIT);
        let mut parser = parser.try_with_sql(sql).map_err(|e| parse_error(sql, e))?;
        parser.parse_expr().map_err(|e| parse_error(sql, e))
    };
    if depth <= SHALLOW { parse() } else { stacker::grow(PARSE_STACK, parse) }
}

/// Parses an SQL type name (`integer`, `numeric(10,2)`, `varchar(20)`) into the type
/// it names, as a column definition or a cast would.
pub fn parse_data_type(name: &str) -> Result<crate::types::DataType> {
    let dialect = PostgreSqlDialect {};
    let parser = Parser::new(&dialect).with_recursion_limit(MAX_NESTING);
    let mut parser = parser
        .try_with_sql(name)
        .map_err(|e| parse_error(name, e))?;
    let ty = parser.parse_data_type().map_err(|e| parse_error(name, e))?;
    parser
        .expect_token(&Token::EOF)
        .map_err(|_| crate::error::Error::syntax(format!("not a type name: \"{name}\"")))?;
    crate::binder::types::data_type(&ty)
}

/// Number of parameters the text refers to: the highest `$n`, or the count of `?`.
pub fn count_params(sql: &str) -> usize {
    if let Some(rewritten) = number_question_marks(sql) {
        return count_params(&rewritten);
    }
    use sqlparser::tokenizer::Tokenizer;
    let dialect = PostgreSqlDialect {};
    let Ok(tokens) = Tokenizer::new(&dialect, sql).tokenize() else {
        return 0;
    };
    let mut dollar = 0usize;
    let mut question = 0usize;
    for t in tokens {
        if let Token::Placeholder(p) = t {
            if p == "?" {
                question += 1;
            } else if let Some(n) = p.strip_prefix('$').and_then(|n| n.parse::<usize>().ok()) {
                dollar = dollar.max(n);
            }
        }
    }
    dollar.max(question)
}

fn parse_error(sql: &str, e: ParserError) -> Error {
    match e {
        ParserError::RecursionLimitExceeded => {
            Error::new(crate::error::ErrorKind::Limit, "54001", "statement is too deeply nested")
        }
        ParserError::TokenizerError(m) | ParserError::ParserError(m) => {
            let (message, position) = split_location(sql, &m);
            // At end of input, point just past the text, as psql does.
            let position = position.or_else(|| message.contains("end of input").then_some(sql.trim_end().len()));
            // A window frame's EXCLUDE clause (PostgreSQL 11+) is valid SQL that
            // sqlparser 0.63 does not read: say so rather than call it a syntax error.
            let after_frame_bound = position.and_then(|p| sql.get(..p)).is_some_and(|before| {
                let b = before.trim_end().to_ascii_lowercase();
                b.ends_with(" row") || b.ends_with(" preceding") || b.ends_with(" following")
            });
            if after_frame_bound && message.to_ascii_lowercase().starts_with("syntax error at or near \"exclude\"") {
                return Error::not_supported(
                    "window frame EXCLUDE is not supported (BeeDB's SQL parser, sqlparser 0.63, does not read it)",
                )
                .at(position);
            }
            Error::syntax(message).at(position)
        }
    }
}

/// Splits sqlparser's "… at Line: L, Column: C" suffix off a message and turns it
/// into a byte offset.
fn split_location(sql: &str, message: &str) -> (String, Option<usize>) {
    let Some(at) = message.rfind(" at Line: ") else {
        return (tidy(message), None);
    };
    let tail = &message[at + " at Line: ".len()..];
    let mut parts = tail.split(", Column: ");
    let line = parts.next().and_then(|l| l.trim().parse::<u64>().ok());
    let column = parts.next().and_then(|c| c.trim().parse::<u64>().ok());
    let position = match (line, column) {
        (Some(line), Some(column)) => offset_of(sql, Location { line, column }),
        _ => None,
    };
    (tidy(&message[..at]), position)
}

/// sqlparser says "Expected: an expression, found: EOF"; PostgreSQL says
/// "syntax error at or near …". Keep sqlparser's detail, in PostgreSQL's frame.
fn tidy(message: &str) -> String {
    let m = message.trim();
    if m.starts_with("Unterminated string literal") {
        return "unterminated quoted string".to_string();
    }
    if m.starts_with("syntax error") {
        return m.to_string();
    }
    if let Some(found) = m.rfind("found: ") {
        let token = m[found + "found: ".len()..].trim();
        let expected = m[..found].trim().trim_end_matches(',');
        if token == "EOF" {
            return format!("syntax error at end of input ({})", expected.to_lowercase());
        }
        return format!(
            "syntax error at or near \"{token}\" ({})",
            expected.to_lowercase()
        );
    }
    format!("syntax error: {m}")
}

/// Byte offset of a 1-based line/column location (columns count characters).
pub fn offset_of(sql: &str, loc: Location) -> Option<usize> {
    if loc.line == 0 || loc.column == 0 {
        return None;
    }
    let mut line = 1u64;
    let mut line_start = 0usize;
    if loc.line > 1 {
        for (i, c) in sql.char_indices() {
            if c == '\n' {
                line += 1;
                if line == loc.line {
                    line_start = i + 1;
                    break;
                }
            }
        }
        if line != loc.line {
            return None;
        }
    }
    let rest = &sql[line_start..];
    let col = (loc.column - 1) as usize;
    match rest.char_indices().nth(col) {
        Some((i, _)) => Some(line_start + i),
        None => Some(sql.len()),
    }
}

/// Byte offset of the start of a span, when the span is known.
pub fn span_offset(sql: &str, span: Span) -> Option<usize> {
    offset_of(sql, span.start)
}

#[cfg(test)]
mod tests {
    #[test]
    fn parse_estimate_counts_literals_once_and_everything_else_100_times() {
        let est = |sql: &str| parse_bytes_estimate(sql);
        let code = |n: usize| n * PARSE_BYTES_PER_SQL_BYTE;
        let lit = PARSE_BYTES_PER_LITERAL;
        assert_eq!(est("select 1"), code(8));
        // 'abc' : 3 bytes of literal, 2 quotes and the rest code.
        assert_eq!(est("select 'abc'"), code(9) + lit + 3);
        assert_eq!(est("select 'a''b'"), code(9) + lit + 4);
        // E'…' with an escaped quote ends where the literal ends.
        assert_eq!(est(r"select E'a\'b' , 1"), code(14) + lit + 4);
        // A plain literal ending in a backslash is not an escape.
        assert_eq!(est(r"select 'a\' , 1"), code(13) + lit + 2);
        // Dollar quoting, with and without a tag; `$1` is a parameter.
        assert_eq!(est("select $$it's$$"), code(11) + lit + 4);
        assert_eq!(est("select $q$a$$b$q$ + $1"), code(18) + lit + 4);
        // Quotes in comments and identifiers start no literal.
        let tail = "x".repeat(50);
        let sql = format!("select 1 -- it's\n, {tail}");
        assert_eq!(est(&sql), code(sql.len()));
        let sql = format!("select /* it's /* nested */ */ 1, {tail}");
        assert_eq!(est(&sql), code(sql.len()));
        let sql = format!("select \"it's\", {tail}");
        assert_eq!(est(&sql), code(sql.len()));
        // Unterminated forms do not run past the end.
        assert_eq!(est("select 'ab"), code(8) + lit + 2);
        assert_eq!(est("select $$ab"), code(9) + lit + 2);
        assert_eq!(est("select E'\\"), code(9) + lit + 1);
    }

    use super::*;

    #[test]
    fn autoincrement_after_primary_key_becomes_an_identity() {
        let sql = "CREATE TABLE t (id INTEGER PRIMARY KEY AUTOINCREMENT, autoincrement TEXT)";
        assert_eq!(
            autoincrement_as_identity(sql).unwrap(),
            "CREATE TABLE t (id INTEGER PRIMARY KEY GENERATED BY DEFAULT AS IDENTITY, autoincrement TEXT)"
        );
        // Elsewhere the word is a name; in a string it is text.
        assert_eq!(autoincrement_as_identity("SELECT autoincrement FROM t"), None);
        assert_eq!(autoincrement_as_identity("SELECT 'key autoincrement'"), None);
    }

    #[test]
    fn syntax_errors_carry_positions() {
        // sqlparser reads `FRM` as an alias, so the error is at `t`.
        let e = parse("SELECT * FRM t").unwrap_err();
        assert_eq!(e.sqlstate, "42601");
        assert_eq!(e.position, Some(13), "{e:?}");
        let e = parse("SELECT a FROM t WHERE").unwrap_err();
        assert_eq!(e.position, Some(21), "end of input points past the text: {e:?}");
        let e = parse("SELECT 'abc").unwrap_err();
        assert_eq!(e.message, "unterminated quoted string");
        let e = parse("SELECT (1").unwrap_err();
        assert!(e.message.contains("end of input"), "{e:?}");
    }

    #[test]
    fn window_frame_exclude_is_reported_as_unsupported() {
        let sql = "SELECT sum(x) OVER (ORDER BY x ROWS BETWEEN 1 PRECEDING AND CURRENT ROW EXCLUDE TIES) FROM t";
        let e = parse(sql).unwrap_err();
        assert_eq!(e.sqlstate, "0A000", "{e:?}");
        assert!(e.message.contains("EXCLUDE is not supported"), "{e:?}");
        assert_eq!(e.position, sql.find("EXCLUDE"), "{e:?}");
        // Elsewhere the word is an ordinary syntax error.
        let e = parse("SELECT 1 exclude 2").unwrap_err();
        assert_eq!(e.sqlstate, "42601", "{e:?}");
    }

    #[test]
    fn begin_takes_sqlites_modifiers() {
        let modifier = |sql: &str| match &parse(sql).unwrap()[..] {
            [Statement::StartTransaction { modifier, transaction, .. }] => (*modifier, transaction.is_some()),
            other => panic!("{sql}: {other:?}"),
        };
        assert_eq!(modifier("BEGIN"), (None, false));
        assert_eq!(modifier("BEGIN IMMEDIATE"), (Some(TransactionModifier::Immediate), false));
        assert_eq!(modifier("begin immediate transaction;"), (Some(TransactionModifier::Immediate), true));
        assert_eq!(modifier("BEGIN EXCLUSIVE"), (Some(TransactionModifier::Exclusive), false));
        assert_eq!(modifier("BEGIN /* c */ DEFERRED TRANSACTION"), (Some(TransactionModifier::Deferred), true));
        let script = parse("BEGIN IMMEDIATE; SELECT 1;; BEGIN EXCLUSIVE TRANSACTION; COMMIT").unwrap();
        assert_eq!(script.len(), 4);
        assert!(matches!(
            script[2],
            Statement::StartTransaction { modifier: Some(TransactionModifier::Exclusive), .. }
        ));
        // Anything else is PostgreSQL's syntax error, with its position.
        for (sql, position) in [
            ("BEGIN SOMETHING", 6),
            ("BEGIN IMMEDIATE WORK", 16),
            ("BEGIN IMMEDIATE TRANSACTION ISOLATION LEVEL SERIALIZABLE", 28),
            ("SELECT 1; BEGIN TRY", 16),
            ("BEGIN \"IMMEDIATE\"", 6),
            ("BEGIN TRANSACTION IMMEDIATE", 18),
        ] {
            let e = parse(sql).unwrap_err();
            assert_eq!((e.sqlstate, e.position), ("42601", Some(position)), "{sql}: {e:?}");
        }
        assert!(parse("SELECT immediate FROM t").is_ok());
    }

    /// Apart from the `BEGIN` forms, the statement loop reads what sqlparser's own
    /// does, and fails where it fails.
    #[test]
    fn statements_read_as_by_sqlparser() {
        for sql in [
            "",
            ";;",
            "SELECT 1",
            "SELECT 1; SELECT 2;",
            "BEGIN; INSERT INTO t VALUES (1); COMMIT",
            "BEGIN ISOLATION LEVEL SERIALIZABLE",
            "BEGIN WORK; END",
            "SELECT 1 SELECT 2",
            "SELECT 1; SELECT (",
            "BEGIN SOMETHING",
            "SELECT 'a",
        ] {
            let ours = parse(sql);
            let dialect = PostgreSqlDialect {};
            let theirs = Parser::new(&dialect)
                .try_with_sql(sql)
                .and_then(|mut p| p.parse_statements())
                .map_err(|e| parse_error(sql, e));
            assert_eq!(format!("{ours:?}"), format!("{theirs:?}"), "{sql}");
        }
        // One difference: sqlparser stops, silently, at an `END` where a statement
        // should end, dropping the rest; here it is PostgreSQL's syntax error.
        let e = parse("SELECT 1 END; DROP TABLE t").unwrap_err();
        assert_eq!((e.sqlstate, e.position), ("42601", Some(9)), "{e:?}");
    }

    #[test]
    fn offsets_follow_lines_and_characters() {
        let sql = "SELECT 1;\nSELECT é, x";
        assert_eq!(offset_of(sql, Location { line: 2, column: 11 }), Some(21));
        assert_eq!(offset_of(sql, Location { line: 1, column: 1 }), Some(0));
    }

    #[test]
    fn question_marks_become_numbered_parameters() {
        assert_eq!(count_params("SELECT ? + ?, '?' FROM t -- ?"), 2);
        assert_eq!(count_params("SELECT $3"), 3);
        assert_eq!(
            number_question_marks("SELECT '?', \"?\", ? /* ? */").as_deref(),
            Some("SELECT '?', \"?\", $1 /* ? */")
        );
    }

    #[test]
    fn long_operator_chains_are_refused() {
        let sql = format!("SELECT 1{}", "+1".repeat(MAX_OPERATOR_CHAIN + 1));
        assert_eq!(parse(&sql).unwrap_err().sqlstate, "54001");
        let sql = format!("SELECT 1{}", "+1".repeat(MAX_OPERATOR_CHAIN - 10));
        assert!(parse(&sql).is_ok());
    }

    #[test]
    fn deep_nesting_is_an_error() {
        let sql = format!("SELECT {}1{}", "(".repeat(5000), ")".repeat(5000));
        let e = parse(&sql).unwrap_err();
        assert_eq!(e.sqlstate, "54001");
    }
}
