//! The chunk cache's policy: what a read does with each chunk it touches ([`decide`]), from plain facts
//! about the chunk, its reader, the store and the cache. No I/O, no locks, no clocks:
//! [`CachedChunks`](super::CachedChunks) gathers the facts, calls it, and carries the decision out.
//!
//! Two rules about a whole read stand beside it: whether the read goes around the cache altogether, before
//! any chunk is looked at ([`reads_through`]), and whether it reads the chunks after it ahead
//! ([`reads_ahead`]).

/// How a segment's reader reads it (told by the segment's previous read).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Reader {
    /// It started after the segment's previous read started, and no later than where that one ended.
    Sequential,
    /// Any other read.
    Random,
}

/// What the doorkeeper remembers of a chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum DoorkeeperVerdict {
    /// No random reader has missed it (or not lately enough to be remembered).
    FirstMiss,
    /// A random reader has missed it before.
    MissedBefore,
}

/// Whether a load in the background could start now, within the bound on bytes loaded in the background.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Budget {
    /// No load runs in the background: one may start, whatever its size.
    Idle,
    /// Loads run in the background, and the chunk's bytes fit beside theirs.
    Room,
    /// Loads run in the background, and the chunk's bytes would pass the bound.
    Full,
}

/// What is known of one chunk a read touches when deciding what to do with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct ChunkFacts {
    /// The memory tier holds the chunk.
    pub in_memory: bool,
    /// The chunk's load runs (a reader's, or one in the background).
    pub loading: bool,
    /// The disk tier holds a file of the chunk, not yet checked (one that then fails its check is taken as
    /// no file).
    pub on_disk: bool,
    /// How the reader reads the segment.
    pub reader: Reader,
    /// What the doorkeeper remembers of the chunk.
    pub doorkeeper: DoorkeeperVerdict,
    /// Whether the chunk's load could start in the background now.
    pub budget: Budget,
    /// The store's objects are files this process reads.
    pub local_files: bool,
    /// The segment has block CRCs, so that some of a chunk's blocks can be checked without the rest.
    pub block_crcs: bool,
    /// The reader asks for every block of the chunk.
    pub asks_whole_chunk: bool,
}

/// What a read does with one chunk it touches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ChunkRead {
    /// Serve the bytes asked for from the memory tier's copy.
    FromMemory,
    /// Read the blocks asked for from the disk tier's file, checked, and nothing else; if the file fails its
    /// check, decide again as though the tier had none.
    FromDisk,
    /// Wait for the chunk's load in flight, with its other readers.
    JoinLoad,
    /// Load the whole chunk now and wait for it (readers meeting the load wait with it); first, when
    /// `note_miss`, the doorkeeper notes the miss.
    LoadAndWait {
        /// The doorkeeper notes the miss (marks the chunk, or refreshes its mark).
        note_miss: bool,
    },
    /// Read only the blocks asked for from the store, around the cache.
    ReadAround {
        /// The doorkeeper notes the miss (marks the chunk, or refreshes its mark).
        note_miss: bool,
        /// The chunk's whole load starts in the background, while the reader goes on with its own blocks
        /// (unless, by the time it starts, the bytes in flight have reached their bound).
        load_behind: bool,
    },
}

/// What a read does with one chunk it touches, by these rules in turn:
/// 1. a chunk in memory is served from there;
/// 2. over local files, with block CRCs, a read costs only its own blocks' transform and never waits for a
///    load: a chunk on disk is served from there, and any other miss reads around the cache, even one meeting
///    the chunk's load in flight. Only a random reader's miss with no load of the chunk running is noted;
///    when missed before, the chunk's load starts behind the reader if no other background load runs (a load
///    there is all processor time, taken from the readers);
/// 3. otherwise a reader meeting the chunk's load joins it, and a chunk on disk is served from there;
/// 4. a sequential reader loads the chunk and waits for it, as does a reader of a segment without block CRCs
///    (a chunk can then only be checked whole);
/// 5. a random reader's miss is noted by the doorkeeper. The first miss reads around the cache; a later one
///    loads the chunk and waits when the reader asks for all of it anyway, and otherwise reads around the
///    cache, starting the chunk's load behind the reader if the budget has room.
pub(super) fn decide(chunk: &ChunkFacts) -> ChunkRead {
    use DoorkeeperVerdict::{FirstMiss, MissedBefore};
    let random = chunk.reader == Reader::Random;
    if chunk.in_memory {
        return ChunkRead::FromMemory;
    }
    if chunk.local_files && chunk.block_crcs {
        return if chunk.on_disk {
            ChunkRead::FromDisk
        } else if !random || chunk.loading {
            ChunkRead::ReadAround { note_miss: false, load_behind: false }
        } else {
            let load_behind = chunk.doorkeeper == MissedBefore && chunk.budget == Budget::Idle;
            ChunkRead::ReadAround { note_miss: true, load_behind }
        };
    }
    if chunk.loading {
        return ChunkRead::JoinLoad;
    }
    if chunk.on_disk {
        return ChunkRead::FromDisk;
    }
    if !random || !chunk.block_crcs {
        return ChunkRead::LoadAndWait { note_miss: false };
    }
    match chunk.doorkeeper {
        FirstMiss => ChunkRead::ReadAround { note_miss: true, load_behind: false },
        MissedBefore if chunk.asks_whole_chunk => ChunkRead::LoadAndWait { note_miss: true },
        MissedBefore => ChunkRead::ReadAround { note_miss: true, load_behind: chunk.budget != Budget::Full },
    }
}

/// Whether a read goes to the store around the cache as one ranged read, keeping nothing: over local files,
/// when the segment has block CRCs, is not encrypted, and every chunk the read touches is stored as it is
/// (`chunks_transformed` says, for each, whether it is transformed; it is looked at only when the rest
/// holds). The page cache holds such chunks already, and a copy in fresh memory would only slow the reads.
pub(super) fn reads_through(
    local_files: bool,
    block_crcs: bool,
    encrypted: bool,
    chunks_transformed: impl IntoIterator<Item = bool>,
) -> bool {
    local_files && block_crcs && !encrypted && chunks_transformed.into_iter().all(|transformed| !transformed)
}

/// Whether a read loads the chunks after it in the background: a sequential reader's does, when the cache
/// reads ahead (`prefetch_chunks` > 0) and has a memory tier, except over local files, where a sequential
/// reader reads each block once anyway and a load behind it would only undo the chunk a second time.
pub(super) fn reads_ahead(reader: Reader, local_files: bool, prefetch_chunks: usize, memory_bytes: u64) -> bool {
    reader == Reader::Sequential && prefetch_chunks > 0 && memory_bytes > 0 && !local_files
}

#[cfg(test)]
mod tests {
    use super::*;
    use Budget::{Full, Idle, Room};
    use DoorkeeperVerdict::{FirstMiss, MissedBefore};
    use Reader::{Random, Sequential};

    /// A random reader's first miss of a chunk of a remote store's segment with block CRCs, asking for part
    /// of it, with nothing loading and no background load running: each row below changes what it names.
    const MISS: ChunkFacts = ChunkFacts {
        in_memory: false,
        loading: false,
        on_disk: false,
        reader: Random,
        doorkeeper: FirstMiss,
        budget: Idle,
        local_files: false,
        block_crcs: true,
        asks_whole_chunk: false,
    };

    /// The same over local files.
    const LOCAL_MISS: ChunkFacts = ChunkFacts { local_files: true, ..MISS };

    const fn around(note_miss: bool, load_behind: bool) -> ChunkRead {
        ChunkRead::ReadAround { note_miss, load_behind }
    }

    const fn load_and_wait(note_miss: bool) -> ChunkRead {
        ChunkRead::LoadAndWait { note_miss }
    }

    #[test]
    fn each_chunk_read_is_decided_as_the_rules_say() {
        use ChunkRead::{FromDisk, FromMemory, JoinLoad};
        let everything = ChunkFacts { in_memory: true, loading: true, on_disk: true, doorkeeper: MissedBefore, ..MISS };
        let rows: &[(&str, ChunkFacts, ChunkRead)] = &[
            // 1. A hit.
            ("a hit is served from memory, whatever else holds", everything, FromMemory),
            (
                "a hit over local files is served from memory",
                ChunkFacts { local_files: true, ..everything },
                FromMemory,
            ),
            (
                "a sequential reader's hit is served from memory",
                ChunkFacts { reader: Sequential, ..everything },
                FromMemory,
            ),
            // 2. Over local files, with block CRCs.
            ("over local files a disk copy is served", ChunkFacts { on_disk: true, ..LOCAL_MISS }, FromDisk),
            (
                "over local files a disk copy is served even while the chunk's load runs",
                ChunkFacts { on_disk: true, loading: true, ..LOCAL_MISS },
                FromDisk,
            ),
            (
                "over local files a sequential reader reads around, noting nothing, loading nothing",
                ChunkFacts { reader: Sequential, doorkeeper: MissedBefore, ..LOCAL_MISS },
                around(false, false),
            ),
            (
                "over local files a reader meeting the chunk's load reads around it, noting nothing",
                ChunkFacts { loading: true, doorkeeper: MissedBefore, ..LOCAL_MISS },
                around(false, false),
            ),
            ("over local files a random first miss is noted and reads around", LOCAL_MISS, around(true, false)),
            (
                "over local files a random repeated miss loads the chunk behind it when no background load runs",
                ChunkFacts { doorkeeper: MissedBefore, ..LOCAL_MISS },
                around(true, true),
            ),
            (
                "over local files a random repeated miss asking for the whole chunk still reads around",
                ChunkFacts { doorkeeper: MissedBefore, asks_whole_chunk: true, ..LOCAL_MISS },
                around(true, true),
            ),
            (
                "over local files a random repeated miss loads nothing while another background load runs",
                ChunkFacts { doorkeeper: MissedBefore, budget: Room, ..LOCAL_MISS },
                around(true, false),
            ),
            (
                "over local files a random repeated miss loads nothing when the budget is full",
                ChunkFacts { doorkeeper: MissedBefore, budget: Full, ..LOCAL_MISS },
                around(true, false),
            ),
            (
                "over local files without block CRCs a random miss loads the chunk, as over a remote store",
                ChunkFacts { block_crcs: false, ..LOCAL_MISS },
                load_and_wait(false),
            ),
            (
                "over local files without block CRCs a reader meeting the chunk's load joins it",
                ChunkFacts { block_crcs: false, loading: true, ..LOCAL_MISS },
                JoinLoad,
            ),
            // 3. A load in flight, a disk copy.
            ("a random reader meeting the chunk's load joins it", ChunkFacts { loading: true, ..MISS }, JoinLoad),
            (
                "a sequential reader meeting the chunk's load joins it",
                ChunkFacts { loading: true, reader: Sequential, ..MISS },
                JoinLoad,
            ),
            (
                "a reader meeting the chunk's load joins it rather than read the disk copy",
                ChunkFacts { loading: true, on_disk: true, ..MISS },
                JoinLoad,
            ),
            ("a random reader's disk copy is served", ChunkFacts { on_disk: true, ..MISS }, FromDisk),
            (
                "a sequential reader's disk copy is served",
                ChunkFacts { on_disk: true, reader: Sequential, ..MISS },
                FromDisk,
            ),
            // 4. Loads waited for.
            (
                "a sequential reader loads the chunk and waits",
                ChunkFacts { reader: Sequential, ..MISS },
                load_and_wait(false),
            ),
            (
                "a sequential reader's repeated miss is not noted",
                ChunkFacts { reader: Sequential, doorkeeper: MissedBefore, ..MISS },
                load_and_wait(false),
            ),
            (
                "a random reader of a segment without block CRCs loads the chunk and waits",
                ChunkFacts { block_crcs: false, ..MISS },
                load_and_wait(false),
            ),
            // 5. The doorkeeper.
            ("a random first miss is noted and reads around", MISS, around(true, false)),
            (
                "a random first miss asking for the whole chunk is noted and reads around",
                ChunkFacts { asks_whole_chunk: true, ..MISS },
                around(true, false),
            ),
            (
                "a random repeated miss asking for the whole chunk is noted, loads it and waits",
                ChunkFacts { doorkeeper: MissedBefore, asks_whole_chunk: true, ..MISS },
                load_and_wait(true),
            ),
            (
                "a random repeated miss loads the chunk behind it when no background load runs",
                ChunkFacts { doorkeeper: MissedBefore, ..MISS },
                around(true, true),
            ),
            (
                "a random repeated miss loads the chunk behind it when the budget has room",
                ChunkFacts { doorkeeper: MissedBefore, budget: Room, ..MISS },
                around(true, true),
            ),
            (
                "a random repeated miss loads nothing when the budget is full",
                ChunkFacts { doorkeeper: MissedBefore, budget: Full, ..MISS },
                around(true, false),
            ),
        ];
        for (case, facts, expected) in rows {
            assert_eq!(decide(facts), *expected, "{case}: {facts:?}");
        }
    }

    #[test]
    fn a_read_goes_through_only_over_local_files_of_plain_chunks_with_block_crcs() {
        /// The case; local files, block CRCs, encrypted, each chunk touched transformed; whether it reads through.
        type Row = (&'static str, bool, bool, bool, &'static [bool], bool);
        let rows: &[Row] = &[
            ("plain chunks over local files", true, true, false, &[false, false], true),
            ("a remote store", false, true, false, &[false], false),
            ("a segment without block CRCs", true, false, false, &[false], false),
            ("an encrypted segment", true, true, true, &[false], false),
            ("one transformed chunk among plain ones", true, true, false, &[false, true], false),
        ];
        for &(case, local_files, block_crcs, encrypted, transformed, expected) in rows {
            let got = reads_through(local_files, block_crcs, encrypted, transformed.iter().copied());
            assert_eq!(got, expected, "{case}");
        }
    }

    #[test]
    fn only_a_sequential_reader_of_a_remote_store_reads_ahead() {
        /// The case; the reader, local files, chunks read ahead, bytes of the memory tier; whether it reads ahead.
        type Row = (&'static str, Reader, bool, usize, u64, bool);
        let rows: &[Row] = &[
            ("a sequential reader", Sequential, false, 2, 1 << 20, true),
            ("a random reader", Random, false, 2, 1 << 20, false),
            ("over local files", Sequential, true, 2, 1 << 20, false),
            ("no read-ahead set", Sequential, false, 0, 1 << 20, false),
            ("no memory tier", Sequential, false, 2, 0, false),
        ];
        for &(case, reader, local_files, prefetch_chunks, memory_bytes, expected) in rows {
            assert_eq!(reads_ahead(reader, local_files, prefetch_chunks, memory_bytes), expected, "{case}");
        }
    }
}
