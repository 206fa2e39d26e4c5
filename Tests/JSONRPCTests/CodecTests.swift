import Testing
@testable import JSONRPC

/// What a worker would write back for one input line (nil = nothing), answering every
/// valid non-notification request with `"ok"`.
private func respond(_ bytes: [UInt8]) -> String? {
    func answer(_ message: DecodedMessage) -> OutgoingResponse? {
        switch message {
        case .request(let request):
            guard let id = request.id else { return nil }
            return .result(id: id, result: "ok")
        case .invalid(let id, let error):
            return .error(id: id, error: error)
        case .invalidNotification:
            return nil
        }
    }
    switch RPCCodec.decode(line: bytes) {
    case .blank:
        return nil
    case .invalid(let error):
        return OutgoingResponse.error(id: .null, error: error).encodedString
    case .single(let message):
        return answer(message)?.encodedString
    case .batch(let messages):
        var out: [UInt8] = []
        guard OutgoingResponse.encodeBatch(messages.compactMap(answer), into: &out) else { return nil }
        return String(decoding: out, as: UTF8.self)
    }
}

private func respond(_ line: String) -> String? { respond(Array(line.utf8)) }

private func invalidRequest(_ id: String, _ data: String) -> String {
    #"{"jsonrpc":"2.0","id":\#(id),"error":{"code":-32600,"message":"Invalid Request","data":\#(data)}}"#
}

private func invalidParams(_ id: String, _ data: String) -> String {
    #"{"jsonrpc":"2.0","id":\#(id),"error":{"code":-32602,"message":"Invalid params","data":\#(data)}}"#
}

private func parseError(_ data: String) -> String {
    #"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error","data":\#(data)}}"#
}

struct CodecCase: Sendable, CustomTestStringConvertible {
    var line: String
    var expected: String?
    init(_ line: String, _ expected: String?) {
        self.line = line
        self.expected = expected
    }
    var testDescription: String { line }
}

@Suite struct CodecTests {
    static let cases: [CodecCase] = [
        // Valid requests and id echoing.
        CodecCase(#"{"jsonrpc":"2.0","method":"m","params":{"a":1},"id":1}"#, #"{"jsonrpc":"2.0","id":1,"result":"ok"}"#),
        CodecCase(#"{"id":"abc","method":"m","jsonrpc":"2.0"}"#, #"{"jsonrpc":"2.0","id":"abc","result":"ok"}"#),
        CodecCase(#"{"jsonrpc":"2.0","method":"m","id":1.0}"#, #"{"jsonrpc":"2.0","id":1.0,"result":"ok"}"#),
        CodecCase(#"{"jsonrpc":"2.0","method":"m","id":1e3}"#, #"{"jsonrpc":"2.0","id":1e3,"result":"ok"}"#),
        CodecCase(#"{"jsonrpc":"2.0","method":"m","id":-0}"#, #"{"jsonrpc":"2.0","id":-0,"result":"ok"}"#),
        CodecCase(#"{"jsonrpc":"2.0","method":"m","id":null}"#, #"{"jsonrpc":"2.0","id":null,"result":"ok"}"#),
        CodecCase(#"{"jsonrpc":"2.0","method":"m","id":""}"#, #"{"jsonrpc":"2.0","id":"","result":"ok"}"#),
        CodecCase(#"{"jsonrpc":"2.0","method":"m","id":"\u00e9\n"}"#, #"{"jsonrpc":"2.0","id":"é\n","result":"ok"}"#),
        CodecCase(#"{"jsonrpc":"2.0","method":"m","id":123456789012345678901234567890}"#,
                  #"{"jsonrpc":"2.0","id":123456789012345678901234567890,"result":"ok"}"#),
        CodecCase(#" {"jsonrpc":"2.0","method":"rpc.x","id":7} "#, #"{"jsonrpc":"2.0","id":7,"result":"ok"}"#),
        CodecCase(#"{"jsonrpc":"2.0","method":"m","params":{},"id":2}"#, #"{"jsonrpc":"2.0","id":2,"result":"ok"}"#),

        // Notifications are never answered.
        CodecCase(#"{"jsonrpc":"2.0","method":"m"}"#, nil),
        CodecCase(#"{"jsonrpc":"2.0","method":"m","params":{"a":[1]}}"#, nil),
        CodecCase(#"{"jsonrpc":"2.0","method":"m","params":[1,2]}"#, nil),
        CodecCase(#"{"jsonrpc":"2.0","method":"m","params":{"a":1,"a":2}}"#, nil),

        // Blank lines are ignored.
        CodecCase("", nil),
        CodecCase("   ", nil),
        CodecCase(" \t\r ", nil),

        // Parse errors.
        CodecCase(#"{"jsonrpc":"2.0","method":"foobar,"params":"bar","baz]"#,
                  parseError(#"{"reason":"invalid_json","message":"expected ',' or '}'","offset":35}"#)),
        CodecCase("[1,]", parseError(#"{"reason":"invalid_json","message":"unexpected character","offset":3}"#)),
        CodecCase("{", parseError(#"{"reason":"invalid_json","message":"unexpected end of input","offset":1}"#)),
        CodecCase("\u{C}", parseError(#"{"reason":"invalid_json","message":"unexpected character","offset":0}"#)),
        CodecCase(#"{"jsonrpc":"2.0","method":"m","id":01}"#, parseError(#"{"reason":"invalid_json","message":"leading zero in number","offset":36}"#)),
        CodecCase(#"{"jsonrpc":"2.0","method":"m","id":"\ud800"}"#,
                  parseError(#"{"reason":"invalid_json","message":"unpaired surrogate escape","offset":36}"#)),
        CodecCase(String(repeating: "[", count: 129), parseError(#"{"reason":"too_deep","message":"nesting too deep","offset":128}"#)),

        // Top-level shape.
        CodecCase("[]", invalidRequest("null", #"{"reason":"empty_batch","message":"empty batch"}"#)),
        CodecCase(" [ ] ", invalidRequest("null", #"{"reason":"empty_batch","message":"empty batch"}"#)),
        CodecCase("1", invalidRequest("null", #"{"reason":"not_an_object","message":"expected a request object or a non-empty batch array"}"#)),
        CodecCase("\"x\"", invalidRequest("null", #"{"reason":"not_an_object","message":"expected a request object or a non-empty batch array"}"#)),
        CodecCase("null", invalidRequest("null", #"{"reason":"not_an_object","message":"expected a request object or a non-empty batch array"}"#)),
        CodecCase("true", invalidRequest("null", #"{"reason":"not_an_object","message":"expected a request object or a non-empty batch array"}"#)),
        CodecCase("{}", invalidRequest("null", #"{"reason":"required","message":"missing member","member":"jsonrpc"}"#)),
        CodecCase("[1,2]", "[" + invalidRequest("null", #"{"reason":"not_an_object","message":"request must be an object"}"#) + ","
                  + invalidRequest("null", #"{"reason":"not_an_object","message":"request must be an object"}"#) + "]"),
        CodecCase("[[]]", "[" + invalidRequest("null", #"{"reason":"not_an_object","message":"request must be an object"}"#) + "]"),

        // jsonrpc member.
        CodecCase(#"{"method":"m","id":1}"#, invalidRequest("1", #"{"reason":"required","message":"missing member","member":"jsonrpc"}"#)),
        CodecCase(#"{"jsonrpc":"1.0","method":"m","id":1}"#, invalidRequest("1", #"{"reason":"invalid_version","message":"must be the string 2.0","member":"jsonrpc"}"#)),
        CodecCase(#"{"jsonrpc":2.0,"method":"m","id":1}"#, invalidRequest("1", #"{"reason":"invalid_version","message":"must be the string 2.0","member":"jsonrpc"}"#)),
        CodecCase(#"{"jsonrpc":"2.0 ","method":"m","id":"a"}"#, invalidRequest("\"a\"", #"{"reason":"invalid_version","message":"must be the string 2.0","member":"jsonrpc"}"#)),
        CodecCase(#"{"jsonrpc":"2.0","method":"m","id":2,"jsonrpc":"2.0"}"#, invalidRequest("2", #"{"reason":"duplicate_key","message":"duplicate member","member":"jsonrpc"}"#)),

        // method member. Without an id this is not a notification (not a Request at all):
        // the spec's own example answers it with id null.
        CodecCase(#"{"jsonrpc":"2.0","method":1,"params":"bar"}"#, invalidRequest("null", #"{"reason":"wrong_type","message":"must be a string","member":"method"}"#)),
        CodecCase(#"{"jsonrpc":"2.0","id":3}"#, invalidRequest("3", #"{"reason":"required","message":"missing member","member":"method"}"#)),
        CodecCase(#"{"jsonrpc":"2.0","method":null,"id":3}"#, invalidRequest("3", #"{"reason":"wrong_type","message":"must be a string","member":"method"}"#)),
        CodecCase(#"{"jsonrpc":"2.0"}"#, invalidRequest("null", #"{"reason":"required","message":"missing member","member":"method"}"#)),

        // id member.
        CodecCase(#"{"jsonrpc":"2.0","method":"m","id":{}}"#, invalidRequest("null", #"{"reason":"wrong_type","message":"id must be a string, number or null","member":"id"}"#)),
        CodecCase(#"{"jsonrpc":"2.0","method":"m","id":[1]}"#, invalidRequest("null", #"{"reason":"wrong_type","message":"id must be a string, number or null","member":"id"}"#)),
        CodecCase(#"{"jsonrpc":"2.0","method":"m","id":true}"#, invalidRequest("null", #"{"reason":"wrong_type","message":"id must be a string, number or null","member":"id"}"#)),
        CodecCase(#"{"jsonrpc":"2.0","method":"m","id":1,"id":2}"#, invalidRequest("null", #"{"reason":"duplicate_key","message":"duplicate member","member":"id"}"#)),
        CodecCase(#"{"jsonrpc":"2.0","method":"m","id":1,"id":1}"#, invalidRequest("null", #"{"reason":"duplicate_key","message":"duplicate member","member":"id"}"#)),

        // params member.
        CodecCase(#"{"jsonrpc":"2.0","method":"m","params":[1,2],"id":4}"#,
                  invalidParams("4", #"{"reason":"wrong_type","message":"positional parameters are not supported; use an object","field":"params"}"#)),
        CodecCase(#"{"jsonrpc":"2.0","method":"m","params":"x","id":5}"#, invalidRequest("5", #"{"reason":"wrong_type","message":"must be an object or an array","member":"params"}"#)),
        CodecCase(#"{"jsonrpc":"2.0","method":"m","params":3,"id":5}"#, invalidRequest("5", #"{"reason":"wrong_type","message":"must be an object or an array","member":"params"}"#)),
        CodecCase(#"{"jsonrpc":"2.0","method":"m","params":null,"id":5}"#, invalidRequest("5", #"{"reason":"wrong_type","message":"must be an object or an array","member":"params"}"#)),
        CodecCase(#"{"jsonrpc":"2.0","method":"m","params":true}"#, invalidRequest("null", #"{"reason":"wrong_type","message":"must be an object or an array","member":"params"}"#)),
        CodecCase(#"{"jsonrpc":"2.0","method":"m","params":{"a":1,"b":2,"a":3},"id":6}"#,
                  invalidParams("6", #"{"reason":"duplicate_key","message":"duplicate key","field":"a"}"#)),
        CodecCase(#"{"jsonrpc":"2.0","method":"m","params":{"a":{"b":1,"b":2}},"id":6}"#,
                  invalidParams("6", #"{"reason":"duplicate_key","message":"duplicate key","field":"a.b"}"#)),
        CodecCase(#"{"jsonrpc":"2.0","method":"m","params":{"list":[{},{"x":1,"x":1}]},"id":6}"#,
                  invalidParams("6", #"{"reason":"duplicate_key","message":"duplicate key","field":"list[1].x"}"#)),

        // Duplicates and unknown members at the top level.
        CodecCase(#"{"jsonrpc":"2.0","method":"m","method":"n","id":8}"#, invalidRequest("8", #"{"reason":"duplicate_key","message":"duplicate member","member":"method"}"#)),
        CodecCase(#"{"jsonrpc":"2.0","method":"m","params":{},"params":{},"id":8}"#, invalidRequest("8", #"{"reason":"duplicate_key","message":"duplicate member","member":"params"}"#)),
        CodecCase(#"{"jsonrpc":"2.0","method":"m","x":1,"x":2,"id":8}"#, invalidRequest("8", #"{"reason":"duplicate_key","message":"duplicate member","member":"x"}"#)),
        CodecCase(#"{"jsonrpc":"2.0","method":"m","param":{},"id":9}"#, invalidRequest("9", #"{"reason":"unknown_key","message":"unknown member","member":"param"}"#)),
        CodecCase(#"{"jsonrpc":"2.0","method":"m","extra":1}"#, invalidRequest("null", #"{"reason":"unknown_key","message":"unknown member","member":"extra"}"#)),

        // Batches.
        CodecCase(#"[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","method":"b","params":[7]}]"#, nil),
        CodecCase(#"[{"jsonrpc":"2.0","method":"a","id":1}]"#, #"[{"jsonrpc":"2.0","id":1,"result":"ok"}]"#),
        CodecCase(
            #"[{"jsonrpc":"2.0","method":"sum","params":{},"id":"1"},{"jsonrpc":"2.0","method":"notify"},{"foo":"boo"},1,"#
                + #"{"jsonrpc":"2.0","method":"x","params":[1],"id":2},{"jsonrpc":"2.0","method":"n","params":[1]},"#
                + #"{"jsonrpc":"2.0","method":"g","id":1.50}]"#,
            "[" + #"{"jsonrpc":"2.0","id":"1","result":"ok"}"#
                + "," + invalidRequest("null", #"{"reason":"required","message":"missing member","member":"jsonrpc"}"#)
                + "," + invalidRequest("null", #"{"reason":"not_an_object","message":"request must be an object"}"#)
                + "," + invalidParams("2", #"{"reason":"wrong_type","message":"positional parameters are not supported; use an object","field":"params"}"#)
                + "," + #"{"jsonrpc":"2.0","id":1.50,"result":"ok"}"# + "]"),
    ]

    @Test(arguments: cases)
    func responses(_ c: CodecCase) {
        #expect(respond(c.line) == c.expected)
    }

    static let invalidBytes: [[UInt8]] = [
        [0xC0, 0x80],
        Array(#"{"jsonrpc":"2.0","method":""#.utf8) + [0xED, 0xA0, 0x80] + Array(#"","id":1}"#.utf8),
        Array(#"{"jsonrpc":"2.0","method":"m","id":1}"#.utf8) + [0xF5],
        [0xEF, 0xBB, 0xBF] + Array(#"{"jsonrpc":"2.0","method":"m","id":1}"#.utf8),  // BOM
    ]

    @Test(arguments: invalidBytes)
    func invalidUTF8IsAParseError(_ bytes: [UInt8]) throws {
        let response = try #require(respond(bytes))
        #expect(response.hasPrefix(#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error","data":{"reason":"#))
    }

    @Test func hugeNestingIsAParseError() throws {
        let line = Array(repeating: UInt8(ascii: "["), count: 100_000) + Array(repeating: UInt8(ascii: "]"), count: 100_000)
        #expect(respond(line) == parseError(#"{"reason":"too_deep","message":"nesting too deep","offset":128}"#))
    }

    @Test func decodedRequestShape() throws {
        let decoded = RPCCodec.decode(line: Array(#"{"jsonrpc":"2.0","method":"m","params":{"b":1,"a":"x"},"id":"q"}"#.utf8))
        let expected = IncomingRequest(id: .string("q"), method: "m", params: ["b": 1, "a": "x"])
        #expect(decoded == .single(.request(expected)))
        #expect(expected.isNotification == false)

        let notification = RPCCodec.decode(line: Array(#"{"jsonrpc":"2.0","method":"n"}"#.utf8))
        #expect(notification == .single(.request(IncomingRequest(id: nil, method: "n", params: nil))))

        let nullID = RPCCodec.decode(line: Array(#"{"jsonrpc":"2.0","method":"n","id":null}"#.utf8))
        #expect(nullID == .single(.request(IncomingRequest(id: .null, method: "n", params: nil))))

        let positional = RPCCodec.decode(line: Array(#"{"jsonrpc":"2.0","method":"n","params":[]}"#.utf8))
        guard case .single(.invalidNotification(let method, let error)) = positional else {
            Issue.record("expected invalidNotification, got \(positional)")
            return
        }
        #expect(method == "n")
        #expect(error.code == .invalidParams)
        #expect(error.data?["field"] == "params")
    }

    @Test func errorHelpers() {
        #expect(OutgoingResponse.error(id: .int(3), error: .methodNotFound("x")).encodedString
            == #"{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"Method not found","data":{"reason":"unknown_method","message":"no such method; rpc.discover lists them","method":"x"}}}"#)
        #expect(OutgoingResponse.error(id: .string("a"), error: .internalError()).encodedString
            == #"{"jsonrpc":"2.0","id":"a","error":{"code":-32603,"message":"Internal error","data":{"reason":"internal_error"}}}"#)
        #expect(OutgoingResponse.error(id: .null, error: .invalidParams(field: "f", reason: RPCReason.wrongType, message: "m")).encodedString
            == #"{"jsonrpc":"2.0","id":null,"error":{"code":-32602,"message":"Invalid params","data":{"reason":"wrong_type","message":"m","field":"f"}}}"#)
        #expect(OutgoingResponse.error(id: .int(1), error: .serverError(1, message: "busy", data: ["retry": true])).encodedString
            == #"{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"busy","data":{"retry":true}}}"#)
        #expect(OutgoingResponse.error(id: .int(1), error: RPCError(code: RPCErrorCode(rawValue: 42), message: "a\"b")).encodedString
            == #"{"jsonrpc":"2.0","id":1,"error":{"code":42,"message":"a\"b"}}"#)
        #expect(OutgoingResponse.result(id: .number("1e3"), result: ["a": [1, .null]]).encodedString
            == #"{"jsonrpc":"2.0","id":1e3,"result":{"a":[1,null]}}"#)
    }

    @Test func errorCodes() {
        #expect(RPCErrorCode.parseError.rawValue == -32700)
        #expect(RPCErrorCode.invalidRequest.rawValue == -32600)
        #expect(RPCErrorCode.methodNotFound.rawValue == -32601)
        #expect(RPCErrorCode.invalidParams.rawValue == -32602)
        #expect(RPCErrorCode.internalError.rawValue == -32603)
        #expect(RPCErrorCode.serverError(0).rawValue == -32000)
        #expect(RPCErrorCode.serverError(99).rawValue == -32099)
        #expect(RPCErrorCode.serverError(500).rawValue == -32099)
        #expect(RPCErrorCode.serverError(-5).rawValue == -32000)
        #expect(RPCErrorCode.serverError(7).isServerError)
        #expect(RPCErrorCode.parseError.isReserved)
        #expect(!RPCErrorCode(rawValue: 1).isReserved)
    }

    @Test func batchEncoding() {
        var out: [UInt8] = []
        #expect(OutgoingResponse.encodeBatch([], into: &out) == false)
        #expect(out.isEmpty)
        #expect(OutgoingResponse.encodeBatch([.result(id: .int(1), result: .null), .result(id: .string("x"), result: true)], into: &out))
        #expect(String(decoding: out, as: UTF8.self)
            == #"[{"jsonrpc":"2.0","id":1,"result":null},{"jsonrpc":"2.0","id":"x","result":true}]"#)
    }

    @Test func requestIDs() {
        #expect(RequestID(.number("1.0")) == .number("1.0"))
        #expect(RequestID(.number("1")) != RequestID(.number("1.0")))
        #expect(RequestID(.bool(true)) == nil)
        #expect(RequestID(.array([])) == nil)
        #expect(RequestID(.object([:])) == nil)
        #expect(RequestID.int(5).jsonValue == .number("5"))
        #expect(Set([RequestID.string("1"), .number("1"), .null]).count == 3)
    }

    @Test func errorResponseHelper() {
        #expect(DecodedMessage.invalid(id: .int(1), error: .internalError()).errorResponse
            == .error(id: .int(1), error: .internalError()))
        #expect(DecodedMessage.request(IncomingRequest(id: .int(1), method: "m", params: nil)).errorResponse == nil)
        #expect(DecodedMessage.invalidNotification(method: "m", error: .internalError()).errorResponse == nil)
    }
}
