//! `udt`: the command-line front end.

mod perf;
mod relay;
mod sim;

use clap::{Parser, Subcommand};

/// UDT — UDP-based Data Transfer for high bandwidth-delay paths.
#[derive(Parser, Debug)]
#[command(name = "udt", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Runs a simulated network scenario and reports the papers' metrics.
    Sim(sim::SimArgs),
    /// Measures throughput between two hosts, memory to memory, verifying every byte.
    Perf(perf::PerfArgs),
    /// Relays UDP between a client and a server through an emulated WAN path (rate, queue,
    /// delay, loss, reordering, duplication, jitter).
    Relay(Box<relay::RelayArgs>),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Sim(args) => sim::run(args),
        Command::Perf(args) => perf::run(args),
        Command::Relay(args) => relay::run(*args),
    }
}
