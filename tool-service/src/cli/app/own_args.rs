//! The binary's own flags ([`App::args`](super::App::args)): added to the
//! commands that run handlers, under a heading of their own, and refused
//! when one takes a name of tool-service's.

/// The commands whose handlers run, and so take the binary's own flags.
pub(super) const RUNS_HANDLERS: [&str; 3] = ["serve", "call", "mcp"];

/// `command` with the binary's own flags added to the commands that run
/// handlers; a flag that takes the name, short form or id of one of ours
/// is refused, naming both.
pub(super) fn with_own_args(
    mut command: clap::Command,
    augment: fn(clap::Command) -> clap::Command,
) -> Result<clap::Command, String> {
    let own = augment(clap::Command::new("own"));
    if own.get_arguments().next().is_none() {
        return Ok(command);
    }
    let heading = format!("{} options", command.get_name());
    for name in RUNS_HANDLERS {
        let Some(ours) = command.find_subcommand(name) else {
            continue;
        };
        for theirs in own.get_arguments() {
            let help = theirs.get_long() == Some("help") || theirs.get_short() == Some('h');
            if let Some(clash) = ours.get_arguments().find(|ours| clashes(ours, theirs)) {
                return Err(format!(
                    "the binary's own flag {} clashes with `{name} {}`, which tool-service defines; rename it",
                    describe(theirs),
                    describe(clash)
                ));
            }
            if help {
                return Err(format!(
                    "the binary's own flag {} clashes with `{name} --help (-h)`; rename it",
                    describe(theirs)
                ));
            }
        }
        command = command.mut_subcommand(name, |sub| {
            // clap's derive gives a documented flags struct's doc comment
            // to the command it augments: keep the subcommand's own.
            let about = sub.get_about().cloned();
            let long_about = sub.get_long_about().cloned();
            let sub =
                augment(sub.next_help_heading(heading.clone())).next_help_heading(None::<&str>);
            let sub = match about {
                Some(about) => sub.about(about),
                None => sub.about(None::<&str>),
            };
            match long_about {
                Some(long_about) => sub.long_about(long_about),
                None => sub.long_about(None::<&str>),
            }
        });
    }
    Ok(command)
}

/// Whether two arguments share an id, a long name or a short one.
fn clashes(a: &clap::Arg, b: &clap::Arg) -> bool {
    a.get_id() == b.get_id()
        || a.get_long().is_some() && a.get_long() == b.get_long()
        || a.get_short().is_some() && a.get_short() == b.get_short()
}

/// `--db (field `db`)`, or the short form when it has no long one.
fn describe(arg: &clap::Arg) -> String {
    let flag = match (arg.get_long(), arg.get_short()) {
        (Some(long), Some(short)) => format!("--{long} (-{short})"),
        (Some(long), None) => format!("--{long}"),
        (None, Some(short)) => format!("-{short}"),
        (None, None) => format!("<{}>", arg.get_id()),
    };
    format!("{flag} (field `{}`)", arg.get_id())
}
