//! The custom metadata Aiven's plugin returns from a copy, which Kafka keeps with the segment's metadata: a
//! section of Kafka's tagged fields (an unsigned varint count, then per field its tag, its size and its bytes,
//! all unsigned varints but the bytes). Tag 0 is the bytes stored (a zigzag varlong), tag 1 the key prefix
//! the segment was stored under and tag 2 the key without prefix and suffix (compact strings); which of them
//! are there depends on its `custom.metadata.fields.include`. Unknown tags are skipped.

use crate::error::{Error, Result};

/// What an Aiven segment's custom metadata says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AivenCustomMetadata {
    /// Tag 0: the bytes the copy stored (every object).
    pub remote_size: Option<i64>,
    /// Tag 1: the key prefix the segment was stored under.
    pub object_prefix: Option<String>,
    /// Tag 2: the segment's key without prefix and suffix.
    pub object_key: Option<String>,
}

/// An unsigned varint at `*at`, moving past it; `None` when cut short or over 64 bits.
fn uvarint(b: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let x = *b.get(*at)?;
        *at += 1;
        v |= ((x & 0x7f) as u64) << shift;
        if x & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

impl AivenCustomMetadata {
    /// Parses custom metadata bytes; bytes that are not a tagged-field section, or whose known fields do not
    /// read, are refused with an error naming `what`.
    pub fn parse(b: &[u8], what: &str) -> Result<Self> {
        let bad = |why: &str| Error::corrupt(format!("{what}: custom metadata is not Aiven's tagged fields: {why}"));
        let mut out = AivenCustomMetadata::default();
        if b.is_empty() {
            return Ok(out);
        }
        let mut at = 0;
        let count = uvarint(b, &mut at).ok_or_else(|| bad("no field count"))?;
        for _ in 0..count {
            let tag = uvarint(b, &mut at).ok_or_else(|| bad("a field's tag is cut short"))?;
            let size = uvarint(b, &mut at).ok_or_else(|| bad("a field's size is cut short"))?;
            let end = usize::try_from(size).ok().and_then(|s| at.checked_add(s)).filter(|&e| e <= b.len());
            let field = &b[at..end.ok_or_else(|| bad("a field runs past the end"))?];
            at += field.len();
            let mut f = 0;
            match tag {
                0 => {
                    let z = uvarint(field, &mut f).ok_or_else(|| bad("remote_size is not a varlong"))?;
                    out.remote_size = Some((z >> 1) as i64 ^ -((z & 1) as i64));
                }
                1 | 2 => {
                    let n = uvarint(field, &mut f).and_then(|n| n.checked_sub(1));
                    let s = n
                        .and_then(|n| field.get(f..f.checked_add(usize::try_from(n).ok()?)?))
                        .and_then(|s| std::str::from_utf8(s).ok())
                        .ok_or_else(|| bad("a key field is not a compact string"))?;
                    f += s.len();
                    let slot = if tag == 1 { &mut out.object_prefix } else { &mut out.object_key };
                    *slot = Some(s.to_string());
                }
                _ => f = field.len(),
            }
            if f != field.len() {
                return Err(bad(&format!("field {tag} holds {} bytes more than its value", field.len() - f)));
            }
        }
        if at != b.len() {
            return Err(bad(&format!("{} bytes after the last field", b.len() - at)));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::AivenCustomMetadata;

    /// Bytes laid out by hand as Kafka's `TaggedFields` type writes them (count, then tag, size, value).
    #[test]
    fn reads_tagged_fields_and_refuses_what_is_not() {
        let key = b"t-AAAAAAAAAAAAAAAAAAAAAQ/0/00000000000000000000-AAAAAAAAAAAAAAAAAAAAAg";
        let mut b = vec![3, 0, 2, 0xac, 0x02]; // 3 fields; tag 0: 2 bytes, the varint 300, zigzag for 150
        b.extend([1, 4, 4, b'p', b'/', b'x']);
        b.extend([2, key.len() as u8 + 1, key.len() as u8 + 1]);
        b.extend(key);
        let m = AivenCustomMetadata::parse(&b, "segment s").unwrap();
        assert_eq!(m.remote_size, Some(150));
        assert_eq!(m.object_prefix.as_deref(), Some("p/x"));
        assert_eq!(m.object_key.as_deref(), Some(std::str::from_utf8(key).unwrap()));
        assert_eq!(AivenCustomMetadata::parse(&[], "s").unwrap(), AivenCustomMetadata::default());
        // An unknown tag is skipped.
        assert_eq!(AivenCustomMetadata::parse(&[1, 9, 2, 0, 0], "s").unwrap(), AivenCustomMetadata::default());
        for (bytes, needle) in [
            (vec![1, 1, 9, 1], "runs past the end"),
            (vec![1, 0, 2, 0x02, 0x00], "1 bytes more"),
            (vec![0, 7], "1 bytes after"),
            (vec![1, 1, 2, 5, b'a'], "not a compact string"),
            (vec![0x80], "no field count"),
        ] {
            let e = AivenCustomMetadata::parse(&bytes, "segment s").unwrap_err().to_string();
            assert!(e.contains(needle) && e.contains("segment s"), "{bytes:?}: {e}");
        }
    }
}
