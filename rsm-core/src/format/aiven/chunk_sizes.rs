//! The stored sizes of a variable chunk index: Aiven's compact list of integers (its `ChunkSizesBinaryCodec`),
//! big-endian: a count (4 bytes); with one value, that value (4 bytes); with more, a base (4 bytes), the bytes
//! per value (1 byte, 1 to 4), every value but the last minus the base in that many bytes, and the last value
//! in full (4 bytes). No value is negative.

use crate::error::{Error, Result};

/// Decodes a list of chunk sizes, refusing (never panicking on) a list whose length does not match its count.
/// `what` names the manifest for errors.
pub fn decode(b: &[u8], what: &str) -> Result<Vec<u32>> {
    let bad = |why: String| Error::corrupt(format!("{what}: the variable chunk index's sizes: {why}"));
    let be32 = |at: usize| -> Option<i32> { Some(i32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?)) };
    let count = be32(0).ok_or_else(|| bad(format!("{} bytes, shorter than a count", b.len())))?;
    let non_negative = |v: i64| u32::try_from(v).map_err(|_| bad(format!("a size of {v}")));
    match count {
        c if c < 0 => Err(bad(format!("a count of {c}"))),
        0 if b.len() == 4 => Ok(Vec::new()),
        1 if b.len() == 8 => Ok(vec![non_negative(be32(4).unwrap_or(-1) as i64)?]),
        0 | 1 => Err(bad(format!("{} bytes for a count of {count}", b.len()))),
        _ => {
            let count = count as usize;
            let base = be32(4).ok_or_else(|| bad("no base".into()))? as i64;
            let width = *b.get(8).ok_or_else(|| bad("no value width".into()))? as usize;
            if !(1..=4).contains(&width) {
                return Err(bad(format!("{width} bytes per value")));
            }
            // Checked before anything is allocated: the length is the count's, exactly.
            let want = (count - 1).checked_mul(width).and_then(|n| n.checked_add(9 + 4));
            if want != Some(b.len()) {
                return Err(bad(format!("{} bytes for {count} values of {width} bytes", b.len())));
            }
            let mut out = Vec::with_capacity(count);
            for v in b[9..b.len() - 4].chunks_exact(width) {
                let on_base = v.iter().fold(0i64, |acc, &x| acc << 8 | x as i64);
                out.push(non_negative(on_base + base)?);
            }
            out.push(non_negative(be32(b.len() - 4).unwrap_or(-1) as i64)?);
            Ok(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::decode;

    /// Encoded by hand from the layout the codec's documentation gives (its own example: 1000000, 1000010,
    /// 1000020 take one byte each above the base).
    #[test]
    fn decodes_the_documented_layout_and_refuses_damage() {
        let three = [&3i32.to_be_bytes()[..], &1_000_000i32.to_be_bytes(), &[1], &[0, 10], &1_000_020i32.to_be_bytes()]
            .concat();
        assert_eq!(decode(&three, "m").unwrap(), vec![1_000_000, 1_000_010, 1_000_020]);
        assert_eq!(decode(&0i32.to_be_bytes(), "m").unwrap(), Vec::<u32>::new());
        assert_eq!(decode(&[0, 0, 0, 1, 0, 0, 1, 0], "m").unwrap(), vec![256]);
        let two_wide = [&2i32.to_be_bytes()[..], &7i32.to_be_bytes(), &[2], &[1, 0], &5i32.to_be_bytes()].concat();
        assert_eq!(decode(&two_wide, "m").unwrap(), vec![263, 5]);
        for (bytes, needle) in [
            (vec![0, 0], "shorter than a count"),
            (vec![0xff, 0xff, 0xff, 0xff], "a count of -1"),
            (three[..three.len() - 1].to_vec(), "bytes for 3 values"),
            ([&i32::MAX.to_be_bytes()[..], &[0; 4], &[1], &[0; 4]].concat(), "bytes for 2147483647 values"),
            ([&3i32.to_be_bytes()[..], &[0; 4], &[5], &[0; 10]].concat(), "5 bytes per value"),
            ([&1i32.to_be_bytes()[..], &(-4i32).to_be_bytes()].concat(), "a size of -4"),
        ] {
            let e = decode(&bytes, "the manifest m").unwrap_err().to_string();
            assert!(e.contains(needle) && e.contains("the manifest m"), "{e}");
        }
    }
}
