//! psql's backslash commands: `\q`, `\x`, `\timing`, `\dt`, `\d [NAME]`, `\?`.
//!
//! A backslash command is one line, and never part of a statement: it runs at once
//! even while a statement is being typed (which is kept, as psql keeps its query
//! buffer), so it cannot leave the user at a continuation prompt.

use beedb::Value;

use super::format::{self, render_aligned, row_count};
use super::import::quote_ident;
use super::{Flow, Shell, sql_literal};

/// The schema every relation is listed in: BeeDB has one namespace, which
/// information_schema calls `public`, as PostgreSQL's default schema is.
const SCHEMA: &str = "public";

pub const HELP: &str = "\
psql's backslash commands (one line each):
  \\q                      Leave the shell
  \\dt                     List tables
  \\d                      List tables and views
  \\d NAME                 Describe table or view NAME: columns, then indexes
  \\x [on|off]             Toggle (or set) expanded display in table mode
  \\timing [on|off]        Toggle (or set) printing each statement's run time
  \\?                      Show this message
Dot commands (.help lists them) do the rest.
";

impl Shell {
    /// Runs a backslash command (the whole line, starting with `\`).
    pub fn run_backslash(&mut self, line: &str) -> (bool, Flow) {
        // `\dt;` is a common slip: a trailing `;` is not part of the command.
        let line = line.trim_end_matches(';').trim_end();
        let (command, rest) = match line.find(char::is_whitespace) {
            Some(i) => (&line[..i], line[i..].trim()),
            None => (line, ""),
        };
        let args: Vec<&str> = rest.split_whitespace().collect();
        let ok = match command {
            "\\q" | "\\quit" => return (true, Flow::Quit),
            "\\?" => {
                self.console(HELP);
                true
            }
            "\\dt" | "\\dt+" => match args.as_slice() {
                [] => self.list_relations(true),
                _ => self.usage("\\dt (patterns are not supported)"),
            },
            "\\d" | "\\d+" => {
                if rest.is_empty() {
                    self.list_relations(false)
                } else {
                    self.describe(rest)
                }
            }
            "\\x" => self.toggle(
                args.first().copied(),
                "\\x [on|off]",
                |sh| &mut sh.expanded,
                "Expanded display",
            ),
            "\\timing" => self.toggle(
                args.first().copied(),
                "\\timing [on|off]",
                |sh| &mut sh.timer,
                "Timing",
            ),
            _ => {
                // psql's wording (two lines, no "ERROR:").
                self.print_error(&format!("invalid command {command}\nTry \\? for help.\n"));
                false
            }
        };
        (ok, Flow::Continue)
    }

    /// `\dt` (tables) or `\d` (tables and views): psql's "List of relations", without
    /// its Owner column (an embedded database has no roles).
    fn list_relations(&mut self, tables_only: bool) -> bool {
        let filter = if tables_only { " WHERE table_type = 'BASE TABLE'" } else { "" };
        let sql = format!(
            "SELECT table_name, table_type FROM information_schema.tables{filter} ORDER BY table_name"
        );
        let Some(result) = self.query(&sql) else {
            return false;
        };
        if result.rows.is_empty() {
            // psql says so on standard error, and it is no failure.
            self.notice("Did not find any relations.\n");
            return true;
        }
        let rows: Vec<Vec<String>> = result
            .rows
            .iter()
            .map(|r| {
                let kind = match text_at(r, 1).as_str() {
                    "VIEW" => "view",
                    _ => "table",
                };
                vec![SCHEMA.to_string(), text_at(r, 0), kind.to_string()]
            })
            .collect();
        let footer = [row_count(rows.len())];
        let text = render_aligned(
            Some("List of relations"),
            &["Schema", "Name", "Type"],
            &[],
            &rows,
            &footer,
        );
        self.print(&text);
        true
    }

    /// `\d NAME`: psql's description of a table or view: Column, Type, Collation
    /// (always empty: BeeDB compares text by code point), Nullable, Default; then a
    /// table's indexes as psql lists them, the primary key first, its CHECK
    /// constraints by name, its foreign keys and those referencing it.
    fn describe(&mut self, name: &str) -> bool {
        // As in SQL, an unquoted name folds to lower case.
        let name = match name.strip_prefix('"').and_then(|n| n.strip_suffix('"')) {
            Some(quoted) => quoted.replace("\"\"", "\""),
            None => name.to_lowercase(),
        };
        let literal = sql_literal(&name);
        let Some(kind) = self.query(&format!(
            "SELECT table_type FROM information_schema.tables WHERE table_name = {literal}"
        )) else {
            return false;
        };
        let Some(kind) = kind.rows.first().map(|r| text_at(r, 0)) else {
            self.print_error(&format!("Did not find any relation named \"{name}\".\n"));
            return false;
        };
        let is_view = kind == "VIEW";
        let rows: Vec<Vec<String>> = if is_view {
            // information_schema.columns lists table columns only: a view's come
            // from its result's columns (a view's columns have no constraints).
            let Some(result) = self.query(&format!("SELECT * FROM {} LIMIT 0", quote_ident(&name)))
            else {
                return false;
            };
            result
                .columns
                .iter()
                .map(|c| vec![c.name.clone(), c.data_type.to_string(), String::new(), String::new(), String::new()])
                .collect()
        } else {
            let Some(columns) = self.query(&format!(
                "SELECT column_name, data_type, is_nullable, column_default, identity_generation \
                 FROM information_schema.columns WHERE table_name = {literal} ORDER BY ordinal_position"
            )) else {
                return false;
            };
            columns
                .rows
                .iter()
                .map(|r| {
                    let nullable = if text_at(r, 2) == "NO" { "not null" } else { "" };
                    // psql: an identity column's default is its generation.
                    let default = match text_at(r, 4).as_str() {
                        "" => text_at(r, 3),
                        generation => format!("generated {} as identity", generation.to_lowercase()),
                    };
                    vec![text_at(r, 0), text_at(r, 1), String::new(), nullable.to_string(), default]
                })
                .collect()
        };
        let mut footers = Vec::new();
        if !is_view {
            let Some(indexes) = self.query(&format!(
                "SELECT index_name, columns, is_unique, is_primary FROM beedb_indexes \
                 WHERE table_name = {literal} ORDER BY is_primary DESC, index_name"
            )) else {
                return false;
            };
            if !indexes.rows.is_empty() {
                footers.push("Indexes:".to_string());
            }
            for r in &indexes.rows {
                let kind = if is_true(r, 3) {
                    " PRIMARY KEY,"
                } else if is_true(r, 2) {
                    " UNIQUE,"
                } else {
                    ""
                };
                footers.push(format!(
                    "    {}{kind} btree ({})",
                    quote_ident(&text_at(r, 0)),
                    text_at(r, 1)
                ));
            }
            let Some(checks) = self.query(&format!(
                "SELECT constraint_name, check_clause FROM beedb_check_constraints \
                 WHERE table_name = {literal} ORDER BY constraint_name"
            )) else {
                return false;
            };
            if !checks.rows.is_empty() {
                footers.push("Check constraints:".to_string());
            }
            for r in &checks.rows {
                // psql quotes every constraint name here.
                let quoted = format!("\"{}\"", text_at(r, 0).replace('"', "\"\""));
                footers.push(format!("    {quoted} CHECK ({})", text_at(r, 1)));
            }
            // Foreign keys as pg_get_constraintdef prints them: this table's, then
            // those of tables referencing it.
            let fk_def = |r: &beedb::Row, refs: usize| {
                let mut def = format!(
                    "FOREIGN KEY ({}) REFERENCES {}({})",
                    text_at(r, refs),
                    plain_or_quoted(&text_at(r, refs + 1)),
                    text_at(r, refs + 2)
                );
                for (clause, at) in [("ON DELETE", refs + 3), ("ON UPDATE", refs + 4)] {
                    let action = text_at(r, at);
                    if action != "NO ACTION" {
                        def.push_str(&format!(" {clause} {action}"));
                    }
                }
                def
            };
            let Some(fks) = self.query(&format!(
                "SELECT constraint_name, columns, referenced_table, referenced_columns, on_delete, on_update \
                 FROM beedb_foreign_keys WHERE table_name = {literal} ORDER BY constraint_name"
            )) else {
                return false;
            };
            if !fks.rows.is_empty() {
                footers.push("Foreign-key constraints:".to_string());
            }
            for r in &fks.rows {
                let quoted = format!("\"{}\"", text_at(r, 0).replace('"', "\"\""));
                footers.push(format!("    {quoted} {}", fk_def(r, 1)));
            }
            let Some(refs) = self.query(&format!(
                "SELECT table_name, constraint_name, columns, referenced_table, referenced_columns, on_delete, on_update \
                 FROM beedb_foreign_keys WHERE referenced_table = {literal} ORDER BY table_name, constraint_name"
            )) else {
                return false;
            };
            if !refs.rows.is_empty() {
                footers.push("Referenced by:".to_string());
            }
            for r in &refs.rows {
                let q = |s: String| format!("\"{}\"", s.replace('"', "\"\""));
                footers.push(format!("    TABLE {} CONSTRAINT {} {}", q(text_at(r, 0)), q(text_at(r, 1)), fk_def(r, 2)));
            }
        }
        let title = format!(
            "{} \"{SCHEMA}.{name}\"",
            if is_view { "View" } else { "Table" }
        );
        let text = render_aligned(
            Some(&title),
            &["Column", "Type", "Collation", "Nullable", "Default"],
            &[],
            &rows,
            &footers,
        );
        self.print(&text);
        true
    }

    /// `\x` and `\timing`: without an argument flips the switch, with `on`/`off`
    /// sets it; then says `<what> is on.` as psql does.
    fn toggle(
        &mut self,
        arg: Option<&str>,
        usage: &str,
        switch: fn(&mut Shell) -> &mut bool,
        what: &str,
    ) -> bool {
        let value = match arg {
            None => !*switch(self),
            Some(word) => match super::parse_switch(word) {
                Some(on) => on,
                None => return self.usage(usage),
            },
        };
        *switch(self) = value;
        self.console(&format!("{what} is {}.\n", if value { "on" } else { "off" }));
        true
    }
}

/// Column `i` of a row as text (empty for NULL).
/// A name as pg_get_constraintdef prints it: quoted only when it must be.
fn plain_or_quoted(name: &str) -> String {
    let plain = name.chars().next().is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if plain { name.to_string() } else { format!("\"{}\"", name.replace('"', "\"\"")) }
}

fn text_at(row: &beedb::Row, i: usize) -> String {
    row.value(i).and_then(format::value_text).unwrap_or_default()
}

fn is_true(row: &beedb::Row, i: usize) -> bool {
    matches!(row.value(i), Some(Value::Boolean(true)))
}
