#!/usr/bin/env python3
"""Rewrites the expected output of failing EXPLAIN records from beedb-slt's answers.

When EXPLAIN's layout changes, every plan golden in the slt files changes with it.
This runs `beedb-slt --project -v` on the files given (with the `--setting`s given,
e.g. `bees=off`), reads its failures, and for each `query` record whose SQL starts
with EXPLAIN and whose result differs, writes BeeDB's actual lines in place of the
expected ones. Other failures are listed and left alone. Review the diff by eye
(`git diff`): the tool makes the files agree with the engine, right or wrong.

    python3 sql/tests/slt/tools/rewrite_explain.py [--slt PATH] [--setting N=V]... FILE.slt...
"""

import argparse
import re
import subprocess
import sys


def failures(output):
    """Yields (path, line, sql, actual_lines or None) for each failure in -v output."""
    blocks = re.split(r"^FAIL ", output, flags=re.M)[1:]
    for block in blocks:
        head, _, body = block.partition("\n")
        m = re.match(r"(.*):(\d+)$", head.strip())
        if not m:
            continue
        path, line = m.group(1), int(m.group(2))
        lines = body.split("\n")
        if not lines or not lines[0].startswith("query result mismatch"):
            yield path, line, body.strip().split("\n")[0], None
            continue
        sql, diff, in_sql, in_diff = [], [], False, False
        for l in lines[1:]:
            if l.startswith("[SQL] "):
                in_sql = True
                sql.append(l[6:])
            elif l.startswith("[Diff] "):
                in_sql, in_diff = False, True
            elif in_sql:
                sql.append(l)
            elif in_diff:
                if l == "" or not (l.startswith("+   ") or l.startswith("-   ") or l.startswith("    ")):
                    break
                diff.append(l)
        actual = [l[4:] for l in diff if not l.startswith("-   ")]
        yield path, line, "\n".join(sql), actual


def rewrite(path, fixes):
    """Replaces the expected block of the record at each line in `fixes`."""
    with open(path) as f:
        lines = f.read().split("\n")
    # Later records first, so earlier line numbers stay valid.
    for line, actual in sorted(fixes.items(), reverse=True):
        i = line - 1
        if not lines[i].startswith("query"):
            print(f"{path}:{line}: not a query record, left alone", file=sys.stderr)
            continue
        j = i
        while j < len(lines) and lines[j] != "----":
            j += 1
        k = j + 1
        while k < len(lines) and lines[k].strip() != "":
            k += 1
        lines[j + 1 : k] = actual
    with open(path, "w") as f:
        f.write("\n".join(lines))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--slt", default="./target/release/beedb-slt")
    ap.add_argument("--setting", action="append", default=[])
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    cmd = [a.slt, "--project", "-v"]
    for s in a.setting:
        cmd += ["--setting", s]
    out = subprocess.run(cmd + a.files, capture_output=True, text=True).stdout
    fixes, others = {}, []
    for path, line, sql, actual in failures(out):
        if actual is not None and sql.lstrip().upper().startswith("EXPLAIN"):
            fixes.setdefault(path, {})[line] = actual
        else:
            others.append(f"{path}:{line}: {sql.splitlines()[0] if sql else ''}")
    for path, f in fixes.items():
        rewrite(path, f)
        print(f"{path}: {len(f)} EXPLAIN records rewritten")
    for o in others:
        print(f"left alone: {o}")
    print(out.strip().split("\n")[-1])


if __name__ == "__main__":
    main()
