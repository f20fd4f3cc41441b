//! `udt`: the command-line front end.

mod perf;
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
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Sim(args) => sim::run(args),
        Command::Perf(args) => perf::run(args),
    }
}
