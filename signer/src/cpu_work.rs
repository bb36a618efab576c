//! Signing is CPU work: run from async code, it must not hold a runtime
//! worker, or the tasks queued on that worker (a server's UDP misses, TCP
//! queries, the HTTP API) wait for the whole batch.
//!
//! ```text
//!  cpu_work(work): multi-thread runtime ─► block_in_place (the worker's
//!                  queued tasks go to another thread while it runs)
//!                  anything else (a current-thread runtime, no runtime)
//!                  ─► run it here
//! ```

/// Runs `work` (signing, chain relinking) from async code without
/// holding the runtime's worker where the runtime allows.
pub(crate) fn cpu_work<R>(work: impl FnOnce() -> R) -> R {
    let multi = tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    if multi {
        tokio::task::block_in_place(work)
    } else {
        work()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    /// On a runtime of one worker, a task doing CPU work through
    /// `cpu_work` lets another task run meanwhile: the work waits for a
    /// message only that other task sends. Run on the worker itself, the
    /// work would hold the only worker and wait in vain.
    #[test]
    fn cpu_work_leaves_the_worker_to_other_tasks() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let got = rt.block_on(async {
            let (tx, rx) = mpsc::channel::<()>();
            let work = tokio::spawn(async move {
                // Queued behind this task on the same worker.
                let sender = tokio::spawn(async move { tx.send(()).unwrap() });
                let got = cpu_work(|| rx.recv_timeout(Duration::from_secs(10)).is_ok());
                sender.await.unwrap();
                got
            });
            work.await.unwrap()
        });
        assert!(got, "the other task ran while the work waited");
    }

    #[test]
    fn without_a_multi_thread_runtime_the_work_just_runs() {
        assert_eq!(cpu_work(|| 7), 7);
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        assert_eq!(rt.block_on(async { cpu_work(|| 8) }), 8);
    }
}
