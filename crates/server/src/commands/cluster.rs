//! CLUSTER, ASKING, READONLY, READWRITE: hotkv is not a cluster node. Every subcommand answers as redis-server does
//! with cluster support disabled, so clients that probe for cluster mode read the reply
//! they expect; unknown subcommands and wrong arities get the usual errors first.

use super::{error, find_subcommand, Ctx, Reply};

const DISABLED: &str = "ERR This instance has cluster support disabled";

/// ASKING, READONLY, READWRITE.
pub fn not_a_cluster(_: &mut Ctx, _: &[Vec<u8>]) -> Reply {
    error(DISABLED)
}

pub fn cluster(_: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    match find_subcommand("cluster", &args[1]) {
        Some(sub) if super::arity_allows(sub.arity, args.len()) => error(DISABLED),
        _ => super::bad_subcommand("cluster", &args[1]),
    }
}
