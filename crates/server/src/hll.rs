//! HyperLogLog values (PFADD, PFCOUNT, PFMERGE) in Redis's own string format, so that
//! GET, DUMP and RESTORE carry them between hotkv and Redis unchanged.
//!
//! ```text
//! value    = "HYLL" | encoding (1 byte: 0 dense, 1 sparse) | 3 zero bytes
//!            | cardinality (8 bytes, little-endian; top bit of the last byte set:
//!              not valid, recompute) | registers
//! dense    = 16,384 registers of 6 bits, register i at bit 6i, least significant
//!            bits first (12,288 bytes)
//! sparse   = opcodes, in register order, covering all 16,384 registers:
//!            00xxxxxx           ZERO:  x+1 registers (1-64) at 0
//!            01xxxxxx yyyyyyyy  XZERO: (x << 8 | y) + 1 registers (1-16,384) at 0
//!            1vvvvvxx           VAL:   x+1 registers (1-4) at v+1 (1-32)
//! ```
//!
//! An element hashes (MurmurHash64A, seed 0xadc83b19) to a register (the low 14 bits)
//! and a count (1 + the trailing zeros of the other 50 bits, at most 51); a register
//! keeps the largest count it sees. A new value is sparse; it turns dense when a count
//! passes 32 or the sparse form would pass 3,000 bytes (`hll-sparse-max-bytes`). The
//! estimate is Ertl's ("New cardinality estimation algorithms for HyperLogLog
//! sketches", 2017), as Redis computes it.

const P: u32 = 14;
pub const REGISTERS: usize = 1 << P;
const Q: u32 = 64 - P;
const HEADER: usize = 16;
const DENSE_SIZE: usize = HEADER + REGISTERS * 6 / 8;
const DENSE: u8 = 0;
const SPARSE: u8 = 1;
const SPARSE_VAL_MAX_VALUE: u8 = 32;
const SPARSE_VAL_MAX_LEN: usize = 4;
const SPARSE_ZERO_MAX_LEN: usize = 64;
/// Redis's default `hll-sparse-max-bytes`.
const SPARSE_MAX_BYTES: usize = 3000;

/// What is wrong with a value that passed [`is_hll`] but whose registers do not add
/// up (Redis's words).
pub const CORRUPTED: &str = "INVALIDOBJ Corrupted HLL object detected";
/// What Redis answers for a string that is not a HyperLogLog.
pub const NOT_HLL: &str = "WRONGTYPE Key is not a valid HyperLogLog string value.";

/// An empty HyperLogLog, sparse: one XZERO over every register, cardinality 0.
pub fn new() -> Vec<u8> {
    let mut v = header(SPARSE);
    push_xzero(&mut v, REGISTERS);
    v
}

fn header(encoding: u8) -> Vec<u8> {
    let mut v = Vec::with_capacity(DENSE_SIZE);
    v.extend_from_slice(b"HYLL");
    v.extend_from_slice(&[encoding, 0, 0, 0]);
    v.extend_from_slice(&[0; 8]);
    v
}

/// Whether `value` (a string) is a HyperLogLog as Redis checks one: magic, a known
/// encoding, and a dense one's exact length.
pub fn is_hll(value: &[u8]) -> bool {
    value.len() >= HEADER
        && &value[..4] == b"HYLL"
        && value[4] <= SPARSE
        && (value[4] != DENSE || value.len() == DENSE_SIZE)
}

/// Whether `value` (a HyperLogLog) holds its registers dense.
pub fn is_dense(value: &[u8]) -> bool {
    value[4] == DENSE
}

/// Marks the cached cardinality stale after a change.
pub fn invalidate(value: &mut [u8]) {
    value[15] |= 0x80;
}

/// The cached cardinality, if valid.
pub fn cached(value: &[u8]) -> Option<u64> {
    (value[15] & 0x80 == 0).then(|| u64::from_le_bytes(value[8..16].try_into().expect("8 bytes")))
}

pub fn set_cached(value: &mut [u8], card: u64) {
    value[8..16].copy_from_slice(&card.to_le_bytes());
}

/// MurmurHash64A as Redis computes it (little-endian words).
fn murmur64a(key: &[u8], seed: u64) -> u64 {
    const M: u64 = 0xc6a4a7935bd1e995;
    const R: u32 = 47;
    let mut h = seed ^ (key.len() as u64).wrapping_mul(M);
    let mut words = key.chunks_exact(8);
    for w in &mut words {
        let mut k = u64::from_le_bytes(w.try_into().expect("8 bytes"));
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = words.remainder();
    if !tail.is_empty() {
        for (i, &b) in tail.iter().enumerate() {
            h ^= u64::from(b) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// The register `element` falls in and the count it brings.
fn register_and_count(element: &[u8]) -> (usize, u8) {
    let hash = murmur64a(element, 0xadc83b19);
    let index = (hash & (REGISTERS as u64 - 1)) as usize;
    let rest = (hash >> P) | (1 << Q);
    (index, rest.trailing_zeros() as u8 + 1)
}

fn dense_get(registers: &[u8], i: usize) -> u8 {
    let (byte, bit) = (i * 6 / 8, i * 6 % 8);
    let low = u16::from(registers[byte]) >> bit;
    let high = registers
        .get(byte + 1)
        .map_or(0, |&b| u16::from(b) << (8 - bit));
    ((low | high) & 63) as u8
}

fn dense_set(registers: &mut [u8], i: usize, value: u8) {
    let (byte, bit) = (i * 6 / 8, i * 6 % 8);
    let v = u16::from(value) << bit;
    registers[byte] = (registers[byte] & !((63u16 << bit) as u8)) | v as u8;
    if bit > 2 {
        let next = &mut registers[byte + 1];
        *next = (*next & !((63u16 << bit) >> 8) as u8) | (v >> 8) as u8;
    }
}

/// One sparse opcode.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Op {
    Zero(usize),
    Val(u8, usize),
}

impl Op {
    /// The registers it covers.
    fn span(self) -> usize {
        match self {
            Op::Zero(n) | Op::Val(_, n) => n,
        }
    }
}

/// The opcode at byte `at` of a sparse body and its length in bytes; `None` past the
/// end, or for a two-byte opcode cut short.
fn op_at(body: &[u8], at: usize) -> Option<(Op, usize)> {
    let b = *body.get(at)?;
    Some(match b & 0xc0 {
        0x00 => (Op::Zero(usize::from(b & 0x3f) + 1), 1),
        0x40 => {
            let low = *body.get(at + 1)?;
            let n = (usize::from(b & 0x3f) << 8) | usize::from(low);
            (Op::Zero(n + 1), 2)
        }
        _ => (Op::Val(((b >> 2) & 0x1f) + 1, usize::from(b & 3) + 1), 1),
    })
}

/// The opcodes of a sparse body, or `None` if they do not cover exactly the
/// registers.
fn sparse_ops(body: &[u8]) -> Option<Vec<Op>> {
    let mut ops = Vec::new();
    let (mut at, mut covered) = (0, 0);
    while at < body.len() {
        let (op, len) = op_at(body, at)?;
        covered += op.span();
        if covered > REGISTERS {
            return None;
        }
        ops.push(op);
        at += len;
    }
    (covered == REGISTERS).then_some(ops)
}

/// Every register's value, or `None` if the value is corrupted.
pub fn registers(value: &[u8]) -> Option<Vec<u8>> {
    let body = &value[HEADER..];
    if value[4] == DENSE {
        return Some((0..REGISTERS).map(|i| dense_get(body, i)).collect());
    }
    let mut out = Vec::with_capacity(REGISTERS);
    for op in sparse_ops(body)? {
        match op {
            Op::Zero(n) => out.resize(out.len() + n, 0),
            Op::Val(v, n) => out.resize(out.len() + n, v),
        }
    }
    Some(out)
}

fn push_zero(out: &mut Vec<u8>, n: usize) {
    if n > SPARSE_ZERO_MAX_LEN {
        push_xzero(out, n);
    } else {
        out.push((n - 1) as u8);
    }
}

fn push_xzero(out: &mut Vec<u8>, n: usize) {
    let l = n - 1;
    out.push((l >> 8) as u8 | 0x40);
    out.push((l & 0xff) as u8);
}

fn val(value: u8, n: usize) -> u8 {
    0x80 | ((value - 1) << 2) | (n - 1) as u8
}

/// `value` turned dense (unchanged if it is), or `None` if corrupted.
fn to_dense(value: &[u8]) -> Option<Vec<u8>> {
    if value[4] == DENSE {
        return Some(value.to_vec());
    }
    let registers = registers(value)?;
    let mut out = value[..HEADER].to_vec();
    out[4] = DENSE;
    out.resize(DENSE_SIZE, 0);
    for (i, &r) in registers.iter().enumerate() {
        if r > 0 {
            dense_set(&mut out[HEADER..], i, r);
        }
    }
    Some(out)
}

/// Raises register `index` to `count` in the sparse `value`, editing the opcodes as
/// Redis does (split the run holding it, then merge equal neighbours), or turns the
/// value dense when the sparse form cannot hold it. Whether the register changed;
/// `None` if the value is corrupted.
fn sparse_set(value: &mut Vec<u8>, index: usize, count: u8) -> Option<bool> {
    if count > SPARSE_VAL_MAX_VALUE {
        return promote(value, index, count);
    }
    let body = &value[HEADER..];
    // Find the opcode holding the register, and the one before it.
    let (mut at, mut first, mut prev) = (0, 0, None);
    let (op, oplen) = loop {
        let (op, len) = op_at(body, at)?;
        if index < first + op.span() {
            break (op, len);
        }
        prev = Some(at);
        at += len;
        first += op.span();
    };
    let start = HEADER + at;
    match op {
        Op::Val(old, _) if old >= count => return Some(false),
        Op::Val(_, 1) | Op::Zero(1) if oplen == 1 => {
            value[start] = val(count, 1);
        }
        _ => {
            let old = match op {
                Op::Zero(_) => None,
                Op::Val(v, _) => Some(v),
            };
            let last = first + op.span() - 1;
            let mut seq = Vec::with_capacity(5);
            let run = |seq: &mut Vec<u8>, n: usize| match old {
                None => push_zero(seq, n),
                Some(v) => seq.push(val(v, n)),
            };
            if index != first {
                run(&mut seq, index - first);
            }
            seq.push(val(count, 1));
            if index != last {
                run(&mut seq, last - index);
            }
            if value.len() - oplen + seq.len() > SPARSE_MAX_BYTES && seq.len() > oplen {
                return promote(value, index, count);
            }
            value.splice(start..start + oplen, seq);
        }
    }
    merge_values(value, HEADER + prev.unwrap_or(0));
    Some(true)
}

/// Merges adjacent VAL opcodes of equal value (up to 4 registers in one), scanning up
/// to 5 opcodes from byte `from`, as Redis does after a sparse change.
fn merge_values(value: &mut Vec<u8>, from: usize) {
    let mut p = from;
    let mut scan = 5;
    while p < value.len() && scan > 0 {
        scan -= 1;
        let b = value[p];
        if b & 0xc0 == 0x40 {
            p += 2;
            continue;
        }
        if b & 0x80 == 0 {
            p += 1;
            continue;
        }
        if let Some(&next) = value.get(p + 1).filter(|&&n| n & 0x80 != 0) {
            let (v1, v2) = ((b >> 2) & 0x1f, (next >> 2) & 0x1f);
            let len = usize::from(b & 3) + usize::from(next & 3) + 2;
            if v1 == v2 && len <= SPARSE_VAL_MAX_LEN {
                value[p + 1] = val(v1 + 1, len);
                value.remove(p);
                continue;
            }
        }
        p += 1;
    }
}

fn promote(value: &mut Vec<u8>, index: usize, count: u8) -> Option<bool> {
    *value = to_dense(value)?;
    dense_set(&mut value[HEADER..], index, count);
    Some(true)
}

/// Adds `element`: whether a register changed; `None` if the value is corrupted.
pub fn add(value: &mut Vec<u8>, element: &[u8]) -> Option<bool> {
    let (index, count) = register_and_count(element);
    set_register(value, index, count)
}

fn set_register(value: &mut Vec<u8>, index: usize, count: u8) -> Option<bool> {
    if value[4] == DENSE {
        let registers = &mut value[HEADER..];
        if dense_get(registers, index) >= count {
            return Some(false);
        }
        dense_set(registers, index, count);
        return Some(true);
    }
    sparse_set(value, index, count)
}

/// `value` with every register raised to `max`'s (PFMERGE's target), dense if `dense`.
pub fn merge_into(value: &mut Vec<u8>, max: &[u8], dense: bool) -> Option<()> {
    if dense {
        *value = to_dense(value)?;
    }
    for (i, &m) in max.iter().enumerate() {
        if m > 0 {
            set_register(value, i, m)?;
        }
    }
    Some(())
}

/// The cardinality estimate of these registers.
pub fn estimate(registers: &[u8]) -> u64 {
    let m = REGISTERS as f64;
    let mut histogram = [0u32; 64];
    for &r in registers {
        histogram[usize::from(r)] += 1;
    }
    let q = Q as usize;
    let mut z = m * tau((m - f64::from(histogram[q + 1])) / m);
    for j in (1..=q).rev() {
        z += f64::from(histogram[j]);
        z *= 0.5;
    }
    z += m * sigma(f64::from(histogram[0]) / m);
    const ALPHA_INF: f64 = 0.721_347_520_444_481_7;
    (ALPHA_INF * m * m / z).round() as u64
}

fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let (mut y, mut z) = (1.0, x);
    loop {
        x *= x;
        let before = z;
        z += x * y;
        y += y;
        if z == before {
            return z;
        }
    }
}

fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let (mut y, mut z) = (1.0, 1.0 - x);
    loop {
        x = x.sqrt();
        let before = z;
        y *= 0.5;
        z -= (1.0 - x).powi(2) * y;
        if z == before {
            return z / 3.0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Registers and counts read back from what redis-server 7.0 stores after one
    /// PFADD of each element (an empty key and word lengths of 1, 5 and 8 + 8 + 1).
    #[test]
    fn elements_land_where_redis_puts_them() {
        assert_eq!(register_and_count(b"a"), (12711, 2));
        assert_eq!(register_and_count(b"hotkv"), (1066, 2));
        assert_eq!(register_and_count(b"foobarbaz12345678"), (14474, 2));
        let mut v = new();
        assert_eq!(add(&mut v, b"a"), Some(true));
        invalidate(&mut v);
        let redis = b"HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80q\xa6\x84NW";
        assert_eq!(v, redis.to_vec());
    }

    #[test]
    fn dense_registers_round_trip_at_every_bit_offset() {
        let mut registers = vec![0u8; REGISTERS * 6 / 8];
        for i in 0..REGISTERS {
            dense_set(&mut registers, i, (i % 64) as u8);
        }
        for i in 0..REGISTERS {
            assert_eq!(dense_get(&registers, i), (i % 64) as u8, "register {i}");
        }
    }

    #[test]
    fn sparse_and_dense_agree_on_every_register() {
        let mut sparse = new();
        let mut model = vec![0u8; REGISTERS];
        for n in 0..3000u32 {
            let e = n.to_string();
            let (i, c) = register_and_count(e.as_bytes());
            let changed = add(&mut sparse, e.as_bytes()).unwrap();
            assert_eq!(changed, c > model[i], "element {n}");
            model[i] = model[i].max(c);
            assert_eq!(registers(&sparse).unwrap(), model, "after element {n}");
        }
        assert_eq!(sparse[4], DENSE, "3000 elements turn it dense");
        let estimate = estimate(&model) as f64;
        assert!((estimate - 3000.0).abs() < 3000.0 * 0.05, "{estimate}");
    }

    #[test]
    fn corrupted_sparse_bodies_are_refused() {
        let mut v = new();
        v.pop();
        assert_eq!(registers(&v), None);
        let mut v = new();
        v.push(0x00);
        assert_eq!(registers(&v), None, "one register too many");
    }
}
