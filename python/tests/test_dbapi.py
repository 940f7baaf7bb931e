"""PEP 249 conformance of `beedb`: module globals, connections, cursors, transactions,
errors mapped from SQLSTATE."""

import threading

import pytest

import beedb


@pytest.fixture
def conn():
    c = beedb.connect(":memory:")
    yield c
    c.close()


def test_module_globals():
    assert beedb.apilevel == "2.0"
    assert beedb.threadsafety == 2
    assert beedb.paramstyle == "qmark"


def test_exception_hierarchy():
    assert issubclass(beedb.Warning, Exception)
    assert issubclass(beedb.Error, Exception)
    assert issubclass(beedb.InterfaceError, beedb.Error)
    assert issubclass(beedb.DatabaseError, beedb.Error)
    for cls in (beedb.DataError, beedb.OperationalError, beedb.IntegrityError,
                beedb.InternalError, beedb.ProgrammingError, beedb.NotSupportedError):
        assert issubclass(cls, beedb.DatabaseError)
        assert getattr(beedb.Connection, cls.__name__) is cls


def test_execute_fetch_and_description(conn):
    cur = conn.cursor()
    assert cur.description is None
    assert cur.rowcount == -1
    assert cur.arraysize == 1
    cur.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, price NUMERIC(8,2))")
    assert cur.description is None
    cur.execute("INSERT INTO t VALUES (1, 'one', 1.5), (2, 'two', NULL), (3, 'three', 3)")
    assert cur.rowcount == 3
    cur.execute("SELECT id, name, price FROM t ORDER BY id")
    names = [d[0] for d in cur.description]
    assert names == ["id", "name", "price"]
    assert all(len(d) == 7 for d in cur.description)
    assert cur.description[0][1] == beedb.NUMBER
    assert cur.description[1][1] == beedb.STRING
    assert cur.description[2][1] == beedb.NUMBER
    assert cur.description[2][1] != beedb.STRING
    assert cur.description[2][4:6] == (8, 2)
    assert cur.rowcount == -1
    assert cur.fetchone()[0] == 1
    assert [r[0] for r in cur.fetchmany(1)] == [2]
    assert [r[0] for r in cur.fetchall()] == [3]
    assert cur.fetchone() is None
    assert cur.fetchall() == []
    assert cur.fetchmany(5) == []


def test_fetchmany_arraysize_and_iteration(conn):
    conn.execute("CREATE TABLE n (x INTEGER)")
    conn.executemany("INSERT INTO n VALUES (?)", ((i,) for i in range(1000)))
    cur = conn.execute("SELECT x FROM n ORDER BY x")
    cur.arraysize = 7
    assert [r[0] for r in cur.fetchmany()] == list(range(7))
    assert [r[0] for r in cur.fetchmany(3)] == [7, 8, 9]
    assert [r[0] for r in cur] == list(range(10, 1000))
    # Mixed: fetchone into the buffer, then fetchmany and fetchall take the rest.
    cur = conn.execute("SELECT x FROM n ORDER BY x")
    assert cur.fetchone() == (0,)
    assert len(cur.fetchmany(300)) == 300
    assert len(cur.fetchall()) == 699


def test_executemany_rowcount(conn):
    cur = conn.cursor()
    cur.execute("CREATE TABLE t (a INTEGER, b TEXT)")
    cur.executemany("INSERT INTO t VALUES ($1, $2)", [(1, "a"), (2, "b"), (3, None)])
    assert cur.rowcount == 3
    cur.executemany("UPDATE t SET b = 'x' WHERE a = ?", [(1,), (2,), (9,)])
    assert cur.rowcount == 2
    with pytest.raises(beedb.ProgrammingError):
        cur.executemany("SELECT a FROM t WHERE a = ?", [(1,)])


def test_fetch_without_result(conn):
    cur = conn.cursor()
    with pytest.raises(beedb.ProgrammingError):
        cur.fetchone()
    cur.execute("CREATE TABLE t (a INTEGER)")
    with pytest.raises(beedb.ProgrammingError):
        cur.fetchall()


def test_paramstyles(conn):
    assert conn.execute("SELECT ? + ?", (1, 2)).fetchone() == (3,)
    assert conn.execute("SELECT $2 - $1", [1, 10]).fetchone() == (9,)
    with pytest.raises(beedb.ProgrammingError):
        conn.execute("SELECT ?", {"a": 1})
    with pytest.raises(beedb.ProgrammingError):
        conn.execute("SELECT ?", "a")
    with pytest.raises(beedb.OperationalError) as e:
        conn.execute("SELECT ? + ?", (1,))
    assert e.value.sqlstate == "08P01"


def test_errors_from_sqlstate(conn):
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER NOT NULL)")
    conn.execute("INSERT INTO t VALUES (1, 1)")
    conn.commit()
    with pytest.raises(beedb.IntegrityError) as e:
        conn.execute("INSERT INTO t VALUES (1, 2)")
    assert e.value.sqlstate == "23505"
    assert e.value.detail == "Key (id)=(1) already exists."
    assert e.value.hint is None
    conn.rollback()
    with pytest.raises(beedb.IntegrityError) as e:
        conn.execute("INSERT INTO t VALUES (2, NULL)")
    assert e.value.sqlstate == "23502"
    assert e.value.detail == "Failing row contains (2, null)."
    conn.rollback()
    with pytest.raises(beedb.DataError) as e:
        conn.execute("SELECT 1 / 0")
    assert e.value.sqlstate == "22012"
    with pytest.raises(beedb.ProgrammingError) as e:
        conn.execute("SELECT * FROM missing")
    assert e.value.sqlstate == "42P01"
    with pytest.raises(beedb.ProgrammingError) as e:
        conn.execute("SELEC 1")
    assert e.value.sqlstate == "42601"
    assert e.value.position == 0
    # Positions count characters, not bytes.
    with pytest.raises(beedb.ProgrammingError) as e:
        conn.execute("SELECT 'ééé' + nope")
    assert e.value.position == "SELECT 'ééé' + nope".index("nope")


def test_transactions_commit_rollback(tmp_path):
    path = str(tmp_path / "t.db")
    c1 = beedb.connect(path)
    c1.execute("CREATE TABLE t (a INTEGER)")
    c1.commit()
    c1.execute("INSERT INTO t VALUES (1)")
    assert c1.in_transaction
    c2 = beedb.connect(path)
    assert c2.execute("SELECT count(*) FROM t").fetchone() == (0,)
    c1.commit()
    assert not c1.in_transaction
    assert c2.execute("SELECT count(*) FROM t").fetchone() == (1,)
    c1.execute("INSERT INTO t VALUES (2)")
    c1.rollback()
    assert c2.execute("SELECT count(*) FROM t").fetchone() == (1,)
    # Closing with a pending transaction rolls it back.
    c1.execute("INSERT INTO t VALUES (3)")
    c1.close()
    assert c2.execute("SELECT count(*) FROM t").fetchone() == (1,)
    c2.close()
    # Durable across reopening.
    c3 = beedb.connect(path)
    assert c3.execute("SELECT a FROM t").fetchall() == [(1,)]
    c3.close()


def test_autocommit(tmp_path):
    path = str(tmp_path / "a.db")
    c1 = beedb.connect(path, autocommit=True)
    c1.execute("CREATE TABLE t (a INTEGER)")
    c1.execute("INSERT INTO t VALUES (1)")
    assert not c1.in_transaction
    c2 = beedb.connect(path)
    assert c2.execute("SELECT count(*) FROM t").fetchone() == (1,)
    c1.execute("BEGIN")
    c1.execute("INSERT INTO t VALUES (2)")
    assert c1.in_transaction
    c1.rollback()
    assert c2.execute("SELECT count(*) FROM t").fetchone() == (1,)


def test_context_managers(tmp_path):
    path = str(tmp_path / "cm.db")
    with beedb.connect(path) as conn:
        conn.execute("CREATE TABLE t (a INTEGER)")
        conn.execute("INSERT INTO t VALUES (1)")
    # Committed by __exit__; the connection stays open, as in sqlite3.
    assert not conn.in_transaction
    with pytest.raises(ZeroDivisionError):
        with conn:
            conn.execute("INSERT INTO t VALUES (2)")
            raise ZeroDivisionError
    assert conn.execute("SELECT a FROM t").fetchall() == [(1,)]
    with conn.cursor() as cur:
        cur.execute("SELECT 1")
    with pytest.raises(beedb.ProgrammingError):
        cur.execute("SELECT 1")
    conn.close()
    assert conn.closed
    with pytest.raises(beedb.ProgrammingError):
        conn.execute("SELECT 1")
    with pytest.raises(beedb.ProgrammingError):
        conn.cursor()


def test_aborted_transaction_needs_rollback(conn):
    conn.execute("CREATE TABLE t (a INTEGER PRIMARY KEY)")
    conn.execute("INSERT INTO t VALUES (1)")
    conn.commit()
    with pytest.raises(beedb.IntegrityError):
        conn.execute("INSERT INTO t VALUES (1)")
    with pytest.raises(beedb.InternalError) as e:
        conn.execute("INSERT INTO t VALUES (2)")
    assert e.value.sqlstate == "25P02"
    conn.rollback()
    conn.execute("INSERT INTO t VALUES (2)")
    conn.commit()
    assert conn.execute("SELECT a FROM t ORDER BY a").fetchall() == [(1,), (2,)]


def test_savepoints(conn):
    """Nested transactions as SQLAlchemy and Django run them: SAVEPOINT opens the
    transaction when none is open (as psycopg2 does), ROLLBACK TO recovers from an
    error inside the block, RELEASE keeps the changes."""
    conn.execute("CREATE TABLE sp (a INTEGER PRIMARY KEY)")
    conn.commit()
    cur = conn.cursor()
    cur.execute("SAVEPOINT outer_sp")
    assert conn.in_transaction
    cur.execute("INSERT INTO sp VALUES (1)")
    cur.execute("SAVEPOINT inner_sp")
    cur.execute("INSERT INTO sp VALUES (2)")
    with pytest.raises(beedb.IntegrityError):
        cur.execute("INSERT INTO sp VALUES (1)")
    with pytest.raises(beedb.InternalError) as e:
        cur.execute("SELECT 1")
    assert e.value.sqlstate == "25P02"
    cur.execute("ROLLBACK TO SAVEPOINT inner_sp")
    cur.execute("INSERT INTO sp VALUES (3)")
    cur.execute("RELEASE SAVEPOINT outer_sp")
    with pytest.raises(beedb.DatabaseError) as e:
        cur.execute("ROLLBACK TO SAVEPOINT inner_sp")
    assert e.value.sqlstate == "3B001"
    conn.rollback()
    cur.execute("SAVEPOINT s")
    cur.execute("INSERT INTO sp VALUES (1)")
    cur.execute("INSERT INTO sp VALUES (3)")
    cur.execute("RELEASE s")
    conn.commit()
    assert conn.execute("SELECT a FROM sp ORDER BY a").fetchall() == [(1,), (3,)]
    auto = beedb.connect(":memory:", autocommit=True)
    with pytest.raises(beedb.DatabaseError) as e:
        auto.execute("SAVEPOINT s")
    assert e.value.sqlstate == "25P01"
    auto.execute("BEGIN")
    auto.execute("SAVEPOINT s")
    auto.execute("ROLLBACK")
    auto.close()


def test_check_same_thread(conn):
    errors = []

    def use():
        try:
            conn.execute("SELECT 1")
        except beedb.ProgrammingError as e:
            errors.append(e)

    t = threading.Thread(target=use)
    t.start()
    t.join()
    assert len(errors) == 1


def test_shared_connection_across_threads(tmp_path):
    conn = beedb.connect(str(tmp_path / "th.db"), autocommit=True, check_same_thread=False)
    conn.execute("CREATE TABLE t (thread INTEGER, i INTEGER)")
    failures = []

    def work(k):
        try:
            for i in range(200):
                conn.execute("INSERT INTO t VALUES (?, ?)", (k, i))
                conn.execute("SELECT count(*) FROM t WHERE thread = ?", (k,)).fetchone()
        except Exception as e:  # pragma: no cover - reported below
            failures.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    assert conn.execute("SELECT thread, count(*) FROM t GROUP BY thread ORDER BY thread").fetchall() \
        == [(k, 200) for k in range(4)]
    conn.close()


def test_gil_released_while_engine_works():
    """Another Python thread runs while a statement runs in the engine: it records
    ticks inside the middle half of the statement's run, which it could not do if
    the statement held the GIL."""
    import time
    conn = beedb.connect(":memory:", autocommit=True, check_same_thread=False)
    conn.execute("CREATE TABLE big (x INTEGER)")
    conn.executemany("INSERT INTO big VALUES (?)", ((i,) for i in range(2000)))
    ticks = []
    stop = threading.Event()

    def count():
        while not stop.is_set():
            ticks.append(time.perf_counter())

    t = threading.Thread(target=count)
    t.start()
    try:
        start = time.perf_counter()
        # A cross join of 4 million pairs: one statement that holds the engine.
        row = conn.execute("SELECT count(*) FROM big a, big b WHERE a.x + b.x >= 0").fetchone()
        end = time.perf_counter()
    finally:
        stop.set()
        t.join()
    assert row == (4_000_000,)
    quarter = (end - start) / 4
    inside = [x for x in ticks if start + quarter < x < end - quarter]
    assert inside, "no Python thread ran while the engine worked"


def test_interrupt_from_another_thread():
    conn = beedb.connect(":memory:", autocommit=True, check_same_thread=False)
    conn.execute("CREATE TABLE big (x INTEGER)")
    conn.executemany("INSERT INTO big VALUES (?)", ((i,) for i in range(2000)))
    outcome = []

    def run():
        try:
            conn.execute("SELECT count(*) FROM big a, big b, big c WHERE a.x + b.x + c.x >= 0")
            outcome.append("finished")
        except beedb.OperationalError as e:
            outcome.append(e.sqlstate)

    t = threading.Thread(target=run)
    t.start()
    # Interrupt until the statement has stopped (one sent before it starts is reset
    # when it starts); 8e9 rows would take far longer than any run of this test.
    while t.is_alive():
        conn.interrupt()
        t.join(0.01)
    assert outcome == ["57014"]
    assert conn.execute("SELECT 1").fetchone() == (1,)
