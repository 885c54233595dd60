//! GEO: GEOADD GEODIST GEOHASH GEOPOS GEORADIUS GEORADIUSBYMEMBER (and their _RO
//! forms) GEOSEARCH GEOSEARCHSTORE. As in Redis, a position is a sorted-set member
//! scored by its 52-bit geohash (`geohash.rs`), so the sorted-set commands work on
//! GEO keys and the other way round.

use std::collections::HashSet;

use resp::Frame;

use super::sorted_sets::{self, answer_zset, pack, parse_score, NOT_A_FLOAT};
use super::{collections, error, int, parse_integer, reply, upper, Ctx, Reply};
use super::{NOT_AN_INTEGER, SYNTAX_ERROR, WRONG_TYPE};
use crate::entry::Kind;
use crate::geohash::{self, Search, Shape};
use crate::keyspace_events::ZSET;
use crate::long_double::LongDouble;
use crate::packed::score_order;
use crate::partial_sort;
use crate::score_nodes::ZsetReader;

const NOT_A_MEMBER: &str = "ERR could not decode requested zset member";

/// A longitude and latitude from two arguments, in the range a geohash holds.
fn coordinates(lon: &[u8], lat: &[u8]) -> Result<(f64, f64), String> {
    let (Some(lon), Some(lat)) = (parse_score(lon), parse_score(lat)) else {
        return Err(NOT_A_FLOAT.to_string());
    };
    let valid = (geohash::LONGITUDE_MIN..=geohash::LONGITUDE_MAX).contains(&lon)
        && (geohash::LATITUDE_MIN..=geohash::LATITUDE_MAX).contains(&lat);
    if !valid {
        return Err(format!(
            "ERR invalid longitude,latitude pair {lon:.6},{lat:.6}"
        ));
    }
    Ok((lon, lat))
}

/// Metres per unit.
fn unit(arg: &[u8]) -> Result<f64, &'static str> {
    match upper(arg).as_slice() {
        b"M" => Ok(1.0),
        b"KM" => Ok(1000.0),
        b"FT" => Ok(0.3048),
        b"MI" => Ok(1609.34),
        _ => Err("ERR unsupported unit provided. please use M, KM, FT, MI"),
    }
}

/// A distance as Redis writes one: rounded to 4 decimals (ties to even), always 4.
fn distance_frame(d: f64) -> Frame {
    let units = (d * 10_000.0).round_ties_even() as i64;
    let sign = if units < 0 { "-" } else { "" };
    let units = units.unsigned_abs();
    Frame::bulk(format!("{sign}{}.{:04}", units / 10_000, units % 10_000))
}

/// A coordinate as Redis writes one: a long double with 17 decimals, trailing zeros
/// trimmed.
fn coordinate_frame(x: f64) -> Frame {
    Frame::DoubleText(LongDouble::from_f64(x).to_human_string())
}

/// `GEOADD key [NX | XX] [CH] longitude latitude member [...]`: ZADD with each
/// position's geohash as its score.
pub fn geoadd(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let options = args[2..]
        .iter()
        .take_while(|a| matches!(upper(a).as_slice(), b"NX" | b"XX" | b"CH"))
        .count();
    let (options, positions) = args[2..].split_at(options);
    let has = |o: &[u8]| options.iter().any(|a| upper(a) == o);
    if !positions.len().is_multiple_of(3) || (has(b"NX") && has(b"XX")) {
        return error(SYNTAX_ERROR);
    }
    let mut zadd = Vec::with_capacity(2 + options.len() + positions.len() / 3 * 2);
    zadd.push(b"zadd".to_vec());
    zadd.push(args[1].clone());
    zadd.extend(options.iter().cloned());
    for position in positions.chunks(3) {
        let (lon, lat) = match coordinates(&position[0], &position[1]) {
            Ok(c) => c,
            Err(e) => return error(&e),
        };
        // Exact: below 2^53.
        let score = geohash::score_of(lon, lat) as u64;
        zadd.push(score.to_string().into_bytes());
        zadd.push(position[2].clone());
    }
    sorted_sets::zadd(ctx, &zadd)
}

/// `GEODIST key member1 member2 [M | KM | FT | MI]`.
pub fn geodist(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let to_meters = match args.len() {
        4 => 1.0,
        5 => match unit(&args[4]) {
            Ok(u) => u,
            Err(e) => return error(e),
        },
        _ => return error(SYNTAX_ERROR),
    };
    answer_zset(ctx, &args[1], |z| {
        let Some(z) = z else {
            return Ok(Frame::Null);
        };
        let (Some(a), Some(b)) = (z.score(&args[2])?, z.score(&args[3])?) else {
            return Ok(Frame::Null);
        };
        let ((lon1, lat1), (lon2, lat2)) = (geohash::position_of(a), geohash::position_of(b));
        Ok(distance_frame(
            geohash::distance(lon1, lat1, lon2, lat2) / to_meters,
        ))
    })
}

/// The scores of `members` in the sorted set `z` (none if missing), each made a reply
/// by `frame`.
fn each_score(
    z: Option<&ZsetReader>,
    members: &[Vec<u8>],
    frame: impl Fn(Option<f64>) -> Frame,
) -> engine::Result<Frame> {
    let mut frames = Vec::with_capacity(members.len());
    for member in members {
        let score = match z {
            Some(z) => z.score(member)?,
            None => None,
        };
        frames.push(frame(score));
    }
    Ok(Frame::Array(frames))
}

/// `GEOHASH key member [...]`: standard 11-character geohashes.
pub fn geohash(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    answer_zset(ctx, &args[1], |z| {
        each_score(z, &args[2..], |score| {
            score.map_or(Frame::Null, |s| Frame::bulk(geohash::text_of(s)))
        })
    })
}

/// `GEOPOS key member [...]`.
pub fn geopos(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    answer_zset(ctx, &args[1], |z| {
        each_score(z, &args[2..], |score| {
            score.map_or(Frame::NullArray, |s| {
                let (lon, lat) = geohash::position_of(s);
                Frame::Array(vec![coordinate_frame(lon), coordinate_frame(lat)])
            })
        })
    })
}

/// Which of the search commands, and so which arguments it takes.
#[derive(Clone, Copy, PartialEq)]
enum Form {
    /// GEORADIUS: key lon lat radius unit; `store` whether STORE is allowed.
    AroundPoint { store: bool },
    /// GEORADIUSBYMEMBER: key member radius unit.
    AroundMember { store: bool },
    /// GEOSEARCH key, or GEOSEARCHSTORE destination key: FROM... and BY... options.
    Search { store: bool },
}

#[derive(Clone, Copy, PartialEq)]
enum Order {
    None,
    Ascending,
    Descending,
}

/// A search's options.
struct Query {
    /// `None` when the source is missing and the centre is one of its members.
    search: Option<Search>,
    with_distance: bool,
    with_hash: bool,
    with_coordinates: bool,
    order: Order,
    /// 0: no limit.
    count: usize,
    /// Stop scanning at `count` matches instead of returning the nearest.
    any: bool,
    store: Option<Vec<u8>>,
    store_distance: bool,
}

/// One match.
struct Found {
    member: Vec<u8>,
    score: f64,
    distance: f64,
    position: (f64, f64),
}

/// Why a search is not answered: its arguments (with the error reply to give), or the
/// store failing to read the source.
enum Refused {
    Reply(String),
    Engine(engine::Error),
}

impl From<String> for Refused {
    fn from(e: String) -> Self {
        Refused::Reply(e)
    }
}

impl From<&str> for Refused {
    fn from(e: &str) -> Self {
        Refused::Reply(e.to_string())
    }
}

impl From<engine::Error> for Refused {
    fn from(e: engine::Error) -> Self {
        Refused::Engine(e)
    }
}

/// What a search's arguments ask, with `zset` the source (for a member centre).
fn parse_query(args: &[Vec<u8>], form: Form, zset: Option<&ZsetReader>) -> Result<Query, Refused> {
    let member_position = |member: &[u8]| -> Result<(f64, f64), Refused> {
        let score = match zset {
            Some(z) => z.score(member)?,
            None => None,
        };
        score
            .map(geohash::position_of)
            .ok_or_else(|| NOT_A_MEMBER.into())
    };
    let radius = |value: &[u8], unit_arg: &[u8]| -> Result<(Shape, f64), String> {
        let radius = parse_score(value).ok_or("ERR need numeric radius")?;
        if radius < 0.0 {
            return Err("ERR radius cannot be negative".into());
        }
        Ok((Shape::Circle { radius }, unit(unit_arg)?))
    };
    let (mut centre, mut shape, options) = match form {
        Form::AroundPoint { .. } => {
            let centre = coordinates(&args[2], &args[3])?;
            (Some(centre), Some(radius(&args[4], &args[5])?), &args[6..])
        }
        // With no source there is nothing to search around: the options are still read.
        Form::AroundMember { .. } if zset.is_none() => (None, None, &args[5..]),
        Form::AroundMember { .. } => {
            let centre = member_position(&args[2])?;
            (Some(centre), Some(radius(&args[3], &args[4])?), &args[5..])
        }
        Form::Search { store: false } => (None, None, &args[2..]),
        Form::Search { store: true } => (None, None, &args[3..]),
    };
    let searching = matches!(form, Form::Search { .. });
    let store_allowed = matches!(
        form,
        Form::AroundPoint { store: true } | Form::AroundMember { store: true }
    );
    let mut q = Query {
        search: None,
        with_distance: false,
        with_hash: false,
        with_coordinates: false,
        order: Order::None,
        count: 0,
        any: false,
        store: (form == Form::Search { store: true }).then(|| args[1].clone()),
        store_distance: false,
    };
    let (mut from_member, mut from_point, mut by_radius, mut by_box) = (false, false, false, false);
    let mut i = 0;
    while i < options.len() {
        let left = options.len() - i - 1;
        match upper(&options[i]).as_slice() {
            b"WITHDIST" => q.with_distance = true,
            b"WITHHASH" => q.with_hash = true,
            b"WITHCOORD" => q.with_coordinates = true,
            b"ANY" => q.any = true,
            b"ASC" => q.order = Order::Ascending,
            b"DESC" => q.order = Order::Descending,
            b"COUNT" if left >= 1 => {
                let count = parse_integer(&options[i + 1]).ok_or(NOT_AN_INTEGER)?;
                if count <= 0 {
                    return Err("ERR COUNT must be > 0".into());
                }
                q.count = usize::try_from(count).unwrap_or(usize::MAX);
                i += 1;
            }
            word @ (b"STORE" | b"STOREDIST") if left >= 1 && store_allowed => {
                q.store = Some(options[i + 1].clone());
                q.store_distance = word == b"STOREDIST";
                i += 1;
            }
            b"STOREDIST" if form == (Form::Search { store: true }) => q.store_distance = true,
            b"FROMMEMBER" if left >= 1 && searching && !from_point => {
                if zset.is_some() {
                    centre = Some(member_position(&options[i + 1])?);
                }
                from_member = true;
                i += 1;
            }
            b"FROMLONLAT" if left >= 2 && searching && !from_member => {
                centre = Some(coordinates(&options[i + 1], &options[i + 2])?);
                from_point = true;
                i += 2;
            }
            b"BYRADIUS" if left >= 2 && searching && !by_box => {
                shape = Some(radius(&options[i + 1], &options[i + 2])?);
                by_radius = true;
                i += 2;
            }
            b"BYBOX" if left >= 3 && searching && !by_radius => {
                // Both read before either is checked, as Redis does.
                let width = parse_score(&options[i + 1]).ok_or("ERR need numeric width")?;
                let height = parse_score(&options[i + 2]).ok_or("ERR need numeric height")?;
                if width < 0.0 || height < 0.0 {
                    return Err("ERR height or width cannot be negative".into());
                }
                shape = Some((Shape::Box { width, height }, unit(&options[i + 3])?));
                by_box = true;
                i += 3;
            }
            _ => return Err(SYNTAX_ERROR.into()),
        }
        i += 1;
    }
    let name = String::from_utf8_lossy(&args[0]);
    if q.store.is_some() && (q.with_distance || q.with_hash || q.with_coordinates) {
        let what = if form == (Form::Search { store: true }) {
            "GEOSEARCHSTORE"
        } else {
            "STORE option in GEORADIUS"
        };
        return Err(format!(
            "ERR {what} is not compatible with WITHDIST, WITHHASH and WITHCOORD options"
        )
        .into());
    }
    if searching && !(from_member || from_point) {
        return Err(format!(
            "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for {name}"
        )
        .into());
    }
    if searching && !(by_radius || by_box) {
        return Err(
            format!("ERR exactly one of BYRADIUS and BYBOX can be specified for {name}").into(),
        );
    }
    if q.any && q.count == 0 {
        return Err("ERR the ANY argument requires COUNT argument".into());
    }
    if let (Some((lon, lat)), Some((shape, to_meters))) = (centre, shape) {
        q.search = Some(Search {
            lon,
            lat,
            shape,
            to_meters,
        });
    }
    // The nearest `count`, unless ANY asks for the first found.
    if q.count != 0 && q.order == Order::None && !q.any {
        q.order = Order::Ascending;
    }
    Ok(q)
}

/// The members inside the search's shape, box by box in Redis's order, each box in
/// score order; with ANY, no more than `count`. Reads only the boxes' score ranges.
fn matches(q: &Query, search: &Search, zset: &ZsetReader) -> engine::Result<Vec<Found>> {
    let limit = if q.any { q.count } else { 0 };
    let full = |found: &Vec<Found>| limit != 0 && found.len() >= limit;
    let mut found = Vec::new();
    for hash in search.boxes() {
        if full(&found) {
            break;
        }
        let (min, max) = hash.score_range();
        let start = zset.count_below(|s| s < min)?;
        let end = zset.count_below(|s| s < max)?;
        if start >= end {
            continue;
        }
        for (member, score) in zset.by_rank(start..end)? {
            if let Some((distance, position)) = search.measure(score) {
                found.push(Found {
                    member,
                    score,
                    distance,
                    position,
                });
            }
            if full(&found) {
                break;
            }
        }
    }
    Ok(found)
}

fn search(ctx: &mut Ctx, args: &[Vec<u8>], form: Form) -> Reply {
    let source = match form {
        Form::Search { store: true } => &args[2],
        _ => &args[1],
    };
    let mut exists = false;
    let looked = ctx.db().read_zset(source, |z| {
        exists = z.is_some();
        let q = match parse_query(args, form, z) {
            Ok(q) => q,
            Err(Refused::Engine(e)) => return Err(e),
            Err(Refused::Reply(e)) => return Ok(Err(e)),
        };
        let found = match (&q.search, z) {
            (Some(search), Some(z)) => matches(&q, search, z)?,
            _ => Vec::new(),
        };
        Ok(Ok((q, found)))
    })?;
    ctx.hit(source, exists);
    let (q, mut found) = match looked {
        None => return error(WRONG_TYPE),
        Some(Err(e)) => return error(&e),
        Some(Ok(looked)) => looked,
    };
    let store = q.store.as_ref();
    let (Some(search), true) = (&q.search, exists) else {
        // No source: an empty result.
        if let Some(store) = store {
            if ctx.db().remove(store)? {
                ctx.notify(crate::keyspace_events::GENERIC, "del", store);
            }
            return int(0);
        }
        return reply(Frame::Array(Vec::new()));
    };
    let by_distance = |a: &Found, b: &Found| match q.order {
        Order::Descending => b.distance.total_cmp(&a.distance),
        _ => a.distance.total_cmp(&b.distance),
    };
    // Equal distances come out in Redis's order: a full sort is glibc's qsort there,
    // a merge sort (stable); the nearest `count` of more come from its pqsort.
    if q.order != Order::None {
        if q.count != 0 && q.count < found.len() {
            partial_sort::sort_range(&mut found, by_distance, 0..=q.count - 1);
        } else {
            found.sort_by(by_distance);
        }
    }
    if q.count != 0 {
        found.truncate(q.count);
    }
    let to_unit = |d: f64| d / search.to_meters;
    if let Some(store) = store {
        let mut seen = HashSet::with_capacity(found.len());
        let mut scored: Vec<(&[u8], f64)> = found
            .iter()
            .filter(|f| seen.insert(f.member.as_slice()))
            .map(|f| {
                let score = if q.store_distance {
                    to_unit(f.distance)
                } else {
                    f.score
                };
                (f.member.as_slice(), score)
            })
            .collect();
        scored.sort_by(|a, b| score_order(*a, *b));
        let event = if matches!(form, Form::Search { .. }) {
            "geosearchstore"
        } else {
            "georadiusstore"
        };
        collections::store_result(ctx, store, Kind::ZSet, pack(&scored), ZSET, event)?;
        return int(found.len() as i64);
    }
    let extras = [q.with_distance, q.with_hash, q.with_coordinates];
    let rows = found.iter().map(|f| {
        let member = Frame::bulk(f.member.as_slice());
        if !extras.contains(&true) {
            return member;
        }
        let mut row = vec![member];
        if q.with_distance {
            row.push(distance_frame(to_unit(f.distance)));
        }
        if q.with_hash {
            row.push(Frame::Integer(f.score as i64));
        }
        if q.with_coordinates {
            let (lon, lat) = f.position;
            row.push(Frame::Array(vec![
                coordinate_frame(lon),
                coordinate_frame(lat),
            ]));
        }
        Frame::Array(row)
    });
    reply(Frame::Array(rows.collect()))
}

/// `GEORADIUS key longitude latitude radius unit [WITHCOORD] [WITHDIST] [WITHHASH]
/// [COUNT count [ANY]] [ASC | DESC] [STORE key | STOREDIST key]`. Runs alone.
pub fn georadius(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    search(ctx, args, Form::AroundPoint { store: true })
}

pub fn georadius_ro(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    search(ctx, args, Form::AroundPoint { store: false })
}

/// `GEORADIUSBYMEMBER key member radius unit ...`, options as GEORADIUS's. Runs alone.
pub fn georadiusbymember(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    search(ctx, args, Form::AroundMember { store: true })
}

pub fn georadiusbymember_ro(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    search(ctx, args, Form::AroundMember { store: false })
}

/// `GEOSEARCH key FROMMEMBER member | FROMLONLAT lon lat BYRADIUS radius unit |
/// BYBOX width height unit [ASC | DESC] [COUNT count [ANY]] [WITHCOORD] [WITHDIST]
/// [WITHHASH]`.
pub fn geosearch(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    search(ctx, args, Form::Search { store: false })
}

/// `GEOSEARCHSTORE destination source ... [STOREDIST]`. Runs alone.
pub fn geosearchstore(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    search(ctx, args, Form::Search { store: true })
}
