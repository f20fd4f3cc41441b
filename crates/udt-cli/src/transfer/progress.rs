//! Progress display and the end-of-transfer summary.
//!
//! On a terminal: one overall bar (bytes, rate, ETA) with the current file's name. Otherwise a
//! plain line every [`LINE_INTERVAL`]. With `--json` nothing until the one JSON object.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;

/// Interval between plain progress lines when stdout is not a terminal.
pub const LINE_INTERVAL: Duration = Duration::from_secs(2);

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// An indicatif bar on stdout.
    Bar,
    /// Plain periodic lines on stdout.
    Lines,
    /// Nothing (JSON output).
    Quiet,
}

impl Style {
    /// The style for this process: quiet for JSON, else a bar on a terminal, else lines.
    pub fn detect(json: bool) -> Style {
        if json {
            Style::Quiet
        } else if std::io::stdout().is_terminal() {
            Style::Bar
        } else {
            Style::Lines
        }
    }
}

/// Progress of one transfer session.
pub struct Progress {
    style: Style,
    bar: Option<ProgressBar>,
    /// Bytes expected in total (0 if unknown).
    total: u64,
    /// Bytes counted so far, including bytes skipped by resume.
    done: u64,
    start: Instant,
    last_line: Instant,
    file: String,
}

impl Progress {
    /// Starts showing progress towards `total` bytes (`verb`: "sending" or "receiving").
    pub fn new(style: Style, total: u64) -> Progress {
        let bar = (style == Style::Bar).then(|| {
            let b = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stdout());
            // The template is a constant known to parse; fall back to the default if not.
            if let Ok(s) = ProgressStyle::with_template(
                "{wide_msg} {bytes}/{total_bytes} [{bar:30}] {binary_bytes_per_sec} ETA {eta}",
            ) {
                b.set_style(s.progress_chars("=> "));
            }
            b.enable_steady_tick(Duration::from_millis(200));
            b
        });
        let now = Instant::now();
        Progress {
            style,
            bar,
            total,
            done: 0,
            start: now,
            last_line: now,
            file: String::new(),
        }
    }

    /// Names the file now in progress.
    pub fn set_file(&mut self, name: &str) {
        self.file = name.to_owned();
        if let Some(b) = &self.bar {
            b.set_message(name.to_owned());
        }
    }

    /// Counts `n` more bytes.
    pub fn inc(&mut self, n: u64) {
        self.done += n;
        if let Some(b) = &self.bar {
            b.inc(n);
        } else if self.style == Style::Lines && self.last_line.elapsed() >= LINE_INTERVAL {
            self.last_line = Instant::now();
            let secs = self.start.elapsed().as_secs_f64().max(1e-9);
            let pct = if self.total > 0 {
                format!(" ({:.1} %)", self.done as f64 * 100.0 / self.total as f64)
            } else {
                String::new()
            };
            println!(
                "{:.1} s: {} of {}{pct}, {:.1} Mbit/s, {}",
                secs,
                human_bytes(self.done),
                human_bytes(self.total),
                self.done as f64 * 8.0 / secs / 1e6,
                self.file
            );
        }
    }

    /// Prints a line above the bar (or plainly).
    pub fn println(&self, line: &str) {
        match &self.bar {
            Some(b) => b.println(line),
            None if self.style == Style::Lines => println!("{line}"),
            None => eprintln!("{line}"),
        }
    }

    /// Removes the bar.
    pub fn finish(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

/// `1.50 GiB`-style size.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.2} {}", UNITS[u])
    }
}

/// The end-of-session summary, printed as text or (`--json`) as one JSON object.
#[derive(Debug, Default, Serialize)]
pub struct Summary {
    /// "send" or "recv".
    pub role: &'static str,
    /// The peer's address.
    pub peer: String,
    /// Files now complete and verified at the receiver (sent, resumed or found identical).
    pub files_ok: u64,
    /// Files that failed (refused, digest mismatch, …).
    pub files_failed: u64,
    /// Files skipped because the receiver already had them, identical.
    pub files_identical: u64,
    /// Directories created.
    pub dirs: u64,
    /// Bytes of file data that crossed the network in this session.
    pub bytes: u64,
    /// Bytes not sent again because a partial file was resumed.
    pub resumed_bytes: u64,
    /// Wall-clock time of the session, seconds.
    pub seconds: f64,
    /// `bytes` over `seconds`, Mbit/s (10^6 bits).
    pub mbps: f64,
    /// Retransmitted packets (sender's count; 0 on the receiver).
    pub retransmitted: u64,
    /// Packets the receiver found lost (its NAK count; from its side only).
    pub loss_pkts: u64,
    /// Smoothed round-trip time at the end, ms.
    pub rtt_ms: f64,
    /// One line per failed file.
    pub errors: Vec<String>,
}

impl Summary {
    /// Prints the summary on stdout.
    pub fn print(&self, json: bool) {
        if json {
            match serde_json::to_string(self) {
                Ok(s) => println!("{s}"),
                Err(e) => eprintln!("error: cannot encode the summary: {e}"),
            }
            return;
        }
        let verb = if self.role == "send" {
            "sent to"
        } else {
            "received from"
        };
        println!(
            "{verb} {}: {} file(s) ok ({} already identical), {} failed, {} dir(s); \
             {} in {:.2} s = {:.1} Mbit/s (resumed {}); {} retransmitted, {} lost pkts, \
             RTT {:.3} ms",
            self.peer,
            self.files_ok,
            self.files_identical,
            self.files_failed,
            self.dirs,
            human_bytes(self.bytes),
            self.seconds,
            self.mbps,
            human_bytes(self.resumed_bytes),
            self.retransmitted,
            self.loss_pkts,
            self.rtt_ms
        );
        for e in &self.errors {
            println!("  failed: {e}");
        }
    }

    /// Fills the timing and connection statistics.
    pub fn finish(&mut self, start: Instant, stats: Option<udt::PerfStats>) {
        self.seconds = start.elapsed().as_secs_f64();
        self.mbps = self.bytes as f64 * 8.0 / self.seconds.max(1e-9) / 1e6;
        if let Some(s) = stats {
            self.retransmitted = s.pkt_retrans_total;
            self.loss_pkts = s.pkt_rcv_loss_total;
            self.rtt_ms = s.ms_rtt;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_human() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(1536), "1.50 KiB");
        assert_eq!(human_bytes(3 << 30), "3.00 GiB");
    }
}
