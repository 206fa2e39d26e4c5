import Foundation
import JSONRPC
import Logging

/// Log lines for stderr, one per event: JSON (`{"ts":…,"level":…,"msg":…,…}`) or plain text.
/// stdout belongs to the protocol; nothing else may write there. Callers log methods,
/// durations and error reasons — never habit names or other user content. Every line carries
/// the process id (`pid`), set once here: several workers share one log.
public struct StderrLogHandler: LogHandler {
    public enum Format: String, Sendable, CaseIterable { case json, text }

    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata
    let label: String
    let format: Format

    public init(label: String, level: Logger.Level, format: Format) {
        self.label = label
        self.logLevel = level
        self.format = format
        metadata = ["pid": "\(getpid())"]
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    private static let lock = NSLock()

    public func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { _, new in new }
        var line: String
        let timestamp = Self.timestamp()
        switch format {
        case .json:
            line = "{\"ts\":\(Self.quote(timestamp)),\"level\":\(Self.quote(event.level.rawValue)),\"msg\":\(Self.quote("\(event.message)"))"
            for (key, value) in merged.sorted(by: { $0.key < $1.key }) {
                line += ",\(Self.quote(key)):\(Self.json(value))"
            }
            line += "}\n"
        case .text:
            line = "\(timestamp) \(event.level.rawValue.uppercased()) \(event.message)"
            for (key, value) in merged.sorted(by: { $0.key < $1.key }) { line += " \(key)=\(value)" }
            line += "\n"
        }
        let bytes = Array(line.utf8)
        Self.lock.lock()
        defer { Self.lock.unlock() }
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return }
            offset += written
        }
    }

    static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var seconds = now.tv_sec
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday,
                      parts.tm_hour, parts.tm_min, parts.tm_sec, now.tv_nsec / 1_000_000)
    }

    static func json(_ value: Logger.Metadata.Value) -> String {
        switch value {
        case .string(let text):
            // Numbers logged as strings (durations, codes) stay numbers in JSON, but only text
            // that is a JSON number as it stands: "007", ".5" or "5." are strings.
            if JSONValue.isNumberLiteral(text) { return text }
            return quote(text)
        case .stringConvertible(let convertible):
            return quote(convertible.description)
        case .array(let values):
            return "[" + values.map(json).joined(separator: ",") + "]"
        case .dictionary(let entries):
            return "{" + entries.sorted(by: { $0.key < $1.key }).map { "\(quote($0.key)):\(json($0.value))" }.joined(separator: ",") + "}"
        }
    }

    static func quote(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 { out += String(format: "\\u%04x", scalar.value) } else { out.unicodeScalars.append(scalar) }
            }
        }
        return out + "\""
    }
}

extension Logger.Metadata {
    /// Longest request id (UTF-8 bytes) logged as it is; a longer one is cut and ends in "…".
    static let maxLoggedIDCharacters = 128

    /// What every line about one request carries (docs/operations.md, "Logs"): `method`, `id`
    /// as sent (absent for a notification; a number stays a number in JSON, a string stays a
    /// string even when it looks like a number), and the `traceparent`'s `trace_id` and
    /// `span_id` (its parent-id: the caller's span) when the request had a valid one.
    static func request(id: RequestID?, method: String, trace: TraceParent?) -> Logger.Metadata {
        var metadata: Logger.Metadata = ["method": "\(method)"]
        switch id {
        case nil: break
        case .number(let literal)?: metadata["id"] = .string(literal) // written as the number it is
        case .string(let text)?:
            // `.stringConvertible` is always quoted in JSON (`StderrLogHandler.json`), so "7" stays a string.
            let cut = text.utf8.count > maxLoggedIDCharacters ? String(text.prefix(maxLoggedIDCharacters)) + "…" : text
            metadata["id"] = .stringConvertible(cut)
        case .null?: metadata["id"] = .stringConvertible("null")
        }
        if let trace {
            // Quoted in JSON even when every hex digit is a decimal one.
            metadata["trace_id"] = .stringConvertible(String(trace.traceID))
            metadata["span_id"] = .stringConvertible(String(trace.parentID))
        }
        return metadata
    }
}
