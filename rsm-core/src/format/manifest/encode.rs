//! Writing a manifest: the version its segment needs, and its bytes, section by section as the version's
//! layout ([`super::versions`]) says.

use super::versions::{FrameTableSection, VersionLayout};
use super::{
    ENCRYPTED_VERSION, FRAMED_VERSION, MAGIC, Manifest, PROVIDER_KEY_VERSION, TRANSFORMED_VERSION,
    UNTRANSFORMED_VERSION,
};
use crate::crypto::{MAX_KEY_ID_LEN, MAX_PROVIDER_BLOB_LEN, Wrapped};
use crate::format::chunk::ChunkEntry;
use crate::format::codec::Writer;
use crate::format::segment_metadata::{write_leader_epochs, write_segment_fields, write_topic_partition, write_uuid};

impl Manifest {
    /// The version [`Manifest::encode`] writes: [`FRAMED_VERSION`] when a chunk is stored in frames, else
    /// [`ENCRYPTED_VERSION`] for an encrypted segment, else [`TRANSFORMED_VERSION`] when a chunk is
    /// transformed, else [`UNTRANSFORMED_VERSION`].
    pub fn version(&self) -> u16 {
        if self.encryption.as_ref().is_some_and(|e| matches!(e.wrapped, Wrapped::Provider(_))) {
            PROVIDER_KEY_VERSION
        } else if self.chunks.iter().any(|c| c.rdi.transform.is_framed()) {
            FRAMED_VERSION
        } else if self.encryption.is_some() {
            ENCRYPTED_VERSION
        } else if self.chunks.iter().any(ChunkEntry::is_transformed) {
            TRANSFORMED_VERSION
        } else {
            UNTRANSFORMED_VERSION
        }
    }

    /// Encodes the manifest.
    pub fn encode(&self) -> Vec<u8> {
        let m = &self.metadata;
        let tp = &m.remote_log_segment_id.topic_id_partition;
        let mut out = Vec::with_capacity(256 + self.chunks.len() * 90);
        let mut w = Writer::new(&mut out);
        w.bytes(MAGIC);
        let version = self.version();
        let layout = VersionLayout::of(version).expect("a version this code reads");
        w.u16(version);
        write_topic_partition(&mut w, &tp.topic_partition);
        write_uuid(&mut w, tp.topic_id);
        write_segment_fields(&mut w, m);
        w.u32(m.segment_leader_epochs.len() as u32);
        write_leader_epochs(&mut w, &m.segment_leader_epochs);
        match &m.custom_metadata {
            None => w.i32(-1),
            Some(c) => {
                w.i32(c.0.len() as i32);
                w.bytes(&c.0);
            }
        }
        w.u8(m.state as i8 as u8);
        w.u8(m.txn_idx_empty as u8);
        w.u64(self.log_length);
        w.u32(self.chunk_target);
        for loc in &self.indexes {
            match loc {
                None => w.bytes(&[0; 21]),
                Some(l) => {
                    w.u8(1);
                    w.u64(l.position);
                    w.u64(l.length);
                    w.u32(l.crc32c);
                }
            }
        }
        w.u32(self.chunks.len() as u32);
        for c in &self.chunks {
            c.encode(w.out());
        }
        if layout.block_crcs {
            w.u32(self.block_size);
            w.u32(self.block_crcs.len() as u32);
            for &crc in &self.block_crcs {
                w.u32(crc);
            }
        }
        if layout.frame_table != FrameTableSection::Absent {
            // What the table holds is written as it is: a table that does not match the chunks (only a
            // test writes one) does not decode.
            let table = self.frames.as_ref();
            w.u32(table.map_or(0, |t| t.frame_size));
            for (i, _) in self.chunks.iter().enumerate().filter(|(_, c)| c.rdi.transform.is_framed()) {
                for f in table.and_then(|t| t.chunks.get(i)).into_iter().flatten() {
                    w.u32(f.stored_length);
                    w.u32(f.stored_crc32c);
                }
            }
        }
        if let Some(flag) = layout.encryption.flag(self.encryption.as_ref().map(|e| &e.wrapped)) {
            w.u8(flag);
        }
        if let Some(e) = &self.encryption {
            // Ids are validated when read from the settings; an id past 255 bytes is cut rather than
            // written with a wrong length (it would then not unwrap, never read as another id's).
            let id = &e.kek_id.as_bytes()[..e.kek_id.len().min(MAX_KEY_ID_LEN)];
            w.u8(id.len() as u8);
            w.bytes(id);
            match &e.wrapped {
                Wrapped::Local { nonce, wrapped } => {
                    w.bytes(nonce);
                    w.bytes(wrapped);
                }
                Wrapped::Provider(blob) => {
                    // Blobs come from the provider, checked against the bound when wrapped; one past it is
                    // cut likewise (it then does not unwrap).
                    let blob = &blob[..blob.len().min(MAX_PROVIDER_BLOB_LEN)];
                    w.u16(blob.len() as u16);
                    w.bytes(blob);
                }
            }
        }
        let crc = crate::checksum::crc32c(&out);
        out.extend_from_slice(&crc.to_be_bytes());
        out
    }
}
