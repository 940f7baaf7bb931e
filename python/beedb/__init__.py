"""BeeDB, an embedded SQL database: its DB-API 2.0 (PEP 249) module.

    import beedb
    with beedb.connect("shop.db") as conn:          # or ":memory:"
        conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT)")
        conn.executemany("INSERT INTO t VALUES (?, ?)", [(1, "one"), (2, "two")])
        for (name,) in conn.execute("SELECT name FROM t WHERE id = $1", [2]):
            print(name)

This file is the DB-API surface: connections, cursors, transactions and the exception
hierarchy. The engine, and every conversion between Python objects and SQL values, is
the Rust extension `beedb._beedb` (see python/README.md).
"""

import datetime as _datetime
import threading as _threading
import time as _time

from . import _beedb

__all__ = [
    "connect", "Connection", "Cursor",
    "Warning", "Error", "InterfaceError", "DatabaseError", "DataError",
    "OperationalError", "IntegrityError", "InternalError", "ProgrammingError",
    "NotSupportedError",
    "apilevel", "threadsafety", "paramstyle",
    "Date", "Time", "Timestamp", "DateFromTicks", "TimeFromTicks", "TimestampFromTicks",
    "Binary", "STRING", "BINARY", "NUMBER", "DATETIME", "ROWID",
]

apilevel = "2.0"
# Threads may share the module and connections (a connection's statements take turns
# under its lock), but not cursors.
threadsafety = 2
# `?` placeholders; `$1`, `$2`, … (numbered, PostgreSQL's form) work as well.
paramstyle = "qmark"


# ---- exceptions (PEP 249) ----------------------------------------------------------

class Warning(Exception):  # noqa: A001 - the name PEP 249 prescribes
    pass


class Error(Exception):
    """Base of every error the module raises. `sqlstate` is the five-character
    SQLSTATE (PostgreSQL's codes) or None; `position` the 0-based character offset of
    the error in the statement, or None."""

    def __init__(self, message, sqlstate=None, position=None):
        super().__init__(message)
        self.sqlstate = sqlstate
        self.position = position


class InterfaceError(Error):
    pass


class DatabaseError(Error):
    pass


class DataError(DatabaseError):
    pass


class OperationalError(DatabaseError):
    pass


class IntegrityError(DatabaseError):
    pass


class InternalError(DatabaseError):
    pass


class ProgrammingError(DatabaseError):
    pass


class NotSupportedError(DatabaseError):
    pass


_CLASSES = {c.__name__: c for c in (
    InterfaceError, DatabaseError, DataError, OperationalError, IntegrityError,
    InternalError, ProgrammingError, NotSupportedError)}

# SQLSTATE class (first two characters) → exception class, as psycopg maps them.
_BY_SQLSTATE_CLASS = {
    "0A": NotSupportedError,   # feature not supported
    "08": OperationalError,    # connection exception
    "21": ProgrammingError,    # cardinality violation
    "22": DataError,           # data exception
    "23": IntegrityError,      # integrity constraint violation
    "25": InternalError,       # invalid transaction state
    "26": ProgrammingError,    # invalid SQL statement name
    "28": OperationalError,    # invalid authorization
    "2B": InternalError,       # dependent privilege descriptors still exist
    "2D": InternalError,       # invalid transaction termination
    "34": ProgrammingError,    # invalid cursor name
    "3D": ProgrammingError,    # invalid catalog name
    "3F": ProgrammingError,    # invalid schema name
    "40": OperationalError,    # transaction rollback (serialization failure)
    "42": ProgrammingError,    # syntax error or access rule violation
    "53": OperationalError,    # insufficient resources
    "54": OperationalError,    # program limit exceeded
    "55": OperationalError,    # object not in prerequisite state
    "57": OperationalError,    # operator intervention (canceled statement)
    "58": OperationalError,    # system error (I/O)
    "XX": InternalError,       # internal error
}


def _error_class(sqlstate):
    return _BY_SQLSTATE_CLASS.get((sqlstate or "")[:2], DatabaseError)


def _translate(raw, sql=None):
    """The DB-API exception for a `_beedb.RawError`."""
    class_name, sqlstate, message, position = raw.args
    cls = _CLASSES.get(class_name) or _error_class(sqlstate)
    if position is not None and sql is not None:
        # The engine counts bytes; Python counts characters.
        position = len(sql.encode("utf-8")[:position].decode("utf-8", "replace"))
    return cls(message, sqlstate or None, position)


# ---- type objects and constructors (PEP 249) ---------------------------------------

class _TypeObject:
    """Compares equal to the `type_code` of every column type in its group."""

    def __init__(self, *names):
        self.names = frozenset(names)

    def __eq__(self, other):
        if isinstance(other, str):
            return other.split("(")[0] in self.names
        return NotImplemented

    def __ne__(self, other):
        r = self.__eq__(other)
        return r if r is NotImplemented else not r

    def __hash__(self):
        return hash(self.names)


STRING = _TypeObject("text", "character varying", "character")
BINARY = _TypeObject()  # BeeDB has no binary type yet
NUMBER = _TypeObject("smallint", "integer", "bigint", "real", "double precision", "numeric")
DATETIME = _TypeObject("date", "timestamp without time zone", "interval")
ROWID = _TypeObject()

Date = _datetime.date
Time = _datetime.time
Timestamp = _datetime.datetime


def DateFromTicks(ticks):
    return Date(*_time.localtime(ticks)[:3])


def TimeFromTicks(ticks):
    return Time(*_time.localtime(ticks)[3:6])


def TimestampFromTicks(ticks):
    return Timestamp(*_time.localtime(ticks)[:6])


def Binary(data):
    return bytes(data)


# ---- connections -------------------------------------------------------------------

# Statements that open a transaction implicitly when the connection is not in
# autocommit mode (data and schema changes, as sqlite3 does for DML); a query alone
# does not, so a reading connection holds no snapshot between statements.
_IMPLICIT_BEGIN = frozenset(
    ("insert", "update", "delete", "merge", "copy", "create", "drop", "alter", "truncate"))


def _first_word(sql):
    i, n = 0, len(sql)
    while i < n:
        if sql[i].isspace():
            i += 1
        elif sql.startswith("--", i):
            j = sql.find("\n", i)
            i = n if j < 0 else j + 1
        elif sql.startswith("/*", i):
            j = sql.find("*/", i + 2)
            i = n if j < 0 else j + 2
        else:
            break
    j = i
    while j < n and (sql[j].isalpha() or sql[j] == "_"):
        j += 1
    return sql[i:j].lower()


def connect(database, *, autocommit=False, check_same_thread=True):
    """Opens (creating if needed) the database file `database`; ":memory:" is a
    private in-memory database.

    autocommit=False (PEP 249): a data or schema change opens a transaction that
    lasts until commit() or rollback(); closing the connection rolls it back.
    autocommit=True: every statement commits on its own unless the SQL says BEGIN.
    check_same_thread=True (as in sqlite3): only the creating thread may use the
    connection; False lets threads share it (their statements take turns)."""
    return Connection(database, autocommit=autocommit, check_same_thread=check_same_thread)


class Connection:
    Warning = Warning
    Error = Error
    InterfaceError = InterfaceError
    DatabaseError = DatabaseError
    DataError = DataError
    OperationalError = OperationalError
    IntegrityError = IntegrityError
    InternalError = InternalError
    ProgrammingError = ProgrammingError
    NotSupportedError = NotSupportedError

    def __init__(self, database, *, autocommit=False, check_same_thread=True):
        if not isinstance(database, str):
            database = str(database)  # os.PathLike
        try:
            self._raw = _beedb.RawConnection(database)
        except _beedb.RawError as e:
            raise _translate(e) from None
        self.autocommit = bool(autocommit)
        self._thread = _threading.get_ident() if check_same_thread else None

    def _check(self):
        if self._thread is not None and self._thread != _threading.get_ident():
            raise ProgrammingError(
                "SQLite-style thread check: this connection was created in another "
                "thread; connect(..., check_same_thread=False) to share it")
        if self._raw.is_closed():
            raise ProgrammingError("Cannot operate on a closed database.")

    def _run(self, sql, params):
        if not isinstance(sql, str):
            raise ProgrammingError("the SQL must be a str")
        self._check()
        try:
            if not self.autocommit and _first_word(sql) in _IMPLICIT_BEGIN \
                    and not self._raw.in_transaction():
                self._raw.execute("BEGIN", ())
            return self._raw.execute(sql, params)
        except _beedb.RawError as e:
            raise _translate(e, sql) from None
        except UnicodeEncodeError as e:
            raise DataError(f"invalid byte sequence for encoding \"UTF8\": {e}", "22021") from None

    def _run_many(self, sql, seq):
        if not isinstance(sql, str):
            raise ProgrammingError("the SQL must be a str")
        self._check()
        try:
            if not self.autocommit and _first_word(sql) in _IMPLICIT_BEGIN \
                    and not self._raw.in_transaction():
                self._raw.execute("BEGIN", ())
            return self._raw.executemany(sql, seq)
        except _beedb.RawError as e:
            raise _translate(e, sql) from None

    def interrupt(self):
        """Stops the statement this connection is running, from any thread (as
        sqlite3's interrupt): it raises OperationalError (SQLSTATE 57014)."""
        self._raw.interrupt()

    @property
    def in_transaction(self):
        self._check()
        return self._raw.in_transaction()

    def cursor(self):
        self._check()
        return Cursor(self)

    def commit(self):
        self._check()
        if self._raw.in_transaction():
            self._run("COMMIT", ())

    def rollback(self):
        self._check()
        if self._raw.in_transaction():
            self._run("ROLLBACK", ())

    def close(self):
        if self._thread is not None and self._thread != _threading.get_ident():
            raise ProgrammingError("this connection was created in another thread")
        try:
            self._raw.close()
        except _beedb.RawError as e:
            raise _translate(e) from None

    @property
    def closed(self):
        return self._raw.is_closed()

    # sqlite3's shortcuts: a new cursor per call.
    def execute(self, sql, parameters=()):
        return self.cursor().execute(sql, parameters)

    def executemany(self, sql, seq_of_parameters):
        return self.cursor().executemany(sql, seq_of_parameters)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        # As sqlite3: commit on success, roll back on an exception; the connection
        # stays open.
        if exc_type is None:
            self.commit()
        else:
            self.rollback()
        return False


# ---- cursors -----------------------------------------------------------------------

# Rows converted to Python per call into the engine when fetching one at a time.
_BATCH = 256


class Cursor:
    def __init__(self, connection):
        self.connection = connection
        self.arraysize = 1
        self._result = None
        self._buffer = []
        self._pos = 0
        self._description = None
        self._rowcount = -1
        self._closed = False

    # -- attributes
    @property
    def description(self):
        return self._description

    @property
    def rowcount(self):
        return self._rowcount

    @property
    def lastrowid(self):
        return None

    # -- execution
    def _reset(self):
        if self._closed:
            raise ProgrammingError("Cannot operate on a closed cursor.")
        if self._result is not None:
            self._result.discard()
        self._result = None
        self._buffer = []
        self._pos = 0
        self._description = None
        self._rowcount = -1

    def execute(self, operation, parameters=()):
        self._reset()
        result = self.connection._run(operation, parameters)
        if result.has_rows:
            self._result = result
            self._description = tuple(
                (name, type_name, None, None, precision, scale, None)
                for name, type_name, precision, scale in result.columns())
        # A write counts the rows it changed, also when RETURNING makes it a result set.
        if _first_word(operation) in ("insert", "update", "delete", "merge", "copy"):
            self._rowcount = result.rows_affected
        return self

    def executemany(self, operation, seq_of_parameters):
        self._reset()
        self._rowcount = self.connection._run_many(operation, seq_of_parameters)
        return self

    def setinputsizes(self, sizes):
        pass

    def setoutputsize(self, size, column=None):
        pass

    # -- fetching
    def _require_result(self):
        if self._closed:
            raise ProgrammingError("Cannot operate on a closed cursor.")
        if self._result is None and self._description is None:
            raise ProgrammingError("no results to fetch: the last statement returned no rows")

    def _more(self, n):
        try:
            return self._result.fetch(n)
        except _beedb.RawError as e:
            raise _translate(e) from None

    def fetchone(self):
        self._require_result()
        if self._pos >= len(self._buffer):
            if self._result is None:
                return None
            self._buffer = self._more(_BATCH)
            self._pos = 0
            if not self._buffer:
                return None
        row = self._buffer[self._pos]
        self._pos += 1
        return row

    def fetchmany(self, size=None):
        self._require_result()
        if size is None:
            size = self.arraysize
        rows = self._buffer[self._pos:self._pos + size]
        self._pos += len(rows)
        if len(rows) < size and self._result is not None:
            rows.extend(self._more(size - len(rows)))
        return rows

    def fetchall(self):
        self._require_result()
        rows = self._buffer[self._pos:]
        self._buffer, self._pos = [], 0
        if self._result is not None:
            while True:
                more = self._more(65536)
                if not more:
                    break
                rows.extend(more)
        return rows

    def __iter__(self):
        return self

    def __next__(self):
        row = self.fetchone()
        if row is None:
            raise StopIteration
        return row

    def close(self):
        if self._result is not None:
            self._result.discard()
        self._result = None
        self._buffer = []
        self._closed = True

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close()
        return False
