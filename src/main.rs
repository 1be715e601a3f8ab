//! `git-tlv4`: parse the command line, run the command, print the error, exit.

use clap::FromArgMatches;
use git_tlv4::cli::{self, Cli};
use git_tlv4::ui::Ui;
use tlv4_core::error::exit;

fn main() {
    // The reaper of a confined program (`git-tlv4 __contain …`) is not a command.
    tlv4_core::sandbox::contain::main_if_asked();
    // First, before any thread starts: every thread inherits the blocked signals.
    tlv4_core::process::signals::install();
    let cli = match cli::command()
        .try_get_matches()
        .and_then(|m| Cli::from_arg_matches(&m))
    {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() {
                exit::USAGE
            } else {
                exit::OK
            };
            let _ = e.print();
            std::process::exit(code);
        }
    };
    let ui = Ui::new(cli.quiet).with_no_pager(cli.no_pager);
    match cli::run(cli, &ui) {
        Ok(exit::OK) => {}
        Ok(code) => {
            // What was printed goes out before the status says how it went.
            let _ = std::io::Write::flush(&mut std::io::stdout());
            std::process::exit(code);
        }
        Err(err) => {
            ui.error(&err);
            std::process::exit(err.exit_code());
        }
    }
}
