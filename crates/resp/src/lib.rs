//! The Redis serialization protocol (RESP2 and RESP3), without I/O.
//!
//! - [`Frame`]: every RESP3 type; [`Frame::encode`] writes it for a RESP2 or RESP3
//!   client, downgrading RESP3-only types the way Redis does for RESP2.
//! - [`parse_frame`]: a streaming parser for any frame (replies, tests, clients);
//!   RESP3 attributes are read and dropped.
//! - [`parse_request`]: the server's request parser, which accepts what Redis accepts
//!   (a multibulk of bulk strings, or an inline command line) and rejects the rest
//!   with Redis's own error text; [`RequestParser`] is the same for a stream, resuming
//!   a request that arrives in pieces where it stopped.
//!
//! Both parsers take a byte slice that may end anywhere: they return `Ok(None)` until
//! a whole frame is there, and never read past it. Limits bound what a peer can make
//! us allocate before the bytes arrive.

mod encode;
mod frame;
mod parse;
mod request;

pub use encode::format_double;
pub use frame::{Frame, Protocol};
pub use parse::{parse_frame, FrameLimits};
pub use request::{
    parse_integer, parse_request, peek_second_arguments, split_args, Parsed, Progress,
    ProtocolError, RequestLimits, RequestParser,
};
