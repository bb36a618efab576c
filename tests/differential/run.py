#!/usr/bin/env python3
"""Differential test: mongodns-server against Knot DNS and NSD on the same zones.

    zones (tests/zones/*.zone + a generated zone)
      ├─► nsd    (temp dir, high port)      ┐
      ├─► knotd  (temp dir, high port; a    │
      │   zone's `; nsd-only` lines, types  │
      │   Knot does not read, as NSD reads  │
      │   them, in RFC 3597 form)           ├─ AXFR from Knot ─► owner names
      └─► mongodns-import ─► mongodns-server┘        ─► query list (names ×
          (fresh database)                              types × EDNS × case)
    every query ─► all three servers, concurrently (UDP; TCP for TC and a sample)
    verdict per field (rcode, flags, question, answer, authority, additional,
    EDNS): Knot == NSD is the truth; mongodns must match it unless a rule in
    EXPLAINED (each listed in docs/conformance.md) allows the difference;
    Knot != NSD is reported and skipped.

Then the defaults pass (after the unsigned one; --no-defaults skips it):
    mongodns restarted at its default timeouts (the passes give it 20 s per
    uncached query, and ask a query it left unanswered once more), asked
    every UDP query of the unsigned pass once, with a stub resolver's 5-s
    timeout ─► judged against Knot's and NSD's replies of that pass.

Then the signed pass (--pass both, the default; --pass signed alone):
    zones ─► mongodns-import ─► mongodns-sign secure-zone (NSEC, NSEC3,
    opt-out, per SIGNED_ZONES) ─► mongodns-server ─► AXFR from it ─► master
    files in RFC 3597 form ─► knotd and nsd serve those very records (same
    RRSIGs) ─► queries, mostly DO=1 ─► the same verdict.

Fails when: a reference server does not start or answers too little, Knot
or NSD gives no AXFR of a zone, fewer than --min-queries queries were run,
fewer than --min-judged field comparisons were judged (Knot and NSD agreeing,
so mongodns held to it), more than --max-skipped-pct % of a field's
comparisons (or more than --max-axfr-skipped zone transfers) were skipped
because Knot and NSD disagree, or any unexplained difference is found.
Python 3 standard library only. Run it through scripts/differential.
"""

import argparse
import asyncio
import collections
import json
import os
import random
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dnswire as w  # noqa: E402
import genzone  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
ZONES_DIR = os.path.join(REPO, "tests", "zones")
GEN_ORIGIN = "gen.test."
# The defaults pass asks each query once and waits this long, as a stub
# resolver's single try does (dig: +time=5).
DEFAULT_CLIENT_TIMEOUT = 5.0

# Types asked at every name of the hand-written zones.
SMALL_TYPES = ["A", "NS", "CNAME", "SOA", "PTR", "HINFO", "MX", "TXT", "RP",
               "AAAA", "SRV", "NAPTR", "DNAME", "DS", "SSHFP", "RRSIG", "NSEC",
               "DNSKEY", "TLSA", "SPF", "CAA", "TYPE65280", "ANY", "NULL",
               "NSEC3", "HTTPS"]
# Types asked at every name in the signed pass (plus two of SMALL_TYPES).
SIGNED_TYPES = ["A", "TXT", "DS", "RRSIG", "NSEC", "NSEC3", "DNSKEY", "ANY"]
# Types asked at names of the generated zone (plus the types present there).
GEN_TYPES = ["A", "AAAA", "TXT", "MX", "NS", "CNAME", "DS", "SOA", "ANY", "SRV"]
# EDNS variants: None = no OPT; else (udp size, DO).
EDNS_CHOICES = [None, None, (1232, False), (1232, True), (4096, False),
                (4096, True), (512, False), (512, True), (1400, True)]
# The signed pass: mostly DO=1, small sizes among them to force TC.
SIGNED_EDNS_CHOICES = [None, (1232, True), (1232, True), (4096, True), (4096, True),
                       (512, True), (1400, True), (1232, False)]
# The signed pass: zone ─► `mongodns-sign secure-zone` options. diff3.test.
# is diff.test.zone again under another name, to have every case of it
# with NSEC3 as well as NSEC.
SIGNED_ZONES = {
    "diff.test.": [],
    "diff3.test.": ["--nsec3"],
    "child.diff.test.": ["--nsec3", "--salt", "aabbccdd", "--iterations", "1", "--force-iterations"],
    "other.test.": ["--nsec3", "--salt", "aabbccdd", "--iterations", "1", "--force-iterations"],
    "wildapex.test.": ["--nsec3", "--opt-out"],
    "dnapex.test.": ["--csk", "--algorithm", "ed25519"],
    "gen.test.": ["--nsec3", "--opt-out"],
}


def log(*args):
    print(*args, file=sys.stderr, flush=True)


class Fail(Exception):
    """The suite cannot give a verdict (a server did not start, …)."""


# ---------------------------------------------------------------- servers

def free_port():
    """A port free for both UDP and TCP on 127.0.0.1."""
    while True:
        t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        t.bind(("127.0.0.1", 0))
        port = t.getsockname()[1]
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            u.bind(("127.0.0.1", port))
            return port
        except OSError:
            continue
        finally:
            t.close()
            u.close()


def start_knot(tmp, zones, port):
    """knotd serving `zones` ([(origin, file)]) on `port`; returns the process."""
    d = os.path.join(tmp, "knot")
    os.makedirs(d, exist_ok=True)
    conf = [
        "server:",
        f"    rundir: {d}",
        f"    listen: 127.0.0.1@{port}",
        "    udp-workers: 1",
        "    tcp-workers: 1",
        "    background-workers: 1",
        '    version: ""',
        '    identity: ""',
        "database:",
        f"    storage: {d}",
        "log:",
        "  - target: stderr",
        "    any: error",
        "acl:",
        "  - id: xfr",
        "    address: 127.0.0.0/8",
        "    action: transfer",
        "template:",
        "  - id: default",
        f"    storage: {os.path.join(tmp, 'zones')}",
        "    semantic-checks: off",
        "    zonefile-sync: -1",
        "    journal-content: none",
        "    acl: xfr",
        "zone:",
    ]
    for origin, path in zones:
        conf += [f"  - domain: {origin}", f"    file: {path}"]
    path = os.path.join(d, "knot.conf")
    with open(path, "w") as f:
        f.write("\n".join(conf) + "\n")
    log_file = open(os.path.join(d, "knotd.log"), "w")
    return subprocess.Popen(["knotd", "-c", path], stdout=log_file, stderr=log_file)


def start_nsd(tmp, zones, port):
    """nsd serving `zones` on `port` (rate limiting off); returns the process."""
    d = os.path.join(tmp, "nsd")
    os.makedirs(d, exist_ok=True)
    conf = [
        "server:",
        f"    ip-address: 127.0.0.1@{port}",
        "    do-ip6: no",
        '    username: ""',
        '    chroot: ""',
        f"    zonesdir: {os.path.join(tmp, 'zones')}",
        f"    pidfile: {d}/nsd.pid",
        '    database: ""',
        f"    xfrdfile: {d}/xfrd.state",
        f"    zonelistfile: {d}/zone.list",
        f"    xfrdir: {d}",
        f"    logfile: {d}/nsd.log",
        "    server-count: 1",
        "    verbosity: 0",
        "    hide-version: yes",
        "    hide-identity: yes",
        "    rrl-ratelimit: 0",
        "    rrl-whitelist-ratelimit: 0",
        "    minimal-responses: yes",
        "remote-control:",
        "    control-enable: no",
    ]
    for origin, path in zones:
        conf += ["zone:", f"    name: {origin}", f"    zonefile: {path}",
                 "    provide-xfr: 127.0.0.1 NOKEY"]
    path = os.path.join(d, "nsd.conf")
    with open(path, "w") as f:
        f.write("\n".join(conf) + "\n")
    log_file = open(os.path.join(d, "nsd.stderr"), "w")
    return subprocess.Popen(["nsd", "-d", "-c", path], stdout=log_file, stderr=log_file)


def import_zones(args, tmp, zones, database):
    """Imports every zone into a fresh database with mongodns-import (from
    tmp/source in the signed pass, else tmp/zones)."""
    env = dict(os.environ, MONGODB_URI=args.mongodb_uri, MONGODNS_DATABASE=database)
    src = os.path.join(tmp, "source")
    if not os.path.isdir(src):
        src = os.path.join(tmp, "zones")
    for origin, path in zones:
        full = os.path.join(src, path)
        r = subprocess.run([args.import_bin, "--zone", origin, full],
                           env=env, capture_output=True, text=True)
        if r.returncode != 0:
            raise Fail(f"mongodns-import {origin} failed:\n{r.stderr}")


def start_mongodns(args, tmp, database, port, control=None, defaults=False):
    """mongodns-server on `port` reading `database`; returns the process.
    With --resident, every zone is held in memory and `control` serves
    /metrics (wait_resident). The main passes give uncached queries 20 s
    (a loaded machine's slow reads are not what they compare); `defaults`
    keeps the server's own timeouts."""
    log_file = open(os.path.join(tmp, "mongodns-defaults.log" if defaults else "mongodns.log"),
                    "w")
    env = dict(os.environ, MONGODB_URI=args.mongodb_uri)
    resident = []
    if args.resident:
        resident = ["--resident-mb", "512", "--control-listen", f"127.0.0.1:{control}"]
    timeouts = [] if defaults else ["--query-timeout-ms", "20000"]
    return subprocess.Popen(
        [args.server_bin, "--listen", f"127.0.0.1:{port}", "--database", database,
         "--workers", "2", "--log", "warn",
         # Transfers allowed explicitly: the suite compares every zone's AXFR.
         "--axfr-allow", "127.0.0.1/32"] + timeouts + resident,
        env=env, stdout=log_file, stderr=log_file)


def wait_resident(control, zones, deadline):
    """Waits until /metrics on `control` says every zone's resident copy is
    current (--resident: the answers then come from memory)."""
    import urllib.request
    want = [f'mongodns_resident_zone_current{{zone="{origin}"}} 1' for origin, *_ in zones]
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{control}/metrics", timeout=2) as r:
                lines = set(r.read().decode().splitlines())
            missing = [line for line in want if line not in lines]
        except OSError as e:
            missing = [str(e)]
        if not missing:
            return
        if time.time() > deadline:
            raise Fail(f"mongodns: zones not resident in time: {missing[:3]}")
        time.sleep(0.2)


def wait_ready(name, proc, port, zones, deadline):
    """Waits until the server answers every zone's SOA authoritatively."""
    pending = list(zones)
    while pending:
        if proc.poll() is not None:
            raise Fail(f"{name} exited at start with status {proc.returncode}")
        if time.time() > deadline:
            raise Fail(f"{name} did not serve {pending[0][0]} in time")
        origin = pending[0][0]
        q = w.build_query(w.parse_name_text(origin), 6, qid=77)
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.settimeout(0.3)
        try:
            s.sendto(q, ("127.0.0.1", port))
            data, _ = s.recvfrom(65535)
            m = w.parse_message(data)
            if m.rcode == 0 and m.flags & 0x0400 and m.sections[0]:
                pending.pop(0)
                continue
        except (OSError, w.WireError):
            pass
        finally:
            s.close()
        time.sleep(0.2)


# ---------------------------------------------------------------- transport

class UdpClient(asyncio.DatagramProtocol):
    """Many queries in flight on one socket, matched by ID."""

    def __init__(self):
        self.waiting = {}
        self.transport = None

    def connection_made(self, transport):
        self.transport = transport

    def datagram_received(self, data, addr):
        if len(data) >= 2:
            fut = self.waiting.get(struct.unpack("!H", data[:2])[0])
            if fut is not None and not fut.done():
                fut.set_result(data)

    def error_received(self, exc):
        pass


async def ask_all_udp(port, packets, window, timeout=8.0, tries=2):
    """Sends every packet to 127.0.0.1:port; returns replies (None = silence)."""
    loop = asyncio.get_running_loop()
    transport, proto = await loop.create_datagram_endpoint(
        UdpClient, remote_addr=("127.0.0.1", port))
    free_ids = collections.deque(random.Random(port).sample(range(65536), 65536))
    results = [None] * len(packets)
    sem = asyncio.Semaphore(window)

    async def one(i, packet):
        async with sem:
            qid = free_ids.popleft()
            data = struct.pack("!H", qid) + packet[2:]
            try:
                for _ in range(tries):
                    fut = loop.create_future()
                    proto.waiting[qid] = fut
                    transport.sendto(data)
                    try:
                        reply = await asyncio.wait_for(fut, timeout)
                        results[i] = packet[:2] + reply[2:]
                        return
                    except asyncio.TimeoutError:
                        continue
            finally:
                proto.waiting.pop(qid, None)
                free_ids.append(qid)

    await asyncio.gather(*(one(i, p) for i, p in enumerate(packets)))
    transport.close()
    return results


async def read_framed(reader, timeout):
    head = await asyncio.wait_for(reader.readexactly(2), timeout)
    return await asyncio.wait_for(reader.readexactly(struct.unpack("!H", head)[0]), timeout)


async def ask_tcp_pipelined(port, packets, timeout=5.0):
    """Sends all `packets` on one TCP connection at once; replies matched by ID."""
    out = [None] * len(packets)
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection("127.0.0.1", port), timeout)
    except (OSError, asyncio.TimeoutError):
        return out
    by_id = {}
    buf = bytearray()
    for i, p in enumerate(packets):
        qid = i + 1
        by_id[qid] = i
        data = struct.pack("!H", qid) + p[2:]
        buf += struct.pack("!H", len(data)) + data
    try:
        writer.write(bytes(buf))
        await writer.drain()
        while any(o is None for o in out):
            reply = await read_framed(reader, timeout)
            i = by_id.get(struct.unpack("!H", reply[:2])[0])
            if i is not None and out[i] is None:
                out[i] = packets[i][:2] + reply[2:]
    except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError):
        pass
    finally:
        writer.close()
    return out


def is_transfer(packet):
    """True for an AXFR or IXFR query (several messages may come back)."""
    try:
        _, off = w.read_name(packet, 12)
        return struct.unpack("!H", packet[off:off + 2])[0] in (251, 252)
    except (w.WireError, struct.error):
        return False


async def ask_all_tcp(port, packets, batch=20, connections=8):
    """Every packet over TCP, `batch` pipelined per connection; a zone
    transfer gets a connection of its own and only its first message counts."""
    sem = asyncio.Semaphore(connections)
    results = [None] * len(packets)
    groups, current = [], []
    for i, p in enumerate(packets):
        if is_transfer(p):
            groups.append([i])
            continue
        current.append(i)
        if len(current) == batch:
            groups.append(current)
            current = []
    if current:
        groups.append(current)

    async def one(indexes):
        async with sem:
            got = await ask_tcp_pipelined(port, [packets[i] for i in indexes])
            for i, reply in zip(indexes, got):
                results[i] = reply

    await asyncio.gather(*(one(g) for g in groups))
    # A connection that timed out loses the replies after the slow one
    # (a loaded machine): those are asked once more, one per connection,
    # as UDP queries get a second try. Still unanswered counts as such.
    missing = [i for i, r in enumerate(results) if r is None and not is_transfer(packets[i])]
    if missing:
        print(f"differential: {len(missing)} TCP queries unanswered on port {port}; asked again",
              file=sys.stderr)
        await asyncio.gather(*(one([i]) for i in missing))
    return results


async def axfr(port, origin, timeout=10.0):
    """AXFR of `origin`: list of messages (raw), or None if it failed."""
    q = w.build_query(w.parse_name_text(origin), 252, qid=4711)
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection("127.0.0.1", port), timeout)
    except (OSError, asyncio.TimeoutError):
        return None
    msgs = []
    try:
        writer.write(struct.pack("!H", len(q)) + q)
        await writer.drain()
        soas = 0
        while soas < 2:
            raw = await read_framed(reader, timeout)
            msgs.append(raw)
            m = w.parse_message(raw)
            if m.rcode != 0:
                break
            soas += sum(1 for r in m.sections[0] if r.key[3] == 6)
    except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, w.WireError):
        return msgs or None
    finally:
        writer.close()
    return msgs


# ---------------------------------------------------------------- queries

class Case:
    """One query: what to send and how to describe it."""

    __slots__ = ("packet", "desc", "qtype", "zone", "tcp")

    def __init__(self, packet, desc, qtype, zone, tcp=False):
        self.packet = packet
        self.desc = desc
        self.qtype = qtype
        self.zone = zone
        self.tcp = tcp


def random_case(rng, labels):
    """The same name with letters in random case."""
    out = []
    for l in labels:
        out.append(bytes(b ^ 0x20 if (0x61 <= (b | 0x20) <= 0x7A and rng.random() < 0.5) else b
                         for b in l))
    return tuple(out)


def make_case(rng, labels, qtype, zone, edns="random", case="random", choices=EDNS_CHOICES):
    if edns == "random":
        edns = rng.choice(choices)
    if case == "random":
        case = rng.random() < 0.4
    ask = random_case(rng, labels) if case else labels
    rd = rng.random() < 0.5
    cd = rng.random() < 0.1
    e = None if edns is None else (edns[0], edns[1], 0, 0, b"")
    packet = w.build_query(ask, qtype, edns=e, rd=rd, cd=cd)
    etext = "-" if edns is None else str(edns[0]) + ("+do" if edns[1] else "")
    desc = (f"{w.name_text(ask)} {w.type_name(qtype)} edns={etext}"
            f"{' rd' if rd else ''}{' cd' if cd else ''}")
    return Case(packet, desc, qtype, zone)


def zone_names(records, apex):
    """Owner names of a zone plus every empty non-terminal, and per name its types."""
    types = collections.defaultdict(set)
    for r in records:
        owner = w.parse_name_text(r.key[0])
        types[owner].add(r.key[3])
        n = owner
        while len(n) > len(apex):
            n = n[1:]
            types.setdefault(n, set())
    return types


def derived_names(name, apex, types_here):
    """Names near `name` that do not (necessarily) exist: below, beside, deep."""
    out = [(b"zz-nx",) + name, (b"a", b"b") + name, (b"a", b"b", b"c", b"d") + name]
    if len(name) > len(apex):
        out.append((name[0] + b"-sib",) + name[1:])
        out.append((b"qq",) + name[1:])
        if name[0] == b"*":
            out += [(b"w1",) + name[1:], (b"w1", b"w2") + name[1:], (b"*", b"w1") + name[1:],
                    (b"w1", b"*") + name[1:]]
    if 39 in types_here:  # DNAME: long names to find the YXDOMAIN edge
        wire_len = len(w.name_wire(name))
        for extra in (20, 60, 100, 140, 170, 190, 200, 210, 230, 250):
            room = 255 - wire_len
            if extra > room:
                break
            labels, left = [], extra
            while left > 1:
                n = min(63, left - 1)
                labels.append(b"x" * n)
                left -= n + 1
            out.append(tuple(labels) + name)
    return [n for n in out if len(w.name_wire(n)) <= 255]


def build_cases(rng, zone_data, gen_origin, signed=False):
    """The query list: names × types × variants, for every zone. The signed
    pass asks each name once (mostly with DO=1), and near names also for
    DS, RRSIG and NSEC."""
    cases = []
    choices = SIGNED_EDNS_CHOICES if signed else EDNS_CHOICES
    for origin, records in zone_data.items():
        apex = w.parse_name_text(origin)
        big = origin == gen_origin
        names = zone_names(records, apex)
        for name, present in sorted(names.items()):
            if big:
                qtypes = {w.TYPES[t] for t in rng.sample(GEN_TYPES, 2)} | present | {1}
                variants = 1
            elif signed and 50 in present:
                # An NSEC3 owner (a hash): answered as if it did not exist
                # (RFC 5155 §7.2.8). Asked itself, for a few types; names
                # below it are where Knot and NSD differ most, not asked.
                qtypes = {50, 46, 1, 255}
                variants = 1
            elif signed:
                qtypes = ({w.type_code(t) for t in SIGNED_TYPES + rng.sample(SMALL_TYPES, 2)}
                          | present)
                variants = 1
            else:
                qtypes = {w.type_code(t) for t in SMALL_TYPES} | present
                variants = 2
            for qtype in sorted(qtypes):
                for v in range(variants):
                    cases.append(make_case(rng, name, qtype, origin,
                                           case=(v == 1 or rng.random() < 0.3),
                                           choices=choices))
            if (big and rng.random() > 0.15) or (signed and 50 in present):
                continue
            near_types = [1, 16] if big else [1, 28, 16, 2, 15, 5, 43, 255]
            if signed:
                near_types = [1, 43, 46] if big else rng.sample(near_types, 4) + [46, 43]
            for near in derived_names(name, apex, present):
                for qtype in near_types:
                    cases.append(make_case(rng, near, qtype, origin, choices=choices))
    # Outside every zone, and the parents of zones.
    for name in ["test.", ".", "example.net.", "www.example.net.", "nx.test."]:
        for qtype in (1, 2, 6, 255):
            cases.append(make_case(rng, w.parse_name_text(name), qtype, "-", choices=choices))
    return cases


def special_cases():
    """Hand-built packets: EDNS corner cases, classes, malformed input."""
    www = w.parse_name_text("www.diff.test.")
    out = []

    def add(packet, desc, qtype=1):
        out.append(Case(packet, desc, qtype, "special"))

    opt = lambda size=1232, do=False, ver=0, z=0, opts=b"": (size, do, ver, z, opts)
    add(w.build_query(www, 1, edns=opt(ver=1)), "EDNS version 1 (BADVERS)")
    add(w.build_query(www, 1, edns=opt(ver=1, do=True)), "EDNS version 1 with DO")
    add(w.build_query(www, 1, edns=opt(ver=255)), "EDNS version 255")
    add(w.build_query(www, 1, edns=opt(opts=b"\xfd\xe9\x00\x03abc")), "unknown EDNS option")
    add(w.build_query(www, 1, edns=opt(opts=b"\x00\x08\x00\x07\x00\x01\x18\x00\xc0\x00\x02")),
        "EDNS client subnet option")
    add(w.build_query(www, 1, edns=opt(z=0x4000)), "unknown EDNS flag")
    add(w.build_query(www, 1, edns=opt(do=True, z=0x7fff)), "all EDNS flags")
    add(w.build_query(www, 1, edns=opt(size=0)), "EDNS size 0")
    add(w.build_query(www, 1, edns=opt(size=100)), "EDNS size 100")
    add(w.build_query(www, 1, edns=opt(size=65535)), "EDNS size 65535")
    add(w.build_query(w.parse_name_text("big.diff.test."), 16, edns=opt(size=100)),
        "big TXT, EDNS size 100")
    add(w.build_query(w.parse_name_text("manya.diff.test."), 1, edns=opt(size=65535)),
        "100 A records, EDNS size 65535")
    for cname, cls in (("CH", 3), ("HS", 4), ("NONE", 254), ("ANY", 255), ("CLASS2", 2),
                       ("CLASS999", 999)):
        for name in ("version.bind.", "id.server.", "hostname.bind.", "version.server.",
                     "www.diff.test.", "diff.test."):
            for qtype in (16, 1, 255):
                add(w.build_query(w.parse_name_text(name), qtype, qclass=cls),
                    f"{name} {cname} {w.type_name(qtype)}", qtype)
    base = w.build_query(www, 1)
    add(base[:5] + b"\x00" + base[6:], "QDCOUNT 0")
    add(base[:5] + b"\x02" + base[6:] + base[12:], "QDCOUNT 2")
    add(base[:5] + b"\x02" + base[6:], "QDCOUNT 2, one question")
    add(base + b"\x00\x01\x02", "trailing garbage")
    add(base[:-2], "truncated question")
    add(base[:12] + b"\xc0\x0c\x00\x01\x00\x01", "compression loop in question")
    add(base[:12] + b"\x03www\xc0\x0c\x00\x01\x00\x01", "pointer loop after a label")
    add(base[:12] + b"\x03www\xc0\x12\x00\x01\x00\x01", "forward pointer")
    add(base[:12] + b"\x40abc\x00\x00\x01\x00\x01", "reserved label type")
    add(base[:2] + b"\x80\x00" + base[4:], "QR set (a response)")
    for opcode in (1, 2, 3, 4, 5, 6, 15):
        flags = struct.pack("!H", opcode << 11)
        add(base[:2] + flags + base[4:], f"opcode {opcode}")
    add(base[:2] + b"\x00\x20" + base[4:], "AD set in query")
    add(base[:2] + b"\x00\x40" + base[4:], "Z set in query")
    add(base[:2] + b"\x00\x80" + base[4:], "RA set in query")
    add(base[:2] + b"\x06\x00" + base[4:], "AA and TC set in query")
    two_opt = w.build_query(www, 1, edns=opt())
    add(two_opt[:11] + b"\x02" + two_opt[12:] + two_opt[-11:], "two OPT records")
    add(two_opt[:7] + b"\x01" + two_opt[8:11] + b"\x00" + two_opt[12:], "OPT in answer")
    add(two_opt[:-11] + b"\x03www\x00" + two_opt[-10:], "OPT with a non-root owner")
    for qtype in (0, 41, 249, 250, 251, 252, 253, 254, 65535, 128):
        add(w.build_query(www, qtype), f"qtype {w.type_name(qtype)} over UDP", qtype)
        add(w.build_query(w.parse_name_text("diff.test."), qtype),
            f"apex qtype {w.type_name(qtype)} over UDP", qtype)
    return out


def signed_special_cases():
    """The signed pass's hand-built packets: DO with odd sizes and flags."""
    out = []
    for name, qtype in (("diff.test.", 48), ("diff3.test.", 48), ("diff.test.", 255),
                        ("nx.diff.test.", 1), ("nx.diff3.test.", 1), ("big.diff.test.", 16),
                        ("manya.diff.test.", 1), ("www.diff.test.", 46)):
        labels = w.parse_name_text(name)
        for size, do in ((0, True), (100, True), (512, True), (513, True), (65535, True),
                         (512, False)):
            out.append(Case(w.build_query(labels, qtype, edns=(size, do, 0, 0, b"")),
                            f"{name} {w.type_name(qtype)} size {size}{' do' if do else ''}",
                            qtype, "special"))
        out.append(Case(w.build_query(labels, qtype, edns=(1232, True, 0, 0, b""), ad=True),
                        f"{name} {w.type_name(qtype)} do ad", qtype, "special"))
        out.append(Case(w.build_query(labels, qtype, edns=(1232, True, 1, 0, b"")),
                        f"{name} {w.type_name(qtype)} do, EDNS version 1", qtype, "special"))
    return out


# ---------------------------------------------------------------- verdict

FIELDS = ("answered", "rcode", "flags", "question", "answer", "authority", "additional",
          "edns")


def view(raw):
    """What is compared of a reply, field by field."""
    if raw is None:
        return {"answered": False}
    try:
        m = w.parse_message(raw)
    except w.WireError as e:
        return {"answered": True, "malformed": str(e)}
    q = "".join(f"{w.name_text(n)} {w.type_name(t)} {c}" for n, t, c in m.question)
    v = {
        "answered": True,
        "rcode": w.RCODES.get(m.rcode, str(m.rcode)),
        "flags": m.flag_text(),
        "question": q,
        "answer": sorted(repr(r) for r in m.sections[0]),
        "authority": sorted(repr(r) for r in m.sections[1]),
        "additional": sorted(repr(r) for r in m.sections[2]),
        "edns": None if m.opt is None else
        f"udp={m.opt['udp']} v={m.opt['version']} do={int(m.opt['do'])} z={m.opt['z']}"
        f" opts={m.opt['options']}",
        "size": len(raw),
    }
    return v


# Differences kept on purpose. Each rule names the field it excuses and a
# predicate over (case, truth view, our view); docs/conformance.md gives the
# RFC text behind each one.

def _query_has_cd(case):
    return len(case.packet) > 3 and case.packet[3] & 0x10


def _cd_copied(case, ref, ours):
    """RFC 4035 §3.1.6: we copy CD into the reply; Knot and NSD clear it."""
    return bool(_query_has_cd(case)) and ours.get("flags") == _with_flag(ref.get("flags"), "cd")


def _with_flag(flags, flag):
    if flags is None:
        return None
    order = ["qr", "aa", "tc", "rd", "ra", "z", "ad", "cd"]
    parts = flags.split(" ")
    names = [p for p in parts if not p.startswith("opcode")] + [flag]
    rest = [p for p in parts if p.startswith("opcode")]
    return " ".join([n for n in order if n in names] + rest)


def _udp_limit(case):
    """The reply size limit the query set (UDP)."""
    p = case.packet
    if case.tcp:
        return 65535
    if len(p) >= 12 and p[11] >= 1 and len(p) >= 11 + 12:
        # Our generated queries end with the 11-byte OPT record.
        size = struct.unpack("!H", p[-8:-6])[0]
        return min(max(size, 512), 1232)
    return 512


def _fits_without_tc(case, ref, ours):
    """Our compression fits what the reference had to truncate (RFC 1035
    §4.1.4 leaves compression to the sender; RFC 2181 §9: TC only when the
    data did not fit). Ours must hold all the reference sent, and more."""
    rf, of = ref.get("flags") or "", ours.get("flags") or ""
    if " tc" not in rf or " tc" in of or ours.get("size", 1 << 20) > _udp_limit(case):
        return False
    if of != rf.replace(" tc", "") and of != _with_flag(rf.replace(" tc", ""), "cd"):
        return False
    return all(set(ref.get(s) or []) <= set(ours.get(s) or [])
               for s in ("answer", "authority"))


def _nsec3_alias(case, ref, ours):
    """A query for type NSEC3 at an alias into another zone: NSD never
    follows aliases for NSEC3 and Knot stops at the zone's edge, so both say
    NOERROR; we follow the chain like for any type (RFC 1034 §4.3.2 step
    3a) and give the rcode of its last name (RFC 6604 §3)."""
    return case.qtype == 50 and any(" CNAME " in r for r in ours.get("answer") or [])


def _all_rrsigs_tc(case, ref, ours):
    """qtype=RRSIG: we send every RRSIG at the name (as NSD), Knot one; when
    ours then needs TC where Knot's single record fit (and NSD denies the
    name or sends fewer), the flags differ in TC only."""
    if case.qtype != 46:
        return False
    flags = (ours.get("flags") or "").replace(" tc", "")
    if flags not in (ref.get("flags"), _with_flag(ref.get("flags"), "cd")):
        return False
    n = lambda v: sum(" RRSIG " in r for r in v.get("answer") or [])
    return n(ours) > n(ref)


def _nsec3_alias_tc(case, ref, ours):
    """The same, when our longer chain (with its RRSIGs, DO=1) did not fit
    where the references' shorter answer did: the flags differ in TC only."""
    return (_nsec3_alias(case, ref, ours)
            and (ours.get("flags") or "").replace(" tc", "") in
            (ref.get("flags"), _with_flag(ref.get("flags"), "cd")))


EXPLAINED = [
    ("nsec3-query-at-alias (RFC 6604 3)", "rcode", _nsec3_alias),
    ("nsec3-query-at-alias (RFC 6604 3)", "flags", _nsec3_alias_tc),
    ("cd-copied (RFC 4035 3.1.6)", "flags", _cd_copied),
    ("every-RRSIG-at-the-name (RFC 2181 9)", "flags", _all_rrsigs_tc),
    ("fits-without-TC (RFC 1035 4.1.4)", "flags", _fits_without_tc),
    ("fits-without-TC (RFC 1035 4.1.4)", "rcode", _fits_without_tc),
    ("fits-without-TC (RFC 1035 4.1.4)", "answer", _fits_without_tc),
    ("fits-without-TC (RFC 1035 4.1.4)", "authority", _fits_without_tc),
    ("fits-without-TC (RFC 1035 4.1.4)", "additional", _fits_without_tc),
]


def explained(case, field, ref, ours):
    for name, rule_field, pred in EXPLAINED:
        if rule_field == field and pred(case, ref, ours):
            return name
    return None


def compare(cases, knot, nsd, ours, report):
    """Field-by-field verdict; fills `report` and returns the differences."""
    diffs = []
    for case, rk, rn, rm in zip(cases, knot, nsd, ours):
        vk, vn, vm = view(rk), view(rn), view(rm)
        report["cases"] += 1
        if vk.get("malformed") or vn.get("malformed"):
            report["reference_malformed"] += 1
        for field in FIELDS + ("malformed",):
            a, b, c = vk.get(field), vn.get(field), vm.get(field)
            if a != b:
                report["skipped"][field] += 1
                if len(report["skip_examples"][field]) < report["keep_examples"]:
                    report["skip_examples"][field].append(
                        {"query": case.desc, "knot": a, "nsd": b, "mongodns": c})
                continue
            report["checked"][field] += 1
            if c == a:
                continue
            why = explained(case, field, vk, vm)
            if why:
                report["explained"][why] += 1
                continue
            diffs.append((case, field, vk, vn, vm))
    return diffs


def compare_axfr(origin, results, report, diffs):
    """AXFR: the same records from all three, SOA first and last. A
    reference that gives no complete transfer fails the suite: without it
    there is nothing to judge ours by."""
    views = {}
    for server, msgs in results.items():
        if not msgs:
            views[server] = "no transfer"
            continue
        records, rcodes = [], set()
        for raw in msgs:
            m = w.parse_message(raw)
            rcodes.add(m.rcode)
            records += [repr(r) for r in m.sections[0]]
        if rcodes != {0} or len(records) < 2:
            views[server] = f"rcodes {sorted(rcodes)}"
            continue
        first, last = records[0], records[-1]
        ok = " SOA " in first and first == last
        views[server] = ("SOA first and last" if ok else "SOA not first and last",
                         sorted(records[1:-1]))
    report["axfr"][origin] = {k: (v if isinstance(v, str) else v[0]) for k, v in views.items()}
    for ref in ("knot", "nsd"):
        if isinstance(views[ref], str):
            raise Fail(f"{ref} gave no complete AXFR of {origin}: {views[ref]}")
    report["checked"]["axfr"] += 1
    if views["knot"] == views["nsd"] and views["mongodns"] != views["knot"]:
        case = Case(b"", f"AXFR {origin}", 252, origin, tcp=True)
        diffs.append((case, "axfr", {"axfr": views["knot"]}, {"axfr": views["nsd"]},
                      {"axfr": views["mongodns"]}))
    elif views["knot"] != views["nsd"]:
        report["checked"]["axfr"] -= 1
        report["skipped"]["axfr"] += 1


# ---------------------------------------------------------------- main

def default_bin(name):
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(REPO, "target"))
    return os.path.join(target, "debug", name)


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--server-bin", default=default_bin("mongodns-server"))
    p.add_argument("--import-bin", default=default_bin("mongodns-import"))
    p.add_argument("--sign-bin", default=default_bin("mongodns-sign"))
    p.add_argument("--mongodb-uri", default=os.environ.get(
        "MONGODB_URI", "mongodb://127.0.0.1:27017/?directConnection=true"))
    p.add_argument("--seed", type=int, default=int(os.environ.get("DIFF_SEED", "20240101")))
    p.add_argument("--gen-names", type=int, default=2500)
    p.add_argument("--signed-gen-names", type=int, default=400,
                   help="names of the generated zone in the signed pass")
    p.add_argument("--pass", dest="passes", choices=("unsigned", "signed", "both"),
                   default="both", help="which pass to run (--serve: unsigned unless signed)")
    p.add_argument("--min-queries", type=int, default=20000)
    p.add_argument("--min-signed-queries", type=int, default=10000)
    # Floors and caps measured on seeds 20240101 and 7 (docs/conformance.md,
    # "What counts"): what was judged, and what Knot and NSD left unjudged.
    p.add_argument("--min-judged", type=int, default=200000,
                   help="field comparisons judged (Knot == NSD), unsigned pass")
    p.add_argument("--min-signed-judged", type=int, default=130000,
                   help="field comparisons judged (Knot == NSD), signed pass")
    p.add_argument("--max-skipped-pct", type=float, default=5.0,
                   help="most %% of one field's comparisons skipped (Knot != NSD), unsigned")
    p.add_argument("--max-signed-skipped-pct", type=float, default=15.0,
                   help="most %% of one field's comparisons skipped (Knot != NSD), signed")
    p.add_argument("--max-axfr-skipped", type=int, default=1,
                   help="most zone transfers on which Knot and NSD may disagree, per pass")
    p.add_argument("--min-defaults-judged", type=int, default=190000,
                   help="field comparisons judged (Knot == NSD), defaults pass")
    p.add_argument("--no-defaults", dest="defaults", action="store_false",
                   help="skip the defaults pass (after the unsigned pass: mongodns at its "
                        "default timeouts, every UDP query asked once)")
    p.add_argument("--window", type=int, default=64, help="queries in flight per server")
    p.add_argument("--report", help="write the full JSON report here (signed pass: "
                                     "FILE.signed.json)")
    p.add_argument("--skip-examples", type=int, default=5,
                   help="Knot/NSD disagreements kept per field in the report")
    p.add_argument("--show", type=int, default=25, help="differences to print in full")
    p.add_argument("--resident", action="store_true",
                   help="mongodns holds every zone in memory (--resident-mb) and is asked "
                        "once all are resident")
    p.add_argument("--keep", action="store_true", help="keep the temp dir and servers' logs")
    p.add_argument("--serve", action="store_true",
                   help="only start the three servers and wait (for asking them by hand)")
    args = p.parse_args()
    for tool in ("knotd", "nsd"):
        if shutil.which(tool) is None and not os.path.exists(f"/usr/sbin/{tool}"):
            raise Fail(f"{tool} is not installed (apt-get install knot nsd)")
    os.environ["PATH"] += ":/usr/sbin"
    passes = {"unsigned": [False], "signed": [True], "both": [False, True]}[args.passes]
    if args.serve:
        passes = passes[-1:] if args.passes == "signed" else passes[:1]
    bins = [args.server_bin, args.import_bin] + ([args.sign_bin] if True in passes else [])
    for b in bins:
        if not os.path.exists(b):
            raise Fail(f"{b} does not exist: build with `cargo build --bins` first")
    status = 0
    for signed in passes:
        status = max(status, run_pass(args, signed))
    if len(passes) > 1:
        log(f"differential: {'passed' if status == 0 else 'FAILED'} (both passes)")
    return status


def run_pass(args, signed):
    """One pass: servers up, queries, verdict. The signed pass signs the
    zones in mongodns first and gives Knot and NSD the zones it serves."""
    label = "signed" if signed else "unsigned"
    tmp = tempfile.mkdtemp(prefix=f"mongodns-diff-{label}-")
    procs = []
    database = f"mdt_diff_{label}_{os.getpid()}"
    started = time.time()
    try:
        zones = copy_zones(args, tmp, signed)
        log(f"differential ({label}): {len(zones)} zones, seed {args.seed}, temp dir {tmp}")
        ports = {name: free_port() for name in ("knot", "nsd", "mongodns", "control")}
        servers = {}
        if not signed:
            servers["nsd"] = start_nsd(tmp, zones, ports["nsd"])
            procs.append(servers["nsd"])
            knot_zones = knot_zone_files(tmp, zones, servers["nsd"], ports["nsd"],
                                         time.time() + 60)
            servers["knot"] = start_knot(tmp, knot_zones, ports["knot"])
            procs.append(servers["knot"])
        import_zones(args, tmp, zones, database)
        log(f"differential ({label}): zones imported into {database} "
            f"({time.time() - started:.1f} s)")
        if signed:
            sign_zones(args, zones, database)
            log(f"differential ({label}): zones signed ({time.time() - started:.1f} s)")
        servers["mongodns"] = start_mongodns(args, tmp, database, ports["mongodns"],
                                             ports["control"])
        procs.append(servers["mongodns"])
        deadline = time.time() + 60
        if signed:
            wait_ready("mongodns", servers["mongodns"], ports["mongodns"], zones, deadline)
            asyncio.run(write_signed_zones(tmp, zones, ports["mongodns"]))
            servers["knot"] = start_knot(tmp, zones, ports["knot"])
            servers["nsd"] = start_nsd(tmp, zones, ports["nsd"])
            procs += [servers["knot"], servers["nsd"]]
            deadline = time.time() + 60
        for name, proc in servers.items():
            wait_ready(name, proc, ports[name], zones, deadline)
        if args.resident:
            wait_resident(ports["control"], zones, deadline)
            log(f"differential ({label}): every zone resident in mongodns")
        log(f"differential ({label}): knotd :{ports['knot']}, nsd :{ports['nsd']}, "
            f"mongodns :{ports['mongodns']} serving ({time.time() - started:.1f} s)")
        if args.serve:
            log("differential: serving until interrupted (SIGINT or SIGTERM)")
            signal.signal(signal.SIGTERM, signal.default_int_handler)
            signal.signal(signal.SIGINT, signal.default_int_handler)
            try:
                while all(p.poll() is None for p in procs):
                    time.sleep(1)
            except KeyboardInterrupt:
                pass
            return 0
        verdict, udp = asyncio.run(run_suite(args, zones, ports, signed))
        if not signed and args.defaults:
            verdict = max(verdict, defaults_pass(args, tmp, database, servers, ports, zones,
                                                 procs, udp))
    except Fail as e:
        log(f"differential ({label}): FAILED: {e}")
        verdict = 2
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
        drop_database(args, database)
        if args.keep:
            log(f"differential ({label}): kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    log(f"differential ({label}): {time.time() - started:.1f} s")
    return verdict


def copy_zones(args, tmp, signed):
    """The pass's zone files into tmp/zones (signed: into tmp/source, the
    served files come later from mongodns); returns [(origin, file)]."""
    src = os.path.join(tmp, "source" if signed else "zones")
    os.makedirs(src)
    os.makedirs(os.path.join(tmp, "zones"), exist_ok=True)
    zones = []
    for f in sorted(os.listdir(ZONES_DIR)):
        if f.endswith(".zone"):
            shutil.copy(os.path.join(ZONES_DIR, f), os.path.join(src, f))
            zones.append((f[:-len("zone")], f))
    if signed:
        with open(os.path.join(ZONES_DIR, "diff.test.zone")) as f:
            text = f.read().replace("diff.test.", "diff3.test.")
        with open(os.path.join(src, "diff3.test.zone"), "w") as f:
            f.write(text)
        zones.append(("diff3.test.", "diff3.test.zone"))
    names = args.signed_gen_names if signed else args.gen_names
    with open(os.path.join(src, "gen.test.zone"), "w") as f:
        f.write(genzone.generate(GEN_ORIGIN, args.seed, names))
    zones.append((GEN_ORIGIN, "gen.test.zone"))
    return zones


def sign_zones(args, zones, database):
    """`mongodns-sign secure-zone` for every zone, options from SIGNED_ZONES."""
    env = dict(os.environ, MONGODB_URI=args.mongodb_uri, MONGODNS_DATABASE=database)
    for origin, _ in zones:
        opts = SIGNED_ZONES.get(origin)
        if opts is None:
            continue
        r = subprocess.run([args.sign_bin, "-q", "secure-zone", origin, "--grace", "0",
                            "--threads", "2"] + opts,
                           env=env, capture_output=True, text=True)
        if r.returncode != 0:
            raise Fail(f"mongodns-sign secure-zone {origin} failed:\n{r.stderr}")


NSD_ONLY = "; nsd-only"


def knot_zone_files(tmp, zones, nsd, port, deadline):
    """Knot's copy of every zone with lines marked `; nsd-only` (types Knot
    does not read, tests/zones/types.test.zone): those lines left out and
    NSD's reading of the same owner names added in RFC 3597 form, which
    Knot reads for any type. Returns Knot's [(origin, file)]."""
    out = []
    for origin, path in zones:
        with open(os.path.join(tmp, "zones", path)) as f:
            text = f.read()
        if NSD_ONLY not in text:
            out.append((origin, path))
            continue
        kept, owners = [], set()
        for line in text.splitlines():
            if line.rstrip().endswith(NSD_ONLY):
                owner = line.split()[0].lower()
                owners.add(owner if owner.endswith(".") else f"{owner}.{origin}")
            else:
                kept.append(line)
        wait_ready("nsd", nsd, port, [(origin, path)], deadline)
        msgs = asyncio.run(axfr(port, origin))
        if not msgs:
            raise Fail(f"nsd gave no AXFR of {origin} (for Knot's copy of it)")
        lines = [line for raw in msgs for line in w.zone_file_lines(raw)]
        added = [line for line in lines if line.split()[0].lower() in owners]
        if {line.split()[0].lower() for line in added} != owners:
            raise Fail(f"nsd's AXFR of {origin} lacks some of {sorted(owners)}")
        knot_path = f"knot-{path}"
        with open(os.path.join(tmp, "zones", knot_path), "w") as f:
            f.write("\n".join(kept + added) + "\n")
        out.append((origin, knot_path))
    return out


async def write_signed_zones(tmp, zones, port):
    """Each zone as mongodns serves it (AXFR) into tmp/zones, byte for byte
    (RFC 3597 rdata): Knot and NSD then serve the very same signatures."""
    for origin, path in zones:
        msgs = await axfr(port, origin)
        if not msgs:
            raise Fail(f"mongodns gave no AXFR of {origin}")
        lines = []
        for raw in msgs:
            lines += w.zone_file_lines(raw)
        if len(lines) < 2 or " TYPE6 " not in lines[0]:
            raise Fail(f"mongodns's AXFR of {origin} does not start with its SOA")
        with open(os.path.join(tmp, "zones", path), "w") as f:
            f.write("\n".join(lines[:-1]) + "\n")


def drop_database(args, database):
    """Drops the suite's database (best effort) with the stdlib wire client."""
    try:
        subprocess.run([sys.executable, os.path.join(REPO, "scripts", "ferretdb", "ping.py"),
                        args.mongodb_uri, "drop-db", database],
                       capture_output=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        pass


def new_report(args):
    """An empty tally of what a pass compared."""
    return {
        "cases": 0,
        "checked": collections.Counter(),
        "skipped": collections.Counter(),
        "explained": collections.Counter(),
        "skip_examples": collections.defaultdict(list),
        "axfr": {},
        "reference_malformed": 0,
        "keep_examples": args.skip_examples,
    }


async def run_suite(args, zones, ports, signed=False):
    """Transfers, UDP and TCP queries to all three, and the verdict; returns
    (verdict, (UDP cases, Knot's replies, NSD's replies)) for the defaults
    pass."""
    rng = random.Random(args.seed + (1 if signed else 0))
    report = new_report(args)
    diffs = []
    # 1. Zone contents from Knot by AXFR (and the transfer compared).
    zone_data = {}
    for origin, _ in zones:
        results = {}
        for name in ("knot", "nsd", "mongodns"):
            results[name] = await axfr(ports[name], origin)
        if not results["knot"]:
            raise Fail(f"Knot gave no AXFR of {origin}")
        records = []
        for raw in results["knot"]:
            records += w.parse_message(raw).sections[0]
        zone_data[origin] = records
        compare_axfr(origin, results, report, diffs)
    # 2. Queries.
    cases = build_cases(rng, zone_data, GEN_ORIGIN, signed)
    cases += signed_special_cases() if signed else special_cases()
    log(f"differential: {len(cases)} queries to each of 3 servers")
    t0 = time.time()
    packets = [c.packet for c in cases]
    answers = await asyncio.gather(*(ask_all_udp(ports[n], packets, args.window)
                                     for n in ("knot", "nsd", "mongodns")))
    log(f"differential: UDP done in {time.time() - t0:.1f} s")
    # A query mongodns left unanswered twice (8 s each) on a loaded
    # machine, where a cold signed denial waits behind many database reads,
    # is asked once more, a few at a time, as TCP queries are; still
    # unanswered counts as such (Knot and NSD drop some queries on purpose).
    mine = answers[2]
    missing = [i for i, r in enumerate(mine) if r is None]
    if missing:
        log(f"differential: {len(missing)} UDP queries unanswered by mongodns; asked again")
        again = await ask_all_udp(ports["mongodns"], [packets[i] for i in missing], 4,
                                  timeout=15.0, tries=1)
        for i, reply in zip(missing, again):
            mine[i] = reply
    for name, replies in zip(("knot", "nsd", "mongodns"), answers):
        got = sum(1 for r in replies if r is not None)
        log(f"differential: {name} answered {got}/{len(replies)}")
        if name != "mongodns" and got < 0.9 * len(replies):
            raise Fail(f"{name} answered only {got} of {len(replies)} queries")
    diffs += compare(cases, *answers, report)
    # 3. Over TCP: every truncated reply, plus a sample.
    tcp_cases = []
    for i, c in enumerate(cases):
        truncated = any(r is not None and len(r) > 3 and r[2] & 0x02 for r in
                        (answers[0][i], answers[1][i], answers[2][i]))
        if c.zone != "special" and (truncated or i % 23 == 0):
            tcp_cases.append(Case(c.packet, c.desc + " (TCP)", c.qtype, c.zone, tcp=True))
    for name in ("version.bind.", "www.diff.test.", "diff.test."):
        for qtype in (252, 251):
            pkt = w.build_query(w.parse_name_text(name), qtype)
            if name.startswith("version"):
                pkt = w.build_query(w.parse_name_text(name), 16, qclass=3)
            tcp_cases.append(Case(pkt, f"{name} {w.type_name(qtype)} (TCP)", qtype, "special",
                                  tcp=True))
    t0 = time.time()
    packets = [c.packet for c in tcp_cases]
    tcp_answers = await asyncio.gather(*(ask_all_tcp(ports[n], packets)
                                         for n in ("knot", "nsd", "mongodns")))
    log(f"differential: {len(tcp_cases)} TCP queries done in {time.time() - t0:.1f} s")
    for name, replies in zip(("knot", "nsd"), tcp_answers):
        got = sum(1 for r in replies if r is not None)
        if got < 0.9 * len(replies):
            raise Fail(f"{name} answered only {got} of {len(replies)} TCP queries")
    diffs += compare(tcp_cases, *tcp_answers, report)
    total = len(cases) + len(tcp_cases)
    label = "signed" if signed else "unsigned"
    least = args.min_signed_queries if signed else args.min_queries
    min_judged = args.min_signed_judged if signed else args.min_judged
    max_pct = args.max_signed_skipped_pct if signed else args.max_skipped_pct
    return (verdict(args, report, diffs, total, label, (least, min_judged, max_pct)),
            (cases, answers[0], answers[1]))


def defaults_pass(args, tmp, database, servers, ports, zones, procs, udp):
    """mongodns again at its default timeouts (a fresh process, so cold
    caches), over the same database: the main pass's UDP queries, each
    asked once with a stub resolver's timeout (DEFAULT_CLIENT_TIMEOUT) and
    never again, judged against Knot's and NSD's replies of the main pass."""
    started = time.time()
    servers["mongodns"].terminate()
    servers["mongodns"].wait(10)
    port, control = free_port(), free_port()
    proc = start_mongodns(args, tmp, database, port, control, defaults=True)
    procs.append(proc)
    deadline = time.time() + 60
    wait_ready("mongodns (defaults)", proc, port, zones, deadline)
    if args.resident:
        wait_resident(control, zones, deadline)
    cases, knot, nsd = udp
    t0 = time.time()
    ours = asyncio.run(ask_all_udp(port, [c.packet for c in cases], args.window,
                                   timeout=DEFAULT_CLIENT_TIMEOUT, tries=1))
    got = sum(1 for r in ours if r is not None)
    log(f"differential (defaults): mongodns answered {got}/{len(ours)} in "
        f"{time.time() - t0:.1f} s, asked once each ({DEFAULT_CLIENT_TIMEOUT:.0f}-s timeout)")
    report = new_report(args)
    diffs = compare(cases, knot, nsd, ours, report)
    floors = (args.min_queries, args.min_defaults_judged, args.max_skipped_pct)
    status = verdict(args, report, diffs, len(cases), "defaults", floors)
    log(f"differential (defaults): {time.time() - started:.1f} s")
    return status


def verdict(args, report, diffs, total, label, floors):
    """Prints the pass's tally and judges it; `floors`: (least queries, least
    field comparisons judged, most %% of a field skipped). 0 passed, 1 failed."""
    least, min_judged, max_pct = floors
    log("")
    log(f"differential: the {label} pass")
    log(f"differential: {total} queries ({report['cases']} compared), "
        f"{len(diffs)} unexplained differences")
    log("  checked per field:  " + ", ".join(f"{k} {v}" for k, v in report["checked"].items()))
    log("  skipped (Knot and NSD disagree): "
        + (", ".join(f"{k} {v}" for k, v in report["skipped"].items()) or "none"))
    log("  explained differences: "
        + (", ".join(f"{k} {v}" for k, v in report["explained"].items()) or "none"))
    for origin, v in report["axfr"].items():
        log(f"  AXFR {origin}: {v}")
    by_kind = collections.Counter((f, c.qtype) for c, f, *_ in diffs)
    if diffs:
        log("  differences by field and qtype: " + ", ".join(
            f"{f}/{w.type_name(t)} {n}" for (f, t), n in by_kind.most_common(30)))
    for case, field, vk, vn, vm in diffs[:args.show]:
        log(f"\n--- {case.desc}: {field} differs")
        log(f"  knot:     {json.dumps(vk, indent=None)}")
        if vn != vk:
            log(f"  nsd:      {json.dumps(vn, indent=None)}")
        log(f"  mongodns: {json.dumps(vm, indent=None)}")
    if args.report:
        with open(args.report + ("" if label == "unsigned" else f".{label}.json"), "w") as f:
            json.dump({
                "queries": total,
                "checked": report["checked"],
                "skipped": report["skipped"],
                "skip_examples": report["skip_examples"],
                "explained": report["explained"],
                "axfr": report["axfr"],
                "differences": [{"query": c.desc, "field": fl, "knot": a, "nsd": b,
                                 "mongodns": m} for c, fl, a, b, m in diffs],
            }, f, indent=1)
    if report["skip_examples"]:
        log("\n  examples of Knot/NSD disagreement (skipped):")
        for field, examples in report["skip_examples"].items():
            for ex in examples[:2]:
                log(f"    {field}: {ex['query']}: knot={ex['knot']} nsd={ex['nsd']}")
    failed = False
    if total < least:
        log(f"differential: FAILED: only {total} queries, at least {least} required")
        failed = True
    # What was judged, not what was sent: a field counts where Knot and NSD
    # agree (so ours was held to them); skipped fields are capped per field.
    fields = [f for f in FIELDS if report["checked"][f] + report["skipped"][f] > 0]
    judged = sum(report["checked"][f] for f in FIELDS)
    skipped = sum(report["skipped"][f] for f in FIELDS)
    log(f"differential: {judged} field comparisons judged, {skipped} skipped "
        f"({100 * skipped / max(judged + skipped, 1):.2f}%; floor {min_judged} judged, "
        f"cap {max_pct}% skipped per field)")
    log("  skipped share per field: " + ", ".join(
        f"{f} {100 * report['skipped'][f] / (report['checked'][f] + report['skipped'][f]):.2f}%"
        for f in fields))
    if judged < min_judged:
        log(f"differential: FAILED: only {judged} field comparisons judged, "
            f"at least {min_judged} required")
        failed = True
    for f in fields:
        share = 100 * report["skipped"][f] / (report["checked"][f] + report["skipped"][f])
        if share > max_pct:
            log(f"differential: FAILED: {f}: {share:.2f}% skipped (Knot and NSD disagree), "
                f"at most {max_pct}%")
            failed = True
    if report["skipped"]["axfr"] > args.max_axfr_skipped:
        log(f"differential: FAILED: Knot and NSD disagree on {report['skipped']['axfr']} zone "
            f"transfers, at most {args.max_axfr_skipped}")
        failed = True
    if diffs:
        log("differential: FAILED: unexplained differences (see above)")
        failed = True
    if not failed:
        log("differential: passed")
    return 1 if failed else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Fail as e:
        log(f"differential: FAILED: {e}")
        sys.exit(2)
