//! Files in an agent's workspace (`config.workspace`): `soul.md` and `memory.json`. The workspace must
//! be an absolute path without `..` components; files are replaced atomically (temp file + rename) and
//! only inside a directory that already exists.

use std::io::Read;
use std::path::{Component, Path, PathBuf};

use super::Agent;
use crate::error::AppError;

pub const SOUL_FILE: &str = "soul.md";
pub const MEMORY_FILE: &str = "memory.json";
/// Largest workspace soul file read back (bytes); the rest is cut.
const MAX_READ_BYTES: u64 = 1024 * 1024;

/// Checks a workspace path: absolute, no `..` components.
pub fn check_path(raw: &str) -> Result<PathBuf, AppError> {
    let path = Path::new(raw);
    if !path.is_absolute() || path.components().any(|c| matches!(c, Component::ParentDir)) {
        return Err(AppError::validation("config.workspace", "must be an absolute path without .. components"));
    }
    Ok(path.to_path_buf())
}

/// The agent's checked workspace directory, when its config names one.
pub fn dir_of(agent: &Agent) -> Result<Option<PathBuf>, AppError> {
    agent.workspace().map(check_path).transpose()
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T, AppError> {
    tokio::task::spawn_blocking(f).await.map_err(AppError::internal)
}

/// `<dir>/soul.md` when it exists as a file (at most 1 MiB is read; invalid UTF-8 is replaced).
pub async fn read_soul(dir: PathBuf) -> Result<Option<String>, AppError> {
    blocking(move || {
        let path = dir.join(SOUL_FILE);
        if !path.is_file() {
            return Ok(None);
        }
        let mut bytes = Vec::new();
        std::fs::File::open(&path)?.take(MAX_READ_BYTES).read_to_end(&mut bytes)?;
        Ok::<_, std::io::Error>(Some(String::from_utf8_lossy(&bytes).into_owned()))
    })
    .await?
    .map_err(|e| AppError::Internal(format!("cannot read workspace soul: {e}")))
}

/// Replaces `<dir>/<name>` atomically. The directory must exist; nothing is created above it.
pub async fn write_file(dir: PathBuf, name: &'static str, contents: Vec<u8>) -> Result<(), AppError> {
    blocking(move || {
        if !dir.is_dir() {
            return Err(std::io::Error::new(std::io::ErrorKind::NotFound, "workspace directory does not exist"));
        }
        let mut suffix = [0u8; 6];
        getrandom::fill(&mut suffix).map_err(std::io::Error::other)?;
        let tmp = dir.join(format!(".{name}.{}.tmp", hex::encode(suffix)));
        let result = std::fs::write(&tmp, &contents).and_then(|()| std::fs::rename(&tmp, dir.join(name)));
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        result
    })
    .await?
    .map_err(|e| AppError::Internal(format!("cannot write {name}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workspace_paths_must_be_absolute_without_parent_components() {
        assert!(check_path("/srv/agents/dev").is_ok());
        assert!(check_path("/srv/agents/./dev").is_ok());
        assert!(check_path("relative/dir").is_err());
        assert!(check_path("~/.openclaw/ws").is_err());
        assert!(check_path("/srv/../etc").is_err());
        assert!(check_path("/srv/agents/..").is_err());
    }

    #[tokio::test]
    async fn files_are_written_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read_soul(dir.path().to_path_buf()).await.unwrap(), None);
        write_file(dir.path().to_path_buf(), SOUL_FILE, b"be kind".to_vec()).await.unwrap();
        assert_eq!(read_soul(dir.path().to_path_buf()).await.unwrap().as_deref(), Some("be kind"));
        let leftovers = std::fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(leftovers, 1, "no temp file left behind");
        assert!(write_file(dir.path().join("missing"), SOUL_FILE, vec![]).await.is_err());
    }
}
