//! `bit` for Lua scripts: the LuaBitOp library Redis embeds, on 32-bit integers.
//! `tobit`, `tohex`, `bnot`, `band`, `bor`, `bxor`, `lshift`, `rshift`, `arshift`,
//! `rol`, `ror`, `bswap`, as LuaBitOp computes them:
//! - an argument is a number (or a string that is one), taken modulo 2^32 after
//!   rounding to the nearest integer (ties to even), as LuaBitOp's `x + 2^52 + 2^51`
//!   trick takes the low 32 bits of the double;
//! - results are signed 32-bit numbers; shift counts use their low 5 bits;
//! - `tohex(x [, n])`: the low `n` hex digits (8 by default, at most 8), upper case
//!   for a negative `n`.

use mlua::{Lua, MultiValue, Table, Value};

use crate::scripting::located;

type Unary = fn(u32) -> u32;
type Binary = fn(u32, u32) -> u32;

/// The `bit` table.
pub fn library(lua: &Lua) -> mlua::Result<Table> {
    let bit = lua.create_table()?;
    let unary: [(&str, Unary); 3] = [
        ("tobit", |b| b),
        ("bnot", |b| !b),
        ("bswap", u32::swap_bytes),
    ];
    for (name, op) in unary {
        bit.raw_set(
            name,
            lua.create_function(move |lua, args: MultiValue| {
                Ok(signed(op(argument(lua, &args, 0, name)?)))
            })?,
        )?;
    }
    let folds: [(&str, Binary); 3] = [
        ("band", |a, b| a & b),
        ("bor", |a, b| a | b),
        ("bxor", |a, b| a ^ b),
    ];
    for (name, op) in folds {
        bit.raw_set(
            name,
            lua.create_function(move |lua, args: MultiValue| {
                let mut acc = argument(lua, &args, 0, name)?;
                for i in 1..args.len() {
                    acc = op(acc, argument(lua, &args, i, name)?);
                }
                Ok(signed(acc))
            })?,
        )?;
    }
    let shifts: [(&str, Binary); 5] = [
        ("lshift", |b, n| b << n),
        ("rshift", |b, n| b >> n),
        ("arshift", |b, n| ((b as i32) >> n) as u32),
        ("rol", u32::rotate_left),
        ("ror", u32::rotate_right),
    ];
    for (name, op) in shifts {
        bit.raw_set(
            name,
            lua.create_function(move |lua, args: MultiValue| {
                let b = argument(lua, &args, 0, name)?;
                let n = argument(lua, &args, 1, name)? & 31;
                Ok(signed(op(b, n)))
            })?,
        )?;
    }
    bit.raw_set(
        "tohex",
        lua.create_function(|lua, args: MultiValue| {
            let mut b = argument(lua, &args, 0, "tohex")?;
            let n = match args.get(1) {
                None => 8,
                Some(_) => argument(lua, &args, 1, "tohex")? as i32,
            };
            let digits: &[u8; 16] = if n < 0 {
                b"0123456789ABCDEF"
            } else {
                b"0123456789abcdef"
            };
            let n = n.unsigned_abs().min(8) as usize;
            let mut out = vec![0u8; n];
            for slot in out.iter_mut().rev() {
                *slot = digits[(b & 15) as usize];
                b >>= 4;
            }
            lua.create_string(out)
        })?,
    )?;
    Ok(bit)
}

fn signed(b: u32) -> f64 {
    f64::from(b as i32)
}

/// Argument `i` (from 0) of `function`, as LuaBitOp's `barg` reads it.
fn argument(lua: &Lua, args: &MultiValue, i: usize, function: &str) -> mlua::Result<u32> {
    let number = match args.get(i) {
        Some(Value::Integer(n)) => Some(*n as f64),
        Some(Value::Number(x)) => Some(*x),
        Some(v @ Value::String(_)) => lua.coerce_number(v.clone())?,
        _ => None,
    };
    let Some(x) = number else {
        let got = args.get(i).map_or("no value", Value::type_name);
        return Err(located(
            lua,
            &format!(
                "bad argument #{} to '{function}' (number expected, got {got})",
                i + 1
            ),
        ));
    };
    Ok(to_bits(x))
}

/// `x` rounded to an integer (ties to even) modulo 2^32: the low word of `x + 2^52 +
/// 2^51`, whose unit in the last place is 1.
fn to_bits(x: f64) -> u32 {
    (x + 6_755_399_441_055_744.0).to_bits() as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_wrap_and_round_as_luabitop_takes_them() {
        assert_eq!(to_bits(0.0), 0);
        assert_eq!(to_bits(-1.0), u32::MAX);
        assert_eq!(to_bits(4294967296.0 + 5.0), 5);
        assert_eq!(to_bits(2.5), 2);
        assert_eq!(to_bits(3.5), 4);
        assert_eq!(to_bits(-2147483649.0), 2147483647);
    }

    fn eval(lua: &Lua, code: &str) -> Value {
        lua.load(code).eval().unwrap()
    }

    #[test]
    fn operations_match_luabitop() {
        let lua = Lua::new();
        lua.globals().set("bit", library(&lua).unwrap()).unwrap();
        let number = |code: &str| match eval(&lua, code) {
            Value::Number(x) => x,
            Value::Integer(n) => n as f64,
            other => panic!("{code}: {other:?}"),
        };
        let text = |code: &str| match eval(&lua, code) {
            Value::String(s) => s.to_str().unwrap().to_string(),
            other => panic!("{code}: {other:?}"),
        };
        // LuaBitOp's own test values.
        assert_eq!(number("return bit.tobit(0xffffffff)"), -1.0);
        assert_eq!(number("return bit.tobit(0xffffffff + 1)"), 0.0);
        assert_eq!(number("return bit.tobit(2^40 + 1234)"), 1234.0);
        assert_eq!(number("return bit.bnot(0)"), -1.0);
        assert_eq!(number("return bit.bor(1, 2, 4, 8)"), 15.0);
        assert_eq!(number("return bit.band(0x12345678, 0xff)"), 120.0);
        assert_eq!(
            number("return bit.bxor(0xa5a5f0f0, 0xaa55ff00)"),
            267_390_960.0
        );
        assert_eq!(number("return bit.lshift(1, 0)"), 1.0);
        assert_eq!(number("return bit.lshift(1, 8)"), 256.0);
        assert_eq!(number("return bit.lshift(1, 40)"), 256.0);
        assert_eq!(number("return bit.rshift(256, 8)"), 1.0);
        assert_eq!(number("return bit.rshift(-256, 8)"), 16_777_215.0);
        assert_eq!(number("return bit.arshift(-256, 8)"), -1.0);
        assert_eq!(number("return bit.lshift(0x87654321, 12)"), 1_412_567_040.0);
        assert_eq!(number("return bit.rol(0x12345678, 12)"), 1_164_411_171.0);
        assert_eq!(number("return bit.ror(0x12345678, 12)"), 1_736_516_421.0);
        assert_eq!(number("return bit.bswap(0x12345678)"), 2_018_915_346.0);
        assert_eq!(number("return bit.band('255', 15)"), 15.0);
        assert_eq!(text("return bit.tohex(1)"), "00000001");
        assert_eq!(text("return bit.tohex(-1)"), "ffffffff");
        assert_eq!(text("return bit.tohex(0xffffffff)"), "ffffffff");
        assert_eq!(text("return bit.tohex(-1, -4)"), "FFFF");
        assert_eq!(text("return bit.tohex(0x21, 4)"), "0021");
        assert_eq!(text("return bit.tohex(0x87654321, 12)"), "87654321");
        let refused = lua.load("return bit.band('x', 1)").exec().unwrap_err();
        assert!(
            refused
                .to_string()
                .contains("bad argument #1 to 'band' (number expected, got string)"),
            "{refused}"
        );
    }
}
