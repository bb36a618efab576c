//! Building a reply within a size limit.
//!
//! ```text
//!  MessageWriter::new(query header, question bytes, limit)
//!    ├─ push_rrset(section, owner, rrset)  → Ok | Err(Full | Malformed)  (all or nothing)
//!    ├─ names compressed against everything written so far (case-insensitive)
//!    ├─ mark() / rollback(mark)  drop what was written since (RRset + RRSIGs)
//!    ├─ set_ede(code)   an Extended DNS Error option (RFC 8914) in the OPT
//!    └─ finish(rcode, flags, edns) → bytes  (room for OPT is always kept)
//! ```

use super::{Edns, Rcode, HEADER_LEN};
use crate::edns::reply::{write_opt, EDE_LEN, OPT_LEN};
use dns::name::{MAX_LABEL_LEN, MAX_NAME_LEN};
use dns::types::{Rdata, TypeInfo};
use dns::{Name, RRset, RType};

/// A section of the reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Section {
    /// Answer.
    Answer = 0,
    /// Authority.
    Authority = 1,
    /// Additional.
    Additional = 2,
}

/// A point in a reply being written, to go back to (`MessageWriter::rollback`).
#[derive(Debug, Clone, Copy)]
pub struct Mark {
    len: usize,
    names: usize,
    counts: [u16; 3],
}

/// Why an RRset was not written; nothing of it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotWritten {
    /// It does not fit within the size limit.
    Full,
    /// Its owner or rdata is not well-formed (a name over 255 octets, a
    /// compression pointer or a cut name in stored rdata, rdata over
    /// 65535 octets): data read back from storage is never trusted.
    Malformed,
}

/// Writes a reply, RRset by RRset, never beyond its limit.
pub struct MessageWriter {
    buf: Vec<u8>,
    limit: usize,
    counts: [u16; 3],
    /// (offset of a name suffix in `buf`, its lower-case uncompressed wire form).
    names: Vec<(u16, Box<[u8]>)>,
    /// Extended DNS Error info-code to put in the OPT record.
    ede: Option<u16>,
}

/// The length of the uncompressed name at the start of `wire`, root label
/// included, if it is one of at most [`MAX_NAME_LEN`] octets.
fn name_len(wire: &[u8]) -> Option<usize> {
    let mut pos = 0;
    loop {
        let len = usize::from(*wire.get(pos)?);
        if len > MAX_LABEL_LEN {
            return None; // a compression pointer or a reserved label type
        }
        pos += 1 + len;
        if pos > MAX_NAME_LEN {
            return None;
        }
        if len == 0 {
            return (pos <= wire.len()).then_some(pos);
        }
    }
}

impl MessageWriter {
    /// Starts a reply to the question `question` (name, type, class as sent),
    /// to be at most `limit` bytes, keeping room for OPT when `edns` is set.
    pub fn new(question: &[u8], qname: &Name, limit: usize, edns: bool) -> MessageWriter {
        Self::new_in(
            Vec::with_capacity(limit.min(4096)),
            question,
            qname,
            limit,
            edns,
        )
    }

    /// [`MessageWriter::new`] writing into `buf` (cleared first): a
    /// caller that answers many queries reuses one buffer's allocation.
    pub fn new_in(
        mut buf: Vec<u8>,
        question: &[u8],
        qname: &Name,
        limit: usize,
        edns: bool,
    ) -> MessageWriter {
        buf.clear();
        buf.resize(HEADER_LEN, 0);
        buf[5] = 1; // QDCOUNT
        buf.extend_from_slice(question);
        let reserve = if edns { OPT_LEN } else { 0 };
        let mut w = MessageWriter {
            buf,
            limit: limit.saturating_sub(reserve),
            counts: [0; 3],
            names: Vec::with_capacity(16),
            ede: None,
        };
        w.remember(HEADER_LEN, qname.as_wire());
        w
    }

    /// Starts a reply without a question (a FORMERR for an unreadable one).
    pub fn without_question(limit: usize, edns: bool) -> MessageWriter {
        let reserve = if edns { OPT_LEN } else { 0 };
        MessageWriter {
            buf: vec![0; HEADER_LEN],
            limit: limit.saturating_sub(reserve),
            counts: [0; 3],
            names: Vec::new(),
            ede: None,
        }
    }

    /// Adds an Extended DNS Error (RFC 8914) with `info_code` to the OPT
    /// record, if the reply gets one; room for it is reserved now.
    pub fn set_ede(&mut self, info_code: u16) {
        if self.ede.is_none() {
            self.limit = self.limit.saturating_sub(EDE_LEN);
        }
        self.ede = Some(info_code);
    }

    fn remember(&mut self, mut offset: usize, wire: &[u8]) {
        let mut pos = 0;
        while pos < wire.len() && wire[pos] != 0 && offset < 0x4000 {
            let suffix = &wire[pos..];
            if !self.names.iter().any(|(_, n)| n[..] == *suffix) {
                self.names.push((offset as u16, suffix.into()));
            }
            let step = 1 + wire[pos] as usize;
            pos += step;
            offset += step;
        }
    }

    /// Writes `name` (any case) compressed against earlier names; a name
    /// that is not one well-formed uncompressed name is refused.
    fn put_name(&mut self, wire: &[u8]) -> Result<(), NotWritten> {
        let wire = &wire[..name_len(wire).ok_or(NotWritten::Malformed)?];
        let mut lower = [0u8; MAX_NAME_LEN];
        let lower = &mut lower[..wire.len()];
        lower.copy_from_slice(wire);
        lower.make_ascii_lowercase();
        // (offset in buf, offset in name) of each label written literally;
        // a name of 255 octets has at most 127 labels.
        let mut literal = [(0usize, 0usize); MAX_NAME_LEN / 2];
        let mut literal_count = 0;
        let mut pos = 0;
        while wire[pos] != 0 {
            if let Some((offset, _)) = self.names.iter().find(|(_, n)| n[..] == lower[pos..]) {
                let pointer = 0xC000 | *offset;
                self.buf.extend_from_slice(&pointer.to_be_bytes());
                break;
            }
            literal[literal_count] = (self.buf.len(), pos);
            literal_count += 1;
            let len = wire[pos] as usize;
            self.buf.extend_from_slice(&wire[pos..pos + 1 + len]);
            pos += 1 + len;
            if wire[pos] == 0 {
                self.buf.push(0);
            }
        }
        if wire[0] == 0 {
            self.buf.push(0);
        }
        // Every literal label starts a suffix later names can point to.
        for &(offset, at) in &literal[..literal_count] {
            if offset < 0x4000 {
                self.names.push((offset as u16, lower[at..].into()));
            }
        }
        Ok(())
    }

    /// Appends one RRset to `section`, all records or none.
    pub fn push_rrset(
        &mut self,
        section: Section,
        owner: &Name,
        rrset: &RRset,
    ) -> Result<(), NotWritten> {
        self.push_records(section, owner, rrset.rtype, rrset.ttl, &rrset.rdata)
    }

    /// Appends records of one type and owner to `section`, all or none.
    pub fn push_records(
        &mut self,
        section: Section,
        owner: &Name,
        rtype: RType,
        ttl: u32,
        rdata: impl IntoIterator<Item = impl AsRef<[u8]>>,
    ) -> Result<(), NotWritten> {
        let mark = self.buf.len();
        let names_mark = self.names.len();
        let mut written = 0u16;
        for rd in rdata {
            if let Err(why) = self.put_record(owner, rtype, ttl, rd.as_ref()) {
                self.buf.truncate(mark);
                self.names.truncate(names_mark);
                return Err(why);
            }
            written += 1;
        }
        self.counts[section as usize] += written;
        Ok(())
    }

    /// Writes one record; on an error the caller rolls back.
    fn put_record(
        &mut self,
        owner: &Name,
        rtype: RType,
        ttl: u32,
        rd: &[u8],
    ) -> Result<(), NotWritten> {
        self.put_name(owner.as_wire())?;
        self.buf.extend_from_slice(&rtype.0.to_be_bytes());
        self.buf.extend_from_slice(&super::CLASS_IN.to_be_bytes());
        self.buf.extend_from_slice(&ttl.to_be_bytes());
        let len_at = self.buf.len();
        self.buf.extend_from_slice(&[0, 0]);
        self.put_rdata(rtype, rd)?;
        let rdlen =
            u16::try_from(self.buf.len() - len_at - 2).map_err(|_| NotWritten::Malformed)?;
        self.buf[len_at..len_at + 2].copy_from_slice(&rdlen.to_be_bytes());
        if self.buf.len() > self.limit {
            return Err(NotWritten::Full);
        }
        Ok(())
    }

    /// Writes rdata, compressing the names of the RFC 1035 types that allow it
    /// (RFC 3597 §4; the type's descriptor says, `dns::types`); every other
    /// type is copied as stored. Those layouts are names and fixed-width
    /// fields only, walked here without allocating. A name those types must
    /// hold that does not parse makes the record malformed.
    fn put_rdata(&mut self, rtype: RType, rd: &[u8]) -> Result<(), NotWritten> {
        let fields = match rtype.info() {
            Some(TypeInfo {
                compress: true,
                rdata: Rdata::Fields(fields),
                ..
            }) => fields,
            _ => {
                self.buf.extend_from_slice(rd);
                return Ok(());
            }
        };
        let (mut pos, mut at) = (0, 0);
        for field in fields.iter() {
            if let Some(width) = field.width() {
                at += width;
                continue;
            }
            let name = rd.get(at..).ok_or(NotWritten::Malformed)?;
            let len = name_len(name).ok_or(NotWritten::Malformed)?;
            self.buf.extend_from_slice(&rd[pos..at]);
            self.put_name(&name[..len])?;
            at += len;
            pos = at;
        }
        self.buf.extend_from_slice(&rd[pos..]);
        Ok(())
    }

    /// Where the reply is now, to roll back to.
    pub fn mark(&self) -> Mark {
        Mark {
            len: self.buf.len(),
            names: self.names.len(),
            counts: self.counts,
        }
    }

    /// Drops everything written after `mark` (an RRset and its RRSIGs go
    /// together or not at all).
    pub fn rollback(&mut self, mark: Mark) {
        self.buf.truncate(mark.len);
        self.names.truncate(mark.names);
        self.counts = mark.counts;
    }

    /// Bytes written so far.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// True when nothing but the header has been written.
    pub fn is_empty(&self) -> bool {
        self.buf.len() == HEADER_LEN
    }

    /// Records written to `section` so far.
    pub fn count(&self, section: Section) -> u16 {
        self.counts[section as usize]
    }

    /// Completes the header (and OPT) and returns the message.
    pub fn finish(
        mut self,
        id: u16,
        flags: u16,
        rcode: Rcode,
        edns: Option<Edns>,
        our_udp_size: u16,
    ) -> Vec<u8> {
        let mut additional = self.counts[2];
        if let Some(e) = edns {
            write_opt(&mut self.buf, our_udp_size, rcode, e, self.ede);
            additional += 1;
        }
        self.buf[0..2].copy_from_slice(&id.to_be_bytes());
        let word = flags | (rcode.0 & 0xF);
        self.buf[2..4].copy_from_slice(&word.to_be_bytes());
        self.buf[6..8].copy_from_slice(&self.counts[0].to_be_bytes());
        self.buf[8..10].copy_from_slice(&self.counts[1].to_be_bytes());
        self.buf[10..12].copy_from_slice(&additional.to_be_bytes());
        self.buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn n(s: &str) -> Name {
        s.parse().unwrap()
    }

    fn question(name: &Name) -> Vec<u8> {
        let mut q = name.as_wire().to_vec();
        q.extend_from_slice(&[0, 1, 0, 1]);
        q
    }

    #[test]
    fn rollback_drops_records_counts_and_names_written_since_the_mark() {
        let qname = n("www.example.com.");
        let q = question(&qname);
        let mut w = MessageWriter::new(&q, &qname, 512, false);
        let set = Arc::new(RRset {
            rtype: RType::NS,
            ttl: 60,
            rdata: vec![n("ns.other.example.").as_wire().into()],
        });
        let mark = w.mark();
        let before = w.len();
        w.push_rrset(Section::Additional, &n("a.example.net."), &set)
            .unwrap();
        assert_eq!(w.count(Section::Additional), 1);
        w.rollback(mark);
        assert_eq!(w.len(), before);
        assert_eq!(w.count(Section::Additional), 0);
        // Names written after the mark are forgotten: a later record cannot
        // point into the dropped bytes, so it is written in full again.
        w.push_rrset(Section::Answer, &n("a.example.net."), &set)
            .unwrap();
        let full = before + n("a.example.net.").as_wire().len() + 10;
        assert!(w.len() >= full + n("ns.other.example.").as_wire().len());
        let msg = w.finish(7, super::super::flags::QR, Rcode::NOERROR, None, 1232);
        assert_eq!(&msg[6..8], &[0, 1]);
        assert_eq!(&msg[10..12], &[0, 0]);
    }

    #[test]
    fn owner_names_are_compressed_to_the_question() {
        let qname = n("www.example.com.");
        let q = question(&qname);
        let mut w = MessageWriter::new(&q, &qname, 512, false);
        let set = Arc::new(RRset {
            rtype: RType::A,
            ttl: 60,
            rdata: vec![Box::new([192, 0, 2, 1])],
        });
        w.push_rrset(Section::Answer, &qname, &set).unwrap();
        let msg = w.finish(7, super::super::flags::QR, Rcode::NOERROR, None, 1232);
        // header + question + pointer(2) + type/class/ttl/len(10) + 4
        assert_eq!(msg.len(), 12 + q.len() + 2 + 10 + 4);
        assert_eq!(&msg[12 + q.len()..12 + q.len() + 2], &[0xC0, 0x0C]);
        assert_eq!(&msg[6..8], &[0, 1]);
    }

    #[test]
    fn rdata_names_are_compressed_and_suffixes_reused() {
        let qname = n("example.com.");
        let q = question(&qname);
        let mut w = MessageWriter::new(&q, &qname, 512, false);
        let mut mx = vec![0, 10];
        mx.extend_from_slice(n("mail.example.com.").as_wire());
        let set = RRset {
            rtype: RType::MX,
            ttl: 60,
            rdata: vec![mx.into()],
        };
        w.push_rrset(Section::Answer, &qname, &set).unwrap();
        let msg = w.finish(1, 0, Rcode::NOERROR, None, 1232);
        let rd = &msg[msg.len() - 9..];
        // preference, "mail", pointer to example.com in the question
        assert_eq!(rd, &[0, 10, 4, b'm', b'a', b'i', b'l', 0xC0, 0x0C]);
    }

    /// The answer section's rdata of one record of `rtype` at the question
    /// name, written after it.
    fn written_rdata(rtype: RType, rd: Vec<u8>) -> Vec<u8> {
        let qname = n("example.com.");
        let q = question(&qname);
        let mut w = MessageWriter::new(&q, &qname, 512, false);
        let set = RRset {
            rtype,
            ttl: 60,
            rdata: vec![rd.into()],
        };
        w.push_rrset(Section::Answer, &qname, &set).unwrap();
        let msg = w.finish(1, 0, Rcode::NOERROR, None, 1232);
        msg[12 + q.len() + 12..].to_vec()
    }

    #[test]
    fn only_rfc_1035_types_compress_their_rdata_names() {
        let (a, b) = (n("a.example.com."), n("b.example.com."));
        // MINFO (RFC 1035): both names compressed to the question.
        let minfo = [a.as_wire(), b.as_wire()].concat();
        assert_eq!(
            written_rdata(RType(14), minfo),
            [&[1, b'a', 0xC0, 0x0C][..], &[1, b'b', 0xC0, 0x0C]].concat()
        );
        // SOA: two names compressed, the timers copied after them.
        let soa = [a.as_wire(), b.as_wire(), &[7; 20]].concat();
        let written = written_rdata(RType::SOA, soa);
        assert_eq!(&written[..8], &[1, b'a', 0xC0, 0x0C, 1, b'b', 0xC0, 0x0C]);
        assert_eq!(&written[8..], &[7; 20]);
        // SRV, RP, LP, NAPTR, KX: as stored (RFC 3597 §4, RFC 2782).
        for (rtype, rd) in [
            (RType::SRV, [&[0, 1, 0, 2, 0, 3][..], a.as_wire()].concat()),
            (RType(17), [a.as_wire(), b.as_wire()].concat()),
            (RType(107), [&[0, 10][..], a.as_wire()].concat()),
            (RType(36), [&[0, 10][..], a.as_wire()].concat()),
        ] {
            assert_eq!(written_rdata(rtype, rd.clone()), rd, "{rtype}");
        }
    }

    #[test]
    fn an_rrset_that_does_not_fit_is_left_out_whole() {
        let qname = n("example.com.");
        let q = question(&qname);
        let mut w = MessageWriter::new(&q, &qname, 100, true);
        let big = RRset {
            rtype: RType::TXT,
            ttl: 60,
            rdata: vec![vec![30; 31].into(), vec![30; 31].into()],
        };
        let before = w.len();
        assert_eq!(
            w.push_rrset(Section::Answer, &qname, &big),
            Err(NotWritten::Full)
        );
        assert_eq!(w.len(), before);
        assert_eq!(w.count(Section::Answer), 0);
        let msg = w.finish(
            1,
            0,
            Rcode::NOERROR,
            Some(Edns {
                udp_size: 512,
                version: 0,
                dnssec_ok: true,
                asked: Default::default(),
            }),
            1232,
        );
        assert!(msg.len() <= 100);
        assert_eq!(&msg[10..12], &[0, 1]); // just the OPT
    }

    #[test]
    fn malformed_rdata_is_refused_and_nothing_is_written() {
        let qname = n("example.com.");
        let q = question(&qname);
        let mut w = MessageWriter::new(&q, &qname, 65535, false);
        let before = w.len();
        let long = backend_mongo::testing::long_wire_name(256);
        let mut mx_cut = vec![0, 10];
        mx_cut.extend_from_slice(b"\x04mail");
        for (rtype, rd) in [
            (RType::CNAME, long.clone()),
            (RType::NS, vec![0xC0, 0x0C]),
            (RType::MX, mx_cut),
            (RType::MX, vec![0]),
            (RType::SOA, b"\x01a\x00".to_vec()),
            (RType::TXT, vec![0; 65_536]),
        ] {
            let set = RRset {
                rtype,
                ttl: 60,
                rdata: vec![n("ok.example.com.").as_wire().into(), rd.into()],
            };
            let pushed = w.push_rrset(Section::Answer, &qname, &set);
            assert_eq!(pushed, Err(NotWritten::Malformed), "{rtype}");
            assert_eq!(w.len(), before, "{rtype}: nothing written");
            assert_eq!(w.count(Section::Answer), 0);
        }
        // The longest name still goes out whole.
        let set = RRset {
            rtype: RType::CNAME,
            ttl: 60,
            rdata: vec![backend_mongo::testing::long_wire_name(255).into()],
        };
        assert_eq!(w.push_rrset(Section::Answer, &qname, &set), Ok(()));
    }

    #[test]
    fn an_extended_dns_error_goes_into_opt() {
        let qname = n("example.net.");
        let q = question(&qname);
        let mut w = MessageWriter::new(&q, &qname, 512, true);
        w.set_ede(20);
        let edns = Edns {
            udp_size: 1232,
            version: 0,
            dnssec_ok: false,
            asked: Default::default(),
        };
        let msg = w.finish(1, 0, Rcode::REFUSED, Some(edns), 1232);
        // OPT rdata: code 15, length 2, info-code 20.
        assert_eq!(&msg[msg.len() - 8..], &[0, 6, 0, 15, 0, 2, 0, 20]);
        // Without EDNS there is nowhere to put it.
        let mut w = MessageWriter::new(&q, &qname, 512, false);
        w.set_ede(20);
        let msg = w.finish(1, 0, Rcode::REFUSED, None, 1232);
        assert_eq!(msg.len(), 12 + q.len());
    }

    #[test]
    fn extended_rcodes_go_into_opt() {
        let w = MessageWriter::without_question(512, true);
        let msg = w.finish(
            1,
            0,
            Rcode::BADVERS,
            Some(Edns {
                udp_size: 512,
                version: 1,
                dnssec_ok: false,
                asked: Default::default(),
            }),
            1232,
        );
        assert_eq!(msg[3] & 0xF, 0);
        assert_eq!(msg[HEADER_LEN + 5], 1); // extended rcode 16 >> 4
    }
}
