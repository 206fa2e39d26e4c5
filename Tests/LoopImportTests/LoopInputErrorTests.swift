import Foundation
@testable import LoopImport
import Testing

/// Malformed CSV, hostile zips and broken Loop files: each a precise error (reason, file,
/// line, column), never a crash or a guess.
@Suite("Loop import: CSV, zip and file errors")
struct LoopInputErrorTests {
    static func error(_ body: () throws -> Void) -> LoopImportError? {
        do { try body(); return nil } catch let error as LoopImportError { return error } catch { return nil }
    }

    // MARK: CSV

    @Test("RFC 4180: quotes, doubled quotes, commas and line breaks in fields, CRLF and LF, BOM")
    func csvFields() throws {
        let text = "\u{FEFF}a,\"b,c\",\"say \"\"hi\"\"\"\r\n\"two\nlines\",,\"\"\nlast,\"x\r\ny\",z"
        let records = try CSVReader.records(Array(text.utf8), file: "t.csv")
        #expect(records.map(\.fields) == [["a", "b,c", "say \"hi\""], ["two\nlines", "", ""], ["last", "x\r\ny", "z"]])
        #expect(records.map(\.line) == [1, 2, 4])
        // A column counts from the start of its own line: "z" is on line 5, after `y",`.
        #expect(records[2].columns == [1, 6, 4])
        // Without a BOM, and non-ASCII counted as one column each.
        let plain = try CSVReader.records(Array("é,ü\n".utf8), file: "t.csv")
        #expect(plain.map(\.fields) == [["é", "ü"]] && plain[0].columns == [1, 3])
        #expect(try CSVReader.records([], file: "t.csv").isEmpty)
    }

    @Test("CSV errors carry reason, file, line and column", arguments: [
        ("a,b\nc,\"open", LoopImportError.Reason.csvUnterminatedQuote, 2, 3),
        ("a,b\nc,d\"e\n", .csvBadQuote, 2, 4),
        ("x\n\"ab\"c,d\n", .csvBadQuote, 2, 5),
    ])
    func csvErrors(text: String, reason: LoopImportError.Reason, line: Int, column: Int) {
        let failure = Self.error { _ = try CSVReader.records(Array(text.utf8), file: "f.csv") }
        #expect(failure == LoopImportError(reason, failure?.message ?? "", file: "f.csv", line: line, column: column))
    }

    @Test("the JSON-RPC error data names reason, file, line and column")
    func errorData() {
        let error = LoopImportError(.invalidDate, "\"x\" is not a date YYYY-MM-DD", file: "001 Run/Checkmarks.csv", line: 3, column: 1)
        #expect(error.errorData.jsonString == #"{"reason":"invalid_date","message":"\"x\" is not a date YYYY-MM-DD","file":"001 Run/Checkmarks.csv","line":3,"column":1}"#)
        #expect(LoopImportError(.zipTruncated, "cut").errorData.jsonString == #"{"reason":"zip_truncated","message":"cut","file":null,"line":null,"column":null}"#)
    }

    @Test("invalid UTF-8 is refused with its line")
    func invalidUTF8() {
        let failure = Self.error { _ = try CSVReader.records(Array("a\nb\n".utf8) + [0xC3, 0x28], file: "f.csv") }
        #expect(failure?.reason == .invalidUTF8 && failure?.line == 3)
    }

    // MARK: zip

    static let small: [(String, [UInt8], Bool)] = [("Habits.csv", Array("Position,Name\n".utf8), true), ("a/b.csv", Array("x".utf8), false)]

    @Test("a zip cut short, or not a zip, is refused")
    func truncatedAndSignature() {
        let zip = [UInt8](LoopExportFixture.zip(Self.small))
        for cut in [1, 10, 30, zip.count - 40] {
            let failure = Self.error { _ = try ZipReader.entries(Array(zip.prefix(zip.count - cut))) }
            #expect(failure?.reason == .zipTruncated || failure?.reason == .zipBadSignature, "cut \(cut): \(String(describing: failure))")
            #expect(failure != nil)
        }
        #expect(Self.error { _ = try ZipReader.entries(Array(zip.prefix(zip.count - 1))) }?.reason == .zipTruncated)
        #expect(Self.error { _ = try ZipReader.entries(Array("Position,Name\n001,Run\n and a long enough tail".utf8)) }?.reason == .zipBadSignature)
        var wrongLocal = zip
        wrongLocal[0] = 0x51
        #expect(Self.error { _ = try ZipReader.entries(wrongLocal) }?.reason == .zipBadSignature)
        #expect(Self.error { _ = try ZipReader.entries([]) }?.reason == .zipBadSignature)
    }

    @Test("entries beyond the caps are refused before inflating; a bomb stops at its declared size")
    func caps() throws {
        let big = [UInt8](repeating: UInt8(ascii: "a"), count: 100_000)
        let zip = [UInt8](LoopExportFixture.zip([("Habits.csv", big, true)]))
        let capped = ZipReader.Limits(maximumEntries: 10, maximumEntryBytes: 50_000, maximumTotalBytes: 1 << 20)
        let tooLarge = Self.error { _ = try ZipReader.entries(zip, limits: capped) }
        #expect(tooLarge?.reason == .zipEntryTooLarge && tooLarge?.file == "Habits.csv")
        #expect(try ZipReader.entries(zip)["Habits.csv"] == big)
        let total = ZipReader.Limits(maximumEntries: 10, maximumEntryBytes: 100_000, maximumTotalBytes: 150_000)
        let two = [UInt8](LoopExportFixture.zip([("a.csv", big, true), ("b.csv", big, true)]))
        #expect(Self.error { _ = try ZipReader.entries(two, limits: total) }?.reason == .zipTooLarge)
        let many = ZipReader.Limits(maximumEntries: 1, maximumEntryBytes: 100_000, maximumTotalBytes: 1 << 20)
        #expect(Self.error { _ = try ZipReader.entries(two, limits: many) }?.reason == .zipTooLarge)

        // A bomb: 100,000 bytes deflated, declared as 1,000 in the central directory.
        var bomb = zip
        let central = Self.centralDirectoryOffset(bomb)
        bomb[central + 24] = 0xE8; bomb[central + 25] = 0x03; bomb[central + 26] = 0; bomb[central + 27] = 0
        #expect(Self.error { _ = try ZipReader.entries(bomb) }?.reason == .zipCorrupt)
    }

    @Test("unsafe names, duplicates, bad CRC and unsupported methods are refused", arguments: [
        "../evil.csv", "/etc/passwd", "a/../../b.csv", "a\\b.csv", "C:/x.csv", "a//b.csv", "./Habits.csv",
    ])
    func unsafeNames(name: String) {
        let zip = [UInt8](LoopExportFixture.zip([(name, Array("x".utf8), false)]))
        let failure = Self.error { _ = try ZipReader.entries(zip) }
        #expect(failure?.reason == .zipBadPath, "\(name): \(String(describing: failure))")
    }

    @Test("duplicate names, a wrong CRC and an unknown method")
    func otherZipErrors() {
        let duplicate = [UInt8](LoopExportFixture.zip([("a.csv", [1], false), ("a.csv", [2], false)]))
        #expect(Self.error { _ = try ZipReader.entries(duplicate) }?.reason == .zipDuplicateEntry)
        var crc = [UInt8](LoopExportFixture.zip([("a.csv", Array("hello".utf8), false)]))
        crc[30 + 5] ^= 0xFF // the data, right after the 30-byte local header and the name
        #expect(Self.error { _ = try ZipReader.entries(crc) }?.reason == .zipCorrupt)
        var method = [UInt8](LoopExportFixture.zip([("a.csv", Array("hello".utf8), false)]))
        method[Self.centralDirectoryOffset(method) + 10] = 12 // bzip2
        #expect(Self.error { _ = try ZipReader.entries(method) }?.reason == .zipUnsupported)
        var encrypted = [UInt8](LoopExportFixture.zip([("a.csv", Array("hello".utf8), false)]))
        encrypted[Self.centralDirectoryOffset(encrypted) + 8] |= 1
        #expect(Self.error { _ = try ZipReader.entries(encrypted) }?.reason == .zipUnsupported)
    }

    static func centralDirectoryOffset(_ zip: [UInt8]) -> Int {
        let eocd = zip.count - 22
        return Int(zip[eocd + 16]) | Int(zip[eocd + 17]) << 8 | Int(zip[eocd + 18]) << 16 | Int(zip[eocd + 19]) << 24
    }

    // MARK: Loop's files

    static let header = "Position,Name,Type,Question,Description,FrequencyNumerator,FrequencyDenominator,Color,Unit,Target Type,Target Value,Archived?\n"

    @Test("broken Loop files name the file, line and column", arguments: [
        (["Other.csv": "x"], LoopImportError.Reason.missingHabitsFile, nil, nil, nil),
        (["Habits.csv": "Position,Name\n"], .missingColumn, "Habits.csv", 1, nil),
        (["Habits.csv": header + "001,Run,YES_NO,,,1,1,#D32F2F,,,\n"], .wrongColumnCount, "Habits.csv", 2, nil),
        (["Habits.csv": header + "x01,Run,YES_NO,,,1,1,#D32F2F,,,,false\n"], .invalidPosition, "Habits.csv", 2, 1),
        (["Habits.csv": header + "001,Run,YES_NO,,,1,1,#D32F2F,,,,false\n001,Walk,YES_NO,,,1,1,#D32F2F,,,,false\n"], .duplicatePosition, "Habits.csv", 3, 1),
        (["Habits.csv": header + "001,Run,BOOLEAN,,,1,1,#D32F2F,,,,false\n"], .invalidHabitType, "Habits.csv", 2, 9),
        (["Habits.csv": header + "001,Run,YES_NO,,,1,0,#D32F2F,,,,false\n"], .invalidFrequency, "Habits.csv", 2, 20),
        (["Habits.csv": header + "001,\"Run, fast\",YES_NO,,,1,1,#D32F2F,,,,yes\n"], .invalidArchived, "Habits.csv", 2, 41),
        (["Habits.csv": header + "001,Run,YES_NO,,,1,1,#D32F2F,,,,false\n", "002 Walk/Checkmarks.csv": "Date,Value,Notes\n"],
         .unknownHabitFolder, "002 Walk/Checkmarks.csv", nil, nil),
        (["Habits.csv": header + "001,Run,YES_NO,,,1,1,#D32F2F,,,,false\n", "001 Run/Checkmarks.csv": "", "001/Checkmarks.csv": ""],
         .duplicateHabitFolder, "001/Checkmarks.csv", nil, nil),
        (["Habits.csv": header + "001,Run,YES_NO,,,1,1,#D32F2F,,,,false\n", "001 Run/Checkmarks.csv": "Date,Value,Notes\n2026-11-31,YES_MANUAL,\n"],
         .invalidDate, "001 Run/Checkmarks.csv", 2, 1),
        (["Habits.csv": header + "001,Run,YES_NO,,,1,1,#D32F2F,,,,false\n", "001 Run/Checkmarks.csv": "Date,Value,Notes\n2026-11-20,NO,\n1969-12-31,NO,\n"],
         .invalidDate, "001 Run/Checkmarks.csv", 3, 1),
        (["Habits.csv": header + "001,Run,YES_NO,,,1,1,#D32F2F,,,,false\n", "001 Run/Checkmarks.csv": "Date,Value,Notes\n2026-11-20,\"YES\",\"a,b\"\n"],
         .invalidCheckmarkValue, "001 Run/Checkmarks.csv", 2, 12),
        (["Habits.csv": header + "001,Run,YES_NO,,,1,1,#D32F2F,,,,false\n", "001 Run/Checkmarks.csv": "2026-11-20,2\n2026-11-20,3\n"],
         .duplicateDate, "001 Run/Checkmarks.csv", 2, 1),
    ] as [([String: String], LoopImportError.Reason, String?, Int?, Int?)])
    func loopFileErrors(files: [String: String], reason: LoopImportError.Reason, file: String?, line: Int?, column: Int?) {
        let failure = Self.error { _ = try LoopExport(files: files) }
        #expect(failure?.reason == reason, "\(String(describing: failure))")
        #expect(failure?.file == file && failure?.line == line && failure?.column == column, "\(String(describing: failure))")
    }

    @Test("a numeric habit's amounts are thousandths, not checkmarks: at least or at most a day or a week is measurable, per month not imported; a single top folder is accepted")
    func numericAndTopFolder() throws {
        let files = ["Loop Habits CSV 2026-11-23/Habits.csv": Self.header + "001,Water,NUMERICAL,,,1,1,#039BE5,glasses,AT_LEAST,8.0,false\n"
                        + "002,Coffee,NUMERICAL,,,1,1,#039BE5,cups,AT_MOST,2.0,false\n"
                        + "003,Steps,NUMERICAL,,,1,7,#039BE5,steps,AT_LEAST,50000.0,false\n"
                        + "004,Books,NUMERICAL,,,1,30,#039BE5,books,AT_LEAST,2.0,false\n",
                     "Loop Habits CSV 2026-11-23/001 Water/Checkmarks.csv": "Date,Value,Notes\n2026-11-22,9500,\n2026-11-21,3,\n2026-11-20,-1,\n2026-11-19,0,\n"]
        let (document, report) = try LoopExport(files: files).accountDocument(user: UUID(), timeZone: "UTC", today: LoopDay(iso: "2026-11-23")!)
        #expect(report.numericHabitsNotImported == ["Books"] && report.habits == 3 && report.measurableHabits == 3, "\(report)")
        let steps = document["habits"]?.arrayValue?.first { $0["name"] == "Steps" }
        #expect(steps?["target_period"] == "week" && steps?["periods"]?[0]?["schedule"]?["type"] == "times_per_week", "\(document)")
        // 9500 thousandths is 9.5 (at least 8: done); 3 is Loop's SKIP, −1 UNKNOWN, 0 no amount.
        #expect(document["checkins"]?.arrayValue?.map { $0["value"] } == [.string("9.5")], "\(document)")
        #expect(document["completions"]?.arrayValue?.count == 1 && document["skips"]?.arrayValue?.count == 1)
        // A folder entry beside the files (as the files form may send it) is ignored, not a crash.
        var withFolder = files
        withFolder["Loop Habits CSV 2026-11-23/"] = ""
        withFolder["Loop Habits CSV 2026-11-23"] = ""
        #expect(try LoopExport(files: withFolder) == LoopExport(files: files))
    }
}

/// Mutated exports never crash the converter: each either converts or is refused with a
/// LoopImportError. Seeded (SplitMix64), so a failure replays.
@Suite("Loop import: mutated input")
struct LoopMutationTests {
    struct SplitMix64: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    @Test("flipped bytes, cut and spliced zips", arguments: [UInt64(1), 19, 2026])
    func mutatedZips(seed: UInt64) {
        var random = SplitMix64(state: seed)
        let original = [UInt8](LoopConversionTests.fixture.zip())
        var converted = 0, refused = 0
        for _ in 0..<400 {
            var zip = original
            switch Int.random(in: 0..<3, using: &random) {
            case 0:
                for _ in 0..<Int.random(in: 1...8, using: &random) {
                    zip[Int.random(in: 0..<zip.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
                }
            case 1:
                zip = Array(zip.prefix(Int.random(in: 0..<zip.count, using: &random)))
            default:
                let from = Int.random(in: 0..<zip.count, using: &random)
                let to = Int.random(in: 0..<zip.count, using: &random)
                let length = Int.random(in: 1...64, using: &random)
                for offset in 0..<length where from + offset < zip.count && to + offset < zip.count { zip[to + offset] = original[from + offset] }
            }
            do {
                let export = try LoopExport.read(zip: Data(zip))
                _ = try export.accountDocument(user: LoopConversionTests.user, timeZone: "Europe/Paris", today: LoopConversionTests.today)
                converted += 1
            } catch {
                refused += 1
            }
        }
        #expect(converted + refused == 400 && refused > 0)
    }

    @Test("random CSV text in every file", arguments: [UInt64(7), 77])
    func randomCSV(seed: UInt64) {
        var random = SplitMix64(state: seed)
        let alphabet = Array("\",\r\n 0123456789-YESNOKIPMAUL_#aé瞑truefals".unicodeScalars)
        func text() -> String {
            String(String.UnicodeScalarView((0..<Int.random(in: 0...60, using: &random)).map { _ in alphabet.randomElement(using: &random)! }))
        }
        let header = LoopInputErrorTests.header
        for _ in 0..<500 {
            let files = ["Habits.csv": Bool.random(using: &random) ? header + "001,Run,YES_NO,,,1,1,#D32F2F,,,,false\n" + text() : text(),
                         "001 Run/Checkmarks.csv": "Date,Value,Notes\n" + text()]
            // Typed throws: the only error there can be is a LoopImportError; the test is that
            // nothing traps (an index out of range would end the process).
            _ = try? LoopExport(files: files).accountDocument(user: LoopConversionTests.user, timeZone: "UTC", today: LoopConversionTests.today)
        }
    }
}
