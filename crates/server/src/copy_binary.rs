//! COPY's binary format (`FORMAT binary`, what pgx's `CopyFrom` and asyncpg's `copy_records`
//! send): the 11-byte signature `PGCOPY\n\377\r\n\0`, a 4-byte flags word and a header
//! extension, then tuples of a 2-byte field count and, per field, a 4-byte length (-1: NULL)
//! and the value in its type's binary form; a field count of -1 ends the data.
//!
//! Malformed data (a wrong signature, OIDs in the data, a length past the data's end, a tuple
//! of the wrong width) is an error naming the tuple, never a panic.

/// The signature every binary COPY stream starts with.
pub const SIGNATURE: &[u8; 11] = b"PGCOPY\n\xff\r\n\0";

/// One tuple's fields (`None`: NULL), in their binary form.
pub type Tuple = Vec<Option<Vec<u8>>>;

/// Cuts binary COPY data into tuples as it arrives (a tuple may span CopyData messages).
#[derive(Default)]
pub struct BinaryReader {
    pending: Vec<u8>,
    header_read: bool,
    ended: bool,
    /// Tuples read so far (for error messages).
    pub tuples: u64,
}

impl BinaryReader {
    /// Adds data and returns the complete tuples in it.
    pub fn feed(&mut self, data: &[u8]) -> Result<Vec<Tuple>, String> {
        if self.ended {
            return Ok(Vec::new());
        }
        self.pending.extend_from_slice(data);
        let mut at = 0;
        if !self.header_read {
            match self.header_length()? {
                Some(length) => {
                    at = length;
                    self.header_read = true;
                }
                None => return Ok(Vec::new()),
            }
        }
        let mut tuples = Vec::new();
        while let Some((tuple, next)) = self.tuple_at(at)? {
            at = next;
            match tuple {
                Some(tuple) => {
                    self.tuples += 1;
                    tuples.push(tuple);
                }
                None => {
                    self.ended = true;
                    break;
                }
            }
        }
        self.pending.drain(..at);
        Ok(tuples)
    }

    /// The data ended: it must have ended with the trailer (or a whole tuple).
    pub fn finish(&self) -> Result<(), String> {
        if !self.header_read {
            return Err("COPY file signature not recognized".into());
        }
        if !self.ended && !self.pending.is_empty() {
            return Err(format!("unexpected end of file after tuple {}", self.tuples));
        }
        Ok(())
    }

    /// The header's length once all of it is here.
    fn header_length(&self) -> Result<Option<usize>, String> {
        let data = &self.pending;
        let check = SIGNATURE.len().min(data.len());
        if data[..check] != SIGNATURE[..check] {
            return Err("COPY file signature not recognized".into());
        }
        if data.len() < 19 {
            return Ok(None);
        }
        let flags = u32::from_be_bytes(data[11..15].try_into().expect("4 bytes"));
        if flags & (1 << 16) != 0 {
            return Err("COPY binary data with OIDs is not supported".into());
        }
        if flags & 0xFFFF_0000 & !(1 << 16) != 0 {
            return Err("unrecognized critical flags in COPY file header".into());
        }
        let extension = u32::from_be_bytes(data[15..19].try_into().expect("4 bytes")) as usize;
        let total = 19usize.checked_add(extension).ok_or("COPY header extension too long")?;
        Ok((data.len() >= total).then_some(total))
    }

    /// The tuple starting at `at` (`None` inside: the trailer) and where the next starts, once
    /// all of it is here.
    fn tuple_at(&self, at: usize) -> Result<Option<(Option<Tuple>, usize)>, String> {
        let data = &self.pending;
        let Some(count) = data.get(at..at + 2) else { return Ok(None) };
        let count = i16::from_be_bytes(count.try_into().expect("2 bytes"));
        if count == -1 {
            return Ok(Some((None, at + 2)));
        }
        if count < 0 {
            return Err(format!("tuple {}: field count {count}", self.tuples + 1));
        }
        let mut next = at + 2;
        let mut fields = Vec::with_capacity(count as usize);
        for _ in 0..count {
            let Some(length) = data.get(next..next + 4) else { return Ok(None) };
            let length = i32::from_be_bytes(length.try_into().expect("4 bytes"));
            next += 4;
            if length == -1 {
                fields.push(None);
                continue;
            }
            if length < 0 {
                return Err(format!("tuple {}: field length {length}", self.tuples + 1));
            }
            let Some(bytes) = data.get(next..next + length as usize) else { return Ok(None) };
            fields.push(Some(bytes.to_vec()));
            next += length as usize;
        }
        Ok(Some((Some(fields), next)))
    }
}

/// The header of binary COPY output: the signature, no flags, no extension.
pub fn header(out: &mut Vec<u8>) {
    out.extend_from_slice(SIGNATURE);
    out.extend_from_slice(&0u32.to_be_bytes());
    out.extend_from_slice(&0u32.to_be_bytes());
}

/// One tuple of binary COPY output.
pub fn write_tuple(fields: &[Option<Vec<u8>>], out: &mut Vec<u8>) {
    out.extend_from_slice(&(fields.len() as i16).to_be_bytes());
    for field in fields {
        match field {
            None => out.extend_from_slice(&(-1i32).to_be_bytes()),
            Some(bytes) => {
                out.extend_from_slice(&(bytes.len() as i32).to_be_bytes());
                out.extend_from_slice(bytes);
            }
        }
    }
}

/// The end of binary COPY output.
pub fn trailer(out: &mut Vec<u8>) {
    out.extend_from_slice(&(-1i16).to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tuples_round_trip_across_messages() {
        let mut data = Vec::new();
        header(&mut data);
        write_tuple(&[Some(vec![0, 0, 0, 7]), None], &mut data);
        write_tuple(&[Some(b"abc".to_vec()), Some(Vec::new())], &mut data);
        trailer(&mut data);
        let mut reader = BinaryReader::default();
        let mut tuples = Vec::new();
        for byte in &data {
            tuples.extend(reader.feed(&[*byte]).unwrap());
        }
        reader.finish().unwrap();
        assert_eq!(tuples, vec![vec![Some(vec![0, 0, 0, 7]), None], vec![Some(b"abc".to_vec()), Some(Vec::new())]]);
    }

    #[test]
    fn malformed_data_is_an_error() {
        assert!(BinaryReader::default().feed(b"NOTCOPY").is_err());
        let mut data = Vec::new();
        header(&mut data);
        data.extend_from_slice(&1i16.to_be_bytes());
        data.extend_from_slice(&(-5i32).to_be_bytes());
        assert!(BinaryReader::default().feed(&data).is_err());
        let mut cut = Vec::new();
        header(&mut cut);
        write_tuple(&[Some(vec![1, 2, 3])], &mut cut);
        cut.truncate(cut.len() - 1);
        let mut reader = BinaryReader::default();
        reader.feed(&cut).unwrap();
        assert!(reader.finish().is_err());
        let mut oids = SIGNATURE.to_vec();
        oids.extend_from_slice(&(1u32 << 16).to_be_bytes());
        oids.extend_from_slice(&0u32.to_be_bytes());
        assert!(BinaryReader::default().feed(&oids).is_err());
    }
}
