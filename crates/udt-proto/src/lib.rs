//! # udt-proto
//!
//! A sans-IO implementation of UDT, the UDP-based Data Transfer protocol, wire-compatible with
//! the reference UDT4 4.11.
//!
//! Nothing in this crate touches a socket, a thread or a clock. An [`Endpoint`] is handed
//! datagrams and the current [`Instant`]; it hands back datagrams to send and the next instant at
//! which it wants to be woken. The same code therefore runs over real UDP (crate `udt`) and in
//! the deterministic simulator (crate `udt-sim`).
//!
//! Layers, bottom up:
//! * [`wire`]: packet formats;
//! * [`seq`]: wrap-aware sequence, message and ACK numbers;
//! * [`loss_list`], [`buffer`], [`estimate`]: the data structures of a connection;
//! * [`cc`]: congestion control, a trait with UDT's native algorithm as the default;
//! * [`crypto`]: optional authenticated encryption (AEAD) of a connection's packets;
//! * [`connection`]: one UDT connection's state machine;
//! * [`endpoint`]: many connections and a listener on one UDP port.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod buffer;
pub mod cc;
pub mod config;
pub mod connection;
pub mod crypto;
pub mod endpoint;
pub mod error;
pub mod estimate;
pub mod loss_list;
pub mod seq;
pub mod stats;
pub mod time;
pub mod wire;

pub use config::{ConnectionConfig, SocketKind};
pub use connection::{CloseReason, ConnectError, Connection, ConnectionState, Event};
pub use crypto::{Cipher, Encryption, EncryptionMode};
pub use endpoint::{Endpoint, EndpointConfig, EndpointError, StateCounts, Transmit};
pub use error::Error;
pub use seq::{AckNo, MsgNo, SeqNo, SeqRange};
pub use time::Instant;
pub use wire::SocketId;
