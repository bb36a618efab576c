#!/usr/bin/env python3
"""A counting relay for the MongoDB wire protocol (standard library only).

    wire_relay.py --target HOST:PORT --listen LABEL=PORT [--listen LABEL=PORT …]
                  [--control PORT] [--out FILE]

Accepts connections on each 127.0.0.1 LISTEN port and links each one to a
new connection to TARGET. Every byte goes through unchanged, both ways; a
copy of each message is parsed on the side, and counted per listen label
(one per program pointed at the relay), per collection and per command:

    commands   requests sent (OP_MSG, and OP_QUERY where a driver's handshake
               still uses it)
    written    documents a request asks to write: the entries of `documents`
               (insert), `updates` (update) and `deletes` (delete), in the
               body or in kind-1 document sequences; 1 for findAndModify
    read       documents a reply returns: cursor.firstBatch / nextBatch,
               findAndModify's `value` when not null, an OP_REPLY's documents
               for a query that is not a command
    n, modified, upserted, write_errors, failed
               from the replies: `n`, `nModified`, `upserted`, `writeErrors`,
               and replies with ok: 0
    req_bytes, reply_bytes
               whole messages, headers included

A find whose filter is on `_id` alone (a value or an operator such as $in)
is counted as "find _id", apart from other finds.

The collection is the command's first value when it is a string (insert,
update, delete, find, aggregate, findAndModify, count, distinct,
createIndexes, …), `collection` for getMore, "-" otherwise (hello, ping,
endSessions, …). A reply is matched to its request by responseTo.

Control (HTTP on 127.0.0.1:CONTROL):
    GET /counts        the counts so far, as JSON
    GET /mark/NAME     the counts so far, kept in the summary under NAME
The summary — {"counts": …, "marks": {NAME: …}} — is written to FILE (or
stdout) on SIGTERM or SIGINT, and the relay exits.
"""

import argparse
import asyncio
import json
import signal
import struct
import sys

OP_REPLY, OP_QUERY, OP_COMPRESSED, OP_MSG = 1, 2004, 2012, 2013
FIELDS = ("commands", "written", "read", "n", "modified", "upserted",
          "write_errors", "failed", "req_bytes", "reply_bytes")
# BSON element sizes that do not depend on the value.
FIXED = {0x01: 8, 0x06: 0, 0x07: 12, 0x08: 1, 0x09: 8, 0x0A: 0, 0x10: 4,
         0x11: 8, 0x12: 8, 0x13: 16, 0x7F: 0, 0xFF: 0}
WRITE_ARRAYS = {"insert": "documents", "update": "updates", "delete": "deletes"}


# ------------------------------------------------------------------ BSON


def elements(buf, at):
    """(type, key, start, end) of each element of the document at `at`."""
    end = at + struct.unpack_from("<i", buf, at)[0] - 1
    i = at + 4
    while i < end:
        t = buf[i]
        k = buf.index(b"\0", i + 1)
        key = buf[i + 1:k].decode("utf-8", "replace")
        v = k + 1
        if t in FIXED:
            size = FIXED[t]
        elif t in (0x02, 0x0D, 0x0E):
            size = 4 + struct.unpack_from("<i", buf, v)[0]
        elif t in (0x03, 0x04, 0x0F):
            size = struct.unpack_from("<i", buf, v)[0]
        elif t == 0x05:
            size = 5 + struct.unpack_from("<i", buf, v)[0]
        elif t == 0x0B:
            size = buf.index(b"\0", buf.index(b"\0", v) + 1) + 1 - v
        elif t == 0x0C:
            size = 4 + struct.unpack_from("<i", buf, v)[0] + 12
        else:
            raise ValueError("BSON type 0x%02x" % t)
        yield t, key, v, v + size
        i = v + size


def fields(buf, at):
    """The top-level elements of a document: {key: (type, start, end)}."""
    return {key: (t, s, e) for t, key, s, e in elements(buf, at)}


def string(buf, el):
    t, s, e = el
    return buf[s + 4:e - 1].decode("utf-8", "replace") if t == 0x02 else None


def number(buf, el):
    t, s, _ = el
    if t == 0x10:
        return struct.unpack_from("<i", buf, s)[0]
    if t == 0x12:
        return struct.unpack_from("<q", buf, s)[0]
    if t == 0x01:
        return int(struct.unpack_from("<d", buf, s)[0])
    return 0


def length(buf, el):
    """Entries of an array element (0 for anything else)."""
    t, s, _ = el
    return sum(1 for _ in elements(buf, s)) if t == 0x04 else 0


# ------------------------------------------------------------- messages


def op_msg(buf):
    """The body document's offset and the kind-1 sequences' lengths."""
    flags = struct.unpack_from("<I", buf, 16)[0]
    end = len(buf) - (4 if flags & 1 else 0)
    i, body, seqs = 20, None, {}
    while i < end:
        kind = buf[i]
        if kind == 0:
            body = i + 1
            i += 1 + struct.unpack_from("<i", buf, i + 1)[0]
        elif kind == 1:
            size = struct.unpack_from("<i", buf, i + 1)[0]
            k = buf.index(b"\0", i + 5)
            ident = buf[i + 5:k].decode()
            j, n = k + 1, 0
            while j < i + 1 + size:
                j += struct.unpack_from("<i", buf, j)[0]
                n += 1
            seqs[ident] = seqs.get(ident, 0) + n
            i += 1 + size
        else:
            raise ValueError("OP_MSG section kind %d" % kind)
    return flags, body, seqs


def request(buf, at, seqs):
    """(collection, command, documents written) of a command document."""
    f = fields(buf, at)
    if "$query" in f and f["$query"][0] == 0x03:      # legacy wrapped command
        return request(buf, f["$query"][1], seqs)
    if not f:
        return "-", "?", 0
    kind = next(iter(f))
    coll = string(buf, f[kind]) or "-"
    if kind == "getMore" and "collection" in f:
        coll = string(buf, f["collection"]) or "-"
    written = 0
    if kind in WRITE_ARRAYS:
        name = WRITE_ARRAYS[kind]
        written = seqs.get(name, 0) + (length(buf, f[name]) if name in f else 0)
    elif kind.lower() == "findandmodify":
        kind, written = "findAndModify", 1
    elif kind == "find" and "filter" in f and f["filter"][0] == 0x03:
        if [key for _, key, _, _ in elements(buf, f["filter"][1])] == ["_id"]:
            kind = "find _id"
    return coll, kind, written


def reply(buf, at):
    """Counts taken from a reply document."""
    f = fields(buf, at)
    out = {"read": 0, "n": 0, "modified": 0, "upserted": 0, "write_errors": 0, "failed": 0}
    if "ok" in f and number(buf, f["ok"]) != 1:
        out["failed"] = 1
    if "cursor" in f and f["cursor"][0] == 0x03:
        c = fields(buf, f["cursor"][1])
        for batch in ("firstBatch", "nextBatch"):
            if batch in c:
                out["read"] += length(buf, c[batch])
    if "value" in f and f["value"][0] == 0x03:
        out["read"] += 1
    if "n" in f:
        out["n"] = number(buf, f["n"])
    if "nModified" in f:
        out["modified"] = number(buf, f["nModified"])
    if "upserted" in f:
        out["upserted"] = length(buf, f["upserted"])
    if "writeErrors" in f:
        out["write_errors"] = length(buf, f["writeErrors"])
    return out


# ---------------------------------------------------------------- relay


class Counts:
    def __init__(self):
        self.by = {}      # label -> collection -> command -> {field: int}
        self.marks = {}

    def add(self, label, coll, kind, **values):
        row = self.by.setdefault(label, {}).setdefault(coll, {}).setdefault(
            kind, dict.fromkeys(FIELDS, 0))
        for k, v in values.items():
            row[k] += v

    def snapshot(self):
        return json.loads(json.dumps(self.by))


class Link:
    """One client connection: its requests waiting for replies."""

    def __init__(self, counts, label):
        self.counts, self.label = counts, label
        self.pending = {}   # requestID -> (collection, command, OP_QUERY on a non-command?)

    def from_client(self, msg):
        req_id, opcode = struct.unpack_from("<i", msg, 4)[0], struct.unpack_from("<i", msg, 12)[0]
        legacy = False
        if opcode == OP_MSG:
            _, body, seqs = op_msg(msg)
            coll, kind, written = request(msg, body, seqs) if body else ("-", "?", 0)
        elif opcode == OP_QUERY:
            k = msg.index(b"\0", 20)
            full = msg[20:k].decode("utf-8", "replace")
            if full.endswith(".$cmd"):
                coll, kind, written = request(msg, k + 9, {})
            else:
                coll, kind, written, legacy = full.split(".", 1)[-1], "query", 0, True
        else:
            coll, kind, written = "-", "opcode-%d" % opcode, 0
        self.counts.add(self.label, coll, kind, commands=1, written=written, req_bytes=len(msg))
        self.pending[req_id] = (coll, kind, legacy)

    def from_database(self, msg):
        resp_to, opcode = struct.unpack_from("<i", msg, 8)[0], struct.unpack_from("<i", msg, 12)[0]
        more = False
        coll, kind, legacy = self.pending.get(resp_to, ("-", "?", False))
        got = {}
        if opcode == OP_MSG:
            flags, body, _ = op_msg(msg)
            more = bool(flags & 2)            # moreToCome: another reply follows
            if body:
                got = reply(msg, body)
        elif opcode == OP_REPLY:
            returned = struct.unpack_from("<i", msg, 32)[0]
            if legacy:
                got = {"read": returned}
            elif returned:
                got = reply(msg, 36)
        if not more:
            self.pending.pop(resp_to, None)
        self.counts.add(self.label, coll, kind, reply_bytes=len(msg), **got)


async def pump(reader, writer, seen):
    """Copies reader to writer unchanged; hands each whole message to `seen`."""
    buf = bytearray()
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            writer.write(data)
            buf += data
            while len(buf) >= 16:
                size = struct.unpack_from("<i", buf, 0)[0]
                if size < 16 or len(buf) < size:
                    break
                msg = bytes(buf[:size])
                del buf[:size]
                try:
                    seen(msg)
                except Exception as e:  # noqa: BLE001 - counting never stops the bytes
                    print("wire_relay: a message not understood (%r), passed on" % e, file=sys.stderr)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        try:
            writer.close()
        except (ConnectionError, OSError):
            pass


async def serve(args, counts):
    host, port = args.target.rsplit(":", 1)

    def accept(label):
        async def linked(c_reader, c_writer):
            try:
                d_reader, d_writer = await asyncio.open_connection(host, int(port))
            except OSError:
                c_writer.close()
                return
            link = Link(counts, label)
            await asyncio.gather(pump(c_reader, d_writer, link.from_client),
                                 pump(d_reader, c_writer, link.from_database))
        return linked

    servers = []
    for spec in args.listen:
        label, lport = spec.split("=", 1)
        servers.append(await asyncio.start_server(accept(label), "127.0.0.1", int(lport)))

    async def control(reader, writer):
        line = (await reader.readline()).decode("latin-1").split()
        while (await reader.readline()) not in (b"\r\n", b"\n", b""):
            pass
        path = line[1] if len(line) > 1 else "/"
        status, body = "200 OK", None
        if path == "/counts":
            body = counts.snapshot()
        elif path.startswith("/mark/") and len(path) > 6:
            body = counts.marks[path[6:]] = counts.snapshot()
        else:
            status, body = "404 Not Found", {"error": "GET /counts or /mark/NAME"}
        data = json.dumps(body).encode()
        writer.write(b"HTTP/1.0 %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                     % (status.encode(), len(data)) + data)
        await writer.drain()
        writer.close()

    if args.control:
        servers.append(await asyncio.start_server(control, "127.0.0.1", args.control))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    print("wire_relay: listening (%s), to %s" % (", ".join(args.listen), args.target), file=sys.stderr)
    await stop.wait()
    for s in servers:
        s.close()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--target", required=True, help="the database, HOST:PORT")
    p.add_argument("--listen", action="append", required=True, help="LABEL=PORT (127.0.0.1)")
    p.add_argument("--control", type=int, default=0, help="HTTP control port (127.0.0.1)")
    p.add_argument("--out", help="where the summary goes (default stdout)")
    args = p.parse_args()
    counts = Counts()
    asyncio.run(serve(args, counts))
    summary = json.dumps({"counts": counts.by, "marks": counts.marks}, indent=1, sort_keys=True)
    if args.out:
        with open(args.out, "w") as f:
            f.write(summary + "\n")
    else:
        print(summary)


if __name__ == "__main__":
    main()
