//! Group commit: one writer thread runs every write. Writes that queue up while it works form a batch:
//! each runs in its own transaction committed without fsync (so a failing write aborts alone and never
//! blocks its neighbours), then one durable commit flushes the whole batch, and only then is any write
//! of the batch acknowledged. A lone write commits durably at once. So durable writes scale with
//! concurrency, and no acknowledged write is lost on a crash.

use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, channel};

use redb::{Database, Durability};

use super::StoreError;

/// Most writes sharing one fsync.
const MAX_BATCH: usize = 256;

/// What a write leaves to do once its batch is (or is not) durable.
pub type Finish = Box<dyn FnOnce(Result<(), Arc<String>>) + Send>;
/// A write: runs its transaction with the given durability and returns how to acknowledge it.
pub type Job = Box<dyn FnOnce(&Database, Durability) -> Finish + Send>;

/// The writer thread and its queue. Dropping the last handle closes the queue and waits for the thread,
/// so the database file is released when the store is gone (a restart or `opsdeck restore` can open it).
pub struct Writer {
    sender: Option<Sender<Job>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Writer {
    pub fn start(db: Arc<Database>) -> Result<Self, StoreError> {
        let (sender, receiver) = channel::<Job>();
        let thread = std::thread::Builder::new()
            .name("opsdeck-writer".into())
            .spawn(move || run(&db, &receiver))
            .map_err(|e| StoreError::Join(format!("cannot start the writer thread: {e}")))?;
        Ok(Self { sender: Some(sender), thread: Some(thread) })
    }

    pub fn send(&self, job: Job) -> Result<(), StoreError> {
        let sender = self.sender.as_ref().ok_or_else(|| StoreError::Join("the writer has stopped".into()))?;
        sender.send(job).map_err(|_| StoreError::Join("the writer thread has stopped".into()))
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.sender.take();
        if let Some(thread) = self.thread.take()
            && thread.thread().id() != std::thread::current().id()
        {
            let _ = thread.join();
        }
    }
}

fn run(db: &Database, jobs: &Receiver<Job>) {
    // Ends when every Store handle (and so every sender) is gone, releasing the database.
    while let Ok(first) = jobs.recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match jobs.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        if batch.len() == 1 {
            if let Some(finish) = guarded(batch.remove(0), db, Durability::Immediate) {
                finish(Ok(()));
            }
            continue;
        }
        let finishes: Vec<Finish> = batch.into_iter().filter_map(|job| guarded(job, db, Durability::None)).collect();
        let synced = flush(db).map_err(|e| Arc::new(e.to_string()));
        if let Err(e) = &synced {
            tracing::error!(error = %e, "group commit: the durable flush failed");
        }
        for finish in finishes {
            finish(synced.clone());
        }
    }
}

/// Runs a job; a panic in it is logged and only that write fails (its caller sees the reply dropped),
/// while the writer thread goes on.
fn guarded(job: Job, db: &Database, durability: Durability) -> Option<Finish> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(db, durability))) {
        Ok(finish) => Some(finish),
        Err(_) => {
            tracing::error!("a write panicked; it was rolled back");
            None
        }
    }
}

/// An empty durable commit: persists every earlier non-durable commit with one fsync.
fn flush(db: &Database) -> Result<(), StoreError> {
    let mut txn = db.begin_write()?;
    txn.set_durability(Durability::Immediate).map_err(|e| StoreError::Db(e.into()))?;
    txn.commit()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::store::{Store, StoreError, schema::COUNTERS};
    use redb::ReadableDatabase;

    fn counter(store: &Store, name: &str) -> Option<u64> {
        let tx = store.database().begin_read().unwrap();
        tx.open_table(COUNTERS).unwrap().get(name).unwrap().map(|v| v.value())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_writes_all_land_and_a_failing_one_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("t.db")).unwrap();
        let mut handles = Vec::new();
        for i in 0..200u64 {
            let store = store.clone();
            handles.push(tokio::spawn(async move {
                store
                    .write(move |tx| {
                        tx.open_table(COUNTERS)?.insert(format!("k{i}").as_str(), i)?;
                        if i % 10 == 3 {
                            return Err(StoreError::Codec(format!("write {i} refuses")));
                        }
                        Ok::<_, StoreError>(i)
                    })
                    .await
            }));
        }
        for (i, h) in handles.into_iter().enumerate() {
            let result = h.await.unwrap();
            assert_eq!(result.is_err(), i % 10 == 3, "write {i}");
        }
        for i in 0..200u64 {
            let expected = (i % 10 != 3).then_some(i);
            assert_eq!(counter(&store, &format!("k{i}")), expected, "k{i}");
        }
    }

    #[tokio::test]
    async fn a_panicking_write_fails_alone() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("t.db")).unwrap();
        let boom = store.write(|_tx| -> Result<(), StoreError> { panic!("boom") }).await;
        assert!(boom.is_err());
        store.write(|tx| Ok::<_, StoreError>(tx.open_table(COUNTERS)?.insert("after", 1).map(|_| ())?)).await.unwrap();
        assert_eq!(counter(&store, "after"), Some(1));
    }

    #[tokio::test]
    async fn acknowledged_writes_survive_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        {
            let store = Store::open(&path).unwrap();
            let writes = (0..50u64).map(|i| {
                let store = store.clone();
                async move {
                    store
                        .write(move |tx| {
                            Ok::<_, StoreError>(
                                tx.open_table(COUNTERS)?.insert(format!("d{i}").as_str(), i).map(|_| ())?,
                            )
                        })
                        .await
                }
            });
            for r in futures_util::future::join_all(writes).await {
                r.unwrap();
            }
        }
        // The writer thread releases the file once every handle is gone.
        let mut reopened = None;
        for _ in 0..100 {
            match Store::open(&path) {
                Ok(s) => {
                    reopened = Some(s);
                    break;
                }
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(20)),
            }
        }
        let store = reopened.expect("database reopens");
        for i in 0..50u64 {
            assert_eq!(counter(&store, &format!("d{i}")), Some(i));
        }
    }
}
