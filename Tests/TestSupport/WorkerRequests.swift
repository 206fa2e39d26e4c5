import Foundation

/// The JSON-RPC error codes the worker answers with (docs/protocol.md, Errors).
public enum Code {
    public static let parseError = -32700
    public static let invalidRequest = -32600
    public static let methodNotFound = -32601
    public static let invalidParams = -32602
    public static let internalError = -32603
    public static let notFound = -32001
    public static let futureDate = -32002
    public static let habitNotActive = -32003
    public static let invalidState = -32004
    public static let databaseUnavailable = -32010
    public static let timeout = -32011
    public static let conflict = -32012
}

/// A result the test needed but the worker answered with an error (or vice versa).
public struct UnexpectedResponse: Error, CustomStringConvertible {
    public let response: WorkerResponse
    public let expectation: String
    public init(response: WorkerResponse, expectation: String) {
        self.response = response
        self.expectation = expectation
    }
    public var description: String { "expected \(expectation), got \(response.raw)" }
}

extension WorkerProcess {
    /// Calls a method that must succeed and returns its result.
    @discardableResult
    public func call(_ method: String, _ params: WireJSON? = nil) throws -> WireJSON {
        let response = try request(method, params: params)
        guard let result = response.result else { throw UnexpectedResponse(response: response, expectation: "a result for \(method)") }
        return result
    }
}

/// `{"user_id": …}` plus more members, in key order so requests are reproducible.
public func params(_ user: UUID, _ members: [String: WireJSON] = [:]) -> WireJSON {
    .object([.init("user_id", .uuid(user))] + members.sorted { $0.key < $1.key }.map { WireJSON.Member($0.key, $0.value) })
}

extension TestDatabase {
    /// This database's URL as the worker's least-privileged login role, straight to the server.
    public func workerURL() throws -> String { try url(overriding: ["user": "habit_worker"]) }
}

/// A deterministic generator (SplitMix64), so a failing run can be replayed from its seed.
public struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
