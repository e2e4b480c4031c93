//! Token usage records and their rollups. Every insert (and prune) updates, in the caller's write
//! transaction: the time-ordered record table, the hourly rollup (hour × model × agent × session), the
//! all-time rollup (agent × session × model) and the per-session indexes. Aggregations read rollups, not
//! records, so `stats` over a million records reads a few thousand rows.

use std::collections::BTreeMap;

use redb::{Key, ReadTransaction, ReadableTable, ReadableTableMetadata, Table};
use serde::{Deserialize, Serialize};

use super::{
    AgentCosts, Breakdown, DEFAULT_OPERATION, Group, HOUR_MS, NewUsage, Sums, UsageRecord, UsageSession, agent_of,
    hour_of, nanos_to_usd, now_ms,
};
use crate::store::schema::{
    TOKEN_ROLLUP_HOURLY, TOKEN_ROLLUP_TOTAL, TOKEN_SESSIONS_BY_LAST, TOKEN_USAGE, TOKEN_USAGE_BY_SESSION,
};
use crate::store::{StoreError, Tx, decode, encode, next_id};

/// (records, input tokens, output tokens, cost nano-USD), as the rollup tables store it.
type Rollup = (u64, u64, u64, u128);

/// A record as stored; its key (timestamp, sequence) and the agent are not repeated in the value.
#[derive(Debug, Serialize, Deserialize)]
struct Stored {
    model: String,
    session_id: String,
    input: u64,
    output: u64,
    cost_nanos: u128,
    operation: String,
    #[serde(default)]
    duration_ms: Option<f64>,
}

impl Stored {
    fn sums(&self) -> Sums {
        Sums::one(self.input, self.output, self.cost_nanos)
    }

    fn into_record(self, ts: u64, seq: u64) -> UsageRecord {
        UsageRecord {
            id: format!("{ts}-{seq}"),
            agent_name: agent_of(&self.session_id).to_string(),
            model: self.model,
            session_id: self.session_id,
            timestamp: ts,
            input_tokens: self.input,
            output_tokens: self.output,
            total_tokens: self.input.saturating_add(self.output),
            cost: nanos_to_usd(self.cost_nanos),
            operation: self.operation,
            duration: self.duration_ms,
        }
    }
}

fn sums_of(v: Rollup) -> Sums {
    Sums { count: v.0, input: v.1, output: v.2, cost_nanos: v.3 }
}

fn rollup_of(s: &Sums) -> Rollup {
    (s.count, s.input, s.output, s.cost_nanos)
}

/// Adds `delta` to a rollup row, or subtracts it (removing the row once it counts no record).
fn apply<K: Key + 'static>(
    table: &mut Table<K, Rollup>,
    key: &K::SelfType<'_>,
    delta: &Sums,
    add: bool,
) -> Result<(), StoreError> {
    let mut sums = table.get(key)?.map(|v| sums_of(v.value())).unwrap_or_default();
    if add {
        sums.add(delta);
    } else {
        sums.sub(delta);
    }
    if sums.count == 0 {
        table.remove(key)?;
    } else {
        table.insert(key, rollup_of(&sums))?;
    }
    Ok(())
}

/// Stores a usage record (costed at `new.rate`) with its rollups and session indexes.
pub fn record_usage(tx: &mut Tx, new: NewUsage) -> Result<UsageRecord, StoreError> {
    let ts = new.timestamp_ms.unwrap_or_else(now_ms);
    let seq = next_id(tx, "token_usage")?;
    let stored = Stored {
        cost_nanos: new.rate.cost_nanos(new.input_tokens.saturating_add(new.output_tokens)),
        model: new.model,
        session_id: new.session_id,
        input: new.input_tokens,
        output: new.output_tokens,
        operation: new.operation.unwrap_or_else(|| DEFAULT_OPERATION.to_string()),
        duration_ms: new.duration_ms,
    };
    tx.open_table(TOKEN_USAGE)?.insert((ts, seq), encode(&stored)?.as_slice())?;
    let (model, session) = (stored.model.as_str(), stored.session_id.as_str());
    let agent = agent_of(session);
    let sums = stored.sums();
    apply(&mut tx.open_table(TOKEN_ROLLUP_HOURLY)?, &(hour_of(ts), model, agent, session), &sums, true)?;
    apply(&mut tx.open_table(TOKEN_ROLLUP_TOTAL)?, &(agent, session, model), &sums, true)?;

    let mut by_session = tx.open_table(TOKEN_USAGE_BY_SESSION)?;
    let previous_last = match by_session.range((session, 0, 0)..=(session, u64::MAX, u64::MAX))?.next_back() {
        Some(row) => Some(row?.0.value().1),
        None => None,
    };
    by_session.insert((session, ts, seq), ())?;
    // Sequences grow, so a record at the same or a later time is the session's latest one.
    if previous_last.is_none_or(|last| ts >= last) {
        let mut by_last = tx.open_table(TOKEN_SESSIONS_BY_LAST)?;
        if let Some(last) = previous_last {
            by_last.remove((last, session))?;
        }
        by_last.insert((ts, session), ())?;
    }
    Ok(stored.into_record(ts, seq))
}

/// Deletes every record older than `cutoff_ms` and takes it out of the rollups and session indexes, in
/// the caller's transaction (for the retention job). Returns the number of records deleted.
pub fn prune_older_than(tx: &mut Tx, cutoff_ms: u64) -> Result<u64, StoreError> {
    let mut hourly: BTreeMap<(u64, String, String, String), Sums> = BTreeMap::new();
    let mut totals: BTreeMap<(String, String, String), Sums> = BTreeMap::new();
    // Session → time of its latest pruned record.
    let mut sessions: BTreeMap<String, u64> = BTreeMap::new();
    let mut records = tx.open_table(TOKEN_USAGE)?;
    let mut deleted = 0u64;
    for row in records.range(..(cutoff_ms, 0))? {
        let (key, value) = row?;
        let (ts, _) = key.value();
        let s: Stored = decode(value.value())?;
        let agent = agent_of(&s.session_id).to_string();
        let sums = s.sums();
        hourly.entry((hour_of(ts), s.model.clone(), agent.clone(), s.session_id.clone())).or_default().add(&sums);
        totals.entry((agent, s.session_id.clone(), s.model)).or_default().add(&sums);
        let last = sessions.entry(s.session_id).or_default();
        *last = (*last).max(ts);
        deleted += 1;
    }
    if deleted == 0 {
        return Ok(0);
    }
    records.retain_in(..(cutoff_ms, 0), |_, _| false)?;
    drop(records);

    let mut table = tx.open_table(TOKEN_ROLLUP_HOURLY)?;
    for ((hour, model, agent, session), sums) in &hourly {
        apply(&mut table, &(*hour, model.as_str(), agent.as_str(), session.as_str()), sums, false)?;
    }
    let mut table = tx.open_table(TOKEN_ROLLUP_TOTAL)?;
    for ((agent, session, model), sums) in &totals {
        apply(&mut table, &(agent.as_str(), session.as_str(), model.as_str()), sums, false)?;
    }
    let mut by_session = tx.open_table(TOKEN_USAGE_BY_SESSION)?;
    let mut by_last = tx.open_table(TOKEN_SESSIONS_BY_LAST)?;
    for (session, last_pruned) in &sessions {
        let s = session.as_str();
        by_session.retain_in((s, 0, 0)..(s, cutoff_ms, 0), |_, _| false)?;
        // Records left are newer than every pruned one, so the latest record only changes when none is left.
        if by_session.range((s, 0, 0)..=(s, u64::MAX, u64::MAX))?.next().is_none() {
            by_last.remove((*last_pruned, s))?;
        }
    }
    Ok(deleted)
}

/// Calls `f` with groups that together hold exactly the records at or after `cutoff` (all records when
/// `None`).
///
/// Hour buckets are coarse, so a window that starts inside an hour is read in two parts: the rollups of
/// the whole hours from the first hour boundary at or after `cutoff` on, plus the raw records of the
/// partial first hour `[cutoff, boundary)`. That keeps results exact while reading at most one hour of
/// records. Without a cutoff and without `hourly`, the all-time rollup is read (no hour in the groups).
pub fn fold(
    tx: &ReadTransaction,
    cutoff: Option<u64>,
    hourly: bool,
    mut f: impl FnMut(&Group<'_>),
) -> Result<(), StoreError> {
    if cutoff.is_none() && !hourly {
        for row in tx.open_table(TOKEN_ROLLUP_TOTAL)?.iter()? {
            let (key, value) = row?;
            let (agent, session, model) = key.value();
            f(&Group { hour: None, model, agent, session, sums: sums_of(value.value()) });
        }
        return Ok(());
    }
    let boundary = cutoff.map_or(0, |c| c.div_ceil(HOUR_MS).saturating_mul(HOUR_MS));
    for row in tx.open_table(TOKEN_ROLLUP_HOURLY)?.range((boundary, "", "", "")..)? {
        let (key, value) = row?;
        let (hour, model, agent, session) = key.value();
        f(&Group { hour: Some(hour), model, agent, session, sums: sums_of(value.value()) });
    }
    if let Some(cutoff) = cutoff.filter(|c| *c < boundary) {
        for row in tx.open_table(TOKEN_USAGE)?.range((cutoff, 0)..(boundary, 0))? {
            let (key, value) = row?;
            let s: Stored = decode(value.value())?;
            let ts = key.value().0;
            let agent = agent_of(&s.session_id);
            f(&Group { hour: Some(hour_of(ts)), model: &s.model, agent, session: &s.session_id, sums: s.sums() });
        }
    }
    Ok(())
}

/// Totals by model, session and agent of the records at or after `cutoff`.
pub fn breakdown(tx: &ReadTransaction, cutoff: Option<u64>) -> Result<Breakdown, StoreError> {
    let mut b = Breakdown::default();
    fold(tx, cutoff, false, |g| b.add(g))?;
    Ok(b)
}

/// Per-agent totals with a daily timeline of the records at or after `cutoff`.
pub fn agent_costs(tx: &ReadTransaction, cutoff: Option<u64>) -> Result<AgentCosts, StoreError> {
    let mut costs = AgentCosts::default();
    fold(tx, cutoff, true, |g| costs.add(g))?;
    Ok(costs)
}

/// Sums per hour for the `hours` whole hours starting at `from` (an hour boundary), oldest first.
pub fn hourly_sums(tx: &ReadTransaction, from: u64, hours: usize) -> Result<Vec<Sums>, StoreError> {
    let mut out = vec![Sums::default(); hours];
    let from = hour_of(from);
    fold(tx, Some(from), true, |g| {
        let index = g.hour.map(|h| ((h - from) / HOUR_MS) as usize);
        if let Some(slot) = index.and_then(|i| out.get_mut(i)) {
            slot.add(&g.sums);
        }
    })?;
    Ok(out)
}

/// Number of records at or after `cutoff`.
pub fn count(tx: &ReadTransaction, cutoff: Option<u64>) -> Result<u64, StoreError> {
    match cutoff {
        None => Ok(tx.open_table(TOKEN_USAGE)?.len()?),
        Some(_) => {
            let mut n = 0;
            fold(tx, cutoff, true, |g| n += g.sums.count)?;
            Ok(n)
        }
    }
}

/// Records at or after `cutoff`, newest first, paged.
pub fn list(
    tx: &ReadTransaction,
    cutoff: Option<u64>,
    limit: usize,
    offset: usize,
) -> Result<Vec<UsageRecord>, StoreError> {
    let table = tx.open_table(TOKEN_USAGE)?;
    let mut out = Vec::with_capacity(limit.min(128));
    for row in table.range((cutoff.unwrap_or(0), 0)..)?.rev().skip(offset).take(limit) {
        let (key, value) = row?;
        let (ts, seq) = key.value();
        out.push(decode::<Stored>(value.value())?.into_record(ts, seq));
    }
    Ok(out)
}

/// Calls `f` with each record at or after `cutoff`, oldest first, until it returns `false`.
pub fn for_each_record(
    tx: &ReadTransaction,
    cutoff: Option<u64>,
    mut f: impl FnMut(UsageRecord) -> bool,
) -> Result<(), StoreError> {
    for row in tx.open_table(TOKEN_USAGE)?.range((cutoff.unwrap_or(0), 0)..)? {
        let (key, value) = row?;
        let (ts, seq) = key.value();
        if !f(decode::<Stored>(value.value())?.into_record(ts, seq)) {
            break;
        }
    }
    Ok(())
}

/// Sessions derived from usage records, most recently active first: agent, model of the latest record,
/// token and cost totals, first and last timestamps (ms).
pub fn sessions_from_usage(tx: &ReadTransaction, limit: usize) -> Result<Vec<UsageSession>, StoreError> {
    let by_last = tx.open_table(TOKEN_SESSIONS_BY_LAST)?;
    let by_session = tx.open_table(TOKEN_USAGE_BY_SESSION)?;
    let records = tx.open_table(TOKEN_USAGE)?;
    let totals = tx.open_table(TOKEN_ROLLUP_TOTAL)?;
    let mut out = Vec::new();
    for row in by_last.iter()?.rev().take(limit) {
        let (key, _) = row?;
        let (last, session) = key.value();
        let keys = || by_session.range((session, 0, 0)..=(session, u64::MAX, u64::MAX));
        let (Some(first), Some(latest)) = (keys()?.next(), keys()?.next_back()) else { continue };
        let first = first?.0.value().1;
        let (_, ts, seq) = latest?.0.value();
        let model = match records.get((ts, seq))? {
            Some(v) => decode::<Stored>(v.value())?.model,
            None => continue,
        };
        let agent = agent_of(session);
        let mut sums = Sums::default();
        for row in totals.range((agent, session, "")..)? {
            let (key, value) = row?;
            let (a, s, _) = key.value();
            if a != agent || s != session {
                break;
            }
            sums.add(&sums_of(value.value()));
        }
        out.push(UsageSession {
            session_id: session.to_string(),
            agent: agent.to_string(),
            model,
            input_tokens: sums.input,
            output_tokens: sums.output,
            total_tokens: sums.total(),
            cost: sums.cost(),
            request_count: sums.count,
            first_timestamp: first,
            last_timestamp: last,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;
    use crate::tokens::{AgentCosts, Breakdown, Rate};
    use proptest::prelude::*;
    use redb::ReadableDatabase;

    const MODELS: &[&str] = &["claude-sonnet-4", "claude-opus-4-5", "ollama/llama3", "groq/llama-3.1-8b-instant"];
    const SESSIONS: &[&str] = &["alice:chat", "alice:cron", "bob:chat", "bob", "carol:a:b", ":orphan"];
    const RATES: &[f64] = &[3.0, 15.0, 0.0, 0.05, 0.59, 1.0];
    /// An hour boundary plus an odd offset, so windows start inside hours.
    const T0: u64 = 1_700_000_000_000 - 1_700_000_000_000 % HOUR_MS + 1_234_567;
    const SPAN: u64 = 3 * DAY;
    const DAY: u64 = 24 * HOUR_MS;

    fn open() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("t.db")).unwrap();
        (dir, store)
    }

    fn write<T>(store: &Store, f: impl FnOnce(&mut Tx) -> T) -> T {
        let txn = store.database().begin_write().unwrap();
        let mut tx = Tx { txn, events: Vec::new(), queued_deliveries: false };
        let out = f(&mut tx);
        tx.txn.commit().unwrap();
        out
    }

    fn usage(ts: u64, model: usize, session: usize, input: u64, output: u64) -> NewUsage {
        NewUsage {
            model: MODELS[model].to_string(),
            session_id: SESSIONS[session].to_string(),
            input_tokens: input,
            output_tokens: output,
            operation: None,
            duration_ms: None,
            timestamp_ms: Some(ts),
            rate: Rate::from_usd_per_1k(RATES[(model + session) % RATES.len()]),
        }
    }

    /// Every record, by a plain scan of the record table.
    fn scan(tx: &ReadTransaction) -> Vec<UsageRecord> {
        let mut all = Vec::new();
        for row in tx.open_table(TOKEN_USAGE).unwrap().iter().unwrap() {
            let (k, v) = row.unwrap();
            let (ts, seq) = k.value();
            all.push(decode::<Stored>(v.value()).unwrap().into_record(ts, seq));
        }
        all
    }

    fn group(r: &UsageRecord) -> Group<'_> {
        let cost_nanos = (r.cost * 1e9).round() as u128;
        Group {
            hour: Some(hour_of(r.timestamp)),
            model: &r.model,
            agent: &r.agent_name,
            session: &r.session_id,
            sums: Sums::one(r.input_tokens, r.output_tokens, cost_nanos),
        }
    }

    fn naive(all: &[UsageRecord], cutoff: Option<u64>) -> (Breakdown, AgentCosts) {
        let mut b = Breakdown::default();
        let mut a = AgentCosts::default();
        for r in all.iter().filter(|r| cutoff.is_none_or(|c| r.timestamp >= c)) {
            b.add(&group(r));
            a.add(&group(r));
        }
        (b, a)
    }

    fn naive_sessions(all: &[UsageRecord]) -> Vec<UsageSession> {
        let mut by: BTreeMap<&str, Vec<&UsageRecord>> = BTreeMap::new();
        for r in all {
            by.entry(&r.session_id).or_default().push(r);
        }
        let mut out: Vec<UsageSession> = by
            .into_iter()
            .map(|(s, rs)| {
                let mut sums = Sums::default();
                rs.iter().for_each(|r| sums.add(&group(r).sums));
                // `all` is in key order, so the last record of the session is the latest.
                let (first, last) = (rs[0], rs[rs.len() - 1]);
                UsageSession {
                    session_id: s.to_string(),
                    agent: agent_of(s).to_string(),
                    model: last.model.clone(),
                    input_tokens: sums.input,
                    output_tokens: sums.output,
                    total_tokens: sums.total(),
                    cost: sums.cost(),
                    request_count: sums.count,
                    first_timestamp: first.timestamp,
                    last_timestamp: last.timestamp,
                }
            })
            .collect();
        out.sort_by(|a, b| (b.last_timestamp, &b.session_id).cmp(&(a.last_timestamp, &a.session_id)));
        out
    }

    fn check_all(store: &Store, cutoffs: &[Option<u64>]) {
        let tx = store.database().begin_read().unwrap();
        let all = scan(&tx);
        for &cutoff in cutoffs {
            let (b, a) = naive(&all, cutoff);
            assert_eq!(breakdown(&tx, cutoff).unwrap(), b, "breakdown at {cutoff:?}");
            assert_eq!(agent_costs(&tx, cutoff).unwrap(), a, "agent costs at {cutoff:?}");
            assert_eq!(count(&tx, cutoff).unwrap(), b.summary.count, "count at {cutoff:?}");
            let from = hour_of(cutoff.unwrap_or(T0));
            let hours = hourly_sums(&tx, from, 30).unwrap();
            for (i, h) in hours.iter().enumerate() {
                let start = from + i as u64 * HOUR_MS;
                let mut want = Sums::default();
                all.iter().filter(|r| hour_of(r.timestamp) == start).for_each(|r| want.add(&group(r).sums));
                assert_eq!(*h, want, "hour {i} from {from}");
            }
        }
        let mut newest: Vec<UsageRecord> = all.clone();
        newest.reverse();
        assert_eq!(list(&tx, None, 7, 3).unwrap(), newest.iter().skip(3).take(7).cloned().collect::<Vec<_>>());
        assert_eq!(sessions_from_usage(&tx, 100).unwrap(), naive_sessions(&all));
        assert_eq!(sessions_from_usage(&tx, 2).unwrap(), naive_sessions(&all).into_iter().take(2).collect::<Vec<_>>());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(40))]

        #[test]
        fn rollups_equal_a_full_scan(
            records in proptest::collection::vec(
                (0..SPAN, 0..MODELS.len(), 0..SESSIONS.len(), 0u64..50_000, 0u64..50_000), 0..120),
            cutoffs in proptest::collection::vec(0..SPAN + HOUR_MS, 4),
            prune_at in 0..SPAN,
        ) {
            let (_dir, store) = open();
            write(&store, |tx| {
                for &(offset, m, s, i, o) in &records {
                    record_usage(tx, usage(T0 + offset, m, s, i, o)).unwrap();
                }
            });
            let mut windows: Vec<Option<u64>> = cutoffs.iter().map(|c| Some(T0 + c)).collect();
            windows.extend([None, Some(0), Some(hour_of(T0 + cutoffs[0])), Some(T0 + SPAN + DAY)]);
            check_all(&store, &windows);

            let before = records.len() as u64;
            let pruned = write(&store, |tx| prune_older_than(tx, T0 + prune_at).unwrap());
            let expected = records.iter().filter(|r| T0 + r.0 < T0 + prune_at).count() as u64;
            prop_assert_eq!(pruned, expected);
            check_all(&store, &windows);
            let tx = store.database().begin_read().unwrap();
            prop_assert_eq!(count(&tx, None).unwrap(), before - pruned);
        }
    }

    #[test]
    fn a_record_is_costed_and_shown() {
        let (_dir, store) = open();
        let r = write(&store, |tx| record_usage(tx, usage(T0, 0, 0, 10, 5)).unwrap());
        assert_eq!(r.id, format!("{T0}-1"));
        assert_eq!((r.agent_name.as_str(), r.total_tokens, r.cost), ("alice", 15, 0.045));
        assert_eq!(r.operation, "chat_completion");
        let tx = store.database().begin_read().unwrap();
        assert_eq!(list(&tx, None, 10, 0).unwrap(), vec![r]);
    }

    #[test]
    fn pruning_empties_the_rollups_and_session_indexes() {
        let (_dir, store) = open();
        write(&store, |tx| {
            for i in 0..50 {
                record_usage(tx, usage(T0 + i * 10 * 60_000, (i % 4) as usize, (i % 6) as usize, i, 2 * i)).unwrap();
            }
        });
        let mid = T0 + 25 * 10 * 60_000;
        assert_eq!(write(&store, |tx| prune_older_than(tx, mid).unwrap()), 25);
        assert_eq!(write(&store, |tx| prune_older_than(tx, mid).unwrap()), 0, "nothing older is left");
        check_all(&store, &[None, Some(mid), Some(mid + 1)]);
        assert_eq!(write(&store, |tx| prune_older_than(tx, u64::MAX).unwrap()), 25);
        let tx = store.database().begin_read().unwrap();
        assert_eq!(tx.open_table(TOKEN_ROLLUP_HOURLY).unwrap().len().unwrap(), 0);
        assert_eq!(tx.open_table(TOKEN_ROLLUP_TOTAL).unwrap().len().unwrap(), 0);
        assert_eq!(tx.open_table(TOKEN_USAGE_BY_SESSION).unwrap().len().unwrap(), 0);
        assert_eq!(tx.open_table(TOKEN_SESSIONS_BY_LAST).unwrap().len().unwrap(), 0);
        assert_eq!(breakdown(&tx, None).unwrap(), Breakdown::default());
    }
}
