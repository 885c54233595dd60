//! The frame type.

/// Which protocol a connection speaks (`HELLO 2` / `HELLO 3`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Protocol {
    #[default]
    Resp2,
    Resp3,
}

/// One RESP value.
#[derive(Clone, Debug, PartialEq)]
pub enum Frame {
    /// `+OK`
    Simple(String),
    /// `-ERR ...`: the text after the dash, including the error code word.
    Error(String),
    /// `:42`
    Integer(i64),
    /// `$3\r\nfoo`
    Bulk(Vec<u8>),
    /// `*2\r\n...`
    Array(Vec<Frame>),
    /// RESP3 `_`; in RESP2 the null bulk string `$-1`.
    Null,
    /// RESP2's null array `*-1` (RESP3 `_`).
    NullArray,
    /// RESP3 `#t` / `#f`; RESP2 `:1` / `:0`.
    Boolean(bool),
    /// RESP3 `,1.5`; RESP2 a bulk string.
    Double(f64),
    /// RESP3 `,` with this exact text; RESP2 a bulk string: a double that Redis
    /// prints its own way (GEOPOS's coordinates, as a long double with 17 decimals).
    /// The parser reads every `,` as [`Frame::Double`].
    DoubleText(String),
    /// RESP3 `(123...`; RESP2 a bulk string. Kept as its decimal text.
    BigNumber(String),
    /// RESP3 `!`; RESP2 a simple error.
    BulkError(Vec<u8>),
    /// RESP3 `=`, with its three-letter format (`txt`, `mkd`); RESP2 a bulk string.
    Verbatim { format: [u8; 3], text: Vec<u8> },
    /// RESP3 `%`; RESP2 a flat array of keys and values.
    Map(Vec<(Frame, Frame)>),
    /// RESP3 `~`; RESP2 an array.
    Set(Vec<Frame>),
    /// RESP3 `>`; RESP2 an array.
    Push(Vec<Frame>),
    /// RESP3 `|`: these pairs annotate the frame that follows (`reply`), which alone
    /// is the reply; RESP2 has no attributes, so there `reply` is sent alone. The
    /// parser reads an attribute and drops it, giving the frame that follows.
    Attribute {
        pairs: Vec<(Frame, Frame)>,
        reply: Box<Frame>,
    },
}

impl Frame {
    /// A bulk string from anything byte-like.
    pub fn bulk(b: impl AsRef<[u8]>) -> Frame {
        Frame::Bulk(b.as_ref().to_vec())
    }

    /// An error reply; `text` starts with its code word, as in `ERR syntax error`.
    pub fn error(text: impl Into<String>) -> Frame {
        Frame::Error(text.into())
    }

    /// An array of bulk strings, as a client sends a command.
    pub fn command<I, B>(args: I) -> Frame
    where
        I: IntoIterator<Item = B>,
        B: AsRef<[u8]>,
    {
        Frame::Array(args.into_iter().map(Frame::bulk).collect())
    }
}
