"""BeeDB, an embedded SQL database: its DB-API 2.0 (PEP 249) module.

    import beedb
    with beedb.connect("shop.db") as conn:          # or ":memory:"
        conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT)")
        conn.executemany("INSERT INTO t VALUES (?, ?)", [(1, "one"), (2, "two")])
        for (name,) in conn.execute("SELECT name FROM t WHERE id = $1", [2]):
            print(name)

This file is the DB-API surface that is Python: connections, transactions, the
exception hierarchy and the module's constants. The cursor (`Cursor`, the per-statement
path), the engine, and every conversion between Python objects and SQL values are the
Rust extension `beedb._beedb` (see python/README.md).
"""

import datetime as _datetime
import decimal as _decimal
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
    the error in the statement, or None; `detail` and `hint` PostgreSQL's DETAIL and
    HINT sentences, or None (`Key (a)=(1) already exists.` for a unique violation)."""

    def __init__(self, message, sqlstate=None, position=None, detail=None, hint=None):
        super().__init__(message)
        self.sqlstate = sqlstate
        self.position = position
        self.detail = detail
        self.hint = hint


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
    "38": OperationalError,    # external routine exception (a Python function raised)
    "39": OperationalError,    # external routine invocation (it returned what SQL cannot hold)
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
    class_name, sqlstate, message, position, detail, hint = raw.args
    cls = _CLASSES.get(class_name) or _error_class(sqlstate)
    if position is not None and sql is not None:
        # The engine counts bytes; Python counts characters.
        position = len(sql.encode("utf-8")[:position].decode("utf-8", "replace"))
    return cls(message, sqlstate or None, position, detail, hint)


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
        if self._raw.is_closed():  # an atomic flag: no lock, no GIL release
            raise ProgrammingError("Cannot operate on a closed database.")

    def _run(self, sql):
        """Runs a transaction statement (COMMIT, ROLLBACK) of the connection's own."""
        try:
            self._raw.execute(sql, (), False)
        except _beedb.RawError as e:
            raise _translate(e, sql) from e.__cause__

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
            self._run("COMMIT")

    def rollback(self):
        self._check()
        if self._raw.in_transaction():
            self._run("ROLLBACK")

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

    # -- functions from Python
    def create_function(self, name, narg, func, *, deterministic=False, returns=None,
                        vectorized=False):
        """Makes `func` callable from this connection's SQL as `name` with `narg`
        arguments (-1: any number), as sqlite3's create_function; `func=None` removes
        it. NULL arrives as None. The result's SQL type is `returns` (an SQL type name
        such as "bigint" or "numeric(10,2)", or a Python type: int, float, str, bool,
        Decimal, date, datetime, timedelta), else func's return annotation, else the
        type of its first argument (text without arguments).

        vectorized=True: func is called once per batch of up to 1,024 rows with one
        list per argument (NumPy arrays instead if `vectorized="numpy"`) and returns
        a sequence of as many results. An exception in func fails the statement with
        OperationalError (SQLSTATE 38000) whose __cause__ is the exception.
        `deterministic` is accepted for sqlite3 compatibility (BeeDB never folds a
        Python function's calls)."""
        self._check()
        if vectorized == "numpy":
            func = _numpy_vectorized(func)
        sql_type = _sql_type(returns, func) if func is not None else None
        try:
            self._raw.create_function(name, narg, func, sql_type, bool(vectorized))
        except _beedb.RawError as e:
            raise _translate(e) from None

    def create_aggregate(self, name, n_arg, aggregate_class, *, returns=None):
        """Makes `aggregate_class` an SQL aggregate `name` with `n_arg` arguments, as
        sqlite3's create_aggregate: one instance per group, `step(*args)` per row,
        `finalize()` for the result. The result type is `returns`, else finalize's
        return annotation, else the first argument's type."""
        self._check()
        sql_type = None
        if aggregate_class is not None:
            sql_type = _sql_type(returns, getattr(aggregate_class, "finalize", None))
        try:
            self._raw.create_aggregate(name, n_arg, aggregate_class, sql_type)
        except _beedb.RawError as e:
            raise _translate(e) from None

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


_PY_TO_SQL = {
    int: "bigint", float: "double precision", str: "text", bool: "boolean",
    _decimal.Decimal: "numeric", _datetime.date: "date", _datetime.datetime: "timestamp",
    _datetime.timedelta: "interval",
}


def _sql_type(returns, func):
    """The SQL type name for a function's declared result (None: undeclared)."""
    if returns is None and func is not None:
        try:
            returns = func.__annotations__.get("return")
        except AttributeError:
            returns = None
        if returns is not None and returns not in _PY_TO_SQL and not isinstance(returns, str):
            returns = None  # an annotation BeeDB has no type for: undeclared
    if returns is None:
        return None
    if isinstance(returns, str):
        return returns
    try:
        return _PY_TO_SQL[returns]
    except (KeyError, TypeError):
        raise ProgrammingError(f"no SQL type for the Python type {returns!r}") from None


_NUMPY_DTYPES = {"bool": "bool", "int16": "<i2", "int32": "<i4", "int64": "<i8",
                 "float32": "<f4", "float64": "<f8", "date32": "datetime64[D]",
                 "timestamp_us": "datetime64[us]"}


def _numpy_column(np, col):
    kind, n = col["kind"], col["len"]
    if kind in _NUMPY_DTYPES:
        dtype = _NUMPY_DTYPES[kind]
        raw = {"date32": "<i4", "timestamp_us": "<i8"}.get(kind, dtype)
        arr = np.frombuffer(col["data"], dtype=raw)
        if raw != dtype:
            arr = arr.astype(dtype)
    elif kind == "decimal128":
        # For NumPy, Rust gives numerics as float64.
        arr = np.frombuffer(col["data"], dtype="<f8")
    elif kind == "utf8":
        arr = np.empty(n, dtype=object)
        arr[:] = col["strings"]
    elif kind == "interval":
        micros = [None if v is None else (v[0] * 30 + v[1]) * 86_400_000_000 + v[2]
                  for v in col["values"]]
        arr = np.array([0 if m is None else m for m in micros], dtype="<i8").astype("timedelta64[us]")
    else:
        raise InternalError(f"unknown column kind {kind}")
    if col["nulls"] is not None:
        mask = np.frombuffer(col["nulls"], dtype=np.bool_)
        if arr.dtype == object:
            arr[mask] = None
        return np.ma.masked_array(arr, mask=mask)
    return arr


def _arrow_column(pa, col):
    kind, n = col["kind"], col["len"]
    valid = None if col["valid"] is None else pa.py_buffer(col["valid"])
    if kind == "interval":
        values = [None if v is None else pa.MonthDayNano([v[0], v[1], v[2] * 1000])
                  for v in col["values"]]
        return pa.array(values, type=pa.month_day_nano_interval())
    if kind == "bool":
        # Bit-packed by Rust, as Arrow lays booleans out.
        return pa.Array.from_buffers(pa.bool_(), n, [valid, pa.py_buffer(col["data"])])
    if kind == "utf8":
        return pa.Array.from_buffers(pa.large_string(), n,
                                     [valid, pa.py_buffer(col["offsets"]), pa.py_buffer(col["data"])])
    types = {"int16": pa.int16(), "int32": pa.int32(), "int64": pa.int64(),
             "float32": pa.float32(), "float64": pa.float64(), "date32": pa.date32(),
             "timestamp_us": pa.timestamp("us")}
    if kind == "decimal128":
        typ = pa.decimal128(col["precision"], col["scale"])
    else:
        typ = types[kind]
    return pa.Array.from_buffers(typ, n, [valid, pa.py_buffer(col["data"])])


def _numpy_dict(cols):
    """`Cursor.fetchnumpy`'s result from the columns Rust took."""
    import numpy as np
    return {col["name"]: _numpy_column(np, col) for col in cols}


def _arrow_table(cols):
    """`Cursor.fetch_arrow_table`'s result from the columns Rust took."""
    import pyarrow as pa
    arrays = [_arrow_column(pa, c) for c in cols]
    return pa.Table.from_arrays(arrays, names=[c["name"] for c in cols])


def _numpy_vectorized(func):
    import numpy
    def call(*columns):
        return func(*(numpy.asarray(c) if None not in c else numpy.asarray(c, dtype=object)
                      for c in columns)).tolist()
    try:
        call.__annotations__ = dict(func.__annotations__)
    except AttributeError:
        pass
    return call


# ---- cursors -----------------------------------------------------------------------

# The DB-API cursor is Rust (python/src/cursor.rs): `execute`, `executemany`, the
# fetches, iteration, `description`, `rowcount`, `arraysize`, `close`, the context
# manager, `fetchnumpy` and `fetch_arrow_table` (which hand their columns to
# `_numpy_dict` / `_arrow_table` above). Its errors are made by `_translate`.
Cursor = _beedb.Cursor
