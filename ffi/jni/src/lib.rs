//! # rsm-jni
//!
//! The JNI entry points of the Kafka `RemoteStorageManager` plugin in `java-bindings/`: the native methods of
//! `io.rsm.kafka.NativeBridge`. A thin face over [`rsm_facade::Store`], as the CLI is; no storage logic lives
//! here.
//!
//! What crosses the boundary:
//! - segment metadata as the compact byte encoding of [`rsm_facade::wire`] (Java writes it, Rust reads it);
//! - for a copy, the paths of the segment's files and the leader-epoch checkpoint bytes: Rust reads the files
//!   itself, so no segment bytes cross JNI on the way out;
//! - for a fetch, a stream handle that Java reads in chunks into its own `byte[]` (short reads, `-1` at the
//!   end), then closes; handles are registry ids ([`handles`]), so a stale or doubled close is harmless;
//! - every failure as a Java `io.rsm.kafka.NativeStorageException(int kind, String message)` carrying the
//!   [`rsm_facade::ResultCode`] number (from the error's kind and status) and the full message, including panics ([`KIND_PANIC`]): every entry
//!   point runs inside `EnvUnowned::with_env`, which catches unwinding, and the [`ThrowToJava`] policy turns
//!   the outcome into that exception. Nothing unwinds into the JVM.
//! - log events through [`log`], a queue a Java daemon thread drains into SLF4J.
//!
//! Memory: no native allocation depends on a size Java asks for. A read copies at most what one piece of
//! the stream already holds into the caller's array, a skip discards without buffering, and the metadata
//! decoder checks every length against the array it came in.

#![warn(missing_docs)]

mod boundary;
pub mod handles;
pub mod log;
mod stream;

pub use boundary::{Failure, KIND_JNI, KIND_PANIC, ThrowToJava};

use boundary::{
    EXCEPTION_CLASS, Outcome, bytes, elapsed_ms, entry, metadata, saturating_jlong, string, string_array, to_bool,
};
use bytes::Bytes;
use handles::{STORES, STREAMS};
use jni::EnvUnowned;
use jni::objects::{JByteArray, JClass, JLongArray, JObject, JObjectArray, JString};
use jni::sys::{jboolean, jint, jlong};
use rsm_core::{Error, ErrorKind, LogSegmentData};
use rsm_facade::{Store, wire};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use stream::with_stream;

// ---------------------------------------------------------------------------------------------------------
// Native methods of io.rsm.kafka.NativeBridge. Each one's doc states its Java signature and ownership.

/// `static native void init(Class<?> exceptionClass, int logLevel)`: remembers the plugin's exception class
/// (a global reference, kept for the life of the library) and installs the log bridge. Idempotent.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_rsm_kafka_NativeBridge_init<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    exception_class: JClass<'l>,
    log_level: jint,
) {
    env.with_env(|env| -> Outcome<()> {
        if EXCEPTION_CLASS.get().is_none() {
            if exception_class.is_null() {
                env.throw_new(jni::jni_str!("java/lang/NullPointerException"), jni::jni_str!("exceptionClass"))?;
            }
            let global = env.new_global_ref(&exception_class)?;
            let _ = EXCEPTION_CLASS.set(global);
        }
        log::set_max_level(log_level);
        log::install();
        Ok(())
    })
    .resolve::<ThrowToJava>()
}

/// `static native String version()`: the crate version (a loaded-library check).
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_rsm_kafka_NativeBridge_version<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
) -> JString<'l> {
    entry(&mut env, |env| Ok(env.new_string(env!("CARGO_PKG_VERSION"))?))
}

/// `static native long openStore(String[] keys, String[] values)`: opens the store the settings name
/// (`store.url`); unknown or bad settings throw kind CONFIG naming the key. Returns a store handle that Java
/// must pass to `closeStore`.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_rsm_kafka_NativeBridge_openStore<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    keys: JObjectArray<'l, JString<'l>>,
    values: JObjectArray<'l, JString<'l>>,
) -> jlong {
    entry(&mut env, |env| {
        if keys.is_null() || values.is_null() {
            return Err(Error::invalid("settings arrays are null").into());
        }
        let n = keys.len(env)?;
        if values.len(env)? != n {
            return Err(Error::invalid("settings keys and values differ in length").into());
        }
        let mut settings = BTreeMap::new();
        for i in 0..n {
            let (k, v) = env.with_local_frame(4, |env| -> Outcome<(String, String)> {
                let k = keys.get_element(env, i)?;
                let v = values.get_element(env, i)?;
                Ok((string(env, &k, "a setting key")?, string(env, &v, "a setting value")?))
            })?;
            settings.insert(k, v);
        }
        let keys: Vec<&String> = settings.keys().collect();
        tracing::debug!(target: "rsm_jni", "opening store with settings {keys:?}");
        let url = settings.get(rsm_core::config::STORE_URL_KEY).cloned().unwrap_or_default();
        let store = Store::open_settings(&settings)?;
        let handle = STORES.insert(store);
        tracing::info!(target: "rsm_jni", "opened store {url} (handle {handle})");
        Ok(handle)
    })
}

/// `static native boolean closeStore(long store)`: releases a store handle; `false` if it was not open.
/// Streams opened from it stay readable until they are closed.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_rsm_kafka_NativeBridge_closeStore<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    store: jlong,
) -> jboolean {
    entry(&mut env, |_| Ok(to_bool(STORES.remove(store))))
}

/// `static native String[] cacheMetricNames()`: the names of the caches' counters
/// ([`rsm_facade::CACHE_METRICS`]), in the order of `cacheMetrics`.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_rsm_kafka_NativeBridge_cacheMetricNames<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
) -> JObjectArray<'l, JString<'l>> {
    entry(&mut env, |env| string_array(env, rsm_facade::CACHE_METRICS.iter().copied()))
}

/// `static native String[] cacheMetricDescriptions()`: what each of the caches' counters counts
/// ([`rsm_facade::STORE_METRICS`]), in the order of `cacheMetricNames`.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_rsm_kafka_NativeBridge_cacheMetricDescriptions<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
) -> JObjectArray<'l, JString<'l>> {
    entry(&mut env, |env| string_array(env, rsm_facade::STORE_METRICS.iter().map(|m| m.description)))
}

/// `static native long[] cacheMetrics(long store)`: the store's cache counters
/// ([`Store::cache_metrics`]), in the order of `cacheMetricNames`; a value above `Long.MAX_VALUE` reads as
/// `Long.MAX_VALUE`.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_rsm_kafka_NativeBridge_cacheMetrics<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    store: jlong,
) -> JLongArray<'l> {
    entry(&mut env, |env| {
        let values = STORES.get(store)?.cache_metrics().map(saturating_jlong);
        let out = JLongArray::new(env, values.len())?;
        out.set_region(env, 0, &values)?;
        Ok(out)
    })
}

/// The values of one operation in `topicRequests`' counts: requests, failed, bytes sent, bytes received.
const TOPIC_VALUES: usize = 4;

/// `static native String[] requestOps()`: the names of the kinds of request (`PUT`, `POST`, `GET`, `HEAD`,
/// `DELETE`, `LIST`, `OTHER`), in the order of each topic's counts in `topicRequests`.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_rsm_kafka_NativeBridge_requestOps<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
) -> JObjectArray<'l, JString<'l>> {
    entry(&mut env, |env| string_array(env, rsm_core::backend::Op::ALL.iter().map(|op| op.name())))
}

/// `static native Object[] topicRequests(long store)`: every topic's requests so far, in one call:
/// `{String[] topics, long[] counts, String level}`, where `counts` holds, for each topic in order and each
/// kind of request in the order of `requestOps`, its requests, failed requests, bytes sent and bytes
/// received. The counts are what a bill counts ([`Store::requests_by_topic`]): the HTTP requests of a cloud
/// store's client (level `store`), else the calls on the store (level `contract`). A value above
/// `Long.MAX_VALUE` reads as `Long.MAX_VALUE`.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_rsm_kafka_NativeBridge_topicRequests<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    store: jlong,
) -> JObjectArray<'l, JObject<'l>> {
    entry(&mut env, |env| {
        let (level, topics) = STORES.get(store)?.requests_by_topic();
        let ops = rsm_core::backend::Op::ALL;
        let mut values = Vec::with_capacity(topics.len() * ops.len() * TOPIC_VALUES);
        for counts in topics.values() {
            for op in ops {
                let c = counts.get(op);
                values.extend([c.requests, c.failed, c.bytes_sent, c.bytes_received].map(saturating_jlong));
            }
        }
        let names = string_array(env, topics.keys().map(String::as_str))?;
        let counts = JLongArray::new(env, values.len())?;
        counts.set_region(env, 0, &values)?;
        let level = env.new_string(match level {
            rsm_facade::CountLevel::Store => "store",
            rsm_facade::CountLevel::Contract => "contract",
        })?;
        let out = JObjectArray::<JObject>::new(env, 3, JObject::null())?;
        out.set_element(env, 0, &names)?;
        out.set_element(env, 1, &counts)?;
        out.set_element(env, 2, &level)?;
        Ok(out)
    })
}

/// `static native byte[] copy(long store, byte[] metadata, String log, String offsetIndex, String timeIndex,
/// String transactionIndex, String producerSnapshot, byte[] leaderEpochCheckpoint)`: copies a segment; the
/// native side reads the files. `transactionIndex` may be null. Returns the custom metadata or null.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub extern "system" fn Java_io_rsm_kafka_NativeBridge_copy<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    store: jlong,
    md: JByteArray<'l>,
    log: JString<'l>,
    offset_index: JString<'l>,
    time_index: JString<'l>,
    txn_index: JString<'l>,
    snapshot: JString<'l>,
    leader_epochs: JByteArray<'l>,
) -> JByteArray<'l> {
    entry(&mut env, |env| {
        let s = STORES.get(store)?;
        let md = metadata(env, &md)?;
        let path = |j: &JString<'_>, what| string(env, j, what).map(PathBuf::from);
        let data = LogSegmentData {
            log_segment: path(&log, "the log segment path")?,
            offset_index: path(&offset_index, "the offset index path")?,
            time_index: path(&time_index, "the time index path")?,
            transaction_index: if txn_index.is_null() { None } else { Some(path(&txn_index, "")?) },
            producer_snapshot_index: path(&snapshot, "the producer snapshot path")?,
            leader_epoch_index: Bytes::from(bytes(env, &leader_epochs, "the leader epoch checkpoint")?),
        };
        let t = Instant::now();
        let custom = s.copy(&md, &data)?;
        tracing::info!(target: "rsm_jni",
            "copied segment {} (offsets {}..={}, {} bytes) in {:.1} ms",
            md.remote_log_segment_id, md.start_offset, md.end_offset, md.segment_size_in_bytes, elapsed_ms(t));
        Ok(match custom {
            Some(c) => env.byte_array_from_slice(&c.0)?,
            None => JByteArray::default(),
        })
    })
}

/// `static native void delete(long store, byte[] metadata)`: deletes a segment; deleting what is gone is
/// not an error.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_rsm_kafka_NativeBridge_delete<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    store: jlong,
    md: JByteArray<'l>,
) {
    entry(&mut env, |env| {
        let s = STORES.get(store)?;
        let md = metadata(env, &md)?;
        let t = Instant::now();
        s.delete(&md)?;
        tracing::info!(target: "rsm_jni",
            "deleted segment {} (offsets {}..={}) in {:.1} ms",
            md.remote_log_segment_id, md.start_offset, md.end_offset, elapsed_ms(t));
        Ok(())
    })
}

/// `static native long liveHandles(int what)`: open stores (0) or open streams (1), for leak checks.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_rsm_kafka_NativeBridge_liveHandles<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    what: jint,
) -> jlong {
    entry(&mut env, |_| match what {
        0 => Ok(STORES.len() as jlong),
        1 => Ok(STREAMS.len() as jlong),
        _ => Err(Error::invalid(format!("liveHandles({what})")).into()),
    })
}

/// `static native String describeMetadata(byte[] metadata)`: the decoded metadata as one line, for the
/// Java test that checks both sides of the encoding agree.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_rsm_kafka_NativeBridge_describeMetadata<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    md: JByteArray<'l>,
) -> JString<'l> {
    entry(&mut env, |env| {
        let md = metadata(env, &md)?;
        Ok(env.new_string(wire::describe_metadata(&md))?)
    })
}

/// `static native String pollLog(long timeoutMillis)`: the next log event (`<level digit><target>\u0001
/// <message>`), or null after the timeout. Called by the plugin's log thread.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_rsm_kafka_NativeBridge_pollLog<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    timeout_ms: jlong,
) -> JString<'l> {
    entry(&mut env, |env| match log::poll(Duration::from_millis(timeout_ms.clamp(0, 60_000) as u64)) {
        Some(line) => Ok(env.new_string(line)?),
        None => Ok(JString::default()),
    })
}

/// `static native void setLogLevel(int level)`: 0 off, 1 error, 2 warn, 3 info, 4 debug, 5 trace.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_rsm_kafka_NativeBridge_setLogLevel<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    level: jint,
) {
    entry(&mut env, |_| {
        log::set_max_level(level);
        Ok(())
    })
}

/// `static native long droppedLogEvents()`: log events dropped because Java did not take them in time.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_rsm_kafka_NativeBridge_droppedLogEvents<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
) -> jlong {
    entry(&mut env, |_| Ok(log::dropped() as jlong))
}

/// `static native void selfTest(int what, long handle, String message)`: diagnostics that prove the
/// boundary on the shipped library: 1 panics with a message, 2 panics with a non-string payload, 3 panics
/// while holding the lock of stream `handle` (later calls on it must fail cleanly), 4 logs `message` at every
/// level, 10 + k fails with an SDK error whose result code is k, carrying `message`.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_rsm_kafka_NativeBridge_selfTest<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    what: jint,
    handle: jlong,
    message: JString<'l>,
) {
    entry(&mut env, |env| {
        let message = if message.is_null() { String::new() } else { string(env, &message, "message")? };
        match what {
            1 => panic!("self test: {message}"),
            2 => std::panic::panic_any(what),
            3 => {
                let _: () = with_stream(handle, |_| panic!("self test: panic inside a stream call"))?;
                Ok(())
            }
            4 => {
                tracing::error!(target: "rsm_jni::selftest", "{message}");
                tracing::warn!(target: "rsm_jni::selftest", "{message}");
                tracing::info!(target: "rsm_jni::selftest", "{message}");
                tracing::debug!(target: "rsm_jni::selftest", "{message}");
                tracing::trace!(target: "rsm_jni::selftest", "{message}");
                Ok(())
            }
            11 => Err(Error::not_found(message).into()),
            12 => Err(Error::new(ErrorKind::Storage, message).transient().into()),
            13 => Err(Error::new(ErrorKind::Storage, message).into()),
            14 => Err(Error::corrupt(message).into()),
            15 => Err(Error::invalid(message).into()),
            16 => Err(Error::config("some.key", message).into()),
            _ => Err(Error::invalid(format!("unknown self test {what}")).into()),
        }
    })
}
