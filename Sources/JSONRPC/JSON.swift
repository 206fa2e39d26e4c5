// JSON value model, a strict RFC 8259 parser and a compact serializer.
//
// Hand-written over UTF-8 bytes because this sits on the hot path of every request and
// must survive hostile input: Foundation's JSONSerialization loses number literals,
// silently merges duplicate keys and accepts things RFC 8259 does not.

// MARK: - Value model

/// A JSON value exactly as sent: numbers keep their literal text, objects keep member
/// order and duplicate keys, so nothing is lost between parsing and validation.
public enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    /// The number's literal text (e.g. `"1.0"`, `"-0"`, `"1e3"`). The parser only produces
    /// literals valid under the RFC 8259 number grammar. Building this case directly trusts
    /// the caller; prefer `.int(_:)`, `.double(_:)` or `.number(validating:)`. Equality
    /// compares the text, so `1` and `1.0` are different values.
    case number(String)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)
    /// Already-encoded JSON (from `JSONWriter`), written verbatim. Only results use it; the
    /// parser never produces it, and it never equals the parsed form of the same text.
    case encoded(EncodedJSON)
    /// A value that writes itself through a `JSONWriter` when it is written: straight into
    /// the response, never copied, and never past `write(into:limit:)`'s limit. Made by
    /// `JSONValue.writable(_:)`; only results use it. It equals another `.deferred` that
    /// writes the same bytes, nothing else.
    case deferred(DeferredJSON)

    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case (.bool(let l), .bool(let r)): l == r
        case (.number(let l), .number(let r)): l == r
        case (.string(let l), .string(let r)): l == r
        case (.array(let l), .array(let r)): l == r
        case (.object(let l), .object(let r)): l == r
        case (.encoded(let l), .encoded(let r)): l == r
        case (.deferred(let l), .deferred(let r)): l.encodedJSON == r.encodedJSON
        default: false
        }
    }
}

/// A JSON object's members in wire order. Duplicates are kept (not merged) so callers
/// can reject them: silently picking one would let two parsers disagree about a request.
public struct JSONObject: Sendable, Equatable {
    public var members: [(key: String, value: JSONValue)]

    public init() { members = [] }

    public init(_ members: [(key: String, value: JSONValue)]) { self.members = members }

    public var count: Int { members.count }
    public var isEmpty: Bool { members.isEmpty }
    public var keys: [String] { members.map(\.key) }

    /// The value of the first member named `key`. Setting replaces the first member with
    /// that key (or appends); setting `nil` removes every member with that key.
    public subscript(key: String) -> JSONValue? {
        get {
            for member in members where member.key == key { return member.value }
            return nil
        }
        set {
            if let newValue {
                if let index = members.firstIndex(where: { $0.key == key }) {
                    members[index].value = newValue
                } else {
                    members.append((key, newValue))
                }
            } else {
                members.removeAll { $0.key == key }
            }
        }
    }

    public func contains(key: String) -> Bool { members.contains { $0.key == key } }

    /// Appends without looking for an existing member (may create a duplicate).
    public mutating func append(key: String, value: JSONValue) { members.append((key, value)) }

    /// The first key (in wire order) that repeats an earlier key, or nil.
    public var firstDuplicateKey: String? {
        // Quadratic scan is cheapest for typical small objects; a set bounds hostile ones.
        if members.count <= 8 {
            for i in members.indices.dropFirst() {
                for j in 0..<i where members[j].key == members[i].key { return members[i].key }
            }
            return nil
        }
        var seen = Set<String>(minimumCapacity: members.count)
        for member in members where !seen.insert(member.key).inserted { return member.key }
        return nil
    }

    public var hasDuplicateKeys: Bool { firstDuplicateKey != nil }

    /// Order-sensitive, member-by-member equality.
    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        guard lhs.members.count == rhs.members.count else { return false }
        for (l, r) in zip(lhs.members, rhs.members) where l.key != r.key || l.value != r.value {
            return false
        }
        return true
    }
}

extension JSONObject: ExpressibleByDictionaryLiteral {
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        members = elements.map { (key: $0.0, value: $0.1) }
    }
}

// MARK: - Construction and access

extension JSONValue {
    public static func int<T: BinaryInteger>(_ value: T) -> JSONValue { .number(String(value)) }

    /// nil for NaN and infinities, which JSON cannot represent.
    public static func double(_ value: Double) -> JSONValue? {
        guard value.isFinite else { return nil }
        // Swift prints finite doubles as "1.0", "1e-07", "1e+20": all valid JSON literals.
        return .number(value.description)
    }

    /// A number from literal text, or nil if the text is not a valid JSON number.
    public static func number(validating literal: String) -> JSONValue? {
        JSONNumberGrammar.isValid(literal) ? .number(literal) : nil
    }

    public var isNull: Bool { if case .null = self { true } else { false } }

    public var boolValue: Bool? { if case .bool(let b) = self { b } else { nil } }

    public var stringValue: String? { if case .string(let s) = self { s } else { nil } }

    public var numberLiteral: String? { if case .number(let n) = self { n } else { nil } }

    /// The value of an integer literal (no fraction, no exponent) that fits in `Int`.
    /// `5` → 5; `5.0`, `1e2` and out-of-range literals → nil.
    public var intValue: Int? {
        guard case .number(let literal) = self else { return nil }
        return JSONNumberGrammar.exactInt(literal)
    }

    /// The nearest `Double` (may be ±infinity for huge literals).
    public var doubleValue: Double? {
        guard case .number(let literal) = self, JSONNumberGrammar.isValid(literal) else { return nil }
        return Double(literal)
    }

    public var arrayValue: [JSONValue]? { if case .array(let a) = self { a } else { nil } }

    public var objectValue: JSONObject? { if case .object(let o) = self { o } else { nil } }

    /// Member lookup on an object (first occurrence); nil for non-objects.
    public subscript(key: String) -> JSONValue? { objectValue?[key] }

    /// Element lookup on an array, bounds-checked; nil for non-arrays.
    public subscript(index: Int) -> JSONValue? {
        guard case .array(let a) = self, a.indices.contains(index) else { return nil }
        return a[index]
    }
}

extension JSONValue: ExpressibleByBooleanLiteral, ExpressibleByStringLiteral,
    ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral, ExpressibleByArrayLiteral,
    ExpressibleByDictionaryLiteral
{
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .int(value) }
    public init(floatLiteral value: Double) { self = .double(value) ?? .null }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(JSONObject(elements.map { (key: $0.0, value: $0.1) }))
    }
}

extension JSONValue: CustomStringConvertible {
    /// Compact JSON text.
    public var description: String { jsonString }
}

// MARK: - Number grammar

/// RFC 8259: `-? (0 | [1-9][0-9]*) (\.[0-9]+)? ([eE][+-]?[0-9]+)?`
enum JSONNumberGrammar {
    enum Scan {
        case ok(end: Int)
        case failure(at: Int, reason: String)
    }

    @inline(__always) static func isDigit(_ b: UInt8) -> Bool { b &- 0x30 < 10 }

    /// Scans the longest number starting at `start`; the caller checks what follows.
    static func scan(_ p: UnsafeBufferPointer<UInt8>, from start: Int) -> Scan {
        let n = p.count
        var i = start
        if i < n, p[i] == UInt8(ascii: "-") { i += 1 }
        guard i < n, isDigit(p[i]) else { return .failure(at: i, reason: "expected digit") }
        if p[i] == UInt8(ascii: "0") {
            i += 1
            if i < n, isDigit(p[i]) { return .failure(at: i, reason: "leading zero in number") }
        } else {
            while i < n, isDigit(p[i]) { i += 1 }
        }
        if i < n, p[i] == UInt8(ascii: ".") {
            i += 1
            guard i < n, isDigit(p[i]) else {
                return .failure(at: i, reason: "expected digit after decimal point")
            }
            while i < n, isDigit(p[i]) { i += 1 }
        }
        if i < n, p[i] | 0x20 == UInt8(ascii: "e") {
            i += 1
            if i < n, p[i] == UInt8(ascii: "+") || p[i] == UInt8(ascii: "-") { i += 1 }
            guard i < n, isDigit(p[i]) else {
                return .failure(at: i, reason: "expected digit in exponent")
            }
            while i < n, isDigit(p[i]) { i += 1 }
        }
        return .ok(end: i)
    }

    static func isValid(_ literal: String) -> Bool {
        var literal = literal
        return literal.withUTF8 { p in
            if case .ok(let end) = scan(p, from: 0), end == p.count { return true }
            return false
        }
    }

    /// Int value of `-?[0-9]+` literals that fit; nil for fractions, exponents, overflow.
    static func exactInt(_ literal: String) -> Int? {
        var literal = literal
        return literal.withUTF8 { p -> Int? in
            guard case .ok(let end) = scan(p, from: 0), end == p.count else { return nil }
            for b in p where b == UInt8(ascii: ".") || b | 0x20 == UInt8(ascii: "e") {
                return nil
            }
            // Accumulate negatively so Int.min parses; stop at the first overflow, so even a
            // megabyte of digits costs nothing.
            let negative = p.first == UInt8(ascii: "-")
            var value = 0
            for b in p.dropFirst(negative ? 1 : 0) {
                let (m, o1) = value.multipliedReportingOverflow(by: 10)
                let (s, o2) = m.subtractingReportingOverflow(Int(b &- 0x30))
                if o1 || o2 { return nil }
                value = s
            }
            if negative { return value }
            return value == Int.min ? nil : -value
        }
    }
}

// MARK: - Parser

/// Where and why parsing failed. `offset` is a byte offset into the input.
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure, for the -32700 `data.reason` (`RPCReason`); `reason` is the prose.
    public enum Kind: Sendable, Equatable {
        case syntax, invalidUTF8, tooDeep
    }

    public var offset: Int
    public var reason: String
    public var kind: Kind

    public init(offset: Int, reason: String, kind: Kind = .syntax) {
        self.offset = offset
        self.reason = reason
        self.kind = kind
    }

    public var description: String { "\(reason) at byte \(offset)" }
}

/// Strict RFC 8259 parser: one value, optionally surrounded by space/tab/CR/LF.
/// Rejects comments, trailing commas, NaN/Infinity, leading zeros, single quotes,
/// unescaped control characters, invalid UTF-8 (overlong forms, UTF-8-encoded
/// surrogates, bytes above 0xF4), unpaired `\u` surrogate escapes and a byte-order mark.
public enum JSONParser {
    /// Containers nested deeper than this are a parse error. Parsing is iterative, so the
    /// limit is not about the parser's stack; it bounds the recursion of everything that
    /// later walks the value (serializer, deinit), so keep it modest.
    public static let defaultMaxDepth = 128

    public static func parse(
        _ bytes: [UInt8], maxDepth: Int = defaultMaxDepth
    ) throws(JSONParseError) -> JSONValue {
        let result = bytes.withUnsafeBufferPointer { parseResult($0, maxDepth: maxDepth) }
        return try result.get()
    }

    public static func parse(
        _ buffer: UnsafeRawBufferPointer, maxDepth: Int = defaultMaxDepth
    ) throws(JSONParseError) -> JSONValue {
        try parseResult(buffer.assumingMemoryBound(to: UInt8.self), maxDepth: maxDepth).get()
    }

    public static func parse(
        _ text: String, maxDepth: Int = defaultMaxDepth
    ) throws(JSONParseError) -> JSONValue {
        var text = text
        let result = text.withUTF8 { parseResult($0, maxDepth: maxDepth) }
        return try result.get()
    }

    static func parseResult(
        _ bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int
    ) -> Result<JSONValue, JSONParseError> {
        var parser = Parser(bytes: bytes, maxDepth: maxDepth)
        do throws(JSONParseError) {
            return .success(try parser.parseDocument())
        } catch {
            return .failure(error)
        }
    }
}

extension JSONValue {
    /// Parses JSON text (see `JSONParser`).
    public init(parsing bytes: [UInt8], maxDepth: Int = JSONParser.defaultMaxDepth) throws(JSONParseError) {
        self = try JSONParser.parse(bytes, maxDepth: maxDepth)
    }

    public init(parsing text: String, maxDepth: Int = JSONParser.defaultMaxDepth) throws(JSONParseError) {
        self = try JSONParser.parse(text, maxDepth: maxDepth)
    }
}

@inline(__always) func isJSONWhitespace(_ b: UInt8) -> Bool {
    b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09
}

private struct Parser {
    let bytes: UnsafeBufferPointer<UInt8>
    let maxDepth: Int
    var i = 0
    /// Reused across strings that contain escapes, to avoid an allocation per string.
    var scratch: [UInt8] = []

    init(bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
    }

    /// One open container. Iterating with an explicit stack (instead of recursing) means
    /// no input can exhaust the thread's stack, whatever `maxDepth` is.
    struct Frame {
        var isObject: Bool
        var elements: [JSONValue] = []
        var members: [(key: String, value: JSONValue)] = []
        var pendingKey = ""
    }

    func fail(_ reason: String, at offset: Int? = nil, kind: JSONParseError.Kind = .syntax) -> JSONParseError {
        JSONParseError(offset: offset ?? i, reason: reason, kind: kind)
    }

    mutating func skipWhitespace() {
        while i < bytes.count, isJSONWhitespace(bytes[i]) { i += 1 }
    }

    mutating func parseDocument() throws(JSONParseError) -> JSONValue {
        skipWhitespace()
        let value = try parseValue()
        skipWhitespace()
        guard i == bytes.count else { throw fail("unexpected data after JSON value") }
        return value
    }

    /// Parses one value; `i` must be at a non-whitespace byte.
    mutating func parseValue() throws(JSONParseError) -> JSONValue {
        var stack: [Frame] = []
        while true {
            guard i < bytes.count else { throw fail("unexpected end of input") }
            var value: JSONValue
            switch bytes[i] {
            case UInt8(ascii: "["):
                guard stack.count < maxDepth else { throw fail("nesting too deep", kind: .tooDeep) }
                i += 1
                skipWhitespace()
                if i < bytes.count, bytes[i] == UInt8(ascii: "]") {
                    i += 1
                    value = .array([])
                } else {
                    stack.append(Frame(isObject: false))
                    continue
                }
            case UInt8(ascii: "{"):
                guard stack.count < maxDepth else { throw fail("nesting too deep", kind: .tooDeep) }
                i += 1
                skipWhitespace()
                if i < bytes.count, bytes[i] == UInt8(ascii: "}") {
                    i += 1
                    value = .object(JSONObject())
                } else {
                    let key = try parseKeyAndColon()
                    stack.append(Frame(isObject: true, pendingKey: key))
                    continue
                }
            case UInt8(ascii: "\""):
                value = .string(try parseString())
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                value = .number(try parseNumber())
            case UInt8(ascii: "t"):
                try expectLiteral("true")
                value = .bool(true)
            case UInt8(ascii: "f"):
                try expectLiteral("false")
                value = .bool(false)
            case UInt8(ascii: "n"):
                try expectLiteral("null")
                value = .null
            case 0x80...:
                throw fail("unexpected non-ASCII byte")
            default:
                throw fail("unexpected character")
            }

            // Attach the finished value to its container, closing containers as they end.
            while true {
                guard !stack.isEmpty else { return value }
                let top = stack.count - 1
                skipWhitespace()
                if stack[top].isObject {
                    stack[top].members.append((stack[top].pendingKey, value))
                    guard i < bytes.count else { throw fail("unexpected end of input") }
                    if bytes[i] == UInt8(ascii: ",") {
                        i += 1
                        skipWhitespace()
                        stack[top].pendingKey = try parseKeyAndColon()
                        break
                    } else if bytes[i] == UInt8(ascii: "}") {
                        i += 1
                        value = .object(JSONObject(stack.removeLast().members))
                    } else {
                        throw fail("expected ',' or '}'")
                    }
                } else {
                    stack[top].elements.append(value)
                    guard i < bytes.count else { throw fail("unexpected end of input") }
                    if bytes[i] == UInt8(ascii: ",") {
                        i += 1
                        skipWhitespace()
                        break
                    } else if bytes[i] == UInt8(ascii: "]") {
                        i += 1
                        value = .array(stack.removeLast().elements)
                    } else {
                        throw fail("expected ',' or ']'")
                    }
                }
            }
        }
    }

    /// `"key" ws : ws` — leaves `i` at the value.
    mutating func parseKeyAndColon() throws(JSONParseError) -> String {
        guard i < bytes.count else { throw fail("unexpected end of input") }
        guard bytes[i] == UInt8(ascii: "\"") else { throw fail("expected string key") }
        let key = try parseString()
        skipWhitespace()
        guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { throw fail("expected ':'") }
        i += 1
        skipWhitespace()
        return key
    }

    mutating func expectLiteral(_ literal: StaticString) throws(JSONParseError) {
        let count = literal.utf8CodeUnitCount
        let start = literal.utf8Start
        for k in 0..<count {
            guard i + k < bytes.count, bytes[i + k] == start[k] else {
                throw fail("invalid literal", at: i + k)
            }
        }
        i += count
    }

    mutating func parseNumber() throws(JSONParseError) -> String {
        let start = i
        switch JSONNumberGrammar.scan(bytes, from: i) {
        case .ok(let end):
            i = end
            return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
        case .failure(let at, let reason):
            throw fail(reason, at: at)
        }
    }

    /// `i` at the opening quote. Fast path: no escapes → one String built from the slice.
    mutating func parseString() throws(JSONParseError) -> String {
        let open = i
        i += 1
        let start = i
        while i < bytes.count {
            let b = bytes[i]
            if b == UInt8(ascii: "\"") {
                let s = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self)
                i += 1
                return s
            } else if b == UInt8(ascii: "\\") {
                return try parseStringWithEscapes(contentStart: start, open: open)
            } else if b < 0x20 {
                throw fail("unescaped control character in string")
            } else if b < 0x80 {
                i += 1
            } else {
                i += try utf8SequenceLength()
            }
        }
        throw fail("unterminated string", at: open)
    }

    mutating func parseStringWithEscapes(contentStart: Int, open: Int) throws(JSONParseError) -> String {
        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[contentStart..<i]))
        while i < bytes.count {
            let b = bytes[i]
            if b == UInt8(ascii: "\"") {
                i += 1
                return String(decoding: scratch, as: UTF8.self)
            } else if b == UInt8(ascii: "\\") {
                try parseEscape()
            } else if b < 0x20 {
                throw fail("unescaped control character in string")
            } else if b < 0x80 {
                scratch.append(b)
                i += 1
            } else {
                let length = try utf8SequenceLength()
                scratch.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[i..<(i + length)]))
                i += length
            }
        }
        throw fail("unterminated string", at: open)
    }

    /// `i` at the backslash; appends the decoded bytes to `scratch`.
    mutating func parseEscape() throws(JSONParseError) {
        let escapeStart = i
        i += 1
        guard i < bytes.count else { throw fail("unterminated string") }
        let c = bytes[i]
        i += 1
        switch c {
        case UInt8(ascii: "\""): scratch.append(0x22)
        case UInt8(ascii: "\\"): scratch.append(0x5C)
        case UInt8(ascii: "/"): scratch.append(0x2F)
        case UInt8(ascii: "b"): scratch.append(0x08)
        case UInt8(ascii: "f"): scratch.append(0x0C)
        case UInt8(ascii: "n"): scratch.append(0x0A)
        case UInt8(ascii: "r"): scratch.append(0x0D)
        case UInt8(ascii: "t"): scratch.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = try parseHex4()
            if 0xD800...0xDBFF ~= scalar {
                // A high surrogate is only meaningful followed by an escaped low surrogate.
                guard i + 1 < bytes.count, bytes[i] == UInt8(ascii: "\\"),
                    bytes[i + 1] == UInt8(ascii: "u")
                else { throw fail("unpaired surrogate escape", at: escapeStart) }
                i += 2
                let low = try parseHex4()
                guard 0xDC00...0xDFFF ~= low else {
                    throw fail("unpaired surrogate escape", at: escapeStart)
                }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if 0xDC00...0xDFFF ~= scalar {
                throw fail("unpaired surrogate escape", at: escapeStart)
            }
            appendUTF8(scalar)
        default:
            throw fail("invalid escape", at: escapeStart)
        }
    }

    mutating func parseHex4() throws(JSONParseError) -> UInt32 {
        guard i + 4 <= bytes.count else { throw fail("invalid \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let b = bytes[i]
            let digit: UInt8
            switch b {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = b - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = b - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = b - UInt8(ascii: "A") + 10
            default: throw fail("invalid \\u escape")
            }
            value = value << 4 | UInt32(digit)
            i += 1
        }
        return value
    }

    mutating func appendUTF8(_ scalar: UInt32) {
        switch scalar {
        case ..<0x80:
            scratch.append(UInt8(scalar))
        case ..<0x800:
            scratch.append(UInt8(0xC0 | scalar >> 6))
            scratch.append(UInt8(0x80 | scalar & 0x3F))
        case ..<0x10000:
            scratch.append(UInt8(0xE0 | scalar >> 12))
            scratch.append(UInt8(0x80 | scalar >> 6 & 0x3F))
            scratch.append(UInt8(0x80 | scalar & 0x3F))
        default:
            scratch.append(UInt8(0xF0 | scalar >> 18))
            scratch.append(UInt8(0x80 | scalar >> 12 & 0x3F))
            scratch.append(UInt8(0x80 | scalar >> 6 & 0x3F))
            scratch.append(UInt8(0x80 | scalar & 0x3F))
        }
    }

    /// Length of the well-formed multi-byte UTF-8 sequence at `i` (Unicode Table 3-7),
    /// which rejects overlong forms, encoded surrogates and anything above U+10FFFF.
    func utf8SequenceLength() throws(JSONParseError) -> Int {
        func continuation(_ k: Int, _ low: UInt8 = 0x80, _ high: UInt8 = 0xBF) -> Bool {
            i + k < bytes.count && low <= bytes[i + k] && bytes[i + k] <= high
        }
        let ok: Bool
        let length: Int
        switch bytes[i] {
        case 0xC2...0xDF:
            length = 2
            ok = continuation(1)
        case 0xE0:
            length = 3
            ok = continuation(1, 0xA0) && continuation(2)
        case 0xE1...0xEC, 0xEE...0xEF:
            length = 3
            ok = continuation(1) && continuation(2)
        case 0xED:
            length = 3
            ok = continuation(1, 0x80, 0x9F) && continuation(2)
        case 0xF0:
            length = 4
            ok = continuation(1, 0x90) && continuation(2) && continuation(3)
        case 0xF1...0xF3:
            length = 4
            ok = continuation(1) && continuation(2) && continuation(3)
        case 0xF4:
            length = 4
            ok = continuation(1, 0x80, 0x8F) && continuation(2) && continuation(3)
        default:
            length = 0
            ok = false
        }
        guard ok else { throw fail("invalid UTF-8", kind: .invalidUTF8) }
        return length
    }
}

// MARK: - Serializer

extension JSONValue {
    /// Appends compact JSON (no insignificant whitespace) to `out`.
    public func write(into out: inout [UInt8]) {
        _ = write(into: &out, limit: .max)
    }

    /// Appends compact JSON to `out` unless `out` grows past `limit` bytes: then it stops at
    /// the next element boundary and returns false, with `out` holding a partial value (past
    /// the limit by at most one escaped string). So a value too large to send is never built in full.
    public func write(into out: inout [UInt8], limit: Int) -> Bool {
        switch self {
        case .null:
            out.append(contentsOf: "null".utf8)
        case .bool(let b):
            out.append(contentsOf: b ? "true".utf8 : "false".utf8)
        case .number(let literal):
            // Literals are written verbatim; an invalid hand-built one becomes null rather
            // than corrupting the output stream.
            if JSONNumberGrammar.isValid(literal) {
                out.append(contentsOf: literal.utf8)
            } else {
                out.append(contentsOf: "null".utf8)
            }
        case .string(let s):
            JSONValue.writeString(s, into: &out)
        case .encoded(let json):
            guard out.count + json.bytes.count <= limit else { return false }
            out.append(contentsOf: json.bytes)
        case .deferred(let value):
            var writer = JSONWriter(continuing: &out, limit: limit, reserving: value.estimatedJSONBytes)
            value.write(to: &writer)
            guard writer.giveBack(to: &out) else { return false }
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                guard element.write(into: &out, limit: limit), out.count <= limit else { return false }
            }
            out.append(UInt8(ascii: "]"))
        case .object(let object):
            out.append(UInt8(ascii: "{"))
            for (index, member) in object.members.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                JSONValue.writeString(member.key, into: &out)
                out.append(UInt8(ascii: ":"))
                guard member.value.write(into: &out, limit: limit), out.count <= limit else { return false }
            }
            out.append(UInt8(ascii: "}"))
        }
        return out.count <= limit
    }

    /// Whether `text` is a JSON number exactly as RFC 8259 writes one (`12`, `-0.5`, `1e3`; not
    /// `007`, `.5`, `5.`, `+1`, `0x10` or `inf`).
    public static func isNumberLiteral(_ text: String) -> Bool { JSONNumberGrammar.isValid(text) }

    /// Compact JSON bytes.
    public var jsonBytes: [UInt8] {
        var out: [UInt8] = []
        write(into: &out)
        return out
    }

    /// Compact JSON text.
    public var jsonString: String { String(decoding: jsonBytes, as: UTF8.self) }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// Writes a JSON string literal: escapes `"`, `\` and every control character below
    /// 0x20; everything else (including `/`, DEL, U+2028/2029) is copied in runs.
    public static func writeString(_ string: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var string = string
        string.withUTF8 { u in
            var runStart = 0
            for j in 0..<u.count {
                let b = u[j]
                if b >= 0x20, b != UInt8(ascii: "\""), b != UInt8(ascii: "\\") { continue }
                if runStart < j { out.append(contentsOf: UnsafeBufferPointer(rebasing: u[runStart..<j])) }
                runStart = j + 1
                out.append(UInt8(ascii: "\\"))
                switch b {
                case UInt8(ascii: "\""): out.append(UInt8(ascii: "\""))
                case UInt8(ascii: "\\"): out.append(UInt8(ascii: "\\"))
                case 0x0A: out.append(UInt8(ascii: "n"))
                case 0x0D: out.append(UInt8(ascii: "r"))
                case 0x09: out.append(UInt8(ascii: "t"))
                case 0x08: out.append(UInt8(ascii: "b"))
                case 0x0C: out.append(UInt8(ascii: "f"))
                default:
                    out.append(contentsOf: "u00".utf8)
                    out.append(hexDigits[Int(b >> 4)])
                    out.append(hexDigits[Int(b & 0xF)])
                }
            }
            if runStart < u.count { out.append(contentsOf: UnsafeBufferPointer(rebasing: u[runStart...])) }
        }
        out.append(UInt8(ascii: "\""))
    }
}
