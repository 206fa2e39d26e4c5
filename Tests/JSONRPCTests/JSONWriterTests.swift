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
}
