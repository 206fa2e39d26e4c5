import Testing
@testable import JSONRPC

@Suite struct JSONWriterTests {
    /// The writer must produce byte for byte what the tree serializer produces, so methods
    /// can switch between them without changing a response.
    @Test func matchesTheTreeSerializer() throws {
        let tree: JSONValue = [
            "s": "a\"b\\c\n\u{1}é😀", "n": .null, "t": true, "f": false, "i": .int(-42),
            "empty_object": .object(JSONObject()), "empty_array": [],
            "nested": [[], ["x": [1, [2, []]]], .null, "end"],
            "ascii": "2026-11-22T04:30:00.000001Z",
        ]
        let written = JSONWriter.encode { json in
            json.beginObject()
            json.key("s"); json.string("a\"b\\c\n\u{1}é😀")
            json.key("n"); json.string(nil)
            json.key("t"); json.bool(true)
            json.key("f"); json.bool(false)
            json.key("i"); json.int(-42)
            json.key("empty_object"); json.beginObject(); json.endObject()
            json.key("empty_array"); json.beginArray(); json.endArray()
            json.key("nested"); json.beginArray()
            json.beginArray(); json.endArray()
            json.beginObject(); json.key("x"); json.value([1, [2, []]]); json.endObject()
            json.null()
            json.string("end")
            json.endArray()
            json.key("ascii"); json.asciiString { $0.append(contentsOf: "2026-11-22T04:30:00.000001Z".utf8) }
            json.endObject()
        }
        #expect(written.bytes == tree.jsonBytes)
        #expect(try JSONParser.parse(written.bytes) == tree)
    }

    @Test func encodedValuesAreWrittenVerbatimInsideTrees() {
        let fragment = JSONWriter.encode { json in
            json.beginArray(); json.int(1); json.string("two"); json.endArray()
        }
        let response = OutgoingResponse.result(id: .number("7"), result: ["items": .encoded(fragment), "after": true])
        #expect(response.encodedString == #"{"jsonrpc":"2.0","id":7,"result":{"items":[1,"two"],"after":true}}"#)
    }

    @Test func topLevelScalars() {
        #expect(JSONWriter.encode { $0.int(0) }.bytes == Array("0".utf8))
        #expect(JSONWriter.encode { $0.string("") }.bytes == Array("\"\"".utf8))
        #expect(JSONWriter.encode { $0.null() }.bytes == Array("null".utf8))
    }

    private struct Point: JSONWritable {
        var x: Int
        var label: String?
        func write(to json: inout JSONWriter) {
            json.object { json in
                json.member("x", x)
                json.member("label", label)
            }
        }
        var estimatedJSONBytes: Int { 32 }
    }

    /// Values that write themselves produce what the tree serializer produces for the same values.
    @Test func writableValuesMatchTheTreeSerializer() {
        let points = [Point(x: 1, label: "a\"b"), Point(x: -2, label: nil)]
        let written = JSONWriter.encode { json in
            json.object { json in
                json.member("points", points)
                json.member("none", [Point]())
                json.member("flag", false)
                json.member("tree", JSONValue(["k": [1, .null]]))
                json.member("encoded", Point(x: 3, label: nil).encodedJSON)
                json.key("mapped"); json.array([3, 4]) { $0.int($1 * 2) }
            }
        }
        let tree: JSONValue = [
            "points": [["x": 1, "label": "a\"b"], ["x": -2, "label": .null]],
            "none": [], "flag": false, "tree": ["k": [1, .null]],
            "encoded": ["x": 3, "label": .null],
            "mapped": [6, 8],
        ]
        #expect(written.bytes == tree.jsonBytes)
        #expect(Optional<Int>.none.encodedJSON.bytes == Array("null".utf8))
        #expect("é".encodedJSON.bytes == JSONValue.string("é").jsonBytes)
    }

    /// A `.writable` result is written straight into the response and never built past the
    /// limit: the output stops past it by at most one string.
    @Test func writableValuesStopAtTheLimit() {
        let strings = (0..<1_000).map { String(repeating: "\u{1}", count: 10 + $0 % 7) } // 6 bytes each when escaped
        let value = JSONValue.writable(strings)
        var whole: [UInt8] = Array("x".utf8)
        #expect(value.write(into: &whole, limit: .max))
        #expect(whole == Array("x".utf8) + strings.encodedJSON.bytes)

        var partial: [UInt8] = Array("x".utf8)
        #expect(!value.write(into: &partial, limit: 500))
        #expect(partial.count > 500 && partial.count <= 500 + 2 + 6 * 16, "\(partial.count)")
        #expect(Array(partial.prefix(300)) == Array(whole.prefix(300)))

        var exact = [UInt8]()
        #expect(value.write(into: &exact, limit: whole.count - 1))
        #expect(!value.write(into: &exact, limit: whole.count - 1), "past the limit with what was there before")

        // Inside a tree and a response.
        let response = OutgoingResponse.result(id: .int(1), result: ["items": .writable([1, 2]), "after": .writable(Optional<Int>.none)])
        #expect(response.encodedString == #"{"jsonrpc":"2.0","id":1,"result":{"items":[1,2],"after":null}}"#)
        #expect(JSONValue.writable([1, 2]) == .writable([1, 2]))
        #expect(JSONValue.writable([1, 2]) != .writable([2, 1]))
        #expect(JSONValue.writable([1, 2]) != [1, 2], "never equal to a parsed value")
    }
}
