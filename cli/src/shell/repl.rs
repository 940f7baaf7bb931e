//! The interactive loop: line editing and history (rustyline), a continuation prompt
//! until a statement is complete, prompts marked `*` inside a transaction block and
//! `!` inside a failed one (as psql's), Ctrl-D to leave. Ctrl-C cancels a running
//! statement (`ctrl_c.rs`); at the prompt it clears the input, and a second Ctrl-C
//! in a row at an empty prompt leaves the shell.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rustyline::error::ReadlineError;
use rustyline::{
    Cmd, ConditionalEventHandler, DefaultEditor, Event, EventContext, EventHandler, KeyEvent,
    RepeatCount,
};

use beedb::TransactionStatus;

use super::splitter::Splitter;
use super::{Flow, Shell};

pub const PROMPT: &str = "beedb> ";
pub const CONTINUATION: &str = "   ...> ";
/// The prompts inside a transaction block, marked `*` as psql marks them.
pub const PROMPT_IN_BLOCK: &str = "beedb*> ";
pub const CONTINUATION_IN_BLOCK: &str = "  ...*> ";
/// The prompts inside a failed block (only ROLLBACK works), marked `!` as psql
/// marks them.
pub const PROMPT_FAILED: &str = "beedb!> ";
pub const CONTINUATION_FAILED: &str = "  ...!> ";

/// The prompt for the transaction state and whether a statement is being typed.
pub fn prompt(status: TransactionStatus, continuing: bool) -> &'static str {
    match (status, continuing) {
        (TransactionStatus::Idle, false) => PROMPT,
        (TransactionStatus::Idle, true) => CONTINUATION,
        (TransactionStatus::InBlock, false) => PROMPT_IN_BLOCK,
        (TransactionStatus::InBlock, true) => CONTINUATION_IN_BLOCK,
        (TransactionStatus::Failed, false) => PROMPT_FAILED,
        (TransactionStatus::Failed, true) => CONTINUATION_FAILED,
    }
}

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

/// Printed after a Ctrl-C at an empty prompt.
pub const EXIT_HINT: &str = "(press Ctrl-C again to exit, or Ctrl-D, or enter .quit)";

/// Bound to Ctrl-C at the prompt: notes whether the line being edited was empty,
/// then lets rustyline do its default (`ReadlineError::Interrupted`), which does not
/// say what was on the line.
struct NoteEmptyLine(Arc<AtomicBool>);

impl ConditionalEventHandler for NoteEmptyLine {
    fn handle(&self, _: &Event, _: RepeatCount, _: bool, ctx: &EventContext) -> Option<Cmd> {
        self.0.store(ctx.line().is_empty(), Ordering::Relaxed);
        None
    }
}

/// Runs the interactive loop until `.quit`, Ctrl-D, or two Ctrl-C in a row at an
/// empty prompt.
pub fn run(shell: &mut Shell) -> Result<(), ReadlineError> {
    let mut editor = DefaultEditor::new()?;
    let line_was_empty = Arc::new(AtomicBool::new(false));
    editor.bind_sequence(
        KeyEvent::ctrl('c'),
        EventHandler::Conditional(Box::new(NoteEmptyLine(line_was_empty.clone()))),
    );
    if let Err(e) = shell.cancel_on_ctrl_c() {
        eprintln!("beedb: Ctrl-C will end the shell, not cancel statements: {e}");
    }
    let history = history_path();
    if let Some(path) = &history {
        let _ = editor.load_history(path);
    }
    print!("{}", banner(shell));
    let mut splitter = Splitter::new();
    // Whether the last thing read was a Ctrl-C at an empty prompt.
    let mut interrupted_at_empty_prompt = false;
    loop {
        let prompt = prompt(shell.transaction_status(), !splitter.is_idle());
        match editor.readline(prompt) {
            Ok(line) => {
                interrupted_at_empty_prompt = false;
                if !line.trim().is_empty() {
                    let _ = editor.add_history_entry(line.as_str());
                }
                let (_, flow) = shell.feed_line(&mut splitter, &line, false);
                if flow == Flow::Quit {
                    break;
                }
            }
            // Ctrl-C: forget the statement being typed; at an empty prompt, a
            // second one in a row leaves (psql and node do the same).
            Err(ReadlineError::Interrupted) => {
                let empty = splitter.is_idle() && line_was_empty.load(Ordering::Relaxed);
                splitter.clear();
                if empty && interrupted_at_empty_prompt {
                    break;
                }
                if empty {
                    println!("{EXIT_HINT}");
                }
                interrupted_at_empty_prompt = empty;
            }
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
