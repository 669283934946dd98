//! The kernel scheduling policy of the I/O threads.
//!
//! An I/O thread and a worker thread often share a core (always in the
//! single-core benchmarks, and on any machine busier than it has cores).
//! Under the default policy (`SCHED_OTHER`) every packet that arrives wakes
//! the sleeping I/O thread, and the kernel lets a freshly woken thread
//! preempt the running one: the worker was switched out in the middle of
//! its batch, the I/O thread read a connection or two and slept again, and
//! the worker came back, one context switch per few requests. Under
//! `SCHED_BATCH` a woken thread does not preempt; the I/O thread runs when
//! the worker blocks (its batch handled) or its time slice ends, and then
//! finds every connection that became ready meanwhile. Measured on the
//! pinned HTTP benchmark (`http-hello`, 16 pipelined requests on 100
//! connections, server on one core): one context switch per 47 requests
//! became one per 380, and 720k req/s became 857k. On an idle core nothing
//! changes: a woken thread that need not preempt anyone runs at once.

use crate::config::IoScheduling;

/// Put the calling thread under `policy`. A refusal (a sandbox that
/// forbids `sched_setscheduler`) leaves the thread as it was: the policy is
/// a performance choice, never a condition for serving.
pub(crate) fn apply(policy: IoScheduling) {
    match policy {
        IoScheduling::Batch => set_batch(),
        IoScheduling::Normal => {}
    }
}

#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn set_batch() {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: `param` is a live, initialised `sched_param` that the kernel
    // only reads; pid 0 names the calling thread, and SCHED_BATCH takes
    // priority 0. The call touches no memory of ours beyond `param`.
    let _ = unsafe { libc::sched_setscheduler(0, libc::SCHED_BATCH, &param) };
}

#[cfg(not(target_os = "linux"))]
fn set_batch() {}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[allow(unsafe_code)]
    fn current_policy() -> i32 {
        // SAFETY: no arguments but pid 0 (the calling thread).
        unsafe { libc::sched_getscheduler(0) }
    }

    #[test]
    fn each_policy_puts_a_new_thread_under_its_kernel_policy() {
        for (policy, expected) in [
            (IoScheduling::Batch, libc::SCHED_BATCH),
            // Normal leaves the thread as it was.
            (IoScheduling::Normal, libc::SCHED_OTHER),
        ] {
            let actual = std::thread::spawn(move || {
                apply(policy);
                current_policy()
            })
            .join()
            .unwrap();
            assert_eq!(actual, expected, "{policy:?}");
        }
    }
}
