// libFuzzer target for Sources/JSONRPC: framing (LineReader/LineWriter), the strict JSON
// parser and serializer, the JSON-RPC codec and ParamsReader.
//
// Not a SwiftPM target. scripts/fuzz.sh compiles this file *together with*
// Sources/JSONRPC/*.swift into one module with `-sanitize=fuzzer,address`, so the code under
// test carries the coverage instrumentation libFuzzer steers by, and ASan catches memory
// errors in its unsafe-pointer code. Being in the same module, the harness also reaches the
// internal helpers (RPCCodec.duplicateKeyPath, JSONNumberGrammar).
//
// A crash is any trap (Swift runtime check, precondition, array bounds), any ASan report, or
// one of the `check` failures below, each an invariant the worker relies on:
//   * framing: LineReader splits any byte stream exactly like a naive reference split (one
//     trailing CR stripped, over-long lines reported with their length, never buffered),
//     whatever the read chunk size, and with or without the wake-fd poll path;
//   * parsing: whatever the parser accepts, the serializer writes as one line (no newline
//     byte) that parses back to the same value and serializes to the same bytes;
//   * codec: every decoded line yields responses that are valid JSON-RPC response objects;
//     accepted requests have params without duplicate keys at any depth; ParamsReader's
//     integer reading agrees with Swift's `Int(_:)` on every integer literal;
//   * writer: LineWriter + LineReader round-trip every response line.

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSONRPC(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input: [UInt8] = (size == 0 || data == nil) ? [] : Array(UnsafeBufferPointer(start: data, count: size))
    FuzzChecks.run(input)
    return 0
}

enum FuzzChecks {
    /// The worker's settings: default line limit, depth 64 (WorkerConfiguration.maxJSONDepth).
    static let workerMaxDepth = 64

    /// (line limit, read chunk size, use a wake fd): the worker's own configuration plus small
    /// limits and chunks that put line and chunk boundaries everywhere.
    static let framings: [(maxLine: Int, chunk: Int, wake: Bool)] = [
        (LineReader.defaultMaxLineBytes, 65_536, true),
        (8, 1, false),
        (64, 7, true),
        (0, 3, false),
    ]

    static func run(_ input: [UInt8]) {
        // A pipe holds 64 KiB; libFuzzer inputs are kept below that by -max_len (fuzz.sh).
        if input.count <= 60_000 {
            for framing in framings { checkFraming(input, framing.maxLine, framing.chunk, framing.wake) }
        }
        for line in referenceLines(input, maxLine: LineReader.defaultMaxLineBytes) {
            if case .line(let bytes) = line { checkLine(bytes) }
        }
        // The whole input as one line as well (newlines inside are JSON whitespace or errors).
        checkLine(input)
    }

    static func check(_ condition: Bool, _ message: @autoclosure () -> String) {
        if !condition {
            let text = "fuzz invariant violated: \(message())\n"
            _ = text.withCString { write(2, $0, strlen($0)) }
            abort()
        }
    }

    // MARK: Framing

    /// What a line reader must report: split on \n; a last piece without \n is a line unless
    /// empty; one trailing \r stripped; longer than `maxLine` → oversized with its length.
    static func referenceLines(_ input: [UInt8], maxLine: Int) -> [LineEvent] {
        var pieces = input.split(separator: 0x0A, omittingEmptySubsequences: false).map(Array.init)
        if pieces.last?.isEmpty == true { pieces.removeLast() }
        return pieces.map { piece in
            var line = piece
            if line.last == 0x0D { line.removeLast() }
            return line.count > maxLine ? .oversized(byteCount: line.count) : .line(line)
        }
    }

    static func makePipe() -> (Int32, Int32) {
        var fds: [Int32] = [-1, -1]
        check(pipe(&fds) == 0, "pipe failed: errno \(errno)")
        return (fds[0], fds[1])
    }

    static func writeAll(_ fd: Int32, _ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, bytes.count - offset) }
            if n < 0 && errno == EINTR { continue }
            check(n > 0, "write to pipe failed: errno \(errno)")
            offset += n
        }
    }

    static func checkFraming(_ input: [UInt8], _ maxLine: Int, _ chunk: Int, _ useWake: Bool) {
        let (readEnd, writeEnd) = makePipe()
        defer { close(readEnd) }
        writeAll(writeEnd, input)
        close(writeEnd)
        var wake: (Int32, Int32)?
        if useWake { wake = makePipe() }
        defer { if let wake { close(wake.0); close(wake.1) } }

        let reader = LineReader(fileDescriptor: readEnd, wakeFileDescriptor: wake?.0, maxLineBytes: maxLine, readChunkSize: chunk)
        var events: [LineEvent] = []
        while true {
            let event: LineEvent
            do { event = try reader.next() } catch {
                check(false, "LineReader threw \(error) on a pipe")
                return
            }
            if event == .endOfFile { break }
            events.append(event)
            check(events.count <= input.count + 1, "LineReader reported more lines than bytes")
        }
        check(reader.next2() == .endOfFile, "LineReader did not stay at end of file")
        let expected = referenceLines(input, maxLine: maxLine)
        if events != expected {
            let index = zip(events, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(events.count, expected.count)
            let got = index < events.count ? "\(events[index])".prefix(200) : "nothing"
            let want = index < expected.count ? "\(expected[index])".prefix(200) : "nothing"
            check(false, "framing (max \(maxLine), chunk \(chunk)): event \(index) is \(got), reference \(want)")
        }
        // Memory bound: the partial-line buffer never holds more than the limit plus a CR.
        check(reader.peakBufferedBytes <= maxLine + 1, "LineReader buffered \(reader.peakBufferedBytes) bytes with limit \(maxLine)")
    }

    // MARK: Lines

    static func checkLine(_ line: [UInt8]) {
        checkParserRoundTrip(line)
        switch RPCCodec.decode(line: line, maxDepth: workerMaxDepth) {
        case .blank:
            check(line.allSatisfy { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D || $0 == 0x0A }, "non-blank line decoded as blank")
        case .invalid(let error):
            check(error.code == .parseError || error.code == .invalidRequest, "line-level error with code \(error.code)")
            checkResponse(.error(id: .null, error: error))
        case .single(let message):
            checkMessage(message)
        case .batch(let messages):
            check(!messages.isEmpty, "empty batch decoded as a batch")
            var responses: [OutgoingResponse] = []
            for message in messages {
                if let response = checkMessage(message) { responses.append(response) }
            }
            var bytes: [UInt8] = []
            let wrote = OutgoingResponse.encodeBatch(responses, into: &bytes)
            check(wrote == !responses.isEmpty, "encodeBatch return value")
            if wrote { checkResponseBytes(bytes, batchCount: responses.count) }
        }
    }

    /// Checks one decoded message and returns the response a worker would send for it
    /// (a request is answered with its own params as the result).
    @discardableResult
    static func checkMessage(_ message: DecodedMessage) -> OutgoingResponse? {
        switch message {
        case .invalid(let id, let error):
            check([-32600, -32602].contains(error.code.rawValue), "message-level error with code \(error.code)")
            let response = OutgoingResponse.error(id: id, error: error)
            checkResponse(response)
            return response
        case .invalidNotification(_, let error):
            check(error.code == .invalidParams, "dropped notification with code \(error.code)")
            return nil
        case .request(let request):
            if let params = request.params {
                check(RPCCodec.duplicateKeyPath(in: .object(params)) == nil, "accepted params with a duplicate key")
                checkParams(params)
            }
            guard let id = request.id else { return nil }
            let response = OutgoingResponse.result(id: id, result: .object(request.params ?? JSONObject()))
            checkResponse(response)
            return response
        }
    }

    static func checkParams(_ params: JSONObject) {
        let reader: ParamsReader
        do { reader = try ParamsReader(params) } catch {
            check(false, "ParamsReader refused params the codec accepted: \(error)")
            return
        }
        for member in params.members {
            let key = member.key
            _ = try? reader.optionalString(key)
            _ = try? reader.optionalBool(key)
            _ = try? reader.optionalObject(key)
            _ = try? reader.optionalArray(key)
            _ = try? reader.requiredValue(key)
            _ = try? reader.requiredString(key)
            _ = try? reader.requiredInt(key, range: Int(Int32.min)...Int(Int32.max))
            let int = try? reader.optionalInt(key)
            if case .number(let literal) = member.value {
                check(JSONNumberGrammar.isValid(literal), "parser produced an invalid number literal")
                let isIntegerLiteral = literal.utf8.allSatisfy { JSONNumberGrammar.isDigit($0) || $0 == UInt8(ascii: "-") }
                if isIntegerLiteral {
                    // Differential: the hand-written accumulator against the standard library.
                    check(JSONNumberGrammar.exactInt(literal) == Int(literal), "exactInt(\(literal.prefix(40))) disagrees with Int()")
                    check(int.flatMap { $0 } == Int(literal), "optionalInt(\(literal.prefix(40))) disagrees with Int()")
                } else {
                    check(JSONNumberGrammar.exactInt(literal) == nil, "exactInt accepted a non-integer literal")
                }
            }
        }
        do {
            try reader.rejectUnknownKeys(allowed: [])
            check(params.isEmpty, "rejectUnknownKeys accepted keys outside an empty set")
        } catch {
            check(!params.isEmpty, "rejectUnknownKeys refused empty params")
        }
    }

    // MARK: Values

    static func checkParserRoundTrip(_ line: [UInt8]) {
        let value: JSONValue
        do { value = try JSONParser.parse(line) } catch {
            check(error.offset >= 0 && error.offset <= line.count, "parse error offset \(error.offset) outside 0...\(line.count)")
            return
        }
        let written = value.jsonBytes
        check(!written.contains(0x0A), "serializer wrote a newline byte")
        let again: JSONValue
        do { again = try JSONParser.parse(written) } catch {
            check(false, "serializer output does not parse: \(error)")
            return
        }
        check(again == value, "parse(write(v)) != v")
        check(again.jsonBytes == written, "write(parse(write(v))) != write(v)")
    }

    static func checkResponse(_ response: OutgoingResponse) {
        checkResponseBytes(response.encoded, batchCount: nil)
    }

    /// The bytes parse as one response object (or an array of `batchCount`), as JSON-RPC
    /// requires, and survive LineWriter → pipe → LineReader unchanged.
    static func checkResponseBytes(_ bytes: [UInt8], batchCount: Int?) {
        check(!bytes.contains(0x0A), "response contains a newline byte")
        let value: JSONValue
        do { value = try JSONParser.parse(bytes) } catch {
            check(false, "response does not parse: \(error)")
            return
        }
        if let batchCount {
            guard case .array(let elements) = value else { return check(false, "batch response is not an array") }
            check(elements.count == batchCount, "batch response has \(elements.count) entries, expected \(batchCount)")
            for element in elements { checkResponseShape(element) }
        } else {
            checkResponseShape(value)
        }
        if bytes.count < 32_768 { checkWriterRoundTrip(bytes) }
    }

    static func checkResponseShape(_ value: JSONValue) {
        guard case .object(let object) = value else { return check(false, "response is not an object") }
        check(!object.hasDuplicateKeys, "response has duplicate members")
        check(object["jsonrpc"] == .string("2.0"), "response jsonrpc is not 2.0")
        switch object["id"] {
        case .string?, .number?, .null?: break
        default: check(false, "response id missing or of a wrong type")
        }
        let hasResult = object["result"] != nil
        let hasError = object["error"] != nil
        check(hasResult != hasError && object.count == 3, "response needs exactly jsonrpc, id and one of result/error")
        if let error = object["error"] {
            check(error["code"]?.intValue != nil, "error.code is not an integer")
            check(error["message"]?.stringValue != nil, "error.message is not a string")
        }
    }

    static func checkWriterRoundTrip(_ bytes: [UInt8]) {
        let (readEnd, writeEnd) = makePipe()
        defer { close(readEnd) }
        let writer = LineWriter(fileDescriptor: writeEnd)
        do { try writer.writeLine(bytes) } catch {
            check(false, "LineWriter refused a response line: \(error)")
        }
        close(writeEnd)
        let reader = LineReader(fileDescriptor: readEnd)
        let first = try? reader.next()
        check(first == .line(bytes), "LineWriter → LineReader changed the line")
        check((try? reader.next()) == .endOfFile, "LineWriter wrote more than one line")
    }
}

extension LineReader {
    /// `next()` without the typed throw, for a one-line check.
    fileprivate func next2() -> LineEvent? { try? next() }
}
