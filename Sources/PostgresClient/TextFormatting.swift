import Foundation

// Fast text forms of the value types. They are produced for every row of every response,
// and Foundation's uuidString (printf underneath) and string interpolation showed up in
// the worker's profile.

extension UUID {
    /// Parses exactly the canonical 8-4-4-4-12 hex form (either case). Foundation's
    /// `UUID(uuidString:)` goes through sscanf, which showed up in the worker's profile.
    public init?(canonical text: String) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(16)
        var high: UInt8?
        var index = 0
        for character in text.utf8 {
            defer { index += 1 }
            if index == 8 || index == 13 || index == 18 || index == 23 {
                guard character == UInt8(ascii: "-") else { return nil }
                continue
            }
            let nibble: UInt8
            switch character {
            case 48...57: nibble = character - 48
            case 65...70: nibble = character - 55
            case 97...102: nibble = character - 87
            default: return nil
            }
            if let first = high {
                bytes.append(first << 4 | nibble)
                high = nil
            } else {
                high = nibble
            }
        }
        guard index == 36, bytes.count == 16 else { return nil }
        self.init(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                         bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
    }

    /// The canonical lowercase form, `0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0`.
    public var lowercaseString: String {
        String(unsafeUninitializedCapacity: 36) { buffer in
            writeLowercase(to: buffer.baseAddress!)
            return 36
        }
    }

    /// Whether `a` sorts before `b` as canonical text, which is the order of their bytes
    /// (hex digits and dashes sort like the nibbles they encode) and PostgreSQL's uuid order.
    public static func textOrder(_ a: UUID, _ b: UUID) -> Bool {
        withUnsafeBytes(of: a.uuid) { a in
            withUnsafeBytes(of: b.uuid) { b in a.lexicographicallyPrecedes(b) }
        }
    }

    /// Appends the canonical lowercase form (36 ASCII bytes), for encoders that build
    /// their output in a byte buffer.
    public func appendLowercase(to bytes: inout [UInt8]) {
        let start = bytes.count
        bytes.append(contentsOf: repeatElement(0, count: 36))
        bytes.withUnsafeMutableBufferPointer { writeLowercase(to: $0.baseAddress! + start) }
    }

    private func writeLowercase(to out: UnsafeMutablePointer<UInt8>) {
        withUnsafeBytes(of: uuid) { bytes in
            var position = 0
            for index in 0..<16 {
                if index == 4 || index == 6 || index == 8 || index == 10 {
                    out[position] = UInt8(ascii: "-")
                    position += 1
                }
                let byte = bytes[index]
                out[position] = lowercaseHexDigit(byte >> 4)
                out[position + 1] = lowercaseHexDigit(byte & 0x0F)
                position += 2
            }
        }
    }
}

@inline(__always)
private func lowercaseHexDigit(_ nibble: UInt8) -> UInt8 {
    nibble < 10 ? 48 + nibble : 87 + nibble
}

/// Appends zero-padded decimal digits (`value` ≥ 0; more digits than `width` when needed).
/// Allocation-free: it runs several times for every timestamp of every response.
@inline(__always)
func appendDigits(_ value: Int, width: Int, to bytes: inout [UInt8]) {
    var digitCount = 1
    var limit = 10
    while limit <= value, digitCount < 19 { digitCount += 1; limit &*= 10 }
    let count = max(width, digitCount)
    let start = bytes.count
    bytes.append(contentsOf: repeatElement(UInt8(48), count: count))
    var remaining = value
    var position = start + count - 1
    while remaining > 0 {
        bytes[position] = UInt8(48 + remaining % 10)
        remaining /= 10
        position -= 1
    }
}

extension CalendarDate {
    /// Appends `YYYY-MM-DD` (ASCII).
    public func appendISO8601(to bytes: inout [UInt8]) {
        if year < 0 { bytes.append(UInt8(ascii: "-")) }
        appendDigits(abs(year), width: 4, to: &bytes)
        bytes.append(UInt8(ascii: "-"))
        appendDigits(month, width: 2, to: &bytes)
        bytes.append(UInt8(ascii: "-"))
        appendDigits(day, width: 2, to: &bytes)
    }
}
