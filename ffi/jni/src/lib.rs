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

pub mod handles;
pub mod log;

use bytes::Bytes;
use handles::Registry;
use jni::errors::ErrorPolicy;
use jni::objects::{JByteArray, JClass, JLongArray, JObject, JObjectArray, JString, JThrowable, JValue, ReleaseMode};
use jni::sys::{jboolean, jint, jlong};
use jni::{Env, EnvUnowned, jni_sig};
use rsm_core::{Error, ErrorKind, IndexType, LogSegmentData, RemoteLogSegmentMetadata, Result};
use rsm_facade::{SegmentReader, Store, panic_message, wire};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The exception kind for a Rust panic caught at the boundary.
pub const KIND_PANIC: i32 = rsm_facade::ResultCode::Panic as i32;
/// The exception kind for a failure of JNI itself (a bad argument type, a missing class).
pub const KIND_JNI: i32 = 101;

static STORES: Registry<Store> = Registry::new("store");
static STREAMS: Registry<Mutex<SegmentReader>> = Registry::new("stream");
static EXCEPTION_CLASS: OnceLock<jni::refs::Global<JClass<'static>>> = OnceLock::new();

/// What went wrong inside an entry point.
#[derive(Debug)]
pub enum Failure {
    /// An SDK error: thrown with its kind and full message.
    Rsm(Error),
    /// A JNI error; if it left a Java exception pending (say an `OutOfMemoryError`), that one propagates.
    Jni(jni::errors::Error),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure::Rsm(e)
    }
}

impl From<jni::errors::Error> for Failure {
    fn from(e: jni::errors::Error) -> Self {
        Failure::Jni(e)
    }
}

type Outcome<T> = std::result::Result<T, Failure>;

/// Throws `io.rsm.kafka.NativeStorageException(kind, message)` (or, before `init`, an
/// `IllegalStateException`). The class is the one Java passed to `init`, so it is the plugin class loader's
/// own even when the thread's context class loader is another.
fn throw(env: &mut Env<'_>, kind: i32, message: &str) -> jni::errors::Result<()> {
    let Some(class) = EXCEPTION_CLASS.get() else {
        let msg = format!("rsm native library used before NativeBridge.init: kind {kind}: {message}");
        let _ = env.throw_new(jni::jni_str!("java/lang/IllegalStateException"), jni::strings::JNIString::from(msg));
        return Ok(());
    };
    let jmsg = env.new_string(message)?;
    let obj = env.new_object(class, jni_sig!("(ILjava/lang/String;)V"), &[JValue::Int(kind), JValue::Object(&jmsg)])?;
    let throwable = env.cast_local::<JThrowable>(obj)?;
    // `throw` reports the now-pending exception as an error: that is the point, so ignore it.
    let _ = env.throw(throwable);
    Ok(())
}

/// The error policy of every entry point: errors and panics become a pending `NativeStorageException`, and
/// the method returns its type's default (`0`, `null`), which Java never sees because the exception wins.
pub struct ThrowToJava;

impl<T: Default> ErrorPolicy<T, Failure> for ThrowToJava {
    type Captures<'unowned_env_local: 'native_method, 'native_method> = ();

    fn on_error<'unowned_env_local: 'native_method, 'native_method>(
        env: &mut Env<'unowned_env_local>,
        _: &mut (),
        err: Failure,
    ) -> jni::errors::Result<T> {
        if env.exception_check() {
            // A Java exception is already pending (from a JNI call): let it propagate as is.
            return Ok(T::default());
        }
        match err {
            Failure::Rsm(e) => throw(env, rsm_facade::ResultCode::of(&e) as i32, &e.full_message())?,
            Failure::Jni(e) => throw(env, KIND_JNI, &format!("JNI call failed: {e}"))?,
        }
        Ok(T::default())
    }

    fn on_panic<'unowned_env_local: 'native_method, 'native_method>(
        env: &mut Env<'unowned_env_local>,
        _: &mut (),
        payload: Box<dyn std::any::Any + Send + 'static>,
    ) -> jni::errors::Result<T> {
        let message = panic_message(payload.as_ref());
        // Dropping a payload may itself panic; leak it rather than risk that here.
        std::mem::forget(payload);
        if env.exception_check() {
            env.exception_clear();
        }
        throw(env, KIND_PANIC, &format!("panic in the native library: {message}"))?;
        Ok(T::default())
    }
}

/// Runs `f` as a native method body: panics caught, failures thrown as `NativeStorageException`.
fn entry<'l, T: Default + 'l>(env: &mut EnvUnowned<'l>, f: impl FnOnce(&mut Env<'l>) -> Outcome<T>) -> T {
    env.with_env(f).resolve::<ThrowToJava>()
}

fn string(env: &Env<'_>, s: &JString<'_>, what: &str) -> Outcome<String> {
    if s.is_null() {
        return Err(Error::invalid(format!("{what} is null")).into());
    }
    Ok(s.try_to_string(env)?)
}

fn bytes(env: &Env<'_>, a: &JByteArray<'_>, what: &str) -> Outcome<Vec<u8>> {
    if a.is_null() {
        return Err(Error::invalid(format!("{what} is null")).into());
    }
    Ok(env.convert_byte_array(a)?)
}

fn metadata(env: &Env<'_>, a: &JByteArray<'_>) -> Outcome<RemoteLogSegmentMetadata> {
    Ok(wire::decode_metadata(&bytes(env, a, "segment metadata")?)?)
}

/// A Java `String[]` of `items`, each made in a local frame of its own (a long array holds no more local
/// references than one at a time).
fn string_array<'l, 'a>(
    env: &mut Env<'l>,
    items: impl ExactSizeIterator<Item = &'a str>,
) -> Outcome<JObjectArray<'l, JString<'l>>> {
    let array = JObjectArray::<JString>::new(env, items.len(), JString::default())?;
    for (i, item) in items.enumerate() {
        env.with_local_frame(2, |env| -> Outcome<()> {
            let s = env.new_string(item)?;
            Ok(array.set_element(env, i, &s)?)
        })?;
    }
    Ok(array)
}

/// A count as a Java `long`: one above `Long.MAX_VALUE` reads as `Long.MAX_VALUE`.
fn saturating_jlong(v: u64) -> jlong {
    jlong::try_from(v).unwrap_or(jlong::MAX)
}

fn to_bool(b: bool) -> jboolean {
    b
}

fn with_stream<T>(handle: jlong, f: impl FnOnce(&mut SegmentReader) -> Result<T>) -> Result<T> {
    let stream = STREAMS.get(handle)?;
    let mut s = stream.lock().map_err(|_| {
        Error::new(
            ErrorKind::Storage,
            format!("stream handle {handle} is unusable: a panic interrupted an earlier call on it"),
        )
    })?;
    f(&mut s)
}

fn as_jbytes(b: &[u8]) -> &[i8] {
    // SAFETY: u8 and i8 have the same size and alignment, and every bit pattern is valid for both.
    unsafe { std::slice::from_raw_parts(b.as_ptr().cast::<i8>(), b.len()) }
}

fn as_bytes_mut(b: &mut [i8]) -> &mut [u8] {
    // SAFETY: u8 and i8 have the same size and alignment, and every bit pattern is valid for both.
    unsafe { std::slice::from_raw_parts_mut(b.as_mut_ptr().cast::<u8>(), b.len()) }
}

/// The most one `read` of a local object file puts straight into a Java array (the array is held, and the
/// garbage collector waits, for that long).
const LOCAL_READ_BYTES: usize = 2 << 20;

fn elapsed_ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

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

/// `static native long fetchSegment(long store, byte[] metadata, int start, int end)`: opens a read of the
/// segment's bytes `start..=end` (`end < 0`: to the end of the segment). Returns a stream handle that Java
/// must pass to `closeStream`.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_rsm_kafka_NativeBridge_fetchSegment<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    store: jlong,
    md: JByteArray<'l>,
    start: jint,
    end: jint,
) -> jlong {
    entry(&mut env, |env| {
        let s = STORES.get(store)?;
        let md = metadata(env, &md)?;
        let t = Instant::now();
        let reader = s.fetch(&md, start, (end >= 0).then_some(end))?;
        let handle = STREAMS.insert(Mutex::new(reader));
        tracing::debug!(target: "rsm_jni",
            "serving segment {} from position {start}{} (stream {handle}, opened in {:.1} ms)",
            md.remote_log_segment_id,
            if end >= 0 { format!(" to {end}") } else { String::new() },
            elapsed_ms(t));
        Ok(handle)
    })
}

/// `static native long fetchIndex(long store, byte[] metadata, int indexType)`: the index of the given
/// `RemoteStorageManager.IndexType` ordinal as a stream handle (Java must close it). A missing index throws
/// kind NOT_FOUND.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_rsm_kafka_NativeBridge_fetchIndex<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    store: jlong,
    md: JByteArray<'l>,
    index_type: jint,
) -> jlong {
    entry(&mut env, |env| {
        let s = STORES.get(store)?;
        let md = metadata(env, &md)?;
        let kind = usize::try_from(index_type)
            .ok()
            .and_then(|i| IndexType::ALL.get(i).copied())
            .ok_or_else(|| Error::invalid(format!("unknown index type ordinal {index_type}")))?;
        let b = s.fetch_index(&md, kind)?;
        tracing::debug!(target: "rsm_jni", "serving {kind} index of segment {} ({} bytes)", md.remote_log_segment_id, b.len());
        Ok(STREAMS.insert(Mutex::new(SegmentReader::bytes(b))))
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

/// `static native int read(long stream, byte[] buf, int off, int len)`: copies at most `len` bytes into
/// `buf[off..]`, as many as the stream has ready (at least 1 unless `len` is 0); `-1` at the end. Waits for
/// the store only when nothing is buffered.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_rsm_kafka_NativeBridge_read<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    stream: jlong,
    buf: JByteArray<'l>,
    off: jint,
    len: jint,
) -> jint {
    entry(&mut env, |env| {
        if buf.is_null() {
            return Err(Error::invalid("read buffer is null").into());
        }
        let size = buf.len(env)?;
        if off < 0 || len < 0 || off as usize + len as usize > size {
            return Err(Error::invalid(format!("read of {len} bytes at {off} into an array of {size}")).into());
        }
        if len == 0 {
            // Still checks the handle.
            return with_stream(stream, |_| Ok(0)).map_err(Failure::from);
        }
        // A read from a local object file goes straight into the Java array, held (GC paused) for one read
        // of at most LOCAL_READ_BYTES from the page cache and its checks, with no JNI call meanwhile: each
        // byte is copied once. Other reads (a store's stream, which may wait on the network) copy the piece
        // they hold, outside any critical region.
        let local = with_stream(stream, |s| {
            if !s.is_local() {
                return Ok(None);
            }
            let want = (len as usize).min(LOCAL_READ_BYTES);
            // SAFETY: no JNI call is made while `elements` is held (the read is a pread and CRC checks); the
            // array is the caller's, written only in `off..off + want`, inside its bounds (checked above).
            let mut elements = unsafe { buf.get_elements_critical(env, ReleaseMode::CopyBack) }
                .map_err(|e| Error::new(ErrorKind::Storage, format!("the Java read buffer: {e}")))?;
            let n = s.read_into(as_bytes_mut(&mut elements[off as usize..off as usize + want]))?;
            Ok(Some(n))
        })?;
        let n = match local {
            Some(n) => n,
            None => {
                let chunk = with_stream(stream, |s| s.next_chunk(len as usize))?;
                if !chunk.is_empty() {
                    buf.set_region(env, off, as_jbytes(&chunk))?;
                }
                chunk.len()
            }
        };
        Ok(if n == 0 { -1 } else { n as jint })
    })
}

/// `static native long skip(long stream, long n)`: discards up to `n` bytes without copying them to Java;
/// returns how many (fewer only at the end).
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_rsm_kafka_NativeBridge_skip<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    stream: jlong,
    n: jlong,
) -> jlong {
    entry(&mut env, |_| Ok(with_stream(stream, |s| s.skip(n.max(0) as u64))? as jlong))
}

/// `static native int available(long stream)`: bytes readable without waiting.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_rsm_kafka_NativeBridge_available<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    stream: jlong,
) -> jint {
    entry(&mut env, |_| Ok(with_stream(stream, |s| Ok(s.buffered().min(i32::MAX as usize) as jint))?))
}

/// `static native boolean closeStream(long stream)`: stops the read and frees its buffers now; `false` if
/// the handle was not open (a second close is harmless).
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_rsm_kafka_NativeBridge_closeStream<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    stream: jlong,
) -> jboolean {
    entry(&mut env, |_| Ok(to_bool(STREAMS.remove(stream))))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_handles_fail_cleanly_after_close_and_after_a_panic() {
        let h = STREAMS.insert(Mutex::new(SegmentReader::bytes(Bytes::from_static(b"abc"))));
        let r = std::panic::catch_unwind(|| with_stream(h, |_| -> Result<()> { panic!("boom") }));
        assert!(r.is_err());
        let e = with_stream(h, |s| s.next_chunk(1)).unwrap_err();
        assert!(e.to_string().contains("a panic interrupted an earlier call"), "{e}");
        assert!(STREAMS.remove(h));
        let e = with_stream(h, |s| s.next_chunk(1)).unwrap_err();
        assert!(e.to_string().contains("is not open"), "{e}");
        assert!(!STREAMS.remove(h));
    }
}
