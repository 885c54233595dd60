//! Function libraries (FUNCTION LOAD, FCALL): what each library registered, found by
//! the library's name (case-sensitive, as Redis's) or by a function's name (any
//! case, as Redis's), and the rules by which libraries join the ones kept. Running a
//! library's code to learn what it registers is Lua's part, in `scripting.rs`.
//!
//! A library is its code: the first line names the engine and the library
//! (`#!lua name=mylib`), the rest registers functions with `redis.register_function`.
//! Persisted (lsm engine) and dumped (FUNCTION DUMP) as that code only; loading it
//! again registers the same functions.

use std::collections::{BTreeMap, HashMap};

use mlua::Function;

use crate::scripting::ScriptFlags;

/// A function a library registered.
pub struct Registered {
    pub name: String,
    pub description: Option<Vec<u8>>,
    pub flags: ScriptFlags,
    pub callback: Function,
}

pub struct Library {
    pub name: String,
    /// The code as loaded, its metadata line included.
    pub code: Vec<u8>,
    /// In the order registered.
    pub functions: Vec<Registered>,
}

#[derive(Default)]
pub struct Libraries {
    /// By name, so FUNCTION LIST and DUMP give them in one order every time.
    by_name: BTreeMap<String, Library>,
    /// Each function's name in lower case, and its library's name.
    functions: HashMap<String, String>,
}

const BAD_NAME: &str = "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long";

/// Whether `name` may name a library or a function: letters, digits and `_`, at
/// least one. (Redis gives the library's words for a bad function name too.)
pub fn check_name(name: &[u8]) -> Result<(), String> {
    let valid = |&b: &u8| b.is_ascii_alphanumeric() || b == b'_';
    if name.is_empty() || !name.iter().all(valid) {
        return Err(BAD_NAME.into());
    }
    Ok(())
}

/// The library a code's first line names, checked as Redis checks it: a `#!`
/// line, split as Redis splits arguments (quotes allowed), whose first word is the
/// engine (`lua`, in any case) and whose others are `name=...` once. Returns the
/// name and where the code after the line starts (at its newline, so that line
/// numbers stay those of the whole text).
pub fn metadata(code: &[u8]) -> Result<(String, usize), String> {
    let Some(after) = code.strip_prefix(b"#!") else {
        return Err("Missing library metadata".into());
    };
    // Redis finds the line's end with strchr, which a NUL byte stops.
    let end = after
        .iter()
        .position(|&b| b == b'\n' || b == 0)
        .filter(|&at| after[at] == b'\n')
        .ok_or("Invalid library metadata")?;
    let parts = match resp::split_args(&after[..end]) {
        Some(parts) => parts,
        None => return Err("Invalid library metadata".into()),
    };
    // The engine is the first word less the `#!`, which `after` already left out:
    // a line that is `#!` alone or starts `#! ` names the engine ''.
    let (engine, options) = if after[..end].first().is_none_or(|b| b.is_ascii_whitespace()) {
        (Vec::new(), &parts[..])
    } else {
        match parts.split_first() {
            Some((engine, options)) => (engine.clone(), options),
            None => return Err("Invalid library metadata".into()),
        }
    };
    let mut name = None;
    for part in options {
        match part.get(..5) {
            Some(key) if key.eq_ignore_ascii_case(b"name=") => {
                if name.is_some() {
                    return Err(
                        "Invalid metadata value, name argument was given multiple times".into(),
                    );
                }
                name = Some(&part[5..]);
            }
            _ => {
                return Err(format!(
                    "Invalid metadata value given: {}",
                    String::from_utf8_lossy(part)
                ))
            }
        }
    }
    let Some(name) = name else {
        return Err("Library name was not given".into());
    };
    check_name(name)?;
    if !engine.eq_ignore_ascii_case(b"lua") {
        return Err(format!(
            "Engine '{}' not found",
            String::from_utf8_lossy(&engine)
        ));
    }
    let name = String::from_utf8(name.to_vec()).expect("checked: ASCII letters, digits and _");
    Ok((name, 2 + end))
}

impl Libraries {
    pub fn get(&self, name: &str) -> Option<&Library> {
        self.by_name.get(name)
    }

    /// The function named `name`, in any case.
    pub fn function(&self, name: &[u8]) -> Option<&Registered> {
        let key = std::str::from_utf8(name).ok()?.to_ascii_lowercase();
        let library = self.by_name.get(self.functions.get(&key)?)?;
        library
            .functions
            .iter()
            .find(|f| f.name.eq_ignore_ascii_case(&key))
    }

    pub fn iter(&self) -> impl Iterator<Item = &Library> {
        self.by_name.values()
    }

    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    pub fn function_count(&self) -> usize {
        self.functions.len()
    }

    pub fn remove(&mut self, name: &str) -> Option<Library> {
        let library = self.by_name.remove(name)?;
        for f in &library.functions {
            self.functions.remove(&f.name.to_ascii_lowercase());
        }
        Some(library)
    }

    pub fn clear(&mut self) {
        self.by_name.clear();
        self.functions.clear();
    }

    /// Adds `new`, all of it or none, refused as [`Libraries::check_joinable`] refuses.
    pub fn join(&mut self, new: Libraries, replace: bool) -> Result<(), String> {
        self.check_joinable(&new.by_name.values().collect::<Vec<_>>(), replace)?;
        for library in new.by_name.into_values() {
            self.replace(library);
        }
        Ok(())
    }

    /// Adds one library (FUNCTION LOAD), refused as [`Libraries::check_joinable`]
    /// refuses.
    pub fn add_one(&mut self, library: Library, replace: bool) -> Result<(), String> {
        self.check_joinable(&[&library], replace)?;
        self.replace(library);
        Ok(())
    }

    /// Whether `new` may join: a library of a name already kept is refused, or
    /// replaces the kept one if `replace`; a function whose name (in any case) a
    /// library staying keeps is refused.
    fn check_joinable(&self, new: &[&Library], replace: bool) -> Result<(), String> {
        if let Some(kept) = new.iter().find(|l| self.by_name.contains_key(&l.name)) {
            if !replace {
                return Err(format!("Library {} already exists", kept.name));
            }
        }
        for f in new.iter().flat_map(|l| &l.functions) {
            let Some(owner) = self.functions.get(&f.name.to_ascii_lowercase()) else {
                continue;
            };
            if !new.iter().any(|l| &l.name == owner) {
                return Err(format!("Function {} already exists", f.name));
            }
        }
        Ok(())
    }

    fn replace(&mut self, library: Library) {
        self.remove(&library.name);
        self.add(library);
    }

    /// Adds `library`, whose name and functions' names are free: a library's own
    /// functions were checked distinct as it registered them (case-sensitively, as
    /// Redis checks them, so two may differ only in case: FCALL finds the first).
    fn add(&mut self, library: Library) {
        assert!(!self.by_name.contains_key(&library.name));
        for f in &library.functions {
            self.functions
                .entry(f.name.to_ascii_lowercase())
                .or_insert_with(|| library.name.clone());
        }
        self.by_name.insert(library.name.clone(), library);
    }

    /// Adds `library` to a set being built (FUNCTION RESTORE's payload): refused if
    /// one of its name or a function of its names is already in the set.
    pub fn push(&mut self, library: Library) -> Result<(), String> {
        if self.by_name.contains_key(&library.name) {
            return Err(format!("Library '{}' already exists", library.name));
        }
        self.add_one(library, false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(code: &str) -> Result<String, String> {
        metadata(code.as_bytes()).map(|(name, _)| name)
    }

    #[test]
    fn metadata_is_read_as_redis_reads_it() {
        assert_eq!(name("#!lua name=mylib\nreturn"), Ok("mylib".into()));
        assert_eq!(name("#!LUA NAME=x\n"), Ok("x".into()));
        assert_eq!(name("#!lua name=\"quoted\"\n"), Ok("quoted".into()));
        assert_eq!(
            metadata(b"#!lua name=a\nbody").unwrap().1,
            "#!lua name=a".len()
        );
        for (code, refusal) in [
            ("return 1", "Missing library metadata"),
            ("#!lua name=x", "Invalid library metadata"),
            ("#!lua name=x\0\n", "Invalid library metadata"),
            ("#!lua name=\"x\n", "Invalid library metadata"),
            ("#! name=test\n", "Engine '' not found"),
            ("#!\n", "Library name was not given"),
            ("#!bad_engine name=test\n", "Engine 'bad_engine' not found"),
            (
                "#!lua name=test foo=bar\n",
                "Invalid metadata value given: foo=bar",
            ),
            ("#!lua\n", "Library name was not given"),
            (
                "#!lua name=a name=b\n",
                "Invalid metadata value, name argument was given multiple times",
            ),
            ("#!lua name=bad-name\n", BAD_NAME),
            ("#!lua name=\n", BAD_NAME),
        ] {
            assert_eq!(name(code), Err(refusal.into()), "{code:?}");
        }
    }
}
