import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// Ids, batches and notifications, as seen on the wire.
@Suite("habit serve: ids, batches, notifications")
struct ProtocolTests {
    /// Number ids in forms a double would not round-trip.
    static let numberIDs = ["1", "1.0", "-0", "1e3", "1E+3", "-1.5e-7", "0.10", "0", "-12", "12345678901234567890123",
                            "3.141592653589793238462643383279"]

    @Test("number ids are echoed byte for byte, on every response path")
    func numberIDsAreEchoedExactly() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let user = WireJSON.uuid(UUID()).encoded
            // Answered by the reader (ping, -32601, -32602) and by a database thread (list, not_found).
            let templates = [
                #"{"jsonrpc":"2.0","id":ID,"method":"system.ping"}"#,
                #"{"jsonrpc":"2.0","id":ID,"method":"no.such.method"}"#,
                #"{"jsonrpc":"2.0","id":ID,"method":"profile.get","params":{}}"#,
                #"{"jsonrpc":"2.0","id":ID,"method":"habits.list","params":{"user_id":\#(user)}}"#,
                #"{"jsonrpc":"2.0","id":ID,"method":"habits.delete","params":{"user_id":\#(user),"id":\#(WireJSON.uuid(UUID()).encoded)}}"#,
                #"{"jsonrpc":"2.0","id":ID,"method":"system.ping","jsonrpc":"2.0"}"#, // -32600 with the id known
            ]
            for literal in Self.numberIDs {
                for template in templates {
                    try worker.send(template.replacingOccurrences(of: "ID", with: literal))
                    let response = try worker.readResponse()
                    #expect(response.id?.numberLiteral == literal, "sent id \(literal), got \(response.raw)")
                    // The raw text holds the literal itself, not a re-formatted number.
                    #expect(response.raw.contains(#""id":\#(literal),"#) || response.raw.contains(#""id":\#(literal)}"#),
                            "sent id \(literal), got \(response.raw)")
                }
            }
        }
    }

    @Test("string ids and null are echoed")
    func stringAndNullIDs() throws {
        let ids: [WireJSON] = ["abc", "", " spaced ", "ünïcødé 😀", "quote\"back\\slash", "1", "null", "tab\there", "\u{01}", .null]
        try WorkerSession.with { session in
            let worker = session.worker
            for id in ids {
                for method in ["system.ping", "habits.list"] {
                    try worker.sendRequest(method, params: method == "habits.list" ? params(UUID()) : nil, id: id)
                    let response = try worker.readResponse()
                    #expect(response.id == id, "sent id \(id.encoded), got \(response.raw)")
                    #expect(response.isSuccess, "\(response.raw)")
                    if case .string(let text) = id, !text.contains(where: { $0 == "\"" || $0 == "\\" || $0.asciiValue.map { $0 < 0x20 } == true }) {
                        #expect(response.raw.contains(#""id":\#(id.encoded)"#), "\(response.raw)")
                    }
                }
            }
            // An escaped id is compared by value: "\u0041" is the id "A".
            try worker.send(#"{"jsonrpc":"2.0","id":"\u0041\/","method":"system.ping"}"#)
            #expect(try worker.readResponse().id == "A/")
        }
    }

    @Test("a batch is answered by one array holding exactly its non-notification entries")
    func mixedBatch() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let user = UUID()
            let userText = WireJSON.uuid(user).encoded
            let batch = """
                [{"jsonrpc":"2.0","id":1,"method":"system.ping"},\
                {"jsonrpc":"2.0","method":"system.ping"},\
                {"jsonrpc":"2.0","id":"two","method":"nope"},\
                5,\
                {"jsonrpc":"1.0","id":3,"method":"system.ping"},\
                {"jsonrpc":"2.0","id":4,"method":"habits.list","params":{"user_id":\(userText)}},\
                {"jsonrpc":"2.0","method":"system.ping","params":[1]},\
                {"foo":1},\
                {"jsonrpc":"2.0","id":6,"method":"profile.get","params":{}},\
                {"jsonrpc":"2.0","method":"habits.create","params":{"user_id":\(userText),"name":"From batch"}},\
                {"jsonrpc":"2.0","method":"habits.create","params":{"user_id":\(userText)}}]
                """
            try worker.send(batch)
            let response = try worker.readResponse()
            #expect(response.isBatch, "\(response.raw)")
            let entries = response.batch
            #expect(entries.count == 7, "\(response.raw)")
            func entry(_ id: WireJSON) -> [WorkerResponse] { entries.filter { $0.id == id } }
            #expect(entry(1).count == 1 && entry(1).first?.result == ["ok": true])
            #expect(entry("two").count == 1 && entry("two").first?.code == Code.methodNotFound)
            #expect(entry(3).count == 1 && entry(3).first?.code == Code.invalidRequest)
            #expect(entry(4).count == 1 && entry(4).first?.result?["habits"]?.arrayValue != nil)
            #expect(entry(6).count == 1 && entry(6).first?.code == Code.invalidParams && entry(6).first?.field == "user_id")
            let nulls = entry(.null)
            #expect(nulls.count == 2 && nulls.allSatisfy { $0.code == Code.invalidRequest }, "\(response.raw)")

            // Nothing else was written for the batch: the next line answers the next request.
            try worker.sendRequest("system.ping", id: "after")
            #expect(try worker.readResponse().id == "after")

            // Batches of one, of one invalid entry, nested.
            try worker.send(#"[{"jsonrpc":"2.0","id":9,"method":"system.ping"}]"#)
            let single = try worker.readResponse()
            #expect(single.isBatch && single.batch.count == 1 && single.batch.first?.id == 9, "\(single.raw)")
            for line in ["[1]", "[[]]"] {
                try worker.send(line)
                let invalid = try worker.readResponse()
                #expect(invalid.isBatch && invalid.batch.count == 1, "\(invalid.raw)")
                #expect(invalid.batch.first?.id == .null && invalid.batch.first?.code == Code.invalidRequest, "\(invalid.raw)")
            }

            worker.closeInput()
            #expect(try worker.remainingOutput().isEmpty)
            #expect(worker.waitForExit() == 0)
            // The valid notification in the batch ran; the invalid one did not.
            #expect(try session.habitCount(user: user) == 1)
        }
    }

    @Test("a batch of only notifications gets no output at all")
    func notificationOnlyBatch() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let user = UUID()
            let userText = WireJSON.uuid(user).encoded
            try worker.send("""
                [{"jsonrpc":"2.0","method":"system.ping"},\
                {"jsonrpc":"2.0","method":"habits.create","params":{"user_id":\(userText),"name":"Batched"}},\
                {"jsonrpc":"2.0","method":"nope"},\
                {"jsonrpc":"2.0","method":"profile.get","params":{}},\
                {"jsonrpc":"2.0","method":"system.ping","params":[1]}]
                """)
            try worker.sendRequest("system.ping", id: "follow-up")
            let next = try worker.readResponse()
            #expect(next.id == "follow-up", "expected the follow-up's response, got \(next.raw)")
            worker.closeInput()
            #expect(try worker.remainingOutput().isEmpty)
            #expect(worker.waitForExit() == 0)
            #expect(try session.habitCount(user: user) == 1)
        }
    }

    @Test("notifications are executed but never answered, even when they fail")
    func notifications() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let user = UUID()
            try worker.notify("habits.create", params: params(user, ["name": "Noted"]))
            try worker.notify("system.ping")
            try worker.notify("no.such.method")
            try worker.notify("profile.get", params: [:])                                       // -32602 if it were a request
            try worker.notify("habits.update", params: params(user, ["id": .uuid(UUID()), "name": "x"])) // not_found
            try worker.notify("habits.create", params: params(user, ["name": "   "]))           // invalid name
            try worker.send(#"{"jsonrpc":"2.0","method":"system.ping","params":[1]}"#)           // positional params
            try worker.send(#"{"jsonrpc":"2.0","method":"profile.get","params":{"a":1,"a":2}}"#) // duplicate key
            try worker.sendRequest("system.ping", id: "follow-up")
            let next = try worker.readResponse()
            #expect(next.id == "follow-up", "expected the follow-up's response, got \(next.raw)")
            worker.closeInput()
            #expect(try worker.remainingOutput().isEmpty)
            #expect(worker.waitForExit() == 0)

            // The valid notification ran (EOF drains accepted work before exit); check through the API.
            try session.withAnotherWorker { other in
                let habits = try other.call("habits.list", params(user, ["include_inactive": true]))["habits"]?.arrayValue
                #expect(habits?.compactMap { $0["name"]?.stringValue } == ["Noted"])
            }
        }
    }

    @Test("blank lines and CRLF line endings")
    func blankLinesAndCRLF() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            try worker.sendRaw(Array("\n   \n\t\r\n".utf8))
            try worker.sendRaw(Array(#"{"jsonrpc":"2.0","id":"crlf","method":"system.ping"}"#.utf8) + [0x0D, 0x0A])
            let response = try worker.readResponse()
            #expect(response.id == "crlf" && response.result == ["ok": true], "\(response.raw)")
            // A final request without a trailing newline is still answered at EOF.
            try worker.sendRaw(Array(#"{"jsonrpc":"2.0","id":"last","method":"system.ping"}"#.utf8))
            worker.closeInput()
            #expect(try worker.readResponse().id == "last")
            #expect(try worker.remainingOutput().isEmpty)
            #expect(worker.waitForExit() == 0)
        }
    }
}
