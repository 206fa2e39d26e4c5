import Testing
@testable import JSONRPC

@Suite struct ErrorReasonTests {
    @Test func everyReasonIsSnakeCaseAndBelongsToACode() {
        for reason in RPCReason.allCases {
            #expect(!reason.codes.isEmpty, "\(reason)")
            #expect(reason.rawValue.utf8.allSatisfy { (97...122).contains($0) || (48...57).contains($0) || $0 == UInt8(ascii: "_") }, "\(reason.rawValue)")
        }
        #expect(Set(RPCReason.allCases.map(\.rawValue)).count == RPCReason.allCases.count)
    }

    @Test func parseErrorsNameTheirKind() {
        func reason(_ line: [UInt8]) -> String? {
            guard case .invalid(let error) = RPCCodec.decode(line: line) else { return nil }
            return error.data?["reason"]?.stringValue
        }
        #expect(reason(Array("{x".utf8)) == "invalid_json")
        #expect(reason(Array("\"".utf8) + [0xC3, 0x28] + Array("\"".utf8)) == "invalid_utf8")
        #expect(reason(Array(repeating: UInt8(ascii: "["), count: 200)) == "too_deep")
    }

    /// Every error the codec answers carries a reason of its code and prose in data.message.
    @Test func codecErrorsCarryAReasonOfTheirCode() {
        let lines = ["[]", "1", "{}", #"{"jsonrpc":"1.0","method":"m","id":1}"#, #"{"jsonrpc":"2.0","method":"m","x":1,"id":1}"#,
                     #"{"jsonrpc":"2.0","method":"m","params":[1],"id":1}"#, #"{"jsonrpc":"2.0","method":"m","params":{"a":1,"a":2},"id":1}"#]
        for line in lines {
            let error: RPCError
            switch RPCCodec.decode(line: Array(line.utf8)) {
            case .invalid(let e), .single(.invalid(_, let e)): error = e
            default: Issue.record("\(line) decoded"); continue
            }
            let reason = error.data?["reason"]?.stringValue.flatMap(RPCReason.init(rawValue:))
            #expect(reason.map { $0.codes.contains(error.code) } == true, "\(line) → \(error)")
            #expect(error.data?["message"]?.stringValue?.isEmpty == false, "\(line) → \(error)")
        }
    }
}
