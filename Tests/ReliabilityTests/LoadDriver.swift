import Foundation
import TestSupport

/// Keeps `inFlight` requests outstanding against one worker: a sender thread writes the next
/// request whenever a place is free, a reader thread reads each response as it comes and
/// records it with its send and receive times. Nothing sleeps: the sender waits for a free
/// place, the reader for the next line, callers for a number of responses.
final class LoadDriver: @unchecked Sendable {
    struct Sent {
        var method: String
        var tag: String
        var sentAt: Double
    }

    struct Result {
        var id: String
        var method: String
        var tag: String
        var outcome: Outcome
    }

    let worker: WorkerProcess
    private let places: DispatchSemaphore
    private let condition = NSCondition()
    private var sent: [String: Sent] = [:]
    private var sentCount = 0
    private var receivedCount = 0
    private var stopping = false
    private var senderFinished = false
    private var readerFinished = false
    private(set) var results: [Result] = []
    private(set) var failures: [String] = []
    private let next: (Int) -> (method: String, params: WireJSON?, tag: String)?
    private let prefix: String

    /// `next(i)` returns the i-th request (nil: no more); `tag` is kept with its result.
    init(worker: WorkerProcess, inFlight: Int, idPrefix: String = "load",
         next: @escaping (Int) -> (method: String, params: WireJSON?, tag: String)?) {
        self.worker = worker
        places = DispatchSemaphore(value: inFlight)
        self.next = next
        prefix = idPrefix
    }

    func start() {
        let sender = Thread { [self] in sendLoop() }
        sender.name = "load-sender"
        sender.start()
        let reader = Thread { [self] in readLoop() }
        reader.name = "load-reader"
        reader.start()
    }

    private func sendLoop() {
        var index = 0
        while true {
            places.wait()
            condition.lock()
            let stop = stopping
            condition.unlock()
            guard !stop, let request = next(index) else { break }
            let id = "\(prefix)-\(index)"
            condition.lock()
            sent[id] = Sent(method: request.method, tag: request.tag, sentAt: monotonicSeconds())
            sentCount += 1
            condition.broadcast()
            condition.unlock()
            do {
                try worker.sendRequest(request.method, params: request.params, id: .string(id))
            } catch {
                record(failure: "send \(id): \(error)")
                break
            }
            index += 1
        }
        condition.lock()
        senderFinished = true
        condition.broadcast()
        condition.unlock()
    }

    private func readLoop() {
        while true {
            condition.lock()
            while receivedCount == sentCount && !senderFinished { condition.wait() }
            let done = receivedCount == sentCount && senderFinished
            condition.unlock()
            if done { break }
            let response: WorkerResponse
            do {
                response = try worker.readResponse(timeout: 120)
            } catch {
                record(failure: "read: \(error)")
                break
            }
            let now = monotonicSeconds()
            let id = response.id?.stringValue ?? "?"
            condition.lock()
            if let request = sent.removeValue(forKey: id) {
                results.append(Result(id: id, method: request.method, tag: request.tag, outcome: Outcome(
                    sentAt: request.sentAt, receivedAt: now, code: response.code, reason: response.reason, raw: response.raw)))
            } else {
                failures.append("response to no outstanding request: \(response.raw.prefix(300))")
            }
            receivedCount += 1
            condition.broadcast()
            condition.unlock()
            places.signal()
        }
        condition.lock()
        readerFinished = true
        condition.broadcast()
        condition.unlock()
    }

    private func record(failure: String) {
        condition.lock()
        failures.append(failure)
        stopping = true
        condition.broadcast()
        condition.unlock()
        places.signal()
    }

    var receivedSoFar: Int { condition.withLock { receivedCount } }

    /// Blocks until at least `count` responses arrived in total (or the driver stopped).
    func waitForResponses(atLeast count: Int) {
        condition.lock()
        while receivedCount < count && !readerFinished { condition.wait() }
        condition.unlock()
    }

    /// Stops sending, waits for every outstanding response, returns all results.
    @discardableResult
    func stop() -> [Result] {
        condition.lock()
        stopping = true
        condition.broadcast()
        condition.unlock()
        places.signal() // wake a sender waiting for a place
        condition.lock()
        while !readerFinished { condition.wait() }
        let all = results
        condition.unlock()
        return all
    }

    var outstanding: [String: Sent] { condition.withLock { sent } }
}
