import Testing
@testable import JSONRPC

private func parse(_ text: String, maxDepth: Int = JSONParser.defaultMaxDepth) throws(JSONParseError) -> JSONValue {
    try JSONParser.parse(Array(text.utf8), maxDepth: maxDepth)
}

private func parseError(_ bytes: [UInt8]) -> JSONParseError? {
    do {
        _ = try JSONParser.parse(bytes)
        return nil
    } catch {
        return error
    }
}

@Suite struct JSONParserTests {
    static let accepted: [String] = [
        "null", "true", "false", "0", "-0", "1", "-1", "0.5", "-0.0", "1e3", "1E3", "1e+3", "1e-3",
        "1.5e-10", "123456789012345678901234567890", "\"\"", "\"abc\"", "\"\\u0000\"",
        #""\"\\\/\b\f\n\r\t""#, "[]", "{}", "[1,2,3]", #"{"a":1,"b":[true,false,null]}"#,
        " \t\r\n[ 1 , { \"a\" : \"b\" } ]\r\n\t ", #"{"a":1,"a":2}"#, "\"\u{2028}\u{2029}\"",
        "\"é€😀\"", "[[[]]]", "1e007", "\"/\"",
    ]

    @Test(arguments: accepted)
    func accepts(_ text: String) throws {
        _ = try parse(text)
    }

    static let rejected: [String] = [
        "", " ", "[1,]", "[,1]", "{\"a\":1,}", "01", "-01", "00", "-", "1.", ".5", "1e", "1e+", "+1",
        "-a", "0x10", "NaN", "Infinity", "-Infinity", "nul", "tru", "truex", "nulll", "'a'", "[1 2]",
        "{\"a\" 1}", "{a:1}", "{1:1}", "{\"a\":}", "[", "]", "{", "}", "[1", "{\"a\":1", "\"abc",
        "\"\\x\"", "\"\\u12\"", "\"\\u12G4\"", "\"\\ud800\"", "\"\\udc00\"", "\"\\ud800\\u0041\"",
        "\"\\ud800x\"", "\"\\ud83d\\ud83d\"", "\"a\u{0}b\"", "\"\t\"", "\"\n\"", "\u{1F}", "1 2",
        "[] []", "// c\n1", "/* c */ 1", "1 // c", "[1]x", "\u{0C}1", "\u{A0}1", "\u{FEFF}1",
        "True", "[01]", "[1.]", "{\"a\":1}}", "[\"a\",]", "1.0e", "2.e3", "\"\\\"",
    ]

    @Test(arguments: rejected)
    func rejects(_ text: String) {
        #expect(throws: JSONParseError.self) { try parse(text) }
    }

    static let invalidUTF8: [[UInt8]] = [
        [0x22, 0xC0, 0x80, 0x22],  // overlong NUL
        [0x22, 0xC1, 0xBF, 0x22],  // overlong
        [0x22, 0xE0, 0x80, 0xAF, 0x22],  // overlong '/'
        [0x22, 0xF0, 0x8F, 0xBF, 0xBF, 0x22],  // overlong 3-byte range
        [0x22, 0xED, 0xA0, 0x80, 0x22],  // UTF-8 encoded surrogate U+D800
        [0x22, 0xED, 0xBF, 0xBF, 0x22],  // U+DFFF
        [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22],  // > U+10FFFF
        [0x22, 0xF5, 0x80, 0x80, 0x80, 0x22],
        [0x22, 0xFF, 0x22],
        [0x22, 0x80, 0x22],  // lone continuation
        [0x22, 0xC3, 0x22],  // truncated
        [0x22, 0xE2, 0x82, 0x22],  // truncated
        [0x22, 0xC3],  // truncated at end of input
        [0xC0, 0x80],  // outside a string
        [0x5B, 0x31, 0x5D, 0xF5],  // after the value
        [0x22, 0x5C, 0x6E, 0xED, 0xA0, 0x80, 0x22],  // on the escape (slow) path
    ]

    @Test(arguments: invalidUTF8)
    func rejectsInvalidUTF8(_ bytes: [UInt8]) {
        #expect(parseError(bytes) != nil)
    }

    @Test func invalidUTF8ReportsOffsetAndReason() throws {
        let error = try #require(parseError([0x22, 0x61, 0xED, 0xA0, 0x80, 0x22]))
        #expect(error == JSONParseError(offset: 2, reason: "invalid UTF-8", kind: .invalidUTF8))
    }

    @Test func validMultibyteBoundaries() throws {
        // U+0080, U+07FF, U+0800, U+FFFF, U+10000, U+10FFFF, U+D7FF, U+E000
        let scalars: [UInt32] = [0x80, 0x7FF, 0x800, 0xFFFF, 0x10000, 0x10FFFF, 0xD7FF, 0xE000]
        for scalar in scalars {
            let s = String(Unicode.Scalar(scalar)!)
            let value = try JSONParser.parse([0x22] + Array(s.utf8) + [0x22])
            #expect(value == .string(s))
        }
    }

    @Test func escapesDecode() throws {
        #expect(try parse(#""\u0000""#) == .string("\u{0}"))
        #expect(try parse(#""\ud83d\ude00""#) == .string("😀"))
        #expect(try parse(#""\uD83D\uDE00""#) == .string("😀"))
        #expect(try parse(#""a\"b\\c\/d\be\ff\ng\rh\ti""#) == .string("a\"b\\c/d\u{8}e\u{C}f\ng\rh\ti"))
        #expect(try parse(#""\u00e9\u20AC""#) == .string("é€"))
        #expect(try parse(#""x\u0041é""#) == .string("xAé"))
    }

    @Test func numbersKeepLiteralText() throws {
        let big = "123456789012345678901234567890123456789012345678901234567890"
        #expect(try parse(big) == .number(big))
        #expect(try parse("[1.0,-0,1e3,1E+03]") == .array([.number("1.0"), .number("-0"), .number("1e3"), .number("1E+03")]))
        #expect(try parse(" 42 ") == .number("42"))
    }

    @Test func objectsKeepOrderAndDuplicates() throws {
        let value = try parse(#"{"b":1,"a":2,"b":3}"#)
        let object = try #require(value.objectValue)
        #expect(object.keys == ["b", "a", "b"])
        #expect(object["b"] == .int(1))
        #expect(object.firstDuplicateKey == "b")
        #expect(object.hasDuplicateKeys)
        #expect(try parse(#"{"a":1,"b":2}"#).objectValue?.hasDuplicateKeys == false)
    }

    @Test func duplicateDetectionOnLargeObjects() throws {
        var object = JSONObject()
        for k in 0..<1000 { object.append(key: "k\(k)", value: .null) }
        #expect(object.firstDuplicateKey == nil)
        object.append(key: "k500", value: .null)
        object.append(key: "k3", value: .null)
        #expect(object.firstDuplicateKey == "k500")
    }

    @Test func depthLimit() throws {
        let ok = String(repeating: "[", count: 128) + String(repeating: "]", count: 128)
        _ = try parse(ok)
        let tooDeep = String(repeating: "[", count: 129) + String(repeating: "]", count: 129)
        #expect(throws: JSONParseError(offset: 128, reason: "nesting too deep", kind: .tooDeep)) { try parse(tooDeep) }
        let objects = String(repeating: #"{"a":"#, count: 129) + "1" + String(repeating: "}", count: 129)
        #expect(throws: JSONParseError.self) { try parse(objects) }
        #expect(throws: JSONParseError.self) { try parse("[[1]]", maxDepth: 1) }
        _ = try parse("[1]", maxDepth: 1)
    }

    @Test func hugeNestingDoesNotCrash() {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(throws: JSONParseError.self) { try parse(deep) }
        let unterminated = String(repeating: "[{\"a\":", count: 100_000)
        #expect(throws: JSONParseError.self) { try parse(unterminated) }
        // The iterative parser does not need the limit to protect its own stack.
        let value = try? parse(String(repeating: "[", count: 5_000) + String(repeating: "]", count: 5_000), maxDepth: 5_000)
        #expect(value != nil)
    }

    @Test func errorOffsets() {
        #expect(parseError(Array("[1,]".utf8)) == JSONParseError(offset: 3, reason: "unexpected character"))
        #expect(parseError(Array("01".utf8)) == JSONParseError(offset: 1, reason: "leading zero in number"))
        #expect(parseError(Array("1 2".utf8)) == JSONParseError(offset: 2, reason: "unexpected data after JSON value"))
        #expect(parseError(Array("".utf8)) == JSONParseError(offset: 0, reason: "unexpected end of input"))
        #expect(parseError(Array("\"ab".utf8)) == JSONParseError(offset: 0, reason: "unterminated string"))
        #expect(parseError(Array("\"a\u{1}\"".utf8)) == JSONParseError(offset: 2, reason: "unescaped control character in string"))
        #expect(parseError(Array(#"["\ud800"]"#.utf8)) == JSONParseError(offset: 2, reason: "unpaired surrogate escape"))
    }

    @Test func parsesFromStringAndRawBuffer() throws {
        #expect(try JSONValue(parsing: "[1]") == .array([1]))
        let bytes: [UInt8] = Array(#"{"a":"b"}"#.utf8)
        let value = try bytes.withUnsafeBytes { p in try JSONParser.parse(p) }
        #expect(value == ["a": "b"])
    }
}
