import Foundation

/// Leader/followers over a pool of connection slots: who reads stdin next and who runs which
/// job, decided under one lock.
///
/// One thread at a time is the leader and reads requests. When a line gives it a database job
/// and a slot is free, the leader keeps the job and runs it itself, so a request is read and
/// run on the same thread. It promotes an idle follower to leader (`handOverLead`) only when
/// more input is waiting: at once if the reader already holds more bytes, otherwise as soon
/// as stdin becomes readable while the job waits for PostgreSQL (the connection watches stdin
/// during that wait), or before a wait that cannot watch. A leader whose job finished without
/// that keeps leading (`continueLeading`): at one request in flight no other thread ever wakes
/// (thread wake-ups were the largest cost of a request in the worker at low load). With one
/// thread more than slots, some thread is always free to read, so `system.ping` and errors are
/// answered even while every connection is busy. Jobs queue only when every slot is busy and
/// run in arrival order; a thread that finishes a job takes the next queued one with the same slot,
/// together with the queued jobs right behind it that can share its round trip (`runTogether`:
/// single-statement requests, whose transactions then travel in one pipeline).
///
/// Idle slots and idle followers are stacks: at low load the same thread and connection (the
/// backend with warm caches and plans) serve request after request.
final class Scheduler<Job, Slot: AnyObject>: @unchecked Sendable {
    enum Assignment {
        case lead
        case run(Job, Slot)
        /// Consecutive queued jobs that `canShareRoundTrip`, for one slot.
        case runTogether([Job], Slot)
        /// Input ended and nothing is left for this thread.
        case stop
    }

    /// One per thread: where an idle thread waits for its next assignment.
    final class Follower: @unchecked Sendable {
        fileprivate let wakeUp = DispatchSemaphore(value: 0)
        fileprivate var assignment: Assignment?
    }

    private let lock = NSLock()
    private var freeSlots: [Slot]
    private var queued: [Job] = []
    private var head = 0
    private var followers: [Follower] = []
    private var leaderPresent = true // the thread that calls `run` first leads
    private var inputEnded = false

    /// Whether a queued job may run in one round trip with the jobs queued next to it.
    private let canShareRoundTrip: (Job) -> Bool
    private let maxJobsPerRoundTrip: Int

    private let slotCount: Int

    init(slots: [Slot], maxJobsPerRoundTrip: Int = 1, canShareRoundTrip: @escaping (Job) -> Bool = { _ in false }) {
        freeSlots = slots.reversed()
        slotCount = max(1, slots.count)
        self.maxJobsPerRoundTrip = max(1, maxJobsPerRoundTrip)
        self.canShareRoundTrip = canShareRoundTrip
    }

    /// Leader: a free slot for a job it will run itself, if any.
    func reserveSlot() -> Slot? {
        lock.withLock { freeSlots.popLast() }
    }

    /// Leader: a job for another thread — an idle follower if a slot is free, else the queue.
    /// `slot` is one the leader reserved and gives up with the job.
    func submit(_ job: Job, slot reserved: Slot? = nil) {
        lock.lock()
        if let slot = reserved ?? freeSlots.popLast() {
            if let follower = followers.popLast() {
                follower.assignment = .run(job, slot)
                lock.unlock()
                follower.wakeUp.signal()
                return
            }
            freeSlots.append(slot) // a thread between jobs will take it with the job
        }
        queued.append(job)
        lock.unlock()
    }

    /// Leader, about to run its own job: an idle follower takes over reading. With more threads
    /// than slots there is one unless threads are still starting; if not, the first thread to
    /// look for work leads.
    func handOverLead() {
        lock.lock()
        passLeadAndUnlock()
    }

    /// Under the lock, which it releases: an idle follower becomes leader, or the first thread
    /// to look for work will.
    private func passLeadAndUnlock() {
        guard let follower = followers.popLast() else {
            leaderPresent = false
            lock.unlock()
            return
        }
        follower.assignment = .lead
        lock.unlock()
        follower.wakeUp.signal()
    }

    /// Leader that ran its own job without handing over the lead (no input arrived meanwhile):
    /// a queued job runs next on `slot` while a follower leads; otherwise it keeps leading.
    func continueLeading(after slot: Slot) -> Assignment {
        lock.lock()
        guard let assignment = dequeueRun(on: slot) else {
            freeSlots.append(slot)
            lock.unlock()
            return .lead
        }
        passLeadAndUnlock()
        return assignment
    }

    /// Leader: no more requests will be read. Idle followers stop; threads running jobs finish
    /// them and the queue, then stop.
    func endInput() {
        lock.lock()
        inputEnded = true
        leaderPresent = false
        let idle = followers
        followers.removeAll()
        for follower in idle { follower.assignment = .stop }
        lock.unlock()
        for follower in idle { follower.wakeUp.signal() }
    }

    /// What a thread does next after running a job on `slot` (or with nothing in hand): the next
    /// queued job, the vacant lead, or waiting as a follower until given one of those.
    func next(after slot: Slot?, as me: Follower) -> Assignment {
        lock.lock()
        if let slot {
            if let assignment = dequeueRun(on: slot) {
                lock.unlock()
                return assignment
            }
            freeSlots.append(slot)
        }
        if head < queued.count, let free = freeSlots.popLast() {
            let assignment = dequeueRun(on: free)!
            lock.unlock()
            return assignment
        }
        if !inputEnded && !leaderPresent {
            leaderPresent = true
            lock.unlock()
            return .lead
        }
        if inputEnded {
            lock.unlock()
            return .stop // queued jobs, if any, wait for a slot that a running thread holds
        }
        followers.append(me)
        lock.unlock()
        me.wakeUp.wait()
        lock.lock()
        defer { lock.unlock() }
        let assignment = me.assignment!
        me.assignment = nil
        return assignment
    }

    /// Under the lock: the next queued job for `slot`, with the queued jobs after it that can share
    /// its round trip — at most `maxJobsPerRoundTrip`, and at most this slot's share of the queue,
    /// so the other connections get work too and one slow statement holds up fewer requests; nil
    /// if none is queued.
    private func dequeueRun(on slot: Slot) -> Assignment? {
        let share = (queued.count - head + slotCount - 1) / slotCount
        guard let first = dequeue() else { return nil }
        let limit = min(maxJobsPerRoundTrip, share)
        guard limit > 1, canShareRoundTrip(first),
              head < queued.count, canShareRoundTrip(queued[head]) else { return .run(first, slot) }
        var jobs = [first]
        while jobs.count < limit, head < queued.count, canShareRoundTrip(queued[head]) {
            jobs.append(dequeue()!)
        }
        return .runTogether(jobs, slot)
    }

    /// Under the lock.
    private func dequeue() -> Job? {
        guard head < queued.count else { return nil }
        let job = queued[head]
        head += 1
        if head == queued.count {
            queued.removeAll(keepingCapacity: true)
            head = 0
        } else if head > 1024 && head * 2 > queued.count {
            queued.removeFirst(head)
            head = 0
        }
        return job
    }
}
