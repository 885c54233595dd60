//! `cmsgpack` for Lua scripts: `pack(...)`, `unpack(s)`, `unpack_one(s [, offset])`
//! and `unpack_limit(s, limit [, offset])`, writing and reading MessagePack as the
//! lua-cmsgpack library Redis embeds does:
//! - numbers that are whole (and fit an i64) as the smallest integer form, others as
//!   a 32-bit float if that holds them exactly, else a 64-bit one;
//! - strings as fixstr / str8 / str16 / str32; nil and anything else Lua-only
//!   (functions, userdata) as nil;
//! - a table whose keys are exactly 1..n is an array, any other a map (its pairs in
//!   Lua's `next` order); tables nested 16 deep are written as nil, so a table that
//!   holds itself packs to a bounded size.
//!
//! Reading takes the forms those write (and int8..int64, uint8..uint64, float32),
//! refusing others ("Bad data format in input.") and truncated input ("Missing bytes
//! in input."); nesting past [`MAX_DECODE_DEPTH`] is refused too, where Redis would
//! recurse as deep as the input says.

use mlua::{Lua, MultiValue, Table, Value};

use crate::scripting::located;

/// The nesting at which tables are written as nil, as lua-cmsgpack's.
const MAX_NESTING: usize = 16;
/// The deepest nesting read.
const MAX_DECODE_DEPTH: usize = 1000;

/// The `cmsgpack` table.
pub fn library(lua: &Lua) -> mlua::Result<Table> {
    let cmsgpack = lua.create_table()?;
    cmsgpack.raw_set(
        "pack",
        lua.create_function(|lua, args: MultiValue| {
            if args.is_empty() {
                return Err(located(
                    lua,
                    "bad argument #0 to 'pack' (MessagePack pack needs input.)",
                ));
            }
            let mut out = Vec::new();
            for value in &args {
                encode(value, 0, &mut out)?;
            }
            lua.create_string(out)
        })?,
    )?;
    cmsgpack.raw_set(
        "unpack",
        lua.create_function(|lua, args: MultiValue| unpack(lua, &args, 0, 0, "unpack"))?,
    )?;
    cmsgpack.raw_set(
        "unpack_one",
        lua.create_function(|lua, args: MultiValue| {
            let offset = optional_integer(lua, &args, 1, "unpack_one")?;
            unpack(lua, &args, 1, offset, "unpack_one")
        })?,
    )?;
    cmsgpack.raw_set(
        "unpack_limit",
        lua.create_function(|lua, args: MultiValue| {
            let limit = match args.get(1) {
                Some(_) => optional_integer(lua, &args, 1, "unpack_limit")?,
                None => {
                    return Err(located(
                        lua,
                        "bad argument #2 to 'unpack_limit' (number expected, got no value)",
                    ))
                }
            };
            let offset = optional_integer(lua, &args, 2, "unpack_limit")?;
            unpack(lua, &args, limit, offset, "unpack_limit")
        })?,
    )?;
    Ok(cmsgpack)
}

/// Argument `i` (from 0) as an integer, 0 if absent or nil.
fn optional_integer(lua: &Lua, args: &MultiValue, i: usize, function: &str) -> mlua::Result<i64> {
    match args.get(i) {
        None | Some(Value::Nil) => Ok(0),
        Some(v) => match lua.coerce_number(v.clone())? {
            Some(x) => Ok(x as i64),
            None => Err(located(
                lua,
                &format!(
                    "bad argument #{} to '{function}' (number expected, got {})",
                    i + 1,
                    v.type_name()
                ),
            )),
        },
    }
}

fn encode(value: &Value, level: usize, out: &mut Vec<u8>) -> mlua::Result<()> {
    match value {
        Value::String(s) => encode_bytes(&s.as_bytes(), out),
        Value::Boolean(b) => out.push(if *b { 0xc3 } else { 0xc2 }),
        Value::Integer(n) => encode_integer(*n, out),
        Value::Number(x) => {
            // Whole and within i64 (2^63 itself is not: C's conversion overflows).
            if *x >= -9_223_372_036_854_775_808.0
                && *x < 9_223_372_036_854_775_808.0
                && x.fract() == 0.0
            {
                encode_integer(*x as i64, out);
            } else if f64::from(*x as f32) == *x {
                out.push(0xca);
                out.extend_from_slice(&(*x as f32).to_be_bytes());
            } else {
                out.push(0xcb);
                out.extend_from_slice(&x.to_be_bytes());
            }
        }
        Value::Table(t) if level < MAX_NESTING => match array_length(t)? {
            Some(len) => {
                encode_header(len as u64, 0x90, 0xdc, out);
                for i in 1..=len {
                    encode(&t.raw_get::<Value>(i)?, level + 1, out)?;
                }
            }
            None => {
                // Counted, then written, pair by pair: mlua holds each value it hands
                // out in a slot of a Lua stack, too few for all of a large table's.
                let len = t.pairs::<Value, Value>().count();
                encode_header(len as u64, 0x80, 0xde, out);
                for pair in t.pairs::<Value, Value>() {
                    let (k, v) = pair?;
                    encode(&k, level + 1, out)?;
                    encode(&v, level + 1, out)?;
                }
            }
        },
        _ => out.push(0xc0),
    }
    Ok(())
}

/// `Some(n)` if the table's keys are exactly 1..=n.
fn array_length(t: &Table) -> mlua::Result<Option<usize>> {
    let (mut count, mut max) = (0usize, 0i64);
    for pair in t.pairs::<Value, Value>() {
        let key = match pair?.0 {
            Value::Integer(n) => n as f64,
            Value::Number(x) => x,
            _ => return Ok(None),
        };
        // lua-cmsgpack takes a key as an index if it is an int's value.
        if key <= 0.0 || key > f64::from(i32::MAX) || key.fract() != 0.0 {
            return Ok(None);
        }
        max = max.max(key as i64);
        count += 1;
    }
    Ok((max as usize == count).then_some(count))
}

fn encode_bytes(s: &[u8], out: &mut Vec<u8>) {
    let len = s.len();
    if len < 32 {
        out.push(0xa0 | len as u8);
    } else if len <= 0xff {
        out.extend_from_slice(&[0xd9, len as u8]);
    } else if len <= 0xffff {
        out.push(0xda);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(0xdb);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    }
    out.extend_from_slice(s);
}

/// An array's or a map's header: the fix form under 16, else 16 or 32 bits.
fn encode_header(n: u64, fix: u8, wide: u8, out: &mut Vec<u8>) {
    if n <= 15 {
        out.push(fix | n as u8);
    } else if n <= 0xffff {
        out.push(wide);
        out.extend_from_slice(&(n as u16).to_be_bytes());
    } else {
        out.push(wide + 1);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    }
}

fn encode_integer(n: i64, out: &mut Vec<u8>) {
    match n {
        0..=127 => out.push(n as u8),
        128..=0xff => out.extend_from_slice(&[0xcc, n as u8]),
        0x100..=0xffff => {
            out.push(0xcd);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        0x1_0000..=0xffff_ffff => {
            out.push(0xce);
            out.extend_from_slice(&(n as u32).to_be_bytes());
        }
        0x1_0000_0000.. => {
            out.push(0xcf);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
        -32..=-1 => out.push(n as u8),
        -128..=-33 => out.extend_from_slice(&[0xd0, n as u8]),
        -32768..=-129 => {
            out.push(0xd1);
            out.extend_from_slice(&(n as i16).to_be_bytes());
        }
        -2_147_483_648..=-32769 => {
            out.push(0xd2);
            out.extend_from_slice(&(n as i32).to_be_bytes());
        }
        _ => {
            out.push(0xd3);
            out.extend_from_slice(&n.to_be_bytes());
        }
    }
}

/// Decodes up to `limit` values from `offset` on (all of them if both are 0, and then
/// without the next offset in front, as lua-cmsgpack's `unpack`).
fn unpack(
    lua: &Lua,
    args: &MultiValue,
    limit: i64,
    offset: i64,
    function: &str,
) -> mlua::Result<MultiValue> {
    let text = match args.front() {
        Some(v @ (Value::String(_) | Value::Integer(_) | Value::Number(_))) => lua
            .coerce_string(v.clone())?
            .expect("strings and numbers coerce"),
        other => {
            let got = other.map_or("no value", Value::type_name);
            return Err(located(
                lua,
                &format!("bad argument #1 to '{function}' (string expected, got {got})"),
            ));
        }
    };
    let bytes = text.as_bytes();
    if offset < 0 || limit < 0 {
        return Err(located(
            lua,
            &format!(
                "Invalid request to unpack with offset of {offset} and limit of {}.",
                bytes.len()
            ),
        ));
    }
    if offset as u64 > bytes.len() as u64 {
        return Err(located(
            lua,
            &format!(
                "Start offset {offset} greater than input length {}.",
                bytes.len()
            ),
        ));
    }
    let decode_all = limit == 0 && offset == 0;
    let limit = if decode_all { i64::MAX } else { limit };
    let mut reader = Reader {
        bytes: &bytes,
        at: offset as usize,
    };
    let mut values = Vec::new();
    while reader.at < bytes.len() && (values.len() as i64) < limit {
        match reader.value(lua, 0)? {
            Ok(value) => values.push(value),
            Err(why) => return Err(located(lua, why)),
        }
    }
    if !decode_all {
        let next = if reader.at == bytes.len() {
            -1.0
        } else {
            reader.at as f64
        };
        values.insert(0, Value::Number(next));
    }
    Ok(MultiValue::from_iter(values))
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

const MISSING: &str = "Missing bytes in input.";
const BAD_FORMAT: &str = "Bad data format in input.";

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], &'static str> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        let end = end.ok_or(MISSING)?;
        let taken = &self.bytes[self.at..end];
        self.at = end;
        Ok(taken)
    }

    fn unsigned(&mut self, n: usize) -> Result<u64, &'static str> {
        Ok(self
            .take(n)?
            .iter()
            .fold(0u64, |acc, &b| acc << 8 | u64::from(b)))
    }

    /// The next value: the outer error is Lua's (out of memory), the inner the
    /// input's.
    fn value(&mut self, lua: &Lua, depth: usize) -> mlua::Result<Result<Value, &'static str>> {
        if depth > MAX_DECODE_DEPTH {
            return Ok(Err("cmsgpack: input nested too deep"));
        }
        let tag = match self.take(1) {
            Ok(t) => t[0],
            Err(e) => return Ok(Err(e)),
        };
        let number = |x: f64| Ok(Ok(Value::Number(x)));
        macro_rules! read {
            ($e:expr) => {
                match $e {
                    Ok(v) => v,
                    Err(e) => return Ok(Err(e)),
                }
            };
        }
        match tag {
            0x00..=0x7f => number(f64::from(tag)),
            0xe0..=0xff => number(f64::from(tag as i8)),
            0xcc => number(read!(self.unsigned(1)) as f64),
            0xcd => number(read!(self.unsigned(2)) as f64),
            0xce => number(read!(self.unsigned(4)) as f64),
            0xcf => number(read!(self.unsigned(8)) as f64),
            0xd0 => number(f64::from(read!(self.unsigned(1)) as u8 as i8)),
            0xd1 => number(f64::from(read!(self.unsigned(2)) as u16 as i16)),
            0xd2 => number(f64::from(read!(self.unsigned(4)) as u32 as i32)),
            0xd3 => number(read!(self.unsigned(8)) as i64 as f64),
            0xca => number(f64::from(f32::from_bits(read!(self.unsigned(4)) as u32))),
            0xcb => number(f64::from_bits(read!(self.unsigned(8)))),
            0xc0 => Ok(Ok(Value::Nil)),
            0xc2 => Ok(Ok(Value::Boolean(false))),
            0xc3 => Ok(Ok(Value::Boolean(true))),
            0xa0..=0xbf => self.string(lua, usize::from(tag & 0x1f)),
            0xd9 => {
                let len = read!(self.unsigned(1));
                self.string(lua, len as usize)
            }
            0xda => {
                let len = read!(self.unsigned(2));
                self.string(lua, len as usize)
            }
            0xdb => {
                let len = read!(self.unsigned(4));
                self.string(lua, len as usize)
            }
            0x90..=0x9f => self.array(lua, u64::from(tag & 0xf), depth),
            0xdc => {
                let len = read!(self.unsigned(2));
                self.array(lua, len, depth)
            }
            0xdd => {
                let len = read!(self.unsigned(4));
                self.array(lua, len, depth)
            }
            0x80..=0x8f => self.map(lua, u64::from(tag & 0xf), depth),
            0xde => {
                let len = read!(self.unsigned(2));
                self.map(lua, len, depth)
            }
            0xdf => {
                let len = read!(self.unsigned(4));
                self.map(lua, len, depth)
            }
            _ => Ok(Err(BAD_FORMAT)),
        }
    }

    fn string(&mut self, lua: &Lua, len: usize) -> mlua::Result<Result<Value, &'static str>> {
        match self.take(len) {
            Ok(bytes) => Ok(Ok(Value::String(lua.create_string(bytes)?))),
            Err(e) => Ok(Err(e)),
        }
    }

    fn array(
        &mut self,
        lua: &Lua,
        len: u64,
        depth: usize,
    ) -> mlua::Result<Result<Value, &'static str>> {
        // Every element takes a byte at least: a length past what is left is refused
        // as it runs out, without first allocating for it.
        let capacity = (len as usize).min(self.bytes.len() - self.at);
        let t = lua.create_table_with_capacity(capacity, 0)?;
        for i in 1..=len {
            match self.value(lua, depth + 1)? {
                Ok(v) => t.raw_set(i, v)?,
                Err(e) => return Ok(Err(e)),
            }
        }
        Ok(Ok(Value::Table(t)))
    }

    fn map(
        &mut self,
        lua: &Lua,
        len: u64,
        depth: usize,
    ) -> mlua::Result<Result<Value, &'static str>> {
        let t = lua.create_table()?;
        for _ in 0..len {
            let key = match self.value(lua, depth + 1)? {
                Ok(k) => k,
                Err(e) => return Ok(Err(e)),
            };
            let value = match self.value(lua, depth + 1)? {
                Ok(v) => v,
                Err(e) => return Ok(Err(e)),
            };
            // Lua refuses a nil (or NaN) key; lua-cmsgpack's settable would raise.
            if matches!(key, Value::Nil) || matches!(key, Value::Number(x) if x.is_nan()) {
                return Ok(Err(BAD_FORMAT));
            }
            t.raw_set(key, value)?;
        }
        Ok(Ok(Value::Table(t)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(lua: &Lua, code: &str) -> String {
        let packed: mlua::LuaString = lua.load(code).eval().unwrap();
        packed
            .as_bytes()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    fn lua() -> Lua {
        let lua = Lua::new();
        lua.globals()
            .set("cmsgpack", library(&lua).unwrap())
            .unwrap();
        lua
    }

    #[test]
    fn packs_as_lua_cmsgpack_does() {
        let lua = lua();
        // Redis's own test values.
        assert_eq!(hex(&lua, "return cmsgpack.pack(0.1)"), "cb3fb999999999999a");
        assert_eq!(
            hex(&lua, "return cmsgpack.pack(-1099511627776)"),
            "d3ffffff0000000000"
        );
        assert_eq!(
            hex(&lua, "return cmsgpack.pack(1, 200, 300, 70000, 2^40)"),
            "01ccc8cd012cce00011170cf0000010000000000"
        );
        assert_eq!(
            hex(&lua, "return cmsgpack.pack(-1, -100, -1000, -100000)"),
            "ffd09cd1fc18d2fffe7960"
        );
        assert_eq!(
            hex(&lua, "return cmsgpack.pack(0.5, true, false, nil)"),
            "ca3f000000c3c2c0"
        );
        assert_eq!(
            hex(&lua, "return cmsgpack.pack({1, 2}, {}, 'ab')"),
            "92010290a26162"
        );
        assert_eq!(hex(&lua, "return cmsgpack.pack({[2] = 1})"), "810201");
        assert_eq!(
            hex(&lua, "return cmsgpack.pack(string.rep('x', 40))").len(),
            2 * (2 + 40)
        );
        // A table holding itself is written 16 deep, then nil.
        assert_eq!(
            hex(&lua, "local t = {} t[1] = t return cmsgpack.pack(t)"),
            "91".repeat(16) + "c0"
        );
    }

    #[test]
    fn unpacks_what_it_packs_and_refuses_bad_input() {
        let lua = lua();
        let ok: bool = lua
            .load(
                "local big, map = {}, {} for i = 1, 70000 do big[i] = i map['k' .. i] = i end
                 local t = {s = string.rep('x', 70000), n = -3147483648, d = 0.1, a = {1, 2, 3}, big = big, map = map, m = {x = {y = true}}}
                 local u = cmsgpack.unpack(cmsgpack.pack(t))
                 local packed = cmsgpack.pack('a', 'b', 3)
                 local o1, a = cmsgpack.unpack_one(packed)
                 local o2, b, c = cmsgpack.unpack_limit(packed, 2, o1)
                 local x, y, z = cmsgpack.unpack(packed)
                 return u.s == t.s and u.n == t.n and u.d == t.d and u.a[3] == 3 and #u.big == 70000
                    and u.m.x.y == true and u.map.k70000 == 70000 and o1 == 2 and a == 'a' and b == 'b' and c == 3 and o2 == -1
                    and x == 'a' and z == 3",
            )
            .eval()
            .unwrap();
        assert!(ok);
        for (input, refusal) in [
            ("'\\205'", "Missing bytes in input."),
            ("'\\221\\001'", "Missing bytes in input."),
            ("'\\193'", "Bad data format in input."),
            ("'\\221\\255\\255\\255\\255'", "Missing bytes in input."),
            ("string.rep('\\145', 2000) .. '\\001'", "nested too deep"),
        ] {
            let e = lua
                .load(format!("return cmsgpack.unpack({input})"))
                .exec()
                .unwrap_err()
                .to_string();
            assert!(e.contains(refusal), "{input}: {e}");
        }
        let e = lua
            .load("return cmsgpack.unpack_one('\\001', 5)")
            .exec()
            .unwrap_err();
        assert!(
            e.to_string()
                .contains("Start offset 5 greater than input length 1."),
            "{e}"
        );
    }
}
