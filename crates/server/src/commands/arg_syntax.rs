//! A command's arguments as COMMAND DOCS describes them: written in the docs table as
//! one line close to what redis-cli prints (`key value [condition=NX|XX]`), parsed here
//! into Redis's argument tree.
//!
//! The notation:
//! - `name` is a string argument, `name:type` one of another type (`key`, `integer`,
//!   `double`, `pattern`, `unix-time`). A colon followed by anything else is part of the
//!   name, as in `ip:port`.
//! - `\` before one character makes it a token that stands alone (XADD's `\*`,
//!   `\=`, `\~`), since symbols are not words.
//! - A word with no lower-case letters is a token; `""` is the empty one (MIGRATE's,
//!   which Redis 7.0 gives as empty). Followed by an argument or by a
//!   `(...)` group, it introduces that argument (`EX seconds:integer`); otherwise it
//!   stands alone (`NX`).
//! - `[...]` makes what it holds optional, `(...)` only groups. A group of one argument
//!   is that argument; a group of more needs a name, written `name=` after the bracket:
//!   alternatives separated by `|` make a one-of, a run of arguments a block. A named
//!   group of one lone token is that token under the name (`[change=CH]`).
//! - `...` after an argument or group: it repeats; `^...`: it repeats, each time after
//!   its token.
//! - `@N` after a type names the key spec the argument's keys fall under
//!   (`pattern:pattern@1`).

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    String,
    Integer,
    Double,
    Key,
    Pattern,
    UnixTime,
    PureToken,
    OneOf,
    Block,
}

impl Kind {
    /// The type word COMMAND DOCS gives.
    pub fn word(self) -> &'static str {
        match self {
            Kind::String => "string",
            Kind::Integer => "integer",
            Kind::Double => "double",
            Kind::Key => "key",
            Kind::Pattern => "pattern",
            Kind::UnixTime => "unix-time",
            Kind::PureToken => "pure-token",
            Kind::OneOf => "oneof",
            Kind::Block => "block",
        }
    }

    fn of_value(word: &str) -> Option<Kind> {
        Some(match word {
            "key" => Kind::Key,
            "integer" => Kind::Integer,
            "double" => Kind::Double,
            "pattern" => Kind::Pattern,
            "unix-time" => Kind::UnixTime,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Repeat {
    #[default]
    Once,
    Multiple,
    /// Each repetition is preceded by the argument's token.
    MultipleToken,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arg {
    pub name: String,
    pub kind: Kind,
    pub token: Option<String>,
    pub optional: bool,
    pub repeat: Repeat,
    /// The members of a one-of or a block.
    pub children: Vec<Arg>,
    /// The key spec a pattern's keys fall under (SORT's BY and GET), or a key's when
    /// it is not the next spec in order: written `name:type@N`.
    pub key_spec: Option<usize>,
}

#[derive(Debug, PartialEq, Eq)]
pub struct SyntaxError {
    pub at: usize,
    pub what: &'static str,
}

impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte {}", self.what, self.at)
    }
}

/// The arguments a syntax line describes, in order.
pub fn parse(line: &str) -> Result<Vec<Arg>, SyntaxError> {
    let mut parser = Parser {
        lexemes: lex(line)?,
        next: 0,
        end: line.len(),
    };
    let args = parser.sequence()?;
    match parser.peek() {
        None => Ok(args),
        Some(_) => Err(parser.error("a closing bracket or `|` with nothing open")),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lexeme<'a> {
    Word(&'a str, Repeat),
    /// A one-character token written `\c`.
    Symbol(&'a str),
    Open(u8),
    Close(u8, Repeat),
    Bar,
    Equals,
}

fn lex(line: &str) -> Result<Vec<(usize, Lexeme<'_>)>, SyntaxError> {
    const PUNCTUATION: &[u8] = b"[]()|= ";
    let bytes = line.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    // A repetition mark directly after a word or a closing bracket.
    let repeat_at = |i: usize| -> (Repeat, usize) {
        if line[i..].starts_with("^...") {
            (Repeat::MultipleToken, i + 4)
        } else if line[i..].starts_with("...") {
            (Repeat::Multiple, i + 3)
        } else {
            (Repeat::Once, i)
        }
    };
    while i < bytes.len() {
        let start = i;
        match bytes[i] {
            b' ' => i += 1,
            b'[' | b'(' => {
                out.push((start, Lexeme::Open(bytes[i])));
                i += 1;
            }
            b']' | b')' => {
                let (repeat, after) = repeat_at(i + 1);
                out.push((start, Lexeme::Close(bytes[i], repeat)));
                i = after;
            }
            b'|' => {
                out.push((start, Lexeme::Bar));
                i += 1;
            }
            b'=' => {
                out.push((start, Lexeme::Equals));
                i += 1;
            }
            b'\\' => {
                let symbol = line[i + 1..].chars().next().ok_or(SyntaxError {
                    at: start,
                    what: "a character expected after \\",
                })?;
                out.push((
                    start,
                    Lexeme::Symbol(&line[i + 1..i + 1 + symbol.len_utf8()]),
                ));
                i += 1 + symbol.len_utf8();
            }
            _ => {
                while i < bytes.len() && !PUNCTUATION.contains(&bytes[i]) {
                    i += 1;
                }
                let mut word = &line[start..i];
                let mut repeat = Repeat::Once;
                for (mark, kind) in [("^...", Repeat::MultipleToken), ("...", Repeat::Multiple)] {
                    if let Some(stem) = word.strip_suffix(mark) {
                        word = stem;
                        repeat = kind;
                        break;
                    }
                }
                if word.is_empty() || word.contains("..") {
                    return Err(SyntaxError {
                        at: start,
                        what: "a repetition mark with no argument before it",
                    });
                }
                out.push((start, Lexeme::Word(word, repeat)));
            }
        }
    }
    Ok(out)
}

struct Parser<'a> {
    lexemes: Vec<(usize, Lexeme<'a>)>,
    next: usize,
    end: usize,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<Lexeme<'a>> {
        self.lexemes.get(self.next).map(|&(_, l)| l)
    }

    fn error(&self, what: &'static str) -> SyntaxError {
        let at = self.lexemes.get(self.next).map_or(self.end, |&(at, _)| at);
        SyntaxError { at, what }
    }

    /// Arguments up to a `|`, a closing bracket or the end.
    fn sequence(&mut self) -> Result<Vec<Arg>, SyntaxError> {
        let mut args = Vec::new();
        while let Some(lexeme) = self.peek() {
            if matches!(lexeme, Lexeme::Bar | Lexeme::Close(..)) {
                break;
            }
            args.push(self.argument()?);
        }
        Ok(args)
    }

    fn argument(&mut self) -> Result<Arg, SyntaxError> {
        match self.peek() {
            Some(Lexeme::Symbol(symbol)) => {
                self.next += 1;
                Ok(Arg {
                    name: symbol.to_string(),
                    kind: Kind::PureToken,
                    token: Some(symbol.to_string()),
                    optional: false,
                    repeat: Repeat::Once,
                    children: Vec::new(),
                    key_spec: None,
                })
            }
            Some(Lexeme::Word(word, repeat)) if is_token(word) => {
                self.next += 1;
                let introduces = repeat == Repeat::Once
                    && match self.peek() {
                        Some(Lexeme::Word(next, _)) => !is_token(next),
                        Some(Lexeme::Open(b'(')) => true,
                        _ => false,
                    };
                if introduces {
                    let mut arg = self.argument()?;
                    arg.token = Some(word.to_string());
                    return Ok(arg);
                }
                let token = if word == EMPTY_TOKEN { "" } else { word };
                Ok(Arg {
                    name: word.to_ascii_lowercase(),
                    kind: Kind::PureToken,
                    token: Some(token.to_string()),
                    optional: false,
                    repeat,
                    children: Vec::new(),
                    key_spec: None,
                })
            }
            Some(Lexeme::Word(word, repeat)) => {
                self.next += 1;
                let (name, kind, key_spec) = match word.rsplit_once(':') {
                    Some((name, typed)) => {
                        let (kind, spec) = match typed.split_once('@') {
                            Some((kind, spec)) => (kind, spec.parse().ok()),
                            None => (typed, None),
                        };
                        match Kind::of_value(kind) {
                            Some(kind) => (name, kind, spec),
                            None => (word, Kind::String, None),
                        }
                    }
                    None => (word, Kind::String, None),
                };
                Ok(Arg {
                    name: name.to_string(),
                    kind,
                    token: None,
                    optional: false,
                    repeat,
                    children: Vec::new(),
                    key_spec,
                })
            }
            Some(Lexeme::Open(open)) => {
                let at = self.lexemes[self.next].0;
                self.next += 1;
                let mut arg = self.group(at, if open == b'[' { b']' } else { b')' })?;
                arg.optional |= open == b'[';
                Ok(arg)
            }
            _ => Err(self.error("an argument expected")),
        }
    }

    /// What the bracket opened at byte `at` holds, up to and with its closing bracket.
    fn group(&mut self, at: usize, close: u8) -> Result<Arg, SyntaxError> {
        let error = |what| SyntaxError { at, what };
        let label = match (self.peek(), self.lexemes.get(self.next + 1)) {
            (Some(Lexeme::Word(name, Repeat::Once)), Some((_, Lexeme::Equals))) => {
                self.next += 2;
                Some(name)
            }
            _ => None,
        };
        let mut alternatives = vec![self.sequence()?];
        while self.peek() == Some(Lexeme::Bar) {
            self.next += 1;
            alternatives.push(self.sequence()?);
        }
        let repeat = match self.peek() {
            Some(Lexeme::Close(c, repeat)) if c == close => repeat,
            _ => return Err(error("an unclosed bracket")),
        };
        self.next += 1;
        let Some(label) = label else {
            let mut arg = match <[_; 1]>::try_from(alternatives) {
                Ok([alternative]) => match <[Arg; 1]>::try_from(alternative) {
                    Ok([arg]) => arg,
                    Err(_) => return Err(error("a group of several arguments needs a name=")),
                },
                Err(_) => return Err(error("a group of several arguments needs a name=")),
            };
            if repeat != Repeat::Once {
                if arg.repeat != Repeat::Once {
                    return Err(error("an argument repeated twice over"));
                }
                arg.repeat = repeat;
            }
            return Ok(arg);
        };
        let lone_token = match alternatives.as_slice() {
            [alternative] => match alternative.as_slice() {
                [only] if only.kind == Kind::PureToken && only.repeat == Repeat::Once => {
                    Some(only.clone())
                }
                _ => None,
            },
            _ => None,
        };
        if let Some(token) = lone_token {
            return Ok(Arg {
                name: label.to_string(),
                repeat,
                ..token
            });
        }
        let (kind, children) =
            if alternatives.len() == 1 {
                (Kind::Block, alternatives.pop().unwrap_or_default())
            } else {
                let mut members = Vec::with_capacity(alternatives.len());
                for alternative in alternatives {
                    match <[Arg; 1]>::try_from(alternative) {
                        Ok([arg]) => members.push(arg),
                        Err(_) => return Err(error(
                            "an alternative of several arguments needs its own (name=...) group",
                        )),
                    }
                }
                (Kind::OneOf, members)
            };
        if children.is_empty() {
            return Err(error("an empty group"));
        }
        Ok(Arg {
            name: label.to_string(),
            kind,
            token: None,
            optional: false,
            repeat,
            children,
            key_spec: None,
        })
    }
}

fn is_token(word: &str) -> bool {
    let capitals = word.starts_with(|c: char| c.is_ascii_uppercase())
        && !word.contains(|c: char| c.is_ascii_lowercase());
    capitals || word == EMPTY_TOKEN
}

/// How the notation writes the empty token.
const EMPTY_TOKEN: &str = "\"\"";

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The parameter line redis-cli builds from an argument tree for its help and
    /// hints (its `cliAddArgument`).
    pub fn render(args: &[Arg]) -> String {
        args.iter().map(render_one).collect::<Vec<_>>().join(" ")
    }

    fn render_one(arg: &Arg) -> String {
        let body = match arg.kind {
            Kind::PureToken => String::new(),
            Kind::OneOf => arg
                .children
                .iter()
                .map(render_one)
                .collect::<Vec<_>>()
                .join("|"),
            Kind::Block => render(&arg.children),
            _ => arg.name.clone(),
        };
        let token = match (&arg.token, arg.kind) {
            (Some(t), Kind::PureToken) => t.clone(),
            (Some(t), _) => format!("{t} "),
            (None, _) => String::new(),
        };
        let mut out = format!("{token}{body}");
        match arg.repeat {
            Repeat::Once => {}
            Repeat::Multiple => out = format!("{out} [{body} ...]"),
            Repeat::MultipleToken => out = format!("{out} [{token}{body} ...]"),
        }
        if arg.optional {
            out = format!("[{out}]");
        }
        out
    }

    /// The notation for an argument list: what the docs table would say.
    fn notation(args: &[Arg]) -> String {
        args.iter().map(notation_of).collect::<Vec<_>>().join(" ")
    }

    fn notation_of(arg: &Arg) -> String {
        let repeat = match arg.repeat {
            Repeat::Once => "",
            Repeat::Multiple => "...",
            Repeat::MultipleToken => "^...",
        };
        let token = arg
            .token
            .as_ref()
            .map_or(String::new(), |t| format!("{t} "));
        let (open, close) = if arg.optional { ("[", "]") } else { ("(", ")") };
        let separator = if arg.kind == Kind::OneOf { "|" } else { " " };
        let members = || {
            let members: Vec<_> = arg.children.iter().map(notation_of).collect();
            members.join(separator)
        };
        let typed = match arg.kind {
            Kind::String => arg.name.clone(),
            kind => format!("{}:{}", arg.name, kind.word()),
        };
        let token_named_apart =
            arg.token.as_ref().map(|t| t.to_ascii_lowercase()) != Some(arg.name.clone());
        match (arg.kind, arg.optional) {
            (Kind::PureToken, _) if token_named_apart => {
                let token = arg.token.as_deref().unwrap_or_default();
                format!("{open}{}={token}{close}{repeat}", arg.name)
            }
            (Kind::PureToken, false) => format!("{}{repeat}", arg.name.to_ascii_uppercase()),
            (Kind::PureToken, true) => format!("[{}{repeat}]", arg.name.to_ascii_uppercase()),
            (Kind::OneOf | Kind::Block, _) if arg.token.is_some() => {
                let group = format!("({}={}){repeat}", arg.name, members());
                if arg.optional {
                    format!("[{token}{group}]")
                } else {
                    format!("{token}{group}")
                }
            }
            (Kind::OneOf | Kind::Block, _) => {
                format!("{open}{}={}{close}{repeat}", arg.name, members())
            }
            (_, false) => format!("{token}{typed}{repeat}"),
            (_, true) => format!("[{token}{typed}{repeat}]"),
        }
    }

    fn leaf() -> impl Strategy<Value = Arg> {
        let kinds = prop::sample::select(vec![
            Kind::String,
            Kind::Integer,
            Kind::Double,
            Kind::Key,
            Kind::Pattern,
            Kind::UnixTime,
            Kind::PureToken,
        ]);
        (
            kinds,
            "[a-z][a-z0-9_-]{0,5}",
            "[A-Z][A-Z-]{0,4}",
            any::<bool>(),
            0..4u8,
        )
            .prop_map(|(kind, name, token, optional, shape)| {
                let (name, token, repeat) = match (kind, shape) {
                    (Kind::PureToken, _) => (token.to_ascii_lowercase(), Some(token), Repeat::Once),
                    (_, 0) => (name, None, Repeat::Once),
                    (_, 1) => (name, None, Repeat::Multiple),
                    (_, 2) => (name, Some(token), Repeat::Once),
                    _ => (name, Some(token), Repeat::MultipleToken),
                };
                Arg {
                    name,
                    kind,
                    token,
                    optional,
                    repeat,
                    children: Vec::new(),
                    key_spec: None,
                }
            })
    }

    /// Whether `args` as a run reads back as written: a required lone token right
    /// before a required argument that starts with no token would introduce it.
    fn unambiguous(args: &[Arg]) -> bool {
        args.windows(2).all(|w| {
            let lone =
                w[0].kind == Kind::PureToken && !w[0].optional && w[0].repeat == Repeat::Once;
            !(lone && !w[1].optional && w[1].token.is_none())
        })
    }

    fn tree() -> impl Strategy<Value = Vec<Arg>> {
        let arg = leaf().prop_recursive(3, 24, 4, |inner| {
            (
                prop::collection::vec(inner, 1..4),
                "[a-z][a-z_]{0,5}",
                prop::option::of("[A-Z]{1,4}"),
                any::<bool>(),
                any::<bool>(),
                any::<bool>(),
            )
                .prop_filter_map(
                    "ambiguous",
                    |(children, name, token, one_of, optional, repeat)| {
                        let kind = if one_of && children.len() > 1 {
                            Kind::OneOf
                        } else {
                            Kind::Block
                        };
                        if kind == Kind::Block && !unambiguous(&children) {
                            return None;
                        }
                        // A named group of one lone token is that token, renamed.
                        if let [only] = children.as_slice() {
                            if only.kind == Kind::PureToken && only.repeat == Repeat::Once {
                                return None;
                            }
                        }
                        let repeat = if repeat {
                            Repeat::Multiple
                        } else {
                            Repeat::Once
                        };
                        Some(Arg {
                            name,
                            kind,
                            token,
                            optional,
                            repeat,
                            children,
                            key_spec: None,
                        })
                    },
                )
        });
        prop::collection::vec(arg, 0..5).prop_filter("ambiguous", |args| unambiguous(args))
    }

    proptest! {
        #[test]
        fn the_notation_reads_back_as_written(args in tree()) {
            let line = notation(&args);
            prop_assert_eq!(parse(&line), Ok(args), "{}", line);
        }
    }

    #[test]
    fn set_renders_as_redis_cli_shows_it() {
        let args = parse(
            "key:key value [condition=NX|XX] [GET] [expiration=EX seconds:integer|\
             PX milliseconds:integer|EXAT unix-time-seconds:unix-time|\
             PXAT unix-time-milliseconds:unix-time|KEEPTTL]",
        )
        .unwrap();
        assert_eq!(
            render(&args),
            "key value [NX|XX] [GET] [EX seconds|PX milliseconds|EXAT unix-time-seconds|\
             PXAT unix-time-milliseconds|KEEPTTL]"
        );
        assert_eq!(args[0].kind, Kind::Key);
        assert_eq!(args[2].name, "condition");
        assert_eq!(args[2].kind, Kind::OneOf);
        assert!(args[2].optional);
        let ex = &args[4].children[0];
        assert_eq!(
            (ex.name.as_str(), ex.kind, ex.token.as_deref()),
            ("seconds", Kind::Integer, Some("EX"))
        );
        assert_eq!(
            (args[3].name.as_str(), args[3].kind),
            ("get", Kind::PureToken)
        );
    }

    #[test]
    fn a_token_can_carry_a_name_of_its_own() {
        let args = parse("key:key [change=CH] (increment=INCR)").unwrap();
        let named = |a: &Arg| (a.name.clone(), a.kind, a.token.clone(), a.optional);
        assert_eq!(
            named(&args[1]),
            ("change".into(), Kind::PureToken, Some("CH".into()), true)
        );
        assert_eq!(
            named(&args[2]),
            (
                "increment".into(),
                Kind::PureToken,
                Some("INCR".into()),
                false
            )
        );
        assert_eq!(notation(&args), "key:key [change=CH] (increment=INCR)");
    }

    #[test]
    fn tokens_introduce_groups_and_repeat_with_their_token() {
        let args =
            parse("(status=ON|OFF) [PREFIX prefix^...] [ID (id=client-id:integer...)] ip:port")
                .unwrap();
        assert_eq!(
            render(&args),
            "ON|OFF [PREFIX prefix [PREFIX prefix ...]] [ID client-id [client-id ...]] ip:port"
        );
        assert_eq!(args[1].repeat, Repeat::MultipleToken);
        assert_eq!(
            (args[2].kind, args[2].token.as_deref()),
            (Kind::Block, Some("ID"))
        );
        assert_eq!(args[2].children[0].repeat, Repeat::Multiple);
        assert_eq!(
            (args[3].name.as_str(), args[3].kind),
            ("ip:port", Kind::String)
        );
    }

    #[test]
    fn two_quotes_are_the_empty_token() {
        let args = parse("host (key_or_empty_string=key:key|(empty_string=\"\"))").unwrap();
        let empty = &args[1].children[1];
        assert_eq!(
            (empty.name.as_str(), empty.kind, empty.token.as_deref()),
            ("empty_string", Kind::PureToken, Some(""))
        );
    }

    #[test]
    fn groups_repeat_and_nest() {
        let args = parse(
            "(data=key:key value)... [index=start:integer [end_index=end:integer [unit=BYTE|BIT]]]",
        )
        .unwrap();
        assert_eq!(
            render(&args),
            "key value [key value ...] [start [end [BYTE|BIT]]]"
        );
        assert_eq!(
            (args[0].kind, args[0].repeat),
            (Kind::Block, Repeat::Multiple)
        );
    }

    #[test]
    fn malformed_lines_say_where() {
        for (line, at) in [
            ("key [NX", 4),
            ("key NX]", 6),
            ("[a b]", 0),
            ("k (x=a b|c)", 2),
            ("key ...", 4),
            ("(x=)", 0),
            ("[a...]...", 0),
            ("|", 0),
            ("a:key b=", 7),
        ] {
            let error = parse(line).unwrap_err();
            assert_eq!(error.at, at, "{line}: {error}");
        }
    }
}
