//! Every backend layer passes the backend contract suite over the in-memory backend, alone and stacked as
//! the facade stacks them, and a fault layer with rules that never match changes nothing.

use rsm_core::StorageBackend;
use rsm_core::backend::layers::{CountingLayer, Fault, FaultLayer, FaultRule, RetryConfig, RetryLayer, TracingLayer};
use rsm_core::backend::{MemoryBackend, Op};
use std::sync::Arc;

fn memory() -> Arc<dyn StorageBackend> {
    Arc::new(MemoryBackend::new())
}

mod counting {
    rsm_core::backend_contract_tests!(async {
        std::sync::Arc::new(super::CountingLayer::new(super::memory())) as super::Arc<dyn super::StorageBackend>
    });
}

mod retry {
    rsm_core::backend_contract_tests!(async {
        super::Arc::new(super::RetryLayer::new(super::memory(), super::RetryConfig::default()))
            as super::Arc<dyn super::StorageBackend>
    });
}

mod faults {
    rsm_core::backend_contract_tests!(async {
        let rule = super::FaultRule {
            op: Some(super::Op::Get),
            key: "no-such-prefix/*".into(),
            fault: super::Fault::transient(),
            times: None,
        };
        super::Arc::new(super::FaultLayer::new(super::memory()).with_rule(rule))
            as super::Arc<dyn super::StorageBackend>
    });
}

mod tracing {
    rsm_core::backend_contract_tests!(async {
        super::Arc::new(super::TracingLayer::new(super::memory())) as super::Arc<dyn super::StorageBackend>
    });
}

/// The facade's stack: the store, counting, retry, tracing.
fn stacked() -> Arc<dyn StorageBackend> {
    let counted = Arc::new(CountingLayer::new(memory()));
    let retried = Arc::new(RetryLayer::new(counted, RetryConfig::default()));
    Arc::new(TracingLayer::new(retried))
}

mod stacked_backend {
    rsm_core::backend_contract_tests!(async { super::stacked() });
}

mod stacked_rsm {
    rsm_core::rsm_contract_tests!(async { super::stacked() });
}
