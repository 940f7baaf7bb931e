"""The per-call cost of the beedb module: microseconds per `cursor.execute(sql,
params).fetchone()` on an in-memory database, for `SELECT 1`, a lookup by a unique
key and one by a non-unique index (10,000 rows each). Median of five runs of
100,000 calls. Run with a Python that has the module: `python percall_bench.py`."""

import statistics
import time

import beedb


def main():
    c = beedb.connect(":memory:")
    c.execute("CREATE TABLE t (k INTEGER, v TEXT)")
    c.executemany("INSERT INTO t VALUES (?, ?)", [(i, f"v{i}") for i in range(10000)])
    c.execute("CREATE INDEX t_k ON t (k)")
    c.execute("CREATE TABLE u (k INTEGER PRIMARY KEY, v TEXT)")
    c.executemany("INSERT INTO u VALUES (?, ?)", [(i, f"v{i}") for i in range(10000)])
    c.commit()
    cur = c.cursor()
    n = 100_000

    def run(label, sql, params):
        ts = []
        for _ in range(5):
            t = time.perf_counter()
            for i in range(n):
                cur.execute(sql, params(i)).fetchone()
            ts.append((time.perf_counter() - t) / n * 1e6)
        print(f"{label}: median {statistics.median(ts):.3f} µs  (runs {' '.join(f'{x:.3f}' for x in ts)})")

    run("SELECT 1", "SELECT 1", lambda i: ())
    run("lookup by a unique key", "SELECT v FROM u WHERE k = ?", lambda i: [i % 10000])
    run("lookup by a non-unique index", "SELECT v FROM t WHERE k = ?", lambda i: [i % 10000])


if __name__ == "__main__":
    main()
