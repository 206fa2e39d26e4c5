import Foundation

/// A Swift value that can be sent as a statement parameter. Parameters always travel in
/// binary format with an explicit type OID, so the server never guesses or re-parses them.
public protocol PostgresEncodable {
    static var postgresType: PostgresType { get }
    /// Appends the binary wire representation (`typsend` format) of `self`.
    func encode(into buffer: inout [UInt8])
}

/// A Swift value that can be read from a result column (binary format).
public protocol PostgresDecodable {
    /// Decodes a non-NULL value. Throw `PostgresDecodingFailure` when the type or bytes don't fit.
    static func decode(from value: PostgresValue) throws -> Self
    /// Called for SQL NULL; only optionals accept it.
    static func decodeNull() throws -> Self
}

extension PostgresDecodable {
    public static func decodeNull() throws -> Self {
        throw PostgresDecodingFailure("unexpected NULL (decode as an Optional to allow it)")
    }
}

public typealias PostgresCodable = PostgresEncodable & PostgresDecodable

/// One non-NULL column value as the server sent it (binary format).
public struct PostgresValue {
    public let type: PostgresType
    public let bytes: UnsafeRawBufferPointer

    func unexpectedType() -> PostgresDecodingFailure {
        PostgresDecodingFailure("no decoding from PostgreSQL type \(type)")
    }

    func bigEndianInteger<T: FixedWidthInteger>(_: T.Type) throws -> T {
        guard bytes.count == MemoryLayout<T>.size else {
            throw PostgresDecodingFailure("expected \(MemoryLayout<T>.size) bytes for \(type), got \(bytes.count)")
        }
        var value: T = 0
        for byte in bytes { value = (value << 8) | T(truncatingIfNeeded: byte) }
        return value
    }

    /// Any integer column (int2/int4/int8), widened to Int64.
    func integer() throws -> Int64 {
        switch type {
        case .int2: Int64(try bigEndianInteger(Int16.self))
        case .int4: Int64(try bigEndianInteger(Int32.self))
        case .int8: try bigEndianInteger(Int64.self)
        case .oid: Int64(try bigEndianInteger(UInt32.self))
        default: throw unexpectedType()
        }
    }

    func utf8String() throws -> String {
        guard let string = String(validating: bytes, as: UTF8.self) else {
            throw PostgresDecodingFailure("invalid UTF-8 in \(type) value")
        }
        return string
    }
}

/// Why a value could not be decoded; `Row` wraps it into a `PostgresError` naming the column.
public struct PostgresDecodingFailure: Error, Sendable {
    public let reason: String
    public init(_ reason: String) { self.reason = reason }
}

extension FixedWidthInteger {
    @inline(__always) func appendBigEndian(to buffer: inout [UInt8]) {
        var value = self.bigEndian
        withUnsafeBytes(of: &value) { buffer.append(contentsOf: $0) }
    }
}

// MARK: - Optional

extension Optional: PostgresDecodable where Wrapped: PostgresDecodable {
    public static func decode(from value: PostgresValue) throws -> Self { try Wrapped.decode(from: value) }
    public static func decodeNull() throws -> Self { nil }
}

// MARK: - Integers, bool, float

extension Bool: PostgresCodable {
    public static var postgresType: PostgresType { .bool }
    public func encode(into buffer: inout [UInt8]) { buffer.append(self ? 1 : 0) }
    public static func decode(from value: PostgresValue) throws -> Bool {
        guard value.type == .bool else { throw value.unexpectedType() }
        guard value.bytes.count == 1 else { throw PostgresDecodingFailure("bool must be 1 byte") }
        return value.bytes[0] != 0
    }
}

extension Int16: PostgresCodable {
    public static var postgresType: PostgresType { .int2 }
    public func encode(into buffer: inout [UInt8]) { appendBigEndian(to: &buffer) }
    public static func decode(from value: PostgresValue) throws -> Int16 {
        guard let narrowed = Int16(exactly: try value.integer()) else {
            throw PostgresDecodingFailure("\(value.type) value out of range for Int16")
        }
        return narrowed
    }
}

extension Int32: PostgresCodable {
    public static var postgresType: PostgresType { .int4 }
    public func encode(into buffer: inout [UInt8]) { appendBigEndian(to: &buffer) }
    public static func decode(from value: PostgresValue) throws -> Int32 {
        guard let narrowed = Int32(exactly: try value.integer()) else {
            throw PostgresDecodingFailure("\(value.type) value out of range for Int32")
        }
        return narrowed
    }
}

extension Int64: PostgresCodable {
    public static var postgresType: PostgresType { .int8 }
    public func encode(into buffer: inout [UInt8]) { appendBigEndian(to: &buffer) }
    public static func decode(from value: PostgresValue) throws -> Int64 { try value.integer() }
}

extension Int: PostgresCodable {
    public static var postgresType: PostgresType { .int8 }
    public func encode(into buffer: inout [UInt8]) { Int64(self).appendBigEndian(to: &buffer) }
    public static func decode(from value: PostgresValue) throws -> Int { Int(try value.integer()) }
}

extension Double: PostgresCodable {
    public static var postgresType: PostgresType { .float8 }
    public func encode(into buffer: inout [UInt8]) { bitPattern.appendBigEndian(to: &buffer) }
    public static func decode(from value: PostgresValue) throws -> Double {
        switch value.type {
        case .float8: return Double(bitPattern: try value.bigEndianInteger(UInt64.self))
        case .float4: return Double(Float(bitPattern: try value.bigEndianInteger(UInt32.self)))
        case .numeric:
            guard let double = Double(try PostgresNumeric.decode(from: value).text) else {
                throw PostgresDecodingFailure("numeric NaN/Infinity not representable")
            }
            return double
        default: return Double(try value.integer())
        }
    }
}

// MARK: - Text

extension String: PostgresCodable {
    public static var postgresType: PostgresType { .text }
    public func encode(into buffer: inout [UInt8]) { buffer.append(contentsOf: utf8) }
    public static func decode(from value: PostgresValue) throws -> String {
        guard value.type.isTextLike else { throw value.unexpectedType() }
        return try value.utf8String()
    }
}

// MARK: - UUID

extension UUID: PostgresCodable {
    public static var postgresType: PostgresType { .uuid }
    public func encode(into buffer: inout [UInt8]) {
        withUnsafeBytes(of: uuid) { buffer.append(contentsOf: $0) }
    }
    public static func decode(from value: PostgresValue) throws -> UUID {
        guard value.type == .uuid else { throw value.unexpectedType() }
        guard value.bytes.count == 16 else { throw PostgresDecodingFailure("uuid must be 16 bytes") }
        var raw: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &raw) { $0.copyMemory(from: value.bytes) }
        return UUID(uuid: raw)
    }
}

// MARK: - Dates and times

extension CalendarDate: PostgresCodable {
    public static var postgresType: PostgresType { .date }
    public func encode(into buffer: inout [UInt8]) {
        Int32(clamping: daysSinceUnixEpoch - Self.postgresEpochOffset).appendBigEndian(to: &buffer)
    }
    public static func decode(from value: PostgresValue) throws -> CalendarDate {
        guard value.type == .date else { throw value.unexpectedType() }
        let days = try value.bigEndianInteger(Int32.self)
        guard days != .max, days != .min else {
            throw PostgresDecodingFailure("date 'infinity' has no calendar date")
        }
        return CalendarDate(daysSinceUnixEpoch: Int(days) + postgresEpochOffset)
    }
}

extension PostgresTimestamp: PostgresCodable {
    public static var postgresType: PostgresType { .timestamptz }
    public func encode(into buffer: inout [UInt8]) { microsecondsSincePostgresEpoch.appendBigEndian(to: &buffer) }
    public static func decode(from value: PostgresValue) throws -> PostgresTimestamp {
        // `timestamp` (without time zone) is a wall-clock reading, not an instant: refuse it
        // rather than silently picking a zone.
        guard value.type == .timestamptz else { throw value.unexpectedType() }
        return PostgresTimestamp(microsecondsSincePostgresEpoch: try value.bigEndianInteger(Int64.self))
    }
}

extension Date: PostgresCodable {
    public static var postgresType: PostgresType { .timestamptz }
    public func encode(into buffer: inout [UInt8]) { PostgresTimestamp(self).encode(into: &buffer) }
    public static func decode(from value: PostgresValue) throws -> Date {
        let timestamp = try PostgresTimestamp.decode(from: value)
        guard !timestamp.isInfinite else { throw PostgresDecodingFailure("timestamptz infinity has no Date") }
        return timestamp.date
    }
}

// MARK: - JSON

/// A `jsonb` (or `json`) value as its JSON text. Parsing is left to the caller, so this
/// module imposes no JSON library.
public struct JSONB: Hashable, Sendable, PostgresCodable {
    public var text: String
    public init(text: String) { self.text = text }

    public static var postgresType: PostgresType { .jsonb }
    public func encode(into buffer: inout [UInt8]) {
        buffer.append(1) // jsonb binary format version
        buffer.append(contentsOf: text.utf8)
    }
    public static func decode(from value: PostgresValue) throws -> JSONB {
        switch value.type {
        case .jsonb:
            guard value.bytes.first == 1 else { throw PostgresDecodingFailure("unknown jsonb format version") }
            let body = UnsafeRawBufferPointer(rebasing: value.bytes.dropFirst())
            return JSONB(text: try PostgresValue(type: .text, bytes: body).utf8String())
        case .json:
            return JSONB(text: try value.utf8String())
        default:
            throw value.unexpectedType()
        }
    }
}

// MARK: - numeric (decode only)

/// A `numeric` value as its exact decimal text (no precision is lost to Double).
public struct PostgresNumeric: Hashable, Sendable, PostgresDecodable, CustomStringConvertible {
    public let text: String
    public var description: String { text }

    public static func decode(from value: PostgresValue) throws -> PostgresNumeric {
        guard value.type == .numeric else { throw value.unexpectedType() }
        // Binary numeric: ndigits, weight, sign, dscale (int16 each), then base-10000 digits.
        let bytes = value.bytes
        guard bytes.count >= 8 else { throw PostgresDecodingFailure("numeric too short") }
        func int16(at offset: Int) -> Int { Int(Int16(bitPattern: UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1]))) }
        let count = int16(at: 0), weight = int16(at: 2), sign = UInt16(bitPattern: Int16(int16(at: 4))), scale = int16(at: 6)
        guard count >= 0, bytes.count == 8 + 2 * count else { throw PostgresDecodingFailure("numeric length mismatch") }
        switch sign {
        case 0xC000: return PostgresNumeric(text: "NaN")
        case 0xD000: return PostgresNumeric(text: "Infinity")
        case 0xF000: return PostgresNumeric(text: "-Infinity")
        default: break
        }
        let digits = (0..<count).map { int16(at: 8 + 2 * $0) }
        var integerPart = ""
        for index in 0...max(weight, 0) where weight >= 0 {
            let digit = index < digits.count ? digits[index] : 0
            let chunk = String(digit)
            integerPart += index == 0 ? chunk : String(repeating: "0", count: 4 - chunk.count) + chunk
        }
        if integerPart.isEmpty { integerPart = "0" }
        var fraction = ""
        var index = weight + 1
        while fraction.count < scale {
            let digit = index >= 0 && index < digits.count ? digits[index] : 0
            let chunk = String(digit)
            fraction += String(repeating: "0", count: 4 - chunk.count) + chunk
            index += 1
        }
        fraction = String(fraction.prefix(scale))
        let text = (sign == 0x4000 ? "-" : "") + integerPart + (scale > 0 ? "." + fraction : "")
        return PostgresNumeric(text: text)
    }
}

// MARK: - Arrays (decode only)

// Arrays decode (e.g. `array_agg(id)`), but deliberately do not encode: binding a list
// invites `IN ($1)` mistakes; write `= ANY(…)` over a set-returning query instead.
extension Array: PostgresDecodable where Element: PostgresDecodable {
    public static func decode(from value: PostgresValue) throws -> [Element] {
        // Binary array: ndim, has-null flag, element OID, (length, lower bound) per
        // dimension, then each element as (int32 length or -1 for NULL, bytes).
        let bytes = value.bytes
        var offset = 0
        func int32() throws -> Int32 {
            guard offset + 4 <= bytes.count else { throw PostgresDecodingFailure("array truncated") }
            let slice = UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + 4])
            offset += 4
            return try PostgresValue(type: .int4, bytes: slice).bigEndianInteger(Int32.self)
        }
        let dimensions = try int32()
        _ = try int32() // has-null flag: NULLs are handled per element
        let elementType = PostgresType(rawValue: UInt32(bitPattern: try int32()))
        if dimensions == 0 { return [] }
        guard dimensions == 1 else { throw PostgresDecodingFailure("only one-dimensional arrays decode into [\(Element.self)]") }
        let count = try int32()
        _ = try int32() // lower bound
        guard count >= 0 else { throw PostgresDecodingFailure("negative array length") }
        var elements: [Element] = []
        elements.reserveCapacity(Int(count))
        for _ in 0..<count {
            let length = try int32()
            if length < 0 {
                elements.append(try Element.decodeNull())
                continue
            }
            guard offset + Int(length) <= bytes.count else { throw PostgresDecodingFailure("array element truncated") }
            let slice = UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + Int(length)])
            offset += Int(length)
            elements.append(try Element.decode(from: PostgresValue(type: elementType, bytes: slice)))
        }
        return elements
    }
}
