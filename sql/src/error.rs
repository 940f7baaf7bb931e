//! The engine's error: what every public entry point returns. It carries PostgreSQL's
//! SQLSTATE and message wording, and, when the fault is in the SQL text, the byte
//! offset of the offending token so a client can point at it.

use std::fmt;

use crate::types;

/// Result alias used throughout the engine.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The broad class of an error; finer detail is in [`Error::sqlstate`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The text is not SQL the parser accepts.
    Syntax,
    /// Names or types do not resolve: unknown table or column, ambiguous column, wrong
    /// argument count, type mismatch.
    Semantic,
    /// A value-level failure at run time: overflow, division by zero, bad cast.
    Data,
    /// A constraint was violated: NOT NULL, UNIQUE, PRIMARY KEY.
    Constraint,
    /// Transaction state: commands in an aborted transaction, serialization failures,
    /// writer timeouts.
    Transaction,
    /// A configured limit was exceeded (memory limit).
    Limit,
    /// A feature BeeDB does not implement.
    NotSupported,
    /// The statement was cancelled (`InterruptHandle::interrupt`, `statement_timeout`).
    Canceled,
    /// The storage engine failed: I/O, corruption, a locked file.
    Storage,
    /// A file named by the statement (COPY) could not be read.
    Io,
    /// A bug in BeeDB: an invariant did not hold. Reported, never a crash.
    Internal,
}

/// An error with PostgreSQL's SQLSTATE and message, the byte offset in the SQL
/// text where it was found (when it has one), and PostgreSQL's optional DETAIL and
/// HINT lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub kind: ErrorKind,
    /// Five-character SQLSTATE code, as PostgreSQL reports it (`42P01`, `22012`).
    pub sqlstate: &'static str,
    pub message: String,
    /// Byte offset into the statement text of the token the error is about.
    pub position: Option<usize>,
    /// More about this occurrence, a sentence as PostgreSQL's DETAIL
    /// (`Key (a)=(1) already exists.`).
    pub detail: Option<String>,
    /// What to do about it, a sentence as PostgreSQL's HINT.
    pub hint: Option<String>,
}

impl Error {
    pub fn new(kind: ErrorKind, sqlstate: &'static str, message: impl Into<String>) -> Error {
        Error {
            kind,
            sqlstate,
            message: message.into(),
            position: None,
            detail: None,
            hint: None,
        }
    }

    /// The same error with a DETAIL sentence.
    pub fn with_detail(mut self, detail: impl Into<String>) -> Error {
        self.detail = Some(detail.into());
        self
    }

    /// The same error with a HINT sentence.
    pub fn with_hint(mut self, hint: impl Into<String>) -> Error {
        self.hint = Some(hint.into());
        self
    }

    /// Attaches a position unless the error already has one (the innermost wins).
    pub fn at(mut self, position: Option<usize>) -> Error {
        if self.position.is_none() {
            self.position = position;
        }
        self
    }

    /// The same error with another message.
    pub fn with_message(mut self, message: impl Into<String>) -> Error {
        self.message = message.into();
        self
    }

    pub fn syntax(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Syntax, "42601", message)
    }

    pub fn undefined_table(name: &str) -> Error {
        Error::new(
            ErrorKind::Semantic,
            "42P01",
            format!("relation \"{name}\" does not exist"),
        )
    }

    pub fn undefined_column(name: &str) -> Error {
        Error::new(
            ErrorKind::Semantic,
            "42703",
            format!("column \"{name}\" does not exist"),
        )
    }

    pub fn undefined_function(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Semantic, "42883", message)
    }

    pub fn ambiguous_column(name: &str) -> Error {
        Error::new(
            ErrorKind::Semantic,
            "42702",
            format!("column reference \"{name}\" is ambiguous"),
        )
    }

    pub fn datatype_mismatch(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Semantic, "42804", message)
    }

    pub fn semantic(sqlstate: &'static str, message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Semantic, sqlstate, message)
    }

    pub fn duplicate_object(sqlstate: &'static str, message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Semantic, sqlstate, message)
    }

    /// SQLSTATE 0A000. Every such message says so: a message naming only the
    /// feature (`"LIKE ANY"`) gets " is not supported" appended; one that already
    /// says it (or is PostgreSQL's own sentence, "cannot …", "… must …", "… is
    /// supported … only") is kept as it is.
    pub fn not_supported(message: impl Into<String>) -> Error {
        let message = message.into();
        let says_so = message.contains("not supported")
            || message.contains("not implemented")
            || message.contains(" supported ")
            || message.starts_with("cannot ")
            || message.contains(" must ");
        let message = if says_so { message } else { format!("{message} is not supported") };
        Error::new(ErrorKind::NotSupported, "0A000", message)
    }

    pub fn constraint(sqlstate: &'static str, message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Constraint, sqlstate, message)
    }

    pub fn data(sqlstate: &'static str, message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Data, sqlstate, message)
    }

    pub fn transaction(sqlstate: &'static str, message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Transaction, sqlstate, message)
    }

    pub fn limit(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Limit, "53200", message)
    }

    pub fn io(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Io, "58030", message)
    }

    pub fn internal(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Internal, "XX000", message)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl From<types::Error> for Error {
    fn from(e: types::Error) -> Error {
        use types::Error as T;
        let sqlstate = match &e {
            T::OutOfRange { .. } | T::IntInputOutOfRange { .. } => "22003",
            T::DivisionByZero => "22012",
            T::InvalidSyntax { .. } => "22P02",
            T::DateTimeFieldOutOfRange { .. } => "22008",
            T::IntervalFieldOutOfRange { .. } => "22015",
            T::FloatInputOutOfRange { .. } => "22003",
            T::DateTimeOutOfRange { .. } => "22008",
            T::ValueTooLong { .. } => "22001",
            T::NumericFieldOverflow { .. } => "22003",
            T::NumericOverflow => "22003",
            T::NotNumeric(_) => "22P02",
            T::FloatOverflow | T::FloatUnderflow => "22003",
            T::CannotCast { .. } => "42846",
            T::InvalidTypeModifier(_) => "22023",
            T::UnsupportedField { .. } => "0A000",
        };
        let kind = match &e {
            T::CannotCast { .. } => ErrorKind::Semantic,
            T::UnsupportedField { .. } => ErrorKind::NotSupported,
            _ => ErrorKind::Data,
        };
        Error::new(kind, sqlstate, e.to_string())
    }
}

impl From<beedb_storage::Error> for Error {
    fn from(e: beedb_storage::Error) -> Error {
        use beedb_storage::Error as S;
        match &e {
            S::WriterTimeout { .. } => Error::transaction("55P03", e.to_string()),
            _ => Error::new(ErrorKind::Storage, "58000", e.to_string()),
        }
    }
}
