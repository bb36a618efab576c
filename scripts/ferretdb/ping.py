#!/usr/bin/env python3
"""Tiny MongoDB wire-protocol client (OP_MSG + minimal BSON), stdlib only.

Used by scripts/dev-mongo so that no MongoDB shell or driver is needed:

  ping.py URI ping                  exit 0 if {ping: 1} answers ok
  ping.py URI server-kind           print "ferretdb" or "mongodb"
  ping.py URI id-probe DB COLL ID   insert {_id: ID} (if missing), find it back
                                    by _id, run explain on that find and print
                                    the explain output as JSON
  ping.py URI drop-db DB            drop database DB

URI: mongodb://host[:port][,...][/db][?opts]. Only the first host is used.
No authentication and no SRV; tls=true/ssl=true is honoured (and
tlsInsecure=true / tlsAllowInvalidCertificates=true). Good enough for a
local dev database; use mongosh or a driver for anything else.
"""

import json
import socket
import ssl
import struct
import sys
import urllib.parse

# ---------------------------------------------------------------- BSON


def _cstr(s):
    b = s.encode()
    if b"\0" in b:
        raise ValueError("NUL in key")
    return b + b"\0"


def enc_doc(d):
    out = bytearray()
    for k, v in d.items():
        k = _cstr(str(k))
        if isinstance(v, bool):
            out += b"\x08" + k + (b"\x01" if v else b"\x00")
        elif isinstance(v, int):
            if -(2**31) <= v < 2**31:
                out += b"\x10" + k + struct.pack("<i", v)
            else:
                out += b"\x12" + k + struct.pack("<q", v)
        elif isinstance(v, float):
            out += b"\x01" + k + struct.pack("<d", v)
        elif isinstance(v, str):
            b = v.encode()
            out += b"\x02" + k + struct.pack("<i", len(b) + 1) + b + b"\0"
        elif isinstance(v, dict) and list(v) == ["$oid"]:  # ObjectId, as dec_doc returns it
            out += b"\x07" + k + bytes.fromhex(v["$oid"])
        elif isinstance(v, dict):
            out += b"\x03" + k + enc_doc(v)
        elif isinstance(v, (list, tuple)):
            out += b"\x04" + k + enc_doc({str(i): x for i, x in enumerate(v)})
        elif v is None:
            out += b"\x0a" + k
        else:
            raise TypeError("cannot encode %r" % type(v))
    return struct.pack("<i", len(out) + 5) + bytes(out) + b"\0"


def dec_doc(b, i=0, array=False):
    end = i + struct.unpack_from("<i", b, i)[0] - 1
    i += 4
    out = {}
    while i < end:
        t = b[i]
        j = b.index(b"\0", i + 1)
        k = b[i + 1 : j].decode()
        i = j + 1
        if t == 0x01:
            v = struct.unpack_from("<d", b, i)[0]; i += 8
        elif t in (0x02, 0x0D, 0x0E):  # string, js code, symbol
            n = struct.unpack_from("<i", b, i)[0]
            v = b[i + 4 : i + 3 + n].decode(errors="replace"); i += 4 + n
        elif t in (0x03, 0x04):
            v, i = dec_doc(b, i, array=(t == 0x04))
        elif t == 0x05:
            n = struct.unpack_from("<i", b, i)[0]
            v = {"$binary": b[i + 5 : i + 5 + n].hex()}; i += 5 + n
        elif t == 0x07:
            v = {"$oid": b[i : i + 12].hex()}; i += 12
        elif t == 0x08:
            v = b[i] == 1; i += 1
        elif t == 0x09:
            v = {"$date": struct.unpack_from("<q", b, i)[0]}; i += 8
        elif t in (0x0A, 0x06, 0xFF, 0x7F):  # null, undefined, min/max key
            v = None
        elif t == 0x0B:
            j = b.index(b"\0", i); k2 = b.index(b"\0", j + 1)
            v = {"$regex": b[i:j].decode(), "$options": b[j + 1 : k2].decode()}; i = k2 + 1
        elif t == 0x10:
            v = struct.unpack_from("<i", b, i)[0]; i += 4
        elif t in (0x11, 0x12):  # timestamp, int64
            v = struct.unpack_from("<q", b, i)[0]; i += 8
        elif t == 0x13:
            v = {"$numberDecimal": b[i : i + 16].hex()}; i += 16
        else:
            raise ValueError("unsupported BSON type 0x%02x" % t)
        out[k] = v
    res = list(out.values()) if array else out
    return res, end + 1


# ---------------------------------------------------------------- OP_MSG


class Conn:
    def __init__(self, uri, timeout=5.0):
        u = urllib.parse.urlsplit(uri)
        if u.scheme != "mongodb":
            raise SystemExit("ping.py: only mongodb:// URIs are supported (got %s://)" % u.scheme)
        hostport = u.netloc.rsplit("@", 1)[-1].split(",")[0]
        if hostport.startswith("["):
            host, _, rest = hostport[1:].partition("]")
            port = int(rest[1:] or 27017)
        else:
            host, _, port = hostport.partition(":")
            port = int(port or 27017)
        q = {k.lower(): v for k, v in urllib.parse.parse_qsl(u.query)}
        self.sock = socket.create_connection((host, port), timeout=timeout)
        if q.get("tls", q.get("ssl", "false")).lower() == "true":
            ctx = ssl.create_default_context()
            if "true" in (q.get("tlsinsecure"), q.get("tlsallowinvalidcertificates")):
                ctx.check_hostname = False
                ctx.verify_mode = ssl.CERT_NONE
            self.sock = ctx.wrap_socket(self.sock, server_hostname=host)
        self.req = 0

    def _recv(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("connection closed by server")
            buf += chunk
        return buf

    def cmd(self, db, doc, check=True):
        self.req += 1
        body = struct.pack("<I", 0) + b"\x00" + enc_doc(dict(doc, **{"$db": db}))
        self.sock.sendall(struct.pack("<iiii", 16 + len(body), self.req, 0, 2013) + body)
        length, _, _, opcode = struct.unpack("<iiii", self._recv(16))
        payload = self._recv(length - 16)
        if opcode != 2013 or payload[4] != 0:
            raise ValueError("unexpected reply (opcode %d)" % opcode)
        res, _ = dec_doc(payload, 5)
        if check and res.get("ok") != 1 and res.get("ok") != 1.0:
            raise RuntimeError("command %s failed: %s" % (next(iter(doc)), json.dumps(res)))
        return res


# ---------------------------------------------------------------- commands


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    uri, what = argv[1], argv[2]
    try:
        c = Conn(uri)
    except OSError as e:
        print("ping.py: cannot connect: %s" % e, file=sys.stderr)
        return 1
    if what == "ping":
        try:
            c.cmd("admin", {"ping": 1})
        except Exception as e:  # noqa: BLE001 - any failure means "not answering"
            print("ping.py: ping failed: %s" % e, file=sys.stderr)
            return 1
        return 0
    if what == "server-kind":
        info = c.cmd("admin", {"buildInfo": 1})
        print("ferretdb" if "ferretdbVersion" in info else "mongodb")
        return 0
    if what == "id-probe":
        db, coll, _id = argv[3], argv[4], argv[5]
        res = c.cmd(db, {"insert": coll, "documents": [{"_id": _id, "probe": "mongodns dev-mongo check-index"}]})
        errs = [e for e in res.get("writeErrors", []) if e.get("code") != 11000]  # dup key: already there
        if errs:
            raise RuntimeError("insert failed: %s" % json.dumps(errs))
        found = c.cmd(db, {"find": coll, "filter": {"_id": _id}})["cursor"]["firstBatch"]
        if len(found) != 1 or found[0].get("_id") != _id:
            raise RuntimeError("find {_id: %r} returned %s" % (_id, json.dumps(found)))
        exp = c.cmd(db, {"explain": {"find": coll, "filter": {"_id": _id}}, "verbosity": "queryPlanner"})
        print(json.dumps(exp, indent=2, sort_keys=True))
        return 0
    if what == "drop-db":
        c.cmd(argv[3], {"dropDatabase": 1})
        return 0
    print("ping.py: unknown command %r" % what, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
