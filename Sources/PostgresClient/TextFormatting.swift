import Foundation

// Fast text forms of the value types. They are produced for every row of every response,
// and Foundation's uuidString (printf underneath) and string interpolation showed up in
// the worker's profile.

extension UUID {
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
