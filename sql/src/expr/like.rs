//! `LIKE` / `ILIKE`: patterns compiled once (per batch for a constant pattern, per
//! distinct pattern otherwise) into literal runs and wildcards, matched by a
//! backtracking matcher over UTF-8 bytes with one resume point (enough for `%` and
//! `_`), with fast paths for exact, prefix, suffix and infix patterns, and for
//! literals separated by `%` (one substring search per literal, `Kind::Segments`).
//!
//! `character(n)` values are matched *with* their padding, as PostgreSQL's
//! `bpcharlike`, which is `textlike` applied to the stored blank-padded value:
//! `'ab'::char(3) LIKE 'ab'` is false there, `LIKE 'ab%'` true. (A binder that casts
//! the operand to `text` first gets the trimmed value instead.)

use super::eval::{Col, bool_col, is_char, str_side, union_nulls};
use super::kernels::internal;
use crate::error::{Error, Result};
use crate::vector::Data;

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    /// A run of literal characters (UTF-8 bytes).
    Lit(String),
    /// `_`: one character.
    One,
    /// `%`: any run of characters.
    Any,
}

/// A compiled pattern.
#[derive(Debug, Clone)]
pub(super) struct Pattern {
    kind: Kind,
    case_insensitive: bool,
}

#[derive(Debug, Clone)]
enum Kind {
    Exact(String),
    Prefix(String),
    Suffix(String),
    Contains(String),
    /// `%` alone (or several): every string.
    All,
    /// Literals separated by `%` and no `_` (`'%special%requests%'`, `'a%b'`): the
    /// first literal at the start unless the pattern begins with `%`, the last at the
    /// end unless it ends with `%`, and the ones between found in order, each the
    /// leftmost occurrence after the one before (the leftmost leaves the most room
    /// to the rest, so this is exact). A substring search per literal instead of a
    /// comparison at every position ([`general`]): TPC-H Q13's
    /// `NOT LIKE '%special%requests%'` spent about a third of the query in memcmp.
    Segments {
        first: Option<String>,
        middle: Vec<String>,
        last: Option<String>,
    },
    General(Vec<Tok>),
}

impl Pattern {
    /// Compiles `pattern`; `escape` is the escape character (`\` when `None`).
    pub(super) fn compile(
        pattern: &str,
        escape: Option<char>,
        case_insensitive: bool,
    ) -> Result<Pattern> {
        let toks = tokens(pattern, escape, case_insensitive)?;
        let kind = match toks.as_slice() {
            [] => Kind::Exact(String::new()),
            [Tok::Lit(s)] => Kind::Exact(s.clone()),
            [Tok::Any] => Kind::All,
            [Tok::Lit(s), Tok::Any] => Kind::Prefix(s.clone()),
            [Tok::Any, Tok::Lit(s)] => Kind::Suffix(s.clone()),
            [Tok::Any, Tok::Lit(s), Tok::Any] => Kind::Contains(s.clone()),
            _ if !toks.contains(&Tok::One) => segments(&toks),
            _ => Kind::General(toks),
        };
        Ok(Pattern {
            kind,
            case_insensitive,
        })
    }

    /// Whether `s` matches.
    pub(super) fn matches(&self, s: &str) -> bool {
        if self.case_insensitive {
            let lower = s.to_lowercase();
            self.matches_folded(&lower)
        } else {
            self.matches_folded(s)
        }
    }

    fn matches_folded(&self, s: &str) -> bool {
        match &self.kind {
            Kind::Exact(p) => s == p,
            Kind::Prefix(p) => s.starts_with(p.as_str()),
            Kind::Suffix(p) => s.ends_with(p.as_str()),
            Kind::Contains(p) => s.contains(p.as_str()),
            Kind::All => true,
            Kind::Segments { first, middle, last } => {
                let mut rest = s;
                if let Some(p) = first {
                    match rest.strip_prefix(p.as_str()) {
                        Some(r) => rest = r,
                        None => return false,
                    }
                }
                if let Some(p) = last {
                    // After the first literal: the two may not overlap.
                    match rest.strip_suffix(p.as_str()) {
                        Some(r) => rest = r,
                        None => return false,
                    }
                }
                for p in middle {
                    match rest.find(p.as_str()) {
                        Some(at) => rest = &rest[at + p.len()..],
                        None => return false,
                    }
                }
                true
            }
            Kind::General(toks) => general(toks, s.as_bytes()),
        }
    }
}

/// The [`Kind::Segments`] of `toks`: literals and `%` only (merged runs: no two
/// literals or two `%` in a row), not one of the shorter kinds.
fn segments(toks: &[Tok]) -> Kind {
    let mut lits: Vec<String> = toks
        .iter()
        .filter_map(|t| match t {
            Tok::Lit(s) => Some(s.clone()),
            _ => None,
        })
        .collect();
    let first = (toks.first() != Some(&Tok::Any) && !lits.is_empty()).then(|| lits.remove(0));
    let last = (toks.last() != Some(&Tok::Any) && !lits.is_empty()).then(|| lits.pop()).flatten();
    Kind::Segments { first, middle: lits, last }
}

/// `pattern` as literal runs and wildcards (a literal folded to lower case when
/// matching is case-insensitive); `escape` is the escape character (`\` when `None`).
fn tokens(pattern: &str, escape: Option<char>, case_insensitive: bool) -> Result<Vec<Tok>> {
    let escape = escape.unwrap_or('\\');
    let mut toks: Vec<Tok> = Vec::new();
    let mut chars = pattern.chars();
    let push_lit = |toks: &mut Vec<Tok>, c: char| {
        let mut buf = String::new();
        if case_insensitive {
            buf.extend(c.to_lowercase());
        } else {
            buf.push(c);
        }
        match toks.last_mut() {
            Some(Tok::Lit(s)) => s.push_str(&buf),
            _ => toks.push(Tok::Lit(buf)),
        }
    };
    while let Some(c) = chars.next() {
        if c == escape {
            match chars.next() {
                Some(e) => push_lit(&mut toks, e),
                None => {
                    return Err(Error::data(
                        "22025",
                        "LIKE pattern must not end with escape character",
                    ));
                }
            }
        } else if c == '%' {
            if toks.last() != Some(&Tok::Any) {
                toks.push(Tok::Any);
            }
        } else if c == '_' {
            toks.push(Tok::One);
        } else {
            push_lit(&mut toks, c);
        }
    }
    Ok(toks)
}

/// Length of the UTF-8 character starting with byte `b`.
#[inline]
fn char_len(b: u8) -> usize {
    match b {
        0..=0x7f => 1,
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        _ => 4,
    }
}

/// Wildcard matching with a single backtrack point: on a mismatch, the last `%` takes
/// one more character. Each `%` subsumes the earlier ones, so this is exact.
fn general(toks: &[Tok], s: &[u8]) -> bool {
    let (mut ti, mut si) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    loop {
        if ti < toks.len() {
            match &toks[ti] {
                Tok::Any => {
                    star = Some((ti + 1, si));
                    ti += 1;
                    continue;
                }
                Tok::One => {
                    if si < s.len() {
                        si = (si + char_len(s[si])).min(s.len());
                        ti += 1;
                        continue;
                    }
                }
                Tok::Lit(l) => {
                    if s[si..].starts_with(l.as_bytes()) {
                        si += l.len();
                        ti += 1;
                        continue;
                    }
                }
            }
        } else if si == s.len() {
            return true;
        }
        match star {
            Some((st, ss)) if ss < s.len() => {
                let ns = (ss + char_len(s[ss])).min(s.len());
                star = Some((st, ns));
                ti = st;
                si = ns;
            }
            _ => return false,
        }
    }
}

/// Evaluates `s [NOT] [I]LIKE p` for `n` rows.
pub(super) fn like<'a>(
    s: &Col,
    p: &Col,
    negated: bool,
    case_insensitive: bool,
    escape: Option<char>,
    n: usize,
) -> Result<Col<'a>> {
    let (m, konst) = if s.is_const() && p.is_const() {
        (1, true)
    } else {
        (n, false)
    };
    let nulls = union_nulls(s, p, m);
    if s.is_null_const() || p.is_null_const() {
        return Ok(bool_col(vec![false; m], Some(vec![true; m]), konst));
    }
    if !matches!(s.v().data, Data::Str(_)) || !matches!(p.v().data, Data::Str(_)) {
        return Err(internal("LIKE on non-strings"));
    }
    // The operand keeps character(n) padding (bpcharlike); a char pattern is text.
    let strs = str_side(s, false)?;
    let pats = str_side(p, is_char(&p.v().ty))?;
    let is_null = |i: usize| nulls.as_ref().is_some_and(|m| m[i]);
    let mut vals = Vec::with_capacity(m);
    if p.is_const() {
        let pat = Pattern::compile(pats.get(0), escape, case_insensitive)?;
        for i in 0..m {
            vals.push(!is_null(i) && pat.matches(strs.get(i)) != negated);
        }
    } else {
        let mut cache: Option<(String, Pattern)> = None;
        for i in 0..m {
            if is_null(i) {
                vals.push(false);
                continue;
            }
            let ps = pats.get(i);
            let pat = match &cache {
                Some((text, pat)) if text == ps => pat,
                _ => {
                    let pat = Pattern::compile(ps, escape, case_insensitive)?;
                    &cache.insert((ps.to_string(), pat)).1
                }
            };
            vals.push(pat.matches(strs.get(i)) != negated);
        }
    }
    Ok(bool_col(vals, nulls, konst))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    /// The literal-and-`%` patterns' matcher against the backtracking one, on random
    /// patterns (about 5,000 of the 40,000 drawn are of that kind) and strings over a
    /// small alphabet (so literals occur, overlap and repeat), ASCII and multi-byte,
    /// case-sensitive and not.
    #[test]
    fn segments_match_as_the_general_matcher() {
        let mut rng = StdRng::seed_from_u64(5);
        let alphabet = ['a', 'b', 'c', 'é', 'B'];
        let word = |rng: &mut StdRng, max: usize| -> String {
            (0..rng.random_range(0..=max)).map(|_| alphabet[rng.random_range(0..alphabet.len())]).collect()
        };
        let mut segment_patterns = 0;
        for _ in 0..40_000 {
            let mut pattern = String::new();
            for _ in 0..rng.random_range(1..6) {
                if rng.random_range(0..2) == 0 {
                    pattern.push('%');
                } else {
                    pattern.push_str(&word(&mut rng, 3));
                }
            }
            let ci = rng.random_range(0..4) == 0;
            let pat = Pattern::compile(&pattern, None, ci).unwrap();
            let Kind::Segments { .. } = &pat.kind else { continue };
            segment_patterns += 1;
            let toks = tokens(&pattern, None, ci).unwrap();
            for _ in 0..20 {
                let s = word(&mut rng, 12);
                let folded = if ci { s.to_lowercase() } else { s.clone() };
                assert_eq!(pat.matches(&s), general(&toks, folded.as_bytes()), "{s:?} LIKE {pattern:?} (ci {ci})");
            }
        }
        assert!(segment_patterns > 3_000, "{segment_patterns} segment patterns");
    }

    #[test]
    fn segments_anchor_and_do_not_overlap() {
        let m = |s: &str, p: &str| Pattern::compile(p, None, false).unwrap().matches(s);
        assert!(m("a special request", "%special%request%"));
        assert!(!m("a request special", "%special%request%"));
        assert!(!m("aba", "ab%ba"));
        assert!(m("abba", "ab%ba"));
        assert!(m("abxba", "ab%x%ba"));
        assert!(!m("abba", "ab%x%ba"));
        assert!(m("xabab", "%ab%ab"));
        assert!(!m("xab", "%ab%ab"));
        assert!(m("", "%%"));
    }
}
