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


# ---- the columnar path: every type, NULLs, batch edges ----------------------------

# One expression per type; every 7th row (and row 1) NULL, so a 1,024-row batch has
# NULLs in some positions and not others.
TYPED = (
    "CASE WHEN g % 7 = 1 THEN NULL ELSE g % 2 = 0 END AS b, "
    "CASE WHEN g % 7 = 1 THEN NULL ELSE CAST(g % 30000 - 15000 AS SMALLINT) END AS s, "
    "CASE WHEN g % 7 = 1 THEN NULL ELSE CAST(g * 3 - 7000 AS INTEGER) END AS i, "
    "CASE WHEN g % 7 = 1 THEN NULL ELSE CAST(g AS BIGINT) * 1000000007 END AS l, "
    "CASE WHEN g % 7 = 1 THEN NULL ELSE CAST(g AS REAL) / 4 END AS r, "
    "CASE WHEN g % 7 = 1 THEN NULL ELSE CAST(g AS DOUBLE PRECISION) / 3 END AS d, "
    "CASE WHEN g % 7 = 1 THEN NULL ELSE CAST(CAST(g AS NUMERIC) / 8 AS NUMERIC(9,2)) END AS n, "
    "CASE WHEN g % 7 = 1 THEN NULL ELSE CAST(g AS NUMERIC) / CASE WHEN g % 2 = 0 THEN 4 ELSE 1 END END AS nu, "
    "CASE WHEN g % 7 = 1 THEN NULL ELSE DATE '1999-12-01' + CAST(g AS INTEGER) END AS dt, "
    "CASE WHEN g % 7 = 1 THEN NULL ELSE TIMESTAMP '1969-06-01 10:00:00' + g * INTERVAL '1 hour 1 second' END AS ts, "
    "CASE WHEN g % 7 = 1 THEN NULL ELSE g * INTERVAL '1 day 3 microseconds' END AS iv, "
    "CASE WHEN g % 7 = 1 THEN NULL ELSE 'é' || g END AS tx, "
    "CASE WHEN g % 7 = 1 THEN NULL ELSE CAST('v' || (g % 100) AS VARCHAR(5)) END AS vc"
)


def _as_python(v):
    """An Arrow or NumPy scalar as the value fetchall gives."""
    try:
        import pyarrow as pa
        if isinstance(v, pa.MonthDayNano):
            return datetime.timedelta(days=v.months * 30 + v.days, microseconds=v.nanoseconds // 1000)
    except ImportError:
        pass
    return v


def _check_arrow(rows, table):
    assert table.num_rows == len(rows)
    got = [tuple(_as_python(x) for x in r.values()) for r in table.to_pylist()]
    for g, w in zip(got, rows):
        assert g == w, (g, w)


def _check_numpy(np, rows, cols, names):
    assert list(cols) == names
    for c, name in enumerate(names):
        col = cols[name]
        assert len(col) == len(rows), name
        for k, row in enumerate(rows):
            want = row[c]
            if want is None:
                assert np.ma.is_masked(col[k]), (name, k)
                continue
            got = col[k]
            assert not np.ma.is_masked(got), (name, k)
            if isinstance(want, decimal.Decimal):
                assert abs(got - float(want)) <= 1e-12 * max(1.0, abs(float(want))), (name, k, got, want)
            elif isinstance(want, datetime.datetime):
                assert got == np.datetime64(want, "us"), (name, k)
            elif isinstance(want, datetime.date):
                assert got == np.datetime64(want, "D"), (name, k)
            elif isinstance(want, datetime.timedelta):
                assert got == np.timedelta64(want, "us"), (name, k)
            else:
                assert got == want, (name, k, got, want)


@pytest.mark.parametrize("n", [0, 1, 1023, 1024, 1025, 5000])
def test_every_type_with_nulls_across_batches(n):
    np = pytest.importorskip("numpy")
    pa = pytest.importorskip("pyarrow")
    c = beedb.connect(":memory:")
    sql = f"SELECT {TYPED} FROM generate_series(1, {n}) AS t(g)"
    rows = c.execute(sql).fetchall()
    assert len(rows) == n
    table = c.execute(sql).fetch_arrow_table()
    assert table.schema.field("n").type == pa.decimal128(9, 2) or n == 0
    _check_arrow(rows, table)
    names = [d[0] for d in c.execute(sql).description]
    _check_numpy(np, rows, c.execute(sql).fetchnumpy(), names)
    c.close()


@pytest.fixture
def wide():
    """A stored table of 5,000 rows of every type (scans hand out the stored
    vectors; Dec64 decimals), NULLs every 7th row."""
    c = beedb.connect(":memory:")
    c.execute(f"CREATE TABLE w AS SELECT g, {TYPED} FROM generate_series(1, 5000) AS t(g)")
    c.commit()
    yield c
    c.close()


def test_stored_table_filtered_and_partly_fetched(wide):
    np = pytest.importorskip("numpy")
    pytest.importorskip("pyarrow")
    for where in ("", " WHERE g % 3 <> 0", " WHERE g > 4990"):
        sql = f"SELECT * FROM w{where} ORDER BY g"
        rows = wide.execute(sql).fetchall()
        _check_arrow(rows, wide.execute(sql).fetch_arrow_table())
        names = [d[0] for d in wide.execute(sql).description]
        _check_numpy(np, rows, wide.execute(sql).fetchnumpy(), names)
        # Part fetched by rows (into the second batch), the rest as columns.
        for first in (1, 1023, 1500):
            cur = wide.execute(sql)
            head = [cur.fetchone()] + cur.fetchmany(first - 1) if rows else []
            _check_arrow(rows[len(head):], cur.fetch_arrow_table())
            assert cur.fetch_arrow_table().num_rows == 0
        cur = wide.execute(sql)
        for _ in range(min(5, len(rows))):
            cur.fetchone()
        _check_numpy(np, rows[5:], cur.fetchnumpy(), names)


def test_unconstrained_numeric_takes_the_largest_scale_and_returning_rows():
    pa = pytest.importorskip("pyarrow")
    c = beedb.connect(":memory:")
    table = c.execute("SELECT x FROM (VALUES (CAST(1.5 AS NUMERIC)), (NULL), (CAST(2.125 AS NUMERIC)), "
                      "(CAST(-7 AS NUMERIC))) AS v(x)").fetch_arrow_table()
    assert table.schema.field("x").type == pa.decimal128(38, 3)
    assert table.column("x").to_pylist() == [decimal.Decimal("1.500"), None, decimal.Decimal("2.125"),
                                             decimal.Decimal("-7.000")]
    # A finished statement's rows (RETURNING) go value by value.
    c.execute("CREATE TABLE r (a INTEGER, b TEXT, n NUMERIC(5,1))")
    cur = c.execute("INSERT INTO r SELECT g, CASE WHEN g % 2 = 0 THEN 't' || g END, g / 2.0 "
                    "FROM generate_series(1, 2000) AS t(g) RETURNING a, b, n")
    table = cur.fetch_arrow_table()
    assert table.num_rows == 2000
    assert table.column("b").to_pylist()[:4] == [None, "t2", None, "t4"]
    assert table.column("n").to_pylist()[2] == decimal.Decimal("1.5")
    assert table.column("a").to_pylist()[-1] == 2000
    c.close()
