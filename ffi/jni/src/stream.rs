//! Fetch streams: the native methods that open a segment's or an index's bytes for Java and read, skip and
//! close them, each stream a handle of [`crate::handles::STREAMS`].

use crate::boundary::{Failure, as_bytes_mut, as_jbytes, elapsed_ms, entry, metadata, to_bool};
use crate::handles::{STORES, STREAMS};
use jni::EnvUnowned;
use jni::objects::{JByteArray, JClass, ReleaseMode};
use jni::sys::{jboolean, jint, jlong};
use rsm_core::{Error, ErrorKind, IndexType, Result};
use rsm_facade::SegmentReader;
use std::sync::Mutex;
use std::time::Instant;

pub(crate) fn with_stream<T>(handle: jlong, f: impl FnOnce(&mut SegmentReader) -> Result<T>) -> Result<T> {
    let stream = STREAMS.get(handle)?;
    let mut s = stream.lock().map_err(|_| {
        Error::new(
            ErrorKind::Storage,
            format!("stream handle {handle} is unusable: a panic interrupted an earlier call on it"),
        )
    })?;
    f(&mut s)
}

/// The most one `read` of a local object file puts straight into a Java array (the array is held, and the
/// garbage collector waits, for that long).
pub(crate) const LOCAL_READ_BYTES: usize = 2 << 20;

/// `static native long fetchSegment(long store, byte[] metadata, long start, long end)`: opens a read of the
/// segment's bytes `start..=end` (`end < 0`: to the end of the segment). Returns a stream handle that Java
/// must pass to `closeStream`.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_rsm_kafka_NativeBridge_fetchSegment<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    store: jlong,
    md: JByteArray<'l>,
    start: jlong,
    end: jlong,
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

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use rsm_core::Result;

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
