//! A spinner on stderr for waits a person would otherwise stare at (a daemon starting, a slow
//! request), drawn only when stderr is a terminal and only once the wait has lasted a moment.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Waits shorter than this show nothing: a warm start answers well inside it.
const SHOW_AFTER: Duration = Duration::from_millis(250);

/// Shown from [`SHOW_AFTER`] on until dropped.
pub(crate) struct Spinner {
    /// `None` before it shows; taken (and the bar cleared) when the wait ends.
    state: Arc<Mutex<State>>,
}

enum State {
    Waiting,
    Shown(ProgressBar),
    Done,
}

impl Spinner {
    pub(crate) fn start(message: impl Into<String>) -> Spinner {
        let state = Arc::new(Mutex::new(State::Waiting));
        if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
            let message = message.into();
            let shared = state.clone();
            std::thread::spawn(move || {
                std::thread::sleep(SHOW_AFTER);
                let mut state = shared.lock().unwrap_or_else(|e| e.into_inner());
                if matches!(*state, State::Waiting) {
                    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
                    bar.set_style(
                        ProgressStyle::with_template("{spinner} {msg} {elapsed}")
                            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                    );
                    bar.set_message(message);
                    bar.enable_steady_tick(Duration::from_millis(100));
                    *state = State::Shown(bar);
                }
            });
        }
        Spinner { state }
    }

    /// Ends the wait (as dropping it does).
    pub(crate) fn finish(self) {}
}

impl Drop for Spinner {
    fn drop(&mut self) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if let State::Shown(bar) = std::mem::replace(&mut *state, State::Done) {
            bar.finish_and_clear();
        }
    }
}
