"""The SQPyte micro-benchmarks (Jacob et al., "Making an embedded DBMS JIT-friendly",
ECOOP 2016, section 7.1) on TPC-H data, run through Python's DB-API modules:
beedb, sqlite3 and duckdb. Each crosses the Python/database boundary many times:

  select       SELECT l_quantity, l_extendedprice, l_discount FROM lineitem, summed in Python
  innerjoin    partsupp ⋈ part ⋈ supplier in SQL, the (part name, supplier name) pairs into a dict
  pythonjoin   the same join in Python: per partsupp row, a point query on part and one on supplier
  pyfunction   a Python abs() called from SQL on every lineitem row, the results summed in Python
  pyaggregate  a Python sum aggregate (step/finalize) over l_quantity
  filltable    100,000 single-row INSERTs, then one SELECT of them all
  select-batch select's sums through the batch path (fetchnumpy), where the module has one

Every engine loads the same .tbl files into the lab's TPC-H schema. Answers are compared
across engines (sums within 1e-9 relative: SQLite computes them in floating point,
BeeDB and DuckDB return exact decimals). Prints one table (median seconds of --runs
runs after a warm-up) and writes the figures as JSON to --json.

Run by `beedb bench python` (lab/src/workload/python.rs), which builds the beedb
module and the data; it can also be run directly with a Python that has them.
"""

import argparse
import json
import math
import os
import statistics
import sys
import time

TABLES = ["part", "supplier", "partsupp", "lineitem"]


def load_schema(schema_path):
    stmts = {}
    for line in open(schema_path):
        line = line.strip()
        if line.startswith("create table"):
            name = line.split()[2]
            stmts[name] = line.rstrip(";")
    return stmts


def tbl_rows(path):
    with open(path, encoding="utf-8") as f:
        for line in f:
            yield line.rstrip("\n").split("|")


# ---- engines --------------------------------------------------------------------------

class Engine:
    name = ""
    batch = False

    def rows(self, cur):
        """The rows of an executed cursor, as the module's users iterate them."""
        return cur

    def begin(self, c):
        """Opens a transaction (sqlite3 and beedb do it implicitly before a change)."""

    def connect(self, path):
        raise NotImplementedError


class BeeDB(Engine):
    name = "beedb"
    batch = True

    def __init__(self, bees=True):
        import beedb
        self.mod = beedb
        self.bees = bees
        if not bees:
            self.name = "beedb-generic"

    def open(self, path):
        c = self.mod.connect(path)
        if not self.bees:
            c.execute("SET bees = off")
        return c

    def load(self, path, schema, tbl_dir):
        c = self.open(path)
        for t in TABLES:
            c.execute(schema[t])
            c.execute(f"COPY {t} FROM '{os.path.join(tbl_dir, t + '.tbl')}' WITH (DELIMITER '|')")
        c.execute("CREATE INDEX part_key ON part (p_partkey)")
        c.execute("CREATE INDEX supplier_key ON supplier (s_suppkey)")
        c.commit()
        c.close()

    def create_function(self, c, name, fn):
        c.create_function(name, 1, fn)

    def create_aggregate(self, c, name, cls):
        c.create_aggregate(name, 1, cls)

    def fetch_columns(self, cur):
        return cur.fetchnumpy()


class SQLite(Engine):
    name = "sqlite3"

    def __init__(self):
        import sqlite3
        self.mod = sqlite3

    def open(self, path):
        return self.mod.connect(path)

    def load(self, path, schema, tbl_dir):
        c = self.open(path)
        for t in TABLES:
            c.execute(schema[t])
            ncols = schema[t].count(" not null")
            rows = tbl_rows(os.path.join(tbl_dir, t + ".tbl"))
            c.executemany(f"INSERT INTO {t} VALUES ({', '.join('?' * ncols)})", rows)
        c.execute("CREATE INDEX part_key ON part (p_partkey)")
        c.execute("CREATE INDEX supplier_key ON supplier (s_suppkey)")
        c.commit()
        c.close()

    def create_function(self, c, name, fn):
        c.create_function(name, 1, fn, deterministic=True)

    def create_aggregate(self, c, name, cls):
        c.create_aggregate(name, 1, cls)


class DuckDB(Engine):
    name = "duckdb"
    batch = True

    def __init__(self):
        import duckdb
        self.mod = duckdb

    def open(self, path):
        return self.mod.connect(path)

    def load(self, path, schema, tbl_dir):
        c = self.open(path)
        for t in TABLES:
            c.execute(schema[t])
            c.execute(f"COPY {t} FROM '{os.path.join(tbl_dir, t + '.tbl')}' (DELIMITER '|', HEADER false)")
        c.execute("CREATE INDEX part_key ON part (p_partkey)")
        c.execute("CREATE INDEX supplier_key ON supplier (s_suppkey)")
        c.close()

    def create_function(self, c, name, fn):
        make_type = getattr(self.mod, "sqltype", None) or getattr(self.mod, "type")
        double = make_type("DOUBLE")
        c.create_function(name, fn, [double], double, null_handling="special")

    def rows(self, cur):
        # DuckDB's cursors are not iterators: fetchall is its documented way.
        return cur.fetchall()

    def begin(self, c):
        # DuckDB's module commits every statement unless a transaction is begun.
        c.begin()

    create_aggregate = None  # DuckDB's Python module has no aggregate UDFs

    def fetch_columns(self, cur):
        return cur.fetchnumpy()


# ---- the micro-benchmarks -------------------------------------------------------------

def b_select(engine, c):
    qty = base = disc = 0
    for quantity, price, discount in engine.rows(c.execute(
            "SELECT l_quantity, l_extendedprice, l_discount FROM lineitem")):
        qty += quantity
        base += price
        disc += price * (1 - discount)
    return (float(qty), float(base), float(disc))


def b_select_batch(engine, c):
    cols = engine.fetch_columns(c.execute(
        "SELECT l_quantity, l_extendedprice, l_discount FROM lineitem"))
    q, p, d = (cols["l_quantity"], cols["l_extendedprice"], cols["l_discount"])
    return (float(q.sum()), float(p.sum()), float((p * (1 - d)).sum()))


def b_innerjoin(engine, c):
    d = {}
    n = 0
    for partname, suppname in engine.rows(c.execute(
            "SELECT p_name, s_name FROM partsupp "
            "JOIN part ON part.p_partkey = partsupp.ps_partkey "
            "JOIN supplier ON supplier.s_suppkey = partsupp.ps_suppkey")):
        d[partname] = suppname
        n += 1
    return (n, len(d))


def b_pythonjoin(engine, c):
    d = {}
    n = 0
    outer = c.cursor()
    inner = c.cursor()
    for key, suppkey in engine.rows(outer.execute("SELECT ps_partkey, ps_suppkey FROM partsupp")):
        partname, = inner.execute("SELECT p_name FROM part WHERE p_partkey = ?", [key]).fetchone()
        suppname, = inner.execute("SELECT s_name FROM supplier WHERE s_suppkey = ?", [suppkey]).fetchone()
        d[partname] = suppname
        n += 1
    return (n, len(d))


def pyabs(x):
    if x is None:
        return None
    return -x if x < 0 else x


def b_pyfunction(engine, c):
    engine.create_function(c, "pyabs", pyabs)
    total = 0
    for (v,) in engine.rows(c.execute("SELECT pyabs(l_extendedprice) FROM lineitem")):
        total += v
    return (float(total),)


class MySum:
    def __init__(self):
        self.sum = 0

    def step(self, x):
        self.sum += x

    def finalize(self):
        return self.sum


def b_pyaggregate(engine, c):
    engine.create_aggregate(c, "mysum", MySum)
    (v,) = c.execute("SELECT mysum(l_quantity) FROM lineitem").fetchone()
    return (float(v),)


def b_filltable(engine, c):
    cur = c.cursor()
    cur.execute("DROP TABLE IF EXISTS fill")
    cur.execute("CREATE TABLE fill (a INTEGER, b VARCHAR(20))")
    c.commit()
    engine.begin(c)
    for i in range(100_000):
        cur.execute("INSERT INTO fill VALUES (?, ?)", (i, f"value {i}"))
    c.commit()
    n = 0
    total = 0
    for a, b in engine.rows(cur.execute("SELECT a, b FROM fill")):
        n += 1
        total += a
    cur.execute("DROP TABLE fill")
    c.commit()
    return (n, total)


BENCHMARKS = [
    ("select", b_select),
    ("innerjoin", b_innerjoin),
    ("pythonjoin", b_pythonjoin),
    ("pyfunction", b_pyfunction),
    ("pyaggregate", b_pyaggregate),
    ("filltable", b_filltable),
    ("select-batch", b_select_batch),
]
SIX = [name for name, _ in BENCHMARKS[:6]]


def same(a, b):
    return len(a) == len(b) and all(
        x == y if isinstance(x, int) and isinstance(y, int)
        else math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-6) for x, y in zip(a, b))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tbl", required=True, help="folder with the TPC-H .tbl files")
    ap.add_argument("--schema", required=True, help="the lab's tpch_schema.sql")
    ap.add_argument("--work", required=True, help="folder for the databases")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--engines", default="beedb,sqlite3,duckdb")
    ap.add_argument("--only", default="", help="comma-separated benchmark names")
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    schema = load_schema(args.schema)
    os.makedirs(args.work, exist_ok=True)
    engines = []
    for name in args.engines.split(","):
        try:
            engines.append({"beedb": lambda: BeeDB(True), "beedb-generic": lambda: BeeDB(False),
                            "sqlite3": SQLite, "duckdb": DuckDB}[name]())
        except ImportError as e:
            print(f"note: {name} left out: {e}", file=sys.stderr)
    only = set(filter(None, args.only.split(",")))
    results = {}   # (bench, engine) -> median seconds
    answers = {}
    failures = []
    for e in engines:
        path = os.path.join(args.work, f"sqpyte-{e.name}.db")
        for suffix in ("", "-wal", ".wal"):
            if os.path.exists(path + suffix):
                os.remove(path + suffix)
        t0 = time.perf_counter()
        e.load(path, schema, args.tbl)
        print(f"{e.name}: loaded in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
        for bname, fn in BENCHMARKS:
            if only and bname not in only:
                continue
            if bname == "pyaggregate" and e.create_aggregate is None:
                continue
            if bname == "select-batch" and not e.batch:
                continue
            times = []
            for run in range(args.runs + 1):  # the first is a warm-up
                c = e.open(path)
                t = time.perf_counter()
                try:
                    answer = fn(e, c)
                except Exception as ex:  # noqa: BLE001 - reported, not fatal
                    failures.append(f"{bname} on {e.name}: {type(ex).__name__}: {ex}")
                    c.close()
                    break
                elapsed = time.perf_counter() - t
                c.close()
                if run > 0:
                    times.append(elapsed)
                key = "select" if bname == "select-batch" else bname
                if key in answers and not same(answers[key][1], answer):
                    failures.append(f"{bname}: {e.name} answered {answer}, {answers[key][0]} {answers[key][1]}")
                answers.setdefault(key, (e.name, answer))
            if times:
                results[(bname, e.name)] = statistics.median(times)
                print(f"{e.name} {bname}: {results[(bname, e.name)]:.3f} s", file=sys.stderr, flush=True)
    # The table: seconds per engine and sqlite3 ÷ engine.
    names = [e.name for e in engines]
    header = ["benchmark"] + [f"{n} s" for n in names] + [f"sqlite3÷{n}" for n in names if n != "sqlite3"]
    rows = []
    for bname, _ in BENCHMARKS:
        row = [bname]
        for n in names:
            t = results.get((bname, n))
            row.append("—" if t is None else f"{t:.3f}")
        base = results.get(("select" if bname == "select-batch" else bname, "sqlite3"))
        for n in names:
            if n == "sqlite3":
                continue
            t = results.get((bname, n))
            row.append("—" if t is None or base is None else f"{base / t:.2f}")
        rows.append(row)
    geo = ["geomean (six)"] + [""] * len(names)
    for n in names:
        if n == "sqlite3":
            continue
        ratios = [results[("" + b, "sqlite3")] / results[(b, n)] for b in SIX
                  if (b, n) in results and (b, "sqlite3") in results]
        geo.append(f"{math.exp(sum(map(math.log, ratios)) / len(ratios)):.2f}" if ratios else "—")
    rows.append(geo)
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    for r in [header] + rows:
        print("  ".join(str(x).rjust(w) if i else str(x).ljust(w) for i, (x, w) in enumerate(zip(r, widths))))
    for f in failures:
        print(f"FAILED: {f}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"seconds": {f"{b}/{n}": t for (b, n), t in results.items()},
                       "failures": failures, "runs": args.runs}, out, indent=1)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
