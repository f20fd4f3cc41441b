//! `sendfile` / `recvfile` for async streams, on `tokio::fs::File`: the async twins of
//! [`Socket::sendfile`](crate::Socket::sendfile) and
//! [`Socket::recvfile`](crate::Socket::recvfile), through one block buffer of at most
//! [`FILE_BLOCK_SIZE`] bytes.
//!
//! tokio runs file I/O on its blocking pool (a few shared threads, not one per connection);
//! the socket side sleeps on readiness like every other async call.

use std::future::poll_fn;
use std::io::{self, SeekFrom};

use ::tokio::fs::File;
use ::tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};

use super::stream::UdtStream;
use crate::error::{Error, Result};
use crate::file::{block_len, check_range, FILE_BLOCK_SIZE};

impl UdtStream {
    /// Sends exactly `len` bytes of `file`, starting at byte `offset`; returns the number of
    /// bytes sent (`len`). Completes once every byte is queued in the send buffer (not
    /// acknowledged: `shutdown` waits for that). Moves the file's position.
    ///
    /// Fails with [`Error::File`] (kind `UnexpectedEof`) if the file ends before
    /// `offset + len`, and with the socket's error if the connection breaks. Not cancel-safe:
    /// a dropped future may have sent part of the range.
    pub async fn sendfile(&mut self, file: &mut File, offset: u64, len: u64) -> Result<u64> {
        check_range(offset, len)?;
        if len == 0 {
            return Ok(0);
        }
        file.seek(SeekFrom::Start(offset))
            .await
            .map_err(Error::File)?;
        let mut buf = vec![0u8; block_len(len)];
        let mut done = 0u64;
        while done < len {
            let want = block_len(len - done);
            let block = &mut buf[..want];
            file.read_exact(block).await.map_err(|e| {
                if e.kind() == io::ErrorKind::UnexpectedEof {
                    Error::File(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the file ended before offset + len",
                    ))
                } else {
                    Error::File(e)
                }
            })?;
            let mut queued = 0;
            while queued < want {
                queued += poll_fn(|cx| self.conn().poll_send(cx, &block[queued..])).await?;
            }
            done += want as u64;
        }
        Ok(done)
    }

    /// Receives exactly `len` bytes into `file` at byte `offset`; returns the number of bytes
    /// written (`len`), flushed to the file. Moves the file's position.
    ///
    /// Fails with [`Error::ConnectionLost`] if the peer closes before `len` bytes arrived, and
    /// with the socket's or the file's error otherwise; every byte received before an error
    /// is written to the file first. Not cancel-safe: a dropped future may have consumed part
    /// of the range.
    pub async fn recvfile(&mut self, file: &mut File, offset: u64, len: u64) -> Result<u64> {
        check_range(offset, len)?;
        if len == 0 {
            return Ok(0);
        }
        file.seek(SeekFrom::Start(offset))
            .await
            .map_err(Error::File)?;
        let mut buf = vec![0u8; block_len(len).min(FILE_BLOCK_SIZE)];
        let mut done = 0u64;
        while done < len {
            let want = block_len(len - done);
            // Fill the whole block first: a write per arrival would cost far more calls.
            let mut filled = 0;
            let mut failure = None;
            while filled < want {
                match poll_fn(|cx| self.conn().poll_recv(cx, &mut buf[filled..want])).await {
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
            if filled > 0 {
                file.write_all(&buf[..filled]).await.map_err(Error::File)?;
                done += filled as u64;
            }
            if let Some(e) = failure {
                file.flush().await.map_err(Error::File)?;
                return Err(e);
            }
        }
        file.flush().await.map_err(Error::File)?;
        Ok(done)
    }
}
