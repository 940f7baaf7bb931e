//! The interactive loop: line editing and history (rustyline), a continuation prompt
//! until a statement is complete, Ctrl-C to clear the input, Ctrl-D to leave.

use std::path::PathBuf;

use rustyline::DefaultEditor;
use rustyline::error::ReadlineError;

use super::splitter::Splitter;
use super::{Flow, Shell};

pub const PROMPT: &str = "beedb> ";
pub const CONTINUATION: &str = "   ...> ";

/// `~/.beedb_history`, when there is a home directory.
fn history_path() -> Option<PathBuf> {
    let home = std::env::var_os("HOME").or_else(|| std::env::var_os("USERPROFILE"))?;
    Some(PathBuf::from(home).join(".beedb_history"))
}

/// The start-up banner.
pub fn banner(shell: &Shell) -> String {
    let mut text = format!("BeeDB {}\n", env!("CARGO_PKG_VERSION"));
    if shell.is_memory() {
        text.push_str("Connected to a transient in-memory database.\n");
        text.push_str("Use \".open FILE\" to reopen on a persistent database.\n");
    } else {
        text.push_str(&format!("Connected to \"{}\".\n", shell.path()));
    }
    text.push_str("Enter .help for usage hints.\n");
    text
}

/// Runs the interactive loop until `.quit` or Ctrl-D.
pub fn run(shell: &mut Shell) -> Result<(), ReadlineError> {
    let mut editor = DefaultEditor::new()?;
    let history = history_path();
    if let Some(path) = &history {
        let _ = editor.load_history(path);
    }
    print!("{}", banner(shell));
    let mut splitter = Splitter::new();
    loop {
        let prompt = if splitter.is_idle() {
            PROMPT
        } else {
            CONTINUATION
        };
        match editor.readline(prompt) {
            Ok(line) => {
                if !line.trim().is_empty() {
                    let _ = editor.add_history_entry(line.as_str());
                }
                let (_, flow) = shell.feed_line(&mut splitter, &line, false);
                if flow == Flow::Quit {
                    break;
                }
            }
            // Ctrl-C: forget the statement being typed.
            Err(ReadlineError::Interrupted) => splitter.clear(),
            Err(ReadlineError::Eof) => break,
            Err(e) => {
                if let Some(path) = &history {
                    let _ = editor.save_history(path);
                }
                return Err(e);
            }
        }
    }
    if let Some(path) = &history {
        let _ = editor.save_history(path);
    }
    Ok(())
}
