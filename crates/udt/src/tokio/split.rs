//! The two halves of a split [`UdtStream`](super::UdtStream), for a reading task and a writing
//! task.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use ::tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::conn::Conn;
use super::stream::UdtStream;
use crate::socket::Socket;

/// The reading half of a [`UdtStream`], from [`UdtStream::into_split`]. Cancel-safe reads, as
/// the whole stream's.
pub struct UdtReadHalf {
    conn: Arc<Conn>,
}

/// The writing half of a [`UdtStream`], from [`UdtStream::into_split`]. Its `shutdown` closes
/// the whole connection (UDT has no half-close): the read half then reads what had arrived,
/// then the end of the stream.
pub struct UdtWriteHalf {
    conn: Arc<Conn>,
}

impl UdtStream {
    /// Splits the stream into a read half and a write half that separate tasks can own. The
    /// connection closes (gracefully) when both are dropped, or when the write half is shut
    /// down.
    pub fn into_split(self) -> (UdtReadHalf, UdtWriteHalf) {
        let conn = self.into_conn();
        (
            UdtReadHalf {
                conn: Arc::clone(&conn),
            },
            UdtWriteHalf { conn },
        )
    }
}

/// Two halves of different streams given to [`UdtReadHalf::reunite`]; they are handed back.
#[derive(Debug)]
pub struct ReuniteError(pub UdtReadHalf, pub UdtWriteHalf);

impl std::fmt::Display for ReuniteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the halves belong to different UDT streams")
    }
}

impl std::error::Error for ReuniteError {}

impl UdtReadHalf {
    /// Puts the stream back together; fails if `write` is the half of another stream.
    pub fn reunite(self, write: UdtWriteHalf) -> Result<UdtStream, ReuniteError> {
        if Arc::ptr_eq(&self.conn, &write.conn) {
            drop(write);
            Ok(UdtStream::from_conn(self.conn))
        } else {
            Err(ReuniteError(self, write))
        }
    }

    /// The underlying socket, for options and statistics (see [`UdtStream::socket`]).
    pub fn socket(&self) -> &Socket {
        self.conn.socket()
    }
}

impl UdtWriteHalf {
    /// The underlying socket, for options and statistics (see [`UdtStream::socket`]).
    pub fn socket(&self) -> &Socket {
        self.conn.socket()
    }
}

impl std::fmt::Debug for UdtReadHalf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UdtReadHalf")
            .field("local_addr", &self.conn.socket().local_addr())
            .finish()
    }
}

impl std::fmt::Debug for UdtWriteHalf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UdtWriteHalf")
            .field("local_addr", &self.conn.socket().local_addr())
            .finish()
    }
}

impl AsyncRead for UdtReadHalf {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.conn.poll_read(cx, buf)
    }
}

impl AsyncWrite for UdtWriteHalf {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.conn.poll_send(cx, buf).map_err(io::Error::from)
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.conn.poll_close(cx).map_err(io::Error::from)
    }
}
