//! One integration-test binary: every module talks HTTP to the real server on 127.0.0.1:0.

mod helpers;

mod agents;
mod audit;
mod auth;
mod events;
mod http_core;
mod notifications;
mod receiver;
mod tasks;
mod tokens;
mod users;
mod webhooks;
