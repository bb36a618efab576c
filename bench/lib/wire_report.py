#!/usr/bin/env python3
"""The tables of bench/write-amplification, from the relay's summaries.

    wire_report.py WORK NEW PER OUT CASE…

Reads WORK/<case>.json (bench/lib/wire_relay.py's summary) for each case.
The counted window: for update cases, between the marks "before" and
"after" (the counted message; "started" to "first" is the first message,
shown in the details); otherwise everything the relay saw. Records: PER
for update cases, NEW otherwise. With both "secure" and "catchup", a row
"catchup − secure" gives what the import cost beside secure-zone, signer's
extra work included. Prints the details and one summary table (markdown)
on stdout; writes every figure as JSON to OUT.
"""

import json
import sys

COUNTED = ("commands", "written", "read")


def flat(by):
    """{(program, collection, command): {field: n}} of a relay summary."""
    return {(p, c, k): row for p, cs in by.items() for c, ks in cs.items() for k, row in ks.items()}


def minus(a, b):
    out = {}
    for key in set(a) | set(b):
        ra, rb = a.get(key, {}), b.get(key, {})
        row = {f: ra.get(f, 0) - rb.get(f, 0) for f in set(ra) | set(rb)}
        if any(row.values()):
            out[key] = row
    return out


def window(case, work):
    with open(f"{work}/{case}.json") as f:
        s = json.load(f)
    if case.startswith("update"):
        m = s["marks"]
        return minus(flat(m["after"]), flat(m["before"])), minus(flat(m["first"]), flat(m["started"]))
    return flat(s["counts"]), None


def total(rows, field, coll=None, kind=None):
    return sum(r.get(field, 0) for (_, c, k), r in rows.items()
               if (coll is None or c == coll) and (kind is None or k == kind))


def details(title, rows):
    print(f"\n{title}\n")
    print("| program | collection | command | commands | written | read |")
    print("|---|---|---|---|---|---|")
    for (p, c, k), r in sorted(rows.items()):
        if any(r.get(f, 0) for f in COUNTED):
            print(f"| {p} | {c} | {k} | {r['commands']:,} | {r['written']:,} | {r['read']:,} |")


def written(rows, coll, kind):
    return total(rows, "written", coll, kind)


def main():
    work, new, per, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    cases = sys.argv[5:]
    windows, figures = {}, {}
    for case in cases:
        try:
            windows[case], first = window(case, work)
        except (OSError, KeyError, ValueError) as e:
            print(f"{case}: no summary ({e})", file=sys.stderr)
            continue
        details(f"### {case}: the counted window", windows[case])
        if first is not None:
            details(f"### {case}: the first message (the server reading the chain meanwhile)", first)
    if "secure" in windows and "catchup" in windows:
        windows["catchup − secure"] = minus(windows["catchup"], windows["secure"])
    per_record, books = [], []
    for case, rows in windows.items():
        records = 1 if case == "secure" else per if case.startswith("update") else new
        fig = {f: total(rows, f) for f in COUNTED}
        fig.update(nodes_written=total(rows, "written", "nodes"), read_by_id=total(rows, "read", kind="find _id"))
        figures[case] = {"records": records, "totals": fig,
                         "rows": [{"program": p, "collection": c, "command": k, **r}
                                  for (p, c, k), r in sorted(rows.items())]}
        label = "secure (whole run)" if case == "secure" else case
        w, r = fig["written"], fig["read"]
        per_record.append(f"| {label} | {records:,} | {w / records:.3f} ({fig['nodes_written'] / records:.3f} + "
                          f"{(w - fig['nodes_written']) / records:.3f}) | {r / records:.3f} "
                          f"({fig['read_by_id'] / records:.3f} + {(r - fig['read_by_id']) / records:.3f}) "
                          f"| {fig['commands'] / records:.3f} |")
        books.append(f"| {label} | {written(rows, 'changes', 'insert')} | {written(rows, 'journal', 'insert')} "
                     f"| {written(rows, 'zones', 'update')} | {written(rows, 'locks', 'insert')} "
                     f"| {written(rows, 'meta', 'findAndModify')} | {written(rows, 'progress', 'update')} "
                     f"| {total(rows, 'commands', '-')} |")
    print("\nPer record: documents written (nodes + the rest), read (by `_id` + by other queries), commands\n")
    print("| case | records | written / record | read / record | commands / record |")
    print("|---|---|---|---|---|")
    print("\n".join(per_record))
    print("\nBookkeeping, whole window: change records, journal entries, zone-document updates, locks "
          "taken (inserts), meta.seq increments, progress reports, commands on no collection (hello, …)\n")
    print("| case | changes | journal | zone updates | locks | seq | progress | no collection |")
    print("|---|---|---|---|---|---|---|---|")
    print("\n".join(books))
    with open(out, "w") as f:
        json.dump(figures, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
