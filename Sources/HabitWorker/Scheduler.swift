import Foundation

/// Leader/followers over a pool of connection slots: who reads stdin next and who runs which
/// job, decided under one lock.
///
/// One thread at a time is the leader and reads requests. When a line gives it a database job
/// and a slot is free, the leader keeps the job and runs it itself, so a request is read and
/// run on the same thread. It promotes an idle follower to leader (`handOverLead`) only when
/// more input is waiting: at once if the reader already holds more bytes, otherwise as soon
/// as stdin becomes readable while the job waits for PostgreSQL (the connection watches stdin
/// during that wait), or before a wait that cannot watch (`LeadHandOver`). A leader whose job
/// finished without that keeps leading (`continueLeading`): at one request in flight no other
/// thread ever wakes (thread wake-ups were the largest cost of a request in the worker at low
/// load). With one thread more than slots, some thread is always free to read, so
/// `system.ping` and errors are answered even while every connection is busy. Jobs queue only
/// when every slot is busy and run in arrival order; a thread that finishes a job takes the
/// next queued one with the same slot, together with the queued jobs right behind it that can
/// share its round trip (`runTogether`: single-statement requests, whose transactions then
/// travel in one pipeline).
///
/// **A user's jobs run one after another, in the order they were accepted** (lines in order;
/// within a batch, element order). Per user with a job released — kept by the leader, queued
/// or running — the scheduler holds that user's later jobs in a FIFO of their own; when the
/// user's released job finishes, the next one of the FIFO is released into the run queue at
/// its arrival position, so it does not lose its turn to jobs of other users that arrived
/// after it. The leader keeps a job for itself only if its user has nothing released. Jobs of
/// different users, and jobs without a user (`userOf` nil: `system.*`), run in parallel as
/// before. A round trip may carry several jobs of one user when they can share it: they are
/// taken from the head of that user's FIFO, in order, and a pipeline runs in order.
///
/// Waiting jobs hold in-flight places, but the job each waits for is always released: it
/// runs on a slot that a finishing thread frees (a finishing thread looks at the queue before
/// anything else), or is the leader's own, which the leader gives away before it waits for a
/// place (`give`). So neither `--max-in-flight` nor a pool of one can stall the queue.
///
/// Idle slots and idle followers are stacks: at low load the same thread and connection (the
/// backend with warm caches and plans) serve request after request.
final class Scheduler<Job, Slot: AnyObject>: @unchecked Sendable {
    enum Assignment {
        case lead
        case run(Job, Slot)
        /// Queued jobs that `canShareRoundTrip`, for one slot, in arrival order.
        case runTogether([Job], Slot)
        /// Input ended and nothing is left for this thread.
        case stop
    }

    /// One per thread: where an idle thread waits for its next assignment.
    final class Follower: @unchecked Sendable {
        fileprivate let wakeUp = DispatchSemaphore(value: 0)
        fileprivate var assignment: Assignment?
    }

    /// A job with its place in the order of arrival.
    private struct Entry {
        let job: Job
        let arrival: UInt64
    }

    /// A user with jobs released: how many (more than one only within a shared round trip),
    /// and the user's later jobs, oldest first.
    private struct UserLine {
        var released = 1
        var waiting: [Entry] = []
    }

    private let lock = NSLock()
    private var freeSlots: [Slot]
    /// Released jobs waiting for a slot, in arrival order from `head` on.
    private var queued: [Entry] = []
    private var head = 0
    private var users: [UUID: UserLine] = [:]
    /// Jobs in the users' FIFOs, all together.
    private var waitingCount = 0
    private var arrivals: UInt64 = 0
    private var followers: [Follower] = []
    private var leaderPresent = true // the thread that calls `run` first leads
    private var inputEnded = false

    /// Whether a queued job may run in one round trip with the jobs queued next to it.
    private let canShareRoundTrip: (Job) -> Bool
    /// The user whose jobs must run in order; nil for a job that may run any time.
    private let userOf: (Job) -> UUID?
    private let maxJobsPerRoundTrip: Int

    private let slotCount: Int

    init(slots: [Slot], maxJobsPerRoundTrip: Int = 1, canShareRoundTrip: @escaping (Job) -> Bool = { _ in false },
         userOf: @escaping (Job) -> UUID? = { _ in nil }) {
        freeSlots = slots.reversed()
        slotCount = max(1, slots.count)
        self.maxJobsPerRoundTrip = max(1, maxJobsPerRoundTrip)
        self.canShareRoundTrip = canShareRoundTrip
        self.userOf = userOf
    }

    /// Any thread before its first job: a free slot to connect early with (hand it back with `next`).
    func reserveSlot() -> Slot? {
        lock.withLock { freeSlots.popLast() }
    }

    /// Leader: a job it read, in reading order. With `keep`, returns a free slot when the
    /// leader may run the job itself now (nothing of its user is released and a slot is free);
    /// otherwise, and always without `keep`, the job goes to an idle follower, the queue, or
    /// its user's FIFO, and this returns nil.
    func accept(_ job: Job, keep: Bool) -> Slot? {
        lock.lock()
        arrivals += 1
        let entry = Entry(job: job, arrival: arrivals)
        if let user = userOf(job) {
            if let index = users.index(forKey: user) {
                users.values[index].waiting.append(entry)
                waitingCount += 1
                lock.unlock()
                return nil
            }
            users[user] = UserLine()
        }
        if keep, let slot = freeSlots.popLast() {
            lock.unlock()
            return slot
        }
        releaseAndUnlock(entry, slot: nil)
        return nil
    }

    /// Leader: gives a job it kept (`accept` returned `slot`) to another thread, with the
    /// slot, before accepting another job.
    func give(_ job: Job, slot: Slot) {
        lock.lock()
        releaseAndUnlock(Entry(job: job, arrival: arrivals), slot: slot)
    }

    /// Under the lock, which it releases: a released job to an idle follower if a slot is free
    /// (`slot`, or one of the free ones), else to the queue.
    private func releaseAndUnlock(_ entry: Entry, slot reserved: Slot?) {
        if let slot = reserved ?? freeSlots.popLast() {
            if let follower = followers.popLast() {
                follower.assignment = .run(entry.job, slot)
                lock.unlock()
                follower.wakeUp.signal()
                return
            }
            freeSlots.append(slot) // a thread between jobs will take it with the job
        }
        enqueue(entry)
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

    /// Leader that ran its own `job` without handing over the lead (no input arrived meanwhile):
    /// a queued job runs next on `slot` while a follower leads; otherwise it keeps leading.
    func continueLeading(after slot: Slot, finished job: Job) -> Assignment {
        lock.lock()
        finish(job)
        guard let assignment = dequeueRun(on: slot) else {
            freeSlots.append(slot)
            lock.unlock()
            return .lead
        }
        let woken = assignIdleFollowers()
        passLeadAndUnlock()
        for follower in woken { follower.wakeUp.signal() }
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

    /// What a thread does next after running `finished` on `slot` (or with nothing in hand): the
    /// next queued job, the vacant lead, or waiting as a follower until given one of those.
    func next<Finished: Sequence<Job>>(after slot: Slot?, finished: Finished, as me: Follower) -> Assignment {
        lock.lock()
        for job in finished { finish(job) }
        // The slot just used goes back on top of the stack: the next queued job runs on it.
        if let slot { freeSlots.append(slot) }
        if head < queued.count, let free = freeSlots.popLast() {
            let assignment = dequeueRun(on: free)!
            let woken = assignIdleFollowers()
            lock.unlock()
            for follower in woken { follower.wakeUp.signal() }
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

    /// Under the lock: `job` is done. If it was the last released job of its user, the user's
    /// next job is released into the queue.
    private func finish(_ job: Job) {
        guard let user = userOf(job), let index = users.index(forKey: user) else { return }
        users.values[index].released -= 1
        guard users.values[index].released == 0 else { return }
        guard !users.values[index].waiting.isEmpty else {
            users.remove(at: index)
            return
        }
        let next = users.values[index].waiting.removeFirst()
        waitingCount -= 1
        users.values[index].released = 1
        enqueue(next)
    }

    /// Under the lock: queued jobs for idle followers while slots are free (jobs a finishing
    /// job released, beyond the one its thread takes). The caller wakes them after unlocking.
    private func assignIdleFollowers() -> [Follower] {
        var woken: [Follower] = []
        while head < queued.count, !followers.isEmpty, let free = freeSlots.popLast() {
            let follower = followers.removeLast()
            follower.assignment = dequeueRun(on: free)!
            woken.append(follower)
        }
        return woken
    }

    /// Under the lock: the next queued job for `slot`, with the jobs after it that can share
    /// its round trip — queued right behind it, or next in the FIFO of a user already in the
    /// round trip. At most `maxJobsPerRoundTrip`, and at most this slot's share of the jobs
    /// waiting, so the other connections get work too and one slow statement holds up fewer
    /// requests; nil if none is queued.
    private func dequeueRun(on slot: Slot) -> Assignment? {
        let share = (queued.count - head + waitingCount + slotCount - 1) / slotCount
        guard let first = dequeue() else { return nil }
        let limit = min(maxJobsPerRoundTrip, share)
        guard limit > 1, canShareRoundTrip(first) else { return .run(first, slot) }
        var jobs = [first]
        takeWaiting(behind: first, into: &jobs, limit: limit)
        while jobs.count < limit, head < queued.count, canShareRoundTrip(queued[head].job) {
            let job = dequeue()!
            jobs.append(job)
            takeWaiting(behind: job, into: &jobs, limit: limit)
        }
        return jobs.count == 1 ? .run(first, slot) : .runTogether(jobs, slot)
    }

    /// Under the lock: the jobs at the head of the FIFO of `job`'s user that can share its
    /// round trip, released with it. Only statements that commute may be grouped so (today:
    /// reads): `Connection.transactions` re-runs a transaction that failed on a lost prepared
    /// statement name after the ones sent behind it, so a user's grouped writes could swap.
    private func takeWaiting(behind job: Job, into jobs: inout [Job], limit: Int) {
        guard jobs.count < limit, let user = userOf(job), let index = users.index(forKey: user) else { return }
        while jobs.count < limit, let next = users.values[index].waiting.first, canShareRoundTrip(next.job) {
            users.values[index].waiting.removeFirst()
            users.values[index].released += 1
            waitingCount -= 1
            jobs.append(next.job)
        }
    }

    /// Under the lock: adds a released job at its arrival position (behind every job that
    /// arrived before it, ahead of the later ones).
    private func enqueue(_ entry: Entry) {
        guard let last = queued.last, head < queued.count, last.arrival > entry.arrival else {
            queued.append(entry)
            return
        }
        var low = head
        var high = queued.count - 1 // queued[high] arrived after `entry`
        while low < high {
            let middle = (low + high) / 2
            if queued[middle].arrival > entry.arrival { high = middle } else { low = middle + 1 }
        }
        queued.insert(entry, at: low)
    }

    /// Under the lock.
    private func dequeue() -> Job? {
        guard head < queued.count else { return nil }
        let job = queued[head].job
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

/// The lead of a thread that read a job and runs it itself: handed over at most once, when the
/// job must wait without watching stdin, once input arrives while it waits for PostgreSQL, or
/// before writing its response might block. One per thread, armed for each job it keeps.
final class LeadHandOver {
    private let pass: () -> Void
    /// Whether the lead was handed over since `arm` (or never armed).
    private(set) var done = true

    init(_ pass: @escaping () -> Void) { self.pass = pass }

    /// The thread leads again and runs its own job.
    func arm() { done = false }

    func callAsFunction() {
        guard !done else { return }
        done = true
        pass()
    }
}
