//! The frame decoder: bytes in, [`Event`]s out (RFC 6455 §5, RFC 7692 §6).
//!
//! Memory model. The runtime reads every connection into one shared buffer,
//! so an idle connection owns no buffer at all. [`Decoder::feed`] unmasks that
//! buffer in place and hands out slices of it for every complete,
//! unfragmented, uncompressed data frame and every complete control frame
//! (zero copy). Only what cannot be delivered from the caller's buffer is
//! kept, in a record that exists only while something is in progress: a
//! partial header (≤ 14 bytes), a partial control payload (≤ 125 bytes),
//! and the payload of a fragmented, compressed, or partially received data
//! message (a buffer allocated on demand and freed when the message
//! completes). Between frames the decoder holds no heap memory at all.
//!
//! Limits are checked against the frame header before any payload is
//! buffered; the buffer grows with the bytes actually received, never by the
//! length a header merely announces, so a peer cannot make us allocate
//! memory it has not sent.

use super::close::{parse_close_payload, CloseFrame};
use super::deflate::{Decompressor, DeflateError};
use super::error::ProtocolError;
use super::frame::{apply_mask, FrameHeader, OpCode, MAX_CONTROL_PAYLOAD, MAX_HEADER_LEN};
use super::utf8::Utf8Validator;
use super::Role;

#[cfg(test)]
mod tests;

/// Default for [`DecoderConfig::max_payload_length`]: 1 MiB.
///
/// Real-time traffic (chat, presence, RPC, state deltas) is almost always far
/// below 64 KiB; 1 MiB leaves room for occasional snapshots while bounding
/// what one connection can make the server buffer (the same order as
/// Socket.IO's 1 MB `maxHttpBufferSize`). Bulk transfers belong on HTTP.
/// Autobahn's 9.x performance cases need 16 MiB; raise it when running them.
pub const DEFAULT_MAX_PAYLOAD_LENGTH: usize = 1024 * 1024;

/// Limits and role of a [`Decoder`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecoderConfig {
    /// Largest message, in bytes after reassembly and inflation. Checked
    /// from each frame header before its payload is buffered, and while
    /// inflating. Default [`DEFAULT_MAX_PAYLOAD_LENGTH`].
    pub max_payload_length: usize,
    /// Most frames one message may consist of; 0 means unlimited. Default 0:
    /// memory is already bounded by `max_payload_length`, and every frame
    /// costs the sender at least as many bytes as it costs us work, so a
    /// count limit is a policy choice rather than a safety need.
    pub max_fragments: usize,
    /// Which side of the connection we are; decides the masking rule.
    /// Default [`Role::Server`].
    pub role: Role,
}

impl Default for DecoderConfig {
    fn default() -> Self {
        DecoderConfig {
            max_payload_length: DEFAULT_MAX_PAYLOAD_LENGTH,
            max_fragments: 0,
            role: Role::Server,
        }
    }
}

/// One decoded unit, borrowed either from the caller's input or from the
/// decoder's reassembly buffer; valid only during the callback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event<'a> {
    /// A complete text message; the bytes are valid UTF-8.
    Text(&'a [u8]),
    /// A complete binary message.
    Binary(&'a [u8]),
    /// A ping; answer with a pong carrying the same payload.
    Ping(&'a [u8]),
    /// A pong.
    Pong(&'a [u8]),
    /// A valid close frame. The decoder ignores everything after it.
    Close(CloseFrame<'a>),
}

/// The callback's answer: keep decoding, or stop for good.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Keep decoding the rest of the input.
    Continue,
    /// Stop decoding: `feed` returns `Ok(())` at once and every later `feed`
    /// is ignored. Use it when the connection is being closed; `feed` does
    /// not report how many bytes it consumed, so there is no resuming.
    Stop,
}

/// Where the decoder stands; every state but `Open` ignores input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Open,
    /// A close frame was delivered.
    Closed,
    /// The callback returned [`Flow::Stop`].
    Stopped,
    /// A protocol error was returned.
    Failed,
}

/// The frame whose payload is being read.
#[derive(Debug, Clone, Copy)]
struct Frame {
    opcode: OpCode,
    fin: bool,
    mask: Option<[u8; 4]>,
    len: u64,
    /// Payload bytes of this frame already processed.
    done: u64,
}

/// The data message being assembled.
#[derive(Debug, Clone)]
struct Message {
    text: bool,
    compressed: bool,
    /// Frames seen so far, including the current one.
    fragments: usize,
    /// Sum of the payload lengths announced so far (wire bytes).
    announced: u64,
    utf8: Utf8Validator,
}

/// Turns the bytes of one connection into [`Event`]s.
///
/// Between frames (an idle connection) it is a few words with no heap
/// memory: what a frame or message in progress needs lives in a
/// [`Progress`] that exists only while one is cut off at the end of the
/// input.
#[derive(Debug)]
pub struct Decoder {
    config: DecoderConfig,
    state: State,
    decompressor: Option<Box<Decompressor>>,
    progress: Option<Box<Progress>>,
}

/// A frame or message in progress across inputs.
#[derive(Debug, Default)]
struct Progress {
    /// A header cut off at the end of the previous input.
    header: [u8; MAX_HEADER_LEN],
    header_len: usize,
    frame: Option<Frame>,
    message: Option<Message>,
    /// A control payload cut off at the end of the previous input.
    control: Option<ControlPayload>,
    /// Reassembly buffer for data messages; empty with zero capacity between
    /// messages.
    buf: Vec<u8>,
}

/// The bytes of a control frame received so far (at most 125).
#[derive(Debug)]
struct ControlPayload {
    bytes: [u8; MAX_CONTROL_PAYLOAD],
    len: usize,
}

impl Progress {
    /// Nothing in progress: the decoder can drop it.
    fn is_idle(&self) -> bool {
        self.header_len == 0
            && self.frame.is_none()
            && self.message.is_none()
            && self.control.is_none()
            && self.buf.capacity() == 0
    }
}

impl Decoder {
    /// A decoder with the given limits, without compression.
    pub fn new(config: DecoderConfig) -> Self {
        Decoder {
            config,
            state: State::Open,
            decompressor: None,
            progress: None,
        }
    }

    /// Enables permessage-deflate after a successful negotiation: messages
    /// whose first frame has RSV1 set are inflated. Without it RSV1 is a
    /// protocol error.
    pub fn set_decompressor(&mut self, decompressor: Decompressor) {
        self.decompressor = Some(Box::new(decompressor));
    }

    /// The configuration this decoder enforces.
    pub fn config(&self) -> &DecoderConfig {
        &self.config
    }

    /// Heap bytes held for reassembly. Zero whenever no data message is
    /// partially received (compression state, if any, is not counted).
    pub fn buffer_capacity(&self) -> usize {
        self.progress.as_ref().map_or(0, |p| p.buf.capacity())
    }

    /// Whether a frame or message is in progress (the decoder then holds
    /// state on the heap; between frames it holds none).
    pub fn is_idle(&self) -> bool {
        self.progress.is_none()
    }

    /// True once a close frame was delivered, the callback returned
    /// [`Flow::Stop`], or a protocol error was returned; `feed` then ignores
    /// its input.
    pub fn is_finished(&self) -> bool {
        self.state != State::Open
    }

    /// Decodes `input`, which may hold any number of frames or any piece of
    /// one, calling `on_event` for every complete message and control frame.
    ///
    /// `input` is unmasked in place. Events borrow from `input` when possible
    /// and from the decoder's buffer otherwise. Returns the first protocol
    /// violation; the connection must then be failed with the error's close
    /// code, and later calls are ignored.
    pub fn feed<F>(&mut self, input: &mut [u8], mut on_event: F) -> Result<(), ProtocolError>
    where
        F: FnMut(Event<'_>) -> Flow,
    {
        if self.state != State::Open {
            return Ok(());
        }
        // What was in progress, or a fresh (stack) record of it.
        let mut progress = self.progress.take().map_or_else(Progress::default, |p| *p);
        let result = self.run(&mut progress, input, &mut on_event);
        match result {
            Ok(()) if self.state == State::Open => {
                if !progress.is_idle() {
                    self.progress = Some(Box::new(progress));
                }
            }
            Ok(()) => self.release(),
            Err(_) => {
                self.state = State::Failed;
                self.release();
            }
        }
        result
    }

    /// The decoding loop: one header or one payload chunk per iteration.
    fn run<F>(
        &mut self,
        p: &mut Progress,
        input: &mut [u8],
        on_event: &mut F,
    ) -> Result<(), ProtocolError>
    where
        F: FnMut(Event<'_>) -> Flow,
    {
        let mut pos = 0;
        while self.state == State::Open {
            let frame = match p.frame {
                Some(frame) => frame,
                None => match Self::read_header(p, &input[pos..])? {
                    Some((header, used)) => {
                        pos += used;
                        self.start_frame(p, header)?
                    }
                    None => return Ok(()),
                },
            };
            let remaining = frame.len - frame.done;
            let take = remaining.min((input.len() - pos) as u64) as usize;
            if take == 0 && remaining > 0 {
                return Ok(()); // need more bytes
            }
            let chunk = &mut input[pos..pos + take];
            pos += take;
            if let Some(key) = frame.mask {
                apply_mask(chunk, key, (frame.done % 4) as usize);
            }
            let complete = take as u64 == remaining;
            let whole = complete && frame.done == 0;
            p.frame = if complete {
                None
            } else {
                Some(Frame {
                    done: frame.done + take as u64,
                    ..frame
                })
            };
            let flow = if frame.opcode.is_control() {
                self.control_chunk(p, frame.opcode, chunk, whole, complete, on_event)?
            } else {
                self.data_chunk(p, frame.fin, chunk, whole, complete, on_event)?
            };
            if flow == Flow::Stop && self.state == State::Open {
                self.state = State::Stopped;
            }
        }
        Ok(())
    }

    /// Reads a frame header, completing one cut off by the previous input.
    /// `Ok(None)`: all of `input` was kept and more bytes are needed.
    fn read_header(
        p: &mut Progress,
        input: &[u8],
    ) -> Result<Option<(FrameHeader, usize)>, ProtocolError> {
        if p.header_len == 0 {
            if let Some(parsed) = FrameHeader::parse(input)? {
                return Ok(Some(parsed));
            }
            // An incomplete header is shorter than MAX_HEADER_LEN, so it fits.
            p.header[..input.len()].copy_from_slice(input);
            p.header_len = input.len();
            return Ok(None);
        }
        let had = p.header_len;
        let take = input.len().min(MAX_HEADER_LEN - had);
        p.header[had..had + take].copy_from_slice(&input[..take]);
        match FrameHeader::parse(&p.header[..had + take])? {
            Some((header, len)) => {
                p.header_len = 0;
                Ok(Some((header, len - had)))
            }
            None => {
                p.header_len = had + take;
                Ok(None)
            }
        }
    }

    /// Validates a header against the protocol rules and the current state,
    /// and sets up the frame (and, for a first data frame, the message).
    fn start_frame(&mut self, p: &mut Progress, h: FrameHeader) -> Result<Frame, ProtocolError> {
        if h.rsv2 || h.rsv3 {
            return Err(ProtocolError::ReservedBits);
        }
        let opcode = OpCode::from_u8(h.opcode).ok_or(ProtocolError::InvalidOpcode(h.opcode))?;
        match (self.config.role, h.mask.is_some()) {
            (Role::Server, false) => return Err(ProtocolError::UnmaskedFrame),
            (Role::Client, true) => return Err(ProtocolError::MaskedFrame),
            _ => {}
        }
        if opcode.is_control() {
            if h.rsv1 {
                return Err(ProtocolError::ReservedBits);
            }
            if !h.fin {
                return Err(ProtocolError::FragmentedControl);
            }
            if h.payload_len > MAX_CONTROL_PAYLOAD as u64 {
                return Err(ProtocolError::ControlFrameTooBig);
            }
        } else {
            self.start_data_frame(p, opcode, &h)?;
        }
        let frame = Frame {
            opcode,
            fin: h.fin,
            mask: h.mask,
            len: h.payload_len,
            done: 0,
        };
        p.frame = Some(frame);
        Ok(frame)
    }

    fn start_data_frame(
        &mut self,
        p: &mut Progress,
        opcode: OpCode,
        h: &FrameHeader,
    ) -> Result<(), ProtocolError> {
        let message = match (opcode, p.message.as_mut()) {
            (OpCode::Continuation, None) => return Err(ProtocolError::UnexpectedContinuation),
            (OpCode::Continuation, Some(message)) => {
                // RFC 7692 §6.1: RSV1 marks the first frame of a message only.
                if h.rsv1 {
                    return Err(ProtocolError::ReservedBits);
                }
                message.fragments += 1;
                message.announced = message.announced.saturating_add(h.payload_len);
                message
            }
            (_, Some(_)) => return Err(ProtocolError::ExpectedContinuation),
            (_, None) => {
                if h.rsv1 && self.decompressor.is_none() {
                    return Err(ProtocolError::ReservedBits);
                }
                p.message.insert(Message {
                    text: opcode == OpCode::Text,
                    compressed: h.rsv1,
                    fragments: 1,
                    announced: h.payload_len,
                    utf8: Utf8Validator::new(),
                })
            }
        };
        let max_fragments = self.config.max_fragments;
        if max_fragments != 0 && message.fragments > max_fragments {
            return Err(ProtocolError::TooManyFragments);
        }
        // For a compressed message the wire size says nothing about the
        // inflated size; that limit is enforced while inflating. The
        // compressed bytes themselves are streamed into the inflater, never
        // buffered, so they need no limit of their own.
        if !message.compressed && message.announced > self.config.max_payload_length as u64 {
            return Err(ProtocolError::MessageTooBig);
        }
        Ok(())
    }

    /// Handles a piece of a control frame's payload.
    fn control_chunk<F>(
        &mut self,
        p: &mut Progress,
        opcode: OpCode,
        chunk: &[u8],
        whole: bool,
        complete: bool,
        on_event: &mut F,
    ) -> Result<Flow, ProtocolError>
    where
        F: FnMut(Event<'_>) -> Flow,
    {
        if !whole {
            // Bounded by the 125-byte check in start_frame.
            let control = p.control.get_or_insert(ControlPayload {
                bytes: [0; MAX_CONTROL_PAYLOAD],
                len: 0,
            });
            control.bytes[control.len..control.len + chunk.len()].copy_from_slice(chunk);
            control.len += chunk.len();
            if !complete {
                return Ok(Flow::Continue);
            }
        }
        let held = p.control.take();
        let payload = match &held {
            Some(control) if !whole => &control.bytes[..control.len],
            _ => chunk,
        };
        let flow = match opcode {
            OpCode::Ping => on_event(Event::Ping(payload)),
            OpCode::Pong => on_event(Event::Pong(payload)),
            _ => {
                let close = parse_close_payload(payload)?;
                on_event(Event::Close(close));
                self.state = State::Closed;
                Flow::Stop
            }
        };
        Ok(flow)
    }

    /// Handles a piece of a data frame's payload.
    fn data_chunk<F>(
        &mut self,
        p: &mut Progress,
        fin: bool,
        chunk: &[u8],
        whole: bool,
        complete: bool,
        on_event: &mut F,
    ) -> Result<Flow, ProtocolError>
    where
        F: FnMut(Event<'_>) -> Flow,
    {
        let Some(message) = p.message.as_mut() else {
            // start_data_frame always sets the message before its payload.
            return Err(ProtocolError::UnexpectedContinuation);
        };
        let ends_message = complete && fin;

        // Zero copy: the whole message is this one frame, inside `input`.
        if whole && fin && message.fragments == 1 && !message.compressed {
            let text = message.text;
            p.message = None;
            return if text {
                std::str::from_utf8(chunk).map_err(|_| ProtocolError::InvalidUtf8)?;
                Ok(on_event(Event::Text(chunk)))
            } else {
                Ok(on_event(Event::Binary(chunk)))
            };
        }

        if message.compressed {
            let Some(decompressor) = self.decompressor.as_mut() else {
                return Err(ProtocolError::ReservedBits);
            };
            let before = p.buf.len();
            let room = self.config.max_payload_length.saturating_sub(before);
            decompressor
                .decompress(chunk, ends_message, room, &mut p.buf)
                .map_err(|e| match e {
                    DeflateError::TooBig => ProtocolError::MessageTooBig,
                    DeflateError::Corrupt | DeflateError::Compress => ProtocolError::Inflate,
                })?;
            if message.text {
                message
                    .utf8
                    .push(&p.buf[before..])
                    .map_err(|_| ProtocolError::InvalidUtf8)?;
            }
        } else {
            // Validate before copying, so invalid text fails without growing
            // the buffer (and as early as the bytes arrive).
            if message.text {
                message
                    .utf8
                    .push(chunk)
                    .map_err(|_| ProtocolError::InvalidUtf8)?;
            }
            p.buf.extend_from_slice(chunk);
        }

        if !ends_message {
            return Ok(Flow::Continue);
        }
        if message.text {
            message
                .utf8
                .finish()
                .map_err(|_| ProtocolError::InvalidUtf8)?;
        }
        let text = message.text;
        p.message = None;
        let flow = if text {
            on_event(Event::Text(&p.buf))
        } else {
            on_event(Event::Binary(&p.buf))
        };
        // Give the memory back: an idle connection holds no buffer.
        p.buf = Vec::new();
        Ok(flow)
    }

    /// Frees everything once no more input will be processed.
    fn release(&mut self) {
        self.progress = None;
        self.decompressor = None;
    }
}
