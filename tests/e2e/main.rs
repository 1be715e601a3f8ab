//! End-to-end tests: the real binary against real git in throwaway repositories, checked
//! with git itself.

mod common;

mod agents;
mod bad_input;
mod commands;
mod concurrency;
mod conformance;
mod crash;
mod hooks;
mod pipelines;
mod review;
mod store;
mod stuck;
