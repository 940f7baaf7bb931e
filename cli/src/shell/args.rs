//! Command-line arguments: `beedb [FILE] [-c SQL]... [-f FILE]... [--mode MODE]`.

use super::format::Mode;

pub const USAGE: &str = "\
Usage: beedb [OPTIONS] [FILE]
       beedb bench WORKLOAD [OPTIONS]   (the performance lab: beedb bench --help)

Opens the database FILE (created if missing), or an in-memory database when no
FILE is given. With -c or -f, runs those statements in order and exits (status 1
at the first failure); otherwise reads statements from the terminal, or from
standard input when it is not a terminal. (A database file named \"bench\" is
opened as ./bench.)

Options:
  -c, --command SQL    Run SQL (one or more statements, or a dot command)
  -f, --file FILE      Run the statements in FILE
  -m, --mode MODE      Output mode: table (default), csv, json, line or markdown
  -r, --read-only      Open FILE without writing to it (it must exist); works
                       while its disk is full
  -h, --help           Show this message
  -V, --version        Show the version
";

/// One `-c` or `-f`, in command-line order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Command(String),
    File(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Args {
    pub database: Option<String>,
    pub actions: Vec<Action>,
    pub mode: Mode,
    /// `--read-only`: open the database without writing to it.
    pub read_only: bool,
}

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    Run(Args),
    Help,
    Version,
}

/// Parses the arguments after the program name.
pub fn parse<I: IntoIterator<Item = String>>(args: I) -> Result<Parsed, String> {
    let mut out = Args {
        database: None,
        actions: Vec::new(),
        mode: Mode::Table,
        read_only: false,
    };
    let mut it = args.into_iter();
    let mut options_done = false;
    while let Some(arg) = it.next() {
        if options_done || arg == "-" || !arg.starts_with('-') {
            if out.database.is_some() {
                return Err(format!(
                    "unexpected argument \"{arg}\": only one database file may be given"
                ));
            }
            out.database = Some(arg);
            continue;
        }
        if arg == "--" {
            options_done = true;
            continue;
        }
        // `--name=value` or `--name value`; `-cSQL` or `-c SQL`.
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if arg.starts_with("--") => (n.to_string(), Some(v.to_string())),
            _ if !arg.starts_with("--") && arg.len() > 2 => {
                (arg[..2].to_string(), Some(arg[2..].to_string()))
            }
            _ => (arg.clone(), None),
        };
        let mut value = |what: &str| -> Result<String, String> {
            match inline.clone().or_else(|| it.next()) {
                Some(v) => Ok(v),
                None => Err(format!("option {name} needs {what}")),
            }
        };
        match name.as_str() {
            "-c" | "--command" => {
                let v = value("an SQL command")?;
                out.actions.push(Action::Command(v));
            }
            "-f" | "--file" => {
                let v = value("a file name")?;
                out.actions.push(Action::File(v));
            }
            "-m" | "--mode" => {
                let v = value("a mode (table, csv, json, line or markdown)")?;
                out.mode = Mode::parse(&v)
                    .ok_or_else(|| format!("unknown mode \"{v}\": use {}", super::format::MODE_NAMES))?;
            }
            "-r" | "--read-only" if inline.is_none() => out.read_only = true,
            "-h" | "--help" if inline.is_none() => return Ok(Parsed::Help),
            "-V" | "--version" if inline.is_none() => return Ok(Parsed::Version),
            _ => return Err(format!("unknown option \"{arg}\"")),
        }
    }
    Ok(Parsed::Run(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &[&str]) -> Result<Parsed, String> {
        parse(args.iter().map(|s| s.to_string()))
    }

    fn run(args: &[&str]) -> Args {
        match p(args) {
            Ok(Parsed::Run(a)) => a,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn read_only() {
        assert!(run(&["--read-only", "a.db"]).read_only);
        assert!(run(&["a.db", "-r"]).read_only);
        assert!(!run(&["a.db"]).read_only);
        assert!(p(&["--read-only=yes"]).is_err());
    }

    #[test]
    fn no_arguments() {
        let a = run(&[]);
        assert_eq!(a.database, None);
        assert!(a.actions.is_empty());
        assert_eq!(a.mode, Mode::Table);
    }

    #[test]
    fn file_commands_and_mode_in_order() {
        let a = run(&[
            "my.db",
            "-c",
            "SELECT 1; SELECT 2",
            "--mode",
            "csv",
            "-f",
            "x.sql",
            "-c",
            ".tables",
        ]);
        assert_eq!(a.database.as_deref(), Some("my.db"));
        assert_eq!(a.mode, Mode::Csv);
        assert_eq!(
            a.actions,
            [
                Action::Command("SELECT 1; SELECT 2".into()),
                Action::File("x.sql".into()),
                Action::Command(".tables".into()),
            ]
        );
    }

    #[test]
    fn inline_values() {
        let a = run(&[
            "--mode=json",
            "-cSELECT 1",
            "--command=SELECT 2",
            "--",
            "-odd-name.db",
        ]);
        assert_eq!(a.mode, Mode::Json);
        assert_eq!(
            a.actions,
            [
                Action::Command("SELECT 1".into()),
                Action::Command("SELECT 2".into())
            ]
        );
        assert_eq!(a.database.as_deref(), Some("-odd-name.db"));
    }

    #[test]
    fn errors() {
        assert!(p(&["-c"]).unwrap_err().contains("needs"));
        assert!(p(&["--mode", "xml"]).unwrap_err().contains("unknown mode"));
        assert!(p(&["--bogus"]).unwrap_err().contains("unknown option"));
        assert!(p(&["a.db", "b.db"]).unwrap_err().contains("only one"));
        assert_eq!(p(&["--help"]), Ok(Parsed::Help));
        assert_eq!(p(&["-V"]), Ok(Parsed::Version));
    }
}
