"""The batch path: fetchnumpy() and fetch_arrow_table() give the same values as
fetchall(), NULLs included, for every type; empty results; mixed use refused."""

import datetime
import decimal

import pytest

import beedb

ROWS = [
    (True, 1, 2, 3, 1.5, 2.5, decimal.Decimal("12.34"), datetime.date(1995, 3, 15),
     datetime.datetime(2001, 2, 3, 4, 5, 6, 789), datetime.timedelta(days=3, seconds=5), "héllo", "x"),
    (None, None, None, None, None, None, None, None, None, None, None, None),
    (False, -32768, -2147483648, -(2 ** 63), -0.0, 1e300, decimal.Decimal("-99999.99"),
     datetime.date(1970, 1, 1), datetime.datetime(1969, 12, 31, 23, 59, 59),
     datetime.timedelta(0), "", "abc"),
]


@pytest.fixture
def conn():
    c = beedb.connect(":memory:")
    c.execute("CREATE TABLE t (b BOOLEAN, s SMALLINT, i INTEGER, l BIGINT, r REAL, "
              "d DOUBLE PRECISION, n NUMERIC(7,2), dt DATE, ts TIMESTAMP, iv INTERVAL, "
              "tx TEXT, vc VARCHAR(5))")
    c.executemany("INSERT INTO t VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", ROWS)
    c.commit()
    yield c
    c.close()


def test_arrow_table_equals_fetchall(conn):
    pa = pytest.importorskip("pyarrow")
    want = conn.execute("SELECT * FROM t").fetchall()
    table = conn.execute("SELECT * FROM t").fetch_arrow_table()
    assert table.num_rows == 3 and table.column_names == ["b", "s", "i", "l", "r", "d", "n", "dt", "ts", "iv", "tx", "vc"]
    assert table.schema.field("n").type == pa.decimal128(7, 2)
    assert table.schema.field("ts").type == pa.timestamp("us")
    got = [tuple(r.values()) for r in table.to_pylist()]
    for g, w in zip(got, want):
        for a, b in zip(g, w):
            if isinstance(a, pa.MonthDayNano):
                a = datetime.timedelta(days=a.months * 30 + a.days, microseconds=a.nanoseconds // 1000)
            assert a == b, (g, w)


def test_numpy_equals_fetchall(conn):
    np = pytest.importorskip("numpy")
    want = conn.execute("SELECT * FROM t").fetchall()
    cols = conn.execute("SELECT * FROM t").fetchnumpy()
    assert list(cols) == ["b", "s", "i", "l", "r", "d", "n", "dt", "ts", "iv", "tx", "vc"]
    assert cols["l"].dtype == np.int64 and cols["n"].dtype == np.float64
    assert isinstance(cols["i"], np.ma.MaskedArray) and list(cols["i"].mask) == [False, True, False]
    assert cols["i"][0] == 2 and cols["l"][2] == -(2 ** 63)
    assert cols["n"][2] == -99999.99
    assert cols["dt"][0] == np.datetime64("1995-03-15")
    assert cols["ts"][2] == np.datetime64("1969-12-31T23:59:59")
    assert cols["tx"][0] == "héllo" and cols["tx"][2] == ""
    assert cols["iv"][0] == np.timedelta64(3 * 86_400_000_000 + 5_000_000, "us")
    for c, name in enumerate(cols):
        for k in (0, 2):
            assert not np.ma.is_masked(cols[name][k]), name
        assert np.ma.is_masked(cols[name][1]) or want[1][c] is not None


def test_no_nulls_gives_plain_arrays_and_large_results():
    np = pytest.importorskip("numpy")
    c = beedb.connect(":memory:")
    cols = c.execute("SELECT i, i * 0.5 AS h, 'v' || i AS s FROM generate_series(1, 100000) AS g(i)").fetchnumpy()
    assert not isinstance(cols["i"], np.ma.MaskedArray)
    assert cols["i"].sum() == 100000 * 100001 // 2
    assert cols["s"][99999] == "v100000"
    c.close()


def test_empty_and_partially_fetched_results(conn):
    pa = pytest.importorskip("pyarrow")
    table = conn.execute("SELECT * FROM t WHERE false").fetch_arrow_table()
    assert table.num_rows == 0 and table.num_columns == 12
    cur = conn.execute("SELECT i FROM t ORDER BY i NULLS LAST")
    assert cur.fetchone() == (-2147483648,)
    # The rest only.
    assert cur.fetch_arrow_table().column("i").to_pylist() == [2, None]
    assert cur.fetch_arrow_table().num_rows == 0
    with pytest.raises(beedb.ProgrammingError):
        conn.execute("CREATE TABLE u (x INTEGER)").fetch_arrow_table()
