//! Every table of the database, in one place. Record tables map a per-table u64 id to a versioned
//! MessagePack value (see `codec.rs`); index tables are maintained in the same write transaction.

use redb::{ReadTransaction, TableDefinition, TableError, WriteTransaction};

/// Record table: id → encoded value.
pub type Records = TableDefinition<'static, u64, &'static [u8]>;

macro_rules! tables {
    ($($(#[$doc:meta])* $name:ident: $k:ty => $v:ty = $s:literal;)*) => {
        $( $(#[$doc])* pub const $name: TableDefinition<'static, $k, $v> = TableDefinition::new($s); )*

        /// Names of every table, as stored in the file.
        pub const ALL_TABLES: &[&str] = &[$($s),*];

        /// Creates every table so readers never meet a missing one.
        pub fn create_all(tx: &WriteTransaction) -> Result<(), TableError> {
            $( tx.open_table($name)?; )*
            Ok(())
        }

        /// Opens every table of a snapshot with its declared key and value types and reads every row;
        /// returns the number of rows. Fails on a missing table, a type mismatch or an unreadable page.
        pub fn check_all(src: &ReadTransaction) -> Result<u64, redb::Error> {
            use redb::ReadableTable;
            let mut rows = 0;
            $(
                for row in src.open_table($name)?.iter()? {
                    row?;
                    rows += 1;
                }
            )*
            Ok(rows)
        }

        /// Every row of every table as raw bytes, to compare two databases in tests.
        #[cfg(test)]
        #[allow(clippy::type_complexity)]
        pub fn dump_all(src: &ReadTransaction) -> Result<Vec<(&'static str, Vec<(Vec<u8>, Vec<u8>)>)>, redb::Error> {
            use redb::{ReadableTable, Value};
            let mut out = Vec::new();
            $(
                {
                    let mut rows = Vec::new();
                    for row in src.open_table($name)?.iter()? {
                        let (k, v) = row?;
                        let (key, value) = (k.value(), v.value());
                        let (key, value) = (<$k as Value>::as_bytes(&key), <$v as Value>::as_bytes(&value));
                        rows.push((AsRef::<[u8]>::as_ref(&key).to_vec(), AsRef::<[u8]>::as_ref(&value).to_vec()));
                    }
                    out.push(($s, rows));
                }
            )*
            Ok(out)
        }

        /// Copies every table of a read snapshot into another database's write transaction.
        pub fn copy_all(src: &ReadTransaction, dst: &WriteTransaction) -> Result<(), redb::Error> {
            use redb::ReadableTable;
            $(
                {
                    let from = src.open_table($name)?;
                    let mut to = dst.open_table($name)?;
                    for row in from.iter()? {
                        let (k, v) = row?;
                        to.insert(k.value(), v.value())?;
                    }
                }
            )*
            Ok(())
        }
    };
}

tables! {
    /// Small named values: schema version and the like.
    META: &str => &[u8] = "meta";
    /// Next id per record table.
    COUNTERS: &str => u64 = "counters";

    USERS: u64 => &[u8] = "users";
    /// Unique index: lower-cased username → user id.
    USERS_BY_NAME: &str => u64 = "users_by_name";
    /// Login sessions keyed by the SHA-256 hex of the cookie token (the token itself is never stored).
    SESSIONS: &str => &[u8] = "sessions";
    /// (user id, token hash) → (): lets a user's sessions be destroyed at once.
    SESSIONS_BY_USER: (u64, &str) => () = "sessions_by_user";

    ACCESS_REQUESTS: u64 => &[u8] = "access_requests";
    /// Unique index: lower-cased e-mail → access request id.
    ACCESS_REQUESTS_BY_EMAIL: &str => u64 = "access_requests_by_email";

    /// Audit events; ids grow with time, so id order is time order.
    AUDIT: u64 => &[u8] = "audit";
    /// (action, id) → (): audit filtered by action.
    AUDIT_BY_ACTION: (&str, u64) => () = "audit_by_action";
    /// (actor, id) → (): audit filtered by actor.
    AUDIT_BY_ACTOR: (&str, u64) => () = "audit_by_actor";

    /// Activity feed; ids grow with time.
    ACTIVITIES: u64 => &[u8] = "activities";

    // tasks
    TASKS: u64 => &[u8] = "tasks";
    /// Unique index: title → task id.
    TASKS_BY_TITLE: &str => u64 = "tasks_by_title";
    /// (status, id) → ().
    TASKS_BY_STATUS: (&str, u64) => () = "tasks_by_status";
    /// (priority, id) → ().
    TASKS_BY_PRIORITY: (&str, u64) => () = "tasks_by_priority";
    /// (assignee, status, id) → (): an agent's tasks and per-status counts without decoding records.
    TASKS_BY_ASSIGNEE: (&str, &str, u64) => () = "tasks_by_assignee";
    TASK_COMMENTS: u64 => &[u8] = "task_comments";
    /// (task id, comment id) → ().
    TASK_COMMENTS_BY_TASK: (u64, u64) => () = "task_comments_by_task";
    /// (task id, agent name) → (): agents subscribed to a task's updates.
    TASK_SUBSCRIPTIONS: (u64, &str) => () = "task_subscriptions";
    QUALITY_REVIEWS: u64 => &[u8] = "quality_reviews";
    /// (task id, review id) → ().
    QUALITY_REVIEWS_BY_TASK: (u64, u64) => () = "quality_reviews_by_task";

    // notifications
    NOTIFICATIONS: u64 => &[u8] = "notifications";
    /// (recipient, id) → ().
    NOTIFICATIONS_BY_RECIPIENT: (&str, u64) => () = "notifications_by_recipient";
    /// (recipient, id) → () for notifications not yet read.
    NOTIFICATIONS_UNREAD: (&str, u64) => () = "notifications_unread";

    // webhooks
    WEBHOOKS: u64 => &[u8] = "webhooks";
    WEBHOOK_DELIVERIES: u64 => &[u8] = "webhook_deliveries";
    /// (webhook id, delivery id) → ().
    WEBHOOK_DELIVERIES_BY_WEBHOOK: (u64, u64) => () = "webhook_deliveries_by_webhook";
    /// The durable outbox: (due at ms, delivery id) → () for attempts not yet made.
    WEBHOOK_OUTBOX: (u64, u64) => () = "webhook_outbox";
    /// (webhook id, delivery id) → (): attempts held while the webhook's circuit is open.
    WEBHOOK_HELD: (u64, u64) => () = "webhook_held";

    // agents
    /// Agents (the record without its memory).
    AGENTS: u64 => &[u8] = "agents";
    /// Unique index: exact agent name → agent id.
    AGENTS_BY_NAME: &str => u64 = "agents_by_name";
    /// (status, agent id) → (): agents filtered by status.
    AGENTS_BY_STATUS: (&str, u64) => () = "agents_by_status";
    /// (role, agent id) → (): agents filtered by role.
    AGENTS_BY_ROLE: (&str, u64) => () = "agents_by_role";
    /// Agent memory (a JSON object, at most 256 KiB) keyed by agent id, apart from the record so lists
    /// never decode it.
    AGENT_MEMORY: u64 => &[u8] = "agent_memory";
    /// Agent-to-agent messages; ids grow with time.
    AGENT_MESSAGES: u64 => &[u8] = "agent_messages";
    /// (to_agent, message id) → (): messages received by an agent.
    AGENT_MESSAGES_BY_RECIPIENT: (&str, u64) => () = "agent_messages_by_recipient";
    /// (from_agent, message id) → (): messages sent by an agent.
    AGENT_MESSAGES_BY_SENDER: (&str, u64) => () = "agent_messages_by_sender";
    /// (to_agent, message id) → (): messages not yet read (delivered by the heartbeat poll).
    AGENT_MESSAGES_UNREAD: (&str, u64) => () = "agent_messages_unread";
    /// Tool connections (`POST /api/connect`): connection id (uuid) → record.
    AGENT_CONNECTIONS: &str => &[u8] = "agent_connections";
    /// (agent id, connection id) → (): an agent's connections, removed with the agent.
    AGENT_CONNECTIONS_BY_AGENT: (u64, &str) => () = "agent_connections_by_agent";

    // gateways
    GATEWAYS: u64 => &[u8] = "gateways";
    /// Unique index: lower-cased name → gateway id.
    GATEWAYS_BY_NAME: &str => u64 = "gateways_by_name";
    /// Session id → control state of sessions no gateway owns (local and token-derived).
    SESSION_CONTROLS: &str => &[u8] = "session_controls";

    // alerts
    ALERT_RULES: u64 => &[u8] = "alert_rules";

    // ops
    /// Stored overrides of the system settings: key → {value, updated_by, updated_at}.
    SETTINGS: &str => &[u8] = "settings";
    /// Log entries added through the API: (timestamp ms, sequence) → entry, so recent and tail are range
    /// reads and retention deletes a prefix.
    LOGS: (u64, u64) => &[u8] = "logs";
    /// Source → number of stored log entries with it (the `sources` list without a scan).
    LOG_SOURCES: &str => u64 = "log_sources";
    // tokens
    /// Token usage records: (timestamp ms, sequence) → record. Time-ordered, so lists, exports and
    /// timeframes are range reads.
    TOKEN_USAGE: (u64, u64) => &[u8] = "token_usage";
    /// Hourly rollups, maintained with every insert and prune: (hour start ms, model, agent, session) →
    /// (records, input tokens, output tokens, cost in nano-USD).
    TOKEN_ROLLUP_HOURLY: (u64, &str, &str, &str) => (u64, u64, u64, u128) = "token_rollup_hourly";
    /// All-time rollups: (agent, session, model) → (records, input tokens, output tokens, cost in nano-USD).
    TOKEN_ROLLUP_TOTAL: (&str, &str, &str) => (u64, u64, u64, u128) = "token_rollup_total";
    /// (session, timestamp ms, sequence) → (): a session's records in time order.
    TOKEN_USAGE_BY_SESSION: (&str, u64, u64) => () = "token_usage_by_session";
    /// (timestamp ms of the session's latest record, session) → (): sessions by recent activity.
    TOKEN_SESSIONS_BY_LAST: (u64, &str) => () = "token_sessions_by_last";

    // scheduler
    /// Persisted state of each scheduled job: job id → {last_run, next_run, running, last_result}.
    SCHEDULER_JOBS: &str => &[u8] = "scheduler_jobs";
}
