//! `/metrics` lists only the largest resident zones and sums the rest.
//!
//! ```text
//!  many zones resident ─► /metrics ─► zone_sizes: the largest, in order
//!                                  ─► gauge: the rest summed
//! ```

use super::*;

/// Every zone `/metrics` lists: (zone, bytes, records), in its order.
fn zone_sizes(body: &str) -> Vec<(String, u64, u64)> {
    let value = |family: &str, zone: &str| -> u64 {
        let prefix = format!("mongodns_resident_zone_{family}{{zone=\"{zone}\"}} ");
        let line = body.lines().find_map(|l| l.strip_prefix(&prefix));
        line.and_then(|v| v.trim().parse().ok()).unwrap()
    };
    body.lines()
        .filter_map(|l| l.strip_prefix("mongodns_resident_zone_bytes{zone=\""))
        .map(|l| l.split_once('"').unwrap().0)
        .map(|z| (z.to_string(), value("bytes", z), value("records", z)))
        .collect()
}

/// `/metrics`' gauge `name` (unlabelled).
fn gauge(body: &str, name: &str) -> u64 {
    let prefix = format!("{name} ");
    let line = body.lines().find(|l| l.starts_with(&prefix));
    let value = line.and_then(|l| l[prefix.len()..].trim().parse().ok());
    value.unwrap_or_else(|| panic!("no {name} in /metrics"))
}

#[test]
fn metrics_list_only_the_largest_resident_zones_and_sum_the_rest() {
    // Twelve small zones, zone i with 3 + i records.
    let zones = 12;
    let db = block_on(async {
        let db = TestZoneDb::new("resident_series").await;
        for i in 0..zones {
            let mut text = format!(
                "$ORIGIN z{i}.sum.test.\n@ 300 IN SOA ns admin 1 3600 600 86400 60\n\
                 @ 300 IN NS ns\nns 300 IN A 192.0.2.1\n"
            );
            for j in 0..i {
                text.push_str(&format!("h{j} 300 IN A 192.0.2.{}\n", j + 1));
            }
            db.import(&format!("z{i}.sum.test."), &text, false).await;
        }
        db
    });
    // One server lists every zone (the default bound, 100), one only 3.
    let (all_server, all_control) = server(&db, true, &[]);
    let (server, control) = server(&db, true, &["--metrics-zone-series", "3"]);
    for control in [all_control, control] {
        let started = Instant::now();
        while stat(control, "resident_zones") < zones as u64 {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "not all resident"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let mut every = zone_sizes(&http(all_control, "GET", "/metrics").1);
    assert_eq!(every.len(), zones);
    every.sort_by(|a, b| (b.1, b.2).cmp(&(a.1, a.2)).then_with(|| a.0.cmp(&b.0)));
    let (_, body) = http(control, "GET", "/metrics");
    let listed = zone_sizes(&body);
    assert_eq!(listed, every[..3], "the three largest, largest first");
    for family in ["zone{", "zone_current{", "zone_records{", "zone_bytes{"] {
        let n = body
            .lines()
            .filter(|l| l.starts_with(&format!("mongodns_resident_{family}")))
            .count();
        assert_eq!(n, 3, "mongodns_resident_{family}: {n} lines");
    }
    let sum = |zones: &[(String, u64, u64)]| -> (u64, u64) {
        zones.iter().fold((0, 0), |(b, r), z| (b + z.1, r + z.2))
    };
    let (all_bytes, all_records) = sum(&every);
    let (listed_bytes, listed_records) = sum(&listed);
    assert_eq!(all_records, (0..zones as u64).map(|i| 3 + i).sum::<u64>());
    assert_eq!(gauge(&body, "mongodns_resident_unlisted_zones"), 9);
    assert_eq!(gauge(&body, "mongodns_resident_records"), all_records);
    assert_eq!(gauge(&body, "mongodns_resident_bytes"), all_bytes);
    assert_eq!(
        gauge(&body, "mongodns_resident_unlisted_records"),
        all_records - listed_records
    );
    assert_eq!(
        gauge(&body, "mongodns_resident_unlisted_bytes"),
        all_bytes - listed_bytes
    );
    drop(all_server);
    drop(server);
    block_on(db.drop_db());
}
