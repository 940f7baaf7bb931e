"""Cursors stream from the executor (issue 14): a query's rows are produced batch by
batch while the cursor fetches, so a big result is never held whole; closing or
dropping a cursor mid-result cancels its statement; a second cursor on the same
connection first runs the open one's statement to its end (its rows stay readable);
errors midway, Python functions and threads behave as for a materialized result."""

import gc
import os
import threading

import pytest

import beedb

BIG = "SELECT i, 'row ' || CAST(i AS text) FROM generate_series(1, 1000000) AS g(i)"


def peak_rss_kib():
    with open(f"/proc/{os.getpid()}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise RuntimeError("no VmHWM")


def rss_kib():
    with open(f"/proc/{os.getpid()}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs /proc")
def test_fetchmany_over_a_big_result_in_bounded_memory():
    """A million rows fetched 1,000 at a time: the resident set stays within a few
    MB of where it started (the whole result as Python tuples is ~150 MB, as engine
    values ~100 MB)."""
    conn = beedb.connect(":memory:")
    cur = conn.cursor()
    cur.execute(BIG)
    assert [d[0] for d in cur.description] == ["i", "?column?"]
    assert cur.rowcount == -1
    start = rss_kib()
    highest = start
    n = total = 0
    while True:
        rows = cur.fetchmany(1000)
        if not rows:
            break
        n += len(rows)
        total += sum(r[0] for r in rows)
        if n % 50_000 == 0:
            highest = max(highest, rss_kib())
    assert (n, total) == (1_000_000, 500_000_500_000)
    assert highest - start < 30_000, f"RSS grew by {(highest - start) // 1024} MB"


def test_iteration_and_fetchall_read_the_whole_stream():
    conn = beedb.connect(":memory:")
    assert sum(1 for _ in conn.execute("SELECT * FROM generate_series(1, 100000)")) == 100_000
    cur = conn.execute("SELECT * FROM generate_series(1, 100000)")
    first = cur.fetchmany(3)
    rest = cur.fetchall()
    assert first == [(1,), (2,), (3,)] and len(rest) == 99_997 and rest[-1] == (100_000,)
    assert cur.fetchone() is None


def test_closing_a_cursor_mid_result_frees_the_connection():
    conn = beedb.connect(":memory:")
    conn.execute("CREATE TABLE t (a INTEGER)")  # opens a transaction (autocommit=False)
    conn.execute("INSERT INTO t VALUES (1)")
    cur = conn.cursor()
    # Would run for minutes to its end.
    cur.execute("SELECT x FROM generate_series(1, 500000000) g(x)")
    assert cur.fetchmany(5) == [(1,), (2,), (3,), (4,), (5,)]
    cur.close()
    cur = conn.execute("SELECT a + x FROM t, generate_series(1, 50000000) g(x)")
    assert cur.fetchmany(2) == [(2,), (3,)]
    cur.close()
    assert conn.in_transaction
    conn.execute("INSERT INTO t VALUES (2)")
    conn.commit()
    assert conn.execute("SELECT count(*) FROM t").fetchone() == (2,)


def test_a_dropped_cursor_ends_its_statement():
    conn = beedb.connect(":memory:")
    for _ in range(20):
        cur = conn.execute("SELECT x FROM generate_series(1, 50000000) g(x)")
        cur.fetchone()
        del cur
        gc.collect()
    assert conn.execute("SELECT 1").fetchone() == (1,)


def test_two_cursors_on_one_connection():
    """Cursor b's statement first runs cursor a's to its end: a still returns every
    row, as of its own snapshot (without b's insert)."""
    conn = beedb.connect(":memory:")
    conn.execute("CREATE TABLE t (a INTEGER)")
    conn.execute("INSERT INTO t SELECT x FROM generate_series(1, 100000) g(x)")
    conn.commit()
    a = conn.cursor()
    a.execute("SELECT a FROM t")
    assert a.fetchone() == (1,)
    b = conn.cursor()
    b.execute("INSERT INTO t VALUES (0)")
    assert b.rowcount == 1
    assert b.execute("SELECT count(*) FROM t").fetchone() == (100_001,)
    rest = a.fetchall()
    assert len(rest) == 99_999 and (0,) not in rest
    conn.commit()


def test_a_cursor_per_outer_row():
    """pythonjoin's shape: an outer cursor iterated while an inner one runs a query
    per row."""
    conn = beedb.connect(":memory:", autocommit=True)
    conn.execute("CREATE TABLE p (k INTEGER PRIMARY KEY, name TEXT)")
    conn.execute("INSERT INTO p SELECT x, 'p' || CAST(x AS text) FROM generate_series(1, 20000) g(x)")
    inner = conn.cursor()
    names = 0
    for (k,) in conn.execute("SELECT k FROM p"):
        (name,) = inner.execute("SELECT name FROM p WHERE k = ?", [k]).fetchone()
        names += name == f"p{k}"
    assert names == 20_000


def test_an_error_midway_is_raised_by_the_fetch_that_reaches_it():
    conn = beedb.connect(":memory:")
    cur = conn.execute("SELECT 1000 / (50000 - x) FROM generate_series(1, 100000) g(x)")
    got = 0
    with pytest.raises(beedb.DataError) as e:
        while cur.fetchmany(1000):
            got += 1000
    assert e.value.sqlstate == "22012"
    assert 0 < got < 50_000
    assert conn.execute("SELECT 2").fetchone() == (2,)


def test_a_function_raising_midway_chains_its_exception():
    conn = beedb.connect(":memory:")

    def f(x):
        if x == 30_000:
            raise ValueError("thirty thousand")
        return x

    conn.create_function("f", 1, f)
    cur = conn.execute("SELECT f(x) FROM generate_series(1, 100000) g(x)")
    with pytest.raises(beedb.OperationalError) as e:
        for _ in cur:
            pass
    assert e.value.sqlstate == "38000"
    assert isinstance(e.value.__cause__, ValueError)


def test_a_function_using_its_connection_during_a_stream_is_refused():
    conn = beedb.connect(":memory:", check_same_thread=False)
    seen = []

    def f(x):
        if x == 20_000:
            try:
                conn.execute("SELECT 1")
            except beedb.ProgrammingError as e:
                seen.append(str(e))
        return x

    conn.create_function("f", 1, f)
    assert sum(1 for _ in conn.execute("SELECT f(x) FROM generate_series(1, 50000) g(x)")) == 50_000
    assert seen and "cannot use the connection" in seen[0]


def test_threads_stream_on_a_shared_connection():
    conn = beedb.connect(":memory:", autocommit=True, check_same_thread=False)
    results, errors = {}, []

    def run(k):
        try:
            cur = conn.cursor()
            cur.execute(f"SELECT x * {k} FROM generate_series(1, 200000) g(x)")
            total = 0
            for (v,) in cur:
                total += v
            results[k] = total
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(k,)) for k in (1, 2, 3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert results == {k: k * 200_000 * 200_001 // 2 for k in (1, 2, 3)}


def test_interrupt_stops_a_stream_being_fetched():
    conn = beedb.connect(":memory:", autocommit=True, check_same_thread=False)
    cur = conn.execute("SELECT x FROM generate_series(1, 50000000) g(x)")
    cur.fetchmany(10)
    conn.interrupt()
    with pytest.raises(beedb.OperationalError) as e:
        while cur.fetchmany(10_000):
            pass
    assert e.value.sqlstate == "57014"
    assert conn.execute("SELECT 1").fetchone() == (1,)


def test_batch_path_takes_the_stream():
    np = pytest.importorskip("numpy")
    conn = beedb.connect(":memory:")
    cols = conn.execute("SELECT x, x * 2 AS y FROM generate_series(1, 300000) g(x)").fetchnumpy()
    assert len(cols["x"]) == 300_000 and int(np.sum(cols["y"])) == 300_000 * 300_001
