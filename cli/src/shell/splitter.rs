//! Splits SQL text into complete statements, incrementally.
//!
//! A statement is complete when a `;` appears outside string literals, quoted
//! identifiers, comments and dollar-quoted strings. The lexical rules are
//! PostgreSQL's:
//!
//! * `'…'` strings, where `''` is a quote (standard-conforming strings: a backslash
//!   is an ordinary character), including prefixed forms such as `B'…'`, `X'…'`,
//!   `N'…'` and `U&'…'`;
//! * `E'…'` strings, where `\` escapes the next character as well;
//! * `"…"` identifiers, where `""` is a quote;
//! * `--` comments to the end of the line and `/* … */` comments, which nest;
//! * dollar-quoted strings `$$…$$` and `$tag$…$tag$` (but `$1` is a parameter and
//!   `a$b` an identifier).
//!
//! Text is fed in pieces ([`Splitter::push`]); each call returns the statements the
//! new text completed, with their byte ranges in the whole text fed so far, and keeps
//! the incomplete remainder for the next call. Comments and blank space between
//! statements are dropped, as are empty statements (a lone `;`).

use std::ops::Range;

/// One complete statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece {
    /// The statement's text: from its first token through its terminating `;` (or
    /// the end of the input, for a final statement without one).
    pub text: String,
    /// Byte range of `text` in everything fed to the splitter.
    pub range: Range<usize>,
}

/// Where the unfinished remainder stands, for choosing a prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pending {
    /// Nothing but blank space and comments: ready for a new statement.
    Nothing,
    /// Inside a statement, between tokens.
    Statement,
    /// Inside a string literal, quoted identifier or dollar-quoted string.
    Quote,
    /// Inside a `/* … */` comment.
    Comment,
}

/// Incremental statement splitter; see the module documentation.
#[derive(Debug, Default)]
pub struct Splitter {
    /// Text fed and not yet returned as part of a statement.
    buf: String,
    /// Byte offset of `buf[0]` in all the text fed.
    base: usize,
    /// Where scanning resumes: always a token boundary in `buf`.
    scan: usize,
    /// Start (in `buf`) of the current statement's first significant token.
    stmt_start: Option<usize>,
    /// What the last scan stopped in, when it stopped inside an unfinished token.
    open: Option<Pending>,
    /// How to go on scanning that token (else it is scanned again from `scan`).
    resume: Option<Resume>,
    /// The statement in progress is being dropped ([`Splitter::drop_statement`]): it
    /// is not returned when it completes, and its text is not kept.
    dropping: bool,
}

/// The result of scanning one token.
enum Token {
    /// A token ending at this offset.
    Done(usize),
    /// The token runs to the end of the buffer and may continue in later input; where
    /// and how its scan resumes, if it need not start over (a long string or comment
    /// fed line by line would be rescanned from its start at every line).
    Incomplete(Pending, Option<Resume>),
}

/// How to go on scanning an unfinished string or comment (offsets in `buf`).
#[derive(Debug, Clone, Copy)]
enum Resume {
    /// A quoted string or identifier: go on at `at`.
    Quoted { quote: u8, escapes: bool, at: usize },
    /// A `/* … */` comment `depth` deep: go on at `at`.
    Block { depth: usize, at: usize },
    /// A `--` comment: go on at `at`.
    Line { at: usize },
    /// A dollar-quoted string whose tag is `buf[tag.0..tag.1]`: go on at `at`.
    Dollar { tag: (usize, usize), at: usize },
}

impl Resume {
    fn shift(&mut self, d: usize) {
        match self {
            Resume::Quoted { at, .. } | Resume::Block { at, .. } | Resume::Line { at } => *at -= d,
            Resume::Dollar { tag, at } => {
                tag.0 -= d;
                tag.1 -= d;
                *at -= d;
            }
        }
    }

    fn resume(self, bytes: &[u8]) -> Token {
        match self {
            Resume::Quoted { quote, escapes, at } => scan_quoted(bytes, at, quote, escapes),
            Resume::Block { depth, at } => scan_block(bytes, at, depth),
            Resume::Line { at } => scan_line(bytes, at),
            Resume::Dollar { tag, at } => scan_dollar_body(bytes, tag, at),
        }
    }
}

impl Splitter {
    pub fn new() -> Splitter {
        Splitter::default()
    }

    /// Feeds more text; returns the statements it completed.
    pub fn push(&mut self, text: &str) -> Vec<Piece> {
        self.buf.push_str(text);
        let mut out = Vec::new();
        self.open = None;
        let bytes = self.buf.as_bytes();
        let mut i = self.scan;
        let mut resume = self.resume.take();
        let mut cut = None; // end of the last complete statement in buf
        while i < bytes.len() {
            let b = bytes[i];
            if b.is_ascii_whitespace() {
                i += 1;
                continue;
            }
            if b == b';' {
                if let Some(start) = self.stmt_start.take() {
                    if self.dropping {
                        self.dropping = false;
                    } else {
                        out.push(Piece {
                            text: self.buf[start..=i].to_string(),
                            range: self.base + start..self.base + i + 1,
                        });
                    }
                }
                i += 1;
                cut = Some(i);
                continue;
            }
            // The unfinished token at `scan` goes on where its last scan stopped.
            let token = match resume.take() {
                Some(r) => r.resume(bytes),
                None => scan_token(bytes, i),
            };
            match token {
                Token::Done(end) => {
                    if !is_comment_start(bytes, i) && self.stmt_start.is_none() {
                        self.stmt_start = Some(i);
                    }
                    i = end;
                }
                Token::Incomplete(kind, r) => {
                    self.resume = r;
                    // A comment, or a `-` or `/` that may begin one, does not
                    // start a statement.
                    let maybe_comment = kind == Pending::Comment
                        || (i + 1 == bytes.len() && matches!(b, b'-' | b'/'));
                    if !maybe_comment && self.stmt_start.is_none() {
                        self.stmt_start = Some(i);
                    }
                    self.open = Some(kind);
                    break;
                }
            }
        }
        self.scan = i;
        // Drop what has been returned (and the blank space and comments before the
        // next statement) so the buffer holds only the unfinished remainder.
        let drop_to = match (self.stmt_start, cut) {
            (Some(start), _) => Some(start),
            (None, Some(c)) => Some(if self.open.is_some() { c } else { i }),
            (None, None) if self.open.is_none() => Some(i),
            _ => None,
        };
        if let Some(d) = drop_to.filter(|&d| d > 0) {
            self.buf.drain(..d);
            self.base += d;
            self.scan -= d;
            if let Some(s) = self.stmt_start.as_mut() {
                *s -= d;
            }
            if let Some(r) = self.resume.as_mut() {
                r.shift(d);
            }
        }
        if self.dropping {
            self.shed();
        }
        out
    }

    /// Drops the statement in progress: it will not be returned when it completes,
    /// and its text is no longer kept (only the unfinished token at the end, so the
    /// quote and comment state carries on and the statement's end is found where it
    /// really is). With no statement in progress, the next one to start is dropped.
    /// Text the caller feeds with no statement in progress afterwards (blank space,
    /// comments) keeps it set until a statement starts and completes.
    pub fn drop_statement(&mut self) {
        self.dropping = true;
        self.shed();
    }

    /// Whether a statement is being dropped.
    pub fn is_dropping(&self) -> bool {
        self.dropping
    }

    /// Keeps the next statement after all (undoes [`Splitter::drop_statement`] when
    /// no statement has started since).
    pub fn cancel_drop(&mut self) {
        self.dropping = false;
    }

    /// Whether a statement has started and not completed.
    pub fn in_statement(&self) -> bool {
        self.stmt_start.is_some()
    }

    /// Forgets the text before the unfinished token at the end (all of it when there
    /// is none), keeping the scanner's state.
    fn shed(&mut self) {
        let d = self.scan;
        if d > 0 {
            self.buf.drain(..d);
            self.base += d;
            self.scan = 0;
            if let Some(s) = self.stmt_start.as_mut() {
                *s = s.saturating_sub(d);
            }
            if let Some(r) = self.resume.as_mut() {
                r.shift(d);
            }
        }
    }

    /// What the unfinished remainder is in the middle of.
    #[allow(dead_code)] // API for prompts that show the kind of input expected
    pub fn pending(&self) -> Pending {
        match self.open {
            Some(kind @ (Pending::Quote | Pending::Comment)) => kind,
            _ if self.stmt_start.is_some() => Pending::Statement,
            _ => Pending::Nothing,
        }
    }

    /// Whether a new statement (or a dot command) may start here: nothing but blank
    /// space has been fed since the last complete statement.
    pub fn is_idle(&self) -> bool {
        !self.dropping && self.buf[..].trim().is_empty()
    }

    /// The unfinished remainder (unreturned text, possibly blank or a comment).
    #[allow(dead_code)]
    pub fn remainder(&self) -> &str {
        &self.buf
    }

    /// Ends the input: returns the unfinished statement, if it has any tokens, as a
    /// final statement (so a script's last statement may omit its `;`).
    pub fn finish(&mut self) -> Option<Piece> {
        let piece = self.stmt_start.filter(|_| !self.dropping).map(|start| {
            let text = self.buf[start..].trim_end();
            Piece {
                text: text.to_string(),
                range: self.base + start..self.base + start + text.len(),
            }
        });
        self.clear();
        piece
    }

    /// Forgets the unfinished remainder (Ctrl-C in the shell). Offsets keep counting.
    pub fn clear(&mut self) {
        self.base += self.buf.len();
        self.buf.clear();
        self.scan = 0;
        self.stmt_start = None;
        self.open = None;
        self.resume = None;
        self.dropping = false;
    }
}

/// Splits a whole text into statements: every `;`-terminated statement, then the
/// final one without a `;`, if any.
#[allow(dead_code)]
pub fn split_all(text: &str) -> Vec<Piece> {
    let mut s = Splitter::new();
    let mut pieces = s.push(text);
    pieces.extend(s.finish());
    pieces
}

fn is_comment_start(bytes: &[u8], i: usize) -> bool {
    matches!(
        (bytes[i], bytes.get(i + 1)),
        (b'-', Some(b'-')) | (b'/', Some(b'*'))
    )
}

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b >= 0x80
}

fn is_ident_char(b: u8) -> bool {
    is_ident_start(b) || b.is_ascii_digit() || b == b'$'
}

/// Scans the token starting at `i` (not blank space, not `;`).
fn scan_token(bytes: &[u8], i: usize) -> Token {
    let n = bytes.len();
    let b = bytes[i];
    let next = bytes.get(i + 1).copied();
    match b {
        b'-' if next == Some(b'-') => scan_line(bytes, i + 2),
        b'/' if next == Some(b'*') => scan_block(bytes, i + 2, 1),
        // A lone `-` or `/` at the end may become a comment with the next input.
        b'-' | b'/' if next.is_none() => Token::Incomplete(Pending::Statement, None),
        b'\'' => scan_quoted(bytes, i + 1, b'\'', false),
        b'"' => scan_quoted(bytes, i + 1, b'"', false),
        b'$' => scan_dollar(bytes, i),
        _ if is_ident_start(b) => {
            let mut j = i + 1;
            while j < n && is_ident_char(bytes[j]) {
                j += 1;
            }
            if j == n {
                // `E` at the end could be the prefix of an `E'…'` string.
                return Token::Incomplete(Pending::Statement, None);
            }
            if bytes[j] == b'\'' {
                let escapes = j == i + 1 && (b == b'e' || b == b'E');
                return scan_quoted(bytes, j + 1, b'\'', escapes);
            }
            Token::Done(j)
        }
        _ if b.is_ascii_digit() => {
            let mut j = i + 1;
            while j < n
                && (bytes[j].is_ascii_alphanumeric() || bytes[j] == b'.' || bytes[j] == b'_')
            {
                j += 1;
            }
            Token::Done(j)
        }
        // Any other character is an operator or punctuation; none of them begins a
        // quote or comment except as handled above.
        _ => Token::Done(i + 1),
    }
}

/// Scans a quoted string or identifier whose body starts at `i`; a doubled quote is
/// a quote, and with `escapes` a backslash escapes the next byte.
fn scan_quoted(bytes: &[u8], mut i: usize, quote: u8, escapes: bool) -> Token {
    let n = bytes.len();
    let incomplete = |at| Token::Incomplete(Pending::Quote, Some(Resume::Quoted { quote, escapes, at }));
    while i < n {
        let b = bytes[i];
        if escapes && b == b'\\' {
            if i + 1 == n {
                return incomplete(i); // what it escapes comes next
            }
            i += 2;
            continue;
        }
        if b == quote {
            if i + 1 == n {
                // A quote at the very end might be the first of a doubled pair.
                return incomplete(i);
            }
            if bytes[i + 1] == quote {
                i += 2;
                continue;
            }
            return Token::Done(i + 1);
        }
        i += 1;
    }
    incomplete(n)
}

/// Scans a `--` comment's text from `i` to its line end.
fn scan_line(bytes: &[u8], i: usize) -> Token {
    match bytes[i.min(bytes.len())..].iter().position(|&c| c == b'\n') {
        Some(p) => Token::Done(i + p + 1),
        None => Token::Incomplete(Pending::Comment, Some(Resume::Line { at: bytes.len() })),
    }
}

/// Scans a `/* … */` comment from `j`, `depth` levels deep (comments nest).
fn scan_block(bytes: &[u8], mut j: usize, mut depth: usize) -> Token {
    let n = bytes.len();
    while j + 1 < n {
        match (bytes[j], bytes[j + 1]) {
            (b'/', b'*') => {
                depth += 1;
                j += 2;
            }
            (b'*', b'/') => {
                depth -= 1;
                j += 2;
                if depth == 0 {
                    return Token::Done(j);
                }
            }
            _ => j += 1,
        }
    }
    // The last byte may pair with the next input's first.
    Token::Incomplete(Pending::Comment, Some(Resume::Block { depth, at: j.min(n) }))
}

/// Scans a dollar-quoted string's body from `at` for its closing tag `bytes[tag]`.
fn scan_dollar_body(bytes: &[u8], tag: (usize, usize), at: usize) -> Token {
    let len = tag.1 - tag.0;
    match bytes[at..].windows(len).position(|w| w == &bytes[tag.0..tag.1]) {
        Some(p) => Token::Done(at + p + len),
        // The closing tag may have begun in the last `len - 1` bytes.
        None => {
            let at = bytes.len().saturating_sub(len - 1).max(at);
            Token::Incomplete(Pending::Quote, Some(Resume::Dollar { tag, at }))
        }
    }
}

/// Scans at a `$`: a dollar-quoted string `$tag$…$tag$`, or else a parameter (`$1`)
/// or a lone `$`.
fn scan_dollar(bytes: &[u8], i: usize) -> Token {
    let n = bytes.len();
    let mut j = i + 1;
    if j < n && bytes[j].is_ascii_digit() {
        while j < n && bytes[j].is_ascii_digit() {
            j += 1;
        }
        return if j == n {
            Token::Incomplete(Pending::Statement, None)
        } else {
            Token::Done(j)
        };
    }
    if j < n && is_ident_start(bytes[j]) {
        while j < n && (is_ident_start(bytes[j]) || bytes[j].is_ascii_digit()) {
            j += 1;
        }
    }
    if j == n {
        return Token::Incomplete(Pending::Statement, None);
    }
    if bytes[j] != b'$' {
        return Token::Done(i + 1);
    }
    scan_dollar_body(bytes, (i, j + 1), j + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(input: &str) -> Vec<String> {
        split_all(input).into_iter().map(|p| p.text).collect()
    }

    /// Feeds `input` in pieces of `chunk` bytes (at char boundaries) and returns the
    /// statements; must agree with feeding it whole.
    fn chunked(input: &str, chunk: usize) -> Vec<Piece> {
        let mut s = Splitter::new();
        let mut out = Vec::new();
        let mut rest = input;
        while !rest.is_empty() {
            let mut k = chunk.min(rest.len());
            while !rest.is_char_boundary(k) {
                k += 1;
            }
            out.extend(s.push(&rest[..k]));
            rest = &rest[k..];
        }
        out.extend(s.finish());
        out
    }

    #[test]
    fn splits_simple_statements() {
        assert_eq!(texts("SELECT 1; SELECT 2;"), ["SELECT 1;", "SELECT 2;"]);
        assert_eq!(texts("SELECT 1;\nSELECT 2"), ["SELECT 1;", "SELECT 2"]);
        assert_eq!(texts("  \n "), Vec::<String>::new());
    }

    #[test]
    fn reports_byte_ranges() {
        let input = "SELECT 1;\n  SELECT 'é';  ";
        let pieces = split_all(input);
        assert_eq!(pieces.len(), 2);
        for p in &pieces {
            assert_eq!(&input[p.range.clone()], p.text);
        }
        assert_eq!(pieces[1].range, 12..24);
    }

    #[test]
    fn skips_empty_statements_and_leading_comments() {
        assert_eq!(texts(";;  ; SELECT 1;;"), ["SELECT 1;"]);
        assert_eq!(texts("-- hello; world\nSELECT 1;"), ["SELECT 1;"]);
        assert_eq!(texts("/* a; */ SELECT 1; -- trailing"), ["SELECT 1;"]);
        assert_eq!(texts("-- only a comment"), Vec::<String>::new());
    }

    #[test]
    fn semicolons_in_strings_do_not_split() {
        assert_eq!(
            texts("SELECT 'a;b'; SELECT 2;"),
            ["SELECT 'a;b';", "SELECT 2;"]
        );
        assert_eq!(texts("SELECT 'it''s; ok';"), ["SELECT 'it''s; ok';"]);
        assert_eq!(
            texts("SELECT '\\'; SELECT 2;"),
            ["SELECT '\\';", "SELECT 2;"]
        );
        assert_eq!(texts("SELECT X'1;F', B'0;1';"), ["SELECT X'1;F', B'0;1';"]);
    }

    #[test]
    fn escape_strings_honour_backslashes() {
        assert_eq!(
            texts("SELECT E'a\\';b'; SELECT 2;"),
            ["SELECT E'a\\';b';", "SELECT 2;"]
        );
        assert_eq!(
            texts("SELECT e'\\\\'; SELECT 2;"),
            ["SELECT e'\\\\';", "SELECT 2;"]
        );
        assert_eq!(texts("SELECT E'x''y;z';"), ["SELECT E'x''y;z';"]);
        // An identifier ending in e is not an escape-string prefix.
        assert_eq!(
            texts("SELECT name'\\'; SELECT 2;"),
            ["SELECT name'\\';", "SELECT 2;"]
        );
    }

    #[test]
    fn quoted_identifiers() {
        assert_eq!(
            texts("SELECT 1 AS \"a;\"\"b\"; SELECT 2;"),
            ["SELECT 1 AS \"a;\"\"b\";", "SELECT 2;"]
        );
    }

    #[test]
    fn comments() {
        assert_eq!(
            texts("SELECT 1 -- c;\n + 1; SELECT 2;"),
            ["SELECT 1 -- c;\n + 1;", "SELECT 2;"]
        );
        assert_eq!(texts("SELECT /* ; */ 1;"), ["SELECT /* ; */ 1;"]);
        assert_eq!(
            texts("SELECT /* /* ; */ ; */ 1;"),
            ["SELECT /* /* ; */ ; */ 1;"]
        );
        assert_eq!(
            texts("SELECT 1 - -1; SELECT 4/2;"),
            ["SELECT 1 - -1;", "SELECT 4/2;"]
        );
        assert_eq!(texts("SELECT 1 - 1/2/3;"), ["SELECT 1 - 1/2/3;"]);
    }

    #[test]
    fn dollar_quotes() {
        assert_eq!(
            texts("SELECT $$a;b$$; SELECT 2;"),
            ["SELECT $$a;b$$;", "SELECT 2;"]
        );
        assert_eq!(
            texts("SELECT $fn$ $$; $x$ ' $fn$; SELECT 2;"),
            ["SELECT $fn$ $$; $x$ ' $fn$;", "SELECT 2;"]
        );
        assert_eq!(texts("SELECT $1; SELECT $2;"), ["SELECT $1;", "SELECT $2;"]);
        assert_eq!(
            texts("SELECT a$b$; SELECT 2;"),
            ["SELECT a$b$;", "SELECT 2;"]
        );
        assert_eq!(texts("SELECT $é$;x$é$;"), ["SELECT $é$;x$é$;"]);
    }

    #[test]
    fn unterminated_text_is_the_final_statement() {
        assert_eq!(texts("SELECT 'abc; def"), ["SELECT 'abc; def"]);
        assert_eq!(
            texts("SELECT 1 /* open; comment"),
            ["SELECT 1 /* open; comment"]
        );
    }

    #[test]
    fn incremental_feeding_keeps_the_remainder() {
        let mut s = Splitter::new();
        assert!(s.is_idle());
        assert_eq!(s.pending(), Pending::Nothing);
        assert!(s.push("SELECT\n").is_empty());
        assert_eq!(s.pending(), Pending::Statement);
        assert!(!s.is_idle());
        assert!(s.push("'a;\n").is_empty());
        assert_eq!(s.pending(), Pending::Quote);
        let done = s.push("b'; SELECT 2; SELECT\n");
        assert_eq!(done.len(), 2);
        assert_eq!(done[0].text, "SELECT\n'a;\nb';");
        assert_eq!(done[0].range, 0..14);
        assert_eq!(done[1].text, "SELECT 2;");
        assert_eq!(done[1].range, 15..24);
        assert_eq!(s.remainder(), "SELECT\n");
        let done = s.push("3;\n");
        assert_eq!(done[0].text, "SELECT\n3;");
        assert_eq!(done[0].range, 25..34);
        assert!(s.is_idle());
        assert_eq!(s.pending(), Pending::Nothing);
    }

    #[test]
    fn comment_state_is_reported() {
        let mut s = Splitter::new();
        assert!(s.push("/* a\n").is_empty());
        assert_eq!(s.pending(), Pending::Comment);
        assert!(s.push("*/\n").is_empty());
        assert_eq!(s.pending(), Pending::Nothing);
        assert!(s.is_idle() || s.remainder().trim().is_empty());
    }

    #[test]
    fn clear_forgets_the_remainder() {
        let mut s = Splitter::new();
        s.push("SELECT 'oops\n");
        s.clear();
        assert!(s.is_idle());
        let done = s.push("SELECT 1;");
        assert_eq!(done[0].text, "SELECT 1;");
        assert_eq!(done[0].range, 13..22);
    }

    #[test]
    fn a_dropped_statement_ends_where_it_really_ends_and_keeps_no_text() {
        let mut s = Splitter::new();
        assert!(s.push("SELECT 1; INSERT INTO t VALUES ('a").iter().map(|p| &p.text).eq(["SELECT 1;"]));
        s.drop_statement();
        assert!(s.is_dropping() && !s.is_idle());
        // The literal goes on over lines holding `;`: nothing comes out, and only the
        // open literal is kept, from its quote.
        assert!(s.push("\n;DELETE FROM t;\n").is_empty());
        assert!(s.remainder().starts_with('\'') && s.remainder().len() < 25, "{:?}", s.remainder());
        assert!(s.push("x');").is_empty(), "the dropped statement completes unseen");
        assert!(!s.is_dropping());
        assert!(s.push(" SELECT 2;").iter().map(|p| &p.text).eq([" SELECT 2;".trim_start()]));
        // Dropped with nothing in progress: the next statement is the one dropped, and
        // a dropped statement is no final statement either.
        s.drop_statement();
        assert!(s.push("/* c */ SELECT 3").is_empty());
        assert_eq!(s.finish(), None);
    }

    #[test]
    fn any_chunking_gives_the_same_statements() {
        let input = "SELECT 'a;''b', E'c\\';d' -- x;\n; /* n /* e */ ; */ SELECT $t$ ; $$ $t$, \"q;\"\"\";\n\
                     SELECT $1, a$b, 4-2, 6/3;SELECT 'é;ü'; select e'\\\\'; SELECT 1 - -1;";
        let whole = split_all(input);
        assert_eq!(whole.len(), 6, "{whole:#?}");
        for p in &whole {
            assert_eq!(&input[p.range.clone()], p.text);
        }
        for chunk in 1..input.len() {
            assert_eq!(chunked(input, chunk), whole, "chunk size {chunk}");
        }
    }
}
