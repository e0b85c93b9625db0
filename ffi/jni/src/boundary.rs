//! The boundary with the JVM: every entry point runs its body through [`entry`], which catches unwinding and
//! turns an error or a panic into a Java `io.rsm.kafka.NativeStorageException` ([`ThrowToJava`]); and the
//! small conversions of Java arguments and results every entry point shares.

use jni::errors::ErrorPolicy;
use jni::objects::{JByteArray, JClass, JObjectArray, JString, JThrowable, JValue};
use jni::sys::{jboolean, jlong};
use jni::{Env, EnvUnowned, jni_sig};
use rsm_core::{Error, RemoteLogSegmentMetadata};
use rsm_facade::{panic_message, wire};
use std::sync::OnceLock;
use std::time::Instant;

/// The exception kind for a Rust panic caught at the boundary.
pub const KIND_PANIC: i32 = rsm_facade::ResultCode::Panic as i32;
/// The exception kind for a failure of JNI itself (a bad argument type, a missing class).
pub const KIND_JNI: i32 = 101;

pub(crate) static EXCEPTION_CLASS: OnceLock<jni::refs::Global<JClass<'static>>> = OnceLock::new();

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

pub(crate) type Outcome<T> = std::result::Result<T, Failure>;

/// Throws `io.rsm.kafka.NativeStorageException(kind, message)` (or, before `init`, an
/// `IllegalStateException`). The class is the one Java passed to `init`, so it is the plugin class loader's
/// own even when the thread's context class loader is another.
pub(crate) fn throw(env: &mut Env<'_>, kind: i32, message: &str) -> jni::errors::Result<()> {
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
pub(crate) fn entry<'l, T: Default + 'l>(env: &mut EnvUnowned<'l>, f: impl FnOnce(&mut Env<'l>) -> Outcome<T>) -> T {
    env.with_env(f).resolve::<ThrowToJava>()
}

pub(crate) fn string(env: &Env<'_>, s: &JString<'_>, what: &str) -> Outcome<String> {
    if s.is_null() {
        return Err(Error::invalid(format!("{what} is null")).into());
    }
    Ok(s.try_to_string(env)?)
}

pub(crate) fn bytes(env: &Env<'_>, a: &JByteArray<'_>, what: &str) -> Outcome<Vec<u8>> {
    if a.is_null() {
        return Err(Error::invalid(format!("{what} is null")).into());
    }
    Ok(env.convert_byte_array(a)?)
}

pub(crate) fn metadata(env: &Env<'_>, a: &JByteArray<'_>) -> Outcome<RemoteLogSegmentMetadata> {
    Ok(wire::decode_metadata(&bytes(env, a, "segment metadata")?)?)
}

/// A Java `String[]` of `items`, each made in a local frame of its own (a long array holds no more local
/// references than one at a time).
pub(crate) fn string_array<'l, 'a>(
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
pub(crate) fn saturating_jlong(v: u64) -> jlong {
    jlong::try_from(v).unwrap_or(jlong::MAX)
}

pub(crate) fn to_bool(b: bool) -> jboolean {
    b
}

pub(crate) fn as_jbytes(b: &[u8]) -> &[i8] {
    // SAFETY: u8 and i8 have the same size and alignment, and every bit pattern is valid for both.
    unsafe { std::slice::from_raw_parts(b.as_ptr().cast::<i8>(), b.len()) }
}

pub(crate) fn as_bytes_mut(b: &mut [i8]) -> &mut [u8] {
    // SAFETY: u8 and i8 have the same size and alignment, and every bit pattern is valid for both.
    unsafe { std::slice::from_raw_parts_mut(b.as_mut_ptr().cast::<u8>(), b.len()) }
}

pub(crate) fn elapsed_ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}
