#!/usr/bin/env python3
"""EXPLAIN QUERY PLAN for FerretDB's `_id` lookup, straight on the SQLite file.

  explain_sqlite.py SQLITE_FILE COLLECTION

Looks the collection's table up in FerretDB's `_ferretdb_collections`
metadata table, prints the table's indexes, then plans
  - the query the patched FerretDB emits:   ... WHERE _ferretdb_sjson->'_id' = ?
  - the one stock FerretDB v1.24 emits:     ... WHERE _ferretdb_sjson->'$._id' = ?
Exit status 0 only if the patched form uses an index; the stock form is
shown for the record (it is expected to SCAN).

Needs SQLite >= 3.38 for the -> operator: uses Python's sqlite3 module when
it is new enough, else the sqlite3 CLI.
"""

import os
import shutil
import subprocess
import sys

COLUMN = "_ferretdb_sjson"
PATCHED = COLUMN + "->'_id'"
STOCK = COLUMN + "->'$._id'"


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    path, coll = sys.argv[1], sys.argv[2]

    import sqlite3

    if not os.path.isfile(path):
        sys.exit("explain_sqlite.py: no such file: %s" % path)

    if sqlite3.sqlite_version_info >= (3, 38, 0):
        con = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
        engine = "python sqlite3 module, SQLite %s" % sqlite3.sqlite_version

        def query(sql, args=()):
            return [tuple(r) for r in con.execute(sql, args)]
    else:
        cli = shutil.which("sqlite3")
        if not cli:
            sys.exit(
                "explain_sqlite.py: Python's SQLite is %s (< 3.38, no -> operator) and there is "
                "no sqlite3 CLI; install one: apt-get install -y sqlite3" % sqlite3.sqlite_version
            )
        ver = subprocess.run([cli, "--version"], capture_output=True, text=True).stdout.split()[0]
        engine = "sqlite3 CLI, SQLite %s" % ver

        def query(sql, args=()):
            for a in args:  # CLI has no bind parameters; only our own literals get here
                sql = sql.replace("?", "'%s'" % a.replace("'", "''"), 1)
            p = subprocess.run([cli, "-readonly", "-separator", "\x1f", path, sql], capture_output=True, text=True)
            if p.returncode != 0:
                sys.exit("explain_sqlite.py: sqlite3 failed on %s: %s" % (path, p.stderr.strip()))
            return [tuple(line.split("\x1f")) for line in p.stdout.splitlines() if line]

    rows = query("SELECT table_name FROM _ferretdb_collections WHERE name = ?", (coll,))
    if not rows:
        sys.exit("explain_sqlite.py: collection %r not found in %s" % (coll, path))
    table = rows[0][0]

    print("SQLite file: %s  (%s)" % (path, engine))
    print("collection %r -> table %r; indexes:" % (coll, table))
    for (sql,) in query("SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ?", (table,)):
        print("  " + str(sql))

    def plan(expr):
        # Same shape as FerretDB's collection.Query (prepareSelectClause + whereClause).
        sql = 'SELECT %s FROM "%s" WHERE %s = ?' % (COLUMN, table, expr)
        rows = query("EXPLAIN QUERY PLAN " + sql, ('"probe"',))
        print()
        print("EXPLAIN QUERY PLAN " + sql)
        for r in rows:
            print("  " + str(r[-1]))
        return " ".join(str(r[-1]) for r in rows)

    patched = plan(PATCHED)
    plan(STOCK)
    print()
    if "USING INDEX" in patched or "USING COVERING INDEX" in patched or "USING PRIMARY KEY" in patched:
        print("OK: the patched _id lookup (%s) uses the _id index" % PATCHED)
        return 0
    print("FAIL: the patched _id lookup (%s) does not use an index: %s" % (PATCHED, patched))
    return 1


if __name__ == "__main__":
    sys.exit(main())
