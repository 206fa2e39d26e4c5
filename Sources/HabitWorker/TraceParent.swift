/// A W3C Trace Context `traceparent` (https://www.w3.org/TR/trace-context/#traceparent-header),
/// the optional envelope member `params.traceparent`: the worker logs its trace-id and parent-id
/// on the request's lines so they can be joined with the gateway's trace. The worker makes no
/// spans of its own and propagates nothing, so a parser is all it needs (swift-w3c-trace-context
/// or swift-distributed-tracing would add a dependency and an allocation per request for these
/// thirty lines).
///
/// The spec's parsing rules: `version "-" trace-id "-" parent-id "-" trace-flags`, lowercase
/// hex only. Version `ff` is invalid. Version `00` is exactly 55 characters. A later version is
/// parsed as version 00 is, from its first 55 characters, and may go on only after a `-` (the
/// spec's forward compatibility). An all-zero trace-id or parent-id is invalid. An invalid value
/// is ignored, as the spec tells a receiver to do with an invalid header; the request still runs.
struct TraceParent: Sendable {
    /// The value as received, valid; its first 55 bytes are ASCII.
    private let header: String

    init?(_ header: String) {
        let bytes = header.utf8
        guard bytes.count >= 55 else { return nil }
        var index = 0
        var version = 0
        var traceIDIsZero = true
        var parentIDIsZero = true
        for byte in bytes {
            switch index {
            case 2, 35, 52:
                guard byte == UInt8(ascii: "-") else { return nil }
            case 55:
                // Only a later version may go on, and only after a dash.
                guard version != 0, byte == UInt8(ascii: "-") else { return nil }
            default:
                guard let value = Self.lowercaseHex(byte) else { return nil }
                switch index {
                case 0...1: version = version << 4 | value
                case 3..<35: if value != 0 { traceIDIsZero = false }
                case 36..<52: if value != 0 { parentIDIsZero = false }
                default: break // the flags: any value (version 00 defines only bit 0, sampled)
                }
            }
            index += 1
            if index > 55 { break }
        }
        guard version != 0xff, !traceIDIsZero, !parentIDIsZero else { return nil }
        self.header = header
    }

    /// 32 lowercase hex digits: the whole trace.
    var traceID: Substring { slice(3, 35) }
    /// 16 lowercase hex digits: the caller's span, the one this request is part of.
    var parentID: Substring { slice(36, 52) }

    private func slice(_ from: Int, _ to: Int) -> Substring {
        let start = header.utf8.index(header.utf8.startIndex, offsetBy: from)
        let end = header.utf8.index(start, offsetBy: to - from)
        return Substring(header.utf8[start..<end])
    }

    private static func lowercaseHex(_ byte: UInt8) -> Int? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): Int(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): Int(byte - UInt8(ascii: "a") + 10)
        default: nil
        }
    }
}
