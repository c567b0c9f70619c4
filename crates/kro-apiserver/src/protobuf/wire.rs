//! The protobuf wire format: varints, tags, and splitting a message into its fields.

/// One field value as it appears on the wire.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum WireValue<'a> {
    Varint(u64),
    Fixed64(u64),
    Fixed32(u32),
    Bytes(&'a [u8]),
}

/// Why bytes are not a protobuf message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WireError {
    Truncated,
    VarintTooLong,
    BadWireType,
}

impl WireError {
    pub(crate) fn describe(self) -> &'static str {
        match self {
            WireError::Truncated => "the message is truncated",
            WireError::VarintTooLong => "a varint is longer than ten bytes",
            WireError::BadWireType => "a field has an unknown wire type",
        }
    }
}

fn read_varint(bytes: &[u8], position: &mut usize) -> Result<u64, WireError> {
    let mut value = 0u64;
    for shift in 0..10 {
        let byte = *bytes.get(*position).ok_or(WireError::Truncated)?;
        *position += 1;
        value |= u64::from(byte & 0x7f) << (shift * 7);
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(WireError::VarintTooLong)
}

fn take<'a>(bytes: &'a [u8], position: &mut usize, length: usize) -> Result<&'a [u8], WireError> {
    let end = position.checked_add(length).ok_or(WireError::Truncated)?;
    let slice = bytes.get(*position..end).ok_or(WireError::Truncated)?;
    *position = end;
    Ok(slice)
}

/// The fields of a message in wire order, as `(tag, value)`.
pub(crate) fn fields(bytes: &[u8]) -> Result<Vec<(u32, WireValue<'_>)>, WireError> {
    let mut out = Vec::new();
    let mut position = 0;
    while position < bytes.len() {
        let key = read_varint(bytes, &mut position)?;
        let tag = u32::try_from(key >> 3).map_err(|_| WireError::BadWireType)?;
        let value = match key & 7 {
            0 => WireValue::Varint(read_varint(bytes, &mut position)?),
            1 => {
                let raw = take(bytes, &mut position, 8)?;
                let mut array = [0u8; 8];
                array.copy_from_slice(raw);
                WireValue::Fixed64(u64::from_le_bytes(array))
            }
            2 => {
                let length = usize::try_from(read_varint(bytes, &mut position)?)
                    .map_err(|_| WireError::Truncated)?;
                WireValue::Bytes(take(bytes, &mut position, length)?)
            }
            5 => {
                let raw = take(bytes, &mut position, 4)?;
                let mut array = [0u8; 4];
                array.copy_from_slice(raw);
                WireValue::Fixed32(u32::from_le_bytes(array))
            }
            _ => return Err(WireError::BadWireType),
        };
        out.push((tag, value));
    }
    Ok(out)
}

/// The varints of a packed repeated field.
pub(crate) fn packed_varints(bytes: &[u8]) -> Result<Vec<u64>, WireError> {
    let mut out = Vec::new();
    let mut position = 0;
    while position < bytes.len() {
        out.push(read_varint(bytes, &mut position)?);
    }
    Ok(out)
}

/// Appends a varint.
pub(crate) fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8 & 0x7f) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Appends a varint field.
pub(crate) fn put_varint_field(out: &mut Vec<u8>, tag: u32, value: u64) {
    put_varint(out, u64::from(tag) << 3);
    put_varint(out, value);
}

/// Appends a length-delimited field.
pub(crate) fn put_bytes_field(out: &mut Vec<u8>, tag: u32, bytes: &[u8]) {
    put_varint(out, (u64::from(tag) << 3) | 2);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// Appends a fixed64 field.
pub(crate) fn put_fixed64_field(out: &mut Vec<u8>, tag: u32, value: u64) {
    put_varint(out, (u64::from(tag) << 3) | 1);
    out.extend_from_slice(&value.to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_including_negative_int32_as_ten_bytes() {
        for value in [0u64, 1, 127, 128, 300, u64::MAX, (-1i64) as u64] {
            let mut out = Vec::new();
            put_varint_field(&mut out, 3, value);
            assert_eq!(fields(&out), Ok(vec![(3, WireValue::Varint(value))]));
        }
        let mut out = Vec::new();
        put_varint(&mut out, (-1i64) as u64);
        assert_eq!(out.len(), 10);
    }

    #[test]
    fn truncated_messages_are_errors_not_panics() {
        assert_eq!(fields(&[0x0a, 0x05, b'a']), Err(WireError::Truncated));
        assert_eq!(fields(&[0x08]), Err(WireError::Truncated));
        assert_eq!(fields(&[0x0f]), Err(WireError::BadWireType));
    }
}
