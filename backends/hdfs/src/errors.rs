//! What an [`HdfsError`] means to a caller: the classification of the client's errors into
//! [`rsm_core::Error`]s (not found, retriable, corrupt, invalid or storage).

use hdfs_native::HdfsError;
use rsm_core::Error;

/// Whether a Java exception class a NameNode returned means "try again later".
fn retriable_exception(class: &str) -> bool {
    const RETRIABLE: [&str; 10] = [
        "StandbyException",
        "RetriableException",
        "SafeModeException",
        "NotReplicatedYetException",
        "ObserverRetryOnActiveException",
        "CallQueueOverflowException",
        "ServerTooBusyException",
        "ConnectException",
        "SocketTimeoutException",
        "InterruptedIOException",
    ];
    let simple = class.rsplit(['.', '$']).next().unwrap_or(class);
    RETRIABLE.contains(&simple)
}

/// Classifies an HDFS client error met while doing `what` (which names the key and the path).
pub(crate) fn classify(what: &str, e: HdfsError) -> Error {
    use std::io::ErrorKind as K;
    match e {
        HdfsError::FileNotFound(_) => Error::not_found(what.to_string()),
        HdfsError::RPCError(ref class, _) if class == "java.io.FileNotFoundException" => {
            Error::not_found(what.to_string())
        }
        HdfsError::RPCError(ref class, _) | HdfsError::FatalRPCError(ref class, _) if retriable_exception(class) => {
            Error::retriable(what.to_string(), e)
        }
        HdfsError::RPCError(ref class, _)
            if class.ends_with("InvalidPathException") || class.ends_with("HadoopIllegalArgumentException") =>
        {
            Error::invalid(format!("{what}: {e}"))
        }
        HdfsError::InvalidPath(_) => Error::invalid(format!("{what}: {e}")),
        HdfsError::IOError(ref io) => match io.kind() {
            K::ConnectionRefused
            | K::ConnectionReset
            | K::ConnectionAborted
            | K::NotConnected
            | K::TimedOut
            | K::BrokenPipe
            | K::UnexpectedEof
            | K::Interrupted
            | K::WouldBlock
            | K::HostUnreachable
            | K::NetworkUnreachable
            | K::NetworkDown
            | K::AddrNotAvailable => Error::retriable(what.to_string(), e),
            _ => Error::storage(what.to_string(), e),
        },
        HdfsError::DataTransferError(_) | HdfsError::BlocksNotFound(_) => Error::retriable(what.to_string(), e),
        HdfsError::OperationFailed(ref m) if m.contains("in time") => Error::retriable(what.to_string(), e),
        HdfsError::ChecksumError => Error::corrupt(format!("{what}: {e}")),
        e => Error::storage(what.to_string(), e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsm_core::ErrorKind;

    #[test]
    fn errors_are_classified() {
        let io = |k| HdfsError::IOError(std::io::Error::from(k));
        let kind = |e| {
            let e = classify("object k (hdfs path /k)", e);
            (e.kind(), e.is_transient())
        };
        assert_eq!(kind(HdfsError::FileNotFound("/k".into())), (ErrorKind::NotFound, false));
        assert_eq!(
            kind(HdfsError::RPCError("java.io.FileNotFoundException".into(), "File does not exist".into())),
            (ErrorKind::NotFound, false)
        );
        assert_eq!(kind(io(std::io::ErrorKind::ConnectionRefused)), (ErrorKind::Storage, true));
        assert_eq!(kind(io(std::io::ErrorKind::TimedOut)), (ErrorKind::Storage, true));
        assert_eq!(
            kind(HdfsError::RPCError("org.apache.hadoop.ipc.StandbyException".into(), "standby".into())),
            (ErrorKind::Storage, true)
        );
        assert_eq!(
            kind(HdfsError::RPCError(
                "org.apache.hadoop.hdfs.server.namenode.SafeModeException".into(),
                "safe mode".into()
            )),
            (ErrorKind::Storage, true)
        );
        assert_eq!(kind(HdfsError::DataTransferError("dn".into())), (ErrorKind::Storage, true));
        assert_eq!(kind(HdfsError::ChecksumError), (ErrorKind::Corrupt, false));
        assert_eq!(
            kind(HdfsError::RPCError("org.apache.hadoop.security.AccessControlException".into(), "denied".into())),
            (ErrorKind::Storage, false)
        );
        let e = classify("object k (hdfs path /k)", io(std::io::ErrorKind::ConnectionRefused));
        assert!(e.full_message().contains("object k"), "{}", e.full_message());
    }
}
