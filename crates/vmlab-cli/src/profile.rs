//! `vmlab profile`: the machine profiles, as the simulator reads them.
//!
//! `show` prints the effective profile (every key, with the value the simulator uses) as
//! TOML that `--machine` loads back; `list` names the built-in profiles.

use crate::args::{ProfileArgs, ProfileCommand};
use crate::CliError;
use vmlab_core::cost::profile::BUILTIN;
use vmlab_core::cost::Profile;

/// Runs `vmlab profile SUBCOMMAND`.
pub fn profile(args: ProfileArgs) -> Result<(), CliError> {
    match args.command {
        ProfileCommand::Show(show) => {
            let profile = crate::args::load_profile(&show.profile)?;
            let source = if BUILTIN.iter().any(|(n, _)| *n == show.profile) {
                format!("built-in profiles/{}.toml", show.profile)
            } else {
                show.profile.clone()
            };
            println!(
                "# Machine profile '{}' as vmlab reads it ({source}, {}):",
                profile.name(),
                profile.fingerprint_hex()
            );
            println!("# every key with the value the simulator uses; the sources of the numbers are comments");
            println!(
                "# in the profile file. Save this, edit it, and run with --machine FILE.toml."
            );
            println!();
            print!("{}", profile.to_toml());
        }
        ProfileCommand::List => {
            for (name, _) in BUILTIN {
                let p = Profile::builtin(name).map_err(|e| CliError::Run(e.to_string()))?;
                println!(
                    "{:<14} {}  ({})",
                    p.name(),
                    p.machine.description,
                    p.fingerprint_hex()
                );
            }
        }
    }
    Ok(())
}
