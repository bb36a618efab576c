//! Deterministic synthetic zones and dnsperf query files.
//!
//! ```text
//!  seed ─► hash(seed, i) ─► name i of the big zone (label, address, AAAA?, TXT?)
//!          │                    └─► BigZone::write  (streamed, constant memory)
//!          ├─► small zone j ───────► write_small_zones (one multi-zone file or a directory)
//!          └─► query lines ───────► write_queries (first K, last K, hot H, random; + mix)
//! ```
//!
//! Every value is a pure function of `(seed, index)`: nothing is kept in
//! memory, so a zone of 16 million records is written with the same few
//! kilobytes as one of ten, and a query file can name "the last K names"
//! without reading the zone back. The same seed always gives the same bytes.
//!
//! # The big zone
//!
//! ```text
//!  @      SOA, NS ns1, NS ns2          ns1, ns2   A
//!  *.wild A, TXT                       (wildcard queries: <random>.wild A)
//!  sub    NS ns.sub  + glue ns.sub A   (a delegation)
//!  <label><i>  A  [AAAA 1 in 2]  [TXT 1 in 4]     for i = 0, 1, 2, …
//! ```
//!
//! Names are generated until the zone holds exactly the number of records
//! asked for (the last name may get fewer RRsets). No generated name has an
//! `MX`, so `name MX` is a NODATA query, and `nx-<hex>` never collides with a
//! generated label (labels are letters then digits).

use std::fmt::Write as _;
use std::io::{self, BufWriter, Write};
use std::path::Path;

/// The records at the apex and the special names, before the generated ones.
pub const FIXED_RECORDS: u64 = 9;

/// SplitMix64: a small, fast, well-mixed 64-bit hash of `(seed, index)`.
pub fn hash(seed: u64, index: u64) -> u64 {
    let mut z = seed
        .wrapping_mul(0xD6E8_FEB8_6659_FD93)
        .wrapping_add(index.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

const CONSONANTS: &[u8; 16] = b"bdfghklmnprstvwz";
const VOWELS: &[u8; 4] = b"aeio";

/// Three pronounceable syllables from `h`, e.g. `kotami`.
fn syllables(h: u64, out: &mut String) {
    for k in 0..3 {
        let bits = (h >> (k * 6)) as usize;
        out.push(CONSONANTS[bits & 15] as char);
        out.push(VOWELS[(bits >> 4) & 3] as char);
    }
}

/// What one generated name of the big zone holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GenName {
    /// Position in the zone (0 = first generated name).
    pub index: u64,
    /// The relative label, e.g. `kotami42`.
    pub label: String,
    /// IPv4 address (always present).
    pub a: [u8; 4],
    /// Has an AAAA record.
    pub aaaa: bool,
    /// Has a TXT record.
    pub txt: bool,
}

impl GenName {
    /// Name `index` of the zone generated from `seed` (with `prefix` before the label).
    pub fn new(seed: u64, prefix: &str, index: u64) -> GenName {
        let h = hash(seed, index);
        let mut label = String::with_capacity(prefix.len() + 16);
        label.push_str(prefix);
        syllables(h, &mut label);
        let _ = write!(label, "{index}");
        GenName {
            index,
            label,
            a: [10, (h >> 24) as u8, (h >> 32) as u8, (h >> 40) as u8 | 1],
            aaaa: (h >> 48) & 1 == 0,
            txt: (h >> 49) & 3 == 0,
        }
    }

    /// Records this name carries in full.
    pub fn records(&self) -> u64 {
        1 + u64::from(self.aaaa) + u64::from(self.txt)
    }

    fn write(&self, seed: u64, limit: u64, out: &mut impl Write) -> io::Result<u64> {
        let [a, b, c, d] = self.a;
        writeln!(out, "{} A {a}.{b}.{c}.{d}", self.label)?;
        let mut n = 1;
        if self.aaaa && n < limit {
            // Two 16-bit groups: every index up to 2^32 gives a valid address.
            let (hi, lo) = ((self.index >> 16) & 0xffff, self.index & 0xffff);
            writeln!(out, "{} AAAA 2001:db8::{hi:x}:{lo:x}", self.label)?;
            n += 1;
        }
        if self.txt && n < limit {
            writeln!(
                out,
                "{} TXT \"v=gen1 seed={seed} i={}\"",
                self.label, self.index
            )?;
            n += 1;
        }
        Ok(n)
    }
}

/// The big zone: `records` records under `apex` generated from `seed`.
#[derive(Clone, Debug)]
pub struct BigZone {
    /// The apex, absolute with the final dot.
    pub apex: String,
    /// The seed.
    pub seed: u64,
    /// Records in the zone, apex records included (unless `bare`).
    pub records: u64,
    /// Put before every generated label (e.g. `fresh-` for an update stream).
    pub prefix: String,
    /// Leave out the SOA, NS and special names (a file to merge into an
    /// existing zone): then `records` counts generated records only.
    pub bare: bool,
}

impl BigZone {
    /// A full zone.
    pub fn new(apex: &str, seed: u64, records: u64) -> BigZone {
        BigZone {
            apex: absolute(apex),
            seed,
            records,
            prefix: String::new(),
            bare: false,
        }
    }

    fn generated_records(&self) -> u64 {
        if self.bare {
            self.records
        } else {
            self.records.saturating_sub(FIXED_RECORDS)
        }
    }

    /// The generated names, in file order (lazily; constant memory).
    pub fn names(&self) -> impl Iterator<Item = GenName> + '_ {
        let mut left = self.generated_records();
        (0u64..).map_while(move |i| {
            if left == 0 {
                return None;
            }
            let name = GenName::new(self.seed, &self.prefix, i);
            left = left.saturating_sub(name.records());
            Some(name)
        })
    }

    /// How many generated names the zone has (walks the hashes; ~30 ns each).
    pub fn name_count(&self) -> u64 {
        self.names().count() as u64
    }

    /// Writes the zone as a master file. Returns the records written.
    pub fn write(&self, out: &mut impl Write) -> io::Result<u64> {
        let mut written = 0;
        writeln!(out, "; mongodns-zonegen big zone seed={}", self.seed)?;
        writeln!(out, "$ORIGIN {}", self.apex)?;
        writeln!(out, "$TTL 3600")?;
        if !self.bare {
            writeln!(
                out,
                "@ SOA ns1 hostmaster 2011010101 7200 3600 1209600 300\n\
                 @ NS ns1\n@ NS ns2\nns1 A 10.0.0.1\nns2 A 10.0.0.2\n\
                 *.wild A 10.0.0.3\n*.wild TXT \"wildcard\"\n\
                 sub NS ns.sub\nns.sub A 10.0.0.4"
            )?;
            written += FIXED_RECORDS;
        }
        let mut left = self.generated_records();
        for name in self.names() {
            let n = name.write(self.seed, left, out)?;
            left -= n;
            written += n;
        }
        Ok(written)
    }

    /// Writes the zone to `path` (buffered).
    pub fn write_file(&self, path: &Path) -> io::Result<u64> {
        let mut out = BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
        let n = self.write(&mut out)?;
        out.flush()?;
        Ok(n)
    }

    /// The absolute name of a generated name.
    pub fn fqdn(&self, name: &GenName) -> String {
        format!("{}.{}", name.label, self.apex)
    }
}

fn absolute(name: &str) -> String {
    if name.ends_with('.') {
        name.to_ascii_lowercase()
    } else {
        format!("{}.", name.to_ascii_lowercase())
    }
}

/// Many small zones: `zones` zones under the parent domain `suffix`.
#[derive(Clone, Debug)]
pub struct SmallZones {
    /// The seed.
    pub seed: u64,
    /// How many zones.
    pub zones: u64,
    /// Parent domain of every zone, e.g. `test.`.
    pub suffix: String,
}

/// Records in every small zone.
pub const SMALL_ZONE_RECORDS: u64 = 7;

impl SmallZones {
    /// `zones` zones named `<label><j>.<suffix>`.
    pub fn new(seed: u64, zones: u64, suffix: &str) -> SmallZones {
        SmallZones {
            seed,
            zones,
            suffix: absolute(suffix),
        }
    }

    /// The apex of zone `j`.
    pub fn apex(&self, j: u64) -> String {
        let mut s = String::with_capacity(32);
        syllables(hash(self.seed ^ 0x5A11, j), &mut s);
        let _ = write!(s, "{j}.{}", self.suffix);
        s
    }

    /// The master-file text of zone `j` (relative to its apex).
    pub fn zone_text(&self, j: u64, out: &mut impl Write) -> io::Result<()> {
        let h = hash(self.seed ^ 0x5A11, j);
        let [b, c, d] = [(h >> 20) as u8, (h >> 28) as u8, (h >> 36) as u8 | 1];
        write!(
            out,
            "$TTL 3600\n\
             @ SOA ns1 hostmaster 2011010101 7200 3600 1209600 300\n\
             @ NS ns1\n\
             @ A 10.{b}.{c}.{}\n\
             @ MX 10 mail\n\
             mail A 10.{b}.{c}.{}\n\
             ns1 A 10.{b}.{c}.{d}\n\
             www A 10.{b}.{c}.{}\n",
            d.wrapping_add(1),
            d.wrapping_add(3),
            d.wrapping_add(2)
        )
    }

    /// Writes every zone to one multi-zone file (`$ZONE <apex>` before each).
    pub fn write_multi(&self, out: &mut impl Write) -> io::Result<u64> {
        writeln!(
            out,
            "; mongodns multi-zone file: {} zones, seed {}",
            self.zones, self.seed
        )?;
        for j in 0..self.zones {
            writeln!(out, "$ZONE {}", self.apex(j))?;
            self.zone_text(j, out)?;
        }
        Ok(self.zones * SMALL_ZONE_RECORDS)
    }

    /// Writes every zone as `<dir>/<apex>zone` (the apex's final dot then `zone`).
    pub fn write_dir(&self, dir: &Path) -> io::Result<u64> {
        std::fs::create_dir_all(dir)?;
        for j in 0..self.zones {
            let path = dir.join(format!("{}zone", self.apex(j)));
            let mut out = BufWriter::new(std::fs::File::create(path)?);
            self.zone_text(j, &mut out)?;
            out.flush()?;
        }
        Ok(self.zones * SMALL_ZONE_RECORDS)
    }
}

/// Which names of the big zone a query file asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Selection {
    /// The first K generated names, in order.
    First(u64),
    /// The last K generated names, in order.
    Last(u64),
    /// Names drawn at random (with the seed) from the whole zone.
    Random,
}

/// Percentages of special queries mixed into a query file; the rest are
/// `A` queries for the selected names.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Mix {
    /// `AAAA` for a selected name that has one.
    pub aaaa: u32,
    /// `nx-<hex>.<apex> A`: a name that does not exist.
    pub nxdomain: u32,
    /// `<name> MX`: a name that exists, without that type.
    pub nodata: u32,
    /// `<hex>.wild.<apex> A`: answered from the wildcard.
    pub wildcard: u32,
}

/// Writes `total` dnsperf lines (`name TYPE`) for `zone`.
///
/// With `First`/`Last` the selected names are cycled in order (so a file of
/// K lines asks each once); `Random` draws from the whole zone. Each line is
/// replaced by a special query with the [`Mix`] percentages (deterministic).
pub fn write_queries(
    zone: &BigZone,
    selection: Selection,
    total: u64,
    mix: Mix,
    out: &mut impl Write,
) -> io::Result<u64> {
    let count = zone.name_count();
    if count == 0 {
        return Err(io::Error::other("the zone has no generated names"));
    }
    let (start, span) = match selection {
        Selection::First(k) => (0, k.min(count).max(1)),
        Selection::Last(k) => {
            let k = k.min(count).max(1);
            (count - k, k)
        }
        Selection::Random => (0, count),
    };
    let qseed = zone.seed ^ 0x0051_E2E5;
    let mut written = 0;
    let mut line = 0u64;
    while written < total {
        let h = hash(qseed, line);
        line += 1;
        let index = match selection {
            Selection::Random => start + (hash(qseed ^ 1, line) % span),
            _ => start + (line - 1) % span,
        };
        let roll = (h % 100) as u32;
        let name = GenName::new(zone.seed, &zone.prefix, index);
        let mut t = mix.aaaa;
        if roll < t {
            if !name.aaaa {
                // Keep the AAAA share exact: find a name that has one.
                let mut k = index;
                let with = loop {
                    k = if k + 1 >= start + span { start } else { k + 1 };
                    let n = GenName::new(zone.seed, &zone.prefix, k);
                    if n.aaaa || k == index {
                        break n;
                    }
                };
                writeln!(out, "{} AAAA", zone.fqdn(&with))?;
            } else {
                writeln!(out, "{} AAAA", zone.fqdn(&name))?;
            }
        } else if roll < {
            t += mix.nxdomain;
            t
        } {
            writeln!(out, "nx-{:x}.{} A", h >> 16, zone.apex)?;
        } else if roll < {
            t += mix.nodata;
            t
        } {
            writeln!(out, "{} MX", zone.fqdn(&name))?;
        } else if roll < {
            t += mix.wildcard;
            t
        } {
            writeln!(out, "w{:x}.wild.{} A", h >> 16, zone.apex)?;
        } else {
            writeln!(out, "{} A", zone.fqdn(&name))?;
        }
        written += 1;
    }
    Ok(written)
}

/// Writes a query file to `path`.
pub fn write_queries_file(
    zone: &BigZone,
    selection: Selection,
    total: u64,
    mix: Mix,
    path: &Path,
) -> io::Result<u64> {
    let mut out = BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    let n = write_queries(zone, selection, total, mix, &mut out)?;
    out.flush()?;
    Ok(n)
}

/// The caches benchmark's data set (`bench/peers`), written into `dir`:
///
/// * `caches.zone`: zone `apex` with 100,000 generated names (A on all,
///   AAAA on about half, TXT on about a quarter), a wildcard and a delegation;
/// * `caches-queries.txt`: 200,000 queries: 80% existing A, 10% AAAA,
///   5% NXDOMAIN, 5% wildcard, names drawn at random;
/// * `caches-hot.txt`: the first 736 names, A.
///
/// Returns the three paths.
pub fn write_caches_set(
    dir: &Path,
    apex: &str,
    seed: u64,
    names: u64,
) -> io::Result<[std::path::PathBuf; 3]> {
    std::fs::create_dir_all(dir)?;
    // Count records so that exactly `names` names are generated.
    let probe = BigZone::new(apex, seed, u64::MAX);
    let records: u64 = probe
        .names()
        .take(names as usize)
        .map(|n| n.records())
        .sum();
    let zone = BigZone::new(apex, seed, records + FIXED_RECORDS);
    let zone_path = dir.join("caches.zone");
    zone.write_file(&zone_path)?;
    let mix = Mix {
        aaaa: 10,
        nxdomain: 5,
        nodata: 0,
        wildcard: 5,
    };
    let queries = dir.join("caches-queries.txt");
    write_queries_file(&zone, Selection::Random, 200_000, mix, &queries)?;
    let hot = dir.join("caches-hot.txt");
    write_queries_file(&zone, Selection::First(736), 736, Mix::default(), &hot)?;
    Ok([zone_path, queries, hot])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(zone: &BigZone) -> String {
        let mut v = Vec::new();
        let n = zone.write(&mut v).unwrap();
        assert_eq!(n, zone.records);
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn same_seed_same_bytes_other_seed_other_bytes() {
        let a = text(&BigZone::new("example.com", 7, 1000));
        let b = text(&BigZone::new("example.com.", 7, 1000));
        let c = text(&BigZone::new("example.com.", 8, 1000));
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn exact_record_counts() {
        for n in [9, 10, 11, 12, 13, 100, 1001] {
            let z = BigZone::new("example.com.", 3, n);
            let t = text(&z);
            let lines = t.lines().filter(|l| !l.starts_with(['$', ';'])).count() as u64;
            assert_eq!(lines, n, "n={n}");
        }
        let mut bare = BigZone::new("example.com.", 3, 50);
        bare.bare = true;
        bare.prefix = "fresh-".into();
        let t = text(&bare);
        assert!(!t.contains("SOA"));
        assert!(t.lines().nth(3).unwrap().starts_with("fresh-"));
    }

    #[test]
    fn labels_are_unique_and_never_look_like_nx_or_wild() {
        let z = BigZone::new("example.com.", 1, 20_000);
        let mut seen = std::collections::HashSet::new();
        for n in z.names() {
            assert!(!n.label.starts_with("nx-") && !n.label.contains('.'));
            assert!(seen.insert(n.label));
        }
    }

    #[test]
    fn query_files_select_and_mix() {
        let z = BigZone::new("example.com.", 5, 2000);
        let count = z.name_count();
        let first = GenName::new(5, "", 0);
        let last = GenName::new(5, "", count - 1);
        let mut v = Vec::new();
        write_queries(&z, Selection::First(10), 10, Mix::default(), &mut v).unwrap();
        let t = String::from_utf8(v).unwrap();
        assert_eq!(t.lines().count(), 10);
        assert_eq!(t.lines().next().unwrap(), format!("{} A", z.fqdn(&first)));
        let mut v = Vec::new();
        write_queries(&z, Selection::Last(3), 3, Mix::default(), &mut v).unwrap();
        let t = String::from_utf8(v).unwrap();
        assert_eq!(t.lines().last().unwrap(), format!("{} A", z.fqdn(&last)));
        let mix = Mix {
            aaaa: 10,
            nxdomain: 20,
            nodata: 10,
            wildcard: 20,
        };
        let mut v = Vec::new();
        write_queries(&z, Selection::Random, 10_000, mix, &mut v).unwrap();
        let t = String::from_utf8(v).unwrap();
        let share = |f: &dyn Fn(&str) -> bool| t.lines().filter(|l| f(l)).count() as f64 / 100.0;
        let nx = share(&|l| l.starts_with("nx-"));
        let wild = share(&|l| l.contains(".wild."));
        let aaaa = share(&|l| l.ends_with(" AAAA"));
        let mx = share(&|l| l.ends_with(" MX"));
        assert!((nx - 20.0).abs() < 2.0, "{nx}");
        assert!((wild - 20.0).abs() < 2.0, "{wild}");
        assert!((aaaa - 10.0).abs() < 2.0, "{aaaa}");
        assert!((mx - 10.0).abs() < 2.0, "{mx}");
    }

    #[test]
    fn small_zones_are_distinct_and_deterministic() {
        let s = SmallZones::new(9, 100, "test");
        let mut v = Vec::new();
        s.write_multi(&mut v).unwrap();
        let t = String::from_utf8(v).unwrap();
        assert_eq!(t.matches("$ZONE ").count(), 100);
        let apexes: std::collections::HashSet<_> = (0..100).map(|j| s.apex(j)).collect();
        assert_eq!(apexes.len(), 100);
        assert!(s.apex(0).ends_with("0.test."));
    }
}
