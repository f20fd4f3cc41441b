//! Estimators a connection keeps: RTT and its recent minimum, receiver arrival rate and link
//! capacity, the sender's delivery rate and count of packets known received, and the ACK history used to time ACK/ACK2 round
//! trips.

pub mod ack_history;
pub mod delivery;
pub mod min_rtt;
pub mod receipt;
pub mod receive_rate;
pub mod rtt;

pub use ack_history::AckHistory;
pub use delivery::DeliveryRate;
pub use min_rtt::MinRtt;
pub use receipt::Receipts;
pub use receive_rate::{CapacityEstimate, ReceiveRateEstimator};
pub use rtt::RttEstimator;
