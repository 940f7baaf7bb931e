"""Garbage collection: 10^5 cursors (each executed, partly fetched, dropped) leave the
resident set size where it was after a warm-up."""

import gc
import os

import pytest

import beedb


def rss_kib():
    with open(f"/proc/{os.getpid()}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs /proc")
def test_rss_stable_over_1e5_cursors():
    conn = beedb.connect(":memory:")
    conn.execute("CREATE TABLE t (a INTEGER, b TEXT)")
    conn.executemany("INSERT INTO t VALUES (?, ?)", [(i, "x" * 50) for i in range(100)])
    conn.commit()

    def churn(n):
        for i in range(n):
            cur = conn.cursor()
            cur.execute("SELECT a, b FROM t WHERE a >= ?", (i % 50,))
            cur.fetchone()  # the rest is left unfetched, then dropped
            if i % 3 == 0:
                cur.close()

    churn(20_000)  # warm-up: allocator pools, caches
    gc.collect()
    before = rss_kib()
    churn(100_000)
    gc.collect()
    after = rss_kib()
    # A leak of one row set per cursor would be ~50 rows x 100 bytes x 10^5 = 500 MB.
    assert after - before < 20 * 1024, f"RSS grew by {after - before} KiB over 10^5 cursors"
