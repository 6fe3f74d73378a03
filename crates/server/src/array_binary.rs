//! Arrays in PostgreSQL's binary format (`array_send` and `array_recv`): the number of
//! dimensions, a has-NULLs flag and the element type's OID; for each dimension its length and
//! lower bound; then each element as its length (-1 for NULL) and its value in the element
//! type's binary format. Tern keeps arrays as the text of PostgreSQL's array literal, with
//! one dimension ([`tern_exec::types::array`]); elements go through their type's text form.

use crate::types::{cannot, decode_binary, decode_text, encode_binary, encode_text};
use tern_exec::catalog::Catalog;
use tern_exec::catalog::pgtype::element_of;
use tern_sql::{Error, Value};

/// An array value (its literal text) in binary form, for an array type `oid`.
pub fn send(value: &Value, oid: u32, catalog: &Catalog) -> Result<Vec<u8>, Error> {
    let element_oid = element_of(oid).ok_or_else(|| cannot(value, oid))?;
    let elements = tern_exec::types::array::parse(&value.to_text()).ok_or_else(|| cannot(value, oid))?;
    let mut out = Vec::new();
    let dimensions = i32::from(!elements.is_empty());
    out.extend_from_slice(&dimensions.to_be_bytes());
    out.extend_from_slice(&i32::from(elements.iter().any(Option::is_none)).to_be_bytes());
    out.extend_from_slice(&element_oid.to_be_bytes());
    if elements.is_empty() {
        return Ok(out);
    }
    out.extend_from_slice(&(elements.len() as i32).to_be_bytes());
    out.extend_from_slice(&1i32.to_be_bytes());
    for element in elements {
        let encoded = match element {
            None => None,
            Some(text) => {
                let typed = decode_text(text.as_bytes(), element_oid)?;
                encode_binary(&typed, element_oid, catalog)?
            }
        };
        crate::record_binary::put_length_prefixed(&mut out, encoded);
    }
    Ok(out)
}

/// An array parameter in binary form: its literal text. 22P03 for malformed data, 0A000 for
/// more than one dimension.
pub fn recv(bytes: &[u8], oid: u32, catalog: &Catalog) -> Result<Value, Error> {
    let wrong = || {
        Error::new(
            "22P03",
            format!("incorrect binary data format for type {}", tern_exec::catalog::pgtype::name_of(oid)),
        )
    };
    let mut at = 0usize;
    let int = |bytes: &[u8], at: &mut usize| -> Result<i32, Error> {
        let word = bytes.get(*at..*at + 4).ok_or_else(wrong)?;
        *at += 4;
        Ok(i32::from_be_bytes(word.try_into().expect("4 bytes")))
    };
    let dimensions = int(bytes, &mut at)?;
    let _has_nulls = int(bytes, &mut at)?;
    let element_oid = int(bytes, &mut at)? as u32;
    let length = match dimensions {
        0 => 0,
        1 => {
            let length = int(bytes, &mut at)?;
            let _lower_bound = int(bytes, &mut at)?;
            usize::try_from(length).map_err(|_| wrong())?
        }
        _ => return Err(Error::unsupported("multidimensional arrays")),
    };
    if length > bytes.len() {
        return Err(wrong());
    }
    let mut elements: Vec<Option<String>> = Vec::with_capacity(length);
    for _ in 0..length {
        let size = int(bytes, &mut at)?;
        if size < 0 {
            elements.push(None);
            continue;
        }
        let end = at.checked_add(size as usize).filter(|end| *end <= bytes.len()).ok_or_else(wrong)?;
        let value = decode_binary(&bytes[at..end], element_oid, catalog)?;
        at = end;
        let text = encode_text(&value, element_oid, catalog).map(|text| String::from_utf8_lossy(&text).into_owned());
        elements.push(text);
    }
    if at != bytes.len() {
        return Err(wrong());
    }
    Ok(Value::Text(tern_exec::types::array::format(elements.iter().map(Option::as_deref))))
}
