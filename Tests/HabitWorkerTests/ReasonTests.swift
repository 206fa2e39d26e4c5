import Foundation
import TestSupport
import Testing

/// `data.reason`: a stable snake_case code on every error (docs/protocol.md, "Reasons"). The
/// codes are closed enums in the worker; `rpc.discover` enumerates them per error code
/// (`components/errors/*/x-data-schema`), and docs/protocol.md and docs/openrpc.json must list
/// exactly the same (code, reason) pairs.
@Suite("habit serve: error reasons")
struct ReasonTests {
    struct Pair: Hashable, CustomStringConvertible {
        let code: Int
        let reason: String
        var description: String { "\(code) \(reason)" }
    }

    /// The (code, reason) pairs an OpenRPC document enumerates under `components/errors`.
    static func pairs(inDocument document: WireJSON) -> Set<Pair> {
        var pairs: Set<Pair> = []
        for member in document["components"]?["errors"]?.members ?? [] {
            guard let code = member.value["code"]?.intValue else { continue }
            let reasons = member.value["x-data-schema"]?["properties"]?["reason"]?["enum"]?.arrayValue ?? []
            for reason in reasons.compactMap(\.stringValue) { pairs.insert(Pair(code: code, reason: reason)) }
        }
        return pairs
    }

    /// The (code, reason) pairs of docs/protocol.md's "### Reasons" table: rows
    /// "| `reason` | code, code | meaning |".
    static func pairsInProtocolDoc() throws -> Set<Pair> {
        let text = try String(contentsOf: TestDatabase.repositoryRoot.appendingPathComponent("docs/protocol.md"), encoding: .utf8)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        guard let start = lines.firstIndex(of: "### Reasons") else { return [] }
        var pairs: Set<Pair> = []
        for line in lines[(start + 1)...] {
            if line.hasPrefix("#") { break }
            guard line.hasPrefix("| `") else { continue }
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 2 else { continue }
            let reason = cells[0].trimmingCharacters(in: CharacterSet(charactersIn: "`"))
            for code in cells[1].split(separator: ",").compactMap({ Int($0.trimmingCharacters(in: .whitespaces)) }) {
                pairs.insert(Pair(code: code, reason: reason))
            }
        }
        return pairs
    }

    @Test("the reasons in the worker = docs/protocol.md's table = docs/openrpc.json")
    func reasonsAreDocumented() throws {
        let file = try WireJSON.parse(try String(contentsOf: TestDatabase.repositoryRoot.appendingPathComponent("docs/openrpc.json"), encoding: .utf8))
        let documented = try Self.pairsInProtocolDoc()
        try WorkerSession.with { session in
            let inCode = Self.pairs(inDocument: try session.worker.call("rpc.discover"))
            // The predefined errors and at least the domain errors of the first release.
            for code in [-32700, -32600, -32601, -32602, -32603, -32001, -32002, -32003, -32004, -32010, -32011, -32012, -32013, -32014] {
                #expect(inCode.contains { $0.code == code }, "no reasons for \(code) in rpc.discover")
            }
            #expect(inCode.allSatisfy { $0.reason.utf8.allSatisfy { (97...122).contains($0) || (48...57).contains($0) || $0 == 95 } },
                    "reasons must be snake_case")
            #expect(inCode.subtracting(documented).isEmpty, "missing from docs/protocol.md's Reasons: \(inCode.subtracting(documented).sorted { $0.description < $1.description })")
            #expect(documented.subtracting(inCode).isEmpty, "in docs/protocol.md but not in the worker: \(documented.subtracting(inCode).sorted { $0.description < $1.description })")
            #expect(Self.pairs(inDocument: file) == inCode, "docs/openrpc.json is stale: run scripts/openrpc")
        }
    }

    /// One bad request per reason of the protocol errors (-32700, -32600, -32601, -32602), over the
    /// worker's pipes: each answers its code, reason, a non-empty data.message and where
    /// (data.field, data.member).
    @Test("one bad request per reason: code, reason and field")
    func everyReasonOverThePipes() throws {
        let user = UUID().uuidString.lowercased()
        let p = #""jsonrpc":"2.0","id":1"#
        func call(_ method: String, _ params: String) -> [UInt8] {
            Array(#"{\#(p),"method":"\#(method)","params":{"user_id":"\#(user)"\#(params.isEmpty ? "" : ",")\#(params)}}"#.utf8)
        }
        let maxLineBytes = 65_536
        // (line, code, reason, where: ("field"/"member", value) or nil)
        let cases: [([UInt8], Int, String, (String, String)?)] = [
            (Array("{not json".utf8), -32700, "invalid_json", nil),
            (Array(#"{\#(p),"method":"system.ping","params":{"a":""#.utf8) + [0xC3, 0x28] + Array(#""}}"#.utf8), -32700, "invalid_utf8", nil),
            (Array(String(repeating: "[", count: 200).utf8), -32700, "too_deep", nil),
            (Array("42".utf8), -32600, "not_an_object", nil),
            (Array("[]".utf8), -32600, "empty_batch", nil),
            (Array(#"{"jsonrpc":"1.0","id":1,"method":"system.ping"}"#.utf8), -32600, "invalid_version", ("member", "jsonrpc")),
            (Array(#"{\#(p)}"#.utf8), -32600, "required", ("member", "method")),
            (Array(#"{\#(p),"method":7}"#.utf8), -32600, "wrong_type", ("member", "method")),
            (Array(#"{\#(p),"id":2,"method":"system.ping"}"#.utf8), -32600, "duplicate_key", ("member", "id")),
            (Array(#"{\#(p),"method":"system.ping","param":{}}"#.utf8), -32600, "unknown_key", ("member", "param")),
            (Array(#"{\#(p),"method":"system.ping","pad":""#.utf8) + Array(repeating: UInt8(ascii: "x"), count: maxLineBytes) + Array(#""}"#.utf8),
             -32600, "line_too_long", nil),
            (Array(#"[{\#(p),"method":"system.ping"},{\#(p),"method":"system.ping"},{\#(p),"method":"system.ping"}]"#.utf8),
             -32600, "batch_too_large", nil),
            (Array(#"{\#(p),"method":"nope.nothing"}"#.utf8), -32601, "unknown_method", nil),
            (Array(#"{\#(p),"method":"profile.get","params":{"user_id":"\#(user)","user_id":"\#(user)"}}"#.utf8),
             -32602, "duplicate_key", ("field", "user_id")),
            (call("habits.list", #""bogus":1"#), -32602, "unknown_key", ("field", "bogus")),
            (call("day.get", ""), -32602, "required", ("field", "date")),
            (call("habits.list", #""include_inactive":"yes""#), -32602, "wrong_type", ("field", "include_inactive")),
            (call("habits.list", #""limit":0"#), -32602, "out_of_range", ("field", "limit")),
            (call("week.counts", #""date":"2026-01-01","week_start":"friday""#), -32602, "invalid_choice", ("field", "week_start")),
            (call("habits.update", #""id":"not-a-uuid""#), -32602, "invalid_uuid", ("field", "id")),
            (call("day.get", #""date":"2026-02-30""#), -32602, "invalid_date", ("field", "date")),
            (call("habits.create", #""name":"x","activated_at":"2026-01-01T00:00:00""#), -32602, "invalid_timestamp", ("field", "activated_at")),
            (call("day.get", #""date":"2026-01-01","timezone":"PST""#), -32602, "invalid_timezone", ("field", "timezone")),
            (call("habits.create", #""name":"x","color":"red""#), -32602, "invalid_color", ("field", "color")),
            (call("habits.create", #""name":"x","icon":"Bad Icon""#), -32602, "invalid_icon", ("field", "icon")),
            (call("habits.create", #""name":"   ""#), -32602, "empty", ("field", "name")),
            (call("tasks.create", #""title":"\#(String(repeating: "t", count: 501))""#), -32602, "too_long", ("field", "title")),
            (call("lists.create", #""name":"a\u0007b""#), -32602, "invalid_characters", ("field", "name")),
            (call("habits.list", #""cursor":"bm90IGEgY3Vyc29y""#), -32602, "invalid_cursor", ("field", "cursor")),
            (call("tasks.list", #""view":"inbox","list_id":"\#(UUID().uuidString)""#), -32602, "not_allowed", ("field", "list_id")),
            (call("habits.create", #""name":"x","schedule":{"type":"weekdays","days":[1,3,1]}"#), -32602, "duplicate_value", ("field", "schedule.days[2]")),
            (call("account.delete", #""confirm":"\#(UUID().uuidString)""#), -32602, "confirmation_mismatch", ("field", "confirm")),
            // Measurable habits and check-ins (sql/0029).
            (call("habits.create", #""name":"x","kind":"measurable","target":"1e3""#), -32602, "invalid_decimal", ("field", "target")),
            (call("checkins.add", #""template_id":"\#(user)","date":"2026-01-01","time":"7:30""#), -32602, "invalid_time", ("field", "time")),
            // The push sender's service methods take no user_id (issue 33, item 3).
            (Array(#"{\#(p),"method":"reminders.claim","params":{"firing_ids":["\#(user)/2026-02-30"],"lease_ms":5000}}"#.utf8), -32602, "invalid_firing_id", ("field", "firing_ids[0]")),
            // (The habit is created below, before the cases run.)
            (call("habits.update", #""id":"00000000-0000-0000-0000-0000000000aa","target_period":"week""#), -32602, "not_supported", ("field", "target_period")),
            (call("habits.create", #""name":"x","target":"2.5""#), -32602, "not_whole", ("field", "target")),
            // account.import's document checks (AccountTests covers each in depth).
            (call("account.import", #""mode":"merge","document":{"format":"loop","version":1,"habits":[],"completions":[],"skips":[],"lists":[],"tasks":[]}"#),
             -32602, "unsupported_format", ("field", "document.format")),
            (call("account.import", #""mode":"merge","document":{"format":"habit-account","version":1,"habits":[],"completions":[{"template_id":"\#(user)","date":"2026-01-01"}],"skips":[],"lists":[],"tasks":[]}"#),
             -32602, "unknown_reference", ("field", "document.completions[0].template_id")),
            (call("account.import", #""mode":"merge","document":{"format":"habit-account","version":1,"habits":[{"id":"\#(user)","name":"x","periods":[{"started_at":"2026-01-02T00:00:00Z","ended_at":"2026-01-01T00:00:00Z","schedule":{"type":"daily"}}]}],"completions":[],"skips":[],"lists":[],"tasks":[]}"#),
             -32602, "invalid_order", ("field", "document.habits[0].periods[0].ended_at")),
            (call("account.import", #""mode":"merge","document":{"format":"habit-account","version":1,"habits":[\#(Array(repeating: #"{}"#, count: 10_001).joined(separator: ","))],"completions":[],"skips":[],"lists":[],"tasks":[]}"#),
             -32602, "too_many", ("field", "document.habits")),
        ]
        var seen: Set<Pair> = []
        try WorkerSession.with(arguments: ["--max-line-bytes", String(maxLineBytes), "--max-batch", "2"]) { session in
            let worker = session.worker
            try worker.sendRaw(call("habits.create", #""id":"00000000-0000-0000-0000-0000000000aa","name":"x","kind":"measurable","target":"2""#) + [0x0A])
            #expect(try worker.readResponse().result != nil)
            for (index, (line, code, reason, location)) in cases.enumerated() {
                try worker.sendRaw(line + [0x0A])
                let response = try worker.readResponse()
                let shown = String(decoding: line.prefix(160), as: UTF8.self)
                #expect(!response.isBatch, "case \(index) \(shown) → \(response.raw.prefix(300))")
                #expect(response.code == code && response.reason == reason, "case \(index) \(shown) → \(response.raw.prefix(300))")
                #expect(response.dataMessage?.isEmpty == false, "data.message in \(response.raw.prefix(300))")
                if let (key, value) = location {
                    #expect(response.data?[key]?.stringValue == value, "data.\(key) in \(response.raw.prefix(300))")
                }
                if let answeredCode = response.code, let answeredReason = response.reason {
                    seen.insert(Pair(code: answeredCode, reason: answeredReason))
                }
            }
            // Every reason of these codes was provoked, except `invalid_text` and `invalid_schedule`:
            // a name or title, or a schedule, that the database's CHECK refuses, which validation
            // always refuses first (more precisely; ScheduleTests checks the schedule's mapping).
            let protocolCodes: Set<Int> = [-32700, -32600, -32601, -32602]
            let wanted = Self.pairs(inDocument: try worker.call("rpc.discover"))
                .filter { protocolCodes.contains($0.code) && !["invalid_text", "invalid_schedule"].contains($0.reason) }
            #expect(wanted.subtracting(seen).isEmpty, "no case for \(wanted.subtracting(seen).sorted { $0.description < $1.description })")
            // Domain errors keep their one reason (ErrorCodeTests provokes each).
            let missing = try worker.request("habits.delete", params: .object([.init("user_id", .string(user)), .init("id", .string(UUID().uuidString))]))
            #expect(missing.code == -32001 && missing.reason == "not_found" && missing.data == ["reason": "not_found"], "\(missing.raw)")
        }
    }
}
