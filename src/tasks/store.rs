//! Repository functions for tasks, comments, subscriptions and quality reviews. A task and all of its
//! index entries change together in the caller's write transaction.

use redb::{ReadTransaction, ReadableTable, WriteTransaction};

use super::{Comment, Review, Task, TaskStats};
use crate::store::schema::{
    QUALITY_REVIEWS, QUALITY_REVIEWS_BY_TASK, TASK_COMMENTS, TASK_COMMENTS_BY_TASK, TASK_SUBSCRIPTIONS, TASKS,
    TASKS_BY_ASSIGNEE, TASKS_BY_PRIORITY, TASKS_BY_STATUS, TASKS_BY_TITLE,
};
use crate::store::{StoreError, get, newest_page, newest_page_by_key, next_id, put};

fn title_key(title: &str) -> String {
    title.trim().to_lowercase()
}

pub fn get_task(tx: &ReadTransaction, id: u64) -> Result<Option<Task>, StoreError> {
    get(&tx.open_table(TASKS)?, id)
}

pub fn get_task_w(tx: &WriteTransaction, id: u64) -> Result<Option<Task>, StoreError> {
    get(&tx.open_table(TASKS)?, id)
}

/// The id of the task holding `title` (case-insensitive), if any.
pub fn id_by_title(tx: &WriteTransaction, title: &str) -> Result<Option<u64>, StoreError> {
    Ok(tx.open_table(TASKS_BY_TITLE)?.get(title_key(title).as_str())?.map(|v| v.value()))
}

pub fn new_task_id(tx: &WriteTransaction) -> Result<u64, StoreError> {
    next_id(tx, "tasks")
}

fn add_indexes(tx: &WriteTransaction, t: &Task) -> Result<(), StoreError> {
    tx.open_table(TASKS_BY_TITLE)?.insert(title_key(&t.title).as_str(), t.id)?;
    tx.open_table(TASKS_BY_STATUS)?.insert((t.status.as_str(), t.id), ())?;
    tx.open_table(TASKS_BY_PRIORITY)?.insert((t.priority.as_str(), t.id), ())?;
    if let Some(a) = &t.assigned_to {
        tx.open_table(TASKS_BY_ASSIGNEE)?.insert((a.as_str(), t.status.as_str(), t.id), ())?;
    }
    Ok(())
}

fn remove_indexes(tx: &WriteTransaction, t: &Task) -> Result<(), StoreError> {
    tx.open_table(TASKS_BY_TITLE)?.remove(title_key(&t.title).as_str())?;
    tx.open_table(TASKS_BY_STATUS)?.remove((t.status.as_str(), t.id))?;
    tx.open_table(TASKS_BY_PRIORITY)?.remove((t.priority.as_str(), t.id))?;
    if let Some(a) = &t.assigned_to {
        tx.open_table(TASKS_BY_ASSIGNEE)?.remove((a.as_str(), t.status.as_str(), t.id))?;
    }
    Ok(())
}

pub fn insert(tx: &WriteTransaction, task: &Task) -> Result<(), StoreError> {
    put(tx, TASKS, task.id, task)?;
    add_indexes(tx, task)
}

/// Saves `new` over `old`, moving its index entries.
pub fn update(tx: &WriteTransaction, old: &Task, new: &Task) -> Result<(), StoreError> {
    remove_indexes(tx, old)?;
    put(tx, TASKS, new.id, new)?;
    add_indexes(tx, new)
}

/// Deletes a task with its comments, subscriptions and reviews.
pub fn delete(tx: &WriteTransaction, task: &Task) -> Result<(), StoreError> {
    remove_indexes(tx, task)?;
    tx.open_table(TASKS)?.remove(task.id)?;
    for id in children(tx, TASK_COMMENTS_BY_TASK, task.id)? {
        tx.open_table(TASK_COMMENTS)?.remove(id)?;
        tx.open_table(TASK_COMMENTS_BY_TASK)?.remove((task.id, id))?;
    }
    for id in children(tx, QUALITY_REVIEWS_BY_TASK, task.id)? {
        tx.open_table(QUALITY_REVIEWS)?.remove(id)?;
        tx.open_table(QUALITY_REVIEWS_BY_TASK)?.remove((task.id, id))?;
    }
    for agent in subscribers_w(tx, task.id)? {
        tx.open_table(TASK_SUBSCRIPTIONS)?.remove((task.id, agent.as_str()))?;
    }
    Ok(())
}

fn children(
    tx: &WriteTransaction,
    index: redb::TableDefinition<'static, (u64, u64), ()>,
    parent: u64,
) -> Result<Vec<u64>, StoreError> {
    let table = tx.open_table(index)?;
    let ids: Result<Vec<u64>, _> =
        table.range((parent, 0)..=(parent, u64::MAX))?.map(|r| r.map(|(k, _)| k.value().1)).collect();
    Ok(ids?)
}

#[derive(Debug, Default, Clone)]
pub struct Filter {
    pub status: Option<String>,
    pub assigned_to: Option<String>,
    pub priority: Option<String>,
}

/// Tasks matching the filter, newest first, paged, with the total. Served from the narrowest index;
/// records are decoded only for the page, or to check a second filter.
pub fn list(tx: &ReadTransaction, f: &Filter, limit: usize, offset: usize) -> Result<(Vec<Task>, usize), StoreError> {
    // Hot paths: no filter, or one status/priority filter alone: only the page is decoded.
    match (&f.assigned_to, &f.status, &f.priority) {
        (None, None, None) => return newest_page(tx, TASKS, limit, offset),
        (None, Some(s), None) => return newest_page_by_key(tx, TASKS_BY_STATUS, TASKS, s, limit, offset),
        (None, None, Some(p)) => return newest_page_by_key(tx, TASKS_BY_PRIORITY, TASKS, p, limit, offset),
        _ => {}
    }
    let tasks = tx.open_table(TASKS)?;
    let (ids, checked): (Vec<u64>, bool) = if let Some(agent) = &f.assigned_to {
        let index = tx.open_table(TASKS_BY_ASSIGNEE)?;
        let rows: Vec<(String, u64)> = match &f.status {
            Some(s) => index.range((agent.as_str(), s.as_str(), 0)..=(agent.as_str(), s.as_str(), u64::MAX))?,
            None => index.range((agent.as_str(), "", 0)..=(agent.as_str(), "\u{10ffff}", u64::MAX))?,
        }
        .map(|r| r.map(|(k, _)| (k.value().1.to_string(), k.value().2)))
        .collect::<Result<_, _>>()?;
        let mut ids: Vec<u64> = rows.into_iter().map(|(_, id)| id).collect();
        ids.sort_unstable_by(|a, b| b.cmp(a));
        (ids, f.priority.is_some())
    } else if let Some(s) = &f.status {
        let index = tx.open_table(TASKS_BY_STATUS)?;
        let ids = index.range((s.as_str(), 0)..=(s.as_str(), u64::MAX))?.rev().map(|r| r.map(|(k, _)| k.value().1));
        (ids.collect::<Result<_, _>>()?, f.priority.is_some())
    } else if let Some(p) = &f.priority {
        let index = tx.open_table(TASKS_BY_PRIORITY)?;
        let ids = index.range((p.as_str(), 0)..=(p.as_str(), u64::MAX))?.rev().map(|r| r.map(|(k, _)| k.value().1));
        (ids.collect::<Result<_, _>>()?, false)
    } else {
        (tasks.iter()?.rev().map(|r| r.map(|(k, _)| k.value())).collect::<Result<_, _>>()?, false)
    };
    let mut page = Vec::new();
    let mut total = 0;
    for id in ids {
        let in_window = total >= offset && page.len() < limit;
        if checked || in_window {
            let Some(task) = get::<Task>(&tasks, id)? else { continue };
            if checked && f.priority.as_ref().is_some_and(|p| *p != task.priority) {
                continue;
            }
            if in_window {
                page.push(task);
            }
        }
        total += 1;
    }
    Ok((page, total))
}

/// Per-status counts of an agent's tasks, from the assignee index alone.
pub fn agent_task_stats(tx: &ReadTransaction, agent: &str) -> Result<TaskStats, StoreError> {
    let index = tx.open_table(TASKS_BY_ASSIGNEE)?;
    let mut stats = TaskStats::default();
    for row in index.range((agent, "", 0)..=(agent, "\u{10ffff}", u64::MAX))? {
        let (key, _) = row?;
        stats.total += 1;
        match key.value().1 {
            "assigned" => stats.assigned += 1,
            "in_progress" => stats.in_progress += 1,
            "done" => stats.completed += 1,
            _ => {}
        }
    }
    Ok(stats)
}

/// An agent's work to do: status `assigned` or `in_progress`, critical first, then oldest.
pub fn pending_for_agent(tx: &ReadTransaction, agent: &str, limit: usize) -> Result<Vec<Task>, StoreError> {
    let index = tx.open_table(TASKS_BY_ASSIGNEE)?;
    let tasks = tx.open_table(TASKS)?;
    let mut pending = Vec::new();
    for status in ["assigned", "in_progress"] {
        for row in index.range((agent, status, 0)..=(agent, status, u64::MAX))? {
            if let Some(task) = get::<Task>(&tasks, row?.0.value().2)? {
                pending.push(task);
            }
        }
    }
    pending.sort_by_key(|t| (super::priority_rank(&t.priority), t.created_at, t.id));
    pending.truncate(limit);
    Ok(pending)
}

pub fn subscribe(tx: &WriteTransaction, task_id: u64, agent: &str) -> Result<(), StoreError> {
    tx.open_table(TASK_SUBSCRIPTIONS)?.insert((task_id, agent), ())?;
    Ok(())
}

pub fn subscribers_w(tx: &WriteTransaction, task_id: u64) -> Result<Vec<String>, StoreError> {
    let table = tx.open_table(TASK_SUBSCRIPTIONS)?;
    let rows = table.range((task_id, "")..(task_id + 1, ""))?;
    Ok(rows.map(|r| r.map(|(k, _)| k.value().1.to_string())).collect::<Result<_, _>>()?)
}

pub fn insert_comment(tx: &WriteTransaction, task_id: u64, author: &str, content: &str) -> Result<Comment, StoreError> {
    let comment = Comment {
        id: next_id(tx, "task_comments")?,
        task_id,
        author: author.to_string(),
        content: content.to_string(),
        created_at: crate::store::now_secs(),
    };
    put(tx, TASK_COMMENTS, comment.id, &comment)?;
    tx.open_table(TASK_COMMENTS_BY_TASK)?.insert((task_id, comment.id), ())?;
    Ok(comment)
}

/// A task's comments, oldest first.
pub fn comments(tx: &ReadTransaction, task_id: u64) -> Result<Vec<Comment>, StoreError> {
    let index = tx.open_table(TASK_COMMENTS_BY_TASK)?;
    let table = tx.open_table(TASK_COMMENTS)?;
    let mut out = Vec::new();
    for row in index.range((task_id, 0)..=(task_id, u64::MAX))? {
        if let Some(c) = get(&table, row?.0.value().1)? {
            out.push(c);
        }
    }
    Ok(out)
}

pub fn insert_review(tx: &WriteTransaction, review: &Review) -> Result<(), StoreError> {
    put(tx, QUALITY_REVIEWS, review.id, review)?;
    tx.open_table(QUALITY_REVIEWS_BY_TASK)?.insert((review.task_id, review.id), ())?;
    Ok(())
}

pub fn new_review_id(tx: &WriteTransaction) -> Result<u64, StoreError> {
    next_id(tx, "quality_reviews")
}

/// A task's reviews, newest first.
pub fn reviews(tx: &ReadTransaction, task_id: u64) -> Result<Vec<Review>, StoreError> {
    let index = tx.open_table(QUALITY_REVIEWS_BY_TASK)?;
    let table = tx.open_table(QUALITY_REVIEWS)?;
    let mut out = Vec::new();
    for row in index.range((task_id, 0)..=(task_id, u64::MAX))?.rev() {
        if let Some(r) = get(&table, row?.0.value().1)? {
            out.push(r);
        }
    }
    Ok(out)
}

/// Whether the newest review of the task by `reviewer` is an approval.
pub fn is_approved(tx: &WriteTransaction, task_id: u64, reviewer: &str) -> Result<bool, StoreError> {
    let index = tx.open_table(QUALITY_REVIEWS_BY_TASK)?;
    let table = tx.open_table(QUALITY_REVIEWS)?;
    for row in index.range((task_id, 0)..=(task_id, u64::MAX))?.rev() {
        if let Some(r) = get::<Review>(&table, row?.0.value().1)?
            && r.reviewer == reviewer
        {
            return Ok(r.status == "approved");
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use redb::ReadableDatabase;

    use super::*;
    use crate::store::Store;
    use crate::tasks::{PRIORITIES, STATUSES};

    const AGENTS: [&str; 3] = ["ada", "bob", "cy"];

    fn task(id: u64, status: usize, priority: usize, agent: usize) -> Task {
        Task {
            id,
            title: format!("task {id}"),
            description: String::new(),
            status: STATUSES[status].into(),
            priority: PRIORITIES[priority].into(),
            assigned_to: AGENTS.get(agent).map(|a| a.to_string()),
            created_by: "test".into(),
            due_date: None,
            estimated_hours: None,
            tags: Vec::new(),
            metadata: serde_json::Value::Null,
            created_at: id as i64,
            updated_at: id as i64,
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Every filter combination and page, from the indexes, equals filtering a full scan (newest first),
        /// also after updates and deletes moved tasks between index entries.
        #[test]
        fn list_pages_equal_a_filtered_scan(
            specs in proptest::collection::vec((0..5usize, 0..4usize, 0..4usize), 0..70),
            changes in proptest::collection::vec((any::<prop::sample::Index>(), 0..5usize, 0..4usize, any::<bool>()), 0..12),
            status in proptest::option::of(0..5usize),
            priority in proptest::option::of(0..4usize),
            agent in proptest::option::of(0..3usize),
            limit in 1usize..25,
            offset in 0usize..80,
        ) {
            let dir = tempfile::tempdir().unwrap();
            let store = Store::open(&dir.path().join("t.db")).unwrap();
            let txn = store.database().begin_write().unwrap();
            let mut all = Vec::new();
            for &(s, p, a) in &specs {
                let t = task(new_task_id(&txn).unwrap(), s, p, a);
                insert(&txn, &t).unwrap();
                all.push(t);
            }
            for (pick, s, a, remove) in &changes {
                if all.is_empty() {
                    break;
                }
                let i = pick.index(all.len());
                if *remove {
                    delete(&txn, &all.remove(i)).unwrap();
                } else {
                    let old = all[i].clone();
                    all[i] = task(old.id, *s, PRIORITIES.iter().position(|p| *p == old.priority).unwrap(), *a);
                    update(&txn, &old, &all[i]).unwrap();
                }
            }
            txn.commit().unwrap();

            let filter = Filter {
                status: status.map(|s| STATUSES[s].to_string()),
                assigned_to: agent.map(|a| AGENTS[a].to_string()),
                priority: priority.map(|p| PRIORITIES[p].to_string()),
            };
            let matching: Vec<&Task> = all
                .iter()
                .rev()
                .filter(|t| filter.status.as_ref().is_none_or(|s| &t.status == s))
                .filter(|t| filter.priority.as_ref().is_none_or(|p| &t.priority == p))
                .filter(|t| filter.assigned_to.is_none() || t.assigned_to == filter.assigned_to)
                .collect();
            let want: Vec<u64> = matching.iter().skip(offset).take(limit).map(|t| t.id).collect();
            let (page, total) = list(&store.database().begin_read().unwrap(), &filter, limit, offset).unwrap();
            prop_assert_eq!(page.iter().map(|t| t.id).collect::<Vec<_>>(), want);
            prop_assert_eq!(total, matching.len());
        }
    }
}
