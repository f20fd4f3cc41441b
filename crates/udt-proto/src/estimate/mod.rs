//! Estimators a connection keeps: RTT, receiver arrival rate and link capacity, and the ACK
//! history used to time ACK/ACK2 round trips.

pub mod ack_history;
pub mod receive_rate;
pub mod rtt;

pub use ack_history::AckHistory;
pub use receive_rate::ReceiveRateEstimator;
pub use rtt::RttEstimator;
