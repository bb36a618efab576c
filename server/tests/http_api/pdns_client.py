#!/usr/bin/env python3
"""Drives mongodns's HTTP API with python-powerdns, a PowerDNS API client.

    pdns_client.py ENDPOINT KEY ZONE
      servers ─► create_zone (www A, old A) ─► create again: 409
      ─► create_records (REPLACE www A ×2, txt TXT) ─► delete_records (old A)
      ─► a second zone created and deleted (delete_zone)
      ─► details: the RRsets read back ─► bad content: 422
      prints one JSON summary line; exits 1 on any mismatch

Run by server/tests/http_api.rs; the Rust test checks the summary and then
asks the DNS server itself.
"""

import json
import sys

try:
    import powerdns
    from powerdns.exceptions import PDNSError
except ImportError:
    print("python-powerdns is not installed: python3 -m pip install python-powerdns==2.1.0",
          file=sys.stderr)
    sys.exit(3)


def expect(condition, what):
    if not condition:
        print(f"mismatch: {what}", file=sys.stderr)
        sys.exit(1)


def error_status(call):
    """The status of the PDNSError `call` raises (None if it succeeds)."""
    try:
        call()
    except PDNSError as e:
        return e.status_code, str(e.message)
    return None, ""


def rrset_map(details):
    return {(r["name"], r["type"]): (r["ttl"], sorted(x["content"] for x in r["records"]))
            for r in details["rrsets"]}


def main():
    endpoint, key, zone_name = sys.argv[1:4]
    api = powerdns.PDNSEndpoint(powerdns.PDNSApiClient(api_endpoint=endpoint, api_key=key))
    server = api.servers[0]
    expect(server.daemon_type == "authoritative", f"daemon_type {server.daemon_type}")

    first = [powerdns.RRSet(f"www.{zone_name}", "A", ["192.0.2.1"], ttl=300),
             powerdns.RRSet(f"old.{zone_name}", "A", ["192.0.2.9"], ttl=300)]
    zone = server.create_zone(zone_name, "Native", [f"ns1.{zone_name}"], rrsets=first)
    expect(zone is not None and zone.name == zone_name, "the created zone")
    again, _ = error_status(
        lambda: server.create_zone(zone_name, "Native", [f"ns1.{zone_name}"]))
    expect(again == 409, f"creating it again: {again}")
    expect(server.get_zone(zone_name) is not None, "the zone is listed")

    zone.create_records([
        powerdns.RRSet("www", "A", ["192.0.2.10", "192.0.2.11"], ttl=120),
        powerdns.RRSet("txt", "TXT", ['"hello from python-powerdns"'], ttl=60),
    ])
    zone.delete_records([powerdns.RRSet("old", "A", [])])

    rrsets = rrset_map(zone.details)
    expect(rrsets.get((f"www.{zone_name}", "A")) == (120, ["192.0.2.10", "192.0.2.11"]),
           f"www A read back: {rrsets}")
    expect((f"old.{zone_name}", "A") not in rrsets, "old A deleted")
    expect((zone_name, "SOA") in rrsets and (zone_name, "NS") in rrsets, "apex SOA and NS")

    bad, bad_message = error_status(
        lambda: zone.create_records([powerdns.RRSet("bad", "A", ["not-an-address"])]))
    expect(bad == 422, f"bad content: {bad} {bad_message}")

    doomed = "doomed-" + zone_name
    server.create_zone(doomed, "Native", [f"ns1.{doomed}"])
    expect(server.get_zone(doomed) is not None, "the second zone is listed")
    server.delete_zone(doomed)
    expect(server.get_zone(doomed) is None, "the deleted zone is not listed")

    print(json.dumps({"zone": zone.name, "rrsets": len(rrsets),
                      "bad_content": [bad, bad_message], "deleted": doomed}))


main()
