//! `send`, `publish`, `httpRespond` and `httpWrite`, the calls a handler
//! makes per message or request, written against raw Node-API instead of
//! through `#[napi]`.
//!
//! napi-rs 3 wraps every generated function with arguments in a "native
//! borrow scope": an `Arc<Mutex<..>>` allocated and freed per call plus
//! thread-local bookkeeping, which guards `&self` receivers and borrowed
//! arguments against re-entrant JavaScript. These two functions take only
//! plain numbers, a boolean, a string and a typed array, call no JavaScript,
//! and copy the bytes before returning, so they need none of it; in the
//! echo profile the scope cost about 5% of the server's CPU.
//!
//! The generated declarations (`index.d.ts`) do not know these functions;
//! `packages/server/src/native.ts` declares them, and the addon tests call
//! them through the public API.

use std::ffi::{c_char, c_void};
use std::ptr;

use napi::sys;

use switchboard_runtime::remote::Delivery;
use switchboard_runtime::BridgeError;

use crate::hot::with_server;
use crate::id_from_js;

/// What a failed argument conversion throws.
const BAD_ARGUMENTS: &[u8] = b"ERR_INVALID_OPTION: bad arguments to a native call\0";

/// Raise a TypeError and return `undefined` (N-API ignores the value when an
/// exception is pending).
///
/// SAFETY: `env` is the environment of the current callback.
unsafe fn throw_bad_arguments(env: sys::napi_env) -> sys::napi_value {
    // SAFETY: the message is NUL-terminated and `env` is live.
    unsafe {
        sys::napi_throw_type_error(env, ptr::null(), BAD_ARGUMENTS.as_ptr().cast::<c_char>());
    }
    ptr::null_mut()
}

/// The callback's first `N` arguments, or `None` if fewer were passed.
///
/// SAFETY: `env` and `info` are those of the current callback.
unsafe fn arguments<const N: usize>(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> Option<[sys::napi_value; N]> {
    let mut argc = N;
    let mut argv = [ptr::null_mut(); N];
    // SAFETY: `argv` has room for `argc` values, as N-API requires.
    let status = unsafe {
        sys::napi_get_cb_info(
            env,
            info,
            &mut argc,
            argv.as_mut_ptr(),
            ptr::null_mut(),
            ptr::null_mut(),
        )
    };
    (status == sys::Status::napi_ok && argc >= N).then_some(argv)
}

/// SAFETY (all the readers below): `env` is the current callback's and
/// `value` one of its arguments, alive for the whole callback.
unsafe fn u32_of(env: sys::napi_env, value: sys::napi_value) -> Option<u32> {
    let mut out = 0u32;
    // SAFETY: see above; `out` is a valid destination.
    (unsafe { sys::napi_get_value_uint32(env, value, &mut out) } == sys::Status::napi_ok)
        .then_some(out)
}

unsafe fn i64_of(env: sys::napi_env, value: sys::napi_value) -> Option<i64> {
    let mut out = 0i64;
    // SAFETY: see above.
    (unsafe { sys::napi_get_value_int64(env, value, &mut out) } == sys::Status::napi_ok)
        .then_some(out)
}

unsafe fn bool_of(env: sys::napi_env, value: sys::napi_value) -> Option<bool> {
    let mut out = false;
    // SAFETY: see above.
    (unsafe { sys::napi_get_value_bool(env, value, &mut out) } == sys::Status::napi_ok)
        .then_some(out)
}

/// The bytes of a typed array (a `Buffer` or `Uint8Array`).
///
/// SAFETY: as above. The slice borrows the array's backing store, which
/// stays attached and unmoved while this callback runs: nothing here calls
/// JavaScript or allocates on the JS heap before the bytes are copied into
/// the connection's queue.
unsafe fn bytes_of<'a>(env: sys::napi_env, value: sys::napi_value) -> Option<&'a [u8]> {
    let mut kind = 0;
    let mut length = 0usize;
    let mut data: *mut c_void = ptr::null_mut();
    // SAFETY: see above; every out-pointer is valid or null where allowed.
    let status = unsafe {
        sys::napi_get_typedarray_info(
            env,
            value,
            &mut kind,
            &mut length,
            &mut data,
            ptr::null_mut(),
            ptr::null_mut(),
        )
    };
    if status != sys::Status::napi_ok || kind != sys::TypedarrayType::uint8_array {
        return None;
    }
    if length == 0 || data.is_null() {
        return Some(&[]);
    }
    // SAFETY: N-API reports `data` (already offset to the view's start) and
    // `length` bytes of a live Uint8Array.
    Some(unsafe { std::slice::from_raw_parts(data.cast::<u8>(), length) })
}

/// A string argument, as UTF-8.
///
/// Written straight into `scratch`'s spare capacity first: a string that
/// fits (every short body and header block) costs one N-API call instead
/// of two (the length query walks the whole string too). V8 writes whole
/// characters only, so a write that stopped more than 3 bytes short of
/// the room it had took the whole string; otherwise the string may have
/// been cut, and it is written again at its measured length.
///
/// SAFETY: as above.
unsafe fn string_of(
    env: sys::napi_env,
    value: sys::napi_value,
    scratch: &mut Vec<u8>,
) -> Option<()> {
    scratch.clear();
    if scratch.capacity() < MIN_SCRATCH_BYTES {
        scratch.reserve(MIN_SCRATCH_BYTES);
    }
    let room = scratch.capacity();
    let mut written = 0usize;
    // SAFETY: `scratch` owns `room` writable bytes; N-API writes at most
    // `room - 1` of them and a NUL (initialising what it writes).
    let status = unsafe {
        sys::napi_get_value_string_utf8(
            env,
            value,
            scratch.as_mut_ptr().cast::<c_char>(),
            room,
            &mut written,
        )
    };
    if status != sys::Status::napi_ok {
        return None;
    }
    // The largest character takes 4 bytes: with more room left than
    // that, nothing was cut.
    if room - 1 - written > 4 {
        // SAFETY: N-API initialised the first `written` bytes (and
        // `written < room`, the capacity).
        unsafe { scratch.set_len(written) };
        return Some(());
    }
    let mut length = 0usize;
    // SAFETY: a null buffer asks for the length only.
    if unsafe { sys::napi_get_value_string_utf8(env, value, ptr::null_mut(), 0, &mut length) }
        != sys::Status::napi_ok
    {
        return None;
    }
    scratch.resize(length + 1, 0);
    // SAFETY: `scratch` has room for the string and its terminating NUL.
    let status = unsafe {
        sys::napi_get_value_string_utf8(
            env,
            value,
            scratch.as_mut_ptr().cast::<c_char>(),
            length + 1,
            &mut written,
        )
    };
    scratch.truncate(written);
    (status == sys::Status::napi_ok).then_some(())
}

/// The room `string_of` writes a string into before it measures one:
/// larger strings are rare in the calls that take strings (response
/// bodies are mostly short, large ones come as bytes).
const MIN_SCRATCH_BYTES: usize = 16 * 1024;

unsafe fn signed(env: sys::napi_env, value: i32) -> sys::napi_value {
    let mut out = ptr::null_mut();
    // SAFETY: `env` is live; `out` is a valid destination.
    unsafe { sys::napi_create_int32(env, value, &mut out) };
    out
}

unsafe fn number(env: sys::napi_env, value: u32) -> sys::napi_value {
    let mut out = ptr::null_mut();
    // SAFETY: `env` is live; `out` is a valid destination.
    unsafe { sys::napi_create_uint32(env, value, &mut out) };
    out
}

/// `send(server, connection, data, binary)`: 0 sent, 1 buffered, 2 dropped,
/// 3 closed (also when the server is gone), 4 handed to the broker for the
/// connection's node (`remote.rs`); -1 and -2 when the broker refused it
/// (as `publish`).
unsafe extern "C" fn send(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    // SAFETY: N-API calls us with the callback's own `env` and `info`.
    unsafe {
        let Some([server, connection, data, binary]) = arguments::<4>(env, info) else {
            return throw_bad_arguments(env);
        };
        let (Some(server), Some(connection), Some(data), Some(binary)) = (
            u32_of(env, server),
            i64_of(env, connection),
            bytes_of(env, data),
            bool_of(env, binary),
        ) else {
            return throw_bad_arguments(env);
        };
        let status = with_server(server, |s| {
            match s.send_anywhere(id_from_js(connection), data, binary) {
                Delivery::Local(status) => status as i32,
                Delivery::Forwarded => 4,
                Delivery::Refused(BridgeError::Unavailable) => -1,
                Delivery::Refused(BridgeError::Backlog) => -2,
            }
        });
        signed(env, status.unwrap_or(3))
    }
}

/// `publish(server, channel, data, binary, exclude)`: the number of
/// recipients; with a broker that refused the message, -1 (down) or -2
/// (backlog), which TypeScript turns into `ERR_BROKER_UNAVAILABLE` and
/// `ERR_BROKER_BACKLOG` (a number keeps the hot path free of an error
/// object; the refusal is still never silent).
unsafe extern "C" fn publish(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    // SAFETY: N-API calls us with the callback's own `env` and `info`.
    unsafe {
        let Some([server, channel, data, binary, exclude]) = arguments::<5>(env, info) else {
            return throw_bad_arguments(env);
        };
        let mut name = Vec::new();
        let (Some(server), Some(()), Some(data), Some(binary)) = (
            u32_of(env, server),
            string_of(env, channel, &mut name),
            bytes_of(env, data),
            bool_of(env, binary),
        ) else {
            return throw_bad_arguments(env);
        };
        // `exclude` is a connection id, or null/undefined for nobody.
        let exclude = i64_of(env, exclude).map(id_from_js);
        let Ok(channel) = std::str::from_utf8(&name) else {
            return throw_bad_arguments(env);
        };
        let recipients = with_server(server, |s| {
            match s.publish(channel, data, binary, exclude) {
                Ok(count) => i32::try_from(count).unwrap_or(i32::MAX),
                Err(BridgeError::Unavailable) => -1,
                Err(BridgeError::Backlog) => -2,
            }
        });
        signed(env, recipients.unwrap_or(0))
    }
}

thread_local! {
    /// A response's header lines and a string body, converted to UTF-8:
    /// one buffer each per thread, reused across calls.
    static HEADERS: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    static TEXT: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Bytes as JavaScript passes them: a typed array's as they are, or a
/// string as UTF-8 in `scratch`.
///
/// SAFETY: as `bytes_of`.
unsafe fn body_of(
    env: sys::napi_env,
    value: sys::napi_value,
    scratch: &mut Vec<u8>,
) -> Option<&[u8]> {
    // SAFETY: as above.
    unsafe {
        if let Some(bytes) = bytes_of(env, value) {
            return Some(bytes);
        }
        string_of(env, value, scratch)?;
    }
    Some(scratch.as_slice())
}

/// `httpRespond(server, connection, status, headers, body, flags, length,
/// started)`: queue a response (`switchboard_runtime::http::respond`);
/// `headers` is `Name: value\r\n` lines and `body` the body, each a string
/// or bytes; `flags` carry the route (`RESPOND_ROUTE_SHIFT`) and `started`
/// is the request record's. Returns the send status (3 when the connection
/// is gone).
unsafe extern "C" fn http_respond(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> sys::napi_value {
    // SAFETY: N-API calls us with the callback's own `env` and `info`.
    unsafe {
        let Some([server, connection, status, headers, body, flags, length, started]) =
            arguments::<8>(env, info)
        else {
            return throw_bad_arguments(env);
        };
        let outcome = HEADERS.with(|head| {
            TEXT.with(|text| {
                let (mut head, mut text) = (head.borrow_mut(), text.borrow_mut());
                let (Some(server), Some(connection), Some(status), Some(flags)) = (
                    u32_of(env, server),
                    i64_of(env, connection),
                    u32_of(env, status),
                    u32_of(env, flags),
                ) else {
                    return None;
                };
                let headers = body_of(env, headers, &mut head)?;
                let body = body_of(env, body, &mut text)?;
                let length = i64_of(env, length).unwrap_or(0).max(0) as u64;
                // Only a counted response (a route in the flags) carries
                // its start: one N-API call less for the others.
                let counted = flags >> switchboard_runtime::http::RESPOND_ROUTE_SHIFT != 0;
                let started = match counted {
                    true => i64_of(env, started).unwrap_or(0).max(0) as u64,
                    false => 0,
                };
                let parts = switchboard_runtime::http::ResponseParts {
                    status: u16::try_from(status).ok()?,
                    headers,
                    body,
                    flags,
                    length,
                    started,
                };
                Some(with_server(server, |s| {
                    s.http_respond(id_from_js(connection), &parts) as u32
                }))
            })
        });
        match outcome {
            Some(status) => number(env, status.unwrap_or(3)),
            None => throw_bad_arguments(env),
        }
    }
}

/// `httpWrite(server, connection, data, flags, status, started)`: the next
/// piece of a streamed response (`switchboard_runtime::http::respond::write`;
/// `status` and `started` count the response when the piece ends it).
unsafe extern "C" fn http_write(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> sys::napi_value {
    // SAFETY: N-API calls us with the callback's own `env` and `info`.
    unsafe {
        let Some([server, connection, data, flags, status, started]) = arguments::<6>(env, info)
        else {
            return throw_bad_arguments(env);
        };
        let outcome = TEXT.with(|text| {
            let mut text = text.borrow_mut();
            let (Some(server), Some(connection), Some(flags)) = (
                u32_of(env, server),
                i64_of(env, connection),
                u32_of(env, flags),
            ) else {
                return None;
            };
            let data = body_of(env, data, &mut text)?;
            let status = u32_of(env, status).and_then(|s| u16::try_from(s).ok());
            let started = i64_of(env, started).unwrap_or(0).max(0) as u64;
            Some(with_server(server, |s| {
                let ending = (status.unwrap_or(0), started);
                s.http_write(id_from_js(connection), data, flags, ending) as u32
            }))
        });
        match outcome {
            Some(status) => number(env, status.unwrap_or(3)),
            None => throw_bad_arguments(env),
        }
    }
}

/// Add the raw functions to the module's exports.
///
/// SAFETY: `env` and `exports` are the module initialiser's.
pub unsafe fn register(env: sys::napi_env, exports: sys::napi_value) -> napi::Result<()> {
    let functions: [(&[u8], sys::napi_callback); 4] = [
        (b"send\0", Some(send)),
        (b"publish\0", Some(publish)),
        (b"httpRespond\0", Some(http_respond)),
        (b"httpWrite\0", Some(http_write)),
    ];
    for (name, callback) in functions {
        let mut function = ptr::null_mut();
        // SAFETY: `name` is NUL-terminated (length -1 = up to the NUL); the
        // callbacks have N-API's callback signature and need no data.
        let created = unsafe {
            sys::napi_create_function(
                env,
                name.as_ptr().cast::<c_char>(),
                -1,
                callback,
                ptr::null_mut(),
                &mut function,
            )
        };
        // SAFETY: as above; `exports` is the module's exports object.
        let set = unsafe {
            sys::napi_set_named_property(env, exports, name.as_ptr().cast::<c_char>(), function)
        };
        if created != sys::Status::napi_ok || set != sys::Status::napi_ok {
            return Err(napi::Error::from_reason(
                "cannot register the native send/publish/http functions",
            ));
        }
    }
    Ok(())
}
