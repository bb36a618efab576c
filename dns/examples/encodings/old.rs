//! The hand-written RFC 4648 codecs `dns::encoding` had before it moved to
//! the `data-encoding` crate, kept here unchanged so that `main.rs` can
//! check the two agree and time them side by side.

#![allow(dead_code)]

use dns::encoding::EncodingError;

/// Bits taken from text digits and given out as bytes: the one accumulator
/// the three decoders share.
#[derive(Default)]
struct Bits {
    out: Vec<u8>,
    acc: u64,
    pending: u32,
}

impl Bits {
    /// Appends the low `width` bits of `value`.
    fn push(&mut self, value: u8, width: u32) {
        self.acc = self.acc << width | u64::from(value);
        self.pending += width;
        if self.pending >= 8 {
            self.pending -= 8;
            self.out.push((self.acc >> self.pending) as u8);
            self.acc &= (1 << self.pending) - 1;
        }
    }
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Base64 (RFC 4648 §4) with padding.
pub fn base64(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for c in bytes.chunks(3) {
        let v = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= c.len() {
                out.push(B64[((v >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Decodes standard base64 one character at a time.
#[derive(Default)]
pub struct Base64Decoder {
    bits: Bits,
    count: usize,
    padding: usize,
}

impl Base64Decoder {
    /// An empty decoder.
    pub fn new() -> Base64Decoder {
        Base64Decoder::default()
    }

    /// Takes one character (`=` counts as padding).
    pub fn push(&mut self, c: u8) -> Result<(), EncodingError> {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            b'=' => {
                self.padding += 1;
                self.count += 1;
                return Ok(());
            }
            _ => return Err(EncodingError::BadDigit(c)),
        };
        if self.padding > 0 {
            return Err(EncodingError::DataAfterPadding);
        }
        self.count += 1;
        self.bits.push(v, 6);
        Ok(())
    }

    /// The bytes decoded; left-over bits are dropped.
    pub fn finish(self) -> Vec<u8> {
        self.bits.out
    }

    /// The bytes decoded, if the text was a whole number of padded quanta.
    pub fn finish_strict(self) -> Result<Vec<u8>, EncodingError> {
        let (count, padding) = (self.count, self.padding);
        if count & 3 != 0
            || padding > 2
            || (padding > 0 && (count / 4) * 3 - padding != self.bits.out.len())
        {
            return Err(EncodingError::BadLength);
        }
        Ok(self.bits.out)
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
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(HEX[usize::from(b >> 4)] as char);
        out.push(HEX[usize::from(b & 15)] as char);
    }
    out
}

/// Decodes hex digits (either case) one at a time.
#[derive(Default)]
pub struct HexDecoder {
    bits: Bits,
}

impl HexDecoder {
    /// An empty decoder.
    pub fn new() -> HexDecoder {
        HexDecoder::default()
    }

    /// Takes one digit.
    pub fn push(&mut self, c: u8) -> Result<(), EncodingError> {
        let v = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            b'A'..=b'F' => c - b'A' + 10,
            _ => return Err(EncodingError::BadDigit(c)),
        };
        self.bits.push(v, 4);
        Ok(())
    }

    /// The bytes decoded; an odd number of digits is [`EncodingError::BadLength`].
    pub fn finish(self) -> Result<Vec<u8>, EncodingError> {
        match self.bits.pending {
            0 => Ok(self.bits.out),
            _ => Err(EncodingError::BadLength),
        }
    }
}

/// Parses hex (either case); `None` if it is not.
pub fn from_hex(text: &str) -> Option<Vec<u8>> {
    let mut d = HexDecoder::new();
    for c in text.bytes() {
        d.push(c).ok()?;
    }
    d.finish().ok()
}

const B32HEX: &[u8; 32] = b"0123456789abcdefghijklmnopqrstuv";

/// Base32 with the extended hex alphabet, lower case, no padding
/// (RFC 4648 §7): the label form of an NSEC3 hash. It sorts like the bytes.
pub fn base32hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(5) * 8);
    for chunk in bytes.chunks(5) {
        let mut block = [0u8; 5];
        block[..chunk.len()].copy_from_slice(chunk);
        let v = block.iter().fold(0u64, |acc, b| (acc << 8) | u64::from(*b));
        let chars = (chunk.len() * 8).div_ceil(5);
        for i in 0..chars {
            out.push(B32HEX[((v >> (35 - 5 * i)) & 31) as usize] as char);
        }
    }
    out
}

/// Decodes base32hex without padding (either case) one character at a time.
#[derive(Default)]
pub struct Base32hexDecoder {
    bits: Bits,
    count: usize,
}

impl Base32hexDecoder {
    /// An empty decoder.
    pub fn new() -> Base32hexDecoder {
        Base32hexDecoder::default()
    }

    /// Takes one character.
    pub fn push(&mut self, c: u8) -> Result<(), EncodingError> {
        let v = match c.to_ascii_lowercase() {
            d @ b'0'..=b'9' => d - b'0',
            d @ b'a'..=b'v' => d - b'a' + 10,
            _ => return Err(EncodingError::BadDigit(c)),
        };
        self.count += 1;
        self.bits.push(v, 5);
        Ok(())
    }

    /// The bytes decoded; left-over bits are dropped.
    pub fn finish(self) -> Vec<u8> {
        self.bits.out
    }

    /// The bytes decoded, if the length is one an encoder writes and the
    /// left-over bits are zero.
    pub fn finish_strict(self) -> Result<Vec<u8>, EncodingError> {
        if !matches!(self.count % 8, 0 | 2 | 4 | 5 | 7) || self.bits.acc != 0 {
            return Err(EncodingError::BadLength);
        }
        Ok(self.bits.out)
    }
}

/// Decodes [`base32hex`] text (either case); `None` if it is not valid.
pub fn from_base32hex(text: &str) -> Option<Vec<u8>> {
    let mut d = Base32hexDecoder::new();
    for c in text.bytes() {
        d.push(c).ok()?;
    }
    Some(d.finish())
}
