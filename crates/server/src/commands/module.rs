//! MODULE LIST | HELP; LOAD, LOADEX and UNLOAD are refused before they run, as Redis
//! refuses them by default (`enable-module-command no`). hotkv loads no modules, so
//! the list is empty.

use resp::Frame;

use super::{reply, upper, Ctx, Reply};

pub fn module(_: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    match (upper(&args[1]).as_slice(), &args[2..]) {
        (b"LIST", []) => reply(Frame::Array(Vec::new())),
        (b"HELP", []) => super::help(HELP),
        _ => super::bad_subcommand("module", &args[1]),
    }
}

const HELP: &[&str] = &[
    "MODULE <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "LIST",
    "    Return a list of loaded modules.",
    "LOAD <path> [<arg> ...]",
    "    Load a module library from <path>, passing to it any optional arguments.",
    "LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
    "    Load a module library from <path>, while passing it module configurations and optional arguments.",
    "UNLOAD <name>",
    "    Unload a module.",
    "HELP",
    "    Prints this help.",
];
