//! Base64, hex and base32hex (RFC 4648) on the `data-encoding` crate: the
//! encoders, and one streaming decoder per alphabet that both the lenient
//! readers (TSIG secrets, stored salts) and the strict zone-file reader
//! drive. A decoder checks each character as it is pushed (so that a
//! caller can name the bad one and where it was) and keeps it; `finish`
//! decodes what it kept in one call. The crate's own strictness is not
//! what these promise, so each rule is kept here: base64's `=` counted by
//! the decoder, trailing bits under it not checked; lenient forms drop the
//! characters that fill no byte (checked all the same).
//!
//! ```text
//!  bytes ──base64 / to_hex / base32hex──► text   (BASE64, HEXLOWER, B32HEX: lower case)
//!  text ──Base64Decoder / HexDecoder / Base32hexDecoder: push(c) per char,
//!        its alphabet checked, kept──►
//!        finish()          lenient: what fills no byte dropped (B64_LAX, B32HEX_LAX)
//!        finish_strict()   zone files: padding and length checked (B32HEX: trailing
//!                          bits zero)
//!  from_base64 (white space skipped, stops at '='), from_hex, from_base32hex:
//!        the lenient one-call forms
//! ```
//!
//! `dns/examples/encodings/` checks these against the hand-written codecs
//! they replaced and times both (`docs/dependencies.md`).

use data_encoding::{Encoding, Specification, BASE64, HEXLOWER, HEXLOWER_PERMISSIVE};
use std::fmt;
use std::sync::LazyLock;

/// Why text is not in an encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EncodingError {
    /// A character outside the alphabet.
    BadDigit(u8),
    /// Base64 data after `=` padding.
    DataAfterPadding,
    /// The length, the padding or the trailing bits are wrong.
    BadLength,
}

impl fmt::Display for EncodingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EncodingError::BadDigit(c) => write!(f, "bad character '{}'", *c as char),
            EncodingError::DataAfterPadding => f.write_str("data after '=' padding"),
            EncodingError::BadLength => f.write_str("bad length or padding"),
        }
    }
}

impl std::error::Error for EncodingError {}

/// An encoding of `symbols`, no padding, either case read when `upper` is
/// given (the upper-case forms of the lower-case symbols).
fn unpadded(symbols: &str, upper: &str, check_trailing_bits: bool) -> Encoding {
    let mut spec = Specification::new();
    spec.symbols.push_str(symbols);
    spec.translate.from.push_str(upper);
    spec.translate.to.push_str(&upper.to_ascii_lowercase());
    spec.check_trailing_bits = check_trailing_bits;
    spec.encoding().expect("a valid RFC 4648 alphabet")
}

const B64_SYMBOLS: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const B32HEX_SYMBOLS: &str = "0123456789abcdefghijklmnopqrstuv";
const B32HEX_UPPER: &str = "ABCDEFGHIJKLMNOPQRSTUV";

/// Base64 without its padding, trailing bits not checked: what the base64
/// decoders hand over (they count and check `=` themselves).
static B64_LAX: LazyLock<Encoding> = LazyLock::new(|| unpadded(B64_SYMBOLS, "", false));
/// Base32hex, lower case, no padding, trailing bits zero (RFC 5155's form).
static B32HEX: LazyLock<Encoding> = LazyLock::new(|| unpadded(B32HEX_SYMBOLS, B32HEX_UPPER, true));
/// The same, trailing bits not checked.
static B32HEX_LAX: LazyLock<Encoding> =
    LazyLock::new(|| unpadded(B32HEX_SYMBOLS, B32HEX_UPPER, false));

/// Characters a decoder keeps before its first `finish`: enough for a
/// signature or a digest without growing.
const KEPT: usize = 128;

/// A base64 symbol (not `=`).
fn is_base64(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'+' || c == b'/'
}

/// A base32hex symbol, either case.
fn is_base32hex(c: u8) -> bool {
    matches!(c.to_ascii_lowercase(), b'0'..=b'9' | b'a'..=b'v')
}

/// Decodes `text` (every character in the alphabet of `enc`, which has no
/// padding and does not check trailing bits), dropping the last
/// characters that do not fill a byte.
fn decode_lax(enc: &Encoding, text: &[u8]) -> Vec<u8> {
    let whole = text.len() * enc.bit_width() / 8;
    let used = enc.encode_len(whole);
    enc.decode(&text[..used])
        .expect("characters checked, a length an encoder writes")
}

/// Base64 (RFC 4648 §4) with padding.
pub fn base64(bytes: &[u8]) -> String {
    BASE64.encode(bytes)
}

/// Decodes standard base64 one character at a time.
pub struct Base64Decoder {
    text: Vec<u8>,
    padding: usize,
}

impl Default for Base64Decoder {
    fn default() -> Base64Decoder {
        Base64Decoder {
            text: Vec::with_capacity(KEPT),
            padding: 0,
        }
    }
}

impl Base64Decoder {
    /// An empty decoder.
    pub fn new() -> Base64Decoder {
        Base64Decoder::default()
    }

    /// Takes one character (`=` counts as padding).
    pub fn push(&mut self, c: u8) -> Result<(), EncodingError> {
        match c {
            b'=' => self.padding += 1,
            c if !is_base64(c) => return Err(EncodingError::BadDigit(c)),
            _ if self.padding > 0 => return Err(EncodingError::DataAfterPadding),
            c => self.text.push(c),
        }
        Ok(())
    }

    /// The bytes decoded; left-over bits are dropped.
    pub fn finish(self) -> Vec<u8> {
        decode_lax(&B64_LAX, &self.text)
    }

    /// The bytes decoded, if the text was a whole number of padded quanta
    /// (at most two `=`; the bits the padding leaves over are not checked).
    pub fn finish_strict(self) -> Result<Vec<u8>, EncodingError> {
        if !(self.text.len() + self.padding).is_multiple_of(4) || self.padding > 2 {
            return Err(EncodingError::BadLength);
        }
        Ok(self.finish())
    }
}

/// Lenient base64: white space skipped, padding optional (decoding stops at
/// the first `=`); `None` on any other character outside the alphabet.
pub fn from_base64(text: &str) -> Option<Vec<u8>> {
    let mut d = Base64Decoder::new();
    for c in text.bytes().filter(|c| !c.is_ascii_whitespace()) {
        if c == b'=' {
            break;
        }
        d.push(c).ok()?;
    }
    Some(d.finish())
}

/// Lower-case hex.
pub fn to_hex(bytes: &[u8]) -> String {
    HEXLOWER.encode(bytes)
}

/// Decodes hex digits (either case) one at a time.
pub struct HexDecoder {
    text: Vec<u8>,
}

impl Default for HexDecoder {
    fn default() -> HexDecoder {
        HexDecoder {
            text: Vec::with_capacity(KEPT),
        }
    }
}

impl HexDecoder {
    /// An empty decoder.
    pub fn new() -> HexDecoder {
        HexDecoder::default()
    }

    /// Takes one digit.
    pub fn push(&mut self, c: u8) -> Result<(), EncodingError> {
        if !c.is_ascii_hexdigit() {
            return Err(EncodingError::BadDigit(c));
        }
        self.text.push(c);
        Ok(())
    }

    /// The bytes decoded; an odd number of digits is [`EncodingError::BadLength`].
    pub fn finish(self) -> Result<Vec<u8>, EncodingError> {
        HEXLOWER_PERMISSIVE
            .decode(&self.text)
            .map_err(|_| EncodingError::BadLength)
    }
}

/// Parses hex (either case); `None` if it is not.
pub fn from_hex(text: &str) -> Option<Vec<u8>> {
    HEXLOWER_PERMISSIVE.decode(text.as_bytes()).ok()
}

/// Base32 with the extended hex alphabet, lower case, no padding
/// (RFC 4648 §7): the label form of an NSEC3 hash. It sorts like the bytes.
pub fn base32hex(bytes: &[u8]) -> String {
    B32HEX.encode(bytes)
}

/// Decodes base32hex without padding (either case) one character at a time.
pub struct Base32hexDecoder {
    text: Vec<u8>,
}

impl Default for Base32hexDecoder {
    fn default() -> Base32hexDecoder {
        Base32hexDecoder {
            text: Vec::with_capacity(KEPT),
        }
    }
}

impl Base32hexDecoder {
    /// An empty decoder.
    pub fn new() -> Base32hexDecoder {
        Base32hexDecoder::default()
    }

    /// Takes one character.
    pub fn push(&mut self, c: u8) -> Result<(), EncodingError> {
        if !is_base32hex(c) {
            return Err(EncodingError::BadDigit(c));
        }
        self.text.push(c);
        Ok(())
    }

    /// The bytes decoded; left-over bits are dropped.
    pub fn finish(self) -> Vec<u8> {
        decode_lax(&B32HEX_LAX, &self.text)
    }

    /// The bytes decoded, if the length is one an encoder writes and the
    /// left-over bits are zero.
    pub fn finish_strict(self) -> Result<Vec<u8>, EncodingError> {
        B32HEX
            .decode(&self.text)
            .map_err(|_| EncodingError::BadLength)
    }
}

/// Decodes [`base32hex`] text (either case); `None` if it is not valid.
pub fn from_base32hex(text: &str) -> Option<Vec<u8>> {
    let text = text.as_bytes();
    text.iter()
        .all(|&c| is_base32hex(c))
        .then(|| decode_lax(&B32HEX_LAX, text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc4648() {
        let cases: [(&[u8], &str); 7] = [
            (b"", ""),
            (b"f", "Zg=="),
            (b"fo", "Zm8="),
            (b"foo", "Zm9v"),
            (b"foob", "Zm9vYg=="),
            (b"fooba", "Zm9vYmE="),
            (b"foobar", "Zm9vYmFy"),
        ];
        for (raw, text) in cases {
            assert_eq!(base64(raw), text);
            assert_eq!(from_base64(text).unwrap(), raw);
            let mut d = Base64Decoder::new();
            text.bytes().for_each(|c| d.push(c).unwrap());
            assert_eq!(d.finish_strict().unwrap(), raw);
        }
        assert_eq!(from_base64("aGVsbG8").unwrap(), b"hello");
        assert_eq!(from_base64("aGVs\nbG8=").unwrap(), b"hello");
        assert!(from_base64("a*b").is_none());
        let mut d = Base64Decoder::new();
        "aGVsbG8".bytes().for_each(|c| d.push(c).unwrap());
        assert_eq!(d.finish_strict(), Err(EncodingError::BadLength));
        let mut d = Base64Decoder::new();
        d.push(b'a').unwrap();
        d.push(b'=').unwrap();
        assert_eq!(d.push(b'b'), Err(EncodingError::DataAfterPadding));
    }

    #[test]
    fn hex_round_trips() {
        assert_eq!(to_hex(&[0x0a, 0xff, 0x10]), "0aff10");
        assert_eq!(from_hex("0aFf10").unwrap(), vec![10, 255, 16]);
        assert!(from_hex("abc").is_none());
        assert!(from_hex("zz").is_none());
        assert!(from_hex("+f").is_none());
    }

    #[test]
    fn base32hex_round_trips_and_keeps_order() {
        // RFC 4648 §10 test vectors (base32hex, lower case, no padding).
        assert_eq!(base32hex(b"f"), "co");
        assert_eq!(base32hex(b"fo"), "cpng");
        assert_eq!(base32hex(b"foobar"), "cpnmuoj1e8");
        let a = base32hex(&[0x10; 20]);
        let b = base32hex(&[0x11; 20]);
        assert!(a < b);
        assert_eq!(from_base32hex(&a.to_uppercase()).unwrap(), vec![0x10; 20]);
        let mut d = Base32hexDecoder::new();
        "CPNMUOJ1E".bytes().for_each(|c| d.push(c).unwrap());
        assert_eq!(d.finish_strict(), Err(EncodingError::BadLength));
    }

    fn strict64(text: &str) -> Result<Vec<u8>, EncodingError> {
        let mut d = Base64Decoder::new();
        for c in text.bytes() {
            d.push(c)?;
        }
        d.finish_strict()
    }

    fn strict32(text: &str) -> Result<Vec<u8>, EncodingError> {
        let mut d = Base32hexDecoder::new();
        for c in text.bytes() {
            d.push(c)?;
        }
        d.finish_strict()
    }

    #[test]
    fn strict_base64_checks_padding_not_the_bits_it_leaves() {
        // Bits under the padding need not be zero (BIND and Knot read these).
        assert_eq!(strict64("aB==").unwrap(), b"h");
        assert_eq!(strict64("aGVsbG9=").unwrap(), b"hello");
        assert_eq!(strict64("").unwrap(), b"");
        for bad in ["====", "aGVs=", "aGVsbG8===", "aGV===", "=", "aGVsb"] {
            assert_eq!(strict64(bad), Err(EncodingError::BadLength), "{bad}");
        }
        // A bad character is named even after the padding.
        assert_eq!(strict64("aA=*"), Err(EncodingError::BadDigit(b'*')));
        assert_eq!(strict64("aA=A"), Err(EncodingError::DataAfterPadding));
        assert_eq!(strict64("aGVs bG8="), Err(EncodingError::BadDigit(b' ')));
    }

    #[test]
    fn lenient_base64_skips_space_and_stops_at_padding() {
        assert_eq!(from_base64(" aG\tVs\r\nbG8 ").unwrap(), b"hello");
        // Whatever follows the first '=' is not read.
        assert_eq!(from_base64("aGVsbG8=*!").unwrap(), b"hello");
        // A last character that fills no byte is checked, then dropped.
        assert_eq!(from_base64("aGVsb").unwrap(), b"hel");
        assert_eq!(from_base64("a").unwrap(), b"");
        assert!(from_base64("aGVs*").is_none());
        // Vertical tab is not ASCII white space.
        assert!(from_base64("aGVs\x0bbG8").is_none());
        assert_eq!(from_base64("").unwrap(), b"");
    }

    #[test]
    fn hex_edges() {
        assert_eq!(from_hex("").unwrap(), b"");
        assert!(from_hex(" 0a").is_none());
        assert!(from_hex("0a\n").is_none());
        assert!(from_hex("é0").is_none());
        assert_eq!(to_hex(&[0xAB]), "ab");
        let mut d = HexDecoder::new();
        assert_eq!(d.push(b'g'), Err(EncodingError::BadDigit(b'g')));
        d.push(b'F').unwrap();
        assert_eq!(d.finish(), Err(EncodingError::BadLength));
    }

    #[test]
    fn base32hex_edges() {
        // Lenient: trailing bits and characters that fill no byte dropped.
        assert_eq!(from_base32hex("cp").unwrap(), b"f");
        assert_eq!(from_base32hex("c").unwrap(), b"");
        assert_eq!(from_base32hex("cpn").unwrap(), b"f");
        assert_eq!(from_base32hex("cpnmuo").unwrap(), b"foo");
        assert!(from_base32hex("cw").is_none());
        assert!(from_base32hex("co=").is_none());
        // Strict: only lengths an encoder writes, trailing bits zero.
        assert_eq!(strict32("CO").unwrap(), b"f");
        assert_eq!(strict32("").unwrap(), b"");
        assert_eq!(strict32("cp"), Err(EncodingError::BadLength));
        for bad in ["c", "cpn", "cpnmuo"] {
            assert_eq!(strict32(bad), Err(EncodingError::BadLength), "{bad}");
        }
        assert_eq!(strict32("co="), Err(EncodingError::BadDigit(b'=')));
        // Output is lower case.
        assert_eq!(base32hex(&[0xff; 5]), "vvvvvvvv");
    }
}
