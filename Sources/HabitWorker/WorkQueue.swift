import Foundation

/// A FIFO of jobs shared by the database threads. `take()` blocks until a job arrives or the
/// queue is closed and empty, so threads drain every accepted job before they stop.
final class WorkQueue<Job>: @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [Job] = []
    private var head = 0
    private var closed = false

    func put(_ job: Job) {
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    func take() -> Job? {
        condition.lock()
        defer { condition.unlock() }
        while head == jobs.count && !closed { condition.wait() }
        guard head < jobs.count else { return nil }
        let job = jobs[head]
        head += 1
        if head > 1024 && head * 2 > jobs.count {
            jobs.removeFirst(head)
            head = 0
        }
        return job
    }

    func close() {
        condition.lock()
        closed = true
        condition.broadcast()
        condition.unlock()
    }
}
