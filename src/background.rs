//! Background tasks of the service (the webhook sender, and later the scheduler's jobs) are spawned
//! through [`Background`], so a shutdown can tell them to stop, wait for them within a bound, and
//! only then close the database.

use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;

pub struct Background {
    stop: watch::Sender<bool>,
    tasks: Mutex<Vec<(&'static str, JoinHandle<()>)>>,
}

impl Default for Background {
    fn default() -> Self {
        Self::new()
    }
}

impl Background {
    pub fn new() -> Self {
        Self { stop: watch::channel(false).0, tasks: Mutex::new(Vec::new()) }
    }

    fn tasks(&self) -> std::sync::MutexGuard<'_, Vec<(&'static str, JoinHandle<()>)>> {
        self.tasks.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `task` until it ends by itself or [`Background::stop`] gives up on it. A task should watch
    /// [`Background::stopped`] and return soon after it completes.
    pub fn spawn(&self, name: &'static str, task: impl Future<Output = ()> + Send + 'static) {
        let handle = tokio::spawn(task);
        let mut tasks = self.tasks();
        tasks.retain(|(_, h)| !h.is_finished());
        tasks.push((name, handle));
    }

    /// True once shutdown has begun.
    pub fn is_stopping(&self) -> bool {
        *self.stop.borrow()
    }

    /// Completes when shutdown begins (at once if it has).
    pub fn stopped(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut rx = self.stop.subscribe();
        async move {
            let _ = rx.wait_for(|stopping| *stopping).await;
        }
    }

    /// A receiver that turns true when shutdown begins.
    pub fn subscribe(&self) -> watch::Receiver<bool> {
        self.stop.subscribe()
    }

    /// Tells every task to stop (long-lived streams end too).
    pub fn begin_stop(&self) {
        self.stop.send_replace(true);
    }

    /// Tells every task to stop and waits for them, at most `bound`; the ones still running then are
    /// aborted. Returns the names of the aborted tasks.
    pub async fn stop(&self, bound: Duration) -> Vec<&'static str> {
        self.begin_stop();
        let tasks: Vec<_> = std::mem::take(&mut *self.tasks());
        let deadline = tokio::time::Instant::now() + bound;
        let mut aborted = Vec::new();
        for (name, mut handle) in tasks {
            if tokio::time::timeout_at(deadline, &mut handle).await.is_err() {
                handle.abort();
                aborted.push(name);
            }
        }
        aborted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn stop_waits_for_cooperative_tasks_and_aborts_the_rest() {
        let bg = Background::new();
        let stopped = bg.stopped();
        let (done_tx, done_rx) = tokio::sync::oneshot::channel();
        bg.spawn("polite", async move {
            stopped.await;
            tokio::time::sleep(Duration::from_millis(50)).await;
            let _ = done_tx.send(());
        });
        bg.spawn("stubborn", std::future::pending());
        assert!(!bg.is_stopping());
        let aborted = bg.stop(Duration::from_millis(500)).await;
        assert!(bg.is_stopping());
        assert_eq!(aborted, ["stubborn"]);
        assert!(done_rx.await.is_ok(), "the polite task finished its work");
    }
}
