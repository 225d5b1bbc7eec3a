//! Progress bars on stderr, drawn only when stderr is a terminal, so that
//! pipes, logs and tests see nothing of them.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

fn visible() -> bool {
    std::io::stderr().is_terminal()
}

/// A bar over `len` items (or bytes, with `bytes`).
pub fn bar(len: u64, message: &str, bytes: bool) -> ProgressBar {
    if !visible() {
        return ProgressBar::hidden();
    }
    let template = if bytes {
        "{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}"
    } else {
        "{msg} [{bar:30}] {human_pos}/{human_len} {elapsed} eta {eta}"
    };
    let style =
        ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar()).progress_chars("=> ");
    let pb = ProgressBar::new(len).with_style(style);
    pb.set_message(message.to_string());
    pb
}

/// A spinner for work of unknown size; counts items (or bytes).
pub fn spinner(message: &str, bytes: bool) -> ProgressBar {
    if !visible() {
        return ProgressBar::hidden();
    }
    let template = if bytes {
        "{spinner} {msg} {bytes} {bytes_per_sec} {elapsed}"
    } else {
        "{spinner} {msg} {human_pos} {elapsed}"
    };
    let style = ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_spinner());
    let pb = ProgressBar::new_spinner().with_style(style);
    pb.set_message(message.to_string());
    pb.enable_steady_tick(Duration::from_millis(120));
    pb
}

/// A spinner with only a message and the time, for work that reports no
/// progress of its own (check, compact).
pub fn busy(message: &str) -> ProgressBar {
    if !visible() {
        return ProgressBar::hidden();
    }
    let style =
        ProgressStyle::with_template("{spinner} {msg} {elapsed}").unwrap_or_else(|_| ProgressStyle::default_spinner());
    let pb = ProgressBar::new_spinner().with_style(style);
    pb.set_message(message.to_string());
    pb.enable_steady_tick(Duration::from_millis(120));
    pb
}
