//! How `kro apply` and `kro delete` show progress on standard error: on a terminal, a live
//! line per resource (a spinner while it waits, saying what for; a tick once ready or
//! skipped) with events printed above them; otherwise one plain line per event, for logs and
//! pipelines.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use kro_engine::direct::Progress;

/// Shows progress events.
pub struct Display {
    live: Option<Live>,
    /// Appended to every plain line (`(server dry run)`).
    suffix: &'static str,
}

/// The live display of a terminal.
struct Live {
    bars: MultiProgress,
    nodes: Mutex<HashMap<String, ProgressBar>>,
    waiting: ProgressStyle,
    done: ProgressStyle,
}

impl Display {
    /// A live display when standard error is a terminal, plain lines otherwise; `suffix`
    /// marks every line.
    pub fn new(suffix: &'static str) -> Display {
        let live = std::io::stderr().is_terminal().then(|| Live {
            bars: MultiProgress::with_draw_target(ProgressDrawTarget::stderr()),
            nodes: Mutex::default(),
            waiting: ProgressStyle::with_template("{spinner:.cyan} {prefix:.bold} {wide_msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            done: ProgressStyle::with_template("{prefix:.bold} {wide_msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        });
        Display { live, suffix }
    }

    /// Shows one event.
    pub fn show(&self, progress: &Progress) {
        let Some(live) = &self.live else {
            eprintln!("{progress}{}", self.suffix);
            return;
        };
        let node_line = match progress {
            Progress::Waiting {
                level,
                node,
                reason,
            } => Some((*level, node, format!("waiting: {reason}"), false)),
            Progress::Ready { level, node } => Some((*level, node, "✔ ready".to_owned(), true)),
            Progress::Skipped {
                level,
                node,
                reason,
            } => Some((*level, node, format!("– skipped: {reason}"), true)),
            _ => None,
        };
        match node_line {
            Some((level, node, message, finished)) => {
                let mut nodes = live.nodes.lock().unwrap_or_else(PoisonError::into_inner);
                let bar = nodes.entry(node.clone()).or_insert_with(|| {
                    let bar = live.bars.add(ProgressBar::new_spinner());
                    bar.set_prefix(format!("level {level} {node}"));
                    bar
                });
                if finished {
                    bar.set_style(live.done.clone());
                    bar.disable_steady_tick();
                } else {
                    bar.set_style(live.waiting.clone());
                    bar.enable_steady_tick(Duration::from_millis(120));
                }
                bar.set_message(format!("{message}{}", self.suffix));
            }
            None => {
                let _ = live.bars.println(format!("{progress}{}", self.suffix));
            }
        }
    }

    /// Leaves the lines as they are (call before printing anything else).
    pub fn finish(&self) {
        if let Some(live) = &self.live {
            for bar in live
                .nodes
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .values()
            {
                bar.disable_steady_tick();
                bar.abandon();
            }
        }
    }
}
