//! `beedb [FILE] [-c SQL]... [-f FILE]... [--mode table|csv|json]`: the BeeDB shell.
//! `beedb bench WORKLOAD [options]`: the performance lab (crate `beedb-lab`).

mod shell;

use std::io::{self, IsTerminal};
use std::process::ExitCode;

use shell::args::{self, Action, Parsed};
use shell::{Flow, MEMORY, Shell, repl};

fn main() -> ExitCode {
    // `std::env::args` panics on an argument that is not UTF-8: check them first.
    let mut argv = Vec::new();
    for (i, a) in std::env::args_os().enumerate() {
        match a.into_string() {
            Ok(a) => argv.push(a),
            Err(a) => {
                eprintln!(
                    "beedb: argument {i} is not valid UTF-8: {}",
                    a.to_string_lossy()
                );
                return ExitCode::from(2);
            }
        }
    }
    if argv.get(1).map(String::as_str) == Some("bench") {
        return beedb_lab::bench_main(argv.into_iter().skip(2));
    }
    let args = match args::parse(argv.into_iter().skip(1)) {
        Ok(Parsed::Run(a)) => a,
        Ok(Parsed::Help) => {
            print!("{}", args::USAGE);
            return ExitCode::SUCCESS;
        }
        Ok(Parsed::Version) => {
            println!("beedb {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("beedb: {message}");
            eprintln!("Try \"beedb --help\" for more information.");
            return ExitCode::from(2);
        }
    };

    let path = args.database.as_deref().unwrap_or(MEMORY);
    let mut shell = match Shell::open_with(path, args.read_only, Box::new(io::stdout()), Box::new(io::stderr())) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("ERROR:  could not open \"{path}\": {}", e.message);
            return ExitCode::FAILURE;
        }
    };
    shell.mode = args.mode;

    // -c and -f: run in order, stop at the first failure.
    if !args.actions.is_empty() {
        for action in &args.actions {
            let (ok, flow) = match action {
                Action::Command(sql) => shell.run_script(sql),
                Action::File(file) => shell.run_file(file),
            };
            if !ok {
                return ExitCode::FAILURE;
            }
            if flow == Flow::Quit {
                break;
            }
        }
        return ExitCode::SUCCESS;
    }

    if io::stdin().is_terminal() {
        if let Err(e) = repl::run(&mut shell) {
            eprintln!("beedb: {e}");
            return ExitCode::FAILURE;
        }
        ExitCode::SUCCESS
    } else {
        let ok = shell.run_stream(&mut io::stdin().lock());
        if ok {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        }
    }
}
