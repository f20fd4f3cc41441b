//! The connection's send and receive buffers, both bounded in packets.

pub mod pool;
pub mod recv;
pub mod send;

pub use recv::{MsgRead, RecvBuffer, TakenStream};
pub use send::{SendBuffer, SendBufferError, SendSlots};
