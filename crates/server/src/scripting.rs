//! Lua scripts (EVAL, EVALSHA, SCRIPT) and function libraries (FUNCTION, FCALL): one
//! Lua 5.1 interpreter for the server, holding every script loaded under the SHA-1 of
//! its text and the functions each library registered (kept in `libraries.rs`).
//!
//! A script runs with the gate held exclusively (EVAL runs alone), so nothing else
//! runs until it ends, as in Redis. It sees Redis's scripting world:
//! - `KEYS` and `ARGV`, the libraries `string`, `table`, `math` and the base functions
//!   (less `print`, `loadfile` and `dofile`), and the `redis` table: `call` and
//!   `pcall` (run a command; an error reply is raised, or returned as `{err=...}`),
//!   `error_reply`, `status_reply`, `sha1hex`, `log`, `setresp`, `set_repl`,
//!   `replicate_commands` and their constants; `cjson` (see `script_json.rs`),
//!   `cmsgpack` (`script_msgpack.rs`) and `bit` (`script_bit.rs`).
//! - Globals are read-only, as in Redis 7: a script that assigns or reads an undefined
//!   global gets the error Redis gives. Scripts keep their state in locals. The library
//!   tables (`string`, `redis`, ...) and the string metatable are read-only too (see
//!   [`PRELUDE`]), so no script changes what a later one sees.
//! - A function is called with two tables, its keys and its arguments (no `KEYS` and
//!   `ARGV` globals); it sees the same world. While its library's code runs at FUNCTION
//!   LOAD, that code sees one global only, `redis`, holding `register_function`, `log`
//!   and the version: it can register functions and nothing else. The functions it
//!   defines share the code's environment, which is switched back to the scripts'
//!   world once it has run, as Redis switches its globals.
//! - Replies convert as in Redis: integers to numbers, bulk strings to strings, nulls
//!   to `false`, arrays to tables, status and error replies to `{ok=...}` and
//!   `{err=...}`; after `redis.setresp(3)`, RESP3's types to Redis's tables (see
//!   [`to_lua`]). Back the other way, numbers are truncated to integers, `true` is 1,
//!   a table is an array up to its first nil unless a field says otherwise (see
//!   [`to_frame`]).
//! - Errors are raised as Redis raises them: the `redis` table's as `{err=...}`
//!   tables, which a script's `pcall` catches as their message; uncaught, the reply
//!   names the script's line (see [`failure`]).
//!
//! A script that runs past `busy-reply-threshold` (5 s by default; 0: no limit) turns
//! busy, as in Redis: it runs on, other clients are answered `-BUSY`, and SCRIPT KILL
//! (if it has written nothing) or SHUTDOWN NOSAVE stop it at its next clock check (see
//! `running_script.rs`). Inside EXEC, where it runs on the connection's thread and no
//! one else could reach it, it is stopped with an error at the threshold instead; its
//! writes so far stay, as a failed Redis script's do. Lua's memory is capped (see
//! [`LUA_MEMORY`]).

use std::cell::Cell;
use std::collections::HashMap;
use std::fmt;
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::time::{Duration, Instant};

use std::sync::Arc;

use mlua::{Function, HookTriggers, Lua, LuaOptions, MultiValue, StdLib, Table, Value, VmState};
use resp::{Frame, Protocol};
use sha1::{Digest, Sha1};

use crate::libraries::{Libraries, Library, Registered};
use crate::running_script::{RunningScript, Stopped};

/// The most memory Lua may hold, for every script together: a script building an
/// endless table fails with an out-of-memory error instead of taking the server's.
/// It binds the scripts' own code: what the server makes for them (`KEYS`, `ARGV`, a
/// command's reply), sized by the request or the data, is made without it.
const LUA_MEMORY: usize = 1 << 30;
/// How deep a reply may nest, either way, before it is refused.
const MAX_DEPTH: usize = 1000;
/// How often (in Lua instructions) a running script checks the clock.
const CLOCK_EVERY: u32 = 10_000;

/// The text of a script's SHA-1, in lower-case hex.
pub fn sha1_hex(text: &[u8]) -> String {
    Sha1::digest(text)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// What a script's first line (`#!lua flags=...`) or a function's registration asks
/// for.
#[derive(Clone, Copy, Default)]
pub struct ScriptFlags {
    /// The flags were declared: a function, or a script with a `#!` line. Such a
    /// script's writes are checked before it runs, not as it runs (see `eval.rs`).
    pub declared: bool,
    /// One bit per entry of [`ScriptFlags::NAMES`].
    set: u8,
}

impl ScriptFlags {
    /// The flags, in Redis's order (FUNCTION LIST gives them so). The last three
    /// allow what concerns states hotkv does not have (no cluster, no replicas): they
    /// are kept only to be listed.
    const NAMES: [&'static str; 5] = [
        "no-writes",
        "allow-oom",
        "allow-stale",
        "no-cluster",
        "allow-cross-slot-keys",
    ];

    /// Sets the flag Redis names `name`; false if there is none of that name.
    fn set(&mut self, name: &str) -> bool {
        let Some(bit) = Self::NAMES.iter().position(|&n| n == name) else {
            return false;
        };
        self.set |= 1 << bit;
        true
    }

    /// Whether the flag at `index` of [`ScriptFlags::NAMES`] is set.
    fn has(&self, index: usize) -> bool {
        self.set & (1 << index) != 0
    }

    /// `no-writes`: the script may only read, as under EVAL_RO.
    pub fn no_writes(&self) -> bool {
        self.has(0)
    }

    /// `allow-oom`: its commands run over maxmemory.
    pub fn allow_oom(&self) -> bool {
        self.has(1)
    }

    /// The flags' names, in Redis's order.
    pub fn names(&self) -> Vec<&'static str> {
        (0..Self::NAMES.len())
            .filter(|&i| self.has(i))
            .map(|i| Self::NAMES[i])
            .collect()
    }
}

/// A compiled script.
#[derive(Clone)]
pub struct Script {
    function: Function,
    pub flags: ScriptFlags,
}

pub struct Scripts {
    lua: Lua,
    /// The table scripts see as their globals: reads fall through to Lua's globals,
    /// writes are refused.
    env: Table,
    /// The PRELUDE's `run(f, keys, args)`: calls `f` under the handler [`failure`].
    runner: Function,
    /// The same for functions and their libraries' code; reads fall through to
    /// `function_source.from`: Lua's globals, or `load_globals` while a library loads.
    function_env: Table,
    function_source: Table,
    load_globals: Table,
    cache: HashMap<String, Script>,
    pub libraries: Libraries,
    /// Runs since the collector was last stepped (see [`GC_EVERY`]).
    runs: Cell<u32>,
}

/// Every this many runs the collector takes a step, as Redis steps it every 50 calls:
/// left to itself, Lua starts a cycle only once its heap has doubled, and a server
/// whose Lua holds 70 KB would show 140 KB in INFO's `used_memory_lua` where Redis's
/// stays under 100 KB.
const GC_EVERY: u32 = 50;

/// Steps Lua's collector as far as `lua_gc(LUA_GCSTEP, GC_EVERY)` goes: a step sized
/// as though that many KB had been allocated, which in Lua 5.1 runs about that many
/// basic steps (Redis takes such a step every 50 runs). Taken before each library
/// load: a client that reloads a library before each call (`FUNCTION LOAD REPLACE`
/// then `FCALL`, 10,000 times, as Redis's suite does) left more garbage than the basic
/// step every [`GC_EVERY`] runs collects, and `used_memory_lua` ended between 64 and
/// 75 KB, in one run of the suite above the 100 KB it allows. Not after every 50
/// runs: that cost EVALSHA 6% (`redis-benchmark -c 50 evalsha`, three rounds).
fn step_collector(lua: &Lua) -> mlua::Result<()> {
    // SAFETY: `exec_raw` runs the closure in protected mode on the state it locked, so
    // an error in a finalizer the step runs is caught; `lua_gc` neither reads nor
    // leaves anything on the stack.
    unsafe {
        lua.exec_raw::<()>((), |state| {
            mlua::ffi::lua_gc(state, mlua::ffi::LUA_GCSTEP, GC_EVERY as std::ffi::c_int);
        })
    }
}

/// What runs: a script (given `KEYS` and `ARGV` as globals) or a library's
/// function (given them as its two arguments).
pub enum Target<'a> {
    Script { sha: &'a str, script: &'a Script },
    Function(&'a Registered),
}

/// The functions a library registers while its code runs: present only then, which
/// is how `redis.register_function` knows it is called from FUNCTION LOAD.
#[derive(Default)]
struct Registering(Vec<Registered>);

/// How long a library's code may run to register its functions, as in Redis.
pub const LOAD_TIME_LIMIT: Duration = Duration::from_millis(500);

/// An error one of the server's functions raises where Redis raises an `{err=...}`
/// table (see [`error_value`]).
#[derive(Debug)]
enum Stop {
    /// `redis.call` met an error reply, or a function of the `redis` table was called
    /// wrongly, or a library's registration was refused: the message, code first.
    Reply(String),
    /// `redis.call` met a command's error reply, already counted in INFO errorstats.
    Command(String),
    /// It ran past the time limit.
    TimedOut(Duration),
    /// SCRIPT KILL or FUNCTION KILL stopped it.
    Killed,
    /// SHUTDOWN NOSAVE stopped it.
    ShuttingDown,
}

impl fmt::Display for Stop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Stop::Reply(message) | Stop::Command(message) => f.write_str(message),
            Stop::TimedOut(limit) => write!(
                f,
                "ERR Script stopped: it ran longer than busy-reply-threshold ({} ms)",
                limit.as_millis()
            ),
            Stop::Killed => f.write_str("ERR Script killed by user with SCRIPT KILL..."),
            Stop::ShuttingDown => f.write_str("ERR Script stopped: the server is shutting down"),
        }
    }
}

impl std::error::Error for Stop {}

/// A run's error as its handler ([`failure`]) leaves it: the message Redis replies
/// with, and the chunk and line that raised it.
#[derive(Debug)]
struct Failure {
    message: String,
    place: Option<(String, usize)>,
    /// A command's error, counted in INFO errorstats when the script called it.
    counted: bool,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Failure {}

/// The reply to a script that ran out of Lua's memory.
const OUT_OF_MEMORY: &str = "ERR Script ran out of memory (hotkv caps Lua at 1 GiB)";

/// The PRELUDE's chunk name: the error handler skips its functions, so errors name the
/// script's line.
const PRELUDE_NAME: &str = "=hotkv";

/// Run once with Lua's globals: makes them unchangeable by scripts, as Redis 7 does
/// (a script that could set `string.rep = nil` would break every later one), and
/// returns the function that makes a read-only view of `source.from`, a table that may
/// be switched (the globals scripts and functions see). Lua 5.1 has no read-only
/// tables, so each library table (`string`, `redis`, ...) is replaced by an empty
/// proxy that reads through to it and refuses writes, and the base functions that
/// reach past a metatable (`rawset`, `rawget`, `setmetatable`, `getmetatable`, `next`,
/// `pairs`, `loadstring`, `load`) are wrapped to respect the proxies; `getfenv`,
/// `setfenv` and `newproxy` are gone, as in Redis. It also wraps `pcall` and `xpcall`
/// to see the server's errors as Redis raises them, and returns `run`, which runs a
/// script or function under the error handler [`failure`].
const PRELUDE: &str = r#"
local G, error_value, failure, check_deadline = ...
local rawget, rawset, error, tostring, type = rawget, rawset, error, tostring, type
local setmetatable, getmetatable, next = setmetatable, getmetatable, next
local setfenv, loadstring, load = setfenv, loadstring, load
local pcall, xpcall, select = pcall, xpcall, select
-- Errors raised by the server's own functions (redis.call's error reply, ...) reach
-- Lua as mlua's error userdata: `error_value` turns one into what Redis raises there,
-- an {err=...} table or a string.
local function plain(e)
  if type(e) == "userdata" then
    return error_value(e)
  end
  return e
end
-- A script past its time limit may not catch the error that stops it: an error
-- caught by pcall, xpcall or coroutine.resume is raised again then, so it goes on up.
local function unless_stopped(ok, ...)
  if not ok then
    check_deadline()
  end
  return ok, ...
end
local resume = G.coroutine.resume
local function resumed(ok, ...)
  if ok then
    return ok, ...
  end
  check_deadline()
  return false, plain((...))
end
rawset(G.coroutine, "resume", function(co, ...)
  return resumed(resume(co, ...))
end)
-- Raised where a script assigns through a proxy's __newindex: the error names the
-- script's line, as Lua's own errors do.
local function readonly()
  error("Attempt to modify a readonly table", 3)
end
-- Each proxy or view, to the table whose writes it refuses (true for a view).
local frozen = setmetatable({}, {__mode = "k"})
-- What getmetatable answers for a proxy (nothing, as for a plain library table) or a
-- view (its metatable, read-only).
local shown = setmetatable({}, {__mode = "k"})
local function protect(t)
  local proxy = setmetatable({}, {__index = t, __newindex = function() readonly() end})
  frozen[proxy] = t
  return proxy
end
for name, value in next, G do
  if type(value) == "table" and value ~= G then
    rawset(G, name, protect(value))
  end
end
local string_meta = protect({__index = G.string})
local function view(source)
  local meta = {
    __index = function(self, name)
      if name == "_G" then
        return self
      end
      local value = rawget(source.from, name)
      if value == nil then
        error("Script attempted to access nonexistent global variable '" .. tostring(name) .. "'", 2)
      end
      return value
    end,
    __newindex = function()
      readonly()
    end,
  }
  local v = setmetatable({}, meta)
  frozen[v] = true
  shown[v] = protect(meta)
  return v
end
local globals_view = view({from = G})
-- For a wrapped function called on a proxy: the error Redis's C function raises, a
-- string that names no line (the error handler adds the script's).
local function unfrozen(t)
  if frozen[t] then
    error("Attempt to modify a readonly table", 0)
  end
  return t
end
rawset(G, "rawset", function(t, k, v)
  return rawset(unfrozen(t), k, v)
end)
rawset(G, "setmetatable", function(t, meta)
  return setmetatable(unfrozen(t), meta)
end)
rawset(G, "getmetatable", function(x)
  if type(x) == "string" then
    return string_meta
  end
  if frozen[x] then
    return shown[x]
  end
  return getmetatable(x)
end)
-- The table a proxy stands for (a view stands for none), or `t` itself.
local function real_of(t)
  local real = frozen[t]
  if type(real) == "table" then
    return real
  end
  return t
end
local function see_through(t, k)
  return next(real_of(t), k)
end
rawset(G, "next", see_through)
rawset(G, "pairs", function(t)
  if type(t) ~= "table" then
    error("bad argument #1 to 'pairs' (table expected, got " .. type(t) .. ")", 2)
  end
  return see_through, t, nil
end)
rawset(G, "rawget", function(t, k)
  return rawget(real_of(t), k)
end)
-- As in Redis, scripts cannot reach past their environment.
rawset(G, "getfenv", nil)
rawset(G, "setfenv", nil)
rawset(G, "newproxy", nil)
-- Code compiled by a script runs in the scripts' read-only world too.
local function confined(f, ...)
  if f then
    setfenv(f, globals_view)
  end
  return f, ...
end
-- Source code only: Lua 5.1 does not check the bytecode it loads, so a crafted
-- binary chunk could read and write the server's memory. Redis refuses them too.
local BINARY = "binary chunks are not allowed"
local function binary(chunk)
  return type(chunk) == "string" and chunk:byte(1) == 27
end
rawset(G, "loadstring", function(chunk, ...)
  if binary(chunk) then
    return nil, BINARY
  end
  return confined(loadstring(chunk, ...))
end)
rawset(G, "load", function(reader, ...)
  local started = false
  local function source_only()
    local piece = reader()
    if not started and piece ~= nil and piece ~= "" then
      started = true
      if binary(piece) then
        error(BINARY, 0)
      end
    end
    return piece
  end
  if type(reader) ~= "function" then
    source_only = reader
  end
  return confined(load(source_only, ...))
end)
-- As Redis 7's, a script's `pcall` catches a table with an `err` string as that
-- string; `xpcall`'s handler sees the table.
local function caught(ok, ...)
  if ok then
    return ok, ...
  end
  local e = plain((...))
  if type(e) == "table" then
    local message = e.err
    if type(message) == "string" or type(message) == "number" then
      e = message
    end
  end
  return false, e
end
rawset(G, "pcall", function(f, ...)
  return caught(unless_stopped(pcall(f, ...)))
end)
rawset(G, "xpcall", function(...)
  if select('#', ...) < 2 then
    error("bad argument #2 to 'xpcall' (value expected)", 2)
  end
  local f, handler = ...
  return unless_stopped(xpcall(f, function(e)
    return handler(plain(e))
  end))
end)
-- Runs a script (no arguments) or a function (its keys and arguments) under the
-- handler `failure`, which notes where an error was raised while the stack is there.
-- Lua 5.1's xpcall passes no arguments, so they wait here.
local pending_f, pending_keys, pending_args
local function call_pending()
  local f, keys, args = pending_f, pending_keys, pending_args
  pending_f, pending_keys, pending_args = nil, nil, nil
  if keys then
    return f(keys, args)
  end
  return f()
end
local function run(f, keys, args)
  pending_f, pending_keys, pending_args = f, keys, args
  return xpcall(call_pending, failure)
end
return view, run
"#;

impl Scripts {
    pub fn new() -> mlua::Result<Scripts> {
        Scripts::with_memory_limit(LUA_MEMORY)
    }

    fn with_memory_limit(bytes: usize) -> mlua::Result<Scripts> {
        let lua = Lua::new_with(
            StdLib::TABLE | StdLib::STRING | StdLib::MATH,
            LuaOptions::new(),
        )?;
        lua.set_memory_limit(bytes)?;
        Deadline::hook(&lua)?;
        let globals = lua.globals();
        for unsafe_or_noisy in ["print", "loadfile", "dofile"] {
            globals.raw_set(unsafe_or_noisy, Value::Nil)?;
        }
        globals.raw_set("redis", redis_table(&lua)?)?;
        globals.raw_set("cjson", crate::script_json::library(&lua)?)?;
        globals.raw_set("bit", crate::script_bit::library(&lua)?)?;
        globals.raw_set("cmsgpack", crate::script_msgpack::library(&lua)?)?;
        let (view, runner): (Function, Function) =
            lua.load(PRELUDE).set_name(PRELUDE_NAME).call((
                globals.clone(),
                lua.create_function(|lua, raised: Value| {
                    uncapped(lua, || error_value(lua, raised))
                })?,
                lua.create_function(failure)?,
                lua.create_function(|lua, ()| Deadline::check(lua))?,
            ))?;
        let source_of = |from: Table| -> mlua::Result<Table> {
            let source = lua.create_table()?;
            source.raw_set("from", from)?;
            Ok(source)
        };
        let env = view.call(source_of(globals.clone())?)?;
        let function_source = source_of(globals)?;
        let function_env = view.call(function_source.clone())?;
        let load_globals = lua.create_table()?;
        let load_redis: Table = view.call(source_of(load_redis_table(&lua)?)?)?;
        load_globals.raw_set("redis", load_redis)?;
        Ok(Scripts {
            lua,
            env,
            runner,
            function_env,
            function_source,
            load_globals,
            cache: HashMap::new(),
            libraries: Libraries::default(),
            runs: Cell::new(0),
        })
    }

    pub fn get(&self, sha: &str) -> Option<Script> {
        self.cache.get(sha).cloned()
    }

    /// How many scripts EVAL and SCRIPT LOAD left in the cache.
    pub fn cached(&self) -> usize {
        self.cache.len()
    }

    /// The bytes the Lua interpreter holds.
    pub fn lua_memory(&self) -> usize {
        self.lua.used_memory()
    }

    pub fn contains(&self, sha: &str) -> bool {
        self.cache.contains_key(sha)
    }

    /// SCRIPT FLUSH.
    pub fn clear(&mut self) {
        self.cache.clear();
        // Dropped functions are garbage; collect them now rather than at Lua's pace.
        let _ = self.lua.gc_collect();
    }

    /// Compiles `text` (or finds it compiled) and keeps it under its SHA-1, which is
    /// returned with it. The error is the reply, in Redis's words.
    pub fn load(&mut self, text: &[u8]) -> Result<(String, Script), String> {
        let sha = sha1_hex(text);
        if let Some(script) = self.cache.get(&sha) {
            return Ok((sha, script.clone()));
        }
        let (flags, body) = shebang(text)?;
        let function = self
            .lua
            .load(body)
            .set_name("@user_script")
            .set_environment(self.env.clone())
            .into_function()
            .map_err(|e| {
                format!(
                    "ERR Error compiling script (new function): {}",
                    compile_error(&e)
                )
            })?;
        let script = Script { function, flags };
        self.cache.insert(sha.clone(), script.clone());
        Ok((sha, script))
    }

    /// Compiles a library's code (`code[body..]` the part after its first line) and
    /// runs it, for at most `time_limit`, to learn the functions it registers. The
    /// error is the reply, less its `ERR `.
    pub fn load_library(
        &self,
        name: String,
        code: &[u8],
        body: usize,
        time_limit: Option<Duration>,
    ) -> Result<Library, String> {
        let lua = &self.lua;
        // The library this one replaces, if any, was dropped after the last load.
        let _ = step_collector(lua);
        let chunk = lua
            .load(&code[body..])
            .set_name("@user_function")
            .set_environment(self.function_env.clone())
            .into_function()
            .map_err(|e| format!("Error compiling function: {}", compile_error(&e)))?;
        let registering = || -> mlua::Result<(bool, Value)> {
            self.function_source.raw_set("from", &self.load_globals)?;
            lua.set_app_data(Registering::default());
            let _deadline = time_limit.map(|limit| {
                Deadline::start(
                    lua,
                    limit,
                    Overrun::Stop(|_| Stop::Reply("ERR FUNCTION LOAD timeout".into())),
                )
            });
            self.runner.call::<(bool, Value)>(chunk)
        };
        let ran = registering();
        let Registering(functions) = lua.remove_app_data().unwrap_or_default();
        self.function_source
            .raw_set("from", lua.globals())
            .expect("a table's field can always be set");
        if let Err(failure) = outcome(ran) {
            return Err(format!("Error registering functions: {}", failure.message));
        }
        if functions.is_empty() {
            return Err("No functions registered".into());
        }
        Ok(Library {
            name,
            code: code.to_vec(),
            functions,
        })
    }

    /// Runs `target` with `keys` and `args`; `execute` runs a command for
    /// `redis.call`, in the protocol given. Answers the reply, or the error as Redis
    /// words it, and whether that error is a command's, counted in INFO errorstats
    /// already.
    pub fn run(
        &self,
        target: Target,
        keys: &[Vec<u8>],
        args: &[Vec<u8>],
        time_limit: Option<Duration>,
        running: Option<Arc<RunningScript>>,
        mut execute: impl FnMut(Request, Protocol) -> Frame,
    ) -> (Frame, bool) {
        let lua = &self.lua;
        let _runner = Runner::install(lua, &mut execute);
        let _deadline = time_limit.map(|limit| {
            let overrun = match running {
                Some(running) => Overrun::TurnBusy(running),
                None => Overrun::Stop(Stop::TimedOut),
            };
            Deadline::start(lua, limit, overrun)
        });
        let (f, name) = match target {
            Target::Script { sha, script } => (&script.function, sha),
            Target::Function(f) => (&f.callback, f.name.as_str()),
        };
        let ran = crate::entry::with_time_frozen(|| {
            let (keys, args) = uncapped(lua, || -> mlua::Result<_> {
                let keys = strings_table(lua, keys)?;
                let args = strings_table(lua, args)?;
                if let Target::Function(_) = target {
                    return Ok((Some(keys), Some(args)));
                }
                self.env.raw_set("KEYS", keys)?;
                self.env.raw_set("ARGV", args)?;
                Ok((None, None))
            })?;
            self.runner.call::<(bool, Value)>((f, keys, args))
        });
        self.runs.set(self.runs.get() + 1);
        if self.runs.get() == GC_EVERY {
            self.runs.set(0);
            // A step collects nothing the script still reaches; a failure (out of
            // memory while collecting) leaves the garbage to the next step.
            let _ = lua.gc_step();
        }
        match outcome(ran) {
            Ok(value) => {
                let frame = uncapped(lua, || to_frame(&value, Runner::protocol(lua), 0));
                let counted =
                    matches!((&frame, &value), (Frame::Error(_), Value::Table(t)) if counted(t));
                (frame, counted)
            }
            Err(Failure {
                message,
                place: Some((chunk, line)),
                counted,
            }) => (
                Frame::error(format!("{message} script: {name}, on {chunk}:{line}.")),
                counted,
            ),
            Err(Failure {
                message, counted, ..
            }) => (Frame::error(message), counted),
        }
    }
}

/// Runs `make` with Lua's memory cap lifted, restored after even if it panics. The cap
/// is for what scripts do; what the server makes for them (`KEYS`, `ARGV`, a command's
/// reply, the reply back) is sized by the request or the data, and mlua calls under no
/// cap skip the protection they need under one, at a third of the cost.
fn uncapped<R>(lua: &Lua, make: impl FnOnce() -> R) -> R {
    struct Restore<'l>(&'l Lua, usize);
    impl Drop for Restore<'_> {
        fn drop(&mut self) {
            self.0
                .set_memory_limit(self.1)
                .expect("a main state keeps its memory");
        }
    }
    let cap = lua
        .set_memory_limit(0)
        .expect("a main state keeps its memory");
    let _restore = Restore(lua, cap);
    make()
}

/// A value Lua's callbacks read while a run (or a library's load) lasts, kept in the
/// state's app data from its creation: the runner of `redis.call` and the deadline.
struct Slot<T>(Cell<Option<T>>);

impl<T> Default for Slot<T> {
    fn default() -> Self {
        Slot(Cell::new(None))
    }
}

/// Empties the state's `Slot<T>` when dropped.
struct Filled<'l, T: 'static>(&'l Lua, PhantomData<T>);

impl<T: 'static> Drop for Filled<'_, T> {
    fn drop(&mut self) {
        if let Some(slot) = self.0.app_data_ref::<Slot<T>>() {
            slot.0.set(None);
        }
    }
}

/// Puts `value` in the state's slot of its type until the returned guard drops.
fn fill<T: 'static>(lua: &Lua, value: T) -> Filled<'_, T> {
    let slot = lua.app_data_ref::<Slot<T>>().expect("made with the state");
    assert!(slot.0.replace(Some(value)).is_none(), "runs do not nest");
    Filled(lua, PhantomData)
}

/// What `redis.call` and `redis.pcall` run commands with: the command runner of the
/// script running now. The two functions are made once, with the state (making them
/// per run, in a scope that lends them the runner, was a quarter of a short script's
/// cost), so the runner, which borrows the caller's session, reaches them here, with
/// the protocol the script reads replies in (`redis.setresp`; RESP2 as each run starts).
struct Runner {
    execute: NonNull<Execute<'static>>,
    protocol: Protocol,
}

/// Runs one command a script calls, replying in the protocol given.
type Execute<'e> = dyn FnMut(Request, Protocol) -> Frame + 'e;

/// What a script asks of the server: to run a command, or only whether it may.
pub struct Request<'a> {
    pub args: &'a [Vec<u8>],
    /// `redis.acl_check_cmd`: answer 1 if the caller's user may run `args`, 0 if not,
    /// or an error if there is no such command, and run nothing.
    pub acl_check_only: bool,
}

// SAFETY: the pointer is set only while `Scripts::run` runs, by the thread running it
// (`Runner::install`), and used only by `redis.call` from Lua code that `run` runs.
// mlua holds the state's lock for the whole of a call into Lua, so no other thread runs
// Lua code meanwhile: the pointer is never used from a thread other than its owner's.
unsafe impl Send for Runner {}

impl Runner {
    /// Lends `execute` to `redis.call` until the returned guard drops, which must be
    /// before `execute` does: the guard borrows it.
    fn install<'e>(lua: &'e Lua, execute: &'e mut Execute<'e>) -> Filled<'e, Runner> {
        let pointer = NonNull::from(execute);
        // SAFETY: only the trait object's lifetime changes ('e to 'static; the layout
        // is the same). The pointer is used only while the guard lives (its drop takes
        // it out), and the guard cannot outlive 'e, the borrow of `execute`.
        let pointer: NonNull<Execute<'static>> = unsafe { std::mem::transmute(pointer) };
        fill(
            lua,
            Runner {
                execute: pointer,
                protocol: Protocol::Resp2,
            },
        )
    }

    /// Takes the runner of the script running now out of its slot, for `use_it`,
    /// and puts it back after. `what` names the caller in the error raised when no
    /// script runs.
    fn with<R>(lua: &Lua, what: &str, use_it: impl FnOnce(&mut Runner) -> R) -> mlua::Result<R> {
        let slot = lua
            .app_data_ref::<Slot<Runner>>()
            .expect("made with the state");
        let Some(mut runner) = slot.0.take() else {
            return Err(raised(format!(
                "ERR {what} can only be called inside a script invocation"
            )));
        };
        // The slot stays empty while `use_it` runs (a command may re-enter Lua), so a
        // re-entered call finds no runner rather than a second `&mut`.
        drop(slot);
        let out = use_it(&mut runner);
        if let Some(slot) = lua.app_data_ref::<Slot<Runner>>() {
            slot.0.set(Some(runner));
        }
        Ok(out)
    }

    /// Runs `request` with the runner of the script running now, in its protocol;
    /// `what` names the caller, as [`Runner::with`].
    fn execute(lua: &Lua, what: &str, request: Request) -> mlua::Result<(Frame, Protocol)> {
        Runner::with(lua, what, |runner| {
            // SAFETY: `Runner::install` set the pointer from a live `&mut`, and its
            // guard, which borrows that for as long as the runner is in the slot, still
            // lives: the runner was there. `with` keeps it out while this runs, so no
            // other `&mut` to it is made meanwhile.
            let execute = unsafe { runner.execute.as_mut() };
            (execute(request, runner.protocol), runner.protocol)
        })
    }

    /// The protocol the script running now reads replies in.
    fn protocol(lua: &Lua) -> Protocol {
        Runner::with(lua, "redis.setresp", |runner| runner.protocol).unwrap_or_default()
    }
}

/// The time limit of what runs now (a script, or a library's code at FUNCTION LOAD),
/// which the hook set with the state reads every [`CLOCK_EVERY`] instructions
/// (setting a hook per run cost a sixth of a short script's time).
struct Deadline {
    started: Instant,
    limit: Duration,
    overrun: Overrun,
}

/// What a run does once it has run past its limit.
enum Overrun {
    /// Stops with this error (FUNCTION LOAD's code; a script inside EXEC).
    Stop(fn(Duration) -> Stop),
    /// Runs on, busy; SCRIPT KILL or a shutdown, told through `RunningScript`, stop it.
    TurnBusy(Arc<RunningScript>),
}

impl Deadline {
    /// Starts the clock: once what runs in `lua` has run `limit`, `overrun` says what
    /// happens, until the returned guard drops.
    fn start(lua: &Lua, limit: Duration, overrun: Overrun) -> Filled<'_, Deadline> {
        let deadline = Deadline {
            started: Instant::now(),
            limit,
            overrun,
        };
        fill(lua, deadline)
    }

    /// Sets the hook that enforces deadlines, for every thread: a hook set for the
    /// main thread alone (`Lua::set_hook`) is dropped by a coroutine a script creates,
    /// whose loop then ran unchecked, holding the server for ever.
    fn hook(lua: &Lua) -> mlua::Result<()> {
        lua.set_app_data(Slot::<Deadline>::default());
        lua.set_global_hook(
            HookTriggers::new().every_nth_instruction(CLOCK_EVERY),
            |lua, _| Deadline::check(lua).map(|()| VmState::Continue),
        )
    }

    /// The error that stops what runs now, if it must stop.
    fn check(lua: &Lua) -> mlua::Result<()> {
        let Some(slot) = lua.app_data_ref::<Slot<Deadline>>() else {
            return Ok(());
        };
        // Taken out while looked at, and put back: a `Cell` lends nothing.
        let Some(deadline) = slot.0.take() else {
            return Ok(());
        };
        let stop = deadline.stop();
        slot.0.set(Some(deadline));
        match stop {
            Some(stop) => Err(mlua::Error::external(stop)),
            None => Ok(()),
        }
    }

    fn stop(&self) -> Option<Stop> {
        let overran = self.started.elapsed() > self.limit;
        match &self.overrun {
            Overrun::Stop(stop) => overran.then(|| stop(self.limit)),
            Overrun::TurnBusy(running) => {
                if overran {
                    running.turn_busy();
                }
                running.stopped().map(|why| match why {
                    Stopped::Killed => Stop::Killed,
                    Stopped::ShuttingDown => Stop::ShuttingDown,
                })
            }
        }
    }
}

/// The flags the script `text` declares on its first line, without compiling it:
/// `None` if it has no `#!` line or the line is not valid.
pub fn declared_flags(text: &[u8]) -> Option<ScriptFlags> {
    shebang(text).ok().map(|(flags, _)| flags)
}

/// The script's flags from its first line, if that is a `#!` line, and the code to
/// compile: the first line left empty, so line numbers stay those of the text.
fn shebang(text: &[u8]) -> Result<(ScriptFlags, &[u8]), String> {
    let mut flags = ScriptFlags::default();
    if !text.starts_with(b"#!") {
        return Ok((flags, text));
    }
    flags.declared = true;
    let end = text.iter().position(|&b| b == b'\n').unwrap_or(text.len());
    let line = String::from_utf8_lossy(&text[..end]);
    let mut parts = line.split_ascii_whitespace();
    let engine = parts.next().unwrap_or_default();
    if engine != "#!lua" {
        return Err(format!("ERR Unexpected engine in script shebang: {engine}"));
    }
    for part in parts {
        let Some(list) = part.strip_prefix("flags=") else {
            return Err(format!("ERR Unknown lua shebang option: {part}"));
        };
        for flag in list.split(',').filter(|f| !f.is_empty()) {
            if !flags.set(flag) {
                return Err(format!("ERR Unexpected flag in script shebang: {flag}"));
            }
        }
    }
    Ok((flags, &text[end..]))
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}

/// An error raised at the line of the script (or function) that called, as
/// `luaL_error` places it.
pub fn located(lua: &Lua, message: &str) -> mlua::Error {
    let place = lua.inspect_stack(1, |d| {
        let chunk = d.source().short_src.map(|s| s.into_owned());
        chunk.zip(d.current_line())
    });
    match place.flatten() {
        Some((chunk, line)) => mlua::Error::runtime(format!("{chunk}:{line}: {message}")),
        None => mlua::Error::runtime(message),
    }
}

/// A compile error's message.
fn compile_error(error: &mlua::Error) -> String {
    let why = match error {
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        other => other.to_string(),
    };
    first_line(&why).to_string()
}

/// What Redis's function raises where one of hotkv's failed with `raised` (as it
/// reaches Lua, mlua's error userdata): an `{err=...}` table where Redis raises one
/// (see [`Stop`]), the message where Redis raises a string (`luaL_error`: Lua's own
/// words). Any other value is left as it is.
fn error_value(lua: &Lua, raised: Value) -> mlua::Result<Value> {
    let Value::Error(error) = raised else {
        return Ok(raised);
    };
    match error.downcast_ref::<Stop>() {
        Some(Stop::Command(message)) => return command_error_table(lua, message),
        Some(stop) => return error_table(lua, &stop.to_string()),
        None => {}
    }
    let mut cause = &*error;
    while let mlua::Error::CallbackError { cause: inner, .. }
    | mlua::Error::WithContext { cause: inner, .. } = cause
    {
        cause = inner;
    }
    match cause {
        mlua::Error::MemoryError(_) => error_table(lua, OUT_OF_MEMORY),
        mlua::Error::RuntimeError(text) => Ok(Value::String(lua.create_string(text)?)),
        other => Ok(Value::String(lua.create_string(other.to_string())?)),
    }
}

/// The handler a run's errors go through, as Redis's `__redis__err__handler`: the
/// message Redis replies with (an `{err=...}` table's, or `ERR` and the value's text)
/// and, while the stack still shows it, the chunk and line of the script (or
/// function) that raised it: the first caller that is neither a C function (`error`,
/// `redis.call`) nor the PRELUDE's.
fn failure(lua: &Lua, raised: Value) -> mlua::Result<Value> {
    let (message, counted) = uncapped(lua, || -> mlua::Result<(String, bool)> {
        Ok(match error_value(lua, raised)? {
            Value::Table(t) => (
                match t.get::<Value>("err") {
                    Ok(err @ (Value::String(_) | Value::Integer(_) | Value::Number(_))) => {
                        lua_text(lua, &err)
                    }
                    // Redis 7.0 crashes here (fixed later): answer something instead.
                    _ => "ERR unknown error".to_string(),
                },
                counted(&t),
            ),
            other => (format!("ERR {}", lua_text(lua, &other)), false),
        })
    })?;
    let mut place = None;
    for level in 1.. {
        let Some(frame) = lua.inspect_stack(level, |d| {
            let source = d.source();
            let ours = source.what == "C" || source.source.as_deref() == Some(PRELUDE_NAME);
            (
                ours,
                source.source.map(|s| s.into_owned()),
                d.current_line(),
            )
        }) else {
            break;
        };
        if let (false, Some(chunk), Some(line)) = frame {
            place = Some((chunk, line));
            break;
        }
    }
    Ok(Value::Error(Box::new(mlua::Error::external(Failure {
        message,
        place,
        counted,
    }))))
}

/// What a run (the PRELUDE's `run`) came to: the value returned, or its error.
fn outcome(ran: mlua::Result<(bool, Value)>) -> Result<Value, Failure> {
    let message = match ran {
        Ok((true, value)) => return Ok(value),
        Ok((false, Value::Error(error))) => match error.downcast_ref::<Failure>() {
            Some(Failure {
                message,
                place,
                counted,
            }) => {
                return Err(Failure {
                    message: message.clone(),
                    place: place.clone(),
                    counted: *counted,
                })
            }
            None => format!("ERR {error}"),
        },
        // Lua calls no handler for its own memory errors.
        Ok((false, Value::String(s))) if s.as_bytes() == b"not enough memory" => {
            OUT_OF_MEMORY.to_string()
        }
        Ok((false, other)) => format!("ERR {}", other.to_string().unwrap_or_default()),
        Err(mlua::Error::MemoryError(_)) => OUT_OF_MEMORY.to_string(),
        Err(error) => format!("ERR {}", first_line(&error.to_string())),
    };
    Err(Failure {
        message,
        place: None,
        counted: false,
    })
}

/// A string or number as Lua's `tostring` gives it; another value as mlua does.
fn lua_text(lua: &Lua, value: &Value) -> String {
    match lua.coerce_string(value.clone()) {
        Ok(Some(s)) => s.to_string_lossy(),
        _ => value.to_string().unwrap_or_default(),
    }
}

/// An error reply's text (less its `-`) as a script's `{err=...}` table holds it, as
/// Redis's `luaPushErrorBuff` makes it: the first word is the code, or the code is
/// `ERR` if there is one word only; line ends trimmed.
fn coded(reply: &str) -> String {
    let (code, message) = reply.split_once(' ').unwrap_or(("ERR", reply));
    format!("{code} {}", message.trim_matches(['\r', '\n']))
}

/// `redis.call` (`raise`) or `redis.pcall`: the command's reply as a Lua value.
fn command(lua: &Lua, args: MultiValue, raise: bool) -> mlua::Result<Value> {
    // Errors found here, before the command runs, are not a command's: the script's
    // reply counts them in INFO errorstats, if it is one.
    let failed = |message: String| -> mlua::Result<Value> {
        if raise {
            Err(raised(message))
        } else {
            error_table(lua, &message)
        }
    };
    let words = match command_words(args) {
        Ok(words) => words,
        Err(e) => return failed(e.into()),
    };
    let request = Request {
        args: &words,
        acl_check_only: false,
    };
    match Runner::execute(lua, "redis.call/pcall", request)? {
        (Frame::Error(message), _) if raise => {
            Err(mlua::Error::external(Stop::Command(coded(&message))))
        }
        (Frame::Error(message), _) => command_error_table(lua, &coded(&message)),
        (frame, protocol) => uncapped(lua, || to_lua(lua, frame, protocol, 0)),
    }
}

/// A command's words from a script's arguments to `redis.call` (or `pcall`,
/// `acl_check_cmd`), or the error Redis gives for them.
fn command_words(args: MultiValue) -> Result<Vec<Vec<u8>>, &'static str> {
    if args.is_empty() {
        return Err("ERR Please specify at least one argument for this redis lib call");
    }
    args.iter()
        .map(|arg| match arg {
            Value::String(s) => Ok(s.as_bytes().to_vec()),
            // Numbers as `%.17g`, as Redis writes them (Lua's own `%.14g` would lose
            // digits: 9007199254740991 would be 9.007199254741e+15).
            Value::Integer(n) => Ok(n.to_string().into_bytes()),
            Value::Number(x) => Ok(resp::format_double(*x).into_bytes()),
            _ => Err("ERR Lua redis lib command arguments must be strings or integers"),
        })
        .collect()
}

/// `redis.acl_check_cmd(command, args...)`: whether the user running the script may
/// run the command with these arguments.
fn acl_check_cmd(lua: &Lua, args: MultiValue) -> mlua::Result<bool> {
    let words = command_words(args).map_err(raised)?;
    let request = Request {
        args: &words,
        acl_check_only: true,
    };
    match Runner::execute(lua, "redis.acl_check_cmd", request)?.0 {
        Frame::Error(e) => Err(raised(e)),
        answer => Ok(answer == Frame::Integer(1)),
    }
}

/// The error one of the `redis` table's functions raises where Redis's raises an
/// `{err=...}` table with `message` (code first).
fn raised(message: impl Into<String>) -> mlua::Error {
    mlua::Error::external(Stop::Reply(message.into()))
}

const WRONG_ARGUMENTS: &str = "ERR wrong number or type of arguments";

/// The one argument, if there is one and it is a string (not a number: Redis checks
/// the type).
fn one_string(args: &MultiValue) -> Option<&mlua::LuaString> {
    match (args.len(), args.front()) {
        (1, Some(Value::String(s))) => Some(s),
        _ => None,
    }
}

/// A value as C's `lua_tonumber` reads it: 0 if it is not a number or a numeric string.
fn number(lua: &Lua, value: &Value) -> f64 {
    lua.coerce_number(value.clone())
        .ok()
        .flatten()
        .unwrap_or(0.0)
}

/// A command's error reply as a script sees it: an `{err=...}` table that, as Redis's,
/// says it was counted in INFO errorstats already (returned by the script, it is not
/// counted again).
fn command_error_table(lua: &Lua, message: &str) -> mlua::Result<Value> {
    let t = error_table(lua, message)?;
    if let Value::Table(t) = &t {
        t.raw_set(COUNTED, true)?;
    }
    Ok(t)
}

/// The field of an `{err=...}` table that says so, Redis's name for it.
const COUNTED: &str = "ignore_error_stats_update";

/// Whether an `{err=...}` table is a command's error, counted already.
fn counted(t: &Table) -> bool {
    matches!(t.raw_get::<Value>(COUNTED), Ok(Value::Boolean(true)))
}

fn error_table(lua: &Lua, message: &str) -> mlua::Result<Value> {
    let t = lua.create_table()?;
    t.raw_set("err", message)?;
    Ok(Value::Table(t))
}

fn strings_table(lua: &Lua, items: &[Vec<u8>]) -> mlua::Result<Table> {
    let t = lua.create_table_with_capacity(items.len(), 0)?;
    for (i, item) in items.iter().enumerate() {
        t.raw_set(i + 1, lua.create_string(item)?)?;
    }
    Ok(t)
}

/// A reply as a script sees it. In RESP2 (a script's protocol unless it calls
/// `redis.setresp(3)`), RESP3's types take the shapes RESP2 sends them in; in RESP3 they
/// are Redis's tables: `{map=...}`, `{set=...}` (members as keys, each `true`),
/// `{double=...}`, `{big_number=...}`, `{verbatim_string={format=..., string=...}}`,
/// and null is `nil`, booleans `true` and `false`.
fn to_lua(lua: &Lua, frame: Frame, protocol: Protocol, depth: usize) -> mlua::Result<Value> {
    if depth > MAX_DEPTH {
        return Err(mlua::Error::runtime("reached lua stack limit"));
    }
    let convert = |frame: Frame| to_lua(lua, frame, protocol, depth + 1);
    let array = |items: Vec<Frame>| -> mlua::Result<Value> {
        let t = lua.create_table_with_capacity(items.len(), 0)?;
        for (i, item) in items.into_iter().enumerate() {
            t.raw_set(i + 1, convert(item)?)?;
        }
        Ok(Value::Table(t))
    };
    let tagged = |tag: &str, value: Value| -> mlua::Result<Value> {
        let t = lua.create_table_with_capacity(0, 1)?;
        t.raw_set(tag, value)?;
        Ok(Value::Table(t))
    };
    let resp3 = protocol == Protocol::Resp3;
    Ok(match frame {
        Frame::Simple(s) => tagged("ok", Value::String(lua.create_string(s)?))?,
        Frame::Error(s) => command_error_table(lua, &coded(&s))?,
        Frame::BulkError(b) => command_error_table(lua, &coded(&String::from_utf8_lossy(&b)))?,
        Frame::Integer(n) => Value::Number(n as f64),
        Frame::Bulk(b) => Value::String(lua.create_string(b)?),
        Frame::Array(items) | Frame::Push(items) => array(items)?,
        Frame::Null | Frame::NullArray if resp3 => Value::Nil,
        Frame::Null | Frame::NullArray => Value::Boolean(false),
        Frame::Boolean(b) if resp3 => Value::Boolean(b),
        Frame::Boolean(b) => Value::Number(if b { 1.0 } else { 0.0 }),
        Frame::Double(x) if resp3 => tagged("double", Value::Number(x))?,
        Frame::DoubleText(s) if resp3 => {
            tagged("double", Value::Number(s.parse().unwrap_or(f64::NAN)))?
        }
        Frame::Double(x) => Value::String(lua.create_string(resp::format_double(x))?),
        Frame::DoubleText(s) => Value::String(lua.create_string(s)?),
        Frame::BigNumber(s) if resp3 => tagged("big_number", Value::String(lua.create_string(s)?))?,
        Frame::BigNumber(s) => Value::String(lua.create_string(s)?),
        Frame::Verbatim { format, text } if resp3 => {
            let t = lua.create_table_with_capacity(0, 2)?;
            t.raw_set("string", lua.create_string(text)?)?;
            t.raw_set("format", lua.create_string(format)?)?;
            tagged("verbatim_string", Value::Table(t))?
        }
        Frame::Verbatim { text, .. } => Value::String(lua.create_string(text)?),
        Frame::Map(pairs) if resp3 => {
            let t = lua.create_table_with_capacity(0, pairs.len())?;
            for (key, value) in pairs {
                set_field(&t, convert(key)?, convert(value)?)?;
            }
            tagged("map", Value::Table(t))?
        }
        Frame::Map(pairs) => array(pairs.into_iter().flat_map(|(k, v)| [k, v]).collect())?,
        Frame::Set(members) if resp3 => {
            let t = lua.create_table_with_capacity(0, members.len())?;
            for member in members {
                set_field(&t, convert(member)?, Value::Boolean(true))?;
            }
            tagged("set", Value::Table(t))?
        }
        Frame::Set(members) => array(members)?,
        // As Redis: a script sees the reply an attribute annotates, not the attribute.
        Frame::Attribute { reply, .. } => convert(*reply)?,
    })
}

/// Sets `t[key] = value`, as Lua's `lua_settable` in Redis's conversion does, but
/// leaving out the keys no table can hold (nil; NaN) rather than failing.
fn set_field(t: &Table, key: Value, value: Value) -> mlua::Result<()> {
    match key {
        Value::Nil => Ok(()),
        Value::Number(x) if x.is_nan() => Ok(()),
        key => t.raw_set(key, value),
    }
}

/// A script's return value as a reply, with its protocol's booleans (RESP2: `true` is
/// 1, `false` null; RESP3: booleans). Tables become what Redis makes of them: an
/// error, a status, a double, a big number, a verbatim string, a map or a set by
/// their field, else an array up to the first nil.
fn to_frame(value: &Value, protocol: Protocol, depth: usize) -> Frame {
    if depth > MAX_DEPTH {
        return Frame::error("ERR reached lua stack limit");
    }
    let convert = |value: &Value| to_frame(value, protocol, depth + 1);
    // Status and error lines cannot hold line ends: Redis turns them into spaces.
    let line =
        |s: &mlua::LuaString| String::from_utf8_lossy(&s.as_bytes()).replace(['\r', '\n'], " ");
    match value {
        Value::Boolean(b) if protocol == Protocol::Resp3 => Frame::Boolean(*b),
        Value::Boolean(true) => Frame::Integer(1),
        Value::Integer(n) => Frame::Integer(*n),
        // As Redis's C cast on x86: out of range (or NaN) is the smallest integer.
        Value::Number(x) if x.is_finite() && x.abs() < 9.2e18 => Frame::Integer(x.trunc() as i64),
        Value::Number(_) => Frame::Integer(i64::MIN),
        Value::String(s) => Frame::Bulk(s.as_bytes().to_vec()),
        Value::Table(t) => {
            let field = |name: &str| t.raw_get::<Value>(name).unwrap_or(Value::Nil);
            if let Value::String(e) = field("err") {
                return Frame::error(line(&e));
            }
            if let Value::String(s) = field("ok") {
                return Frame::Simple(line(&s));
            }
            match field("double") {
                Value::Number(x) => return Frame::Double(x),
                Value::Integer(n) => return Frame::Double(n as f64),
                _ => {}
            }
            if let Value::String(s) = field("big_number") {
                return Frame::BigNumber(line(&s));
            }
            if let Value::Table(v) = field("verbatim_string") {
                let text = v.raw_get::<Value>("string");
                if let (Ok(Value::String(format)), Ok(Value::String(text))) =
                    (v.raw_get::<Value>("format"), text)
                {
                    let mut code = *b"   ";
                    for (to, from) in code.iter_mut().zip(format.as_bytes().iter()) {
                        *to = *from;
                    }
                    return Frame::Verbatim {
                        format: code,
                        text: text.as_bytes().to_vec(),
                    };
                }
            }
            if let Value::Table(map) = field("map") {
                let pairs = map.pairs::<Value, Value>().filter_map(Result::ok);
                return Frame::Map(pairs.map(|(k, v)| (convert(&k), convert(&v))).collect());
            }
            if let Value::Table(set) = field("set") {
                let members = set.pairs::<Value, Value>().filter_map(Result::ok);
                return Frame::Set(members.map(|(k, _)| convert(&k)).collect());
            }
            let mut items = Vec::new();
            for i in 1.. {
                match t.raw_get::<Value>(i) {
                    Ok(Value::Nil) | Err(_) => break,
                    Ok(v) => items.push(convert(&v)),
                }
            }
            Frame::Array(items)
        }
        _ => Frame::Null,
    }
}

/// The `redis` table, less `call` and `pcall`, which each run sets for its session.
fn redis_table(lua: &Lua) -> mlua::Result<Table> {
    let redis = lua.create_table()?;
    lua.set_app_data(Slot::<Runner>::default());
    let call = lua.create_function(|lua, args: MultiValue| command(lua, args, true))?;
    redis.raw_set("call", call)?;
    let pcall = lua.create_function(|lua, args: MultiValue| command(lua, args, false))?;
    redis.raw_set("pcall", pcall)?;
    redis.raw_set("acl_check_cmd", lua.create_function(acl_check_cmd)?)?;
    redis.raw_set(
        "sha1hex",
        lua.create_function(|lua, args: MultiValue| {
            if args.len() != 1 {
                return Err(raised("ERR wrong number of arguments"));
            }
            let text = lua.coerce_string(args[0].clone())?;
            Ok(sha1_hex(
                &text.map(|t| t.as_bytes().to_vec()).unwrap_or_default(),
            ))
        })?,
    )?;
    // Given anything but one string, these two return (not raise) an error, as Redis's.
    redis.raw_set(
        "error_reply",
        lua.create_function(|lua, args: MultiValue| match one_string(&args) {
            Some(message) => {
                let message = message.to_string_lossy();
                error_table(lua, &coded(message.strip_prefix('-').unwrap_or(&message)))
            }
            None => error_table(lua, WRONG_ARGUMENTS),
        })?,
    )?;
    redis.raw_set(
        "status_reply",
        lua.create_function(|lua, args: MultiValue| match one_string(&args) {
            Some(status) => {
                let t = lua.create_table()?;
                t.raw_set("ok", status)?;
                Ok(Value::Table(t))
            }
            None => error_table(lua, WRONG_ARGUMENTS),
        })?,
    )?;
    redis.raw_set(
        "setresp",
        lua.create_function(|lua, args: MultiValue| {
            if args.len() != 1 {
                return Err(raised("ERR redis.setresp() requires one argument."));
            }
            let protocol = match number(lua, &args[0]) {
                2.0 => Protocol::Resp2,
                3.0 => Protocol::Resp3,
                _ => return Err(raised("ERR RESP version must be 2 or 3.")),
            };
            Runner::with(lua, "redis.setresp", |runner| runner.protocol = protocol)
        })?,
    )?;
    // Replication settings: hotkv has no replicas, so there is nothing to choose, but
    // the argument is checked as Redis checks it.
    redis.raw_set(
        "set_repl",
        lua.create_function(|lua, args: MultiValue| {
            if args.len() != 1 {
                // Redis's words, though it takes one.
                return Err(raised("ERR redis.set_repl() requires two arguments."));
            }
            let flags = number(lua, &args[0]) as i64;
            if flags & !3 != 0 {
                return Err(raised(
                    "ERR Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.",
                ));
            }
            Ok(())
        })?,
    )?;
    redis.raw_set("replicate_commands", lua.create_function(|_, ()| Ok(true))?)?;
    for (name, value) in [
        ("REPL_NONE", 0),
        ("REPL_AOF", 1),
        ("REPL_SLAVE", 2),
        ("REPL_REPLICA", 2),
        ("REPL_ALL", 3),
    ] {
        redis.raw_set(name, value)?;
    }
    add_log_and_version(lua, &redis)?;
    Ok(redis)
}

/// The `redis` table a library's code sees while it loads: it can register
/// functions, log, and read the version.
fn load_redis_table(lua: &Lua) -> mlua::Result<Table> {
    let redis = lua.create_table()?;
    redis.raw_set(
        "register_function",
        lua.create_function(|lua, args: MultiValue| {
            let refuse = |message: &str| Err(raised(format!("ERR {message}")));
            if lua.app_data_ref::<Registering>().is_none() {
                return refuse(
                    "redis.register_function can only be called on FUNCTION LOAD command",
                );
            }
            let registered = match registration(lua, args) {
                Ok(registered) => registered,
                Err(why) => return refuse(&why),
            };
            let mut registering = lua
                .app_data_mut::<Registering>()
                .expect("checked present above; only FUNCTION LOAD removes it");
            if let Err(why) = crate::libraries::check_name(registered.name.as_bytes()) {
                return refuse(&why);
            }
            if registering.0.iter().any(|f| f.name == registered.name) {
                return refuse("Function already exists in the library");
            }
            registering.0.push(registered);
            Ok(())
        })?,
    )?;
    add_log_and_version(lua, &redis)?;
    Ok(redis)
}

/// `redis.register_function`'s arguments, checked as Redis checks them: a name and
/// a callback, or one table of named arguments (`function_name`, `callback`,
/// `flags`, `description`).
fn registration(lua: &Lua, args: MultiValue) -> Result<Registered, String> {
    // Redis takes numbers where it takes strings, as Lua's own functions do.
    let text = |value: &Value| -> Option<Vec<u8>> {
        match value {
            Value::String(_) | Value::Integer(_) | Value::Number(_) => lua
                .coerce_string(value.clone())
                .ok()
                .flatten()
                .map(|s| s.as_bytes().to_vec()),
            _ => None,
        }
    };
    let name_of = |bytes: Vec<u8>| String::from_utf8_lossy(&bytes).into_owned();
    match args.len() {
        2 => {
            let name = text(&args[0])
                .ok_or("first argument to redis.register_function must be a string")?;
            let Value::Function(callback) = &args[1] else {
                return Err("second argument to redis.register_function must be a function".into());
            };
            Ok(Registered {
                name: name_of(name),
                description: None,
                flags: ScriptFlags {
                    declared: true,
                    ..ScriptFlags::default()
                },
                callback: callback.clone(),
            })
        }
        1 => {
            let Value::Table(named) = &args[0] else {
                return Err("calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).".into());
            };
            let (mut name, mut description, mut callback) = (None, None, None);
            let mut flags = ScriptFlags {
                declared: true,
                ..ScriptFlags::default()
            };
            for pair in named.pairs::<Value, Value>() {
                let (key, value) = pair.map_err(|e| e.to_string())?;
                let key = text(&key)
                    .ok_or("named argument key given to redis.register_function is not a string")?;
                match key.to_ascii_lowercase().as_slice() {
                    b"function_name" => name = Some(text(&value).ok_or(
                        "function_name argument given to redis.register_function must be a string",
                    )?),
                    b"description" => description = Some(text(&value).ok_or(
                        "description argument given to redis.register_function must be a string",
                    )?),
                    b"callback" => match value {
                        Value::Function(f) => callback = Some(f),
                        _ => return Err(
                            "callback argument given to redis.register_function must be a function"
                                .into(),
                        ),
                    },
                    b"flags" => {
                        let Value::Table(list) = value else {
                            return Err("flags argument to redis.register_function must be a table representing function flags".into());
                        };
                        for flag in list.sequence_values::<Value>() {
                            let flag = flag.ok().and_then(|f| text(&f));
                            let known = flag.is_some_and(|f| {
                                flags.set(&String::from_utf8_lossy(&f).to_ascii_lowercase())
                            });
                            if !known {
                                return Err("unknown flag given".into());
                            }
                        }
                    }
                    _ => return Err("unknown argument given to redis.register_function".into()),
                }
            }
            let name = name.ok_or("redis.register_function must get a function name argument")?;
            let callback =
                callback.ok_or("redis.register_function must get a callback argument")?;
            Ok(Registered {
                name: name_of(name),
                description,
                flags,
                callback,
            })
        }
        _ => Err("wrong number of arguments to redis.register_function".into()),
    }
}

/// `redis.log` and its levels, and the version Redis's API reports.
fn add_log_and_version(lua: &Lua, redis: &Table) -> mlua::Result<()> {
    redis.raw_set(
        "log",
        lua.create_function(|lua, args: MultiValue| {
            if args.len() < 2 {
                return Err(raised("ERR redis.log() requires two arguments or more."));
            }
            if !matches!(lua.coerce_number(args[0].clone()), Ok(Some(_))) {
                return Err(raised("ERR First argument must be a number (log level)."));
            }
            let level = number(lua, &args[0]) as i64;
            if !(0..=3).contains(&level) {
                return Err(raised("ERR Invalid debug level."));
            }
            // Strings and numbers, as Redis glues them; other values are left out.
            let words: Vec<String> = args
                .iter()
                .skip(1)
                .filter_map(|word| lua.coerce_string(word.clone()).ok().flatten())
                .map(|word| word.to_string_lossy())
                .collect();
            let text = words.join(" ");
            match level {
                3 => tracing::warn!(target: "script", "{text}"),
                2 => tracing::info!(target: "script", "{text}"),
                _ => tracing::debug!(target: "script", "{text}"),
            }
            Ok(())
        })?,
    )?;
    for (name, value) in [
        ("LOG_DEBUG", 0),
        ("LOG_VERBOSE", 1),
        ("LOG_NOTICE", 2),
        ("LOG_WARNING", 3),
    ] {
        redis.raw_set(name, value)?;
    }
    redis.raw_set("REDIS_VERSION", crate::REDIS_VERSION)?;
    let number = crate::REDIS_VERSION
        .split('.')
        .map(|part| part.parse::<i64>().unwrap_or(0))
        .fold(0, |number, part| number << 8 | part);
    redis.raw_set("REDIS_VERSION_NUM", number)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha1_of_known_texts() {
        assert_eq!(sha1_hex(b""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
        assert_eq!(
            sha1_hex(b"return 1"),
            "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"
        );
    }

    fn run(scripts: &mut Scripts, text: &str) -> Frame {
        let (sha, script) = match scripts.load(text.as_bytes()) {
            Ok(loaded) => loaded,
            Err(e) => return Frame::Error(e),
        };
        scripts
            .run(
                Target::Script {
                    sha: &sha,
                    script: &script,
                },
                &[b"k".to_vec()],
                &[b"a".to_vec()],
                None,
                None,
                |call, _| match call.args[0].as_slice() {
                    b"fail" => Frame::error("ERR failed"),
                    _ => Frame::Array(call.args.iter().map(|a| Frame::Bulk(a.clone())).collect()),
                },
            )
            .0
    }

    #[test]
    fn values_convert_both_ways_as_in_redis() {
        let mut s = Scripts::new().unwrap();
        assert_eq!(run(&mut s, "return 1.9"), Frame::Integer(1));
        assert_eq!(run(&mut s, "return -1.9"), Frame::Integer(-1));
        assert_eq!(run(&mut s, "return 1e20"), Frame::Integer(i64::MIN));
        assert_eq!(run(&mut s, "return true"), Frame::Integer(1));
        assert_eq!(run(&mut s, "return false"), Frame::Null);
        assert_eq!(
            run(&mut s, "return {1, 'a', {2}, nil, 3}"),
            Frame::Array(vec![
                Frame::Integer(1),
                Frame::bulk("a"),
                Frame::Array(vec![Frame::Integer(2)])
            ])
        );
        assert_eq!(
            run(&mut s, "return {ok='FINE'}"),
            Frame::Simple("FINE".into())
        );
        assert_eq!(
            run(&mut s, "return redis.error_reply('-E x')"),
            Frame::error("E x")
        );
        assert_eq!(
            run(
                &mut s,
                "return redis.call('echo', KEYS[1], ARGV[1], 3, 1.5)"
            ),
            Frame::Array(["echo", "k", "a", "3", "1.5"].map(Frame::bulk).to_vec())
        );
    }

    /// Errors raised by the server's functions are caught by a script's `pcall` as
    /// Redis's strings and seen by an `xpcall` handler as Redis's tables; uncaught,
    /// each names the line of the script that raised it, past Lua's and the
    /// PRELUDE's own functions.
    #[test]
    fn errors_are_caught_as_redis_raises_them_and_name_the_scripts_line() {
        let mut s = Scripts::new().unwrap();
        let caught = [
            ("return select(2, pcall(redis.call, 'fail'))", "ERR failed"),
            ("return select(2, pcall(redis.call))", "ERR Please specify at least one argument for this redis lib call"),
            ("return select(2, pcall(redis.sha1hex))", "ERR wrong number of arguments"),
            ("return select(2, pcall(rawset, string, 'x', 1))", "Attempt to modify a readonly table"),
            ("return select(2, pcall(error, {err = 'E mine'}))", "E mine"),
            ("return select(2, xpcall(function() redis.call('fail') end, function(e) return type(e) .. ':' .. e.err end))", "table:ERR failed"),
            ("return select(2, pcall(redis.setresp, 7))", "ERR RESP version must be 2 or 3."),
        ];
        for (text, expected) in caught {
            assert_eq!(run(&mut s, text), Frame::bulk(expected), "{text}");
        }
        let uncaught = [
            (
                "local function f()\n  redis.call('fail')\nend\nf()",
                "ERR failed",
                "@user_script:2",
            ),
            (
                "\n\nrawset(string, 'x', 1)",
                "ERR Attempt to modify a readonly table",
                "@user_script:3",
            ),
            ("\nerror({err = 'E mine'})", "E mine", "@user_script:2"),
            ("error({})", "ERR unknown error", "@user_script:1"),
            ("error('boom', 0)", "ERR boom", "@user_script:1"),
            (
                "\nloadstring('\\nredis.call(\"fail\")', 'chunk')()",
                "ERR failed",
                "chunk:2",
            ),
        ];
        for (text, message, place) in uncaught {
            let sha = sha1_hex(text.as_bytes());
            assert_eq!(
                run(&mut s, text),
                Frame::error(format!("{message} script: {sha}, on {place}.")),
                "{text}"
            );
        }
    }

    #[test]
    fn errors_are_worded_as_redis_words_them() {
        let mut s = Scripts::new().unwrap();
        let sha = sha1_hex(b"\nreturn redis.call('fail')");
        assert_eq!(
            run(&mut s, "\nreturn redis.call('fail')"),
            Frame::error(format!("ERR failed script: {sha}, on @user_script:2."))
        );
        assert_eq!(
            run(&mut s, "return redis.pcall('fail')['err']"),
            Frame::bulk("ERR failed")
        );
        let sha = sha1_hex(b"x = 1");
        assert_eq!(
            run(&mut s, "x = 1"),
            Frame::error(format!(
                "ERR user_script:1: Attempt to modify a readonly table script: {sha}, on @user_script:1."
            ))
        );
        assert!(
            matches!(run(&mut s, "return print"), Frame::Error(e) if e.contains("nonexistent global variable 'print'"))
        );
        assert_eq!(
            run(&mut s, "return redis.call("),
            Frame::error("ERR Error compiling script (new function): user_script:1: unexpected symbol near '<eof>'")
        );
        assert_eq!(
            run(&mut s, "#!lua flags=bogus\nreturn 1"),
            Frame::error("ERR Unexpected flag in script shebang: bogus")
        );
        assert_eq!(
            run(&mut s, "#!lua flags=no-writes\nreturn 1"),
            Frame::Integer(1)
        );
    }

    fn load(s: &Scripts, code: &str) -> Result<Library, String> {
        let (name, body) = crate::libraries::metadata(code.as_bytes())?;
        s.load_library(name, code.as_bytes(), body, Some(LOAD_TIME_LIMIT))
    }

    fn call(s: &Scripts, library: &Library, keys: &[&str]) -> Frame {
        let keys: Vec<Vec<u8>> = keys.iter().map(|k| k.as_bytes().to_vec()).collect();
        let target = Target::Function(&library.functions[0]);
        s.run(target, &keys, &[], None, None, |_, _| Frame::Null).0
    }

    /// A library's code sees `redis` alone while it loads, and its functions the whole
    /// world after, even once a load has failed midway (the switch back is not skipped).
    #[test]
    fn a_library_loads_in_its_own_world_and_its_functions_run_in_the_scripts_one() {
        let mut s = Scripts::new().unwrap();
        let library = load(&s, "#!lua name=good\nlocal rep = function(k) return string.rep(k, 2) end\nredis.register_function('twice', function(keys) return rep(keys[1]) end)").unwrap();
        assert_eq!(library.name, "good");
        assert_eq!(library.functions[0].name, "twice");
        let failed = load(&s, "#!lua name=bad\nredis.register_function('f', function() end)\nlocal x = string.rep('a', 2)").err().unwrap();
        assert!(
            failed.contains("nonexistent global variable 'string'"),
            "{failed}"
        );
        let timed_out = load(&s, "#!lua name=slow\nwhile true do end")
            .err()
            .unwrap();
        assert_eq!(
            timed_out,
            "Error registering functions: ERR FUNCTION LOAD timeout"
        );
        assert_eq!(call(&s, &library, &["ab"]), Frame::bulk("abab"));
        // A script meanwhile sees its own globals, not a function's.
        let (sha, script) = s.load(b"return string.upper(KEYS[1])").unwrap();
        let reply = s.run(
            Target::Script {
                sha: &sha,
                script: &script,
            },
            &[b"x".to_vec()],
            &[],
            None,
            None,
            |_, _| Frame::Null,
        );
        assert_eq!(reply.0, Frame::bulk("X"));
        let none = load(&s, "#!lua name=empty\nlocal a = 1").err().unwrap();
        assert_eq!(none, "No functions registered");
    }

    /// Lua 5.1 runs bytecode unchecked: a script may load source code only.
    #[test]
    fn binary_chunks_are_refused() {
        let mut s = Scripts::new().unwrap();
        let dumped = "string.dump(function() return 1 end)";
        assert_eq!(
            run(&mut s, &format!("return select(2, loadstring({dumped}))")),
            Frame::bulk("binary chunks are not allowed")
        );
        let pieces = format!("local d, n = {dumped}, 0 return type(load(function() \
             n = n + 1 if n == 1 then return d:sub(1, 1) elseif n == 2 then return d:sub(2) end end))");
        assert_eq!(run(&mut s, &pieces), Frame::bulk("nil"));
        assert_eq!(
            run(&mut s, "return loadstring('return 5')()"),
            Frame::Integer(5)
        );
        let source = "local parts, n = {'return ', '6'}, 0 \
             return load(function() n = n + 1 return parts[n] end)()";
        assert_eq!(run(&mut s, source), Frame::Integer(6));
    }

    #[test]
    fn a_script_past_its_time_limit_is_stopped_and_the_next_runs() {
        let mut s = Scripts::new().unwrap();
        let limit = Some(Duration::from_millis(50));
        // Catching the error does not keep a script going: past its limit, what
        // pcall, xpcall or a coroutine caught is raised again.
        for text in [
            "while true do end",
            "local f = function() while 1 do redis.call('x') end end while 1 do pcall(f) end",
            "local f = function() while 1 do end end \
             while 1 do xpcall(f, function(e) return e end) end",
            "while 1 do coroutine.resume(coroutine.create(function() while 1 do end end)) end",
        ] {
            let (sha, script) = s.load(text.as_bytes()).unwrap();
            let target = Target::Script {
                sha: &sha,
                script: &script,
            };
            let (reply, _) = s.run(target, &[], &[], limit, None, |_, _| Frame::Null);
            assert!(
                matches!(&reply, Frame::Error(e) if e.contains("busy-reply-threshold")),
                "{text}: {reply:?}"
            );
        }
        assert_eq!(run(&mut s, "return 7"), Frame::Integer(7));
        // Errors caught before the limit stay caught.
        assert_eq!(
            run(&mut s, "return select(2, pcall(error, 'x', 0))"),
            Frame::bulk("x")
        );
        // Nor does the clock run on into the next script, which has no limit: it waits
        // past the old limit in a command, then runs long enough to be checked.
        let (sha, script) = s
            .load(b"redis.call('wait') for i = 1, 100000 do end return 1")
            .unwrap();
        let target = Target::Script {
            sha: &sha,
            script: &script,
        };
        let (waited, _) = s.run(target, &[], &[], None, None, |_, _| {
            std::thread::sleep(Duration::from_millis(60));
            Frame::Simple("OK".into())
        });
        assert_eq!(waited, Frame::Integer(1));
    }

    /// A script reads replies in RESP2 until it calls `redis.setresp(3)`, and its
    /// commands are run in that protocol; RESP3's types come as Redis's tables, and
    /// such tables (and booleans, in RESP3) go back as RESP3's types.
    #[test]
    fn replies_convert_in_the_scripts_protocol() {
        let mut s = Scripts::new().unwrap();
        let mut asked = Vec::new();
        let text = "local before = redis.call('x')\n\
            redis.setresp(3)\n\
            local r = redis.call('x')\n\
            return {type(before), r.map.d.double, tostring(r.map.s.set.m), type(r.map.n), \
                    r.map.b, r.map.big.big_number, r.map.v.verbatim_string.format}";
        let (sha, script) = s.load(text.as_bytes()).unwrap();
        let target = Target::Script {
            sha: &sha,
            script: &script,
        };
        let (reply, _) = s.run(target, &[], &[], None, None, |_, protocol| {
            asked.push(protocol);
            Frame::Map(vec![
                (Frame::bulk("d"), Frame::Double(1.5)),
                (Frame::bulk("s"), Frame::Set(vec![Frame::bulk("m")])),
                (Frame::bulk("n"), Frame::Null),
                (Frame::bulk("b"), Frame::Boolean(true)),
                (
                    Frame::bulk("big"),
                    Frame::BigNumber("12345678901234567890".into()),
                ),
                (
                    Frame::bulk("v"),
                    Frame::Verbatim {
                        format: *b"txt",
                        text: b"x".to_vec(),
                    },
                ),
            ])
        });
        assert_eq!(asked, [Protocol::Resp2, Protocol::Resp3]);
        assert_eq!(
            reply,
            Frame::Array(vec![
                Frame::bulk("table"),
                Frame::Integer(1),
                Frame::bulk("true"),
                Frame::bulk("nil"),
                Frame::Boolean(true),
                Frame::bulk("12345678901234567890"),
                Frame::bulk("txt"),
            ])
        );
        assert_eq!(
            run(&mut s, "return {map={a={double=1.5}}, set={m=true}}"),
            Frame::Map(vec![(Frame::bulk("a"), Frame::Double(1.5))])
        );
        assert_eq!(
            run(&mut s, "return {set={m=true}}"),
            Frame::Set(vec![Frame::bulk("m")])
        );
        assert_eq!(run(&mut s, "return false"), Frame::Null);
        assert_eq!(
            run(&mut s, "redis.setresp(3) return {false, true}"),
            Frame::Array(vec![Frame::Boolean(false), Frame::Boolean(true)])
        );
    }

    /// `redis.call` lives with the state, but runs commands only inside a run: kept
    /// and called after (here from Rust), it raises an error.
    #[test]
    fn redis_call_outside_a_run_is_an_error() {
        let s = Scripts::new().unwrap();
        let redis: Table = s.lua.globals().raw_get("redis").unwrap();
        let call: Function = redis.get("call").unwrap();
        let error = call.call::<Value>("PING").unwrap_err().to_string();
        assert!(
            error.contains("redis.call/pcall can only be called inside a script invocation"),
            "{error}"
        );
    }

    /// Scripts share one Lua state: none may change what the next one sees. Each
    /// way in is refused with Redis's error, and the libraries stay whole after.
    #[test]
    fn scripts_cannot_change_the_world_later_scripts_see() {
        let mut s = Scripts::new().unwrap();
        for trick in [
            "string.rep = nil",
            "redis.call = function() return 1 end",
            "redis = nil",
            "_G.string = nil",
            "setmetatable(_G, {})",
            "getmetatable(_G).__index = {}",
            "rawset(string, 'rep', nil)",
            "setmetatable(string, {__index = function() return nil end})",
            "getmetatable('').__index = {}",
            "loadstring('string = nil')()",
            "load(function() return nil end) coroutine.create = nil",
            "for _, lib in pairs({cjson, bit, cmsgpack, math, table}) do for name in pairs(lib) do lib[name] = nil end end",
        ] {
            let reply = run(&mut s, trick);
            assert!(
                matches!(&reply, Frame::Error(e) if e.contains("Attempt to modify a readonly table")),
                "{trick}: {reply:?}"
            );
        }
        for (check, expected) in [
            ("return string.rep('ab', 2)", Frame::bulk("abab")),
            ("return ('ab'):rep(2)", Frame::bulk("abab")),
            ("return redis.call('echo', 'x')[1]", Frame::bulk("echo")),
            (
                "return rawequal(getmetatable('').__index, string)",
                Frame::Integer(1),
            ),
            ("return rawget(string, 'rep') ~= nil", Frame::Integer(1)),
            (
                "local n = 0 for _ in pairs(math) do n = n + 1 end return n > 20",
                Frame::Integer(1),
            ),
            ("return cjson.encode({1})", Frame::bulk("[1]")),
            // Plain tables a script makes are its own to change.
            (
                "local t = setmetatable({}, {}) rawset(t, 'a', 1) return t.a",
                Frame::Integer(1),
            ),
        ] {
            assert_eq!(run(&mut s, check), expected, "{check}");
        }
    }

    #[test]
    fn lua_memory_is_capped() {
        let mut s = Scripts::with_memory_limit(32 << 20).unwrap();
        let reply = run(&mut s, "local t = {} local x = string.rep('x', 1024 * 1024) for i = 1, 1e9 do t[i] = x .. i end");
        assert!(
            matches!(&reply, Frame::Error(e) if e.contains("memory")),
            "{reply:?}"
        );
        assert_eq!(run(&mut s, "return 7"), Frame::Integer(7));
    }
}
