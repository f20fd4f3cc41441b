//! Shared pieces of the fuzz targets: the byte reader that turns a fuzzer's input into a
//! sequence of decisions, and the generator of the checked-in seed corpora (`seeds`).

pub mod seeds;

/// Reads a fuzzer's input as a stream of decisions; past the end every read yields zeros, so
/// any input, however short, is a complete (if dull) scenario.
#[derive(Debug)]
pub struct Input<'a> {
    data: &'a [u8],
}

impl<'a> Input<'a> {
    /// A reader over `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Input { data }
    }
    /// The next byte (0 past the end).
    pub fn u8(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&b, rest)) => {
                self.data = rest;
                b
            }
            None => 0,
        }
    }
    /// The next two bytes, little-endian.
    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }
    /// The next four bytes, little-endian.
    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }
    /// The next eight bytes, little-endian.
    pub fn u64(&mut self) -> u64 {
        u64::from(self.u32()) | (u64::from(self.u32()) << 32)
    }
    /// The next bit of a byte: true if the byte is odd.
    pub fn bool(&mut self) -> bool {
        self.u8() & 1 == 1
    }
    /// Up to `n` bytes (fewer at the end of the input).
    pub fn bytes(&mut self, n: usize) -> &'a [u8] {
        let n = n.min(self.data.len());
        let (a, b) = self.data.split_at(n);
        self.data = b;
        a
    }
    /// True once every byte was read.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }
}
