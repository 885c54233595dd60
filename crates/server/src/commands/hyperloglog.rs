//! PFADD PFCOUNT PFMERGE: HyperLogLog counters kept as strings in Redis's format
//! (`hll.rs`), so they keep their expiry and move as any string does.

use super::{error, int, ok, Ctx, Reply, WRONG_TYPE};
use crate::db::Change;
use crate::entry::{Entry, Kind};
use crate::hll;
use crate::keyspace_events::STRING;

/// Why a key's value cannot be read as a HyperLogLog, in Redis's words.
fn refusal(entry: &Entry) -> Option<&'static str> {
    if !entry.is_string() {
        Some(WRONG_TYPE)
    } else if !hll::is_hll(&entry.value) {
        Some(hll::NOT_HLL)
    } else {
        None
    }
}

/// `PFADD key [element ...]`: 1 if a register changed or the key was made, else 0.
pub fn pfadd(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let outcome = ctx.db().update(&args[1], Kind::String, |found| {
        if let Some(why) = found.and_then(refusal) {
            return (Change::Keep, Err(why));
        }
        let mut value = found.map_or_else(hll::new, |e| e.value.clone());
        let mut updated = found.is_none();
        for element in &args[2..] {
            match hll::add(&mut value, element) {
                Some(changed) => updated |= changed,
                None => return (Change::Keep, Err(hll::CORRUPTED)),
            }
        }
        if !updated {
            return (Change::Keep, Ok(false));
        }
        hll::invalidate(&mut value);
        let deadline = found.and_then(|e| e.deadline);
        (Change::Put(Entry::raw_string(value, deadline)), Ok(true))
    })?;
    match outcome {
        Ok(updated) => {
            if updated {
                ctx.notify(STRING, "pfadd", &args[1]);
            }
            int(i64::from(updated))
        }
        Err(why) => error(why),
    }
}

/// `PFCOUNT key [key ...]`: the estimate for one key, cached in its value; for several,
/// the estimate of their union. Runs alone.
pub fn pfcount(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    if args.len() > 2 {
        let max = match union(ctx, &args[1..])? {
            Ok((max, _)) => max,
            Err(why) => return error(why),
        };
        return int(hll::estimate(&max) as i64);
    }
    let key = &args[1];
    let mut found = false;
    let outcome = ctx.db().update(key, Kind::String, |entry| {
        found = entry.is_some();
        let Some(entry) = entry else {
            return (Change::Keep, Ok(0));
        };
        if let Some(why) = refusal(entry) {
            return (Change::Keep, Err(why));
        }
        if let Some(card) = hll::cached(&entry.value) {
            return (Change::Keep, Ok(card));
        }
        let Some(registers) = hll::registers(&entry.value) else {
            return (Change::Keep, Err(hll::CORRUPTED));
        };
        let card = hll::estimate(&registers);
        let mut value = entry.value.clone();
        hll::set_cached(&mut value, card);
        (
            Change::Put(Entry::raw_string(value, entry.deadline)),
            Ok(card),
        )
    })?;
    ctx.hit(key, found);
    match outcome {
        Ok(card) => int(card as i64),
        Err(why) => error(why),
    }
}

/// The largest value of each register over the HyperLogLogs at `keys` (missing ones
/// count as empty), and whether any of them is dense.
fn union(ctx: &Ctx, keys: &[Vec<u8>]) -> engine::Result<Result<(Vec<u8>, bool), &'static str>> {
    let mut max = vec![0u8; hll::REGISTERS];
    let mut dense = false;
    for key in keys {
        let Some(entry) = ctx.read_of(key, Kind::String)? else {
            continue;
        };
        if let Some(why) = refusal(&entry) {
            return Ok(Err(why));
        }
        dense |= hll::is_dense(&entry.value);
        let Some(registers) = hll::registers(&entry.value) else {
            return Ok(Err(hll::CORRUPTED));
        };
        for (m, r) in max.iter_mut().zip(registers) {
            *m = (*m).max(r);
        }
    }
    Ok(Ok((max, dense)))
}

/// `PFMERGE destkey [sourcekey ...]`: `destkey` (itself a source) becomes the union,
/// dense if any source was. Runs alone.
pub fn pfmerge(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let (max, dense) = match union(ctx, &args[1..])? {
        Ok(merged) => merged,
        Err(why) => return error(why),
    };
    let merged = ctx.db().update(&args[1], Kind::String, |found| {
        let mut value = found.map_or_else(hll::new, |e| e.value.clone());
        if hll::merge_into(&mut value, &max, dense).is_none() {
            return (Change::Keep, false);
        }
        hll::invalidate(&mut value);
        let deadline = found.and_then(|e| e.deadline);
        (Change::Put(Entry::raw_string(value, deadline)), true)
    })?;
    if !merged {
        return error(hll::CORRUPTED);
    }
    ctx.notify(STRING, "pfadd", &args[1]);
    ok()
}
