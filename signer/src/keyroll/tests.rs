//! The rollovers run against a simulated clock and parent: every step is
//! applied, the zone "re-signed" (keys stamped) at once, and the parent
//! copies the CDS set (the published and active SEP keys) when asked.

use super::*;
use backend_mongo::bson::DateTime;
use dns::Name;

struct Sim {
    policy: Policy,
    keys: Vec<StoredKey>,
    now: i64,
    /// Key tags whose DS the parent serves.
    parent: Vec<u16>,
    /// The parent follows the CDS set when asked.
    parent_follows: bool,
    next_tag: u16,
    /// (time, what) for every step applied.
    log: Vec<(i64, String)>,
}

impl Sim {
    fn new(policy: Policy) -> Sim {
        Sim {
            policy,
            keys: Vec::new(),
            now: 1_000_000,
            parent: Vec::new(),
            parent_follows: true,
            next_tag: 1,
            log: Vec::new(),
        }
    }

    fn add(&mut self, flags: u16, algorithm: u8, state: KeyState) -> u16 {
        let tag = self.next_tag;
        self.next_tag += 1;
        let at = DateTime::from_millis(self.now * 1000 + i64::from(tag));
        self.keys.push(StoredKey {
            id: format!("k{tag}"),
            zone: "example.".parse::<Name>().unwrap(),
            flags,
            algorithm,
            tag,
            public_key: vec![tag as u8],
            private_pkcs8: Vec::new(),
            state,
            created: at,
            since: None,
            ds_seen: None,
            roll: false,
        });
        tag
    }

    /// A zone secured at `now`: its keys in effect, the parent serving its DS.
    fn secured(policy: Policy, algorithm: u8) -> Sim {
        let mut sim = Sim::new(policy.clone());
        let ksk = sim.add(257, algorithm, KeyState::Active);
        if !policy.csk {
            sim.add(256, algorithm, KeyState::Active);
        }
        sim.stamp();
        sim.parent.push(ksk);
        sim
    }

    fn stamp(&mut self) {
        for k in &mut self.keys {
            if k.since.is_none() {
                k.since = Some(DateTime::from_millis(self.now * 1000));
            }
        }
    }

    fn key(&self, id: &str) -> &StoredKey {
        self.keys.iter().find(|k| k.id == id).expect("key")
    }

    fn apply(&mut self, step: KeyStep) {
        let text = match &step {
            KeyStep::Create {
                flags,
                algorithm,
                state,
            } => {
                let tag = self.add(*flags, *algorithm, *state);
                format!("create {flags} alg {algorithm} {} {tag}", state.as_str())
            }
            KeyStep::Move { id, state } => {
                let k = self.keys.iter_mut().find(|k| k.id == *id).expect("key");
                k.state = *state;
                k.since = None;
                format!("move {} {}", k.tag, state.as_str())
            }
            KeyStep::Remove { id } => {
                let tag = self.key(id).tag;
                self.keys.retain(|k| k.id != *id);
                format!("remove {tag}")
            }
            KeyStep::CheckParent { id } => {
                if self.parent_follows {
                    self.parent = self
                        .keys
                        .iter()
                        .filter(|k| {
                            k.is_ksk() && matches!(k.state, KeyState::Published | KeyState::Active)
                        })
                        .map(|k| k.tag)
                        .collect();
                }
                let tag = self.key(id).tag;
                if !self.parent.contains(&tag) {
                    return;
                }
                let now = self.now;
                let k = self.keys.iter_mut().find(|k| k.id == *id).expect("key");
                k.ds_seen = Some((DateTime::from_millis(now * 1000), 60));
                format!("ds seen {tag}")
            }
        };
        self.log.push((self.now, text));
    }

    /// Runs until `end`, checking after every step that the zone would
    /// validate: some signing SEP key is published with its DS at the
    /// parent, and every signing key is published (outside an algorithm
    /// rollover's own stages).
    fn run(&mut self, end: i64) {
        while self.now < end {
            let s = schedule(&self.policy, &self.keys, self.now);
            if s.unstamped {
                self.stamp();
                continue;
            }
            let progressed = !s.steps.is_empty();
            let before = self.log.len();
            for step in s.steps {
                self.apply(step);
            }
            self.check_chain();
            if progressed && self.log.len() > before {
                continue;
            }
            self.now = match s.next {
                Some((t, _)) if t < end => t.max(self.now + 1),
                _ if s.waiting.is_some() => self.now + 10,
                _ => end,
            };
        }
    }

    fn check_chain(&self) {
        let anchored = self
            .keys
            .iter()
            .any(|k| k.is_ksk() && k.state == KeyState::Active && self.parent.contains(&k.tag));
        assert!(
            anchored,
            "no signing KSK with its DS at the parent: {:?}",
            self.log
        );
    }

    fn tags(&self, flags: u16, state: KeyState) -> Vec<u16> {
        self.keys
            .iter()
            .filter(|k| k.flags == flags && k.state == state)
            .map(|k| k.tag)
            .collect()
    }

    fn when(&self, text: &str) -> i64 {
        self.log
            .iter()
            .find(|(_, t)| t.contains(text))
            .unwrap_or_else(|| panic!("no '{text}' in {:?}", self.log))
            .0
    }
}

fn short() -> Policy {
    let mut p = Policy::defaults("short");
    p.zsk_lifetime = 120;
    p.ksk_lifetime = 300;
    p.dnskey_ttl = 2;
    p.zone_max_ttl = 2;
    p.propagation_delay = 1;
    p
}

#[test]
fn a_zsk_is_rolled_by_pre_publication_when_its_lifetime_ends() {
    let mut p = short();
    p.ksk_lifetime = 0;
    let mut sim = Sim::secured(p, 13);
    let start = sim.now;
    sim.run(start + 200);
    // Published at the end of its lifetime, active a DNSKEY TTL plus the
    // propagation delay later, the old one removed after the largest TTL.
    assert_eq!(sim.when("create 256 alg 13 published 3"), start + 120);
    assert_eq!(sim.when("move 3 active"), start + 123);
    assert_eq!(sim.when("move 2 retired"), start + 123);
    assert_eq!(sim.when("remove 2"), start + 126);
    assert_eq!(sim.tags(256, KeyState::Active), vec![3]);
    assert_eq!(sim.tags(257, KeyState::Active), vec![1]);
}

#[test]
fn a_ksk_waits_for_the_parent_before_the_old_one_retires() {
    let mut p = short();
    p.zsk_lifetime = 0;
    let mut sim = Sim::secured(p, 13);
    sim.parent_follows = false;
    let start = sim.now;
    sim.run(start + 400);
    assert_eq!(sim.when("create 257 alg 13 published 3"), start + 300);
    assert_eq!(sim.when("move 3 active"), start + 303);
    let s = schedule(&sim.policy, &sim.keys, sim.now);
    assert!(s.waiting.is_some(), "{s:?}");
    assert_eq!(sim.tags(257, KeyState::Active), vec![1, 3]);
    // The parent takes the new DS: the old KSK retires after its TTL.
    sim.parent_follows = true;
    let seen = sim.now;
    sim.run(seen + 200);
    assert_eq!(sim.tags(257, KeyState::Active), vec![3]);
    assert!(sim.when("move 1 retired") > seen + 60);
    assert!(sim.when("remove 1") >= sim.when("move 1 retired") + 3);
}

#[test]
fn a_rollover_asked_for_starts_at_once() {
    let mut p = short();
    p.zsk_lifetime = 0;
    p.ksk_lifetime = 0;
    let mut sim = Sim::secured(p, 13);
    let start = sim.now;
    sim.run(start + 50);
    assert!(sim.log.is_empty(), "{:?}", sim.log);
    sim.keys[1].roll = true;
    sim.run(start + 100);
    assert_eq!(sim.when("create 256 alg 13 published 3"), start + 50);
    assert_eq!(sim.tags(256, KeyState::Active), vec![3]);
}

#[test]
fn a_csk_is_rolled_by_double_signature() {
    let mut p = short();
    p.csk = true;
    let mut sim = Sim::secured(p, 13);
    let start = sim.now;
    sim.run(start + 400);
    assert_eq!(sim.when("create 257 alg 13 published 2"), start + 300);
    assert_eq!(sim.when("move 2 active"), start + 303);
    assert!(sim.when("move 1 retired") >= sim.when("ds seen 2") + 61);
    assert_eq!(sim.tags(257, KeyState::Active), vec![2]);
    assert!(sim.keys.iter().all(|k| k.flags == 257));
}

#[test]
fn an_algorithm_rollover_signs_before_it_publishes_and_withdraws_before_it_stops() {
    let mut p = short();
    p.zsk_lifetime = 0;
    p.ksk_lifetime = 0;
    let mut sim = Sim::secured(p.clone(), 8);
    let start = sim.now;
    sim.run(start + 1000);
    let signing = sim.when("create 257 alg 13 signing");
    assert_eq!(sim.when("create 256 alg 13 signing"), signing);
    let published = sim.when("move 3 active");
    assert_eq!(
        published,
        signing + 3,
        "max TTL + propagation after signing"
    );
    let withdrawn = sim.when("move 1 signing");
    assert!(withdrawn >= sim.when("ds seen 3") + 61);
    assert_eq!(sim.when("remove 1"), withdrawn + 3);
    assert!(sim.keys.iter().all(|k| k.algorithm == 13));
    assert_eq!(sim.tags(257, KeyState::Active), vec![3]);
    assert_eq!(sim.tags(256, KeyState::Active), vec![4]);
}

#[test]
fn nothing_is_decided_while_a_step_is_not_yet_signed_with() {
    let mut sim = Sim::secured(short(), 13);
    sim.now += 10_000;
    sim.keys[1].since = None;
    let s = schedule(&sim.policy, &sim.keys, sim.now);
    assert!(s.unstamped && s.steps.is_empty(), "{s:?}");
}
