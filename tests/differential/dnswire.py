"""DNS wire format for the differential suite: building queries, parsing replies.

    build_query(name, qtype, ...) ─► bytes
    parse_message(bytes) ─► Message(header, question, sections, OPT)
        records normalised for comparison: owner lower-cased, names inside
        rdata decompressed and lower-cased, rdata shown as text

Python 3 standard library only. Strict: anything malformed raises WireError.
"""

import socket
import struct

TYPES = {
    "A": 1, "NS": 2, "MD": 3, "MF": 4, "CNAME": 5, "SOA": 6, "MB": 7, "MG": 8,
    "MR": 9, "NULL": 10, "WKS": 11, "PTR": 12, "HINFO": 13, "MINFO": 14,
    "MX": 15, "TXT": 16, "RP": 17, "AFSDB": 18, "RT": 21, "SIG": 24, "KEY": 25,
    "PX": 26, "AAAA": 28, "LOC": 29, "NXT": 30, "SRV": 33, "NAPTR": 35,
    "KX": 36, "CERT": 37, "A6": 38, "DNAME": 39, "OPT": 41, "DS": 43,
    "SSHFP": 44, "RRSIG": 46, "NSEC": 47, "DNSKEY": 48, "NSEC3": 50,
    "NSEC3PARAM": 51, "TLSA": 52, "SMIMEA": 53, "CDS": 59, "CDNSKEY": 60,
    "OPENPGPKEY": 61, "CSYNC": 62, "ZONEMD": 63, "SVCB": 64, "HTTPS": 65,
    "SPF": 99, "TKEY": 249, "TSIG": 250, "IXFR": 251, "AXFR": 252,
    "MAILB": 253, "MAILA": 254, "ANY": 255, "URI": 256, "CAA": 257,
}
TYPE_NAMES = {v: k for k, v in TYPES.items()}

RCODES = {0: "NOERROR", 1: "FORMERR", 2: "SERVFAIL", 3: "NXDOMAIN",
          4: "NOTIMP", 5: "REFUSED", 6: "YXDOMAIN", 9: "NOTAUTH", 16: "BADVERS"}

# Where the names are in the rdata of the types that carry names:
# "N" a name, an int n a fixed field of n bytes, "S" a character-string,
# "R" the rest as bytes.
RDATA_LAYOUT = {
    2: ["N"], 3: ["N"], 4: ["N"], 5: ["N"], 7: ["N"], 8: ["N"], 9: ["N"],
    12: ["N"], 39: ["N"], 6: ["N", "N", "R"], 14: ["N", "N"], 17: ["N", "N"],
    15: [2, "N"], 18: [2, "N"], 21: [2, "N"], 36: [2, "N"], 33: [6, "N"],
    26: [2, "N", "N"], 35: [4, "S", "S", "S", "N"],
}


class WireError(Exception):
    """A message that does not parse."""


def type_name(t):
    """The mnemonic of type `t`, or TYPEnnn."""
    return TYPE_NAMES.get(t, f"TYPE{t}")


def type_code(text):
    """The number of a mnemonic or TYPEnnn."""
    if text.upper().startswith("TYPE") and text[4:].isdigit():
        return int(text[4:])
    return TYPES[text.upper()]


def label_text(label):
    """A label in presentation format (RFC 1035 §5.1 escapes)."""
    out = []
    for b in label:
        c = chr(b)
        if c in '.\\"()$;@ ':
            out.append("\\" + c)
        elif 0x21 <= b <= 0x7E:
            out.append(c)
        else:
            out.append(f"\\{b:03d}")
    return "".join(out)


def name_text(labels):
    """A name (tuple of bytes labels) in presentation format."""
    if not labels:
        return "."
    return ".".join(label_text(l) for l in labels) + "."


def parse_name_text(text):
    """Presentation-format absolute name to a tuple of bytes labels."""
    if text == ".":
        return ()
    labels, cur, i = [], bytearray(), 0
    while i < len(text):
        c = text[i]
        if c == "\\":
            if text[i + 1:i + 4].isdigit() and len(text[i + 1:i + 4]) == 3:
                cur.append(int(text[i + 1:i + 4]))
                i += 4
                continue
            cur.append(ord(text[i + 1]))
            i += 2
            continue
        if c == ".":
            labels.append(bytes(cur))
            cur = bytearray()
        else:
            cur.append(ord(c))
        i += 1
    if cur:
        labels.append(bytes(cur))
    return tuple(labels)


def lower(labels):
    """ASCII case-folded labels."""
    return tuple(l.lower() for l in labels)


def name_wire(labels):
    """Uncompressed wire form of a name."""
    out = bytearray()
    for l in labels:
        out.append(len(l))
        out += l
    out.append(0)
    return bytes(out)


def read_name(msg, off):
    """Reads a possibly compressed name; returns (labels, offset after it)."""
    labels, end, hops, total = [], None, 0, 1
    while True:
        if off >= len(msg):
            raise WireError("name runs past the end")
        n = msg[off]
        if n & 0xC0 == 0xC0:
            if off + 1 >= len(msg):
                raise WireError("truncated pointer")
            target = ((n & 0x3F) << 8) | msg[off + 1]
            if end is None:
                end = off + 2
            hops += 1
            if hops > 128 or target >= len(msg):
                raise WireError("compression loop")
            off = target
            continue
        if n & 0xC0:
            raise WireError("reserved label type")
        if n == 0:
            off += 1
            break
        label = msg[off + 1:off + 1 + n]
        if len(label) != n:
            raise WireError("label runs past the end")
        total += n + 1
        if total > 255:
            raise WireError("name too long")
        labels.append(bytes(label))
        off += 1 + n
    return tuple(labels), (end if end is not None else off)


def rdata_text(msg, rtype, start, length):
    """The rdata of one record as comparable text (names decompressed, lower-cased)."""
    end = start + length
    if rtype == 1 and length == 4:
        return socket.inet_ntop(socket.AF_INET, msg[start:end])
    if rtype == 28 and length == 16:
        return socket.inet_ntop(socket.AF_INET6, msg[start:end])
    layout = RDATA_LAYOUT.get(rtype)
    if layout is None:
        return f"\\# {length} {msg[start:end].hex()}"
    parts, off = [], start
    for field in layout:
        if field == "N":
            labels, off = read_name(msg, off)
            parts.append(name_text(lower(labels)))
        elif field == "S":
            n = msg[off]
            parts.append(msg[off:off + 1 + n].hex())
            off += 1 + n
        elif field == "R":
            parts.append(msg[off:end].hex())
            off = end
        else:
            parts.append(msg[off:off + field].hex())
            off += field
    if off != end:
        raise WireError(f"rdata length mismatch in {type_name(rtype)}")
    return " ".join(parts)


class Record:
    """One resource record, comparable: (owner, ttl, class, type, rdata text)."""

    __slots__ = ("key",)

    def __init__(self, owner, ttl, rclass, rtype, rdata):
        self.key = (name_text(lower(owner)), ttl, rclass, rtype, rdata)

    def __repr__(self):
        o, ttl, c, t, rd = self.key
        cls = "IN" if c == 1 else f"CLASS{c}"
        return f"{o} {ttl} {cls} {type_name(t)} {rd}"


class Message:
    """A parsed reply."""

    def __init__(self):
        self.id = 0
        self.flags = 0
        self.rcode = 0
        self.question = []
        self.question_raw = b""
        self.sections = ([], [], [])
        self.opt = None  # dict when the message carried OPT

    @property
    def opcode(self):
        return (self.flags >> 11) & 0xF

    def flag_text(self):
        names = [(0x8000, "qr"), (0x0400, "aa"), (0x0200, "tc"), (0x0100, "rd"),
                 (0x0080, "ra"), (0x0040, "z"), (0x0020, "ad"), (0x0010, "cd")]
        return " ".join(n for bit, n in names if self.flags & bit) + f" opcode={self.opcode}"


def parse_message(msg):
    """Parses a whole message; raises WireError on anything malformed."""
    if len(msg) < 12:
        raise WireError("shorter than a header")
    m = Message()
    m.id, word, qd, an, ns, ar = struct.unpack("!HHHHHH", msg[:12])
    m.flags = word & 0xFFF0
    m.rcode = word & 0xF
    off = 12
    for _ in range(qd):
        start = off
        labels, off = read_name(msg, off)
        if off + 4 > len(msg):
            raise WireError("truncated question")
        qtype, qclass = struct.unpack("!HH", msg[off:off + 4])
        off += 4
        m.question.append((labels, qtype, qclass))
        m.question_raw += msg[start:off]
    for index, count in enumerate((an, ns, ar)):
        for _ in range(count):
            owner, off = read_name(msg, off)
            if off + 10 > len(msg):
                raise WireError("truncated record header")
            rtype, rclass, ttl, rdlen = struct.unpack("!HHIH", msg[off:off + 10])
            off += 10
            if off + rdlen > len(msg):
                raise WireError("rdata runs past the end")
            if rtype == 41:
                if index != 2 or m.opt is not None:
                    raise WireError("misplaced or repeated OPT")
                options = []
                o = off
                while o < off + rdlen:
                    code, olen = struct.unpack("!HH", msg[o:o + 4])
                    options.append((code, msg[o + 4:o + 4 + olen].hex()))
                    o += 4 + olen
                m.opt = {
                    "udp": rclass,
                    "ext_rcode": ttl >> 24,
                    "version": (ttl >> 16) & 0xFF,
                    "do": bool(ttl & 0x8000),
                    "z": ttl & 0x7FFF,
                    "options": options,
                    "owner": name_text(owner),
                }
            else:
                m.sections[index].append(
                    Record(owner, ttl, rclass, rtype, rdata_text(msg, rtype, off, rdlen)))
            off += rdlen
    if off != len(msg):
        raise WireError("trailing bytes")
    if m.opt is not None:
        m.rcode |= m.opt["ext_rcode"] << 4
    return m


def build_query(labels, qtype, qid=0, edns=None, rd=False, cd=False, ad=False,
                qclass=1, opt_extra=None):
    """A query. `edns` is None or (udp size, DO, version, z flags, options bytes)."""
    flags = (0x0100 if rd else 0) | (0x0010 if cd else 0) | (0x0020 if ad else 0)
    out = bytearray(struct.pack("!HHHHHH", qid, flags, 1, 0, 0, 1 if edns else 0))
    out += name_wire(labels)
    out += struct.pack("!HH", qtype, qclass)
    if edns:
        size, do, version, z, options = edns
        ttl = (version << 16) | (0x8000 if do else 0) | z
        out += b"\x00" + struct.pack("!HHIH", 41, size, ttl, len(options)) + options
    if opt_extra:
        out += opt_extra
    return bytes(out)


def rdata_wire(msg, rtype, start, length):
    """The rdata of one record with every name in it decompressed."""
    end = start + length
    layout = RDATA_LAYOUT.get(rtype)
    if layout is None:
        return msg[start:end]
    out, off = bytearray(), start
    for field in layout:
        if field == "N":
            labels, off = read_name(msg, off)
            out += name_wire(labels)
        elif field == "S":
            out += msg[off:off + 1 + msg[off]]
            off += 1 + msg[off]
        elif field == "R":
            out += msg[off:end]
            off = end
        else:
            out += msg[off:off + field]
            off += field
    if off != end:
        raise WireError(f"rdata length mismatch in {type_name(rtype)}")
    return bytes(out)


def zone_file_lines(msg):
    """The answer records of a (transfer) message as master-file lines,
    owner letter case kept and rdata in RFC 3597 form (`\\# len hex`), which
    every server reads for every type: a zone taken from one server byte
    for byte, to be loaded into another."""
    _, _, qd, an, _, _ = struct.unpack("!HHHHHH", msg[:12])
    off = 12
    for _ in range(qd):
        _, off = read_name(msg, off)
        off += 4
    lines = []
    for _ in range(an):
        owner, off = read_name(msg, off)
        rtype, rclass, ttl, rdlen = struct.unpack("!HHIH", msg[off:off + 10])
        off += 10
        rd = rdata_wire(msg, rtype, off, rdlen)
        cls = "IN" if rclass == 1 else f"CLASS{rclass}"
        lines.append(f"{name_text(owner)} {ttl} {cls} TYPE{rtype} \\# {len(rd)} {rd.hex()}"
                     if rd else f"{name_text(owner)} {ttl} {cls} TYPE{rtype} \\# 0")
        off += rdlen
    return lines
