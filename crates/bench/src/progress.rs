//! A progress bar on a terminal, nothing otherwise (CI logs, pipes).

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

pub fn bar(len: u64, message: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len).with_message(message.to_string());
    bar.set_style(
        ProgressStyle::with_template("{msg:30} [{bar:40}] {elapsed}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    bar
}
