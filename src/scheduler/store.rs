//! Persisted job state: job id → {last_run, next_run, running, last_result} in `SCHEDULER_JOBS`.

use std::collections::BTreeMap;

use redb::{ReadTransaction, ReadableTable, WriteTransaction};
use salvo_oapi::ToSchema;
use serde::{Deserialize, Serialize};

use crate::store::schema::SCHEDULER_JOBS;
use crate::store::{StoreError, decode, encode};

/// The outcome of a job's last run.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq)]
#[salvo(schema(name = "SchedulerResult"))]
pub struct LastResult {
    pub ok: bool,
    pub message: String,
    /// When the run ended (ms).
    pub timestamp: i64,
}

/// A job's stored state.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct JobState {
    /// Start of the last run (ms).
    #[serde(default)]
    pub last_run: Option<i64>,
    /// The next run planned when the state was last written (ms).
    #[serde(default)]
    pub next_run: Option<i64>,
    /// A run was in progress (a stop in the middle leaves it set until the next start).
    #[serde(default)]
    pub running: bool,
    #[serde(default)]
    pub last_result: Option<LastResult>,
}

/// Message of a run cut short by a stop of the service.
pub const INTERRUPTED: &str = "Interrupted: the service stopped during this run";

pub fn get(tx: &ReadTransaction, id: &str) -> Result<Option<JobState>, StoreError> {
    match tx.open_table(SCHEDULER_JOBS)?.get(id)? {
        Some(v) => Ok(Some(decode(v.value())?)),
        None => Ok(None),
    }
}

fn get_w(tx: &WriteTransaction, id: &str) -> Result<Option<JobState>, StoreError> {
    match tx.open_table(SCHEDULER_JOBS)?.get(id)? {
        Some(v) => Ok(Some(decode(v.value())?)),
        None => Ok(None),
    }
}

pub fn put(tx: &WriteTransaction, id: &str, state: &JobState) -> Result<(), StoreError> {
    let bytes = encode(state)?;
    tx.open_table(SCHEDULER_JOBS)?.insert(id, bytes.as_slice())?;
    Ok(())
}

/// Every stored job state by job id.
pub fn all(tx: &ReadTransaction) -> Result<BTreeMap<String, JobState>, StoreError> {
    let table = tx.open_table(SCHEDULER_JOBS)?;
    let mut out = BTreeMap::new();
    for row in table.iter()? {
        let (k, v) = row?;
        out.insert(k.value().to_string(), decode(v.value())?);
    }
    Ok(out)
}

/// A run of `id` started at `at_ms`.
pub fn mark_started(tx: &WriteTransaction, id: &str, at_ms: i64) -> Result<(), StoreError> {
    let mut state = get_w(tx, id)?.unwrap_or_default();
    state.last_run = Some(at_ms);
    state.running = true;
    put(tx, id, &state)
}

/// A run of `id` ended with `result`; `next_run` is the next planned time.
pub fn mark_finished(
    tx: &WriteTransaction,
    id: &str,
    result: LastResult,
    next_run: Option<i64>,
) -> Result<(), StoreError> {
    let mut state = get_w(tx, id)?.unwrap_or_default();
    state.running = false;
    state.last_result = Some(result);
    state.next_run = next_run;
    put(tx, id, &state)
}

/// At start: a job still marked running was cut short by the previous stop (its result says so); every
/// given job gets its planned next run.
pub fn recover(tx: &WriteTransaction, plans: &[(String, Option<i64>)], now_ms: i64) -> Result<(), StoreError> {
    for (id, next_run) in plans {
        let Some(mut state) = get_w(tx, id)? else { continue };
        if state.running {
            state.running = false;
            state.last_result = Some(LastResult { ok: false, message: INTERRUPTED.into(), timestamp: now_ms });
        }
        state.next_run = *next_run;
        put(tx, id, &state)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use redb::ReadableDatabase;

    use super::*;
    use crate::store::Store;

    #[test]
    fn runs_are_recorded_and_interrupted_runs_recovered() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("svc.db")).unwrap();
        let db = store.database();
        let tx = db.begin_write().unwrap();
        mark_started(&tx, "a", 1_000).unwrap();
        let ok = LastResult { ok: true, message: "done".into(), timestamp: 2_000 };
        mark_finished(&tx, "a", ok.clone(), Some(60_000)).unwrap();
        mark_started(&tx, "b", 3_000).unwrap();
        tx.commit().unwrap();

        let read = db.begin_read().unwrap();
        let a = get(&read, "a").unwrap().unwrap();
        assert_eq!(
            a,
            JobState { last_run: Some(1_000), next_run: Some(60_000), running: false, last_result: Some(ok) }
        );
        assert!(get(&read, "b").unwrap().unwrap().running);
        assert_eq!(get(&read, "c").unwrap(), None);
        drop(read);

        let tx = db.begin_write().unwrap();
        let plans = [("a".to_string(), Some(120_000)), ("b".to_string(), Some(130_000)), ("c".to_string(), None)];
        recover(&tx, &plans, 9_000).unwrap();
        tx.commit().unwrap();
        let all = all(&db.begin_read().unwrap()).unwrap();
        assert_eq!(all.len(), 2, "jobs that never ran get no row");
        assert_eq!(all["a"].next_run, Some(120_000));
        assert!(all["a"].last_result.as_ref().unwrap().ok, "a finished run stays as it was");
        let b = &all["b"];
        assert!(!b.running);
        assert_eq!(b.last_run, Some(3_000));
        assert_eq!(b.last_result, Some(LastResult { ok: false, message: INTERRUPTED.into(), timestamp: 9_000 }));
    }
}
