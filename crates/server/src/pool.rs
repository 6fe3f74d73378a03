//! Threads of the lowest CPU priority for best-effort statements (DB-OS co-design): the
//! operating system's scheduler then gives latency-sensitive statements, which run on
//! ordinary threads, the processors first, and a running analytic query is preempted rather
//! than waited for. There are fewer of them than processors, so one is always left over.

use std::sync::mpsc;

type Job = Box<dyn FnOnce() + Send>;

pub struct LowPriorityPool {
    sender: parking_lot::Mutex<mpsc::Sender<Job>>,
}

impl LowPriorityPool {
    pub fn new(threads: usize) -> LowPriorityPool {
        let (sender, receiver) = mpsc::channel::<Job>();
        let receiver = std::sync::Arc::new(parking_lot::Mutex::new(receiver));
        for number in 0..threads {
            let receiver = receiver.clone();
            std::thread::Builder::new()
                .name(format!("tern-best-effort-{number}"))
                .spawn(move || {
                    lower_priority();
                    loop {
                        let job = receiver.lock().recv();
                        match job {
                            Ok(job) => job(),
                            Err(_) => return,
                        }
                    }
                })
                .expect("spawning a best-effort thread");
        }
        LowPriorityPool { sender: parking_lot::Mutex::new(sender) }
    }

    pub fn spawn(&self, job: Job) {
        // The threads live as long as the pool: sending cannot fail.
        let _ = self.sender.lock().send(job);
    }
}

/// Sets the calling thread's nice value to 19 (Linux: per thread). Raising one's own nice
/// value needs no privilege.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    unsafe {
        // SAFETY: gettid and setpriority have no memory-safety preconditions.
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, 19);
    }
}
