//! Kubernetes protobuf request bodies built by hand, for the suites that send what no encoder
//! would write: messages nested thousands deep, lists of millions of empty items.

/// Appends a length-delimited field (wire type 2) numbered `tag` holding `bytes`.
pub fn length_delimited(out: &mut Vec<u8>, tag: u32, bytes: &[u8]) {
    let mut varint = |mut value: u64| {
        while value >= 0x80 {
            out.push((value as u8) | 0x80);
            value >>= 7;
        }
        out.push(value as u8);
    };
    varint(u64::from(tag) << 3 | 2);
    varint(bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// A whole body: the `k8s\0` magic and the `runtime.Unknown` envelope naming `api_version`
/// and `kind` around the message `raw`.
pub fn enveloped(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let mut type_meta = Vec::new();
    length_delimited(&mut type_meta, 1, api_version.as_bytes());
    length_delimited(&mut type_meta, 2, kind.as_bytes());
    let mut out = b"k8s\0".to_vec();
    length_delimited(&mut out, 1, &type_meta);
    length_delimited(&mut out, 2, raw);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_past_127_take_two_bytes() {
        let mut out = Vec::new();
        length_delimited(&mut out, 2, &[7; 200]);
        assert_eq!(&out[..3], &[0x12, 0xC8, 0x01]);
        assert_eq!(out.len(), 203);
        let body = enveloped("v1", "Node", &[]);
        assert_eq!(&body[..4], b"k8s\0");
    }
}
