//! `udt sim SCENARIO.toml [--seed N] [--json OUT.json] [--plot OUT.svg]`

use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::Args;
use udt_sim::{plot, simulate, Scenario};

/// Arguments of `udt sim`.
#[derive(Args, Debug)]
pub struct SimArgs {
    /// Scenario file (TOML).
    scenario: PathBuf,
    /// Seed of every random choice (default: the scenario's `seed`, else 1).
    #[arg(long)]
    seed: Option<u64>,
    /// Write the full report as JSON to this file ("-" for standard output).
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write a throughput-over-time plot (SVG) to this file.
    #[arg(long)]
    plot: Option<PathBuf>,
    /// Print nothing but the JSON (with --json -).
    #[arg(long)]
    quiet: bool,
}

pub fn run(args: SimArgs) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(&args.scenario)
        .with_context(|| format!("cannot read scenario {}", args.scenario.display()))?;
    let scenario = Scenario::from_toml(&text)
        .with_context(|| format!("invalid scenario {}", args.scenario.display()))?;
    let seed = args.seed.unwrap_or(scenario.seed);
    let report = simulate(&scenario, seed);
    if !args.quiet {
        eprint!("{}", report.to_text());
    }
    if let Some(path) = &args.json {
        let json = serde_json::to_string_pretty(&report)?;
        if path.as_os_str() == "-" {
            println!("{json}");
        } else {
            std::fs::write(path, json)
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
    }
    if let Some(path) = &args.plot {
        let title = format!("{} (seed {seed})", args.scenario.display());
        let svg = plot::throughput_svg(
            &report.flows,
            scenario.sample_interval_s,
            scenario.link.rate_mbps,
            &title,
        );
        std::fs::write(path, svg).with_context(|| format!("cannot write {}", path.display()))?;
    }
    if !report.integrity_ok {
        bail!("data integrity check failed: see the integrity section of the report");
    }
    Ok(())
}
