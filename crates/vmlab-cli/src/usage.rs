//! The argument parser's errors in vmlab's form: one line, `error: ` then the problem and the
//! choices, exit status 2, like every other user error (clap's own are several lines).

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::CommandFactory;

/// The one-line message for `e`, a parse error of `args` (the command line, program first).
pub fn one_line(e: &clap::Error, args: &[String]) -> String {
    let rendered = e.render().to_string();
    // The problem is the first paragraph; usage and tips follow blank lines.
    let problem: Vec<&str> = rendered
        .lines()
        .map(str::trim)
        .take_while(|l| !l.is_empty())
        .collect();
    let mut msg = problem
        .join(" ")
        .trim_start_matches("error: ")
        .trim_end_matches('.')
        .to_string();
    if let Some(ContextValue::String(s)) = e.get(ContextKind::SuggestedArg) {
        msg.push_str(&format!("; did you mean '{s}'"));
    }
    let (command, path) = subcommand(args);
    match e.kind() {
        ErrorKind::InvalidSubcommand
        | ErrorKind::MissingSubcommand
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let names: Vec<String> = command
                .get_subcommands()
                .filter(|c| !c.is_hide_set())
                .map(|c| c.get_name().to_string())
                .collect();
            if e.kind() != ErrorKind::InvalidSubcommand {
                msg = format!("'{}' needs a command", path);
            }
            msg.push_str(&format!("; valid commands: {}", names.join(", ")));
        }
        ErrorKind::UnknownArgument => {
            let flags: Vec<String> = command
                .get_arguments()
                .filter(|a| !a.is_hide_set())
                .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
                .chain(["--help".to_string()])
                .collect();
            msg.push_str(&format!(
                "; valid options of '{}': {}",
                path,
                flags.join(", ")
            ));
        }
        _ => {}
    }
    if !msg.contains("--help") {
        msg.push_str(&format!(" (see '{} --help')", path));
    }
    msg
}

/// The deepest subcommand `args` names (the top-level command if none), and its words
/// ("vmlab run", "vmlab profile show").
fn subcommand(args: &[String]) -> (clap::Command, String) {
    let mut command = crate::args::Cli::command();
    let mut words = vec!["vmlab".to_string()];
    for arg in args.iter().skip(1) {
        match command.find_subcommand(arg) {
            Some(sub) => {
                words.push(sub.get_name().to_string());
                command = sub.clone();
            }
            None => break,
        }
    }
    (command, words.join(" "))
}
