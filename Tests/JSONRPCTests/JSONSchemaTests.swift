import Testing
@testable import JSONRPC

@Suite struct JSONSchemaTests {
    /// Members come in a fixed order, so a document made of schemas prints the same every time.
    @Test func objectsPrintInAFixedOrder() {
        let schema = JSONSchema.object([("b", JSONSchema.boolean), ("a", JSONSchema.string(format: "uuid"))], optional: ["a"])
        #expect(schema.jsonString == #"{"type":"object","properties":{"b":{"type":"boolean"},"a":{"type":"string","format":"uuid"}},"required":["b"],"additionalProperties":false}"#)
        #expect(JSONSchema.object([("a", JSONSchema.any)], optional: ["a"]).jsonString
                == #"{"type":"object","properties":{"a":{}},"additionalProperties":false}"#)
        #expect(JSONSchema.array(of: JSONSchema.string(minLength: 1)).jsonString == #"{"type":"array","items":{"type":"string","minLength":1}}"#)
    }

    @Test func integersKeepOnlyRealBounds() {
        #expect(JSONSchema.integer().jsonString == #"{"type":"integer"}"#)
        #expect(JSONSchema.integer(0...Int.max).jsonString == #"{"type":"integer","minimum":0}"#)
        #expect(JSONSchema.integer(-5...5).jsonString == #"{"type":"integer","minimum":-5,"maximum":5}"#)
    }

    @Test func nullable() {
        #expect(JSONSchema.nullable(JSONSchema.string(format: "date")).jsonString == #"{"type":["string","null"],"format":"date"}"#)
        #expect(JSONSchema.nullable(JSONSchema.string(oneOf: ["a"])).jsonString == #"{"type":["string","null"],"enum":["a",null]}"#)
        let reference: JSONValue = ["$ref": "#/components/schemas/X"]
        #expect(JSONSchema.nullable(reference).jsonString == ##"{"oneOf":[{"$ref":"#/components/schemas/X"},{"type":"null"}]}"##)
        #expect(JSONSchema.nullable(JSONSchema.any) == JSONSchema.any)
    }

    @Test func described() {
        #expect(JSONSchema.described(JSONSchema.boolean, "Yes.").jsonString == #"{"type":"boolean","description":"Yes."}"#)
    }
}
