//! Key rollovers through the binary: ZSK and KSK, checked by
//! `dnssec-verify`; CDS and CDNSKEY follow the KSKs; no private key in any
//! output.
//!
//! ```text
//!  secure-zone ─► roll ZSK / KSK ─► export ─► sig_tags per step ─► verify
//!  KSKs published ─► CDS / CDNSKEY match them
//! ```

use super::*;

/// Key tags of the RRSIGs over `rtype` in an exported zone.
fn sig_tags(export: &str, rtype: &str) -> Vec<u16> {
    let mut tags: Vec<u16> = export
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.get(3) == Some(&"RRSIG") && f.get(4) == Some(&rtype)).then(|| f[10].parse().unwrap())
        })
        .collect();
    tags.sort_unstable();
    tags.dedup();
    tags
}

#[test]
fn zsk_and_ksk_rollovers_and_no_private_key_in_output() {
    let db = Db::new("signcli_roll");
    let shown = db.ok(&["secure-zone", "example.net"]);
    assert!(shown.contains("example.net. IN DS "), "{shown}");
    let keys = runtime()
        .block_on(db.store.zone_keys(&"example.net.".parse().unwrap()))
        .unwrap();
    assert_eq!(keys.len(), 2);
    let ksk = keys.iter().find(|k| k.is_ksk()).unwrap().clone();
    let zsk = keys.iter().find(|k| !k.is_ksk()).unwrap().clone();
    let ds: Vec<&str> = shown.lines().filter(|l| l.contains(" IN DS ")).collect();
    assert_eq!(ds.len(), 1);
    let f: Vec<&str> = ds[0].split_whitespace().collect();
    assert_eq!(f[3].parse::<u16>().unwrap(), ksk.tag);
    assert_eq!((f[4], f[5], f[6].len()), ("13", "2", 64));

    // Private keys (the P-256 scalar inside the PKCS#8) are never printed.
    let export = db.ok(&["export-zone", "example.net"]);
    for k in &keys {
        let scalar = &k.private_pkcs8[36..68];
        let hex = dns::encoding::to_hex(scalar);
        let b64 = dns::encoding::base64(scalar);
        for out in [&shown, &export] {
            assert!(!out.to_lowercase().contains(&hex));
            assert!(!out.contains(&b64[..40]));
        }
        assert!(!format!("{k:?}").contains(&hex));
    }
    verify(&export, "example.net", false);
    assert_eq!(sig_tags(&export, "A"), vec![zsk.tag]);

    // ZSK rollover by pre-publication.
    let added = db.ok(&["add-key", "example.net"]);
    let new_tag: u16 = added.split_whitespace().nth(5).unwrap().parse().unwrap();
    let export = db.ok(&["export-zone", "example.net"]);
    assert_eq!(count(&export, "\tDNSKEY\t"), 3);
    assert_eq!(
        sig_tags(&export, "A"),
        vec![zsk.tag],
        "published, not signing yet"
    );
    db.ok(&["activate-key", "example.net", &new_tag.to_string()]);
    db.ok(&["retire-key", "example.net", &zsk.tag.to_string()]);
    let export = db.ok(&["export-zone", "example.net"]);
    assert_eq!(sig_tags(&export, "A"), vec![new_tag]);
    assert_eq!(
        count(&export, "\tDNSKEY\t"),
        3,
        "the old ZSK stays published"
    );
    verify(&export, "example.net", false);
    db.ok(&["remove-key", "example.net", &zsk.tag.to_string()]);
    let export = db.ok(&["export-zone", "example.net"]);
    assert_eq!(count(&export, "\tDNSKEY\t"), 2);
    verify(&export, "example.net", false);

    // KSK rollover by double signature.
    let added = db.ok(&["add-key", "example.net", "--ksk", "--active"]);
    let new_ksk: u16 = added.split_whitespace().nth(5).unwrap().parse().unwrap();
    let export = db.ok(&["export-zone", "example.net"]);
    let mut both = vec![ksk.tag, new_ksk];
    both.sort_unstable();
    assert_eq!(sig_tags(&export, "DNSKEY"), both);
    let shown = db.ok(&["show-zone", "example.net"]);
    assert_eq!(count(&shown, " IN DS "), 2);
    db.ok(&["remove-key", "example.net", &ksk.tag.to_string()]);
    let export = db.ok(&["export-zone", "example.net"]);
    assert_eq!(sig_tags(&export, "DNSKEY"), vec![new_ksk]);
    verify(&export, "example.net", false);
    let shown = db.ok(&["show-zone", "example.net"]);
    assert_eq!(count(&shown, " IN DS "), 1);

    // unsecure-zone: no DNSSEC data left, keys gone.
    db.ok(&["unsecure-zone", "example.net"]);
    let export = db.ok(&["export-zone", "example.net"]);
    assert_eq!(
        count(&export, "RRSIG") + count(&export, "NSEC") + count(&export, "DNSKEY"),
        0
    );
    assert!(db.ok(&["show-zone", "example.net"]).contains("no keys"));
    db.drop_db();
}

#[test]
fn cds_and_cdnskey_follow_the_ksks() {
    let db = Db::new("signcli_cds");
    let shown = db.ok(&["secure-zone", "example.net", "--cds"]);
    let ds: Vec<String> = shown
        .lines()
        .filter(|l| l.contains(" IN DS "))
        .map(|l| l.split(" IN DS ").nth(1).unwrap().to_string())
        .collect();
    let export = db.ok(&["export-zone", "example.net"]);
    let cds: Vec<String> = export
        .lines()
        .filter(|l| l.split('\t').nth(3) == Some("CDS"))
        .map(|l| l.split('\t').nth(4).unwrap().to_string())
        .collect();
    assert_eq!(cds, ds, "CDS is the DS shown for the parent");
    assert_eq!(count(&export, "\tCDNSKEY\t"), 1);
    assert_eq!(sig_tags(&export, "CDS").len(), 1, "CDS signed by the KSK");
    verify(&export, "example.net", false);
    db.ok(&["add-key", "example.net", "--ksk", "--active"]);
    let export = db.ok(&["export-zone", "example.net"]);
    assert_eq!(count(&export, "\tCDS\t"), 2);
    assert_eq!(count(&export, "\tCDNSKEY\t"), 2);
    verify(&export, "example.net", false);
    db.drop_db();
}
