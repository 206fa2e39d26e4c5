// Streaming JSON encoder for hot paths: results are written straight into bytes instead of
// first being built as a tree of `JSONValue`s (one allocation per string, member list and
// array) and then walked. The output is exactly what `JSONValue.write` produces for the
// same members in the same order.

/// Compact JSON text, complete and valid, produced by `JSONWriter`. Embedded in a
/// `JSONValue` as `.encoded`, it is written verbatim.
public struct EncodedJSON: Sendable, Equatable {
    public let bytes: [UInt8]
    fileprivate init(bytes: [UInt8]) { self.bytes = bytes }
}

/// Writes one JSON value. Commas are placed by the writer: a value or key after a
/// complete value gets one. Keys are `StaticString`s from our own code; in debug builds
/// they are checked to need no escaping.
public struct JSONWriter {
    private var bytes: [UInt8] = []
    private var needsComma = false

    public init(capacity: Int = 256) { bytes.reserveCapacity(capacity) }

    /// Encodes one value with `body`.
    public static func encode(capacity: Int = 256, _ body: (inout JSONWriter) -> Void) -> EncodedJSON {
        var writer = JSONWriter(capacity: capacity)
        body(&writer)
        return writer.finish()
    }

    public consuming func finish() -> EncodedJSON { EncodedJSON(bytes: bytes) }

    // MARK: Structure

    public mutating func beginObject() { separate(); bytes.append(UInt8(ascii: "{")); needsComma = false }
    public mutating func endObject() { bytes.append(UInt8(ascii: "}")); needsComma = true }
    public mutating func beginArray() { separate(); bytes.append(UInt8(ascii: "[")); needsComma = false }
    public mutating func endArray() { bytes.append(UInt8(ascii: "]")); needsComma = true }

    /// A member's key; the next value written is its value.
    public mutating func key(_ key: StaticString) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        key.withUTF8Buffer { key in
            assert(key.allSatisfy { $0 >= 0x20 && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }, "key needs escaping")
            bytes.append(contentsOf: key)
        }
        bytes.append(contentsOf: "\":".utf8)
        needsComma = false
    }

    // MARK: Values

    public mutating func null() { separate(); bytes.append(contentsOf: "null".utf8); needsComma = true }

    public mutating func bool(_ value: Bool) {
        separate()
        bytes.append(contentsOf: value ? "true".utf8 : "false".utf8)
        needsComma = true
    }

    public mutating func int<T: BinaryInteger>(_ value: T) {
        separate()
        bytes.append(contentsOf: String(value).utf8)
        needsComma = true
    }

    /// Any string, escaped as `JSONValue.writeString` does.
    public mutating func string(_ value: String) {
        separate()
        JSONValue.writeString(value, into: &bytes)
        needsComma = true
    }

    public mutating func string(_ value: String?) {
        if let value { string(value) } else { null() }
    }

    /// A string whose characters `appendContents` appends itself. They must be printable
    /// ASCII other than `"` and `\` (dates, timestamps, UUIDs): nothing is escaped.
    public mutating func asciiString(_ appendContents: (inout [UInt8]) -> Void) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        let start = bytes.count
        appendContents(&bytes)
        assert(bytes[start...].allSatisfy { $0 >= 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") },
               "asciiString contents need escaping")
        bytes.append(UInt8(ascii: "\""))
        needsComma = true
    }

    /// Any `JSONValue`, written as `JSONValue.write` writes it.
    public mutating func value(_ value: JSONValue) {
        separate()
        value.write(into: &bytes)
        needsComma = true
    }

    @inline(__always)
    private mutating func separate() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
    }
}
