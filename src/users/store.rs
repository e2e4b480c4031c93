//! Repository functions for users, sessions and access requests. Each write keeps the record and its
//! indexes together in the caller's transaction.

use redb::{ReadTransaction, ReadableTable, ReadableTableMetadata, WriteTransaction};

use super::{AccessRequest, NewAccessRequest, NewUser, SessionRecord, UserRecord};
use crate::store::schema::{
    ACCESS_REQUESTS, ACCESS_REQUESTS_BY_EMAIL, SESSIONS, SESSIONS_BY_USER, USERS, USERS_BY_NAME,
};
use crate::store::{StoreError, decode, encode, get, next_id, now_secs, put};

fn name_key(username: &str) -> String {
    username.to_ascii_lowercase()
}

pub fn any_user(tx: &WriteTransaction) -> Result<bool, StoreError> {
    Ok(!tx.open_table(USERS)?.is_empty()?)
}

/// [`any_user`] in a read transaction (no writer needed).
pub fn any_user_read(tx: &ReadTransaction) -> Result<bool, StoreError> {
    Ok(!tx.open_table(USERS)?.is_empty()?)
}

pub fn get_user(tx: &ReadTransaction, id: u64) -> Result<Option<UserRecord>, StoreError> {
    get(&tx.open_table(USERS)?, id)
}

pub fn get_user_w(tx: &WriteTransaction, id: u64) -> Result<Option<UserRecord>, StoreError> {
    get(&tx.open_table(USERS)?, id)
}

pub fn find_by_name(tx: &ReadTransaction, username: &str) -> Result<Option<UserRecord>, StoreError> {
    let id = tx.open_table(USERS_BY_NAME)?.get(name_key(username).as_str())?.map(|v| v.value());
    match id {
        Some(id) => get_user(tx, id),
        None => Ok(None),
    }
}

pub fn name_taken(tx: &WriteTransaction, username: &str) -> Result<bool, StoreError> {
    Ok(tx.open_table(USERS_BY_NAME)?.get(name_key(username).as_str())?.is_some())
}

pub fn list_users(tx: &ReadTransaction) -> Result<Vec<UserRecord>, StoreError> {
    let table = tx.open_table(USERS)?;
    table.iter()?.map(|row| decode(row?.1.value())).collect()
}

pub fn count_admins(tx: &WriteTransaction) -> Result<usize, StoreError> {
    let table = tx.open_table(USERS)?;
    let mut n = 0;
    for row in table.iter()? {
        let u: UserRecord = decode(row?.1.value())?;
        n += usize::from(u.role == super::Role::Admin);
    }
    Ok(n)
}

/// Inserts a user; the caller has checked the name is free.
pub fn insert_user(tx: &WriteTransaction, new: NewUser) -> Result<UserRecord, StoreError> {
    let id = next_id(tx, "users")?;
    let user = UserRecord {
        id,
        username: new.username,
        display_name: new.display_name,
        role: new.role,
        provider: new.provider,
        email: new.email,
        avatar_url: new.avatar_url,
        workspace_id: 1,
        created_at: now_secs(),
        last_login_at: None,
        password_hash: new.password_hash,
    };
    put(tx, USERS, id, &user)?;
    tx.open_table(USERS_BY_NAME)?.insert(name_key(&user.username).as_str(), id)?;
    Ok(user)
}

pub fn save_user(tx: &WriteTransaction, user: &UserRecord) -> Result<(), StoreError> {
    put(tx, USERS, user.id, user)
}

/// Removes a user, its name index entry and all of its sessions.
pub fn delete_user(tx: &WriteTransaction, user: &UserRecord) -> Result<(), StoreError> {
    tx.open_table(USERS)?.remove(user.id)?;
    tx.open_table(USERS_BY_NAME)?.remove(name_key(&user.username).as_str())?;
    delete_sessions_of(tx, user.id, None)?;
    Ok(())
}

pub fn create_session(tx: &WriteTransaction, hash: &str, session: &SessionRecord) -> Result<(), StoreError> {
    let bytes = encode(session)?;
    tx.open_table(SESSIONS)?.insert(hash, bytes.as_slice())?;
    tx.open_table(SESSIONS_BY_USER)?.insert((session.user_id, hash), ())?;
    Ok(())
}

pub fn find_session(tx: &ReadTransaction, hash: &str) -> Result<Option<SessionRecord>, StoreError> {
    match tx.open_table(SESSIONS)?.get(hash)? {
        Some(v) => Ok(Some(decode(v.value())?)),
        None => Ok(None),
    }
}

pub fn delete_session(tx: &WriteTransaction, hash: &str) -> Result<(), StoreError> {
    let removed = tx.open_table(SESSIONS)?.remove(hash)?.map(|v| decode::<SessionRecord>(v.value()));
    if let Some(Ok(session)) = removed {
        tx.open_table(SESSIONS_BY_USER)?.remove((session.user_id, hash))?;
    }
    Ok(())
}

/// Destroys every session of a user except `keep` (the caller's own, when it changes its password).
pub fn delete_sessions_of(tx: &WriteTransaction, user_id: u64, keep: Option<&str>) -> Result<usize, StoreError> {
    let hashes: Vec<String> = {
        let index = tx.open_table(SESSIONS_BY_USER)?;
        let rows = index.range((user_id, "")..(user_id + 1, ""))?;
        rows.map(|r| r.map(|(k, _)| k.value().1.to_string())).collect::<Result<_, _>>()?
    };
    let mut removed = 0;
    for hash in hashes.iter().filter(|h| Some(h.as_str()) != keep) {
        delete_session(tx, hash)?;
        removed += 1;
    }
    Ok(removed)
}

/// Removes expired sessions (run on each login).
pub fn purge_expired_sessions(tx: &WriteTransaction, now: i64) -> Result<usize, StoreError> {
    let expired: Vec<String> = {
        let table = tx.open_table(SESSIONS)?;
        let mut out = Vec::new();
        for row in table.iter()? {
            let (k, v) = row?;
            // An undecodable session is unusable: purge it too.
            if decode::<SessionRecord>(v.value()).map(|s| s.expires_at <= now).unwrap_or(true) {
                out.push(k.value().to_string());
            }
        }
        out
    };
    for hash in &expired {
        delete_session(tx, hash)?;
    }
    Ok(expired.len())
}

pub fn list_access_requests(tx: &ReadTransaction) -> Result<Vec<AccessRequest>, StoreError> {
    let table = tx.open_table(ACCESS_REQUESTS)?;
    table.iter()?.rev().map(|row| decode(row?.1.value())).collect()
}

pub fn get_access_request(tx: &WriteTransaction, id: u64) -> Result<Option<AccessRequest>, StoreError> {
    get(&tx.open_table(ACCESS_REQUESTS)?, id)
}

pub fn save_access_request(tx: &WriteTransaction, request: &AccessRequest) -> Result<(), StoreError> {
    put(tx, ACCESS_REQUESTS, request.id, request)
}

/// Creates a pending request for this e-mail, or puts an existing one back to `pending` (also an
/// `approved` one: this is only called when no user holds the e-mail, e.g. the approved user was deleted
/// since) and refreshes its reason, display name and avatar. An existing request keeps its username.
pub fn upsert_access_request(tx: &WriteTransaction, new: NewAccessRequest) -> Result<AccessRequest, StoreError> {
    let key = new.email.to_ascii_lowercase();
    let existing = tx.open_table(ACCESS_REQUESTS_BY_EMAIL)?.get(key.as_str())?.map(|v| v.value());
    let request = match existing.map(|id| get_access_request(tx, id)).transpose()?.flatten() {
        Some(r) => AccessRequest {
            status: "pending".into(),
            reason: new.reason,
            display_name: new.display_name.or(r.display_name),
            avatar_url: new.avatar_url.or(r.avatar_url),
            ..r
        },
        None => AccessRequest {
            id: next_id(tx, "access_requests")?,
            username: new.username,
            email: new.email,
            reason: new.reason,
            status: "pending".into(),
            created_at: now_secs(),
            display_name: new.display_name,
            avatar_url: new.avatar_url,
        },
    };
    save_access_request(tx, &request)?;
    tx.open_table(ACCESS_REQUESTS_BY_EMAIL)?.insert(key.as_str(), request.id)?;
    Ok(request)
}

/// The user whose e-mail matches, ignoring ASCII case (a scan: user tables are small).
pub fn find_by_email(tx: &WriteTransaction, email: &str) -> Result<Option<UserRecord>, StoreError> {
    Ok(list_users_w(tx)?.into_iter().find(|u| u.email.as_deref().is_some_and(|e| e.eq_ignore_ascii_case(email))))
}

pub fn list_users_w(tx: &WriteTransaction) -> Result<Vec<UserRecord>, StoreError> {
    let table = tx.open_table(USERS)?;
    table.iter()?.map(|row| decode(row?.1.value())).collect()
}
