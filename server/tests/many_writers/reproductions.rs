//! The cases the randomized test (and earlier runs) found, each a test of
//! its own: what used to go wrong, and what must happen now.
//!
//! ```text
//!  merge ∥ --replace            ─► the zone kept: replace + a merge suffix
//!  secure-zone ∥ import         ─► every record served and signed
//!  signed replace ∥ record edits ─► the SOA signed past the served serial
//!  two merges, one resume slot  ─► each resumes from its own checkpoint
//! ```

use super::*;

/// Reproduction 1: a merge import overlapping a `--replace` of the same
/// zone used to remove the zone (the merge's publish switched it back to
/// the version being deleted: NXDOMAIN for the apex, an empty AXFR).
/// Now the replace is the zone as of its switch, and the merge batches
/// acknowledged after it are applied to the new version: the final zone
/// is the replace's names plus a suffix of the merge's, in input order.
#[test]
fn a_merge_overlapping_a_replace_keeps_the_zone() {
    let rt = runtime();
    let base = labels("old", 300);
    let (db, server, poller) = served_zone(rt, "mw_overlap", &base);
    let merged = labels("merged", 3000);
    let replaced = labels("new", 300);
    let (merge, replace) = rt.block_on(async {
        let merge = spawn_merge(&db, &merged, 1500.0);
        tokio::time::sleep(Duration::from_millis(700)).await;
        let replace = import(
            &db.store,
            &db.dir,
            "replace.zone",
            &zone_text(5, true, &replaced),
            true,
            None,
        )
        .await;
        (merge.await.unwrap(), replace)
    });
    let replace = replace.expect("the replace succeeds");
    let merge = merge.expect("the merge succeeds: it follows the zone to the new version");
    wait_caught_up(rt, &db.store, server.port);
    let (_, served) = axfr(server.port);
    let asked = poller.finish().asked;
    let expected_base = set(&replaced);
    assert!(
        served.is_superset(&expected_base),
        "every name of the replace is served"
    );
    let extra: Vec<&String> = served.difference(&expected_base).collect();
    assert!(
        extra.iter().all(|n| n.starts_with("merged-")),
        "no name of the replaced version survives: {:?}",
        extra
            .iter()
            .filter(|n| !n.starts_with("merged-"))
            .take(5)
            .collect::<Vec<_>>()
    );
    // The merge's names served form one suffix of its input (batches were
    // written in order, one at a time).
    let first = merged.iter().position(|n| served.contains(n));
    let k = first.expect("merge batches acknowledged after the switch are served");
    assert!(
        merged[k..].iter().all(|n| served.contains(n)),
        "every merge batch after the first one served is served too"
    );
    assert!(
        k > 0,
        "the replace superseded the batches before its switch"
    );
    assert!(
        backend_mongo::writer::serial_gt(merge.zone.serial, replace.zone.serial),
        "the serial moved past the replace's: {} then {}",
        replace.zone.serial,
        merge.zone.serial
    );
    eprintln!(
        "merge names kept: {} of {}; poller asked {asked} times",
        merged.len() - k,
        merged.len()
    );
    drop(server);
    rt.block_on(db.drop_db());
}

/// Reproduction 2: `secure-zone` used to fail ("kept changing while it was
/// being signed") on a zone an import was writing into. Now it catches up
/// with the import and switches behind a short fence; every record the
/// import wrote, before, during and after, is served and signed.
#[test]
fn secure_zone_signs_a_zone_while_an_import_writes_into_it() {
    secure_while_importing("mw_secure", false);
}

/// The same on a zone already secured: the import signs its merge under
/// the signing lease, and hands the lease over to the waiting
/// `secure-zone` instead of making it wait for the whole import.
#[test]
fn secure_zone_of_a_signed_zone_takes_the_lease_from_a_signing_import() {
    secure_while_importing("mw_resecure", true);
}

fn secure_while_importing(tag: &str, secured_first: bool) {
    let rt = runtime();
    let base = labels("base", 300);
    let (db, server, poller) = served_zone(rt, tag, &base);
    if secured_first {
        rt.block_on(signer::secure_zone(
            &db.store,
            &zone(),
            &secure_options(),
            &signer::NoProgress,
        ))
        .expect("secure-zone before the import");
    }
    let merged = labels("imp", 2500);
    let gen_before = rt
        .block_on(db.store.find_zone(&zone()))
        .unwrap()
        .unwrap()
        .gen;
    let (merge, secured, secure_secs, import_secs) = rt.block_on(async {
        let t = Instant::now();
        let merge = spawn_merge(&db, &merged, 800.0);
        tokio::time::sleep(Duration::from_millis(500)).await;
        let secured =
            signer::secure_zone(&db.store, &zone(), &secure_options(), &signer::NoProgress).await;
        let secs = t.elapsed().as_secs_f64() - 0.5;
        let merge = merge.await.unwrap();
        (merge, secured, secs, t.elapsed().as_secs_f64())
    });
    let report = secured.expect("secure-zone succeeds while the import runs");
    merge.expect("the import succeeds while secure-zone runs");
    wait_caught_up(rt, &db.store, server.port);
    let (text, served) = axfr(server.port);
    poller.finish();
    let expected: BTreeSet<String> = set(&base).union(&set(&merged)).cloned().collect();
    assert!(
        some_missing(&expected, &served).is_empty() && some_missing(&served, &expected).is_empty(),
        "every record imported before, during and after secure-zone is served, nothing else: \
         missing {:?}, unexpected {:?} ({} served, {} expected)",
        some_missing(&expected, &served),
        some_missing(&served, &expected),
        served.len(),
        expected.len()
    );
    verify_signed(&db.dir, &text);
    if secured_first {
        // The import signed its first batches under the lease, then handed
        // it to the waiting secure-zone and wrote the rest unsigned: its
        // change records show both. (Without the hand-over every record
        // of the import would be signed: secure-zone waited for it.)
        let gen_after = rt
            .block_on(db.store.find_zone(&zone()))
            .unwrap()
            .unwrap()
            .gen;
        let records = rt
            .block_on(db.store.change_records(gen_before + 1, gen_after))
            .unwrap();
        let imported = |r: &dns::ChangeRecord| {
            r.names
                .as_ref()
                .is_some_and(|n| n.iter().any(|n| n.to_string().starts_with("imp-")))
        };
        let signed = records.values().filter(|r| r.signed && imported(r)).count();
        let unsigned = records
            .values()
            .filter(|r| !r.signed && imported(r))
            .count();
        assert!(
            signed > 0 && unsigned > 0,
            "the import signed some batches and handed the rest over: {signed} signed, {unsigned} unsigned records"
        );
    }
    eprintln!(
        "secure-zone took {secure_secs:.1} s with the import running ({import_secs:.1} s); {} names caught up",
        report.written
    );
    drop(server);
    rt.block_on(db.drop_db());
}

/// Reproduction 3: a replace of a secured zone signs its new version with
/// a serial past the one served when it began. Record edits moving the
/// served serial on while it ran used to make its switch move the SOA
/// serial again, unsigned (the randomized test, when the replace was the
/// last write: "No correct signature for many.test SOA"). Now the SOA is
/// signed again past the served serial under the zone lock.
#[test]
fn a_signed_replace_outruns_edits_that_moved_the_serial() {
    let rt = runtime();
    let db = rt.block_on(async {
        let db = TestZoneDb::new("mw_signed_replace").await;
        db.import(ZONE, &zone_text(1, true, &labels("old", 20)), true)
            .await;
        signer::secure_zone(&db.store, &zone(), &secure_options(), &signer::NoProgress)
            .await
            .expect("secure-zone");
        db
    });
    let server = server_for(&db);
    let names = labels("new", 400);
    let served_before = rt
        .block_on(db.store.find_zone(&zone()))
        .unwrap()
        .unwrap()
        .serial;
    rt.block_on(async {
        // 400 names at 200 records/s: about 2 s, with edits meanwhile.
        let text = zone_text(1, true, &names);
        let replace = import(
            &db.store,
            &db.dir,
            "slow-replace.zone",
            &text,
            true,
            Some(200.0),
        );
        let edits = async {
            for i in 0..3u8 {
                tokio::time::sleep(Duration::from_millis(300)).await;
                let name: Name = format!("edit{i}.{ZONE}").parse().unwrap();
                let add = RecordEdit::add(name, RType::A, 60, vec![vec![10, 0, 0, i].into()]);
                signer::edit::edit_zone(&db.store, &zone(), &[add])
                    .await
                    .expect("a signed edit");
            }
        };
        let (replaced, ()) = tokio::join!(replace, edits);
        replaced.expect("the replace");
    });
    wait_caught_up(rt, &db.store, server.port);
    let (text, served) = axfr(server.port);
    let now = rt
        .block_on(db.store.find_zone(&zone()))
        .unwrap()
        .unwrap()
        .serial;
    assert!(
        now > served_before + 3,
        "the edits moved the serial while the replace ran ({served_before} -> {now})"
    );
    assert!(served.contains("new-399"), "the replace is served");
    verify_signed(&db.dir, &text);
    drop(server);
    rt.block_on(db.drop_db());
}

/// Two merges into one zone at once share its one resume slot: a re-run
/// resumes only from what its own input checkpointed. (Found by the
/// randomized test: one merge's count, moved under the other's key, made
/// that one's re-run skip records it never wrote.)
#[test]
fn two_merges_into_one_zone_resume_only_from_their_own_checkpoints() {
    let rt = runtime();
    rt.block_on(async {
        let db = TestZoneDb::new("mw_resume").await;
        db.import(ZONE, &zone_text(1, true, &labels("base", 10)), true)
            .await;
        let z = zone();
        let begin = |key: &'static str| {
            let store = db.store.clone();
            let z = z.clone();
            async move {
                store
                    .begin_resumable_write(&z, backend_mongo::WriteMode::Merge, Some(key))
                    .await
                    .unwrap()
            }
        };
        let (first, done) = begin("input-a").await;
        assert_eq!(done, 0);
        let (second, done) = begin("input-b").await;
        assert_eq!(done, 0);
        // The first merge checkpoints after the second took the slot.
        first.checkpoint(100).await.unwrap();
        drop(first);
        drop(second);
        let (_, done) = begin("input-b").await;
        assert_eq!(
            done, 0,
            "a re-run of the second merge resumes from what it stored itself (nothing)"
        );
        let (second, _) = begin("input-b").await;
        second.checkpoint(40).await.unwrap();
        drop(second);
        let (_, done) = begin("input-b").await;
        assert_eq!(done, 40, "its own checkpoint is kept");
        db.drop_db().await;
    });
}
