//! `udt`: the command-line front end.

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
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Sim(args) => sim::run(args),
    }
}
