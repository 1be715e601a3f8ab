//! The discussion protocol's own overhead per round, agent time excluded: the builtin
//! members answer from templates in microseconds, so what is measured is the tool — prompts,
//! contract checks, the moderator's rating, the transition, the record — and, for a recorded
//! round, writing its event commit (every member's files, `discussion.json`, the output
//! document in the session's tree) with compare-and-swap.
//!
//! `engine/4 seats` and `engine/7 seats`: one `protocol::step` (the whole default discussion
//! divided by its 3 rounds). `recorded/4 seats`: `coordinator::discussion::advance` on a real
//! repository, divided by its rounds. The seed's budget is about 5 s per round.

// A bench or test binary reports to its terminal: it may print.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod common;
use common::git;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use git_tlv4::agents::roster::Roster;
use git_tlv4::coordinator::discussion::{self, DiscussOptions};
use git_tlv4::quality::protocol::{self, Cast, Discussion, Limits, Member, Preset, builtin};
use tlv4_store::store::Store;

const TOPIC: &str = "SQLite or Postgres or plain files for the notes store";

fn members(n: usize) -> Vec<String> {
    [
        "advocate",
        "skeptic",
        "pragmatist",
        "operator",
        "user",
        "security",
    ][..n]
        .iter()
        .map(|s| (*s).to_owned())
        .collect()
}

fn fresh(n: usize) -> (Discussion, Cast) {
    let d = Discussion::new(
        TOPIC,
        Preset::Default,
        &members(n),
        |_| "builtin".into(),
        "builtin",
        Vec::new(),
        Limits::default(),
    )
    .expect("a valid discussion");
    let roles: Vec<String> = d.seats.iter().map(|s| s.role.clone()).collect();
    let cast = Cast {
        members: d
            .seats
            .iter()
            .map(|s| {
                let m: Arc<dyn Member> =
                    Arc::new(builtin::BuiltinMember::new(TOPIC, &roles, &s.role, s.devil));
                (s.role.clone(), m)
            })
            .collect(),
        moderator: Arc::new(builtin::BuiltinModerator),
    };
    (d, cast)
}

fn engine(c: &mut Criterion) {
    let mut g = c.benchmark_group("discuss");
    for seats in [3, 6] {
        g.bench_function(format!("engine/{} seats", seats + 1), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let (mut d, cast) = fresh(seats);
                    let t = Instant::now();
                    protocol::run(&mut d, &cast, &Vec::new());
                    let rounds = d.rounds.len() as u32;
                    total += t.elapsed() / rounds.max(1);
                }
                total
            })
        });
    }
    g.bench_function("recorded/4 seats", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let dir = tempfile::tempdir().expect("a temporary directory");
                let p = dir.path();
                git(p, &["init", "-q", "-b", "main"]);
                git(p, &["config", "user.name", "Bench"]);
                git(p, &["config", "user.email", "bench@example.com"]);
                std::fs::write(p.join("README.md"), "# bench\n").expect("write");
                git(p, &["add", "-A"]);
                git(p, &["commit", "-q", "-m", "initial"]);
                let store = Store::discover(p).expect("a repository");
                let roster = Roster::builtin();
                let opts = DiscussOptions {
                    topic: TOPIC.into(),
                    preset: Preset::Default,
                    members: members(3),
                    artifacts: Vec::new(),
                    limits: Limits::default(),
                    feature: None,
                    replay: None,
                    agents: Vec::new(),
                };
                let (sid, _) = discussion::start(&store, &opts, &roster).expect("started");
                let t = Instant::now();
                let d = discussion::advance(&store, &sid, &roster, &mut |_| {}).expect("ran");
                let agent: u64 = d.rounds.iter().map(|r| r.agent_ms).sum();
                let spent = t.elapsed().saturating_sub(Duration::from_millis(agent));
                total += spent / (d.rounds.len() as u32).max(1);
            }
            total
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(Duration::from_secs(5));
    targets = engine
}
criterion_main!(benches);
