//! One integration-test binary: every module talks HTTP to the real server on 127.0.0.1:0.

mod helpers;

mod audit;
mod auth;
mod backups;
mod events;
mod http_core;
mod logs;
mod notifications;
mod settings;
mod tasks;
mod users;
