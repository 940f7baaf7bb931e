//! Progress shown while data is generated, loaded and queried: bars on a terminal,
//! one line per phase otherwise (logs and CI), always on stderr so that stdout holds
//! only the report.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

pub struct Progress {
    terminal: bool,
    quiet: bool,
}

impl Progress {
    pub fn new(quiet: bool) -> Progress {
        Progress { terminal: std::io::stderr().is_terminal(), quiet }
    }

    /// A phase of `total` steps (0 for an unknown count).
    pub fn phase(&self, message: impl Into<String>, total: u64) -> ProgressBar {
        let message = message.into();
        if self.quiet {
            return ProgressBar::hidden();
        }
        if !self.terminal {
            eprintln!("bench: {message}");
            return ProgressBar::hidden();
        }
        let bar = if total == 0 {
            let b = ProgressBar::new_spinner();
            b.enable_steady_tick(Duration::from_millis(120));
            b.set_style(ProgressStyle::with_template("{spinner} {msg} [{elapsed}]").expect("template"));
            b
        } else {
            let b = ProgressBar::new(total);
            b.set_style(
                ProgressStyle::with_template("{msg:40} {bar:30} {pos}/{len} [{elapsed}<{eta}]")
                    .expect("template"),
            );
            b
        };
        bar.set_message(message);
        bar
    }

    /// A note the reader should see now (also kept in the report by the caller).
    pub fn note(&self, text: &str) {
        if !self.quiet {
            eprintln!("bench: {text}");
        }
    }
}
