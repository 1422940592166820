//! `vmlab-guest`: the guest kernel on its own, without the rest of vmlab (the `vmlab guest`
//! command is the same with more options).
//!
//! Usage: vmlab-guest [--mechanism M] [--root DIR] [--strace] [--hostname H] [--uid N] [--gid N] [--cpu N] [--host-network] [--count] -- PROGRAM [ARGS...]

use std::ffi::OsString;
use std::process::ExitCode;
use vmlab_guest::{Config, GuestError, Mechanism};

fn main() -> ExitCode {
    match run() {
        Ok(code) => code,
        Err(GuestError::Usage(m)) => {
            eprintln!("error: {m}");
            ExitCode::from(2)
        }
        Err(GuestError::Host(m)) => {
            eprintln!("error: {m}");
            ExitCode::from(1)
        }
    }
}

fn run() -> Result<ExitCode, GuestError> {
    let mut config = Config::new(Mechanism::SeccompTrace);
    let mut count = false;
    let mut args = std::env::args_os().skip(1);
    let mut argv: Vec<OsString> = Vec::new();
    let value = |args: &mut dyn Iterator<Item = OsString>, flag: &str| {
        args.next().ok_or_else(|| GuestError::Usage(format!("{flag} needs a value")))
    };
    while let Some(a) = args.next() {
        match a.to_str() {
            Some("--") => {
                argv.extend(args.by_ref());
                break;
            }
            Some("--mechanism" | "-M") => {
                config.mechanism = Mechanism::parse(&value(&mut args, "--mechanism")?.to_string_lossy())?;
            }
            Some("--root") => config.root = value(&mut args, "--root")?.into(),
            Some("--strace") => config.strace = true,
            Some("--hostname") => config.hostname = value(&mut args, "--hostname")?.to_string_lossy().into_owned(),
            Some(f @ ("--uid" | "--gid")) => {
                let v = value(&mut args, f)?
                    .to_string_lossy()
                    .parse()
                    .map_err(|_| GuestError::Usage(format!("{f} needs a number")))?;
                if f == "--uid" {
                    config.uid = v;
                } else {
                    config.gid = v;
                }
            }
            Some("--count") => count = true,
            Some("--host-network") => config.host_network = true,
            Some("--cpu") => {
                let v = value(&mut args, "--cpu")?;
                config.cpu = Some(
                    v.to_string_lossy().parse().map_err(|_| GuestError::Usage("--cpu needs a CPU number".into()))?,
                );
            }
            Some(f) if f.starts_with('-') => return Err(GuestError::Usage(format!("unknown option {f}"))),
            _ => {
                argv.push(a);
                argv.extend(args.by_ref());
                break;
            }
        }
    }
    let out = vmlab_guest::run(&config, &argv)?;
    if count {
        eprintln!("vmlab-guest: {}", out.count_line(config.mechanism));
    }
    Ok(ExitCode::from(out.status.clamp(0, 255) as u8))
}
