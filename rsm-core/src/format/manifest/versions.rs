//! What each manifest version holds beyond the sections every version has: the one table of their
//! differences, which the encoder and the decoder both follow.
//!
//! | version | block CRCs | transformed chunks | frame table                 | encryption                        |
//! |---------|------------|--------------------|-----------------------------|-----------------------------------|
//! | 1       | no         | no                 | no                          | no                                |
//! | 2       | yes        | no                 | no                          | no                                |
//! | 3       | yes        | yes                | no                          | no                                |
//! | 4       | yes        | yes                | no                          | always: a key file's wrapped key  |
//! | 5       | yes        | yes, and in frames | always                      | flag 0 (none) or 1 (a key file's) |
//! | 6       | yes        | yes, and in frames | frame size 0 when no frames | flag 2: a KEK provider's blob     |

use super::{
    ENCRYPTED_VERSION, FRAMED_VERSION, OLDEST_VERSION, PROVIDER_KEY_VERSION, TRANSFORMED_VERSION, UNTRANSFORMED_VERSION,
};

/// The sections of one manifest version that not every version has, and what its chunk entries may be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct VersionLayout {
    /// Whether the block size and a CRC-32C of every block follow the chunk table (version 2 on; before, each
    /// chunk is one block, checked by its entry's CRC).
    pub block_crcs: bool,
    /// Whether a chunk entry may carry a transform at all (version 3 on). Which transforms also depends on
    /// the frame table (chunks in frames) and the encryption section (encrypted chunks).
    pub transformed_chunks: bool,
    /// Whether a frame table follows the block CRCs, and whether it may be empty.
    pub frame_table: FrameTableSection,
    /// Whether an encryption section follows, and what it holds.
    pub encryption: EncryptionSection,
}

/// The frame table of a version: where each frame of the chunks stored in frames is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum FrameTableSection {
    /// No frame table: no chunk may be stored in frames.
    Absent,
    /// The frame size (a non-zero multiple of the block size) and the frames of at least one chunk.
    Required,
    /// As [`FrameTableSection::Required`], or a frame size of 0 and no table when no chunk is in frames.
    Optional,
}

/// The encryption section of a version: the segment's wrapped data key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum EncryptionSection {
    /// No section: no chunk may be encrypted.
    Absent,
    /// No flag; always the key block of a key wrapped by a key file, and every chunk encrypted (each entry is
    /// checked as it is read).
    Always,
    /// A flag byte, 0 (no key block, no chunk encrypted) or 1 (the key block of a key wrapped by a key file,
    /// every chunk encrypted).
    LocalFlag,
    /// A flag byte that must be 2, then the key block of a key a KEK provider wrapped; every chunk encrypted.
    ProviderFlag,
}

impl EncryptionSection {
    /// The flag byte written for an encrypted segment (`Some`) or not (`None`), if this section has one.
    pub fn flag(self, encrypted: Option<&crate::crypto::Wrapped>) -> Option<u8> {
        use crate::crypto::Wrapped;
        match self {
            EncryptionSection::Absent | EncryptionSection::Always => None,
            EncryptionSection::LocalFlag | EncryptionSection::ProviderFlag => Some(match encrypted {
                None => 0,
                Some(Wrapped::Local { .. }) => 1,
                Some(Wrapped::Provider(_)) => 2,
            }),
        }
    }
}

/// Versions 1 to 6, in order.
const LAYOUTS: [(u16, VersionLayout); 6] = [
    (
        OLDEST_VERSION,
        VersionLayout {
            block_crcs: false,
            transformed_chunks: false,
            frame_table: FrameTableSection::Absent,
            encryption: EncryptionSection::Absent,
        },
    ),
    (
        UNTRANSFORMED_VERSION,
        VersionLayout {
            block_crcs: true,
            transformed_chunks: false,
            frame_table: FrameTableSection::Absent,
            encryption: EncryptionSection::Absent,
        },
    ),
    (
        TRANSFORMED_VERSION,
        VersionLayout {
            block_crcs: true,
            transformed_chunks: true,
            frame_table: FrameTableSection::Absent,
            encryption: EncryptionSection::Absent,
        },
    ),
    (
        ENCRYPTED_VERSION,
        VersionLayout {
            block_crcs: true,
            transformed_chunks: true,
            frame_table: FrameTableSection::Absent,
            encryption: EncryptionSection::Always,
        },
    ),
    (
        FRAMED_VERSION,
        VersionLayout {
            block_crcs: true,
            transformed_chunks: true,
            frame_table: FrameTableSection::Required,
            encryption: EncryptionSection::LocalFlag,
        },
    ),
    (
        PROVIDER_KEY_VERSION,
        VersionLayout {
            block_crcs: true,
            transformed_chunks: true,
            frame_table: FrameTableSection::Optional,
            encryption: EncryptionSection::ProviderFlag,
        },
    ),
];

impl VersionLayout {
    /// What `version` holds; `None` for a version this build does not read.
    pub fn of(version: u16) -> Option<VersionLayout> {
        LAYOUTS.iter().find(|(v, _)| *v == version).map(|(_, layout)| *layout)
    }

    /// Whether a chunk entry may be stored in frames: only where a frame table can describe its frames.
    pub fn framed_chunks(&self) -> bool {
        self.frame_table != FrameTableSection::Absent
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::manifest::VERSION;

    #[test]
    fn every_version_read_has_one_layout() {
        let versions: Vec<u16> = LAYOUTS.iter().map(|(v, _)| *v).collect();
        assert_eq!(versions, (OLDEST_VERSION..=VERSION).collect::<Vec<_>>());
        assert_eq!(VersionLayout::of(0), None);
        assert_eq!(VersionLayout::of(VERSION + 1), None);
    }
}
