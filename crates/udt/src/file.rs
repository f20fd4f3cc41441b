//! `sendfile` / `recvfile`: move a byte range of a file over a stream socket (UDT4's
//! `UDT::sendfile` / `UDT::recvfile`).
//!
//! Both go through one reusable block buffer of at most [`FILE_BLOCK_SIZE`] bytes, so memory
//! stays bounded whatever the length, and use positional I/O (`pread`/`pwrite`), so the file's
//! seek position is neither used nor changed and one `File` can be shared between threads.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use crate::{Error, Result, Socket};

/// Size of the block buffer that `sendfile`/`recvfile` move data through, bytes. Large enough
/// that each `pread`/`pwrite` amortises its system call over hundreds of packets, small
/// enough not to matter for memory.
pub const FILE_BLOCK_SIZE: usize = 1 << 20;

impl Socket {
    /// Sends exactly `len` bytes of `file`, starting at byte `offset`, over this stream socket;
    /// returns the number of bytes sent (`len`).
    ///
    /// Blocks until every byte is queued in the send buffer (not until it is acknowledged:
    /// `close` waits for that). Fails with [`Error::File`] of kind `UnexpectedEof` if the file
    /// ends before `offset + len`, and with the socket's error if the connection breaks or
    /// the write timeout passes. The socket should be in blocking mode.
    ///
    /// ```no_run
    /// let file = std::fs::File::open("data.bin")?;
    /// let len = file.metadata()?.len();
    /// let sock = udt::Socket::connect("192.0.2.7:9000")?;
    /// sock.sendfile(&file, 0, len)?;
    /// sock.close()?;
    /// // The peer: `conn.recvfile(&out_file, 0, len)?` writes the same bytes.
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn sendfile(&self, file: &File, offset: u64, len: u64) -> Result<u64> {
        self.sendfile_with(file, offset, len, |_| {})
    }

    /// As [`Socket::sendfile`], and calls `on_block` with each block once it is queued, in
    /// file order: lets the caller hash or count the data without reading the file twice.
    /// When an error is returned, the blocks passed to `on_block` so far are exactly the bytes
    /// that were queued.
    pub fn sendfile_with(
        &self,
        file: &File,
        offset: u64,
        len: u64,
        mut on_block: impl FnMut(&[u8]),
    ) -> Result<u64> {
        check_range(offset, len)?;
        if len == 0 {
            return Ok(0);
        }
        let mut buf = vec![0u8; block_len(len)];
        let mut done = 0u64;
        while done < len {
            let want = block_len(len - done);
            let block = &mut buf[..want];
            read_exact_at(file, block, offset + done)?;
            let mut queued = 0;
            while queued < want {
                queued += self.send(&block[queued..])?;
            }
            on_block(block);
            done += want as u64;
        }
        Ok(done)
    }

    /// Receives exactly `len` bytes from this stream socket into `file` at byte `offset`;
    /// returns the number of bytes written (`len`).
    ///
    /// Fails with [`Error::ConnectionLost`] if the peer closes before `len` bytes arrived, and
    /// with the socket's or the file's error otherwise. Every byte received before an error
    /// is written to the file first, so nothing received is lost.
    pub fn recvfile(&self, file: &File, offset: u64, len: u64) -> Result<u64> {
        self.recvfile_with(file, offset, len, |_| {})
    }

    /// As [`Socket::recvfile`], and calls `on_block` with each block once it is written, in
    /// file order. When an error is returned, the blocks passed to `on_block` so far are
    /// exactly the bytes written to the file (at `offset` onwards).
    pub fn recvfile_with(
        &self,
        file: &File,
        offset: u64,
        len: u64,
        mut on_block: impl FnMut(&[u8]),
    ) -> Result<u64> {
        check_range(offset, len)?;
        if len == 0 {
            return Ok(0);
        }
        let mut buf = vec![0u8; block_len(len)];
        let mut done = 0u64;
        while done < len {
            let want = block_len(len - done);
            // Fill the whole block before writing: `recv` returns what has arrived, often a
            // few packets, and one write per packet would cost far more system calls.
            let mut filled = 0;
            let mut failure = None;
            while filled < want {
                match self.recv(&mut buf[filled..want]) {
                    Ok(0) => {
                        failure = Some(Error::ConnectionLost);
                        break;
                    }
                    Ok(n) => filled += n,
                    Err(e) => {
                        failure = Some(e);
                        break;
                    }
                }
            }
            // Keep what did arrive even when the connection failed: a resumed transfer
            // continues from it.
            if filled > 0 {
                file.write_all_at(&buf[..filled], offset + done)
                    .map_err(Error::File)?;
                on_block(&buf[..filled]);
                done += filled as u64;
            }
            if let Some(e) = failure {
                return Err(e);
            }
        }
        Ok(done)
    }
}

/// Rejects ranges past the largest file offset.
pub(crate) fn check_range(offset: u64, len: u64) -> Result<()> {
    match offset.checked_add(len) {
        Some(end) if end <= i64::MAX as u64 => Ok(()),
        _ => Err(Error::InvalidOperation("file offset + length overflows")),
    }
}

/// The size of the next block when `remaining` bytes are left.
pub(crate) fn block_len(remaining: u64) -> usize {
    remaining.min(FILE_BLOCK_SIZE as u64) as usize
}

/// `pread` until `buf` is full; a file that ends first is an `UnexpectedEof` error.
fn read_exact_at(file: &File, mut buf: &mut [u8], mut offset: u64) -> Result<()> {
    while !buf.is_empty() {
        match file.read_at(buf, offset) {
            Ok(0) => {
                return Err(Error::File(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the file ended before offset + len",
                )))
            }
            Ok(n) => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::File(e)),
        }
    }
    Ok(())
}
