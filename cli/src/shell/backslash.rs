//! psql's backslash commands: `\q`, `\x`, `\timing`, `\dt`, `\d [NAME]`, `\?`.
//!
//! A backslash command is one line, and never part of a statement: it runs at once
//! even while a statement is being typed (which is kept, as psql keeps its query
//! buffer), so it cannot leave the user at a continuation prompt.

use super::{Flow, Shell};

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
