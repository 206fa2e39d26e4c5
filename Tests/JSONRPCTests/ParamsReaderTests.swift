import Testing
@testable import JSONRPC

private func reader(_ json: String) throws -> ParamsReader {
    let value = try JSONParser.parse(Array(json.utf8))
    let object: JSONObject = try #require(value.objectValue)
    return try ParamsReader(object)
}

private func field(_ error: RPCError) -> String? { error.data?["field"]?.stringValue }
private func reason(_ error: RPCError) -> String? { error.data?["reason"]?.stringValue }
private func message(_ error: RPCError) -> String? { error.data?["message"]?.stringValue }

/// The code that goes with each message these tests expect.
private func code(for message: String) -> RPCReason {
    switch message {
    case "missing", "must not be null": .required
    case "duplicate key": .duplicateKey
    case "unknown key: not a param of this method": .unknownKey
    case _ where message.hasPrefix("out of range"): .outOfRange
    case _ where message.hasPrefix("expected \""): .invalidChoice
    case _ where message.hasPrefix("expected a"): .wrongType
    default: .internalError  // matches no accessor's failure
    }
}

/// Runs `body`, expecting invalid params for `expectedField` with `expectedMessage` in
/// data.message and its code (`reason`, by default the one `code(for:)` gives) in data.reason.
private func expectInvalid(
    _ expectedField: String, _ expectedMessage: String, reason expectedReason: RPCReason? = nil,
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () throws -> Void
) {
    do {
        try body()
        Issue.record("expected invalid params for \(expectedField)", sourceLocation: sourceLocation)
    } catch let error as RPCError {
        #expect(error.code == .invalidParams, sourceLocation: sourceLocation)
        #expect(field(error) == expectedField, sourceLocation: sourceLocation)
        #expect(message(error) == expectedMessage, sourceLocation: sourceLocation)
        #expect(reason(error) == (expectedReason ?? code(for: expectedMessage)).rawValue, sourceLocation: sourceLocation)
    } catch {
        Issue.record("unexpected error \(error)", sourceLocation: sourceLocation)
    }
}

@Suite struct ParamsReaderTests {
    @Test func strings() throws {
        let p = try reader(#"{"s":"x","n":null,"i":1}"#)
        #expect(try p.requiredString("s") == "x")
        #expect(try p.optionalString("s") == "x")
        #expect(try p.optionalString("n") == nil)
        #expect(try p.optionalString("missing") == nil)
        expectInvalid("missing", "missing") { _ = try p.requiredString("missing") }
        expectInvalid("n", "must not be null") { _ = try p.requiredString("n") }
        expectInvalid("i", "expected a string") { _ = try p.requiredString("i") }
        expectInvalid("i", "expected a string") { _ = try p.optionalString("i") }
    }

    @Test func bools() throws {
        let p = try reader(#"{"t":true,"f":false,"n":null,"s":"true","i":1}"#)
        #expect(try p.requiredBool("t") == true)
        #expect(try p.requiredBool("f") == false)
        #expect(try p.optionalBool("n") == nil)
        #expect(try p.optionalBool("missing") == nil)
        expectInvalid("s", "expected a boolean") { _ = try p.requiredBool("s") }
        expectInvalid("i", "expected a boolean") { _ = try p.optionalBool("i") }
        expectInvalid("missing", "missing") { _ = try p.requiredBool("missing") }
    }

    @Test func ints() throws {
        let p = try reader(#"{"a":5,"neg":-3,"zero":-0,"f":5.0,"e":1e2,"E":1E2,"big":99999999999999999999999,"s":"5","n":null,"t":true}"#)
        #expect(try p.requiredInt("a") == 5)
        #expect(try p.requiredInt("a", range: 5...5) == 5)
        #expect(try p.requiredInt("neg", range: -10...0) == -3)
        #expect(try p.requiredInt("zero") == 0)
        #expect(try p.optionalInt("n") == nil)
        #expect(try p.optionalInt("missing", range: 1...2) == nil)
        expectInvalid("a", "out of range 6...10") { _ = try p.requiredInt("a", range: 6...10) }
        expectInvalid("a", "out of range 0...4") { _ = try p.optionalInt("a", range: 0...4) }
        expectInvalid("f", "expected an integer") { _ = try p.requiredInt("f") }
        expectInvalid("e", "expected an integer") { _ = try p.requiredInt("e") }
        expectInvalid("E", "expected an integer") { _ = try p.optionalInt("E") }
        expectInvalid("big", "out of range \(Int.min)...\(Int.max)") { _ = try p.requiredInt("big") }
        expectInvalid("s", "expected an integer") { _ = try p.requiredInt("s") }
        expectInvalid("t", "expected an integer") { _ = try p.requiredInt("t") }
        expectInvalid("n", "must not be null") { _ = try p.requiredInt("n") }
        expectInvalid("missing", "missing") { _ = try p.requiredInt("missing", range: 0...1) }
    }

    @Test func intExtremes() throws {
        let p = try reader(#"{"min":-9223372036854775808,"max":9223372036854775807,"over":9223372036854775808}"#)
        #expect(try p.requiredInt("min") == Int.min)
        #expect(try p.requiredInt("max") == Int.max)
        expectInvalid("over", "out of range \(Int.min)...\(Int.max)") { _ = try p.requiredInt("over") }
    }

    @Test func containers() throws {
        let p = try reader(#"{"o":{"a":1},"a":[1],"n":null,"s":"x"}"#)
        #expect(try p.requiredObject("o") == ["a": 1])
        #expect(try p.requiredArray("a") == [1])
        #expect(try p.optionalObject("n") == nil)
        #expect(try p.optionalArray("missing") == nil)
        expectInvalid("s", "expected an object") { _ = try p.requiredObject("s") }
        expectInvalid("o", "expected an array") { _ = try p.optionalArray("o") }
    }

    @Test func rawValuesDistinguishNull() throws {
        let p = try reader(#"{"n":null}"#)
        #expect(p.optionalValue("n") == .null)
        #expect(p.optionalValue("missing") == nil)
        #expect(try p.requiredValue("n") == .null)
        expectInvalid("missing", "missing") { _ = try p.requiredValue("missing") }
    }

    @Test func unknownKeys() throws {
        let p = try reader(#"{"name":"x","limt":5,"other":1}"#)
        try p.rejectUnknownKeys(allowed: ["name", "limt", "other"])
        expectInvalid("limt", "unknown key: not a param of this method") { try p.rejectUnknownKeys(allowed: ["name", "limit"]) }
        try ParamsReader(nil).rejectUnknownKeys(allowed: [])
    }

    @Test func duplicateKeysRejected() {
        expectInvalid("b", "duplicate key") {
            _ = try ParamsReader(JSONObject([(key: "b", value: 1), (key: "a", value: 2), (key: "b", value: 3)]))
        }
    }

    @Test func fromRequest() throws {
        guard case .single(.request(let request)) = RPCCodec.decode(line: Array(#"{"jsonrpc":"2.0","method":"m","params":{"k":"v"},"id":1}"#.utf8)) else {
            Issue.record("expected a request")
            return
        }
        #expect(try ParamsReader(request).requiredString("k") == "v")
        let absent = try ParamsReader(IncomingRequest(id: .int(1), method: "m", params: nil))
        #expect(try absent.optionalString("k") == nil)
        expectInvalid("k", "missing") { _ = try absent.requiredString("k") }
    }

    // MARK: - Describe mode: the reads are the declaration

    @Test func describingRecordsEveryReadInOrderAndReturnsPlaceholders() throws {
        var seen: [String] = []
        let declarations = try ParamsReader.declarations { p throws(RPCError) in
            seen.append(try p.requiredString("name", description: "The name."))
            seen.append(String(describing: try p.optionalInt("limit", range: 1...1000)))
            seen.append(String(try p.requiredInt("count", range: 5...10)))
            seen.append(String(try p.requiredInt("offset", range: -10 ... -2)))
            seen.append(try p.requiredString("view", oneOf: ["inbox", "list"]))
            seen.append(String(describing: try p.optionalString("week", oneOf: ["monday", "sunday"])))
            seen.append(String(try p.requiredBool("flag")))
            seen.append(String(describing: p.optionalValue("raw")))
            _ = try p.requiredString("name") // read twice: declared once, as first read
        }
        #expect(seen == ["", "nil", "5", "-2", "inbox", "nil", "false", "nil"])
        #expect(declarations.map(\.name) == ["name", "limit", "count", "offset", "view", "week", "flag", "raw"])
        #expect(declarations.map(\.required) == [true, false, true, true, true, false, true, false])
        #expect(declarations[0] == ParamDeclaration(name: "name", schema: ["type": "string"], required: true, description: "The name."))
        #expect(declarations[1].schema == ["type": ["integer", "null"], "minimum": 1, "maximum": 1000])
        #expect(declarations[4].schema == ["type": "string", "enum": ["inbox", "list"]])
        #expect(declarations[5].schema == ["type": ["string", "null"], "enum": ["monday", "sunday", .null]])
        #expect(declarations[7].schema == .object(JSONObject()))
    }

    @Test func declaresIsFalseForRealParams() throws {
        let p = try reader(#"{"a":1}"#)
        #expect(!p.declares("a", schema: JSONSchema.any, required: true))
        #expect(try !ParamsReader(nil).declares("a", schema: JSONSchema.any, required: false))
    }

    @Test func describingPassesOnWhatDecodeThrows() {
        expectInvalid("x", "bad", reason: .outOfRange) {
            _ = try ParamsReader.declarations { p throws(RPCError) in
                _ = try p.requiredString("a")
                throw .invalidParams(field: "x", reason: RPCReason.outOfRange, message: "bad")
            }
        }
    }

    @Test func oneOfNamesEveryChoice() throws {
        let p = try reader(#"{"v":"nope","n":null,"ok":"b","i":1}"#)
        #expect(try p.requiredString("ok", oneOf: ["a", "b"]) == "b")
        #expect(try p.optionalString("n", oneOf: ["a"]) == nil)
        #expect(try p.optionalString("missing", oneOf: ["a"]) == nil)
        expectInvalid("v", "expected \"a\"") { _ = try p.requiredString("v", oneOf: ["a"]) }
        expectInvalid("v", "expected \"a\" or \"b\"") { _ = try p.requiredString("v", oneOf: ["a", "b"]) }
        expectInvalid("v", "expected \"a\", \"b\" or \"c\"") { _ = try p.optionalString("v", oneOf: ["a", "b", "c"]) }
        expectInvalid("i", "expected a string") { _ = try p.requiredString("i", oneOf: ["a"]) }
        expectInvalid("n", "must not be null") { _ = try p.requiredString("n", oneOf: ["a"]) }
    }
}
