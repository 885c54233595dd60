//! The contract every engine keeps (see the crate docs), as checks any
//! implementation's tests can run: `engine::conformance_tests!(open)` expands to one
//! `#[test]` per check, where `open(dir)` opens (or reopens) an engine in `dir`.
//!
//! Checks follow the engine's [`Capabilities`]: an engine without key order must
//! refuse ranges with [`Error::Unsupported`]; one that is not durable must come back
//! empty from a reopen. Nothing is skipped.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use proptest::prelude::*;
use proptest::test_runner::TestRunner;

use crate::{Engine, Error, KeyRange, Result, Step, WriteBatch};

#[macro_export]
macro_rules! conformance_tests {
    ($open:expr) => {
        $crate::conformance_tests!(@each $open;
            point_operations, batches_apply_in_order, batches_are_atomic_to_readers,
            multi_get_keeps_order, concurrent_writers, large_keys_and_values, ordered_ranges,
            cursors_see_one_point_in_time, reopen_gives_back_writes, closed_engine_refuses,
            agrees_with_a_model);
    };
    (@each $open:expr; $($check:ident),*) => {
        $(
            #[test]
            fn $check() {
                $crate::conformance::$check(&$open);
            }
        )*
    };
}

fn fresh<E: Engine>(open: &impl Fn(&Path) -> Result<E>) -> (tempfile::TempDir, E) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let engine = open(dir.path()).expect("open a fresh engine");
    (dir, engine)
}

fn reopen<E: Engine>(open: &impl Fn(&Path) -> Result<E>, dir: &Path, engine: E) -> E {
    engine.close().expect("close");
    drop(engine);
    open(dir).expect("reopen")
}

fn collect(engine: &dyn Engine, range: KeyRange) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
    let mut cursor = engine.range(range)?;
    let mut out = Vec::new();
    while let Some((k, v)) = cursor.next()? {
        out.push((k.to_vec(), v.to_vec()));
    }
    Ok(out)
}

/// Every entry, walked by [`crate::Cursor::next_within`] with `budget` entries a call,
/// the cursor sought to each key it stops at.
fn collect_within(engine: &dyn Engine, budget: usize) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
    let mut cursor = engine.range(KeyRange::all())?;
    let mut out: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    loop {
        let mut left = budget;
        match cursor.next_within(&mut left)? {
            Step::Entry(k, v) => out.push((k.to_vec(), v.to_vec())),
            Step::End => return Ok(out),
            Step::Stopped(at) => {
                assert_eq!(left, 0, "stopped with budget left");
                assert!(out.last().is_none_or(|(last, _)| at > last.as_slice()));
                let at = at.to_vec();
                cursor.seek(&at)?;
            }
        }
    }
}

pub fn point_operations<E: Engine>(open: &impl Fn(&Path) -> Result<E>) {
    let (_dir, e) = fresh(open);
    assert_eq!(e.get(b"k").unwrap(), None);
    e.put(b"k", b"v1").unwrap();
    assert_eq!(e.get(b"k").unwrap().as_deref(), Some(&b"v1"[..]));
    e.put(b"k", b"v2").unwrap();
    assert_eq!(e.get(b"k").unwrap().as_deref(), Some(&b"v2"[..]));
    // The empty key and the empty value are ordinary, and an empty value is not absence.
    e.put(b"", b"empty key").unwrap();
    e.put(b"empty value", b"").unwrap();
    assert_eq!(e.get(b"").unwrap().as_deref(), Some(&b"empty key"[..]));
    assert_eq!(e.get(b"empty value").unwrap().as_deref(), Some(&b""[..]));
    // Bytes that are special elsewhere (NUL, 0xff, separators) are just bytes.
    let odd = [0u8, 0xff, b'\n', b' ', 0x80];
    e.put(&odd, &odd).unwrap();
    assert_eq!(e.get(&odd).unwrap().as_deref(), Some(&odd[..]));
    assert_eq!(e.get(&odd[..4]).unwrap(), None);
    e.delete(b"k").unwrap();
    assert_eq!(e.get(b"k").unwrap(), None);
    e.delete(b"never written").unwrap();
    e.put(b"k", b"v3").unwrap();
    assert_eq!(e.get(b"k").unwrap().as_deref(), Some(&b"v3"[..]));
}

pub fn batches_apply_in_order<E: Engine>(open: &impl Fn(&Path) -> Result<E>) {
    let (_dir, e) = fresh(open);
    e.put(b"gone", b"x").unwrap();
    let mut batch = WriteBatch::new();
    batch
        .put(b"a", b"1")
        .put(b"b", b"1")
        .delete(b"a")
        .put(b"c", b"1")
        .put(b"c", b"2")
        .delete(b"gone")
        .delete(b"d")
        .put(b"d", b"1");
    e.write(&batch).unwrap();
    let got = e.multi_get(&[b"a", b"b", b"c", b"d", b"gone"]).unwrap();
    let want: Vec<Option<Vec<u8>>> = vec![
        None,
        Some(b"1".to_vec()),
        Some(b"2".to_vec()),
        Some(b"1".to_vec()),
        None,
    ];
    assert_eq!(got, want);
    e.write(&WriteBatch::new()).unwrap();
    assert_eq!(e.get(b"b").unwrap().as_deref(), Some(&b"1"[..]));
}

/// Writers set ten keys to one value per batch; readers must never see them differ.
pub fn batches_are_atomic_to_readers<E: Engine>(open: &impl Fn(&Path) -> Result<E>) {
    let (_dir, e) = fresh(open);
    let keys: Vec<Vec<u8>> = (0..10).map(|i| format!("atomic{i}").into_bytes()).collect();
    let key_refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
    let mut first = WriteBatch::new();
    for k in &keys {
        first.put(k, b"w0-0");
    }
    e.write(&first).unwrap();
    let writers_left = AtomicUsize::new(2);
    std::thread::scope(|s| {
        for writer in 0..2 {
            let (e, keys, writers_left) = (&e, &keys, &writers_left);
            s.spawn(move || {
                // Counted down even if a write fails, so the readers stop.
                let _done = CountDown(writers_left);
                for round in 0..2000 {
                    let value = format!("w{writer}-{round}");
                    let mut batch = WriteBatch::new();
                    for k in keys {
                        batch.put(k, value.as_bytes());
                    }
                    e.write(&batch).unwrap();
                }
            });
        }
        for _ in 0..2 {
            let (e, key_refs, writers_left) = (&e, &key_refs, &writers_left);
            s.spawn(move || {
                while writers_left.load(Ordering::SeqCst) > 0 {
                    let values = e.multi_get(key_refs).unwrap();
                    assert!(values[0].is_some());
                    assert!(
                        values.iter().all(|v| v == &values[0]),
                        "a reader saw part of a batch: {values:?}"
                    );
                }
            });
        }
    });
}

struct CountDown<'a>(&'a AtomicUsize);

impl Drop for CountDown<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

pub fn multi_get_keeps_order<E: Engine>(open: &impl Fn(&Path) -> Result<E>) {
    let (_dir, e) = fresh(open);
    e.put(b"x", b"1").unwrap();
    e.put(b"y", b"2").unwrap();
    let got = e.multi_get(&[b"y", b"missing", b"x", b"y"]).unwrap();
    assert_eq!(
        got,
        vec![
            Some(b"2".to_vec()),
            None,
            Some(b"1".to_vec()),
            Some(b"2".to_vec())
        ]
    );
    assert!(e.multi_get(&[]).unwrap().is_empty());
}

/// Four threads write disjoint keys (and delete every third), then every key is checked.
pub fn concurrent_writers<E: Engine>(open: &impl Fn(&Path) -> Result<E>) {
    let (_dir, e) = fresh(open);
    const PER_THREAD: usize = 2000;
    std::thread::scope(|s| {
        for t in 0..4 {
            let e = &e;
            s.spawn(move || {
                for i in 0..PER_THREAD {
                    let key = format!("t{t}-{i}");
                    e.put(key.as_bytes(), format!("v{i}").as_bytes()).unwrap();
                    if i % 3 == 0 {
                        e.delete(key.as_bytes()).unwrap();
                    }
                }
            });
        }
    });
    for t in 0..4 {
        for i in 0..PER_THREAD {
            let got = e.get(format!("t{t}-{i}").as_bytes()).unwrap();
            let want = (i % 3 != 0).then(|| format!("v{i}").into_bytes());
            assert_eq!(got, want, "key t{t}-{i}");
        }
    }
}

pub fn large_keys_and_values<E: Engine>(open: &impl Fn(&Path) -> Result<E>) {
    let (dir, e) = fresh(open);
    let key: Vec<u8> = (0..70_000u32).map(|i| (i % 251) as u8).collect();
    let value: Vec<u8> = (0..3_000_000u32).map(|i| (i % 253) as u8).collect();
    e.put(&key, &value).unwrap();
    e.put(b"after", b"small").unwrap();
    assert_eq!(e.get(&key).unwrap().as_deref(), Some(&value[..]));
    let e = reopen(open, dir.path(), e);
    if e.capabilities().durable {
        assert_eq!(e.get(&key).unwrap().as_deref(), Some(&value[..]));
        assert_eq!(e.get(b"after").unwrap().as_deref(), Some(&b"small"[..]));
    } else {
        assert_eq!(e.get(&key).unwrap(), None);
    }
}

/// An engine without key order must say so; returns whether it has none.
fn refuses_ranges(e: &dyn Engine) -> bool {
    if e.capabilities().ordered {
        return false;
    }
    assert!(matches!(
        e.range(KeyRange::all()),
        Err(Error::Unsupported(_))
    ));
    true
}

pub fn ordered_ranges<E: Engine>(open: &impl Fn(&Path) -> Result<E>) {
    let (_dir, e) = fresh(open);
    if refuses_ranges(&e) {
        return;
    }
    let mut model = BTreeMap::new();
    // Written in a scrambled order, with overwrites and deletes.
    for i in 0..300u32 {
        let n = (i * 7919) % 300;
        let key = format!("key{n:04}").into_bytes();
        e.put(&key, format!("v{i}").as_bytes()).unwrap();
        model.insert(key, format!("v{i}").into_bytes());
    }
    for n in (0..300).step_by(5) {
        let key = format!("key{n:04}").into_bytes();
        e.delete(&key).unwrap();
        model.remove(&key);
    }
    let all: Vec<_> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(collect(&e, KeyRange::all()).unwrap(), all);
    let bounded = collect(&e, KeyRange::all().from(b"key0100").until(b"key0200")).unwrap();
    let want: Vec<_> = model
        .range(b"key0100".to_vec()..b"key0200".to_vec())
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    assert_eq!(bounded, want);
    let limited = collect(&e, KeyRange::all().from(b"key0042").limit(3)).unwrap();
    let keys: Vec<_> = limited.iter().map(|(k, _)| k.as_slice()).collect();
    assert_eq!(keys, [&b"key0042"[..], b"key0043", b"key0044"]);
    assert!(collect(&e, KeyRange::all().from(b"zzz"))
        .unwrap()
        .is_empty());
    assert!(collect(&e, KeyRange::all().from(b"b").until(b"a"))
        .unwrap()
        .is_empty());

    let mut cursor = e.range(KeyRange::all().from(b"key0100").limit(2)).unwrap();
    cursor.seek(b"key0250").unwrap();
    assert_eq!(
        cursor.next().unwrap().map(|(k, _)| k.to_vec()),
        Some(b"key0251".to_vec())
    );
    // A seek resets the limit and never goes before the start.
    cursor.seek(b"a").unwrap();
    assert_eq!(
        cursor.next().unwrap().map(|(k, _)| k.to_vec()),
        Some(b"key0101".to_vec())
    );
    assert_eq!(
        cursor.next().unwrap().map(|(k, _)| k.to_vec()),
        Some(b"key0102".to_vec())
    );
    assert_eq!(cursor.next().unwrap().map(|(k, _)| k.to_vec()), None);
}

pub fn cursors_see_one_point_in_time<E: Engine>(open: &impl Fn(&Path) -> Result<E>) {
    let (_dir, e) = fresh(open);
    if refuses_ranges(&e) {
        return;
    }
    for k in [b"a", b"c", b"e"] {
        e.put(k, b"old").unwrap();
    }
    let mut cursor = e.range(KeyRange::all()).unwrap();
    assert_eq!(cursor.next().unwrap(), Some((&b"a"[..], &b"old"[..])));
    e.put(b"b", b"new").unwrap();
    e.put(b"c", b"new").unwrap();
    e.delete(b"e").unwrap();
    e.put(b"f", b"new").unwrap();
    let mut rest = Vec::new();
    while let Some((k, v)) = cursor.next().unwrap() {
        rest.push((k.to_vec(), v.to_vec()));
    }
    assert_eq!(
        rest,
        vec![
            (b"c".to_vec(), b"old".to_vec()),
            (b"e".to_vec(), b"old".to_vec())
        ]
    );
    drop(cursor);
    let now: Vec<_> = collect(&e, KeyRange::all())
        .unwrap()
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    assert_eq!(now, [b"a", b"b", b"c", b"f"]);
}

pub fn reopen_gives_back_writes<E: Engine>(open: &impl Fn(&Path) -> Result<E>) {
    let (dir, e) = fresh(open);
    e.put(b"kept", b"1").unwrap();
    e.put(b"deleted", b"1").unwrap();
    e.delete(b"deleted").unwrap();
    let mut batch = WriteBatch::new();
    batch.put(b"batched", b"2").put(b"kept", b"3");
    e.write(&batch).unwrap();
    e.flush().unwrap();
    let durable = e.capabilities().durable;
    let e = reopen(open, dir.path(), e);
    let got = e.multi_get(&[b"kept", b"deleted", b"batched"]).unwrap();
    if durable {
        assert_eq!(got, vec![Some(b"3".to_vec()), None, Some(b"2".to_vec())]);
        // And it keeps working after the reopen.
        e.put(b"later", b"4").unwrap();
        let e = reopen(open, dir.path(), e);
        assert_eq!(e.get(b"later").unwrap().as_deref(), Some(&b"4"[..]));
        assert_eq!(e.get(b"kept").unwrap().as_deref(), Some(&b"3"[..]));
    } else {
        assert_eq!(got, vec![None, None, None]);
    }
}

pub fn closed_engine_refuses<E: Engine>(open: &impl Fn(&Path) -> Result<E>) {
    let (_dir, e) = fresh(open);
    e.put(b"k", b"v").unwrap();
    e.close().unwrap();
    e.close().unwrap();
    assert!(matches!(e.get(b"k"), Err(Error::Closed)));
    assert!(matches!(e.put(b"k", b"v"), Err(Error::Closed)));
    assert!(matches!(e.delete(b"k"), Err(Error::Closed)));
    assert!(matches!(e.write(&WriteBatch::new()), Err(Error::Closed)));
    assert!(matches!(e.multi_get(&[b"k"]), Err(Error::Closed)));
    assert!(matches!(e.range(KeyRange::all()), Err(Error::Closed)));
    assert!(matches!(e.flush(), Err(Error::Closed)));
}

#[derive(Clone, Debug)]
enum Op {
    Put(Vec<u8>, Vec<u8>),
    Delete(Vec<u8>),
    Batch(Vec<(Vec<u8>, Option<Vec<u8>>)>),
    Get(Vec<u8>),
    Range(Vec<u8>, Vec<u8>, usize),
    /// Every entry, walked within a budget per call.
    WalkWithin(usize),
    /// A whole-store compaction started, which changes nothing a reader sees.
    Compact,
    Reopen,
}

fn op_strategy() -> impl Strategy<Value = Op> {
    // A small key space so operations collide.
    let key = proptest::collection::vec(0u8..4, 0..3);
    let value = proptest::collection::vec(any::<u8>(), 0..20);
    prop_oneof![
        4 => (key.clone(), value.clone()).prop_map(|(k, v)| Op::Put(k, v)),
        2 => key.clone().prop_map(Op::Delete),
        2 => proptest::collection::vec((key.clone(), proptest::option::of(value)), 0..6).prop_map(Op::Batch),
        3 => key.clone().prop_map(Op::Get),
        2 => (key.clone(), key, 0usize..6).prop_map(|(a, b, n)| Op::Range(a, b, n)),
        1 => (0usize..3).prop_map(Op::WalkWithin),
        1 => Just(Op::Compact),
        1 => Just(Op::Reopen),
    ]
}

/// Random operations against a `BTreeMap`, replayable from proptest's seed.
pub fn agrees_with_a_model<E: Engine>(open: &impl Fn(&Path) -> Result<E>) {
    let mut runner = TestRunner::default();
    runner
        .run(&proptest::collection::vec(op_strategy(), 1..60), |ops| {
            let (dir, e) = fresh(open);
            let mut e = Some(e);
            let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
            for op in ops {
                let engine = e.as_ref().unwrap();
                match op {
                    Op::Put(k, v) => {
                        engine.put(&k, &v).unwrap();
                        model.insert(k, v);
                    }
                    Op::Delete(k) => {
                        engine.delete(&k).unwrap();
                        model.remove(&k);
                    }
                    Op::Batch(ops) => {
                        let mut batch = WriteBatch::new();
                        for (k, v) in ops {
                            match v {
                                Some(v) => {
                                    batch.put(&k, &v);
                                    model.insert(k, v);
                                }
                                None => {
                                    batch.delete(&k);
                                    model.remove(&k);
                                }
                            }
                        }
                        engine.write(&batch).unwrap();
                    }
                    Op::Get(k) => prop_assert_eq!(engine.get(&k).unwrap(), model.get(&k).cloned()),
                    Op::Range(start, end, limit) => {
                        let range = KeyRange::all().from(&start).until(&end).limit(limit);
                        if engine.capabilities().ordered {
                            let want: Vec<_> = model
                                .iter()
                                .filter(|(k, _)| **k >= start && **k < end)
                                .take(limit)
                                .map(|(k, v)| (k.clone(), v.clone()))
                                .collect();
                            prop_assert_eq!(collect(engine, range).unwrap(), want);
                        } else {
                            prop_assert!(matches!(engine.range(range), Err(Error::Unsupported(_))));
                        }
                    }
                    Op::WalkWithin(budget) => {
                        if engine.capabilities().ordered {
                            let want: Vec<_> =
                                model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
                            prop_assert_eq!(collect_within(engine, budget).unwrap(), want);
                        }
                    }
                    Op::Compact => engine.compact_in_background().unwrap(),
                    Op::Reopen => {
                        let durable = engine.capabilities().durable;
                        e = Some(reopen(open, dir.path(), e.take().unwrap()));
                        if !durable {
                            model.clear();
                        }
                    }
                }
            }
            let engine = e.as_ref().unwrap();
            for (k, v) in &model {
                prop_assert_eq!(engine.get(k).unwrap(), Some(v.clone()));
            }
            Ok(())
        })
        .unwrap();
}
