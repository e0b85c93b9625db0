//! Reads in flight bounded by their bytes, not only by their number.
//!
//! A fetch or a verify of a whole segment reads chunk after chunk, several at once (`fetch.concurrency`).
//! Bounded by count alone, what it holds grows with the chunks' size, which the data decides: a segment of
//! 40 MiB batches has chunks of 40 MiB whatever `chunk.size` says, and 16 of those in flight hold 640 MiB.
//! [`within_budget`] admits the next read only while the reads in flight, counted in the original bytes
//! each gives, stay within a budget the settings give (`fetch.concurrency` × `chunk.size`); a read larger
//! than the budget runs alone. Results come in the order of the reads, as `buffered` gives them.
//!
//! So a reader holds at most the budget in flight plus the result it is consuming, or, for one oversized
//! read, that read and the one before it: a chunk of one 40 MiB batch costs about two of its size.

use futures::stream::{FuturesOrdered, Stream, StreamExt};
use std::future::Future;

/// Runs `reads` (each with the bytes it will hold) at most `max` at once and while the bytes in flight stay
/// within `budget` (one read always runs, however large), yielding their results in order.
pub fn within_budget<F, I>(reads: I, max: usize, budget: u64) -> impl Stream<Item = F::Output> + Send
where
    I: IntoIterator<Item = (u64, F)>,
    I::IntoIter: Send,
    F: Future + Send,
    F::Output: Send,
{
    struct State<It: Iterator, G: Future> {
        pending: std::iter::Peekable<It>,
        running: FuturesOrdered<G>,
        in_flight: u64,
    }
    let state = State { pending: reads.into_iter().peekable(), running: FuturesOrdered::new(), in_flight: 0 };
    let max = max.max(1);
    futures::stream::unfold(state, move |mut s| async move {
        while s.running.len() < max {
            let Some(&(bytes, _)) = s.pending.peek() else { break };
            if !s.running.is_empty() && s.in_flight.saturating_add(bytes) > budget {
                break;
            }
            let (bytes, read) = s.pending.next()?;
            s.in_flight = s.in_flight.saturating_add(bytes);
            // The read's size comes back with its result, to be taken off what is in flight.
            s.running.push_back(async move { (bytes, read.await) });
        }
        let (bytes, out) = s.running.next().await?;
        s.in_flight -= bytes;
        Some((out, s))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// The most bytes in flight at once, and the results' order, for reads of these sizes.
    async fn run(sizes: &[u64], max: usize, budget: u64) -> (u64, usize, Vec<usize>) {
        let (now, peak) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let (count, peak_count) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let reads = sizes.iter().enumerate().map(|(i, &n)| {
            let (now, peak, count, peak_count) = (now.clone(), peak.clone(), count.clone(), peak_count.clone());
            let read = async move {
                peak.fetch_max(now.fetch_add(n, Ordering::SeqCst) + n, Ordering::SeqCst);
                peak_count.fetch_max(count.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
                // Later reads finish first, so the order comes from the combinator, not the timing.
                tokio::time::sleep(std::time::Duration::from_millis(20 - i as u64 % 20)).await;
                now.fetch_sub(n, Ordering::SeqCst);
                count.fetch_sub(1, Ordering::SeqCst);
                i
            };
            (n, read)
        });
        let order: Vec<usize> = within_budget(reads.collect::<Vec<_>>(), max, budget).collect().await;
        (peak.load(Ordering::SeqCst), peak_count.load(Ordering::SeqCst) as usize, order)
    }

    #[tokio::test]
    async fn bytes_in_flight_stay_within_the_budget_and_results_keep_their_order() {
        const M: u64 = 1 << 20;
        // (case, read sizes, max reads, budget, most bytes in flight, most reads in flight)
        type Case = (&'static str, Vec<u64>, usize, u64, u64, usize);
        let cases: [Case; 5] = [
            ("small reads: bound by the count", vec![4 * M; 12], 4, 16 * M, 16 * M, 4),
            ("large reads: bound by the bytes", vec![40 * M; 6], 16, 64 * M, 40 * M, 1),
            ("a read over the budget runs alone", vec![4 * M, 100 * M, 4 * M], 4, 16 * M, 100 * M, 1),
            ("mixed: fills up to the budget", vec![8 * M, 4 * M, 4 * M, 8 * M, 4 * M], 8, 16 * M, 16 * M, 3),
            ("max 0 is one at a time", vec![M; 5], 0, 64 * M, M, 1),
        ];
        for (case, sizes, max, budget, bytes, reads) in cases {
            let n = sizes.len();
            let (peak, peak_count, order) = run(&sizes, max, budget).await;
            assert_eq!((peak, peak_count), (bytes, reads), "{case}");
            assert_eq!(order, (0..n).collect::<Vec<_>>(), "{case}: results in the reads' order");
        }
    }
}
