import Foundation
import TestSupport

/// Generates hostile input lines for the black-box fuzz of `habit serve`: random bytes,
/// truncated and byte-mutated JSON, wrong types and bad values in every param of every
/// method, huge numbers, deep nesting, duplicate and unknown keys, broken envelopes, batches,
/// notifications, and requests with a valid shape that the database refuses (other users'
/// rows, future dates, inactive habits, invalid state transitions).
///
/// Every line is invalid *by construction* — no line may change a row — except the
/// read-only "control" requests, which must succeed. The test checks both through the
/// responses (a success for a write method fails the test) and through table checksums.
/// Byte mutations only ever break a line further: truncation before its last byte, bytes that
/// are invalid anywhere in JSON text (controls, 0xC0/0xC1/0xF5–0xFF), and deleting or doubling
/// a structural character outside strings.
struct HostileLineGenerator {
    enum ParamType { case uuid, name, title, notes, icon, color, date, timestamp, int, bool, zone, weekStart, state, view }

    struct ParamSpec {
        let key: String
        let type: ParamType
        let required: Bool
        init(_ key: String, _ type: ParamType, required: Bool = false) {
            self.key = key
            self.type = type
            self.required = required
        }
    }

    struct MethodSpec {
        let name: String
        let isWrite: Bool
        let params: [ParamSpec]
    }

    static let user = ParamSpec("user_id", .uuid, required: true)
    static let id = ParamSpec("id", .uuid, required: true)

    /// Every method of docs/protocol.md with its params.
    static let methods: [MethodSpec] = [
        MethodSpec(name: "system.ping", isWrite: false, params: []),
        MethodSpec(name: "system.health", isWrite: false, params: []),
        MethodSpec(name: "profile.get", isWrite: false, params: [user]),
        MethodSpec(name: "profile.set", isWrite: true, params: [user, ParamSpec("timezone", .zone, required: true)]),
        MethodSpec(name: "habits.create", isWrite: true, params: [user, ParamSpec("name", .name, required: true), ParamSpec("icon", .icon),
                                                                 ParamSpec("color", .color), ParamSpec("activated_at", .timestamp),
                                                                 ParamSpec("sort_order", .int)]),
        MethodSpec(name: "habits.update", isWrite: true, params: [user, id, ParamSpec("name", .name), ParamSpec("icon", .icon),
                                                                 ParamSpec("color", .color), ParamSpec("sort_order", .int)]),
        MethodSpec(name: "habits.deactivate", isWrite: true, params: [user, id]),
        MethodSpec(name: "habits.activate", isWrite: true, params: [user, id]),
        MethodSpec(name: "habits.delete", isWrite: true, params: [user, id]),
        MethodSpec(name: "habits.list", isWrite: false, params: [user, ParamSpec("include_inactive", .bool)]),
        MethodSpec(name: "habits.history", isWrite: false, params: [user, id]),
        MethodSpec(name: "day.get", isWrite: false, params: [user, ParamSpec("date", .date, required: true), ParamSpec("timezone", .zone)]),
        MethodSpec(name: "completions.set", isWrite: true, params: [user, ParamSpec("template_id", .uuid, required: true),
                                                                   ParamSpec("date", .date, required: true),
                                                                   ParamSpec("completed", .bool, required: true), ParamSpec("timezone", .zone)]),
        MethodSpec(name: "completions.toggle", isWrite: true, params: [user, ParamSpec("template_id", .uuid, required: true),
                                                                      ParamSpec("date", .date, required: true), ParamSpec("timezone", .zone)]),
        MethodSpec(name: "week.counts", isWrite: false, params: [user, ParamSpec("date", .date, required: true),
                                                                ParamSpec("week_start", .weekStart), ParamSpec("timezone", .zone)]),
        MethodSpec(name: "lists.create", isWrite: true, params: [user, ParamSpec("name", .name, required: true)]),
        MethodSpec(name: "lists.update", isWrite: true, params: [user, id, ParamSpec("name", .name, required: true)]),
        MethodSpec(name: "lists.delete", isWrite: true, params: [user, id]),
        MethodSpec(name: "lists.list", isWrite: false, params: [user]),
        MethodSpec(name: "tasks.create", isWrite: true, params: [user, ParamSpec("title", .title, required: true), ParamSpec("notes", .notes),
                                                                ParamSpec("list_id", .uuid), ParamSpec("scheduled_date", .date),
                                                                ParamSpec("position", .int)]),
        MethodSpec(name: "tasks.update", isWrite: true, params: [user, id, ParamSpec("title", .title), ParamSpec("notes", .notes),
                                                                ParamSpec("list_id", .uuid), ParamSpec("scheduled_date", .date),
                                                                ParamSpec("position", .int)]),
        MethodSpec(name: "tasks.delete", isWrite: true, params: [user, id]),
        MethodSpec(name: "tasks.complete", isWrite: true, params: [user, id]),
        MethodSpec(name: "tasks.uncomplete", isWrite: true, params: [user, id]),
        MethodSpec(name: "tasks.cycle", isWrite: true, params: [user, id]),
        MethodSpec(name: "tasks.set_state", isWrite: true, params: [user, id, ParamSpec("state", .state, required: true)]),
        MethodSpec(name: "tasks.today", isWrite: false, params: [user, ParamSpec("date", .date), ParamSpec("timezone", .zone)]),
        MethodSpec(name: "tasks.list", isWrite: false, params: [user, ParamSpec("view", .view, required: true), ParamSpec("timezone", .zone)]),
    ]

    static let writeMethods = Set(methods.filter(\.isWrite).map(\.name))
    static let readMethods = Set(methods.filter { !$0.isWrite }.map(\.name))

    /// One generated chunk: written with one trailing "\n" (it may contain more newlines).
    struct Line {
        var text: [UInt8]
        var kind: String
    }

    var rng: SeededGenerator
    let fixture: Fixture
    /// Ids start high so they never equal the small numbers random bytes and token soup make.
    private var counter = 1_000_000

    init(seed: UInt64, fixture: Fixture) {
        rng = SeededGenerator(seed: seed)
        self.fixture = fixture
    }

    // MARK: - Random helpers

    mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &rng) < p }
    mutating func int(_ range: Range<Int>) -> Int { Int.random(in: range, using: &rng) }
    mutating func pick<T>(_ values: [T]) -> T { values[int(0..<values.count)] }

    static func q(_ text: String) -> String { WireJSON.quoted(text) }
    static func uuid(_ id: UUID) -> String { q(id.uuidString.lowercased()) }

    /// A fresh, unique id as JSON text, in the many shapes the protocol allows.
    mutating func freshID() -> String {
        counter += 1
        let n = counter
        switch int(0..<8) {
        case 0: return String(n)
        case 1: return Self.q("f\(n)")
        case 2: return Self.q("f\(n)-é-\u{1F600}") // raw UTF-8 in the id
        case 3: return #""f\#(n)\u00e9\n\t\"\\""# // escapes, echoed re-serialized
        case 4: return "\(n)000000000000000000000000" // beyond Int64: echoed byte for byte
        case 5: return "\(n).50"
        case 6: return "-\(n)"
        default: return "\(n)e0"
        }
    }

    static func object(_ members: [(String, String)]) -> String {
        "{" + members.map { q($0.0) + ":" + $0.1 }.joined(separator: ",") + "}"
    }

    static func envelope(id: String?, method: String, params: String?) -> String {
        var members: [(String, String)] = [("jsonrpc", q("2.0"))]
        if let id { members.append(("id", id)) }
        members.append(("method", q(method)))
        if let params { members.append(("params", params)) }
        return object(members)
    }

    // MARK: - Values

    /// A valid value for `spec` in `method`, acting as `user` (ids point at that user's rows).
    mutating func validValue(_ spec: ParamSpec, method: String, user: UUID) -> String {
        let f = fixture
        let isA = user == f.userA
        switch spec.type {
        case .uuid:
            switch spec.key {
            case "user_id": return Self.uuid(user)
            case "template_id": return Self.uuid(isA ? f.habitA : f.habitB)
            case "list_id": return Self.uuid(isA ? f.listA : f.listB)
            default:
                if method.hasPrefix("habits.") { return Self.uuid(isA ? f.habitA : f.habitB) }
                if method.hasPrefix("lists.") { return Self.uuid(isA ? f.listA : f.listB) }
                return Self.uuid(isA ? f.taskANew : f.taskB)
            }
        case .name: return Self.q(pick(["Fuzz", "Lire 20 pages", "Ünïcødé ✓"]))
        case .title: return Self.q("Fuzz task")
        case .notes: return Self.q(pick(["", "line 1\nline 2", "  spaced  "]))
        case .icon: return Self.q("figure.run")
        case .color: return Self.q(pick(["#FF8800", "#00aaff"]))
        case .date: return Self.q(pick(["2021-03-04", "2020-02-29", "2021-06-01"]))
        case .timestamp: return Self.q(pick(["2021-01-01T00:00:00Z", "2021-01-01T08:00:00-08:00"]))
        case .int: return pick(["0", "5", "-3", "2147483647", "-2147483648"])
        case .bool: return pick(["true", "false"])
        case .zone: return Self.q(pick(["UTC", "America/Los_Angeles", "Asia/Tokyo"]))
        case .weekStart: return Self.q(pick(["monday", "sunday"]))
        case .state: return Self.q(pick(["not_started", "active", "completed"]))
        case .view: return Self.q(pick(["inbox", "upcoming"]))
        }
    }

    /// A value of a JSON type the param never accepts (null only where null is refused).
    mutating func wrongType(_ spec: ParamSpec) -> String {
        var choices: [String]
        switch spec.type {
        case .int: choices = [#""5""#, "true", "[]", "{}", "1.5", "1e2", "-0.0", "[1,2]"]
        case .bool: choices = [#""true""#, "1", "0", "[]", "{}", #""""#]
        default: choices = ["5", "true", "false", "[]", "{}", #"["x"]"#, #"{"a":"b"}"#, "-1.5e3"]
        }
        if spec.required { choices.append("null") }
        return pick(choices)
    }

    /// A value of the right JSON type that the method must refuse.
    mutating func badValue(_ spec: ParamSpec) -> String? {
        switch spec.type {
        case .uuid:
            return pick([#""""#, #""not-a-uuid""#, #""7d9f0e2a3c414b8e9a571f2e3d4c5b6a""#, #""{7d9f0e2a-3c41-4b8e-9a57-1f2e3d4c5b6a}""#,
                         #""7d9f0e2a-3c41-4b8e-9a57-1f2e3d4c5b6g""#, #""7d9f0e2a-3c41-4b8e-9a57-1f2e3d4c5b6a ""#, #""\u0000""#])
        case .name:
            return pick([#""""#, #""   ""#, Self.q(String(repeating: "x", count: 101)), #""a\u0007b""#, #""a\nb""#, #""\u0000""#,
                         Self.q(String(repeating: "é", count: 101))])
        case .title:
            return pick([#""""#, #""  \t ""#, Self.q(String(repeating: "t", count: 501)), #""a\u001fb""#])
        case .notes:
            return pick([Self.q(String(repeating: "n", count: 10_001)), #""a\u0000b""#])
        case .icon:
            return pick([#""Figure Run""#, #""UPPER""#, #""figure run""#, #""figure..run""#, Self.q(String(repeating: "a", count: 101))])
        case .color:
            return Self.q(pick(["orange", "#GG0000", "#FFF", "FF8800", "#FF88001"]))
        case .date:
            return pick([#""2026-02-30""#, #""2026-13-01""#, #""0000-01-01""#, #""20261101""#, #""2026-1-1""#,
                         #""2026-11-01T00:00:00Z""#, #""10000-01-01""#, #"" 2026-11-01""#])
        case .timestamp:
            return pick([#""2026-11-01T07:00:00""#, #""2026-11-01""#, #""2026-11-01T25:00:00Z""#, #""0000-12-31T23:00:00Z""#,
                         #""10000-01-01T00:00:00Z""#, #""yesterday""#])
        case .int:
            return pick(["2147483648", "-2147483649", "99999999999999999999999999", "1" + String(repeating: "0", count: 300)])
        case .bool:
            return nil
        case .zone:
            return pick([#""PST""#, #""utc""#, #""+02:00""#, #""Mars/Olympus_Mons""#, #""""#, Self.q(String(repeating: "A", count: 65)),
                         #""America/Los_Angeles ""#])
        case .weekStart:
            return pick([#""Monday""#, #""tuesday""#, #""""#])
        case .state:
            return pick([#""done""#, #""Active""#, #""""#])
        case .view:
            return pick([#""Inbox""#, #""today""#, #""""#])
        }
    }

    mutating func hugeNumber() -> String {
        pick(["1e400", "-1e400", "1" + String(repeating: "0", count: 1_000), "123456789012345678901234567890",
              "-0.000000000000000000001e-999", "9223372036854775808", "-9223372036854775809",
              chance(0.02) ? String(repeating: "7", count: 100_000) : "1E+2147483648"])
    }

    mutating func deepValue() -> String {
        let depth = pick([10, 62, 63, 64, 65, 100, 1_000, 10_000])
        if chance(0.5) { return String(repeating: "[", count: depth) + String(repeating: "]", count: depth) }
        return String(repeating: #"{"a":"#, count: depth) + "1" + String(repeating: "}", count: depth)
    }

    // MARK: - Requests

    /// Valid params (required ones plus a random subset of the optional ones).
    mutating func baseParams(_ method: MethodSpec, user: UUID) -> [(String, String)] {
        method.params.compactMap { spec in
            guard spec.required || chance(0.4) else { return nil }
            return (spec.key, validValue(spec, method: method.name, user: user))
        }
    }

    /// One request object that must not succeed if `method` writes, as (text, kind).
    mutating func invalidRequest(id: String?) -> (String, String) {
        let method = pick(Self.methods)
        let user = chance(0.5) ? fixture.userA : fixture.userB
        var members = baseParams(method, user: user)
        func replace(_ key: String, _ value: String) {
            if let index = members.firstIndex(where: { $0.0 == key }) { members[index].1 = value } else { members.append((key, value)) }
        }
        let strategy = int(0..<11)
        switch strategy {
        case 0 where !method.params.isEmpty:
            let spec = pick(method.params)
            replace(spec.key, wrongType(spec))
            return (Self.envelope(id: id, method: method.name, params: Self.object(members)), "wrong-type")
        case 1 where !method.params.isEmpty:
            let spec = pick(method.params)
            replace(spec.key, badValue(spec) ?? wrongType(spec))
            return (Self.envelope(id: id, method: method.name, params: Self.object(members)), "bad-value")
        case 2 where !method.params.isEmpty:
            let spec = pick(method.params)
            replace(spec.key, hugeNumber())
            return (Self.envelope(id: id, method: method.name, params: Self.object(members)), "huge-number")
        case 3:
            let key = method.params.isEmpty ? "a" : pick(method.params).key
            replace(key, deepValue())
            return (Self.envelope(id: id, method: method.name, params: Self.object(members)), "deep-nesting")
        case 4:
            // A duplicated key: in params (same or other value, or spelled with an escape),
            // deep inside a param, or among the request's own members.
            switch int(0..<4) {
            case 0 where !members.isEmpty:
                let member = pick(members)
                members.append((member.0, chance(0.5) ? member.1 : "1"))
            case 1 where !members.isEmpty:
                members.insert((members[0].0, members[0].1), at: int(0..<members.count + 1))
            case 2:
                let key = method.params.isEmpty ? "x" : pick(method.params).key
                replace(key, #"{"a":1,"b":{"c":[{"d":1,"d":1}]}}"#)
            default:
                let envelope = Self.envelope(id: id ?? "null", method: method.name, params: Self.object(members))
                let duplicate = pick([#","id":1"#, #","method":"system.ping""#, #","jsonrpc":"2.0""#, #","params":{}"#])
                return (String(envelope.dropLast()) + duplicate + "}", "duplicate-member")
            }
            var text = Self.envelope(id: id, method: method.name, params: Self.object(members))
            if members.contains(where: { $0.0 == "user_id" }), chance(0.3) {
                // "\u0075ser_id" is "user_id" again: a duplicate only a real parser sees.
                text = String(text.dropLast(2)) + #","\u0075ser_id":"# + Self.uuid(fixture.userB) + "}}"
            }
            return (text, "duplicate-key")
        case 5:
            if !method.params.isEmpty, method.params.contains(where: \.required), chance(0.5) {
                let required = method.params.filter(\.required).map(\.key)
                let missing = pick(required)
                members.removeAll { $0.0 == missing }
                return (Self.envelope(id: id, method: method.name, params: Self.object(members)), "missing-param")
            }
            members.insert((pick(["limt", "User_id", "", "user_id ", "params", "id"]), "1"), at: int(0..<members.count + 1))
            return (Self.envelope(id: id, method: method.name, params: Self.object(members)), "unknown-key")
        case 6:
            return (brokenEnvelope(id: id, method: method.name, params: Self.object(members)), "envelope")
        case 7, 8:
            return (databaseRefused(id: id), "db-refused")
        default:
            if method.params.isEmpty {
                return (Self.envelope(id: id, method: method.name, params: Self.object([("x", "1")])), "unknown-key")
            }
            let spec = pick(method.params)
            replace(spec.key, wrongType(spec))
            return (Self.envelope(id: id, method: method.name, params: Self.object(members)), "wrong-type")
        }
    }

    mutating func brokenEnvelope(id: String?, method: String, params: String) -> String {
        let idMember = id.map { [("id", $0)] } ?? []
        switch int(0..<6) {
        case 0:
            let version = pick([#""1.0""#, "2.0", #""2.00""#, "null", #"" 2.0""#])
            return Self.object([("jsonrpc", version)] + idMember + [("method", Self.q(method)), ("params", params)])
        case 1:
            return Self.object(idMember + [("method", Self.q(method)), ("params", params)]) // no jsonrpc
        case 2:
            let name = pick([method.uppercased(), method + " ", "rpc." + method, String(method.dropLast()), "", method + "\u{0}", "habits.lst"])
            return Self.envelope(id: id, method: name, params: params)
        case 3:
            let value = pick(["null", #""x""#, "5", "true", "[]", "[1,2]", #"["7d9f0e2a-3c41-4b8e-9a57-1f2e3d4c5b6a"]"#])
            return Self.object([("jsonrpc", Self.q("2.0"))] + idMember + [("method", Self.q(method)), ("params", value)])
        case 4:
            let badID = pick(["{}", "[]", "true", #"{"n":1}"#, "[1]"])
            return Self.object([("jsonrpc", Self.q("2.0")), ("id", badID), ("method", Self.q(method)), ("params", params)])
        default:
            let extra = pick(["param", "Params", "ID", "extra", "result", "error"])
            return Self.object([("jsonrpc", Self.q("2.0"))] + idMember + [("method", Self.q(method)), ("params", params), (extra, "{}")])
        }
    }

    /// A well-formed request the repository refuses: another user's rows, a future date, an
    /// inactive habit, an invalid transition, a list of another user, an unknown zone.
    mutating func databaseRefused(id: String?) -> String {
        let f = fixture
        let a = f.userA
        let b = f.userB
        let future = pick(["9999-12-31", "2999-01-01", "2100-06-15"])
        let past = pick(["2021-03-04", "2022-02-02", "2020-01-01"])
        let request: (String, [(String, String)])
        switch int(0..<16) {
        case 0: request = ("habits.update", [("user_id", Self.uuid(b)), ("id", Self.uuid(f.habitA)), ("name", Self.q("Stolen"))])
        case 1: request = (pick(["habits.deactivate", "habits.activate", "habits.delete"]), [("user_id", Self.uuid(b)), ("id", Self.uuid(f.habitA))])
        case 2: request = ("habits.update", [("user_id", Self.uuid(a)), ("id", Self.uuid(UUID())), ("sort_order", "1")])
        case 3: request = ("completions.set", [("user_id", Self.uuid(a)), ("template_id", Self.uuid(f.habitA)), ("date", Self.q(future)),
                                               ("completed", pick(["true", "false"]))])
        // A deactivated habit is on its past active days (issue 16), not from today on.
        case 4: request = ("completions.set", [("user_id", Self.uuid(a)), ("template_id", Self.uuid(f.habitAInactive)),
                                               ("date", Self.q(f.today)), ("completed", "true")])
        case 5: request = ("completions.set", [("user_id", Self.uuid(a)), ("template_id", Self.uuid(f.habitA)),
                                               ("date", Self.q("2019-12-31")), ("completed", "true")])
        case 6: request = ("completions.toggle", [("user_id", Self.uuid(b)), ("template_id", Self.uuid(f.habitA)), ("date", Self.q(past))])
        case 7: request = ("completions.toggle", [("user_id", Self.uuid(a)), ("template_id", Self.uuid(f.habitA)), ("date", Self.q(future))])
        case 8: request = ("completions.set", [("user_id", Self.uuid(a)), ("template_id", Self.uuid(f.habitB)), ("date", Self.q(past)),
                                               ("completed", "true")])
        case 9: request = ("tasks.uncomplete", [("user_id", Self.uuid(a)), ("id", Self.uuid(f.taskAActive))])
        case 10:
            let method = pick(["tasks.delete", "tasks.complete", "tasks.uncomplete", "tasks.cycle"])
            request = (method, [("user_id", Self.uuid(b)), ("id", Self.uuid(pick([f.taskAActive, f.taskADone, f.taskANew])))])
        case 11: request = ("tasks.set_state", [("user_id", Self.uuid(b)), ("id", Self.uuid(f.taskANew)), ("state", Self.q("completed"))])
        case 12: request = ("tasks.update", [("user_id", Self.uuid(b)), ("id", Self.uuid(f.taskANew)), ("title", Self.q("Mine"))])
        case 13:
            request = chance(0.5) ? ("lists.update", [("user_id", Self.uuid(b)), ("id", Self.uuid(f.listA)), ("name", Self.q("X"))])
                : ("lists.delete", [("user_id", Self.uuid(b)), ("id", Self.uuid(f.listA))])
        case 14: request = pick([("tasks.create", [("user_id", Self.uuid(a)), ("title", Self.q("T")), ("list_id", Self.uuid(f.listB))]),
                                 ("tasks.update", [("user_id", Self.uuid(a)), ("id", Self.uuid(f.taskANew)), ("list_id", Self.uuid(f.listB))])])
        default: request = ("profile.set", [("user_id", Self.uuid(a)), ("timezone", Self.q(pick(["Mars/Olympus_Mons", "PST", "utc"])))])
        }
        return Self.envelope(id: id, method: request.0, params: Self.object(request.1))
    }

    /// A read that must succeed (fixture rows of user A).
    mutating func controlRead(id: String?) -> String {
        let f = fixture
        let a = Self.uuid(f.userA)
        let (method, members): (String, [(String, String)]?) = switch int(0..<10) {
        case 0: ("system.ping", nil)
        case 1: ("system.health", chance(0.5) ? [] : nil)
        case 2: ("profile.get", [("user_id", a)])
        case 3: ("habits.list", [("user_id", a), ("include_inactive", pick(["true", "false", "null"]))])
        case 4: ("day.get", [("user_id", a), ("date", Self.q("2021-06-01")), ("timezone", Self.q("Asia/Tokyo"))])
        case 5: ("week.counts", [("user_id", a), ("date", Self.q("2021-06-01")), ("week_start", Self.q("sunday"))])
        case 6: ("lists.list", [("user_id", a)])
        case 7: ("tasks.today", [("user_id", a), ("date", Self.q(f.today))])
        case 8: ("tasks.list", [("user_id", a), ("view", Self.q("list")), ("list_id", Self.uuid(f.listA))])
        default: ("tasks.list", [("user_id", a), ("view", Self.q(pick(["inbox", "upcoming"])))])
        }
        return Self.envelope(id: id, method: method, params: members.map(Self.object))
    }

    // MARK: - Lines

    mutating func next() -> Line {
        let roll = int(0..<100)
        switch roll {
        case 0..<40:
            let notification = chance(0.1)
            let (text, kind) = invalidRequest(id: notification ? nil : freshID())
            return Line(text: Array(text.utf8), kind: notification ? "notification-\(kind)" : kind)
        case 40..<48:
            return Line(text: Array(controlRead(id: chance(0.1) ? nil : freshID()).utf8), kind: "control-read")
        case 48..<60:
            return Line(text: mutate(Array(baseForMutation().utf8)), kind: "byte-mutation")
        case 60..<68:
            return Line(text: truncate(Array(baseForMutation().utf8)), kind: "truncated")
        case 68..<76:
            return Line(text: randomBytes(), kind: "random-bytes")
        case 76..<82:
            return Line(text: Array(tokenSoup().utf8), kind: "token-soup")
        case 82..<90:
            return Line(text: Array(batch().utf8), kind: "batch")
        case 90..<94:
            // Several lines in one write, with LF or CRLF between them.
            var text = Array(baseForMutation().utf8)
            for _ in 0..<int(1..<3) {
                text += chance(0.5) ? [0x0A] : [0x0D, 0x0A]
                text += Array((chance(0.5) ? baseForMutation() : controlRead(id: freshID())).utf8)
            }
            return Line(text: text, kind: "multi-line")
        case 94..<96:
            return Line(text: Array(pick(["", " ", "\t \r", "\r", "  \t  "]).utf8), kind: "blank")
        case 96:
            // A byte-order mark, then a request: not valid UTF-8 JSON text for this protocol.
            return Line(text: [0xEF, 0xBB, 0xBF] + Array(controlRead(id: freshID()).utf8), kind: "bom")
        case 97 where chance(0.05):
            // Past the default 1 MiB limit: skipped unbuffered, answered -32600 id null.
            return Line(text: Array(("[" + String(repeating: "1,", count: 600_000) + "1]").utf8), kind: "oversized")
        default:
            return Line(text: Array(invalidRequest(id: freshID()).0.utf8), kind: "invalid-request")
        }
    }

    /// An invalid request or a control read, as text, for the byte-level mutators.
    mutating func baseForMutation() -> String {
        chance(0.8) ? invalidRequest(id: chance(0.9) ? freshID() : nil).0 : controlRead(id: freshID())
    }

    /// Bytes that are invalid anywhere in JSON text: C0 controls other than TAB, LF and CR
    /// (inside a string they must be escaped; outside they are not whitespace), and bytes
    /// that never occur in UTF-8.
    static let poisonBytes: [UInt8] = Array(0x00...0x08) + [0x0B, 0x0C] + Array(0x0E...0x1F) + [0xC0, 0xC1] + Array(0xF5...0xFF)

    /// Positions of structural characters outside strings.
    static func structuralPositions(_ text: [UInt8]) -> [Int] {
        var positions: [Int] = []
        var inString = false
        var escaped = false
        for (index, byte) in text.enumerated() {
            if inString {
                if escaped { escaped = false } else if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") {
                    inString = false
                    positions.append(index)
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""):
                inString = true
                positions.append(index)
            case UInt8(ascii: "{"), UInt8(ascii: "}"), UInt8(ascii: "["), UInt8(ascii: "]"), UInt8(ascii: ":"), UInt8(ascii: ","):
                positions.append(index)
            default:
                break
            }
        }
        return positions
    }

    mutating func mutate(_ text: [UInt8]) -> [UInt8] {
        var bytes = text
        for _ in 0..<int(1..<4) {
            switch int(0..<4) {
            case 0: bytes.insert(pick(Self.poisonBytes), at: int(0..<bytes.count + 1))
            case 1 where !bytes.isEmpty: bytes[int(0..<bytes.count)] = pick(Self.poisonBytes)
            case 2:
                let positions = Self.structuralPositions(bytes)
                if !positions.isEmpty { bytes.remove(at: pick(positions)) } else { bytes.append(pick(Self.poisonBytes)) }
            default:
                let positions = Self.structuralPositions(bytes)
                if !positions.isEmpty {
                    let position = pick(positions)
                    bytes.insert(bytes[position], at: position)
                } else {
                    bytes.insert(pick(Self.poisonBytes), at: 0)
                }
            }
        }
        return bytes
    }

    /// A proper prefix that ends before the value's last byte: never complete JSON.
    mutating func truncate(_ text: [UInt8]) -> [UInt8] {
        guard text.count > 1 else { return [UInt8(ascii: "{")] }
        return Array(text[0..<int(1..<text.count)])
    }

    mutating func randomBytes() -> [UInt8] {
        let count = int(1..<(chance(0.1) ? 4_000 : 200))
        switch int(0..<3) {
        case 0: return (0..<count).map { _ in var b = UInt8.random(in: 0...255, using: &rng); if b == 0x0A { b = 0x0B }; return b }
        case 1: return (0..<count).map { _ in UInt8.random(in: 0x20...0x7E, using: &rng) }
        default: return (0..<count).map { _ in pick(Array("{}[]\":,0123456789-.eE+ \\ntrufalsn".utf8)) }
        }
    }

    /// JSON-looking token sequences: mostly broken, sometimes valid JSON that is not a request.
    mutating func tokenSoup() -> String {
        let tokens = ["{", "}", "[", "]", ":", ",", #""jsonrpc""#, #""2.0""#, #""id""#, #""method""#, #""params""#, #""system.ping""#,
                      #""habits.list""#, #""user_id""#, "1", "-0", "1e5", "null", "true", #""""#, #""\u0000""#, " "]
        return (0..<int(1..<40)).map { _ in pick(tokens) }.joined()
    }

    mutating func batch() -> String {
        if chance(0.05) { return "[]" }
        let elements: [String] = (0..<int(1..<13)).map { _ in
            switch int(0..<10) {
            case 0: return pick(["1", #""x""#, "null", "[]", "{}", "true", "[1]"])
            case 1, 2: return controlRead(id: chance(0.2) ? nil : freshID())
            default: return invalidRequest(id: chance(0.15) ? nil : freshID()).0
            }
        }
        return "[" + elements.joined(separator: chance(0.1) ? " , " : ",") + "]"
    }
}
