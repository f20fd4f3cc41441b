//! `udt sim SCENARIO.toml [--seed N] [--json OUT.json] [--plot OUT.svg]`, and
//! `udt sim --sweep SWEEP.toml [--seed N | --seeds LIST] [--out DIR]`

use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::Args;
use udt_sim::{plot, simulate, Scenario};

/// Arguments of `udt sim`.
#[derive(Args, Debug)]
pub struct SimArgs {
    /// Scenario file (TOML), or with --sweep a sweep file.
    scenario: PathBuf,
    /// The file is a sweep: run its matrix of cells, print a table, and write the results
    /// (JSON) and heat maps (SVG) into --out.
    #[arg(long)]
    sweep: bool,
    /// Directory for the sweep's results (default: the current directory).
    #[arg(long, default_value = ".")]
    out: PathBuf,
    /// Cells simulated at once (default: the number of CPUs).
    #[arg(long)]
    jobs: Option<usize>,
    /// Seed of every random choice (default: the scenario's or sweep's `seed`, else 1).
    #[arg(long, conflicts_with = "seeds")]
    seed: Option<u64>,
    /// With --sweep: run the whole matrix once per seed (`1-5`, `1,4,9` or `1-3,7`) and
    /// report each cell's worst and mean over the seeds. One seed is one sample of a chaotic
    /// system: a tiny change moves single cells by several hundredths.
    #[arg(long, requires = "sweep", value_parser = parse_seed_list)]
    seeds: Option<SeedList>,
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
    if args.sweep {
        return run_sweep(&args);
    }
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

/// The seeds of `--seeds`, in order (one type, so that clap takes the list as one value).
#[derive(Clone, Debug)]
struct SeedList(Vec<u64>);

/// Clap's parser for `--seeds`.
fn parse_seed_list(text: &str) -> Result<SeedList, udt_sim::seeds::SeedsError> {
    udt_sim::seeds::parse_seeds(text).map(SeedList)
}

/// `udt sim --sweep FILE`: every cell, a table on standard output, JSON and heat maps. With
/// `--seeds`, every cell once per seed: the tables give each cell's worst and mean over the
/// seeds, the heat maps the worst, and the JSON all three (`results` is the worst).
fn run_sweep(args: &SimArgs) -> anyhow::Result<()> {
    use udt_sim::heatmap::{heatmap_svg, Metric};
    use udt_sim::seeds::{mean_over_seeds, worst_over_seeds};
    use udt_sim::sweep::{table, Shape, SweepSpec};
    let text = std::fs::read_to_string(&args.scenario)
        .with_context(|| format!("cannot read sweep {}", args.scenario.display()))?;
    let mut spec = SweepSpec::from_toml(&text)
        .with_context(|| format!("invalid sweep {}", args.scenario.display()))?;
    if let Some(seed) = args.seed {
        spec.seed = seed;
    }
    let seeds = args
        .seeds
        .as_ref()
        .map_or_else(|| vec![spec.seed], |l| l.0.clone());
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let quiet = args.quiet;
    let mut runs = Vec::with_capacity(seeds.len());
    for &seed in &seeds {
        spec.seed = seed;
        runs.push(spec.run(jobs, &|done, total, r| {
            if !quiet {
                let c = &r.cell;
                eprintln!(
                    "[seed {seed}: {done}/{total}] {} {} {} Mb/s {} ms queue {} loss {} flows {}: util {:.3} ({:.0} s)",
                    c.cc, c.path, c.rate_mbps, c.rtt_ms, c.queue_bdp, c.loss, c.flows, r.utilization, r.wall_s
                );
            }
        }));
    }
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    let stem = args
        .scenario
        .file_stem()
        .map_or("sweep".into(), |s| s.to_string_lossy().into_owned());
    let (results, json) = if args.seeds.is_some() {
        let worst = worst_over_seeds(&runs);
        let mean = mean_over_seeds(&runs);
        let list = seeds
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(",");
        println!("## worst of each cell over seeds {list}");
        print!("{}", table(&spec, &worst));
        println!("## mean of each cell over seeds {list}");
        print!("{}", table(&spec, &mean));
        let per_seed: Vec<_> = seeds
            .iter()
            .zip(&runs)
            .map(|(seed, r)| serde_json::json!({ "seed": seed, "results": r }))
            .collect();
        let json = serde_json::json!({
            "spec": spec, "seeds": seeds, "results": worst, "mean": mean, "per_seed": per_seed,
        });
        (worst, json)
    } else {
        let results = runs.pop().unwrap_or_default();
        print!("{}", table(&spec, &results));
        let json = serde_json::json!({ "spec": spec, "results": results });
        (results, json)
    };
    let path = args.out.join(format!("{stem}.json"));
    std::fs::write(&path, serde_json::to_string_pretty(&json)?)
        .with_context(|| format!("cannot write {}", path.display()))?;
    let mut metrics = vec![Metric::Utilization, Metric::LossRate];
    match spec.shape {
        Shape::Single => {}
        Shape::RttFairness => metrics.extend([Metric::ThroughputRatio, Metric::Jain]),
        Shape::Staggered => metrics.push(Metric::Jain),
        Shape::Friendliness => metrics.push(Metric::Friendliness),
    }
    for m in metrics {
        let path = args.out.join(format!("{stem}-{}.svg", m.name()));
        std::fs::write(&path, heatmap_svg(&spec, &results, m))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if results.iter().any(|r| !r.integrity_ok) {
        bail!("data integrity check failed in at least one cell");
    }
    Ok(())
}
