// Streaming JSON encoder: results are written straight into bytes instead of first being
// built as a tree of `JSONValue`s (one allocation per string, member list and array) and then
// walked. The output is exactly what `JSONValue.write` produces for the same members in the
// same order. Every method result goes out through it, as a `JSONWritable`.

/// A value that writes itself as JSON through a `JSONWriter`.
public protocol JSONWritable {
    func write(to json: inout JSONWriter)
    /// About how many bytes `write` produces: the writer's first allocation.
    var estimatedJSONBytes: Int { get }
}

extension JSONWritable {
    public var estimatedJSONBytes: Int { 256 }

    /// The value as compact JSON text.
    public var encodedJSON: EncodedJSON {
        JSONWriter.encode(capacity: estimatedJSONBytes) { write(to: &$0) }
    }
}

/// A `JSONWritable` value held for writing later (`JSONValue.deferred`). A class, so that
/// `JSONValue` stays as small as a string: an existential payload would make every
/// `JSONValue` (and every member of every parsed request) several words larger and slower to
/// copy. One allocation, holding the value itself.
public class DeferredJSON: JSONWritable, @unchecked Sendable { // immutable; its only subclass holds a Sendable value
    @usableFromInline init() {}
    public func write(to json: inout JSONWriter) { preconditionFailure("DeferredJSON is abstract") }
    public var estimatedJSONBytes: Int { 256 }
}

// Inlinable (and so usable from inline code), so that a caller's `.writable(value)` is
// specialized and does not look up `DeferredValue<Value>`'s metadata at run time.
@usableFromInline
final class DeferredValue<Value: JSONWritable & Sendable>: DeferredJSON, @unchecked Sendable {
    @usableFromInline let value: Value
    @inlinable init(_ value: Value) {
        self.value = value
        super.init()
    }
    @usableFromInline override func write(to json: inout JSONWriter) { value.write(to: &json) }
    @usableFromInline override var estimatedJSONBytes: Int { value.estimatedJSONBytes }
}

extension JSONValue {
    /// `value`, written when the `JSONValue` is (see `deferred`).
    @inlinable
    public static func writable<Value: JSONWritable & Sendable>(_ value: Value) -> JSONValue {
        .deferred(DeferredValue(value))
    }
}

/// Compact JSON text, complete and valid, produced by `JSONWriter`. Embedded in a
/// `JSONValue` as `.encoded`, it is written verbatim.
public struct EncodedJSON: Sendable, Equatable {
    public let bytes: [UInt8]
    fileprivate init(bytes: [UInt8]) { self.bytes = bytes }
}

/// Writes one JSON value. Commas are placed by the writer: a value or key after a
/// complete value gets one. Keys are `StaticString`s from our own code; in debug builds
/// they are checked to need no escaping.
///
/// A writer can have a byte limit (when it writes a `JSONValue.writable` into a response):
/// once its output is longer than the limit it writes nothing more, so a result too large to
/// send is never built in full (the output stops past the limit by at most one string).
public struct JSONWriter {
    private var bytes: [UInt8] = []
    private var needsComma = false
    private var limit = Int.max

    public init(capacity: Int = 256) { bytes.reserveCapacity(capacity) }

    /// Appends to `buffer`, which it takes over until `giveBack(to:)`.
    init(continuing buffer: inout [UInt8], limit: Int, reserving: Int) {
        swap(&bytes, &buffer)
        self.limit = limit
        bytes.reserveCapacity(bytes.count + min(reserving, max(limit - bytes.count, 0)))
    }

    /// Returns the buffer taken by `init(continuing:…)`; false if the output went past the limit.
    mutating func giveBack(to buffer: inout [UInt8]) -> Bool {
        swap(&bytes, &buffer)
        return buffer.count <= limit
    }

    /// Encodes one value with `body`.
    public static func encode(capacity: Int = 256, _ body: (inout JSONWriter) -> Void) -> EncodedJSON {
        var writer = JSONWriter(capacity: capacity)
        body(&writer)
        return writer.finish()
    }

    public consuming func finish() -> EncodedJSON { EncodedJSON(bytes: bytes) }

    /// Past the limit: every write is skipped.
    private var isFull: Bool {
        @inline(__always) get { bytes.count > limit }
    }

    // MARK: Structure

    public mutating func beginObject() {
        if isFull { return }
        separate(); bytes.append(UInt8(ascii: "{")); needsComma = false
    }

    public mutating func endObject() {
        if isFull { return }
        bytes.append(UInt8(ascii: "}")); needsComma = true
    }

    public mutating func beginArray() {
        if isFull { return }
        separate(); bytes.append(UInt8(ascii: "[")); needsComma = false
    }

    public mutating func endArray() {
        if isFull { return }
        bytes.append(UInt8(ascii: "]")); needsComma = true
    }

    /// A member's key; the next value written is its value.
    public mutating func key(_ key: StaticString) {
        if isFull { return }
        separate()
        bytes.append(UInt8(ascii: "\""))
        key.withUTF8Buffer { key in
            assert(key.allSatisfy { $0 >= 0x20 && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }, "key needs escaping")
            bytes.append(contentsOf: key)
        }
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
    }

    // MARK: Values

    public mutating func null() {
        if isFull { return }
        separate(); append("null"); needsComma = true
    }

    public mutating func bool(_ value: Bool) {
        if isFull { return }
        separate()
        append(value ? "true" : "false")
        needsComma = true
    }

    public mutating func int<T: BinaryInteger>(_ value: T) {
        if isFull { return }
        separate()
        bytes.append(contentsOf: String(value).utf8)
        needsComma = true
    }

    /// Any string, escaped as `JSONValue.writeString` does.
    public mutating func string(_ value: String) {
        if isFull { return }
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
        if isFull { return }
        separate()
        bytes.append(UInt8(ascii: "\""))
        let start = bytes.count
        appendContents(&bytes)
        assert(bytes[start...].allSatisfy { $0 >= 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") },
               "asciiString contents need escaping")
        bytes.append(UInt8(ascii: "\""))
        needsComma = true
    }

    /// Any `JSONValue`, written as `JSONValue.write` writes it (within the limit).
    public mutating func value(_ value: JSONValue) {
        if isFull { return }
        separate()
        _ = value.write(into: &bytes, limit: limit)
        needsComma = true
    }

    // Inlinable, so that callers get them specialized to their own value types: these wrap
    // the calls above and cost nothing extra.

    @inlinable
    public mutating func value<Value: JSONWritable>(_ value: Value) {
        value.write(to: &self)
    }

    /// A member: `key` and then `value`.
    @inlinable
    public mutating func member<Value: JSONWritable>(_ key: StaticString, _ value: Value) {
        self.key(key)
        value.write(to: &self)
    }

    /// An object whose members `body` writes.
    @inlinable
    public mutating func object(_ body: (inout JSONWriter) -> Void) {
        beginObject()
        body(&self)
        endObject()
    }

    /// An array of `elements`, each written by `element` (past the limit, writing nothing).
    @inlinable
    public mutating func array<Elements: Sequence>(_ elements: Elements, _ element: (inout JSONWriter, Elements.Element) -> Void) {
        beginArray()
        for item in elements { element(&self, item) }
        endArray()
    }

    @inline(__always)
    private mutating func separate() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
    }

    /// A literal's bytes (a copy of a static buffer; `String.utf8` would go through String).
    @inline(__always)
    private mutating func append(_ literal: StaticString) {
        literal.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }
}

// MARK: - Values that write themselves

extension JSONValue: JSONWritable {
    public func write(to json: inout JSONWriter) { json.value(self) }
}

extension EncodedJSON: JSONWritable {
    public func write(to json: inout JSONWriter) { json.value(.encoded(self)) }
    public var estimatedJSONBytes: Int { bytes.count }
}

extension Bool: JSONWritable {
    @inlinable public func write(to json: inout JSONWriter) { json.bool(self) }
}

extension Int: JSONWritable {
    @inlinable public func write(to json: inout JSONWriter) { json.int(self) }
}

extension String: JSONWritable {
    @inlinable public func write(to json: inout JSONWriter) { json.string(self) }
}

extension Optional: JSONWritable where Wrapped: JSONWritable {
    /// null when nil.
    @inlinable public func write(to json: inout JSONWriter) {
        if let value = self { value.write(to: &json) } else { json.null() }
    }
}

extension Array: JSONWritable where Element: JSONWritable {
    @inlinable public func write(to json: inout JSONWriter) {
        json.array(self) { $1.write(to: &$0) }
    }
}
