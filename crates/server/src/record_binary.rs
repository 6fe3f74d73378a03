//! Row values of composite types in PostgreSQL's binary format (`record_send` and
//! `record_recv`): the field count, then for each field its type OID, its length (-1 for
//! NULL) and its value in that type's binary format. The field types come from the type's
//! definition in the session's catalog.

use crate::types::{RECORD, TEXT, cannot, declared_oid, decode_binary, encode_binary, oid_of_value};
use tern_exec::catalog::Catalog;
use tern_exec::types::composite::{CompositeField, Record};
use tern_exec::value::Affinity;
use tern_sql::{Error, Value};

/// The OID a composite type's field is sent with.
fn field_oid(field: &CompositeField) -> u32 {
    match field.affinity {
        Affinity::Enum(id) => id.get().oid,
        Affinity::Composite(id) => id.get().oid,
        _ => declared_oid(&field.declared_type),
    }
}

/// A row value in PostgreSQL's binary form (`record_send`): the field count, then each field's
/// type OID, length (-1 for NULL) and binary value.
pub fn send(value: &Value, catalog: &Catalog) -> Result<Vec<u8>, Error> {
    let Value::Record(record) = value else { return Err(cannot(value, RECORD)) };
    let definition = catalog.composite_of_oid(record.type_oid);
    let mut out = Vec::new();
    out.extend_from_slice(&(record.fields.len() as i32).to_be_bytes());
    for (position, field) in record.fields.iter().enumerate() {
        let oid = match definition.as_ref().and_then(|definition| definition.fields.get(position)) {
            Some(declared) => field_oid(declared),
            None => oid_of_value(field).unwrap_or(TEXT),
        };
        out.extend_from_slice(&oid.to_be_bytes());
        put_length_prefixed(&mut out, encode_binary(field, oid, catalog)?);
    }
    Ok(out)
}

/// A value inside a binary row or array: its length, then its bytes; -1 for NULL.
pub(crate) fn put_length_prefixed(out: &mut Vec<u8>, encoded: Option<Vec<u8>>) {
    match encoded {
        None => out.extend_from_slice(&(-1i32).to_be_bytes()),
        Some(bytes) => {
            out.extend_from_slice(&(bytes.len() as i32).to_be_bytes());
            out.extend_from_slice(&bytes);
        }
    }
}

/// A parameter of composite type `oid` in binary form (`record_recv`), each field decoded as
/// its declared type and the row then converted as a cast to the type would.
pub fn recv(bytes: &[u8], oid: u32, catalog: &Catalog) -> Result<Value, Error> {
    let wrong = || Error::new("22P03", format!("incorrect binary data format for a row of type OID {oid}"));
    let definition = catalog.composite_of_oid(oid).ok_or_else(wrong)?;
    let mut rest = bytes;
    let mut take = |count: usize| -> Result<&[u8], Error> {
        if rest.len() < count {
            return Err(wrong());
        }
        let (taken, remaining) = rest.split_at(count);
        rest = remaining;
        Ok(taken)
    };
    let read_i32 = |taken: &[u8]| i32::from_be_bytes(taken.try_into().expect("4 bytes"));
    let count = read_i32(take(4)?);
    if usize::try_from(count).ok() != Some(definition.fields.len()) {
        return Err(Error::new(
            "22P03",
            format!("wrong number of columns: {count}, expected {}", definition.fields.len()),
        ));
    }
    let mut fields = Vec::with_capacity(definition.fields.len());
    for field in &definition.fields {
        let _sent_oid = take(4)?;
        let length = read_i32(take(4)?);
        fields.push(match usize::try_from(length) {
            Err(_) => Value::Null,
            Ok(length) => decode_binary(take(length)?, field_oid(field), catalog)?,
        });
    }
    if !rest.is_empty() {
        return Err(wrong());
    }
    definition.cast(&Value::Record(std::sync::Arc::new(Record::anonymous(fields))))
}
