import Foundation

/// Runs `body` on `count` threads released together (so they really overlap) and returns
/// the errors they threw.
public func runConcurrently(_ count: Int, _ body: @escaping @Sendable (Int) throws -> Void) -> [Error] {
    let errors = LockedBox<[Error]>([])
    let ready = DispatchGroup()
    let done = DispatchGroup()
    let start = DispatchSemaphore(value: 0)
    for index in 0..<count {
        ready.enter()
        done.enter()
        let thread = Thread {
            ready.leave()
            start.wait()
            do { try body(index) } catch { errors.withValue { $0.append(error) } }
            done.leave()
        }
        thread.stackSize = 1 << 20
        thread.start()
    }
    ready.wait()
    for _ in 0..<count { start.signal() }
    done.wait()
    return errors.withValue { $0 }
}

/// A value guarded by a lock, for results gathered from several threads.
public final class LockedBox<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value
    public init(_ value: Value) { self.value = value }
    public func withValue<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
