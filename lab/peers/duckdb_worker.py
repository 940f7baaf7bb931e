#!/usr/bin/env python3
"""DuckDB worker for BeeDB's performance lab.

The lab speaks to DuckDB through its Python package (building DuckDB from source
takes too long, and the wheel is what most users run). One worker serves one
database file for its whole life, so DuckDB's caches stay warm as they would in an
application; the lab sends one JSON request per line on stdin and reads one JSON
response per line on stdout.

Every statement is timed here, around execute + fetchall, so that the pipe and the
JSON coding are not counted against DuckDB.

Requests:
  {"sql": "...", "params": [...]}     a statement with $1-style parameters
  {"op": "version"}                   duckdb.__version__
  {"op": "size"}                      CHECKPOINT, then bytes of the file and its WAL
  {"op": "copy", "table": T, "file": F}   bulk load of a '|'-delimited text file
  {"op": "timeout", "ms": N}          interrupt later statements running over N ms
                                      (0: no limit); such a statement's answer is
                                      {"ok": false, "timed_out": true, ...}

Responses: {"ok": true, ...} or {"ok": false, "error": "message"}. The first line
the worker writes says whether the database opened: {"ok": true, "ready": true}.

Values: integers that fit 64 bits as JSON integers (wider ones, e.g. HUGEINT sums,
as floats), floats as JSON numbers, non-finite floats as {"float": "nan"|"inf"|
"-inf"} (JSON has no such numbers), decimals as integers when integral (and below
9e15, as BeeDB does) else floats, booleans as 0/1, text as strings, NULL as null,
anything else (dates, timestamps, intervals, ...) as str(value). Parameters come
the same way: a {"float": ...} object stands for a non-finite float.
"""

import decimal
import json
import math
import os
import sys
import threading
import time

# The protocol owns stdout: anything else that prints goes to stderr.
PROTOCOL_OUT = sys.stdout
sys.stdout = sys.stderr

I64_MIN = -(2**63)
I64_MAX = 2**63 - 1

# Statements whose result DuckDB gives as one "Count" row: the lab wants that
# number as rows affected, not as an answer.
DML = ("INSERT", "UPDATE", "DELETE", "MERGE")


def send(message):
    PROTOCOL_OUT.write(json.dumps(message, allow_nan=False))
    PROTOCOL_OUT.write("\n")
    PROTOCOL_OUT.flush()


def float_value(f):
    if math.isnan(f):
        return {"float": "nan"}
    if math.isinf(f):
        return {"float": "inf" if f > 0 else "-inf"}
    return f


def value(v):
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v if I64_MIN <= v <= I64_MAX else float(v)
    if isinstance(v, float):
        return float_value(v)
    if isinstance(v, decimal.Decimal):
        if not v.is_finite():
            return float_value(float(v))
        if v == v.to_integral_value() and abs(v) < decimal.Decimal("9e15"):
            return int(v)
        return float_value(float(v))
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v).hex()
    # Dates print as PostgreSQL prints them ('2024-01-02', '2024-01-02 03:04:05').
    return str(v)


def param(p):
    if isinstance(p, dict) and "float" in p:
        return float(p["float"])
    return p


def first_keyword(sql):
    """The statement's first word, past leading blanks, comments and parentheses."""
    s = sql.lstrip()
    while True:
        if s.startswith("--"):
            end = s.find("\n")
            s = "" if end < 0 else s[end + 1 :].lstrip()
        elif s.startswith("/*"):
            end = s.find("*/")
            s = "" if end < 0 else s[end + 2 :].lstrip()
        elif s.startswith("("):
            s = s[1:].lstrip()
        else:
            break
    word = []
    for c in s:
        if c.isalpha() or c == "_":
            word.append(c)
        else:
            break
    return "".join(word).upper()


class TimedOut(Exception):
    pass


# Statement timeout in seconds (None: no limit), set by the "timeout" request.
TIMEOUT = [None]


def execute_and_fetch(con, sql, params):
    con.execute(sql, params)
    description = con.description
    rows = con.fetchall() if description is not None else []
    return description, rows


def run_sql(con, sql, params):
    start = time.perf_counter_ns()
    if TIMEOUT[0] is None:
        description, rows = execute_and_fetch(con, sql, params)
    else:
        # DuckDB releases the GIL while it works, so the timer thread can interrupt.
        fired = threading.Event()

        def interrupt():
            fired.set()
            con.interrupt()

        timer = threading.Timer(TIMEOUT[0], interrupt)
        timer.start()
        try:
            description, rows = execute_and_fetch(con, sql, params)
        except Exception as e:  # noqa: BLE001 - an interrupt is reported as a timeout
            if fired.is_set():
                raise TimedOut("{} (after the statement timeout of {} s)".format(e, TIMEOUT[0]))
            raise
        finally:
            timer.cancel()
            timer.join()
    ns = time.perf_counter_ns() - start
    if (
        first_keyword(sql) in DML
        and description is not None
        and len(description) == 1
        and description[0][0] == "Count"
        and len(rows) == 1
    ):
        return {"ok": True, "ns": ns, "rows": [], "affected": int(rows[0][0])}
    return {
        "ok": True,
        "ns": ns,
        "rows": [[value(v) for v in row] for row in rows],
        "affected": 0,
    }


def quote_literal(s):
    return "'" + str(s).replace("'", "''") + "'"


def copy(con, table, path):
    # Options chosen to read the lab's files as PostgreSQL's COPY text format does:
    # no quoting (a '"' is data), an empty field is an empty string, not NULL.
    sql = "COPY {} FROM {} (DELIMITER '|', HEADER false, QUOTE '', ESCAPE '', NULL '\\N')".format(
        table, quote_literal(path)
    )
    start = time.perf_counter_ns()
    con.execute(sql)
    rows = con.fetchall() if con.description is not None else []
    ns = time.perf_counter_ns() - start
    affected = int(rows[0][0]) if rows and rows[0] and isinstance(rows[0][0], int) else 0
    return {"ok": True, "ns": ns, "rows": [], "affected": affected}


def size(con, path):
    con.execute("CHECKPOINT")
    total = 0
    for p in (path, path + ".wal"):
        try:
            total += os.path.getsize(p)
        except OSError:
            pass
    return {"ok": True, "bytes": total}


def handle(con, duckdb, path, request):
    op = request.get("op")
    if op is None:
        params = [param(p) for p in request.get("params") or []]
        return run_sql(con, request["sql"], params)
    if op == "version":
        return {"ok": True, "version": duckdb.__version__}
    if op == "size":
        return size(con, path)
    if op == "copy":
        return copy(con, request["table"], request["file"])
    if op == "timeout":
        ms = request.get("ms") or 0
        TIMEOUT[0] = ms / 1000.0 if ms > 0 else None
        return {"ok": True}
    return {"ok": False, "error": "unknown op {!r}".format(op)}


def main():
    if len(sys.argv) != 2:
        send({"ok": False, "error": "usage: duckdb_worker.py DBPATH"})
        return 2
    path = sys.argv[1]
    try:
        import duckdb

        con = duckdb.connect(path)
        # A progress bar would be written to the terminal, i.e. into the protocol.
        con.execute("SET enable_progress_bar = false")
    except Exception as e:  # noqa: BLE001 - every failure becomes the answer
        send({"ok": False, "error": "open {}: {}".format(path, e)})
        return 1
    send({"ok": True, "ready": True})
    while True:
        line = sys.stdin.readline()
        if not line:
            break
        line = line.strip()
        if not line:
            continue
        try:
            response = handle(con, duckdb, path, json.loads(line))
        except TimedOut as e:
            response = {"ok": False, "error": str(e), "timed_out": True}
        except Exception as e:  # noqa: BLE001 - every failure becomes the answer
            response = {"ok": False, "error": str(e) or type(e).__name__}
        try:
            send(response)
        except ValueError as e:
            send({"ok": False, "error": "unencodable answer: {}".format(e)})
    con.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
