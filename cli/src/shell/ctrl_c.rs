//! Ctrl-C cancels the running statement instead of killing the shell.
//!
//! While a statement runs the terminal is in its ordinary (cooked) mode, so Ctrl-C
//! makes the kernel send SIGINT to the shell, whose default action ends the
//! process (and loses the history not yet saved). [`CtrlC::register`] installs a
//! SIGINT handler that only stores `true` in the connection's interrupt flag
//! ([`InterruptHandle::flag`]): the only thing a signal handler may safely do is an
//! atomic store, and the executor already checks that flag before every batch
//! (`Interrupt::check`), so the statement fails with SQLSTATE 57014 ("canceling
//! statement due to user request") and the shell returns to its prompt.
//!
//! While rustyline reads a line the terminal is in raw mode: Ctrl-C arrives as a
//! key, not a signal, and rustyline reports it as `ReadlineError::Interrupted`
//! (see `repl::run`). A request stored between statements (Ctrl-C while a result
//! is printed) is forgotten when the next statement starts
//! (`InterruptHandle::start` clears the flag), so it never cancels a later one.

use beedb::InterruptHandle;

/// A registered SIGINT handler that interrupts one connection; unregistered when
/// dropped.
pub struct CtrlC {
    #[cfg(unix)]
    id: signal_hook::SigId,
}

impl CtrlC {
    /// Makes SIGINT interrupt the statement running on `handle`'s connection.
    #[cfg(unix)]
    pub fn register(handle: &InterruptHandle) -> std::io::Result<CtrlC> {
        let id = signal_hook::flag::register(signal_hook::consts::SIGINT, handle.flag().clone())?;
        Ok(CtrlC { id })
    }

    /// Elsewhere Ctrl-C keeps the platform's default (ends the shell).
    #[cfg(not(unix))]
    pub fn register(_handle: &InterruptHandle) -> std::io::Result<CtrlC> {
        Ok(CtrlC {})
    }
}

impl Drop for CtrlC {
    fn drop(&mut self) {
        // signal-hook keeps its process-wide handler installed after the last
        // action is removed (SIGINT then does nothing); the shell registers the
        // next connection's flag before dropping the previous registration.
        #[cfg(unix)]
        signal_hook::low_level::unregister(self.id);
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn sigint_sets_the_interrupt_flag_until_dropped() {
        let handle = InterruptHandle::default();
        let registration = CtrlC::register(&handle).unwrap();
        signal_hook::low_level::raise(signal_hook::consts::SIGINT).unwrap();
        assert!(handle.flag().load(Ordering::Acquire));

        handle.flag().store(false, Ordering::Release);
        // A second registration (as `.open` makes) keeps SIGINT caught while the
        // first is dropped, and only the live one's flag is set.
        let other = InterruptHandle::default();
        let next = CtrlC::register(&other).unwrap();
        drop(registration);
        signal_hook::low_level::raise(signal_hook::consts::SIGINT).unwrap();
        assert!(!handle.flag().load(Ordering::Acquire));
        assert!(other.flag().load(Ordering::Acquire));
        drop(next);
    }
}
