"""Type round trips across the boundary: Python → SQL parameter → stored → Python."""

import datetime
import decimal
from decimal import Decimal

import pytest

import beedb


@pytest.fixture
def conn():
    c = beedb.connect(":memory:")
    yield c
    c.close()


def roundtrip(conn, sql_type, value):
    conn.execute(f"CREATE TABLE rt (v {sql_type})")
    conn.execute("INSERT INTO rt VALUES (?)", (value,))
    got = conn.execute("SELECT v FROM rt").fetchone()[0]
    conn.rollback()
    return got


@pytest.mark.parametrize("sql_type,value", [
    ("INTEGER", 0),
    ("INTEGER", -2**31),
    ("INTEGER", 2**31 - 1),
    ("BIGINT", -2**63),
    ("BIGINT", 2**63 - 1),
    ("SMALLINT", -32768),
    ("DOUBLE PRECISION", 1.5),
    ("DOUBLE PRECISION", -0.0),
    ("DOUBLE PRECISION", 1e308),
    ("DOUBLE PRECISION", float("inf")),
    ("BOOLEAN", True),
    ("BOOLEAN", False),
    ("TEXT", ""),
    ("TEXT", "héllo, wörld ✓ 🐝"),
    ("TEXT", "nul\x00inside"),
    ("VARCHAR(5)", "abcde"),
    ("NUMERIC(10,2)", Decimal("12345678.91")),
    ("NUMERIC", Decimal("0.000000000000000000000000000000000001")),
    ("NUMERIC", Decimal("99999999999999999999999999999999999999")),
    ("NUMERIC", Decimal("-99999999999999999999999999999999999999")),
    ("NUMERIC(38,38)", Decimal("0.99999999999999999999999999999999999999")),
    ("DATE", datetime.date(2024, 2, 29)),
    ("DATE", datetime.date(1, 1, 1)),
    ("DATE", datetime.date(9999, 12, 31)),
    ("TIMESTAMP", datetime.datetime(2024, 2, 29, 23, 59, 59, 999999)),
    ("TIMESTAMP", datetime.datetime(1970, 1, 1)),
    ("INTERVAL", datetime.timedelta(days=3, seconds=7, microseconds=5)),
    ("INTERVAL", datetime.timedelta(days=-1, seconds=1)),
])
def test_roundtrip(conn, sql_type, value):
    got = roundtrip(conn, sql_type, value)
    assert got == value
    assert type(got) is type(value)


def test_nan_roundtrip(conn):
    got = roundtrip(conn, "DOUBLE PRECISION", float("nan"))
    assert got != got


@pytest.mark.parametrize("sql_type", [
    "INTEGER", "BIGINT", "DOUBLE PRECISION", "BOOLEAN", "TEXT", "NUMERIC(5,1)", "DATE",
    "TIMESTAMP", "INTERVAL"])
def test_null_roundtrip(conn, sql_type):
    assert roundtrip(conn, sql_type, None) is None


def test_result_types(conn):
    row = conn.execute(
        "SELECT 1, CAST(2 AS BIGINT), 1.5, CAST(2.5 AS REAL), 'x', TRUE, NULL, "
        "DATE '2024-01-05', TIMESTAMP '2024-01-05 10:11:12.5', INTERVAL '1 day 2 hours', "
        "INTERVAL '1 month'").fetchone()
    assert row == (1, 2, Decimal("1.5"), 2.5, "x", True, None, datetime.date(2024, 1, 5),
                   datetime.datetime(2024, 1, 5, 10, 11, 12, 500000),
                   datetime.timedelta(days=1, hours=2), datetime.timedelta(days=30))
    assert type(row[2]) is Decimal


def test_huge_ints(conn):
    # Beyond 64 bits an int travels as an exact numeric of up to 38 digits.
    big = 10**37 + 7
    assert conn.execute("SELECT CAST(? AS NUMERIC) + 1", (big,)).fetchone()[0] == big + 1
    assert roundtrip(conn, "NUMERIC", -(10**38 - 1)) == -(10**38 - 1)
    with pytest.raises(beedb.DataError) as e:
        conn.execute("SELECT ?", (10**38,))
    assert e.value.sqlstate == "22003"
    # An int that fits 64 bits but not the column: the engine's range check.
    with pytest.raises(beedb.DataError) as e:
        roundtrip(conn, "INTEGER", 2**31)
    assert e.value.sqlstate == "22003"
    conn.rollback()


def test_decimals_at_the_limits(conn):
    with pytest.raises(beedb.DataError):
        conn.execute("SELECT ?", (Decimal("1" * 39),))
    with pytest.raises(beedb.DataError):
        conn.execute("SELECT ?", (Decimal("NaN"),))
    with pytest.raises(beedb.DataError):
        conn.execute("SELECT ?", (Decimal("Infinity"),))
    # numeric(p, s) rounds to its scale as PostgreSQL does.
    assert roundtrip(conn, "NUMERIC(5,2)", Decimal("1.005")) == Decimal("1.01")
    with pytest.raises(beedb.DataError) as e:
        roundtrip(conn, "NUMERIC(5,2)", Decimal("1000.00"))
    assert e.value.sqlstate == "22003"
    conn.rollback()
    # Scale is kept exactly.
    got = conn.execute("SELECT CAST(? AS NUMERIC)", (Decimal("1.500"),)).fetchone()[0]
    assert str(got) == "1.500"
    with decimal.localcontext() as ctx:
        ctx.prec = 50
        x = Decimal("1234567890123456789.0123456789012345678")
        assert conn.execute("SELECT CAST(? AS NUMERIC)", (x,)).fetchone()[0] == x


def test_non_utf8_input(conn):
    with pytest.raises(beedb.DataError) as e:
        conn.execute("SELECT ?", ("bad \udcff surrogate",))
    assert e.value.sqlstate == "22021"
    with pytest.raises(beedb.NotSupportedError):
        conn.execute("SELECT ?", (b"\xff\xfe",))
    with pytest.raises(beedb.DataError):
        conn.execute("SELECT '\udcff'")
    # The connection is still usable.
    assert conn.execute("SELECT 'ok'").fetchone() == ("ok",)


def test_unsupported_parameter_types(conn):
    with pytest.raises(beedb.ProgrammingError):
        conn.execute("SELECT ?", (object(),))
    with pytest.raises(beedb.NotSupportedError):
        conn.execute("SELECT ?", (datetime.time(1, 2),))


def test_aware_datetime_stored_as_utc(conn):
    tz = datetime.timezone(datetime.timedelta(hours=2))
    aware = datetime.datetime(2024, 6, 1, 12, 0, tzinfo=tz)
    assert roundtrip(conn, "TIMESTAMP", aware) == datetime.datetime(2024, 6, 1, 10, 0)


def test_dates_beyond_python(conn):
    with pytest.raises(beedb.DataError) as e:
        conn.execute("SELECT DATE '10000-01-01'").fetchone()
    assert e.value.sqlstate == "22008"


def test_type_objects(conn):
    cur = conn.execute("SELECT DATE '2024-01-01', 'x', 1")
    assert cur.description[0][1] == beedb.DATETIME
    assert cur.description[1][1] == beedb.STRING
    assert cur.description[2][1] == beedb.NUMBER
    assert beedb.Date(2024, 1, 1) == datetime.date(2024, 1, 1)
    assert isinstance(beedb.TimestampFromTicks(0), datetime.datetime)
    assert beedb.Binary(bytearray(b"ab")) == b"ab"


def test_numerics_made_without_text_are_the_decimals_of_their_text(conn):
    """Numerics that miss the Decimal cache are written field by field into the
    Decimal object (python/src/convert.rs, write_decimal): each must be the very
    Decimal its text makes — value, scale, sign, hash and arithmetic."""
    import random
    r = random.Random(14)
    texts = ["0", "0.00", "-0.5", "1E-38", "99999999999999999999999999999999999999",
             "-9999999999999999999", "10000000000000000000", "-10000000000000000000.000"]
    for _ in range(3000):
        digits = r.randint(1, 38)
        scale = r.randint(0, digits)
        s = "".join(r.choice("0123456789") for _ in range(digits))
        text = (s[:digits - scale] or "0") + ("." + s[digits - scale:] if scale else "")
        texts.append(("-" if r.random() < 0.5 else "") + text)
    # SQL's numerics have no negative zero.
    values = [Decimal(t).copy_abs() if Decimal(t) == 0 else Decimal(t) for t in texts]
    conn.execute("CREATE TABLE nums (i INTEGER, x NUMERIC)")
    conn.executemany("INSERT INTO nums VALUES (?, ?)", list(enumerate(values)))
    for i, got in conn.execute("SELECT i, x FROM nums ORDER BY i"):
        want = values[i]
        assert (str(got), got.as_tuple(), hash(got)) == (str(want), want.as_tuple(), hash(want))
        assert got * 3 - 1 == want * 3 - 1 and -got == -want
