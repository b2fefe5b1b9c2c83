//! Arbitrary bytes → `Request::decode`, and the error frame built from a
//! decode failure.
//!
//! Invariants:
//! * `Request::decode` never panics, and decodes what plain `serde_json`
//!   decodes, to the same request;
//! * a decoded request has non-blank `config`/`arguments` (blank means `{}`)
//!   and no empty `user`, and survives `encode` → `decode` unchanged;
//! * a decode error is an `invalid-request` error whose message is short and,
//!   as `wire.rs` promises, does not quote the payload;
//! * the error frame of a decode error encodes to JSON that parses back to
//!   the same frame;
//! * every frame encodes byte for byte as `serde_json` writes it, in
//!   `encoded_len` bytes.

use tool_service::wire::{Frame, Request};
use tool_service::ToolError;

/// The longest error message accepted (the runtime's own messages are short).
const MAX_MESSAGE: usize = 1_000 + 64;

/// Payloads at least this long must not appear whole in an error message.
const ECHO_THRESHOLD: usize = 200;

fn check_frame_round_trip(frame: &Frame) {
    let bytes = frame.encode();
    assert_eq!(
        bytes,
        serde_json::to_vec(frame).unwrap(),
        "a frame encodes byte for byte as serde_json writes it"
    );
    assert_eq!(frame.encoded_len(), bytes.len());
    let value: serde_json::Value =
        serde_json::from_slice(&bytes).expect("an encoded frame is valid JSON");
    assert!(value.is_object(), "a frame encodes as a JSON object");
    assert_eq!(value["end_of_stream"], frame.end_of_stream);
    let back = Frame::decode(&bytes).expect("an encoded frame decodes");
    assert_eq!(&back, frame);
}

/// What plain `serde_json` makes of a payload, as the contract reads it: a
/// JSON object whose string fields `config` and `arguments` default to `{}`
/// when absent, null or blank, and whose empty `user` means none.
/// `Request::decode` reads faster, and must agree.
fn reference(data: &[u8]) -> Option<Request> {
    #[derive(serde::Deserialize)]
    struct Fields {
        #[serde(default)]
        user: Option<String>,
        #[serde(default)]
        config: Option<String>,
        #[serde(default)]
        arguments: Option<String>,
    }
    let first = data.iter().find(|byte| !byte.is_ascii_whitespace());
    if first != Some(&b'{') {
        return None;
    }
    let fields: Fields = serde_json::from_slice(data).ok()?;
    let object = |text: Option<String>| {
        text.filter(|text| !text.trim().is_empty())
            .unwrap_or_else(|| String::from("{}"))
    };
    Some(Request {
        user: fields.user.filter(|user| !user.is_empty()),
        config: object(fields.config),
        arguments: object(fields.arguments),
    })
}

/// Checks the invariants above for one input.
pub(super) fn check(data: &[u8]) {
    assert_eq!(
        Request::decode(data).ok(),
        reference(data),
        "Request::decode agrees with serde_json"
    );
    match Request::decode(data) {
        Ok(request) => {
            assert!(!request.config.trim().is_empty(), "{request:?}");
            assert!(!request.arguments.trim().is_empty(), "{request:?}");
            assert_ne!(request.user.as_deref(), Some(""), "{request:?}");
            let encoded = request.encode();
            let value: serde_json::Value =
                serde_json::from_slice(&encoded).expect("an encoded request is valid JSON");
            assert!(value.is_object());
            let again = Request::decode(&encoded).expect("an encoded request decodes");
            assert_eq!(again, request);
            // A decoded request's texts can travel in frames too.
            check_frame_round_trip(&Frame::chunk(request.arguments.clone()));
            check_frame_round_trip(&Frame::last(Ok(request.config)));
        }
        Err(error) => {
            assert_eq!(error.kind(), ToolError::INVALID_REQUEST, "{error:?}");
            let message = error.message();
            assert!(!message.is_empty());
            assert!(
                message.len() <= MAX_MESSAGE,
                "error message of {} bytes: {message:.200}",
                message.len()
            );
            if data.len() >= ECHO_THRESHOLD {
                let payload = String::from_utf8_lossy(data);
                assert!(
                    !message.contains(payload.as_ref()),
                    "the error message quotes the payload"
                );
            }
            let frame = Frame::last(Err(error));
            assert!(frame.end_of_stream);
            check_frame_round_trip(&frame);
        }
    }
}
