//! `sendfile` / `recvfile`: move a byte range of a file over a stream socket (UDT4's
//! `UDT::sendfile` / `UDT::recvfile`).
//!
//! Data moves in blocks of at most [`FILE_BLOCK_SIZE`] bytes through reused buffers, so memory
//! stays bounded whatever the length, with positional I/O (`pread`/`pwrite`), so the file's
//! seek position is neither used nor changed and one `File` can be shared between threads.
//!
//! Two forms:
//! - `sendfile_with` / `recvfile_with`: one buffer, everything on the calling thread, the
//!   per-block callback included (it need not be `Send`);
//! - `sendfile_blocks` / `recvfile_blocks` (and the plain `sendfile` / `recvfile`): a pipeline
//!   of three stages on scoped threads (file, socket, callback) joined by bounded channels
//!   that recycle [`PIPELINE_BLOCKS`] buffers, so reading or writing the file and the caller's
//!   per-block work (`udt send`/`recv` hash with BLAKE3) overlap with the socket instead of
//!   adding to its time.
//!
//! Why `pread`/`pwrite` and not `mmap`: each byte is copied once between the file and our
//! buffer (a memory copy at several GB/s, under a tenth of the per-byte cost of the socket
//! path), and the socket copies it into its own buffer anyway. A mapping would save only that
//! first copy, would pay a page fault per few pages instead, and a file truncated by someone
//! else while it is mapped kills the process with `SIGBUS` instead of failing the transfer.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::mpsc;
use std::thread;

use crate::{Error, Result, Socket};

/// Size of the block buffer that `sendfile`/`recvfile` move data through, bytes. Large enough
/// that each `pread`/`pwrite` amortises its system call over hundreds of packets, small
/// enough not to matter for memory.
pub const FILE_BLOCK_SIZE: usize = 1 << 20;

impl Socket {
    /// Receives until `buf` is full, the connection ends or an error occurs: `recv` returns
    /// what has arrived, often a few packets, and one file write per packet would cost far
    /// more system calls than one per block. Returns the bytes received and what stopped it
    /// early, if anything.
    fn fill_block(&self, buf: &mut [u8]) -> (usize, Option<Error>) {
        let mut filled = 0;
        while filled < buf.len() {
            match self.recv(&mut buf[filled..]) {
                Ok(0) => return (filled, Some(Error::ConnectionLost)),
                Ok(n) => filled += n,
                Err(e) => return (filled, Some(e)),
            }
        }
        (filled, None)
    }

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
        // Pipelined: the next blocks are read while this one is queued.
        self.sendfile_blocks(file, offset, len, |_| {})
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
        // Pipelined: the previous blocks are written while this one is received.
        self.recvfile_blocks(file, offset, len, |_| {})
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
            let (filled, failure) = self.fill_block(&mut buf[..want]);
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

/// How many block buffers a pipelined transfer ([`Socket::sendfile_blocks`],
/// [`Socket::recvfile_blocks`]) cycles through, each of [`FILE_BLOCK_SIZE`] bytes: one at the
/// file, one at the socket, one at the consumer, and one spare so that a stage that is briefly
/// slower does not stall the others at once. Memory per transfer is therefore bounded by
/// `PIPELINE_BLOCKS * FILE_BLOCK_SIZE` bytes (4 MiB).
pub const PIPELINE_BLOCKS: usize = 4;

impl Socket {
    /// As [`Socket::sendfile_with`], but pipelined: a reader thread `pread`s the next blocks
    /// while this thread queues the current one on the socket, and `on_block` runs on a third
    /// thread over the blocks already queued. A slow consumer (hashing a block with BLAKE3 costs
    /// about as much CPU as queueing it) therefore no longer holds up the socket, and neither
    /// does reading the file. Returns the number of bytes sent (`len`).
    ///
    /// The stages exchange at most [`PIPELINE_BLOCKS`] buffers of at most [`FILE_BLOCK_SIZE`]
    /// bytes over bounded channels, so memory stays bounded, and the buffers are recycled, so
    /// nothing is allocated per block. Errors are those of [`Socket::sendfile_with`] (the file
    /// ending early is [`Error::File`] of kind `UnexpectedEof`), and so is the accounting: when
    /// an error is returned, the bytes passed to `on_block` are exactly the bytes queued on the
    /// socket, in file order, including the queued part of a block the socket failed in the
    /// middle of. All threads are joined before this returns; a panic in `on_block` is resumed
    /// here. A transfer of at most one block runs on this thread alone: there is nothing to
    /// overlap.
    pub fn sendfile_blocks<F>(
        &self,
        file: &File,
        offset: u64,
        len: u64,
        mut on_block: F,
    ) -> Result<u64>
    where
        F: FnMut(&[u8]) + Send,
    {
        check_range(offset, len)?;
        if len <= FILE_BLOCK_SIZE as u64 {
            return self.sendfile_with(file, offset, len, on_block);
        }
        let (free_tx, free_rx) = mpsc::sync_channel::<Vec<u8>>(PIPELINE_BLOCKS);
        // Buffers that hold file data, in file order; the reader's last message may be its error.
        let (read_tx, read_rx) = mpsc::sync_channel::<Result<Block>>(PIPELINE_BLOCKS);
        // Blocks (or the first part of one) queued on the socket, for the consumer.
        let (sent_tx, sent_rx) = mpsc::sync_channel::<Block>(PIPELINE_BLOCKS);
        for _ in 0..PIPELINE_BLOCKS {
            // Cannot fail: the channel holds exactly PIPELINE_BLOCKS and its receiver is alive.
            // A zeroed allocation this large is fresh pages from the kernel: a range of two
            // blocks never touches the buffers it does not use.
            let _ = free_tx.send(vec![0u8; FILE_BLOCK_SIZE]);
        }
        thread::scope(|s| {
            let reader = thread::Builder::new()
                .name("udt-file-read".into())
                .spawn_scoped(s, move || read_blocks(file, offset, len, free_rx, read_tx))
                .map_err(Error::Io)?;
            let consumer = thread::Builder::new()
                .name("udt-file-block".into())
                .spawn_scoped(s, move || {
                    // Ends once the socket stage drops its sender, after the last block.
                    for block in sent_rx {
                        on_block(block.bytes());
                        // The reader may have stopped already; the buffer is then dropped.
                        let _ = free_tx.send(block.buf);
                    }
                });
            let consumer = match consumer {
                Ok(c) => c,
                Err(e) => {
                    // Unblocks the reader (its channel closes), which the scope then joins.
                    drop(read_rx);
                    return Err(Error::Io(e));
                }
            };
            let mut done = 0u64;
            let result = loop {
                if done == len {
                    break Ok(done);
                }
                let block = match read_rx.recv() {
                    Ok(Ok(b)) => b,
                    Ok(Err(e)) => break Err(e),
                    // The reader ended without its block or an error: it panicked, and
                    // joining it below resumes the panic.
                    Err(_) => break Err(Error::InvalidOperation("file reader stopped")),
                };
                let mut queued = 0;
                let mut failure = None;
                while queued < block.len {
                    match self.send(&block.buf[queued..block.len]) {
                        Ok(n) => queued += n,
                        Err(e) => {
                            failure = Some(e);
                            break;
                        }
                    }
                }
                done += queued as u64;
                if queued > 0 {
                    let part = Block {
                        buf: block.buf,
                        len: queued,
                    };
                    if sent_tx.send(part).is_err() {
                        // Only if the consumer panicked; joining it resumes the panic.
                        break Err(Error::InvalidOperation("file block consumer stopped"));
                    }
                }
                if let Some(e) = failure {
                    break Err(e);
                }
            };
            // Closing our ends stops both threads: the consumer once it has seen every queued
            // block, the reader at its next send or (once the consumer's end of the free pool
            // is gone) its next wait for a buffer.
            drop(read_rx);
            drop(sent_tx);
            join(consumer);
            join(reader);
            result
        })
    }

    /// As [`Socket::recvfile_with`], but pipelined: this thread receives into one block while a
    /// writer thread `pwrite`s the previous ones and then passes them to `on_block`, so writing
    /// and the caller's per-block work (hashing) overlap with the socket. Returns the number of
    /// bytes written (`len`).
    ///
    /// At most [`PIPELINE_BLOCKS`] buffers of at most [`FILE_BLOCK_SIZE`] bytes circulate, over
    /// bounded channels. Errors and accounting are those of [`Socket::recvfile_with`]: every
    /// byte received before a socket error is written first, a failed write is
    /// [`Error::File`] and takes precedence, and when an error is returned the bytes passed to
    /// `on_block` are exactly the bytes written to the file at `offset` onwards. After a write
    /// error at most the blocks already in flight are received (they cannot be stored); the
    /// socket stage stops before asking for more. All threads are joined before this returns.
    /// A transfer of at most one block runs on this thread alone.
    pub fn recvfile_blocks<F>(
        &self,
        file: &File,
        offset: u64,
        len: u64,
        mut on_block: F,
    ) -> Result<u64>
    where
        F: FnMut(&[u8]) + Send,
    {
        check_range(offset, len)?;
        if len <= FILE_BLOCK_SIZE as u64 {
            return self.recvfile_with(file, offset, len, on_block);
        }
        let (free_tx, free_rx) = mpsc::sync_channel::<Vec<u8>>(PIPELINE_BLOCKS);
        let (recv_tx, recv_rx) = mpsc::sync_channel::<Block>(PIPELINE_BLOCKS);
        for _ in 0..PIPELINE_BLOCKS {
            let _ = free_tx.send(vec![0u8; FILE_BLOCK_SIZE]);
        }
        thread::scope(|s| {
            let writer = thread::Builder::new()
                .name("udt-file-write".into())
                .spawn_scoped(s, move || -> Result<u64> {
                    let mut written = 0u64;
                    for block in recv_rx {
                        file.write_all_at(block.bytes(), offset + written)
                            .map_err(Error::File)?;
                        on_block(block.bytes());
                        written += block.len as u64;
                        let _ = free_tx.send(block.buf);
                    }
                    Ok(written)
                })
                .map_err(Error::Io)?;
            let mut done = 0u64;
            let mut failure = None;
            while done < len {
                // A finished writer has failed (or panicked): stop receiving what it cannot
                // store. Either way its result below says what happened.
                if writer.is_finished() {
                    break;
                }
                let Ok(mut buf) = free_rx.recv() else { break };
                let want = block_len(len - done);
                let (filled, failed) = self.fill_block(&mut buf[..want]);
                failure = failed;
                // Keep what did arrive even when the connection failed: a resumed transfer
                // continues from it.
                if filled > 0 {
                    if recv_tx.send(Block { buf, len: filled }).is_err() {
                        break;
                    }
                    done += filled as u64;
                }
                if failure.is_some() {
                    break;
                }
            }
            drop(recv_tx);
            drop(free_rx);
            let written = join(writer)?;
            match failure {
                Some(e) => Err(e),
                None if written == len => Ok(written),
                // The writer stopped early without an error: cannot happen, as it only ends
                // early on one.
                None => Err(Error::InvalidOperation("file writer stopped early")),
            }
        })
    }
}

/// One block of a pipelined transfer: a recycled buffer and how many of its bytes are data.
struct Block {
    buf: Vec<u8>,
    len: usize,
}

impl Block {
    fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

/// The reader stage of [`Socket::sendfile_blocks`]: fills free buffers with the file's blocks
/// in order and sends them on; a read error is sent as the last message. Returns when the range
/// is read, after an error, or when a neighbouring stage has gone.
fn read_blocks(
    file: &File,
    offset: u64,
    len: u64,
    free: mpsc::Receiver<Vec<u8>>,
    out: mpsc::SyncSender<Result<Block>>,
) {
    let mut done = 0u64;
    while done < len {
        let Ok(mut buf) = free.recv() else { return };
        let want = block_len(len - done);
        let r = read_exact_at(file, &mut buf[..want], offset + done);
        let failed = r.is_err();
        if out.send(r.map(|()| Block { buf, len: want })).is_err() || failed {
            return;
        }
        done += want as u64;
    }
}

/// Joins a pipeline thread, resuming its panic on this thread.
fn join<T>(h: thread::ScopedJoinHandle<'_, T>) -> T {
    match h.join() {
        Ok(v) => v,
        Err(panic) => std::panic::resume_unwind(panic),
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
