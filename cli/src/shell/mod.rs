//! The shell's core: one open database and connection, the output settings, and the
//! running of statements and dot commands from any source (the REPL, a pipe, `-c`,
//! `-f` or `.read`).

pub mod args;
pub mod backslash;
pub mod ctrl_c;
pub mod errors;
pub mod format;
pub mod import;
pub mod repl;
pub mod splitter;

use std::io::{self, BufRead, Read, Write};
use std::time::Instant;

use beedb::{Connection, Database, Error, QueryResult, Value};

use format::Mode;
use splitter::{Pending, Splitter};

/// Path that opens a private in-memory database.
pub const MEMORY: &str = ":memory:";

/// How deeply `.read` may nest.
const MAX_READ_DEPTH: usize = 16;

/// The longest line, and the longest statement, the shell reads from standard input
/// or a script file (as COPY's longest line). A longer one is an error (SQLSTATE
/// 54000) and the statements it belongs to are skipped, instead of growing a buffer
/// until the process dies (`beedb < /dev/zero`).
pub const MAX_INPUT_BYTES: usize = 64 << 20;

pub const HELP: &str = "\
Enter SQL statements terminated by a semicolon; they may span several lines.
Dot commands (one line each, no semicolon):
  .help                   Show this message
  .quit, .exit            Leave the shell (Ctrl-D does too)
  .tables                 List tables and views
  .schema [TABLE]         Show the CREATE statements of all objects, or of TABLE
                          and its indexes
  .mode [MODE]            Set (or show) the output mode: table, csv, json,
                          line or markdown
  .headers on|off         Show column names in table and csv modes (default on)
  .output [FILE]          Send results to FILE; without FILE, to the terminal again
  .once FILE              Send only the next statement's results to FILE
  .timer on|off           Print each statement's run time
  .import [--skip N] FILE TABLE
                          Load CSV FILE into TABLE (created, its columns named
                          by the first row, if it does not exist)
  .read FILE              Run the statements in FILE
  .open FILE              Close this database and open FILE
                          (:memory: for a new in-memory database)
psql's backslash commands work too: \\? lists them.
Ctrl-C cancels the running statement; at the prompt it clears the statement
being typed, and pressed twice at an empty prompt it leaves the shell.
";

/// Whether the shell should go on after a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Continue,
    Quit,
}

pub struct Shell {
    conn: Connection,
    /// What was opened (`:memory:` or a file path), as given.
    path: String,
    pub mode: Mode,
    /// Column names in table and csv modes (`.headers`).
    pub headers: bool,
    /// psql's expanded display (`\x`).
    pub expanded: bool,
    pub timer: bool,
    /// Standard output: the console, where results go unless redirected, and where
    /// messages about the shell's own settings always go.
    out: Box<dyn Write>,
    /// The file `.output FILE` sends results to, until `.output` alone.
    output: Option<Redirect>,
    /// The file `.once FILE` sends the next statement's results to (before
    /// `output`); closed after that statement or command.
    once: Option<Redirect>,
    err: Box<dyn Write>,
    /// Whether any statement or command failed.
    pub failed: bool,
    read_depth: usize,
    /// The scripts being read, innermost last: each one's name (a file's path as
    /// given, `<stdin>` for a pipe) and the line being run. Errors from them name
    /// the place as psql's do (`beedb:FILE:LINE: ERROR:  …`); none for typed
    /// input and `-c`.
    sources: Vec<(String, u64)>,
    /// The SIGINT registration that cancels this connection's statements, in an
    /// interactive session ([`Shell::cancel_on_ctrl_c`]).
    ctrl_c: Option<ctrl_c::CtrlC>,
}

impl Shell {
    /// Opens `path` (or an in-memory database for `:memory:`).
    #[cfg(test)]
    pub fn open(path: &str, out: Box<dyn Write>, err: Box<dyn Write>) -> Result<Shell, Error> {
        Shell::open_with(path, false, out, err)
    }

    /// [`Shell::open`], read-only when `read_only` (nothing is written to the file,
    /// which must exist; works while its disk is full).
    pub fn open_with(
        path: &str,
        read_only: bool,
        out: Box<dyn Write>,
        err: Box<dyn Write>,
    ) -> Result<Shell, Error> {
        let mut options = beedb::DatabaseOptions::default();
        options.storage.read_only = read_only;
        let db = Database::open_with(path, options)?;
        Ok(Shell {
            conn: db.connect(),
            path: path.to_string(),
            mode: Mode::Table,
            headers: true,
            expanded: false,
            timer: false,
            out,
            output: None,
            once: None,
            err,
            failed: false,
            read_depth: 0,
            sources: Vec::new(),
            ctrl_c: None,
        })
    }

    /// Makes Ctrl-C (SIGINT) cancel the running statement instead of ending the
    /// process, for interactive sessions (`repl::run`); kept across `.open`. Scripts
    /// and pipes keep the default, so Ctrl-C stops them as it stops `psql -f`.
    pub fn cancel_on_ctrl_c(&mut self) -> std::io::Result<()> {
        self.ctrl_c = Some(ctrl_c::CtrlC::register(&self.conn.interrupt_handle())?);
        Ok(())
    }

    /// After the connection changed (`.open`): points an active Ctrl-C registration
    /// at the new connection. The new one is registered before the old one is
    /// dropped, so SIGINT never falls back to ending the process in between.
    fn renew_ctrl_c(&mut self) {
        if self.ctrl_c.is_some()
            && let Err(e) = self.cancel_on_ctrl_c()
        {
            self.error(&format!("could not handle Ctrl-C: {e}"));
        }
    }

    pub fn path(&self) -> &str {
        &self.path
    }

    /// The connection's transaction state, for the prompt.
    pub fn transaction_status(&self) -> beedb::TransactionStatus {
        self.conn.transaction_status()
    }

    pub fn is_memory(&self) -> bool {
        self.path == MEMORY
    }

    /// The settings results are printed with.
    pub fn format_options(&self) -> format::Options {
        format::Options {
            mode: self.mode,
            headers: self.headers,
            expanded: self.expanded,
        }
    }

    /// Writes results where they go (a `.once` file, else an `.output` file, else
    /// standard output) and flushes, so a reader on a pipe sees them now. A write
    /// that fails (a full disk) is reported once per statement, not silently lost.
    fn print(&mut self, text: &str) {
        let target = match (&mut self.once, &mut self.output) {
            (Some(r), _) | (None, Some(r)) => r,
            (None, None) => {
                let _ = self.out.write_all(text.as_bytes());
                let _ = self.out.flush();
                return;
            }
        };
        if let Err(e) = target
            .file
            .write_all(text.as_bytes())
            .and_then(|()| target.file.flush())
        {
            let message = format!("could not write to file \"{}\": {e}", target.path);
            self.error(&message);
        }
    }

    /// Writes to standard output whatever results are redirected to: messages about
    /// the shell itself (`\x`, `\timing`, the run time), as psql prints them.
    fn console(&mut self, text: &str) {
        let _ = self.out.write_all(text.as_bytes());
        let _ = self.out.flush();
    }

    /// Ends a `.once` redirection (after the statement or command following it).
    fn end_once(&mut self) {
        self.once = None;
    }

    /// Opens (truncating) the file for `.output` or `.once`.
    fn redirect_to(&mut self, path: &str) -> Option<Redirect> {
        match std::fs::File::create(path) {
            Ok(file) => Some(Redirect {
                file: io::BufWriter::new(file),
                path: path.to_string(),
            }),
            Err(e) => {
                self.error(&format!("could not open file \"{path}\" for writing: {e}"));
                None
            }
        }
    }

    /// Writes a message that is no failure to standard error (psql's "Did not find
    /// any relations.").
    fn notice(&mut self, text: &str) {
        let _ = self.out.flush();
        let _ = self.err.write_all(text.as_bytes());
        let _ = self.err.flush();
    }

    /// Writes an error message to standard error (after flushing standard output, so
    /// the two interleave in order on a terminal) and records the failure.
    fn print_error(&mut self, text: &str) {
        let _ = self.out.flush();
        // From a script: the file and line go before the first line, as psql's
        // `psql:FILE:LINE: ERROR:  …` (the line of the statement's end).
        if let Some((name, line)) = self.sources.last() {
            let _ = write!(self.err, "beedb:{name}:{line}: ");
        }
        let _ = self.err.write_all(text.as_bytes());
        let _ = self.err.flush();
        self.failed = true;
    }

    fn error(&mut self, message: &str) {
        self.print_error(&format!("ERROR:  {message}\n"));
    }

    /// Runs one statement and prints its result or its error. Returns whether it
    /// succeeded.
    pub fn run_statement(&mut self, sql: &str) -> bool {
        let start = Instant::now();
        let result = self.conn.execute(sql, &[]);
        let elapsed = start.elapsed();
        let ok = match result {
            Ok(result) => {
                let text = format::render(&self.format_options(), &result);
                self.print(&text);
                true
            }
            Err(e) => {
                self.print_error(&errors::format_error(&e, sql));
                false
            }
        };
        self.end_once();
        if self.timer {
            self.console(&format!("Run Time: {:.3} s\n", elapsed.as_secs_f64()));
        }
        ok
    }

    /// Runs a query for a dot command; prints its error if it fails.
    fn query(&mut self, sql: &str) -> Option<QueryResult> {
        match self.conn.execute(sql, &[]) {
            Ok(r) => Some(r),
            Err(e) => {
                self.print_error(&errors::format_error(&e, sql));
                None
            }
        }
    }

    /// Feeds one line of input (with or without its newline) through `splitter`:
    /// a dot command when no statement is in progress, else SQL, running every
    /// statement it completes. Returns whether everything run succeeded, and whether
    /// to go on. With `stop_on_error`, stops at the first failing statement (the rest
    /// of the line is dropped).
    pub fn feed_line(
        &mut self,
        splitter: &mut Splitter,
        line: &str,
        stop_on_error: bool,
    ) -> (bool, Flow) {
        if splitter.is_idle() && line.trim_start().starts_with('.') {
            return self.run_dot(line.trim());
        }
        // psql's backslash commands, at the start of a line that is not inside a
        // string or comment (a backslash is no SQL token there). A statement being
        // typed is kept, as in psql; the command itself never becomes part of it.
        if matches!(splitter.pending(), Pending::Nothing | Pending::Statement)
            && line.trim_start().starts_with('\\')
        {
            let result = self.run_backslash(line.trim());
            self.end_once();
            return result;
        }
        let mut text = line.to_string();
        if !text.ends_with('\n') {
            text.push('\n');
        }
        let mut ok = true;
        for piece in splitter.push(&text) {
            if !self.run_statement(&piece.text) {
                ok = false;
                if stop_on_error {
                    splitter.clear();
                    break;
                }
            }
        }
        (ok, Flow::Continue)
    }

    /// Runs the statement left unfinished at the end of input (a final statement
    /// without its `;`).
    pub fn finish(&mut self, splitter: &mut Splitter) -> bool {
        match splitter.finish() {
            Some(piece) => self.run_statement(&piece.text),
            None => true,
        }
    }

    /// Runs a script (`-c`, `-f`, `.read`), stopping at the first failure. Returns
    /// whether it all succeeded, and whether to go on (`.quit` in the script).
    pub fn run_script(&mut self, text: &str) -> (bool, Flow) {
        self.run_lines(text, false)
    }

    /// [`Shell::run_script`]; `counted`: the text is the innermost of `sources`,
    /// whose line number follows the lines fed.
    fn run_lines(&mut self, text: &str, counted: bool) -> (bool, Flow) {
        let mut splitter = Splitter::new();
        for (i, line) in text.split_inclusive('\n').enumerate() {
            if counted && let Some(source) = self.sources.last_mut() {
                source.1 = i as u64 + 1;
            }
            let (ok, flow) = self.feed_line(&mut splitter, line, true);
            if !ok || flow == Flow::Quit {
                return (ok, flow);
            }
        }
        (self.finish(&mut splitter), Flow::Continue)
    }

    /// Runs the statements of a file, stopping at the first failure.
    pub fn run_file(&mut self, path: &str) -> (bool, Flow) {
        if self.read_depth >= MAX_READ_DEPTH {
            self.error(&format!("cannot read \"{path}\": .read nested too deeply"));
            return (false, Flow::Continue);
        }
        let text = match read_script(path) {
            Ok(bytes) => match String::from_utf8(bytes) {
                Ok(text) => text,
                Err(e) => {
                    // Never run SQL with U+FFFD where the file had other bytes.
                    let (line, byte) = utf8_error_place(e.as_bytes(), e.utf8_error().valid_up_to());
                    self.error(&format!(
                        "invalid byte sequence for encoding \"UTF8\" at byte {byte} of line {line} of file \"{path}\""
                    ));
                    return (false, Flow::Continue);
                }
            },
            Err(e) => {
                self.error(&format!("could not read file \"{path}\": {e}"));
                return (false, Flow::Continue);
            }
        };
        self.read_depth += 1;
        self.sources.push((path.to_string(), 0));
        let r = self.run_lines(&text, true);
        self.sources.pop();
        self.read_depth -= 1;
        r
    }

    /// Reads statements from `input` line by line (not all at once) and runs each as
    /// soon as it is complete; errors do not stop it. Returns whether all succeeded.
    ///
    /// A line that is not UTF-8, a line longer than [`MAX_INPUT_BYTES`] and a
    /// statement longer than that are errors, and the statement they are in is
    /// skipped whole — and every other statement such a line touches: their text is
    /// still scanned (lossily, without keeping it) so that the quotes and comments
    /// they open and close are followed, and the input goes on at the true end of the
    /// skipped statement, never in the middle of a string literal.
    pub fn run_stream(&mut self, input: &mut dyn BufRead) -> bool {
        self.sources.push(("<stdin>".to_string(), 0));
        let ok = self.run_stream_lines(input);
        self.sources.pop();
        ok
    }

    fn run_stream_lines(&mut self, input: &mut dyn BufRead) -> bool {
        let mut splitter = Splitter::new();
        let mut ok = true;
        let mut line = Vec::new();
        let mut line_number = 0u64;
        loop {
            line.clear();
            line_number += 1;
            if let Some(source) = self.sources.last_mut() {
                source.1 = line_number;
            }
            // At most one byte more than the longest line: a longer one is cut here.
            match (&mut *input).take(MAX_INPUT_BYTES as u64 + 1).read_until(b'\n', &mut line) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.error(&format!("could not read input: {e}"));
                    ok = false;
                    break;
                }
            }
            if line.len() > MAX_INPUT_BYTES && line.last() != Some(&b'\n') {
                self.error(&format!(
                    "line {line_number} of standard input is longer than the maximum of {MAX_INPUT_BYTES} bytes (SQLSTATE 54000); the statements it is in are skipped"
                ));
                ok = false;
                // Follow the rest of the line, a bounded piece at a time.
                loop {
                    drop_segment(&mut splitter, &String::from_utf8_lossy(&line));
                    if line.last() == Some(&b'\n') {
                        break;
                    }
                    if !self.bounded_token(&splitter, line_number) {
                        return false;
                    }
                    line.clear();
                    match (&mut *input).take(MAX_INPUT_BYTES as u64).read_until(b'\n', &mut line) {
                        Ok(0) => break,
                        Ok(_) => {}
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                        Err(e) => {
                            self.error(&format!("could not read input: {e}"));
                            return false;
                        }
                    }
                }
                if !self.bounded_token(&splitter, line_number) {
                    return false;
                }
                continue;
            }
            let text = match std::str::from_utf8(&line) {
                Ok(text) => text,
                Err(e) => {
                    // The statement this line belongs to is dropped whole: running
                    // it without the line, or with U+FFFD in it, would be wrong. The
                    // statements the line completes before the bad byte run.
                    self.error(&format!(
                        "invalid byte sequence for encoding \"UTF8\" at byte {} of line {line_number} of standard input; the statement it is in is skipped",
                        e.valid_up_to() + 1
                    ));
                    ok = false;
                    let valid = e.valid_up_to();
                    let prefix = std::str::from_utf8(&line[..valid]).unwrap_or_default();
                    if is_command_line(&splitter, prefix) {
                        continue; // a dot or backslash command: the line is all of it
                    }
                    for piece in splitter.push(prefix) {
                        ok &= self.run_statement(&piece.text);
                    }
                    drop_segment(&mut splitter, &String::from_utf8_lossy(&line[valid..]));
                    continue;
                }
            };
            let (line_ok, flow) = self.feed_line(&mut splitter, text, false);
            ok &= line_ok;
            if flow == Flow::Quit {
                return ok;
            }
            if !splitter.is_dropping() && splitter.remainder().len() > MAX_INPUT_BYTES {
                self.error(&format!(
                    "the statement line {line_number} of standard input is in is longer than the maximum of {MAX_INPUT_BYTES} bytes (SQLSTATE 54000); it is skipped"
                ));
                ok = false;
                splitter.drop_statement();
            }
            if !self.bounded_token(&splitter, line_number) {
                return false;
            }
        }
        ok & self.finish(&mut splitter)
    }

    /// While a statement is dropped the splitter keeps only its unfinished token (a
    /// string, quoted identifier or comment still open). One longer than twice
    /// [`MAX_INPUT_BYTES`] cannot be followed in bounded memory: the rest of the input
    /// is not run (an error); returns false then.
    fn bounded_token(&mut self, splitter: &Splitter, line_number: u64) -> bool {
        if splitter.remainder().len() <= 2 * MAX_INPUT_BYTES {
            return true;
        }
        self.error(&format!(
            "a string, quoted identifier or comment open at line {line_number} of standard input runs past {} bytes (SQLSTATE 54000); the rest of the input is not run",
            2 * MAX_INPUT_BYTES
        ));
        false
    }

    /// Runs a dot command (the whole line, starting with `.`). A `.once` before it
    /// applies to it (and ends after it), as in sqlite3.
    pub fn run_dot(&mut self, line: &str) -> (bool, Flow) {
        let is_once = line.split_whitespace().next() == Some(".once");
        let result = self.run_dot_command(line);
        if !is_once {
            self.end_once();
        }
        result
    }

    fn run_dot_command(&mut self, line: &str) -> (bool, Flow) {
        let mut words = line.split_whitespace();
        let command = words.next().unwrap_or(".");
        let args: Vec<&str> = words.collect();
        let rest = line[command.len()..].trim();
        let ok = match command {
            ".help" => {
                self.print(HELP);
                true
            }
            ".quit" | ".exit" | ".q" => return (true, Flow::Quit),
            ".tables" => self.dot_tables(),
            ".schema" => self.dot_schema(args.first().copied()),
            ".mode" => match args.as_slice() {
                [] => {
                    let text = format!("current output mode: {}\n", self.mode.name());
                    self.print(&text);
                    true
                }
                [name] => match Mode::parse(name) {
                    Some(m) => {
                        self.mode = m;
                        true
                    }
                    None => self.usage(&format!(
                        "unknown mode \"{name}\"; use {}",
                        format::MODE_NAMES
                    )),
                },
                _ => self.usage(".mode table|csv|json|line|markdown"),
            },
            ".timer" => match switch_of(&args) {
                Some(on) => {
                    self.timer = on;
                    true
                }
                None => self.usage(".timer on|off"),
            },
            ".headers" | ".header" => match switch_of(&args) {
                Some(on) => {
                    self.headers = on;
                    true
                }
                None => self.usage(".headers on|off"),
            },
            ".output" | ".out" => {
                // Close the previous file first (it may be the one named again).
                self.output = None;
                if rest.is_empty() {
                    true
                } else {
                    self.output = self.redirect_to(unquote(rest));
                    self.output.is_some()
                }
            }
            ".once" => {
                if rest.is_empty() {
                    self.usage(".once FILE")
                } else {
                    self.once = self.redirect_to(unquote(rest));
                    self.once.is_some()
                }
            }
            ".import" => self.dot_import(rest),
            ".read" => {
                if rest.is_empty() {
                    self.usage(".read FILE")
                } else {
                    return self.run_file(unquote(rest));
                }
            }
            ".open" => {
                if rest.is_empty() {
                    self.usage(".open FILE")
                } else {
                    self.reopen(unquote(rest))
                }
            }
            _ => {
                self.error(&format!(
                    "unknown command \"{command}\"; enter \".help\" for a list of commands"
                ));
                false
            }
        };
        (ok, Flow::Continue)
    }

    fn usage(&mut self, message: &str) -> bool {
        self.error(&format!("usage: {message}"));
        false
    }

    fn dot_tables(&mut self) -> bool {
        let Some(result) =
            self.query("SELECT table_name FROM information_schema.tables ORDER BY table_name")
        else {
            return false;
        };
        let mut text = String::new();
        for row in &result.rows {
            if let Some(name) = row.value(0).and_then(format::value_text) {
                text.push_str(&name);
                text.push('\n');
            }
        }
        self.print(&text);
        true
    }

    fn dot_schema(&mut self, table: Option<&str>) -> bool {
        // Sequences come first (a column's DEFAULT may call one), each table is
        // followed by its indexes (which need it to exist), and views come last
        // (they need their tables), so the output replays as a script.
        let sql = match table {
            Some(t) => format!(
                "SELECT sql FROM beedb_schema WHERE name = {0} OR table_name = {0} \
                 ORDER BY CASE type WHEN 'index' THEN 1 ELSE 0 END, name",
                sql_literal(t)
            ),
            None => "SELECT sql FROM beedb_schema \
                     ORDER BY CASE type WHEN 'sequence' THEN -1 WHEN 'view' THEN 1 ELSE 0 END, table_name, \
                     CASE type WHEN 'index' THEN 1 ELSE 0 END, name"
                .to_string(),
        };
        let Some(result) = self.query(&sql) else {
            return false;
        };
        let mut text = String::new();
        for row in &result.rows {
            if let Some(Value::Text(s) | Value::Varchar(s)) = row.value(0) {
                let s = s.trim_end();
                text.push_str(s);
                if !s.ends_with(';') {
                    text.push(';');
                }
                text.push('\n');
            }
        }
        self.print(&text);
        true
    }

    /// Closes this database and opens `path`. If that fails, the previous database
    /// is opened again (or, failing that, an in-memory one).
    fn reopen(&mut self, path: &str) -> bool {
        // Close first: the new path may be the file we hold open (and locked).
        self.conn = Database::open(MEMORY)
            .expect("in-memory database")
            .connect();
        let opened = match Database::open(path) {
            Ok(db) => {
                self.conn = db.connect();
                self.path = path.to_string();
                true
            }
            Err(e) => {
                self.print_error(&format!(
                    "ERROR:  could not open \"{path}\": {}\n",
                    e.message
                ));
                let previous = self.path.clone();
                match Database::open(&previous) {
                    Ok(db) => self.conn = db.connect(),
                    Err(_) => self.path = MEMORY.to_string(),
                }
                false
            }
        };
        self.renew_ctrl_c();
        opened
    }
}

/// An open `.output` or `.once` file.
struct Redirect {
    file: io::BufWriter<std::fs::File>,
    /// As given, for error messages.
    path: String,
}

/// `on`/`off` and the other spellings psql and sqlite3 accept for a switch.
/// The value of a dot command's one `on|off` argument; `None` for anything else.
/// Reads a script file whole, line by line, refusing a line longer than
/// [`MAX_INPUT_BYTES`] (so `-f /dev/zero` is an error, not a buffer that grows until
/// the process dies).
fn read_script(path: &str) -> io::Result<Vec<u8>> {
    let mut input = io::BufReader::new(std::fs::File::open(path)?);
    let mut bytes = Vec::new();
    let mut line_number = 0u64;
    loop {
        let start = bytes.len();
        line_number += 1;
        match (&mut input).take(MAX_INPUT_BYTES as u64 + 1).read_until(b'\n', &mut bytes) {
            Ok(0) => return Ok(bytes),
            Ok(n) if n > MAX_INPUT_BYTES && bytes.last() != Some(&b'\n') => {
                bytes.truncate(start);
                return Err(io::Error::other(format!(
                    "line {line_number} is longer than the maximum of {MAX_INPUT_BYTES} bytes (SQLSTATE 54000)"
                )));
            }
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Whether `line`, fed at the splitter's current state, is a dot or backslash command
/// (as [`Shell::feed_line`] decides) rather than SQL.
fn is_command_line(splitter: &Splitter, line: &str) -> bool {
    let line = line.trim_start();
    (splitter.is_idle() && line.starts_with('.'))
        || (matches!(splitter.pending(), Pending::Nothing | Pending::Statement) && line.starts_with('\\'))
}

/// Feeds `text` without running anything in it: the statement in progress, or the
/// next to start, is dropped, and so is every statement `text` completes; if `text`
/// leaves a statement unfinished, that one is dropped too when it completes.
fn drop_segment(splitter: &mut Splitter, text: &str) {
    splitter.drop_statement();
    let _ = splitter.push(text);
    if splitter.in_statement() {
        splitter.drop_statement();
    } else {
        splitter.cancel_drop();
    }
}

fn switch_of(args: &[&str]) -> Option<bool> {
    match args {
        [value] => parse_switch(value),
        _ => None,
    }
}

fn parse_switch(word: &str) -> Option<bool> {
    match word.to_ascii_lowercase().as_str() {
        "on" | "true" | "yes" | "1" => Some(true),
        "off" | "false" | "no" | "0" => Some(false),
        _ => None,
    }
}

/// `'s'` with quotes doubled.
fn sql_literal(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// Strips one pair of matching quotes around a file name.
fn unquote(s: &str) -> &str {
    for q in ['"', '\''] {
        if let Some(inner) = s.strip_prefix(q).and_then(|r| r.strip_suffix(q)) {
            return inner;
        }
    }
    s
}

/// The 1-based line and byte within it of offset `at` in `bytes` (where invalid
/// UTF-8 starts).
fn utf8_error_place(bytes: &[u8], at: usize) -> (usize, usize) {
    let before = &bytes[..at];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let line_start = before.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    (line, at - line_start + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::rc::Rc;

    /// A writer whose bytes the test can read afterwards.
    #[derive(Clone, Default)]
    struct Capture(Rc<RefCell<Vec<u8>>>);

    impl Write for Capture {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.borrow_mut().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl Capture {
        fn take(&self) -> String {
            String::from_utf8(std::mem::take(&mut *self.0.borrow_mut())).unwrap()
        }
    }

    fn shell() -> (Shell, Capture, Capture) {
        let out = Capture::default();
        let err = Capture::default();
        let shell = Shell::open(MEMORY, Box::new(out.clone()), Box::new(err.clone())).unwrap();
        (shell, out, err)
    }

    #[test]
    fn dot_commands() {
        let (mut sh, out, err) = shell();
        assert_eq!(sh.run_dot(".help"), (true, Flow::Continue));
        assert!(out.take().contains(".tables"));
        assert_eq!(sh.run_dot(".mode csv"), (true, Flow::Continue));
        assert_eq!(sh.mode, Mode::Csv);
        sh.run_dot(".mode");
        assert_eq!(out.take(), "current output mode: csv\n");
        assert!(!sh.run_dot(".mode html").0);
        assert!(err.take().starts_with("ERROR:  usage: unknown mode"));
        assert!(sh.run_dot(".timer on").0);
        assert!(sh.timer);
        assert!(!sh.run_dot(".bogus").0);
        assert!(err.take().contains("unknown command \".bogus\""));
        assert_eq!(sh.run_dot(".quit"), (true, Flow::Quit));
        assert_eq!(sh.run_dot(".exit"), (true, Flow::Quit));
    }

    #[test]
    fn syntax_errors_show_a_caret() {
        let (mut sh, _out, err) = shell();
        let (ok, _) = sh.run_script("CREATE TABLEX t (a int);");
        assert!(!ok);
        let e = err.take();
        assert!(
            e.starts_with("ERROR:  syntax error at or near \"TABLEX\""),
            "{e}"
        );
        assert!(
            e.ends_with("LINE 1: CREATE TABLEX t (a int);\n               ^\n"),
            "{e}"
        );
        assert!(sh.failed);
    }

    #[test]
    fn scripts_stop_at_the_first_error() {
        let (mut sh, _out, err) = shell();
        let (ok, _) = sh.run_script("SELEC 1;\nSELEC 2;\n");
        assert!(!ok);
        assert_eq!(err.take().matches("ERROR:").count(), 1);
    }

    #[test]
    fn invalid_utf8_in_a_file_or_stdin_is_an_error_naming_the_place() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("bad.sql");
        std::fs::write(&file, b"CREATE TABLE t (s TEXT);\nINSERT INTO t VALUES ('a\xffb');\n").unwrap();
        let (mut sh, _out, err) = shell();
        let (ok, _) = sh.run_file(file.to_str().unwrap());
        assert!(!ok);
        let e = err.take();
        assert!(e.contains("at byte 25 of line 2 of file"), "{e}");
        // Nothing of the file ran.
        assert!(!sh.run_script("SELECT * FROM t").0);

        let (mut sh, out, err) = shell();
        let mut input = io::Cursor::new(
            &b"CREATE TABLE t (s TEXT);\nINSERT INTO t\nVALUES ('a\xffb');\nSELECT count(*) FROM t;\n"[..],
        );
        assert!(!sh.run_stream(&mut input));
        let e = err.take();
        assert!(e.contains("at byte 11 of line 3 of standard input"), "{e}");
        assert_eq!(e.matches("ERROR:").count(), 1, "{e}");
        assert!(out.take().contains('0'), "the INSERT was skipped whole");
    }

    #[test]
    fn streams_go_on_after_errors() {
        let (mut sh, _out, err) = shell();
        let mut input = io::Cursor::new("SELEC 1;\n.mode json\nSELEC 2");
        assert!(!sh.run_stream(&mut input));
        assert_eq!(err.take().matches("ERROR:").count(), 2);
        assert_eq!(sh.mode, Mode::Json);
    }

    #[test]
    fn open_switches_databases() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("other.db");
        let (mut sh, _out, err) = shell();
        assert!(sh.is_memory());
        assert!(
            sh.run_dot(&format!(".open '{}'", file.display())).0,
            "{}",
            err.take()
        );
        assert_eq!(sh.path(), file.to_str().unwrap());
        assert!(file.exists());
        // Opening the same file again (closing it first) works too.
        assert!(
            sh.run_dot(&format!(".open {}", file.display())).0,
            "{}",
            err.take()
        );
        // A path that cannot be opened keeps the current database.
        assert!(!sh.run_dot(".open /nonexistent/dir/x.db").0);
        assert!(err.take().contains("could not open"));
        assert_eq!(sh.path(), file.to_str().unwrap());
        assert!(sh.run_dot(".open :memory:").0);
        assert!(sh.is_memory());
    }

    #[test]
    fn read_runs_a_file_and_quit_in_it_stops() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("s.sql");
        std::fs::write(&file, ".mode csv\n.quit\n.mode json\n").unwrap();
        let (mut sh, _out, _err) = shell();
        assert_eq!(
            sh.run_dot(&format!(".read {}", file.display())),
            (true, Flow::Quit)
        );
        assert_eq!(sh.mode, Mode::Csv);
    }

    #[test]
    fn timer_prints_run_time() {
        let (mut sh, out, _err) = shell();
        sh.run_dot(".timer on");
        sh.run_statement("SELEC 1");
        let text = out.take();
        assert!(
            text.starts_with("Run Time: ") && text.ends_with(" s\n"),
            "{text}"
        );
        sh.run_dot(".timer off");
        sh.run_statement("SELEC 1");
        assert_eq!(out.take(), "");
    }

    #[test]
    fn read_missing_file() {
        let (mut sh, _out, err) = shell();
        assert!(!sh.run_dot(".read /nonexistent/beedb.sql").0);
        assert!(err.take().contains("could not read file"));
    }

    #[test]
    fn quoting_helpers() {
        assert_eq!(sql_literal("it's"), "'it''s'");
        assert_eq!(unquote("\"a b.db\""), "a b.db");
        assert_eq!(unquote("plain.db"), "plain.db");
    }
}
