//! The PostgreSQL frontend/backend protocol, version 3: reading startup packets and messages,
//! and building backend messages. Every length is checked against the message and against
//! the configured maximum; malformed input is a [`ProtocolError`], never a panic.

use std::io::{Read, Write};

/// One column of a RowDescription.
pub struct Field {
    pub name: String,
    /// The OID of the table the column comes from, and its column number (0 and 0: none).
    pub table: u32,
    pub attnum: i16,
    pub oid: u32,
    pub size: i16,
    pub format: i16,
}

/// Startup packet codes.
const PROTOCOL_3: i32 = 196_608;
const SSL_REQUEST: i32 = 80_877_103;
const GSSENC_REQUEST: i32 = 80_877_104;
const CANCEL_REQUEST: i32 = 80_877_102;

/// Largest startup packet (PostgreSQL's MAX_STARTUP_PACKET_LENGTH).
const MAX_STARTUP_PACKET: usize = 10_000;

#[derive(Debug, thiserror::Error)]
pub enum ProtocolError {
    #[error("connection closed")]
    Closed,
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
    #[error("invalid message: {0}")]
    Invalid(String),
    #[error("message of {len} bytes exceeds the limit of {limit} bytes")]
    TooLarge { len: usize, limit: usize },
}

impl ProtocolError {
    pub fn invalid(message: impl Into<String>) -> ProtocolError {
        ProtocolError::Invalid(message.into())
    }

    /// The SQLSTATE a client is told (08P01 protocol violation, 54000 too large).
    pub fn sqlstate(&self) -> &'static str {
        match self {
            ProtocolError::TooLarge { .. } => "54000",
            _ => "08P01",
        }
    }
}

/// The first packet of a connection.
#[derive(Debug)]
pub enum Startup {
    /// The client asks for TLS.
    Ssl,
    /// The client asks for GSSAPI encryption (always refused).
    GssEnc,
    Cancel {
        pid: i32,
        secret: i32,
    },
    Start {
        params: Vec<(String, String)>,
    },
}

pub fn read_startup(stream: &mut impl Read) -> Result<Startup, ProtocolError> {
    let len = read_i32(stream)?;
    if !(8..=MAX_STARTUP_PACKET as i32).contains(&len) {
        return Err(ProtocolError::invalid(format!("startup packet length {len}")));
    }
    let mut body = vec![0u8; len as usize - 4];
    stream.read_exact(&mut body)?;
    let mut reader = Reader::new(&body);
    let code = reader.i32()?;
    match code {
        SSL_REQUEST => Ok(Startup::Ssl),
        GSSENC_REQUEST => Ok(Startup::GssEnc),
        CANCEL_REQUEST => Ok(Startup::Cancel { pid: reader.i32()?, secret: reader.i32()? }),
        PROTOCOL_3 => {
            let mut params = Vec::new();
            loop {
                let name = reader.cstr()?;
                if name.is_empty() {
                    break;
                }
                params.push((name, reader.cstr()?));
            }
            Ok(Startup::Start { params })
        }
        other => Err(ProtocolError::invalid(format!(
            "unsupported frontend protocol {}.{}: server supports 3.0",
            other >> 16,
            other & 0xffff
        ))),
    }
}

/// A frontend message: its type byte and body.
#[derive(Debug)]
pub struct Message {
    pub tag: u8,
    pub body: Vec<u8>,
}

/// Reads one message whose type byte `tag` was read already.
pub fn read_message_after(stream: &mut impl Read, tag: u8, limit: usize) -> Result<Message, ProtocolError> {
    let len = read_i32(stream)?;
    if len < 4 {
        return Err(ProtocolError::invalid(format!("message length {len}")));
    }
    let len = len as usize - 4;
    if len > limit {
        return Err(ProtocolError::TooLarge { len, limit });
    }
    let mut body = vec![0u8; len];
    stream.read_exact(&mut body).map_err(eof_is_closed)?;
    Ok(Message { tag, body })
}

/// Reads one message; `Closed` at a clean end of stream between messages.
pub fn read_message(stream: &mut impl Read, limit: usize) -> Result<Message, ProtocolError> {
    let mut tag = [0u8; 1];
    if stream.read(&mut tag)? == 0 {
        return Err(ProtocolError::Closed);
    }
    read_message_after(stream, tag[0], limit)
}

fn eof_is_closed(error: std::io::Error) -> ProtocolError {
    if error.kind() == std::io::ErrorKind::UnexpectedEof { ProtocolError::Closed } else { error.into() }
}

fn read_i32(stream: &mut impl Read) -> Result<i32, ProtocolError> {
    let mut bytes = [0u8; 4];
    stream.read_exact(&mut bytes).map_err(eof_is_closed)?;
    Ok(i32::from_be_bytes(bytes))
}

/// Reads the fields of a message body.
pub struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader { bytes, at: 0 }
    }

    pub fn take(&mut self, len: usize) -> Result<&'a [u8], ProtocolError> {
        let end = self.at.checked_add(len).filter(|&end| end <= self.bytes.len());
        let end = end.ok_or_else(|| ProtocolError::invalid("message shorter than its fields"))?;
        let slice = &self.bytes[self.at..end];
        self.at = end;
        Ok(slice)
    }

    pub fn u8(&mut self) -> Result<u8, ProtocolError> {
        Ok(self.take(1)?[0])
    }

    pub fn i16(&mut self) -> Result<i16, ProtocolError> {
        Ok(i16::from_be_bytes(self.take(2)?.try_into().expect("two bytes")))
    }

    pub fn i32(&mut self) -> Result<i32, ProtocolError> {
        Ok(i32::from_be_bytes(self.take(4)?.try_into().expect("four bytes")))
    }

    /// A count (of parameters, formats, ...): never negative.
    pub fn count16(&mut self) -> Result<usize, ProtocolError> {
        let count = self.i16()?;
        usize::try_from(count).map_err(|_| ProtocolError::invalid(format!("negative count {count}")))
    }

    /// A NUL-terminated UTF-8 string.
    pub fn cstr(&mut self) -> Result<String, ProtocolError> {
        let rest = &self.bytes[self.at..];
        let end =
            rest.iter().position(|&byte| byte == 0).ok_or_else(|| ProtocolError::invalid("unterminated string"))?;
        let text = std::str::from_utf8(&rest[..end]).map_err(|_| ProtocolError::invalid("string is not UTF-8"))?;
        self.at += end + 1;
        Ok(text.to_string())
    }

    /// A length-prefixed value (`None` for length -1, SQL NULL).
    pub fn value(&mut self) -> Result<Option<&'a [u8]>, ProtocolError> {
        let len = self.i32()?;
        if len == -1 {
            return Ok(None);
        }
        let len = usize::try_from(len).map_err(|_| ProtocolError::invalid(format!("value length {len}")))?;
        Ok(Some(self.take(len)?))
    }

    pub fn rest(&mut self) -> &'a [u8] {
        let rest = &self.bytes[self.at..];
        self.at = self.bytes.len();
        rest
    }
}

/// Bytes of rows a long result gathers before they are sent on ([`Out::drain_if_full`]).
const DRAIN_BYTES: usize = 256 << 10;

/// Backend messages being built, to be written in one go; or, with a drain, a long result's
/// rows sent to the client as they are produced.
#[derive(Default)]
pub struct Out {
    pub buf: Vec<u8>,
    /// The client's socket, when the connection has one: what a long result writes to while
    /// its statement runs. Nothing else may hold unsent bytes when it is used (the message
    /// loop sends what it buffers before a statement runs).
    drain: Option<Box<dyn Write + Send>>,
}

impl Out {
    /// Messages to be written, with `drain` for long results.
    pub fn with_drain(drain: Option<Box<dyn Write + Send>>) -> Out {
        Out { buf: Vec::new(), drain }
    }

    /// Sends the messages built so far to the client, if there is a drain and they have
    /// reached [`DRAIN_BYTES`]; an I/O error means the client is gone.
    pub fn drain_if_full(&mut self) -> std::io::Result<()> {
        if self.buf.len() >= DRAIN_BYTES
            && let Some(drain) = &mut self.drain
        {
            drain.write_all(&self.buf)?;
            drain.flush()?;
            self.buf.clear();
        }
        Ok(())
    }

    /// Appends a message: its tag, a length filled in afterwards, and what `body` writes.
    pub fn message(&mut self, tag: u8, body: impl FnOnce(&mut Vec<u8>)) {
        self.buf.push(tag);
        let at = self.buf.len();
        self.buf.extend_from_slice(&[0; 4]);
        body(&mut self.buf);
        let len = (self.buf.len() - at) as i32;
        self.buf[at..at + 4].copy_from_slice(&len.to_be_bytes());
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    pub fn take(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.buf)
    }

    pub fn authentication(&mut self, code: i32, data: &[u8]) {
        self.message(b'R', |b| {
            b.extend_from_slice(&code.to_be_bytes());
            b.extend_from_slice(data);
        });
    }

    pub fn parameter_status(&mut self, name: &str, value: &str) {
        self.message(b'S', |b| {
            cstr(b, name);
            cstr(b, value);
        });
    }

    pub fn backend_key(&mut self, pid: i32, secret: i32) {
        self.message(b'K', |b| {
            b.extend_from_slice(&pid.to_be_bytes());
            b.extend_from_slice(&secret.to_be_bytes());
        });
    }

    /// ReadyForQuery with the transaction status: `I` idle, `T` in a transaction, `E` in a
    /// failed one.
    pub fn ready(&mut self, status: u8) {
        self.message(b'Z', |b| b.push(status));
    }

    pub fn command_complete(&mut self, tag: &str) {
        self.message(b'C', |b| cstr(b, tag));
    }

    pub fn empty_query(&mut self) {
        self.message(b'I', |_| {});
    }

    pub fn parse_complete(&mut self) {
        self.message(b'1', |_| {});
    }

    pub fn bind_complete(&mut self) {
        self.message(b'2', |_| {});
    }

    pub fn close_complete(&mut self) {
        self.message(b'3', |_| {});
    }

    pub fn no_data(&mut self) {
        self.message(b'n', |_| {});
    }

    pub fn portal_suspended(&mut self) {
        self.message(b's', |_| {});
    }

    pub fn parameter_description(&mut self, oids: &[u32]) {
        self.message(b't', |b| {
            b.extend_from_slice(&(oids.len() as i16).to_be_bytes());
            for oid in oids {
                b.extend_from_slice(&oid.to_be_bytes());
            }
        });
    }

    /// RowDescription: each column's name, table OID and column number (0 when it is not a
    /// table's column), type OID, type size and format code.
    pub fn row_description(&mut self, columns: &[Field]) {
        self.message(b'T', |b| {
            b.extend_from_slice(&(columns.len() as i16).to_be_bytes());
            for field in columns {
                cstr(b, &field.name);
                b.extend_from_slice(&field.table.to_be_bytes());
                b.extend_from_slice(&field.attnum.to_be_bytes());
                b.extend_from_slice(&field.oid.to_be_bytes());
                b.extend_from_slice(&field.size.to_be_bytes());
                b.extend_from_slice(&(-1i32).to_be_bytes()); // type modifier
                b.extend_from_slice(&field.format.to_be_bytes());
            }
        });
    }

    /// Starts a DataRow; the caller appends `count` values with [`push_value`].
    pub fn data_row(&mut self, values: &[Option<Vec<u8>>]) {
        self.message(b'D', |b| {
            b.extend_from_slice(&(values.len() as i16).to_be_bytes());
            for value in values {
                match value {
                    None => b.extend_from_slice(&(-1i32).to_be_bytes()),
                    Some(bytes) => {
                        b.extend_from_slice(&(bytes.len() as i32).to_be_bytes());
                        b.extend_from_slice(bytes);
                    }
                }
            }
        });
    }

    /// ErrorResponse (or NoticeResponse with tag `N`).
    pub fn error(&mut self, severity: &str, code: &str, message: &str, position: Option<usize>) {
        self.message(b'E', |b| error_fields(b, severity, code, message, position));
    }

    pub fn notice(&mut self, code: &str, message: &str) {
        self.message(b'N', |b| error_fields(b, "NOTICE", code, message, None));
    }

    /// CopyInResponse (`G`) or CopyOutResponse (`H`): overall format and each column's.
    /// CopyInResponse (`G`) or CopyOutResponse (`H`): text or binary, for `columns` columns.
    pub fn copy_response(&mut self, tag: u8, columns: usize, binary: bool) {
        let format = i16::from(binary);
        self.message(tag, |b| {
            b.push(format as u8);
            b.extend_from_slice(&(columns as i16).to_be_bytes());
            for _ in 0..columns {
                b.extend_from_slice(&format.to_be_bytes());
            }
        });
    }

    pub fn copy_data(&mut self, data: &[u8]) {
        self.message(b'd', |b| b.extend_from_slice(data));
    }

    pub fn copy_done(&mut self) {
        self.message(b'c', |_| {});
    }
}

fn error_fields(b: &mut Vec<u8>, severity: &str, code: &str, message: &str, position: Option<usize>) {
    b.push(b'S');
    cstr(b, severity);
    b.push(b'V');
    cstr(b, severity);
    b.push(b'C');
    cstr(b, code);
    b.push(b'M');
    cstr(b, message);
    if let Some(position) = position {
        b.push(b'P');
        cstr(b, &position.to_string());
    }
    b.push(0);
}

pub fn cstr(b: &mut Vec<u8>, text: &str) {
    // A NUL inside would end the string early on the client: such text is cut there.
    b.extend_from_slice(text.split('\0').next().unwrap_or_default().as_bytes());
    b.push(0);
}
