import Foundation

/// The jobs shared by the database threads. `take()` blocks until a job arrives or the queue
/// is closed and drained, so threads finish every accepted job before they stop.
///
/// Idle threads wait on a stack: a new job goes to the thread that went idle last. At low
/// load the same thread (and the same PostgreSQL backend, with warm caches and plans) serves
/// request after request, instead of the work rotating through every connection.
final class WorkQueue<Job>: @unchecked Sendable {
    /// One per database thread: where a job is handed over directly.
    final class Waiter: @unchecked Sendable {
        fileprivate let wakeUp = DispatchSemaphore(value: 0)
        fileprivate var handedOver: Job?
    }

    private let lock = NSLock()
    private var jobs: [Job] = []
    private var head = 0
    private var idle: [Waiter] = []
    private var closed = false

    func put(_ job: Job) {
        lock.lock()
        if let waiter = idle.popLast() {
            waiter.handedOver = job
            lock.unlock()
            waiter.wakeUp.signal()
            return
        }
        jobs.append(job)
        lock.unlock()
    }

    /// The next job for the thread owning `waiter`, or nil once closed and drained.
    func take(as waiter: Waiter) -> Job? {
        lock.lock()
        if head < jobs.count {
            let job = jobs[head]
            head += 1
            if head > 1024 && head * 2 > jobs.count {
                jobs.removeFirst(head)
                head = 0
            }
            lock.unlock()
            return job
        }
        if closed {
            lock.unlock()
            return nil
        }
        idle.append(waiter)
        lock.unlock()
        waiter.wakeUp.wait()
        lock.lock()
        defer { lock.unlock() }
        let job = waiter.handedOver
        waiter.handedOver = nil
        return job // nil: woken by close()
    }

    func close() {
        lock.lock()
        closed = true
        let sleepers = idle
        idle.removeAll()
        lock.unlock()
        for sleeper in sleepers { sleeper.wakeUp.signal() }
    }
}
