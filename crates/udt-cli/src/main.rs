//! `udt`: the command-line front end.

mod demo;
mod perf;
mod relay;
mod sim;
mod transfer;

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
    /// Sends a generated file across an emulated long, fast path on this machine and reports
    /// what it achieved (no setup needed).
    Demo(demo::DemoArgs),
    /// Runs a simulated network scenario and reports the papers' metrics.
    Sim(sim::SimArgs),
    /// Measures throughput between two hosts, memory to memory, verifying every byte.
    Perf(perf::PerfArgs),
    /// Relays UDP between a client and a server through an emulated WAN path (rate, queue,
    /// delay, loss, reordering, duplication, jitter).
    Relay(Box<relay::RelayArgs>),
    /// Sends files and directory trees to a `udt recv`, verified (BLAKE3) and resumable.
    Send(transfer::SendArgs),
    /// Receives files from `udt send` into a directory.
    Recv(transfer::RecvArgs),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Demo(args) => demo::run(args),
        Command::Sim(args) => sim::run(args),
        Command::Perf(args) => perf::run(args),
        Command::Send(args) => transfer::send::run(args),
        Command::Recv(args) => transfer::recv::run(args),
        Command::Relay(args) => relay::run(*args),
    }
}
