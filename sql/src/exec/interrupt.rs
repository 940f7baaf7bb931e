//! Cancelling a running statement: from another thread through an
//! [`InterruptHandle`], or when the session's `statement_timeout` passes.
//!
//! Every operator calls [`Interrupt::check`] before each batch it pushes
//! (`exec::Exec::node`), and DML and COPY every thousand rows they write, so a
//! statement stops within about one batch's work of the request (a sort or a hash
//! table build stops at the next batch of its input). A cancelled statement fails
//! with SQLSTATE 57014 like any other error: in autocommit its transaction is rolled
//! back, in a `BEGIN` block the block is aborted until `ROLLBACK` (as in PostgreSQL),
//! so a cancelled write leaves the database as before the statement.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::error::{Error, ErrorKind, Result};

/// Cancels the statement its connection is running. Cheap to clone, `Send` and
/// `Sync`: hand it to another thread or a signal handler's helper. A request made
/// while no statement runs is forgotten when the next statement starts (as
/// `sqlite3_interrupt` does), so it never cancels a statement issued later.
#[derive(Debug, Clone, Default)]
pub struct InterruptHandle {
    flag: Arc<AtomicBool>,
}

impl InterruptHandle {
    /// Asks the running statement to stop; it fails with SQLSTATE 57014 ("canceling
    /// statement due to user request").
    pub fn interrupt(&self) {
        self.flag.store(true, Ordering::Release);
    }

    /// The flag itself, for code that must set it from a context where only an
    /// atomic store is allowed (a signal handler: `signal_hook::flag::register`).
    pub fn flag(&self) -> &Arc<AtomicBool> {
        &self.flag
    }

    /// Starts a statement: forgets earlier requests and sets its deadline.
    pub(crate) fn start(&self, timeout: Option<Duration>) -> Interrupt {
        self.flag.store(false, Ordering::Release);
        Interrupt {
            flag: Some(self.flag.clone()),
            deadline: timeout.map(|t| Instant::now() + t),
        }
    }
}

/// What a running statement checks: its connection's request flag and its deadline.
#[derive(Debug, Clone, Default)]
pub struct Interrupt {
    flag: Option<Arc<AtomicBool>>,
    deadline: Option<Instant>,
}

impl Interrupt {
    /// A statement nobody can cancel (internal work, tests).
    pub const fn never() -> Interrupt {
        Interrupt {
            flag: None,
            deadline: None,
        }
    }

    /// `Err` (SQLSTATE 57014) once the statement was cancelled or its time is up.
    #[inline]
    pub fn check(&self) -> Result<()> {
        if let Some(flag) = &self.flag
            && flag.load(Ordering::Acquire)
        {
            return Err(canceled("canceling statement due to user request"));
        }
        if let Some(deadline) = self.deadline
            && Instant::now() >= deadline
        {
            return Err(canceled("canceling statement due to statement timeout"));
        }
        Ok(())
    }
}

fn canceled(message: &str) -> Error {
    Error::new(ErrorKind::Canceled, "57014", message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_cancels_the_running_statement_only() {
        let handle = InterruptHandle::default();
        handle.interrupt(); // before the statement: forgotten at its start
        let running = handle.start(None);
        assert!(running.check().is_ok());
        handle.interrupt();
        let e = running.check().unwrap_err();
        assert_eq!((e.kind, e.sqlstate), (ErrorKind::Canceled, "57014"));
        assert!(e.message.contains("user request"), "{e}");
        assert!(handle.start(None).check().is_ok());
    }

    #[test]
    fn the_deadline_cancels() {
        let handle = InterruptHandle::default();
        let running = handle.start(Some(Duration::ZERO));
        let e = running.check().unwrap_err();
        assert!(e.message.contains("statement timeout"), "{e}");
        assert!(handle.start(Some(Duration::from_secs(3600))).check().is_ok());
        assert!(Interrupt::never().check().is_ok());
    }
}
