//! `cjson` for Lua scripts: `cjson.encode(value)`, `cjson.decode(text)` and
//! `cjson.null`, as the lua-cjson library Redis embeds writes and reads JSON:
//! - numbers as Lua prints them (`%.14g`: `1e+20`, `1.2345678901234e+14`); NaN and
//!   infinities refused;
//! - strings with `"`, `\`, `/` and control characters escaped (`\/`, `\n`, `\u0000`),
//!   other bytes as they are;
//! - a table whose keys are all positive integers is an array up to its largest key
//!   (holes are `null`), refused if that is over 10 and more than twice its entries;
//!   any other table is an object, its number keys written as strings; an empty
//!   table is `{}`; nesting past 1000 is refused;
//! - `null` decodes to `cjson.null` (a null light userdata), which a reply turns into
//!   a nil.
//!
//! Errors read as lua-cjson's for encoding; decoding errors name what serde_json found
//! (lua-cjson words them differently).
//!
//! Its settings, kept across scripts as in Redis: `encode_max_depth(n)` and
//! `decode_max_depth(n)` (1000 by default), `encode_invalid_numbers(on)` (`true`
//! writes NaN and infinities as `nan`, `inf`, `-inf`; `"null"` as `null`) and
//! `encode_keep_buffer`, which changes nothing here. Each answers the setting.

use mlua::{LightUserData, Lua, Table, Value};

use crate::scripting::located;

/// The settings scripts may change, in the interpreter's app data.
struct Settings {
    encode_max_depth: usize,
    decode_max_depth: usize,
    invalid_numbers: InvalidNumbers,
    keep_buffer: bool,
}

#[derive(Clone, Copy, PartialEq)]
enum InvalidNumbers {
    Refused,
    Written,
    Null,
}

fn settings(lua: &Lua) -> mlua::AppDataRef<'_, Settings> {
    lua.app_data_ref()
        .expect("the cjson library puts its settings in first")
}

/// `cjson.encode_max_depth([n])` and the like: sets the integer if given, within
/// 1..=i32::MAX, and answers it.
fn depth_setting(
    lua: &Lua,
    name: &'static str,
    slot: fn(&mut Settings) -> &mut usize,
) -> mlua::Result<mlua::Function> {
    lua.create_function(move |lua, value: Option<f64>| {
        let mut settings = lua
            .app_data_mut::<Settings>()
            .expect("the cjson library puts its settings in first");
        if let Some(n) = value {
            if !(1.0..=f64::from(i32::MAX)).contains(&n) {
                return Err(located(
                    lua,
                    &format!(
                        "bad argument #1 to '{name}' (expected integer between 1 and 2147483647)"
                    ),
                ));
            }
            *slot(&mut settings) = n as usize;
        }
        Ok(*slot(&mut settings) as f64)
    })
}

/// The `cjson` table.
pub fn library(lua: &Lua) -> mlua::Result<Table> {
    lua.set_app_data(Settings {
        encode_max_depth: 1000,
        decode_max_depth: 1000,
        invalid_numbers: InvalidNumbers::Refused,
        keep_buffer: true,
    });
    let cjson = lua.create_table()?;
    cjson.raw_set(
        "encode_max_depth",
        depth_setting(lua, "encode_max_depth", |s| &mut s.encode_max_depth)?,
    )?;
    cjson.raw_set(
        "decode_max_depth",
        depth_setting(lua, "decode_max_depth", |s| &mut s.decode_max_depth)?,
    )?;
    cjson.raw_set(
        "encode_invalid_numbers",
        lua.create_function(|lua, value: Value| {
            let mut settings = lua.app_data_mut::<Settings>().expect("set above");
            settings.invalid_numbers = match value {
                Value::Nil => settings.invalid_numbers,
                Value::Boolean(true) => InvalidNumbers::Written,
                Value::Boolean(false) => InvalidNumbers::Refused,
                Value::String(s) => match s.as_bytes().as_ref() {
                    b"on" => InvalidNumbers::Written,
                    b"off" => InvalidNumbers::Refused,
                    b"null" => InvalidNumbers::Null,
                    other => {
                        return Err(located(
                            lua,
                            &format!(
                                "bad argument #1 to 'encode_invalid_numbers' (invalid option '{}')",
                                String::from_utf8_lossy(other)
                            ),
                        ))
                    }
                },
                _ => {
                    return Err(located(
                        lua,
                        "bad argument #1 to 'encode_invalid_numbers' (string expected)",
                    ))
                }
            };
            Ok(match settings.invalid_numbers {
                InvalidNumbers::Refused => Value::Boolean(false),
                InvalidNumbers::Written => Value::Boolean(true),
                InvalidNumbers::Null => Value::String(lua.create_string("null")?),
            })
        })?,
    )?;
    cjson.raw_set(
        "encode_keep_buffer",
        lua.create_function(|lua, value: Option<bool>| {
            let mut settings = lua.app_data_mut::<Settings>().expect("set above");
            if let Some(keep) = value {
                settings.keep_buffer = keep;
            }
            Ok(settings.keep_buffer)
        })?,
    )?;
    cjson.raw_set(
        "encode",
        lua.create_function(|lua, value: Value| {
            let mut out = Vec::new();
            encode(lua, &value, 1, &mut out).map_err(|e| located(lua, &e))?;
            lua.create_string(out)
        })?,
    )?;
    cjson.raw_set(
        "decode",
        lua.create_function(|lua, text: mlua::LuaString| {
            let parsed: serde_json::Value = serde_json::from_slice(&text.as_bytes())
                .map_err(|e| located(lua, &format!("cjson.decode: {e}")))?;
            let limit = settings(lua).decode_max_depth;
            if nesting(&parsed) > limit {
                return Err(located(
                    lua,
                    &format!("Found too many nested data structures ({})", limit + 1),
                ));
            }
            decode(lua, parsed)
        })?,
    )?;
    cjson.raw_set("null", null())?;
    Ok(cjson)
}

fn null() -> Value {
    Value::LightUserData(LightUserData(std::ptr::null_mut()))
}

fn encode(lua: &Lua, value: &Value, depth: usize, out: &mut Vec<u8>) -> Result<(), String> {
    match value {
        Value::Nil => out.extend_from_slice(b"null"),
        Value::LightUserData(p) if p.0.is_null() => out.extend_from_slice(b"null"),
        Value::Boolean(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        // Lua 5.1 has only doubles; mlua shows the integral ones as integers.
        Value::Integer(n) => number(lua, *n as f64, out)?,
        Value::Number(x) => number(lua, *x, out)?,
        Value::String(s) => string(&s.as_bytes(), out),
        Value::Table(t) => {
            if depth > settings(lua).encode_max_depth {
                return Err(format!("Cannot serialise, excessive nesting ({depth})"));
            }
            match array_length(t)? {
                Some(len) if len > 0 => {
                    out.push(b'[');
                    for i in 1..=len {
                        if i > 1 {
                            out.push(b',');
                        }
                        let item: Value = t.raw_get(i).map_err(|e| e.to_string())?;
                        encode(lua, &item, depth + 1, out)?;
                    }
                    out.push(b']');
                }
                _ => {
                    out.push(b'{');
                    let mut first = true;
                    for pair in t.pairs::<Value, Value>() {
                        let (k, v) = pair.map_err(|e| e.to_string())?;
                        if !first {
                            out.push(b',');
                        }
                        first = false;
                        match &k {
                            Value::String(s) => string(&s.as_bytes(), out),
                            Value::Integer(_) | Value::Number(_) => {
                                out.push(b'"');
                                let mut text = Vec::new();
                                encode(lua, &k, depth + 1, &mut text)?;
                                out.extend_from_slice(&text);
                                out.push(b'"');
                            }
                            other => {
                                return Err(format!(
                                    "Cannot serialise {}: table key must be a number or string",
                                    other.type_name()
                                ))
                            }
                        }
                        out.push(b':');
                        encode(lua, &v, depth + 1, out)?;
                    }
                    out.push(b'}');
                }
            }
        }
        other => {
            return Err(format!(
                "Cannot serialise {}: type not supported",
                other.type_name()
            ))
        }
    }
    Ok(())
}

/// The length of `t` as an array (its largest key), or `None` if some key is not a
/// positive integer. Refuses an array more than half holes past 10 entries.
fn array_length(t: &Table) -> Result<Option<i64>, String> {
    let (mut max, mut items) = (0i64, 0i64);
    for pair in t.pairs::<Value, Value>() {
        let (k, _) = pair.map_err(|e| e.to_string())?;
        let index = match k {
            Value::Integer(i) if i >= 1 => i,
            Value::Number(x) if x >= 1.0 && x.fract() == 0.0 && x < 9.2e18 => x as i64,
            _ => return Ok(None),
        };
        max = max.max(index);
        items += 1;
    }
    if max > 10 && max > items * 2 {
        return Err("Cannot serialise table: excessively sparse array".into());
    }
    Ok(Some(max))
}

fn number(lua: &Lua, x: f64, out: &mut Vec<u8>) -> Result<(), String> {
    if !x.is_finite() {
        match settings(lua).invalid_numbers {
            InvalidNumbers::Refused => {
                return Err("Cannot serialise number: must not be NaN or Inf".into())
            }
            InvalidNumbers::Null => out.extend_from_slice(b"null"),
            InvalidNumbers::Written if x.is_nan() => out.extend_from_slice(b"nan"),
            InvalidNumbers::Written if x > 0.0 => out.extend_from_slice(b"inf"),
            InvalidNumbers::Written => out.extend_from_slice(b"-inf"),
        }
        return Ok(());
    }
    // Lua's own number to text (`%.14g`), as lua-cjson writes numbers.
    let text = lua
        .coerce_string(Value::Number(x))
        .map_err(|e| e.to_string())?
        .ok_or("a number always has a text form")?;
    out.extend_from_slice(&text.as_bytes());
    Ok(())
}

fn string(bytes: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    for &b in bytes {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'/' => out.extend_from_slice(b"\\/"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            0..=0x1f | 0x7f => out.extend_from_slice(format!("\\u{b:04x}").as_bytes()),
            _ => out.push(b),
        }
    }
    out.push(b'"');
}

/// How deep arrays and objects nest in `value` (a scalar: 0).
fn nesting(value: &serde_json::Value) -> usize {
    match value {
        serde_json::Value::Array(items) => 1 + items.iter().map(nesting).max().unwrap_or(0),
        serde_json::Value::Object(fields) => 1 + fields.values().map(nesting).max().unwrap_or(0),
        _ => 0,
    }
}

fn decode(lua: &Lua, value: serde_json::Value) -> mlua::Result<Value> {
    Ok(match value {
        serde_json::Value::Null => null(),
        serde_json::Value::Bool(b) => Value::Boolean(b),
        serde_json::Value::Number(n) => Value::Number(n.as_f64().unwrap_or(f64::NAN)),
        serde_json::Value::String(s) => Value::String(lua.create_string(s)?),
        serde_json::Value::Array(items) => {
            let t = lua.create_table_with_capacity(items.len(), 0)?;
            for (i, item) in items.into_iter().enumerate() {
                t.raw_set(i + 1, decode(lua, item)?)?;
            }
            Value::Table(t)
        }
        serde_json::Value::Object(fields) => {
            let t = lua.create_table_with_capacity(0, fields.len())?;
            for (k, v) in fields {
                t.raw_set(k, decode(lua, v)?)?;
            }
            Value::Table(t)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(code: &str) -> mlua::Result<String> {
        let lua = Lua::new();
        lua.globals().raw_set("cjson", library(&lua)?)?;
        lua.load(code).eval::<String>()
    }

    #[test]
    fn encodes_as_lua_cjson_does() {
        assert_eq!(
            eval("return cjson.encode({1, 'a/b', true, {}})").unwrap(),
            r#"[1,"a\/b",true,{}]"#
        );
        assert_eq!(
            eval("return cjson.encode({[1]=1, [3]=3})").unwrap(),
            "[1,null,3]"
        );
        assert_eq!(eval("return cjson.encode(1e20)").unwrap(), "1e+20");
        assert_eq!(
            eval("return cjson.encode('\\0\\t')").unwrap(),
            r#""\u0000\t""#
        );
        let sparse = eval("return cjson.encode({[1]=1, [20]=3})").unwrap_err();
        assert!(
            sparse.to_string().contains("excessively sparse array"),
            "{sparse}"
        );
        let nested = eval("local t = {} local c = t for i = 1, 1100 do c[1] = {} c = c[1] end return cjson.encode(t)").unwrap_err();
        assert!(nested.to_string().contains("excessive nesting"), "{nested}");
    }

    #[test]
    fn decoding_round_trips_and_keeps_nulls() {
        let text = r#"{"a":[1,2.5,null,"x\/y"],"b":{"c":false}}"#;
        let code = format!("local t = cjson.decode('{text}') return tostring(t.a[3] == cjson.null) .. cjson.encode(t.a) .. cjson.encode(t.b)");
        assert_eq!(
            eval(&code).unwrap(),
            r#"true[1,2.5,null,"x\/y"]{"c":false}"#
        );
        assert!(eval("return cjson.decode('[1,')").is_err());
    }
}
