#!/usr/bin/python3
"""Fill in / verify the expected results of BeeDB's .slt files against PostgreSQL.

Usage:
    generate_expected.py [--write] [--dsn DSN] FILE.slt [FILE.slt ...]

Every file is run, record by record, against a fresh, empty PostgreSQL
database (created as ``slt_<n>`` and dropped afterwards), over one connection in
autocommit mode (so BEGIN/COMMIT/ROLLBACK in the file behave as in psql).

Without ``--write`` (check mode) every record is verified:
  * ``statement ok``            must succeed;
  * ``statement error <re>``    / ``query error <re>`` must fail with a message
                                that the regex matches (Python ``re.search``);
  * ``query <types> [rowsort]`` must succeed with exactly the listed column
                                type letters and result rows.
The exit status is non-zero if any record fails.

With ``--write`` (generate mode) the files are rewritten in place:
  * a ``query`` header may omit the type letters (``query`` / ``query rowsort``);
    they are filled in from the result column types (I for int2/int4/int8, T
    for anything else);
  * query results are replaced by what PostgreSQL returned;
  * an error record with an empty regex gets PostgreSQL's full message,
    regex-escaped; an error record with a regex is checked (not replaced).
Statements that do not behave as the record says are reported, and the file is
left unchanged in that case.

``hash-threshold N`` lines are kept: a later query with more than N values
(rows times columns) is written and checked as sqllogictest-rs does, as
``<count> values hashing to <md5>`` (the MD5 of every value followed by a newline,
row by row). A ``statement ok`` record that SETs or RESETs a setting PostgreSQL
does not know (BeeDB's own, such as ``memory_limit``) is kept and not counted as a
failure.

Values are printed in PostgreSQL's text output format (as ``psql -A -t``):
NULL -> ``NULL``, empty string -> ``(empty)``, columns joined by one space.
``rowsort`` results are written sorted the way sqllogictest-rs sorts them.

The session uses DateStyle=ISO, MDY, IntervalStyle=postgres, TimeZone=UTC,
extra_float_digits=1 (PostgreSQL 15 defaults apart from the time zone).
"""

import argparse
import hashlib
import re
import sys

import psycopg2
import psycopg2.extensions

INT_OIDS = {20, 21, 23}  # int8, int2, int4
SESSION_OPTS = "-c DateStyle=ISO,MDY -c IntervalStyle=postgres -c TimeZone=UTC -c extra_float_digits=1 -c lc_messages=C"


class Record:
    def __init__(self, kind, header, sql_lines, result_lines, comments):
        self.kind = kind              # 'statement' | 'query'
        self.header = header          # header tokens after the kind
        self.sql_lines = sql_lines
        self.result_lines = result_lines  # None if no '----'
        self.comments = comments      # comment/blank lines preceding the record

    @property
    def sql(self):
        return "\n".join(self.sql_lines)


def parse(path):
    """Returns (records, trailing_lines)."""
    lines = open(path, encoding="utf-8").read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    records = []
    pending = []
    i = 0
    while i < len(lines):
        line = lines[i]
        toks = line.split()
        if not toks or line.startswith("#"):
            pending.append(line)
            i += 1
            continue
        if toks[0] == "hash-threshold" and len(toks) == 2 and toks[1].isdigit():
            records.append(Record("hash-threshold", toks[1:], [], None, pending))
            pending = []
            i += 1
            continue
        if toks[0] not in ("statement", "query"):
            raise SystemExit(f"{path}:{i+1}: unsupported record: {line}")
        kind, header = toks[0], toks[1:]
        i += 1
        sql = []
        result = None
        while i < len(lines) and lines[i] != "":
            if lines[i] == "----":
                result = []
                i += 1
                while i < len(lines) and lines[i] != "":
                    result.append(lines[i])
                    i += 1
                break
            sql.append(lines[i])
            i += 1
        if not sql:
            raise SystemExit(f"{path}:{i}: record without SQL")
        records.append(Record(kind, header, sql, result, pending))
        pending = []
    return records, pending


def fmt(v):
    if v is None:
        return "NULL"
    if v == "":
        return "(empty)"
    return v


def raw_typecasters(conn):
    """Make psycopg2 return every value as PostgreSQL's text output."""
    cur = conn.cursor()
    cur.execute("SELECT oid FROM pg_type")
    oids = tuple(r[0] for r in cur.fetchall())
    raw = psycopg2.extensions.new_type(oids, "RAW", lambda v, c: v)
    psycopg2.extensions.register_type(raw)


def run(cur, sql):
    """Returns ('ok', types, rows) or ('error', message)."""
    try:
        cur.execute(sql)
    except psycopg2.Error as e:
        msg = e.pgerror or str(e)
        first = msg.strip().split("\n")[0]
        if first.startswith("ERROR:"):
            first = first[len("ERROR:"):].strip()
        return ("error", first)
    if cur.description is None:
        return ("ok", "", [])
    types = "".join("I" if d.type_code in INT_OIDS else "T" for d in cur.description)
    rows = [[fmt(v) for v in row] for row in cur.fetchall()]
    return ("ok", types, rows)


SORT_MODES = ("nosort", "rowsort", "valuesort")


def escape(msg):
    """Regex-escape a message, touching only characters that are special in
    both Python's and Rust's regex syntax."""
    return re.sub(r"([\\.+*?()|\[\]{}^$])", r"\\\1", msg)


def process_file(path, base_dsn, write, dbno):
    records, trailing = parse(path)
    dbname = f"slt_{dbno}"
    admin = psycopg2.connect(base_dsn, options=SESSION_OPTS)
    admin.autocommit = True
    acur = admin.cursor()
    acur.execute(f"DROP DATABASE IF EXISTS {dbname}")
    acur.execute(f"CREATE DATABASE {dbname}")
    conn = psycopg2.connect(base_dsn, dbname=dbname, options=SESSION_OPTS)
    conn.autocommit = True
    raw_typecasters(conn)
    cur = conn.cursor()
    failures = []
    out = []
    counts = {"statement": 0, "query": 0}
    hash_threshold = 0
    for rec in records:
        if rec.kind == "hash-threshold":
            hash_threshold = int(rec.header[0])
            out.extend(rec.comments)
            out.append(f"hash-threshold {hash_threshold}")
            out.append("")
            continue
        counts[rec.kind] += 1
        res = run(cur, rec.sql)
        where = f"{path}: `{rec.sql_lines[0]}`"
        out.extend(rec.comments)
        if (rec.kind == "statement" and rec.header == ["ok"] and res[0] == "error"
                and res[1].startswith("unrecognized configuration parameter")
                and re.match(r"\s*(SET|RESET)\s", rec.sql, re.I)):
            res = ("ok", "", [])  # a BeeDB setting
        if rec.header and rec.header[0] == "error":
            regex = " ".join(rec.header[1:])
            if res[0] != "error":
                failures.append(f"{where}: expected error /{regex}/, but it succeeded")
            elif regex and not re.search(regex, res[1]):
                failures.append(f"{where}: error /{regex}/ does not match: {res[1]}")
            elif not regex:
                if write:
                    regex = escape(res[1])
                else:
                    failures.append(f"{where}: error record without regex")
            out.append(f"{rec.kind} error {regex}".rstrip())
            out.extend(rec.sql_lines)
        elif rec.kind == "statement":
            if rec.header != ["ok"]:
                failures.append(f"{where}: unsupported header {rec.header}")
            if res[0] == "error":
                failures.append(f"{where}: expected ok, got error: {res[1]}")
            out.append("statement ok")
            out.extend(rec.sql_lines)
        else:
            hdr = list(rec.header)
            types = None
            if hdr and hdr[0] not in SORT_MODES:
                types = hdr.pop(0)
            sort = hdr[0] if hdr else None
            if res[0] == "error":
                failures.append(f"{where}: expected rows, got error: {res[1]}")
                out.append(" ".join(["query"] + rec.header))
                out.extend(rec.sql_lines)
                if rec.result_lines is not None:
                    out.append("----")
                    out.extend(rec.result_lines)
            else:
                _, atypes, rows = res
                if sort == "rowsort":
                    rows = sorted(rows)
                elif sort == "valuesort":
                    rows = sorted([v] for r in rows for v in r)
                got = [" ".join(r) for r in rows]
                nvalues = sum(len(r) for r in rows)
                if hash_threshold and nvalues > hash_threshold:
                    h = hashlib.md5()
                    for r in rows:
                        for v in r:
                            h.update(v.encode() + b"\n")
                    got = [f"{nvalues} values hashing to {h.hexdigest()}"]
                if not write:
                    if types != atypes:
                        failures.append(f"{where}: types {types} but PostgreSQL gives {atypes}")
                    norm = lambda s: " ".join(s.split())
                    exp = [norm(x) for x in (rec.result_lines or [])]
                    if exp != [norm(x) for x in got]:
                        failures.append(f"{where}: results differ\n  expected: {rec.result_lines}\n  actual:   {got}")
                elif types is not None and types != atypes:
                    failures.append(f"{where}: types {types} but PostgreSQL gives {atypes}")
                out.append(" ".join(["query", atypes] + ([sort] if sort else [])))
                out.extend(rec.sql_lines)
                out.append("----")
                out.extend(got)
        out.append("")
    # drop the blank we add after the final record if the file's trailing lines handle it
    out.extend(trailing)
    while out and out[-1] == "":
        out.pop()
    conn.close()
    acur.execute(f"DROP DATABASE IF EXISTS {dbname}")
    admin.close()
    if write and not failures:
        # records are separated by exactly one blank line; comments keep their own blanks
        text = "\n".join(out) + "\n"
        text = re.sub(r"\n\n\n+", "\n\n", text)
        open(path, "w", encoding="utf-8").write(text)
    return failures, counts


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--write", action="store_true", help="rewrite the files with PostgreSQL's results")
    ap.add_argument("--dsn", default="host=/tmp/pgslt-sock port=55432 user=postgres dbname=postgres")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    total_fail = 0
    total = 0
    for n, path in enumerate(args.files):
        failures, counts = process_file(path, args.dsn, args.write, n)
        c = counts["statement"] + counts["query"]
        total += c
        status = "ok" if not failures else f"{len(failures)} FAILED"
        print(f"{path}: {c} records ({counts['statement']} statement, {counts['query']} query): {status}")
        for f in failures:
            print("   ", f)
        total_fail += len(failures)
    print(f"total: {total} records, {total_fail} failures")
    sys.exit(1 if total_fail else 0)


if __name__ == "__main__":
    main()
