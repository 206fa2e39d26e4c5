import Foundation

/// A JSON value exactly as it appeared on the wire, for black-box protocol tests.
///
/// Unlike `JSONSerialization`, numbers keep their literal text (so `1.0`, `-0`, `1e3` and
/// `12345678901234567890123` can be compared byte for byte), booleans are never confused
/// with numbers, object members keep their order, and duplicate member names are a parse
/// error. The parser is strict RFC 8259 (no trailing commas, no leading zeros, no lone
/// surrogates, valid UTF-8 only).
public enum WireJSON: Sendable, Equatable, CustomStringConvertible {
    case null
    case bool(Bool)
    /// The number's literal text, e.g. "1.0".
    case number(String)
    case string(String)
    case array([WireJSON])
    /// Members in wire order. Equality ignores the order (JSON objects are unordered).
    case object([Member])

    public struct Member: Sendable, Equatable {
        public var key: String
        public var value: WireJSON
        public init(_ key: String, _ value: WireJSON) {
            self.key = key
            self.value = value
        }
    }

    // MARK: Accessors

    public subscript(key: String) -> WireJSON? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.key == key }?.value
    }

    /// This object with one more member (or the member replaced): e.g. a habit as day.get
    /// lists it, with `due`.
    public func with(_ key: String, _ value: WireJSON) -> WireJSON {
        guard case .object(var members) = self else { return self }
        members.removeAll { $0.key == key }
        members.append(Member(key, value))
        return .object(members)
    }

    public subscript(index: Int) -> WireJSON? {
        guard case .array(let elements) = self, elements.indices.contains(index) else { return nil }
        return elements[index]
    }

    public var stringValue: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// The integer value of an integer literal (no fraction or exponent), else nil.
    public var intValue: Int? {
        guard case .number(let literal) = self else { return nil }
        return Int(literal)
    }

    /// The literal text of a number, else nil.
    public var numberLiteral: String? {
        if case .number(let literal) = self { return literal }
        return nil
    }

    public var arrayValue: [WireJSON]? {
        if case .array(let elements) = self { return elements }
        return nil
    }

    public var members: [Member]? {
        if case .object(let members) = self { return members }
        return nil
    }

    /// The member names of an object, in wire order (nil if not an object).
    public var keys: [String]? { members?.map(\.key) }

    public var isNull: Bool { self == .null }

    // MARK: Equality

    public static func == (lhs: WireJSON, rhs: WireJSON) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case (.bool(let a), .bool(let b)): return a == b
        case (.number(let a), .number(let b)): return a == b
        case (.string(let a), .string(let b)): return a == b
        case (.array(let a), .array(let b)): return a == b
        case (.object(let a), .object(let b)):
            guard a.count == b.count else { return false }
            for member in a {
                guard let other = b.first(where: { $0.key == member.key }), other.value == member.value else { return false }
            }
            return true
        default: return false
        }
    }

    // MARK: Encoding

    /// Compact JSON text (no whitespace), members in order.
    public var encoded: String {
        var out = ""
        write(into: &out)
        return out
    }

    public var description: String { encoded }

    private func write(into out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let value): out += value ? "true" : "false"
        case .number(let literal): out += literal
        case .string(let text): WireJSON.writeString(text, into: &out)
        case .array(let elements):
            out += "["
            for (index, element) in elements.enumerated() {
                if index > 0 { out += "," }
                element.write(into: &out)
            }
            out += "]"
        case .object(let members):
            out += "{"
            for (index, member) in members.enumerated() {
                if index > 0 { out += "," }
                WireJSON.writeString(member.key, into: &out)
                out += ":"
                member.value.write(into: &out)
            }
            out += "}"
        }
    }

    public static func quoted(_ text: String) -> String {
        var out = ""
        writeString(text, into: &out)
        return out
    }

    private static func writeString(_ text: String, into out: inout String) {
        out += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 {
                    out += String(format: "\\u%04x", scalar.value)
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        out += "\""
    }

    // MARK: Parsing

    public struct ParseError: Error, CustomStringConvertible, Sendable {
        public var offset: Int
        public var reason: String
        public var description: String { "invalid JSON at byte \(offset): \(reason)" }
    }

    public static func parse(_ text: String) throws(ParseError) -> WireJSON {
        try parse(Array(text.utf8))
    }

    /// Parses one complete JSON text (surrounding JSON whitespace allowed).
    public static func parse(_ bytes: [UInt8]) throws(ParseError) -> WireJSON {
        guard String(validating: bytes, as: UTF8.self) != nil else { throw ParseError(offset: 0, reason: "invalid UTF-8") }
        var parser = Parser(bytes: bytes)
        parser.skipWhitespace()
        let value = try parser.value(depth: 0)
        parser.skipWhitespace()
        guard parser.index == bytes.count else { throw ParseError(offset: parser.index, reason: "trailing characters") }
        return value
    }

    private struct Parser {
        let bytes: [UInt8]
        var index = 0

        init(bytes: [UInt8]) { self.bytes = bytes }

        func fail(_ reason: String) -> ParseError { ParseError(offset: index, reason: reason) }

        var peek: UInt8? { index < bytes.count ? bytes[index] : nil }

        mutating func skipWhitespace() {
            while let byte = peek, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { index += 1 }
        }

        mutating func expect(_ literal: String) throws(ParseError) {
            for byte in literal.utf8 {
                guard peek == byte else { throw fail("expected \(literal)") }
                index += 1
            }
        }

        mutating func value(depth: Int) throws(ParseError) -> WireJSON {
            guard depth < 512 else { throw fail("too deep") }
            guard let byte = peek else { throw fail("unexpected end") }
            switch byte {
            case UInt8(ascii: "n"): try expect("null"); return .null
            case UInt8(ascii: "t"): try expect("true"); return .bool(true)
            case UInt8(ascii: "f"): try expect("false"); return .bool(false)
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
            case UInt8(ascii: "["):
                index += 1
                var elements: [WireJSON] = []
                skipWhitespace()
                if peek == UInt8(ascii: "]") { index += 1; return .array(elements) }
                while true {
                    skipWhitespace()
                    elements.append(try value(depth: depth + 1))
                    skipWhitespace()
                    if peek == UInt8(ascii: ",") { index += 1; continue }
                    if peek == UInt8(ascii: "]") { index += 1; return .array(elements) }
                    throw fail("expected , or ]")
                }
            case UInt8(ascii: "{"):
                index += 1
                var members: [Member] = []
                var seen = Set<String>()
                skipWhitespace()
                if peek == UInt8(ascii: "}") { index += 1; return .object(members) }
                while true {
                    skipWhitespace()
                    guard peek == UInt8(ascii: "\"") else { throw fail("expected a member name") }
                    let key = try string()
                    guard seen.insert(key).inserted else { throw fail("duplicate member \(key)") }
                    skipWhitespace()
                    try expect(":")
                    skipWhitespace()
                    members.append(Member(key, try value(depth: depth + 1)))
                    skipWhitespace()
                    if peek == UInt8(ascii: ",") { index += 1; continue }
                    if peek == UInt8(ascii: "}") { index += 1; return .object(members) }
                    throw fail("expected , or }")
                }
            default:
                throw fail("unexpected character")
            }
        }

        mutating func digits() -> Int {
            let start = index
            while let byte = peek, byte >= 0x30, byte <= 0x39 { index += 1 }
            return index - start
        }

        mutating func number() throws(ParseError) -> String {
            let start = index
            if peek == UInt8(ascii: "-") { index += 1 }
            if peek == UInt8(ascii: "0") {
                index += 1
            } else if digits() == 0 {
                throw fail("expected a digit")
            }
            if peek == UInt8(ascii: ".") {
                index += 1
                guard digits() > 0 else { throw fail("expected a fraction digit") }
            }
            if peek == UInt8(ascii: "e") || peek == UInt8(ascii: "E") {
                index += 1
                if peek == UInt8(ascii: "+") || peek == UInt8(ascii: "-") { index += 1 }
                guard digits() > 0 else { throw fail("expected an exponent digit") }
            }
            return String(decoding: bytes[start..<index], as: UTF8.self)
        }

        mutating func hex4() throws(ParseError) -> UInt32 {
            var value: UInt32 = 0
            for _ in 0..<4 {
                guard let byte = peek else { throw fail("short \\u escape") }
                let digit: UInt32
                switch byte {
                case 0x30...0x39: digit = UInt32(byte - 0x30)
                case 0x41...0x46: digit = UInt32(byte - 0x41 + 10)
                case 0x61...0x66: digit = UInt32(byte - 0x61 + 10)
                default: throw fail("bad hex digit")
                }
                value = value * 16 + digit
                index += 1
            }
            return value
        }

        mutating func string() throws(ParseError) -> String {
            index += 1 // opening quote
            var out: [UInt8] = []
            while true {
                guard let byte = peek else { throw fail("unterminated string") }
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    return String(decoding: out, as: UTF8.self)
                case UInt8(ascii: "\\"):
                    guard let escape = peek else { throw fail("unterminated escape") }
                    index += 1
                    switch escape {
                    case UInt8(ascii: "\""): out.append(0x22)
                    case UInt8(ascii: "\\"): out.append(0x5C)
                    case UInt8(ascii: "/"): out.append(0x2F)
                    case UInt8(ascii: "b"): out.append(0x08)
                    case UInt8(ascii: "f"): out.append(0x0C)
                    case UInt8(ascii: "n"): out.append(0x0A)
                    case UInt8(ascii: "r"): out.append(0x0D)
                    case UInt8(ascii: "t"): out.append(0x09)
                    case UInt8(ascii: "u"):
                        var code = try hex4()
                        if (0xD800...0xDBFF).contains(code) {
                            guard peek == UInt8(ascii: "\\") else { throw fail("lone high surrogate") }
                            index += 1
                            guard peek == UInt8(ascii: "u") else { throw fail("lone high surrogate") }
                            index += 1
                            let low = try hex4()
                            guard (0xDC00...0xDFFF).contains(low) else { throw fail("bad low surrogate") }
                            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                        } else if (0xDC00...0xDFFF).contains(code) {
                            throw fail("lone low surrogate")
                        }
                        guard let scalar = Unicode.Scalar(code) else { throw fail("bad scalar") }
                        out.append(contentsOf: Array(String(Character(scalar)).utf8))
                    default:
                        throw fail("bad escape")
                    }
                default:
                    guard byte >= 0x20 else { throw fail("control character in string") }
                    out.append(byte)
                }
            }
        }
    }
}

// MARK: - Literals, so params can be written inline: ["user_id": .string(id), "name": "Run"]

extension WireJSON: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral {
    // Deliberately not ExpressibleByNilLiteral: `cond ? value : nil` must stay an Optional,
    // never silently become JSON null. Write `.null` for JSON null.
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .number(String(value)) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: WireJSON...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, WireJSON)...) { self = .object(elements.map { Member($0.0, $0.1) }) }

    public static func int(_ value: Int) -> WireJSON { .number(String(value)) }
    public static func uuid(_ value: UUID) -> WireJSON { .string(value.uuidString.lowercased()) }
}
