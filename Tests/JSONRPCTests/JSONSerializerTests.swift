import Testing
@testable import JSONRPC

@Suite struct JSONSerializerTests {
    static let roundTrips: [String] = [
        "null", "true", "false", "0", "-0", "1.0", "1e3", "-1.5E-7", "123456789012345678901234567890",
        "\"\"", #""a\"b\\c""#, #""\u0000\u001f\n\r\t\b\f""#, "\"é€😀\u{2028}\u{2029}\"", "\"/\u{7F}\"",
        "[]", "{}", "[1,[2,[3,{}]],{\"a\":[]}]", #"{"b":1,"a":2,"b":3}"#, #"{"":""}"#,
    ]

    @Test(arguments: roundTrips)
    func roundTrip(_ text: String) throws {
        let value = try JSONParser.parse(Array(text.utf8))
        #expect(value.jsonString == text)
        #expect(try JSONParser.parse(value.jsonBytes) == value)
    }

    /// What the JSON log writer may print bare: only text that is a JSON number as it stands.
    @Test func numberLiterals() {
        for text in ["0", "-0", "12", "-0.5", "1e3", "2.5E-7", "0.000"] { #expect(JSONValue.isNumberLiteral(text), "\(text)") }
        for text in ["007", ".5", "5.", "+1", "0x10", "inf", "nan", "1e", "-", "", " 1", "1 ", "1_000", "٣"] {
            #expect(!JSONValue.isNumberLiteral(text), "\(text)")
        }
    }

    /// A value past the limit stops at an element boundary: never built in full.
    @Test func writeWithinLimit() {
        let big = JSONValue.array((0..<1_000).map { _ in .string(String(repeating: "\u{1}", count: 100)) }) // 602 bytes each
        var out: [UInt8] = []
        #expect(!big.write(into: &out, limit: 10_000))
        #expect(out.count > 10_000 && out.count < 10_000 + 700, "\(out.count)")
        out = []
        #expect(big.write(into: &out, limit: 700_000))
        #expect(out == big.jsonBytes)
        let response = OutgoingResponse.result(id: .number("1"), result: big)
        out = []
        #expect(!response.encode(into: &out, limit: 5_000) && out.count < 5_700)
    }

    @Test func compactOutput() throws {
        let value = try JSONValue(parsing: " { \"a\" : [ 1 , 2 ] , \"b\" : { } } ")
        #expect(value.jsonString == #"{"a":[1,2],"b":{}}"#)
    }

    @Test func stringEscaping() throws {
        #expect(JSONValue.string("\"\\/").jsonString == #""\"\\/""#)
        #expect(JSONValue.string("\n\r\t\u{8}\u{C}").jsonString == #""\n\r\t\b\f""#)
        #expect(JSONValue.string("\u{0}\u{1}\u{1F}\u{7F}").jsonString == "\"\\u0000\\u0001\\u001f\u{7F}\"")
        #expect(JSONValue.string("\u{2028}\u{2029}😀").jsonString == "\"\u{2028}\u{2029}😀\"")
        #expect(JSONValue.string("plain ascii").jsonString == "\"plain ascii\"")
        let all = String(decoding: (0..<0x20).map { UInt8($0) }, as: UTF8.self)
        let written = JSONValue.string(all).jsonBytes
        #expect(!written.contains { $0 < 0x20 })
        #expect(try JSONParser.parse(written) == .string(all))
    }

    @Test func keysAreEscaped() {
        let value: JSONValue = .object(JSONObject([(key: "a\"\n", value: .null)]))
        #expect(value.jsonString == #"{"a\"\n":null}"#)
    }

    @Test func writeAppends() {
        var out: [UInt8] = Array("x".utf8)
        JSONValue.array([.bool(true), .null]).write(into: &out)
        #expect(String(decoding: out, as: UTF8.self) == "x[true,null]")
    }

    @Test func numberConstructors() {
        #expect(JSONValue.int(42).jsonString == "42")
        #expect(JSONValue.int(Int.min).jsonString == "-9223372036854775808")
        #expect(JSONValue.int(UInt64.max).jsonString == "18446744073709551615")
        #expect(JSONValue.double(1.5)?.jsonString == "1.5")
        #expect(JSONValue.double(1)?.jsonString == "1.0")
        #expect(JSONValue.double(1e-7)?.jsonString == "1e-07")
        #expect(JSONValue.double(.nan) == nil)
        #expect(JSONValue.double(.infinity) == nil)
        #expect(JSONValue.number(validating: "1.5e3") == .number("1.5e3"))
        #expect(JSONValue.number(validating: "01") == nil)
        #expect(JSONValue.number(validating: "1.") == nil)
        #expect(JSONValue.number(validating: "") == nil)
        // A hand-built invalid literal must not corrupt the output.
        #expect(JSONValue.array([.number("abc"), .number("")]).jsonString == "[null,null]")
        for d in [0.1, -2.5e300, Double.leastNonzeroMagnitude, 1e16, 123456.789, -0.0] {
            let v = JSONValue.double(d)!
            #expect(JSONValue.number(validating: v.numberLiteral!) != nil)
            #expect(v.doubleValue == d)
        }
    }

    @Test func accessors() throws {
        let value = try JSONValue(parsing: #"{"s":"x","b":true,"n":null,"i":-12,"f":1.0,"e":1e2,"big":99999999999999999999,"a":[1,2]}"#)
        #expect(value["s"]?.stringValue == "x")
        #expect(value["b"]?.boolValue == true)
        #expect(value["n"]?.isNull == true)
        #expect(value["i"]?.intValue == -12)
        #expect(value["f"]?.intValue == nil)
        #expect(value["f"]?.doubleValue == 1.0)
        #expect(value["e"]?.intValue == nil)
        #expect(value["big"]?.intValue == nil)
        #expect(value["a"]?[1] == .int(2))
        #expect(value["a"]?[5] == nil)
        #expect(value["missing"] == nil)
        #expect(JSONValue.number("-9223372036854775808").intValue == Int.min)
        #expect(JSONValue.number("9223372036854775807").intValue == Int.max)
        #expect(JSONValue.number("9223372036854775808").intValue == nil)
        #expect(JSONValue.number("-0").intValue == 0)
    }

    @Test func objectMutation() {
        var object: JSONObject = ["a": 1, "b": 2]
        object["a"] = "x"
        object["c"] = true
        #expect(JSONValue.object(object).jsonString == #"{"a":"x","b":2,"c":true}"#)
        object.append(key: "a", value: .null)
        object["a"] = nil
        #expect(object.keys == ["b", "c"])
        #expect(object.contains(key: "b"))
        #expect(!object.contains(key: "a"))
    }

    @Test func equalityIsLiteralAndOrderSensitive() {
        #expect(JSONValue.number("1") != JSONValue.number("1.0"))
        #expect(JSONValue(["a": 1, "b": 2]) != JSONValue(["b": 2, "a": 1]))
        #expect(JSONValue(["a": 1, "b": 2]) == JSONValue(["a": 1, "b": 2]))
    }
}

extension JSONValue {
    init(_ object: JSONObject) { self = .object(object) }
}
