//! COPY … FROM 'file': PostgreSQL's text format (with TPC-H's trailing delimiter
//! accepted) and CSV.

use std::io::{BufRead, BufReader};

use sqlparser::ast;

use super::Ctx;
use super::dml::affected;
use crate::binder::{ident, object_name};
use crate::error::{Error, Result};
use crate::exec::dml as xdml;
use crate::session::QueryResult;
use crate::types::Value;

#[derive(Debug, Clone)]
struct Options {
    csv: bool,
    delimiter: char,
    header: bool,
    null: String,
    quote: char,
}

fn options(opts: &[ast::CopyOption], legacy: &[ast::CopyLegacyOption]) -> Result<Options> {
    let mut o = Options { csv: false, delimiter: '\t', header: false, null: "\\N".into(), quote: '"' };
    let mut delim = None;
    let mut null = None;
    for x in opts {
        match x {
            ast::CopyOption::Format(f) => match f.value.to_ascii_lowercase().as_str() {
                "csv" => o.csv = true,
                "text" => o.csv = false,
                other => return Err(Error::not_supported(format!("COPY format \"{other}\""))),
            },
            ast::CopyOption::Delimiter(c) => delim = Some(*c),
            ast::CopyOption::Header(h) => o.header = *h,
            ast::CopyOption::Null(s) => null = Some(s.clone()),
            ast::CopyOption::Quote(c) => o.quote = *c,
            other => return Err(Error::not_supported(format!("COPY option {other}"))),
        }
    }
    for x in legacy {
        match x {
            ast::CopyLegacyOption::Delimiter(c) => delim = Some(*c),
            ast::CopyLegacyOption::Header => o.header = true,
            ast::CopyLegacyOption::Null(s) => null = Some(s.clone()),
            ast::CopyLegacyOption::Csv(_) => o.csv = true,
            other => return Err(Error::not_supported(format!("COPY option {other}"))),
        }
    }
    if o.csv {
        o.delimiter = ',';
        o.null = String::new();
    }
    if let Some(d) = delim {
        o.delimiter = d;
    }
    if let Some(n) = null {
        o.null = n;
    }
    Ok(o)
}

/// Splits a text-format line; `None` fields are NULL.
fn split_text(line: &str, o: &Options) -> Vec<Option<String>> {
    line.split(o.delimiter)
        .map(|f| {
            if f == o.null {
                None
            } else if f.contains('\\') {
                let mut s = String::with_capacity(f.len());
                let mut it = f.chars();
                while let Some(c) = it.next() {
                    if c == '\\' {
                        match it.next() {
                            Some('t') => s.push('\t'),
                            Some('n') => s.push('\n'),
                            Some('r') => s.push('\r'),
                            Some(other) => s.push(other),
                            None => {}
                        }
                    } else {
                        s.push(c);
                    }
                }
                Some(s)
            } else {
                Some(f.to_string())
            }
        })
        .collect()
}

/// Splits a CSV record (which may span lines: `more` reads the next line).
fn split_csv(first: String, o: &Options, more: &mut dyn FnMut() -> Option<String>) -> Result<Vec<Option<String>>> {
    let mut fields = Vec::new();
    let mut line = first;
    let mut chars: Vec<char> = line.chars().collect();
    let mut i = 0;
    loop {
        let mut f = String::new();
        let mut quoted = false;
        if i < chars.len() && chars[i] == o.quote {
            quoted = true;
            i += 1;
            loop {
                if i >= chars.len() {
                    match more() {
                        Some(next) => {
                            f.push('\n');
                            line = next;
                            chars = line.chars().collect();
                            i = 0;
                            continue;
                        }
                        None => return Err(Error::data("22P04", "unterminated CSV quoted field")),
                    }
                }
                let c = chars[i];
                if c == o.quote {
                    if i + 1 < chars.len() && chars[i + 1] == o.quote {
                        f.push(c);
                        i += 2;
                        continue;
                    }
                    i += 1;
                    break;
                }
                f.push(c);
                i += 1;
            }
        }
        while i < chars.len() && chars[i] != o.delimiter {
            f.push(chars[i]);
            i += 1;
        }
        fields.push(if !quoted && f == o.null { None } else { Some(f) });
        if i >= chars.len() {
            break;
        }
        i += 1; // the delimiter
    }
    Ok(fields)
}

pub fn copy(
    ctx: &mut Ctx<'_>,
    source: &ast::CopySource,
    to: bool,
    target: &ast::CopyTarget,
    opts: &[ast::CopyOption],
    legacy: &[ast::CopyLegacyOption],
) -> Result<QueryResult> {
    if to {
        return Err(Error::not_supported("COPY … TO (use a query in the shell with --mode csv)"));
    }
    let ast::CopySource::Table { table_name, columns } = source else {
        return Err(Error::not_supported("COPY from a query"));
    };
    let ast::CopyTarget::File { filename } = target else {
        return Err(Error::not_supported("COPY FROM STDIN or a program; name a file"));
    };
    let o = options(opts, legacy)?;
    let name = object_name(table_name)?;
    let table = ctx.catalog().table(&name).cloned().ok_or_else(|| Error::undefined_table(&name))?;
    let targets: Vec<usize> = if columns.is_empty() {
        (0..table.columns.len()).collect()
    } else {
        columns
            .iter()
            .map(|c| {
                let n = ident(c);
                table.column_index(&n).ok_or_else(|| {
                    Error::undefined_column(&n)
                        .with_message(format!("column \"{n}\" of relation \"{name}\" does not exist"))
                })
            })
            .collect::<Result<_>>()?
    };
    let file = std::fs::File::open(filename)
        .map_err(|e| Error::io(format!("could not open file \"{filename}\" for reading: {e}")))?;
    let mut lines = BufReader::with_capacity(1 << 20, file).lines();
    let mut lineno = 0usize;
    let mut next_line = |lineno: &mut usize| -> Option<Result<String>> {
        lines.next().map(|l| {
            *lineno += 1;
            l.map(|mut s| {
                if s.ends_with('\r') {
                    s.pop();
                }
                s
            })
            .map_err(|e| Error::io(format!("could not read file \"{filename}\": {e}")))
        })
    };
    if o.header
        && let Some(h) = next_line(&mut lineno) {
            h?;
        }
    // Defaults for columns not named.
    let defaults: Vec<Value> = (0..table.columns.len())
        .map(|c| {
            if targets.contains(&c) {
                Ok(Value::Null)
            } else {
                super::dml::default_value(ctx, &table, c)
            }
        })
        .collect::<Result<_>>()?;
    let mut former = ctx.row_former(&table)?;
    let w = ctx.txn.writer()?;
    let mut count = 0usize;
    let mut pending: Vec<String> = Vec::new();
    loop {
        let line = match pending.pop() {
            Some(l) => l,
            None => match next_line(&mut lineno) {
                None => break,
                Some(l) => l?,
            },
        };
        if !o.csv && line == "\\." {
            break;
        }
        let at = lineno;
        let context = |e: Error| {
            let m = format!("{} (COPY {name}, line {at})", e.message);
            e.with_message(m)
        };
        let mut fields = if o.csv {
            let mut extra = || next_line(&mut lineno).and_then(|r| r.ok());
            split_csv(line, &o, &mut extra).map_err(context)?
        } else {
            split_text(&line, &o)
        };
        // TPC-H's .tbl files end each line with the delimiter.
        if fields.len() == targets.len() + 1 && matches!(fields.last(), Some(Some(s)) if s.is_empty()) {
            fields.pop();
        }
        if fields.len() > targets.len() {
            return Err(context(Error::data("22P04", "extra data after last expected column")));
        }
        if fields.len() < targets.len() {
            let missing = &table.columns[targets[fields.len()]].name;
            return Err(context(Error::data("22P04", format!("missing data for column \"{missing}\""))));
        }
        let mut row = defaults.clone();
        for (f, &c) in fields.into_iter().zip(&targets) {
            row[c] = match f {
                None => Value::Null,
                Some(s) => Value::parse(&s, &table.columns[c].ty).map_err(|e| context(Error::from(e)))?,
            };
        }
        xdml::insert_row_with(w, &table, &row, former.as_mut()).map_err(context)?;
        count += 1;
        if count % super::dml::CHECK_EVERY == 0 {
            ctx.interrupt.check()?;
        }
    }
    ctx.note_inserts(&table, count);
    Ok(affected(format!("COPY {count}"), count))
}
