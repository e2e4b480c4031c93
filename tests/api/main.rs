//! One integration-test binary: every module talks HTTP to the real server on 127.0.0.1:0.

mod helpers;

mod agent_sync;
mod agents;
mod alerts;
mod audit;
mod auth;
mod backups;
mod demo;
mod events;
mod gateways;
mod google;
mod http_core;
mod logs;
mod metrics;
mod notifications;
mod receiver;
mod role_matrix;
mod scheduler;
mod secrets;
mod sessions;
mod settings;
mod tasks;
mod tokens;
mod ui;
mod users;
mod webhooks;
