//! # rsm-c: the C ABI (`librsm.so`, `librsm.a`, `include/rsm.h`)
//!
//! A thin face over [`rsm_facade::Store`], as the CLI and JNI are: it converts C arguments to the SDK's
//! types, calls the facade and converts back. No storage logic lives here.
//!
//! The discipline (after rustls-ffi):
//! - every entry point runs behind one boundary (`boundary.rs`): a panic is caught and returned as
//!   [`rsm_result::Panic`], never unwound into C;
//! - every call returns an [`rsm_result`], the facade's [`rsm_facade::ResultCode`] (derived there from the
//!   error's kind and status), and on failure an optional [`rsm_error`] with the full message
//!   (`result.rs`);
//! - NULL, misaligned or otherwise invalid arguments are [`rsm_result::InvalidArgument`] naming the
//!   argument;
//! - store, stream and operation handles are ids in a registry (`handles.rs`), so a closed or forged one is
//!   an error, not a use after free;
//! - each function's documentation says who owns every pointer and for how long.
//!
//! The asynchronous form (`rsm_copy_async`, `rsm_fetch_async`, `rsm_delete_async`, `rsm_operation_cancel`)
//! runs the same core calls as tasks of the facade's runtime and reports through a callback.
//!
//! `rsm_records_fetch` returns records rather than bytes: the batches of a segment decoded, at a
//! consumer's isolation level (`records.rs`).
//!
//! Only `rsm_*` symbols are exported from `librsm.so` (dependencies' symbols kept local by the linker, see `build.rs`).
//!
//! ## Layout
//!
//! One module per C object, with the functions that make, read and free it: `version.rs` (the library's
//! and the ABI's versions), `result.rs` ([`rsm_result`], [`rsm_error`]), `store.rs` ([`rsm_store`]: open, close,
//! the count of open handles, and `rsm_copy`),
//! `stream.rs` ([`rsm_stream`]: `rsm_fetch`, `rsm_fetch_index`, read, close), `list.rs`
//! ([`rsm_segment_list`]), `buffer.rs` ([`rsm_buffer`]), `asynchronous.rs` ([`rsm_operation`] and the
//! callbacks), `partition.rs` ([`rsm_partition_copy`]) and `records.rs` ([`rsm_records`], [`rsm_record`]).
//! Kafka's structs are in `types.rs`; the shared helpers in `boundary.rs` (the boundary and the argument
//! readers) and `handles.rs` (the handle registry).
//!
//! cbindgen lists the header's functions in the order it reads them (`sort_by = "None"`): each module's in
//! turn, in the order this file declares them. That order is the header's, which `tests/header.rs` holds
//! byte for byte, so it is kept below. It is also why the store's entry points that make no object of
//! their own are not all in `store.rs`: `rsm_delete` (`delete.rs`) comes after the streams and before the
//! list, the positions (`position.rs`) after the buffer, and `rsm_self_test_panic` (`boundary.rs`) after
//! them.

#![warn(missing_docs)]
#![allow(non_camel_case_types)]

// The modules with C functions, in the order of the header's functions (see "Layout"): keep it.
// RSM_ABI_VERSION, rsm_version, rsm_abi_version.
mod version;
// rsm_result, rsm_error and its accessors.
mod result;
// rsm_store: open, close, rsm_open_handles, rsm_copy.
mod store;
// rsm_stream: rsm_fetch, rsm_fetch_index, rsm_stream_read, rsm_stream_close.
mod stream;
// rsm_delete.
mod delete;
// rsm_segment_list: rsm_list_segments and its accessors.
mod list;
// rsm_buffer and its accessors.
mod buffer;
// rsm_position_of_offset, rsm_position_of_timestamp.
mod position;
// The boundary and the argument readers; rsm_self_test_panic.
mod boundary;
// rsm_operation: the asynchronous form.
mod asynchronous;
// rsm_partition_copy: rsm_copy_partition.
mod partition;
// rsm_records and rsm_record.
mod records;

// The modules without C functions.
mod handles;
mod types;

#[cfg(test)]
mod contract_tests;
#[cfg(test)]
mod records_tests;
#[cfg(test)]
mod txn_fixture;

pub use asynchronous::{
    rsm_copy_async, rsm_copy_callback, rsm_delete_async, rsm_delete_callback, rsm_fetch_async, rsm_fetch_callback,
    rsm_operation, rsm_operation_cancel,
};
pub use boundary::rsm_self_test_panic;
pub use buffer::{rsm_buffer, rsm_buffer_data, rsm_buffer_free, rsm_buffer_len};
pub use delete::rsm_delete;
pub use list::{
    rsm_list_segments, rsm_segment_list, rsm_segment_list_free, rsm_segment_list_get, rsm_segment_list_len,
};
pub use partition::{rsm_copy_partition, rsm_partition_copy};
pub use position::{rsm_position_of_offset, rsm_position_of_timestamp};
pub use records::{
    rsm_isolation, rsm_record, rsm_record_header, rsm_record_header_count, rsm_record_key, rsm_record_offset,
    rsm_record_timestamp, rsm_record_timestamp_type, rsm_record_value, rsm_records, rsm_records_fetch,
    rsm_records_free, rsm_records_get, rsm_records_len, rsm_records_next_offset, rsm_timestamp_type,
};
pub use result::{rsm_error, rsm_error_code, rsm_error_free, rsm_error_message, rsm_result};
pub use store::{rsm_copy, rsm_open_handles, rsm_setting, rsm_store, rsm_store_close, rsm_store_open};
pub use stream::{RSM_END_OF_SEGMENT, rsm_fetch, rsm_fetch_index, rsm_stream, rsm_stream_close, rsm_stream_read};
pub use types::{
    rsm_index_type, rsm_leader_epoch, rsm_segment_files, rsm_segment_metadata, rsm_segment_state,
    rsm_topic_id_partition, rsm_uuid,
};
pub use version::{RSM_ABI_VERSION, rsm_abi_version, rsm_version};
