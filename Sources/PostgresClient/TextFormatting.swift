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
        let hex: [UInt8] = Array("0123456789abcdef".utf8)
        return withUnsafeBytes(of: uuid) { bytes in
            String(unsafeUninitializedCapacity: 36) { buffer in
                var out = 0
                for (index, byte) in bytes.enumerated() {
                    if index == 4 || index == 6 || index == 8 || index == 10 {
                        buffer[out] = UInt8(ascii: "-")
                        out += 1
                    }
                    buffer[out] = hex[Int(byte >> 4)]
                    buffer[out + 1] = hex[Int(byte & 0x0F)]
                    out += 2
                }
                return out
            }
        }
    }
}

/// Appends zero-padded decimal digits.
@inline(__always)
func appendDigits(_ value: Int, width: Int, to bytes: inout [UInt8]) {
    var digits: [UInt8] = []
    var remaining = value
    repeat {
        digits.append(UInt8(48 + remaining % 10))
        remaining /= 10
    } while remaining > 0
    if digits.count < width { bytes.append(contentsOf: repeatElement(UInt8(48), count: width - digits.count)) }
    bytes.append(contentsOf: digits.reversed())
}

extension CalendarDate {
    func appendISO8601(to bytes: inout [UInt8]) {
        if year < 0 { bytes.append(UInt8(ascii: "-")) }
        appendDigits(abs(year), width: 4, to: &bytes)
        bytes.append(UInt8(ascii: "-"))
        appendDigits(month, width: 2, to: &bytes)
        bytes.append(UInt8(ascii: "-"))
        appendDigits(day, width: 2, to: &bytes)
    }
}
