#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Testing
@testable import JSONRPC

/// Replays the regression corpus `Tests/JSONRPCTests/FailCases/`: inputs that once broke (or
/// nearly broke) framing or decoding, and every crash the fuzzer (scripts/fuzz.sh) ever finds.
///
/// Each file holds one line, read from the file's descriptor by `LineReader` exactly as the
/// worker reads stdin. Its name is `<class>--<description>`; the class is what
/// `RPCCodec.decode(line:maxDepth: 64)` (the worker's settings) must make of it:
///
/// | class | decoded as |
/// |---|---|
/// | `blank` | `.blank` |
/// | `parse-error` | a -32700 for the whole line |
/// | `invalid-request` | a -32600, for the whole line or the one message |
/// | `invalid-params` | a -32602 answered with the request's id |
/// | `dropped-notification` | a notification whose error is never sent |
/// | `request` / `notification` | a valid request with / without an id |
/// | `batch` | a non-empty batch |
///
/// "Never traps" is checked by running at all: a trap would end the test process. Each case
/// also checks that the responses it leads to are valid JSON that parses back, and that
/// whatever parses serializes and re-parses to the same value.
@Suite("JSONRPC: FailCases regression corpus")
struct FailCasesTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("FailCases")

    static let classes: Set<String> = [
        "blank", "parse-error", "invalid-request", "invalid-params", "dropped-notification", "request", "notification", "batch",
    ]

    static var caseNames: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).filter { !$0.hasPrefix(".") }.sorted()
    }

    @Test("the corpus is there and every file is named <class>--<description>")
    func corpusIsThere() {
        let names = Self.caseNames
        #expect(names.count >= 50, "FailCases holds \(names.count) files at \(Self.directory.path)")
        for name in names {
            let expected = name.components(separatedBy: "--").first ?? ""
            #expect(Self.classes.contains(expected) && name.contains("--"), "\(name): unknown class \(expected)")
        }
    }

    @Test("each case frames as one line and decodes, without trapping, into its class", arguments: FailCasesTests.caseNames)
    func replay(name: String) throws {
        let line = try Self.readOneLine(Self.directory.appendingPathComponent(name).path)
        let expected = name.components(separatedBy: "--").first ?? ""
        let decoded = RPCCodec.decode(line: line, maxDepth: 64)
        #expect(Self.classify(decoded) == expected, "\(name) decoded as \(decoded)")
        for response in Self.responses(for: decoded) {
            let value = try JSONParser.parse(response)
            #expect(!response.contains(0x0A), "\(name): response contains a newline")
            #expect(value.arrayValue != nil || value["jsonrpc"] == "2.0", "\(name): response \(String(decoding: response, as: UTF8.self))")
        }
        if let value = try? JSONParser.parse(line) {
            let written = value.jsonBytes
            let again = try JSONParser.parse(written)
            #expect(again == value, "\(name): parse(write(v)) != v")
            #expect(again.jsonBytes == written, "\(name): serialization is not stable")
        }
    }

    /// The class of a decoded line (see the table above).
    static func classify(_ decoded: DecodedLine) -> String {
        switch decoded {
        case .blank:
            return "blank"
        case .invalid(let error):
            return error.code == .parseError ? "parse-error" : error.code == .invalidRequest ? "invalid-request" : "line-\(error.code)"
        case .batch:
            return "batch"
        case .single(.request(let request)):
            return request.isNotification ? "notification" : "request"
        case .single(.invalidNotification):
            return "dropped-notification"
        case .single(.invalid(_, let error)):
            return error.code == .invalidRequest ? "invalid-request" : error.code == .invalidParams ? "invalid-params" : "message-\(error.code)"
        }
    }

    /// What a worker writes for the line: valid requests are answered with their params.
    static func responses(for decoded: DecodedLine) -> [[UInt8]] {
        func answer(_ message: DecodedMessage) -> OutgoingResponse? {
            switch message {
            case .request(let request): request.id.map { .result(id: $0, result: .object(request.params ?? JSONObject())) }
            case .invalid(let id, let error): .error(id: id, error: error)
            case .invalidNotification: nil
            }
        }
        switch decoded {
        case .blank: return []
        case .invalid(let error): return [OutgoingResponse.error(id: .null, error: error).encoded]
        case .single(let message): return answer(message).map { [$0.encoded] } ?? []
        case .batch(let messages):
            var out: [UInt8] = []
            return OutgoingResponse.encodeBatch(messages.compactMap(answer), into: &out) ? [out] : []
        }
    }

    /// The file's single line, read through `LineReader` from the file's own descriptor.
    static func readOneLine(_ path: String) throws -> [UInt8] {
        let fd = open(path, O_RDONLY)
        try #require(fd >= 0, "cannot open \(path)")
        defer { close(fd) }
        let reader = LineReader(fileDescriptor: fd, readChunkSize: 4_096)
        let first = try reader.next()
        let second = try reader.next()
        #expect(second == .endOfFile, "\(path) holds more than one line")
        guard case .line(let bytes) = first else {
            Issue.record("\(path): expected one line, got \(first)")
            return []
        }
        return bytes
    }
}
