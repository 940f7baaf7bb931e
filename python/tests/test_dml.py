"""Writes that return rows: INSERT / UPDATE / DELETE … RETURNING and ON CONFLICT
fetched through a cursor, with SERIAL numbers."""

import pytest

import beedb


@pytest.fixture
def conn():
    c = beedb.connect(":memory:")
    yield c
    c.close()


def test_returning_is_fetched_like_a_query(conn):
    cur = conn.cursor()
    cur.execute("CREATE TABLE t (id SERIAL PRIMARY KEY, name TEXT, price NUMERIC(6,2))")
    cur.execute("INSERT INTO t (name, price) VALUES (?, ?), (?, ?) RETURNING id, name",
                ("tea", 3.5, "cake", 4.25))
    assert [d[0] for d in cur.description] == ["id", "name"]
    assert cur.rowcount == 2
    assert cur.fetchall() == [(1, "tea"), (2, "cake")]
    cur.execute("UPDATE t SET price = price * 2 WHERE id = ? RETURNING price", (2,))
    assert cur.rowcount == 1
    assert str(cur.fetchone()[0]) == "8.50"
    cur.execute("DELETE FROM t WHERE id = 99 RETURNING *")
    assert cur.rowcount == 0
    assert len(cur.description) == 3
    assert cur.fetchall() == []


def test_upsert_returns_inserted_and_updated_rows(conn):
    conn.execute("CREATE TABLE hits (page TEXT PRIMARY KEY, n INTEGER)")
    sql = ("INSERT INTO hits VALUES (?, 1) ON CONFLICT (page) "
           "DO UPDATE SET n = hits.n + 1 RETURNING page, n")
    for expected in (1, 2, 3):
        assert conn.execute(sql, ("home",)).fetchall() == [("home", expected)]
    assert conn.execute("SELECT count(*) FROM hits").fetchone() == (1,)


def test_sequence_errors_map_to_exceptions(conn):
    conn.execute("CREATE SEQUENCE s")
    conn.commit()
    with pytest.raises(beedb.OperationalError) as e:
        conn.execute("SELECT currval('s')")
    assert e.value.sqlstate == "55000"
    conn.rollback()  # the error aborted the implicit transaction
    assert conn.execute("SELECT nextval('s'), currval('s')").fetchone() == (1, 1)
