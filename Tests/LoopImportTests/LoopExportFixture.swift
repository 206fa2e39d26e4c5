import CZlib
import Foundation

/// Writes a Loop Habit Tracker CSV export the way Loop's exporter does, so the converter is
/// tested against the files users will bring. Mirrors, in iSoron/uhabits (uhabits-core):
/// - io/HabitsCSVExporter.kt @ 035b392ece8fa80c941996a016a9461e4fe1f9de: the zip entries in
///   its order (Habits.csv; per selected habit "NNN Name/Scores.csv", "NNN Name/Checkmarks.csv";
///   then Scores.csv and Checkmarks.csv), folder names `String.format("%03d %s", index + 1,
///   sanitized name).trim()` with `[^ a-zA-Z0-9._-]+` removed and at most 100 characters,
///   per-habit Checkmarks.csv `Date,Value,Notes` newest first with the entry's formatted value,
///   the top-level grid written by hand (`Date,` + names + `,`, unquoted).
/// - models/HabitList.kt `writeCSV` @ 0daa4f6a2facfec064fdba0989ea73b0c04e22d6: the 12 columns.
/// - models/PaletteColor.kt `toCsvColor` @ 2828dfcc754ee09a5e1c03fb96986b71d0686af1: the palette.
/// - utils/DateFormats.kt `getCSVDateFormat`: `yyyy-MM-dd`.
/// - opencsv CSVWriter.writeNext(row, applyQuotesToAll = false): a field is quoted only when it
///   holds `"`, `,`, CR or LF; `"` doubled; lines end in "\n".
/// - java.util.zip.ZipOutputStream: DEFLATED entries with a data descriptor (flag bit 3, zero
///   sizes in the local header). Stored entries are written too, to test both methods.
struct LoopExportFixture {
    /// Loop's Entry values and the names its CSV writes for them.
    enum Value: String {
        case yesManual = "YES_MANUAL", yesAuto = "YES_AUTO", no = "NO", skip = "SKIP", unknown = "UNKNOWN"
        var legacyNumber: Int {
            switch self { case .yesManual: 2; case .yesAuto: 1; case .no: 0; case .skip: 3; case .unknown: -1 }
        }
    }

    struct Habit {
        var name: String
        var question = ""
        var description = ""
        var numerical = false
        var numerator = 1
        var denominator = 1
        var paletteIndex = 7
        var unit = ""
        var targetValue = 0.0
        var targetType = "AT_LEAST"
        var archived = false
        /// Written as a folder (Loop's "selected habits").
        var selected = true
        /// Yes/no entries by ISO date.
        var entries: [(date: String, value: Value, notes: String)] = []
        /// A numeric habit's amounts × 1000 by ISO date.
        var amounts: [(date: String, milli: Int)] = []
    }

    static let palette = ["#D32F2F", "#E64A19", "#F57C00", "#FF8F00", "#F9A825", "#AFB42B", "#7CB342",
                          "#388E3C", "#00897B", "#00ACC1", "#039BE5", "#1976D2", "#303F9F", "#5E35B1",
                          "#8E24AA", "#D81B60", "#5D4037", "#303030", "#757575", "#aaaaaa"]

    var habits: [Habit]

    // MARK: CSV as opencsv writes it

    static func csvField(_ field: String) -> String {
        guard field.contains(where: { $0 == "\"" || $0 == "," || $0 == "\n" || $0 == "\r" || $0 == "\r\n" }) else { return field }
        return "\"" + field.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    static func csvLine(_ fields: [String]) -> String { fields.map(csvField).joined(separator: ",") + "\n" }

    static func folderName(position: Int, name: String) -> String {
        let sane = String(name.unicodeScalars.filter { $0 == " " || $0 == "." || $0 == "_" || $0 == "-"
                || ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) }.prefix(100))
        let padded = position < 10 ? "00\(position)" : position < 100 ? "0\(position)" : "\(position)"
        return "\(padded) \(sane)".trimmingCharacters(in: .whitespaces)
    }

    func habitsCSV() -> String {
        var text = Self.csvLine(["Position", "Name", "Type", "Question", "Description", "FrequencyNumerator",
                                 "FrequencyDenominator", "Color", "Unit", "Target Type", "Target Value", "Archived?"])
        for (index, habit) in habits.enumerated() {
            let position = index + 1
            text += Self.csvLine([
                position < 10 ? "00\(position)" : position < 100 ? "0\(position)" : "\(position)",
                habit.name, habit.numerical ? "NUMERICAL" : "YES_NO", habit.question, habit.description,
                String(habit.numerator), String(habit.denominator), Self.palette[habit.paletteIndex],
                habit.numerical ? habit.unit : "", habit.numerical ? habit.targetType : "",
                habit.numerical ? String(habit.targetValue) : "", String(habit.archived),
            ])
        }
        return text
    }

    /// The files in the exporter's order, names as in the zip.
    func files() -> [(name: String, text: String)] {
        var files: [(String, String)] = [("Habits.csv", habitsCSV())]
        var selected: [Habit] = []
        for (index, habit) in habits.enumerated() where habit.selected {
            let folder = Self.folderName(position: index + 1, name: habit.name) + "/"
            files.append((folder + "Scores.csv", Self.csvLine(["Date", "Score"]) + Self.csvLine(["2026-11-23", "0.5000"])))
            var checkmarks = Self.csvLine(["Date", "Value", "Notes"])
            if habit.numerical {
                for amount in habit.amounts.sorted(by: { $0.date > $1.date }) {
                    checkmarks += Self.csvLine([amount.date, String(amount.milli), ""])
                }
            } else {
                for entry in habit.entries.sorted(by: { $0.date > $1.date }) {
                    checkmarks += Self.csvLine([entry.date, entry.value.rawValue, entry.notes])
                }
            }
            files.append((folder + "Checkmarks.csv", checkmarks))
            selected.append(habit)
        }
        let gridHeader = "Date," + selected.map { $0.name + "," }.joined() + "\n"
        files.append(("Scores.csv", gridHeader))
        files.append(("Checkmarks.csv", gridHeader))
        return files
    }

    func zip() -> Data { Self.zip(files().enumerated().map { ($0.element.name, Array($0.element.text.utf8), $0.offset % 2 == 0) }) }

    // MARK: zip as java.util.zip writes it

    /// `deflated`: method 8 with a data descriptor (as ZipOutputStream's default); else stored.
    static func zip(_ entries: [(name: String, bytes: [UInt8], deflated: Bool)]) -> Data {
        var out: [UInt8] = []
        var central: [UInt8] = []
        func u16(_ v: Int, _ into: inout [UInt8]) { into += [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF)] }
        func u32(_ v: Int, _ into: inout [UInt8]) { u16(v & 0xFFFF, &into); u16(v >> 16 & 0xFFFF, &into) }
        for entry in entries {
            let name = Array(entry.name.utf8)
            let crc = entry.bytes.withUnsafeBufferPointer { Int(crc32(0, $0.baseAddress, uInt($0.count))) }
            let data = entry.deflated ? deflate(entry.bytes) : entry.bytes
            let offset = out.count
            let flags = entry.deflated ? 0x0808 : 0x0800 // bit 3: data descriptor; bit 11: UTF-8 names
            u32(0x0403_4B50, &out); u16(20, &out); u16(flags, &out); u16(entry.deflated ? 8 : 0, &out)
            u16(0, &out); u16(0x5B77, &out) // DOS time and date
            u32(entry.deflated ? 0 : crc, &out); u32(entry.deflated ? 0 : data.count, &out); u32(entry.deflated ? 0 : entry.bytes.count, &out)
            u16(name.count, &out); u16(0, &out); out += name
            out += data
            if entry.deflated { u32(0x0807_4B50, &out); u32(crc, &out); u32(data.count, &out); u32(entry.bytes.count, &out) }
            u32(0x0201_4B50, &central); u16(20, &central); u16(20, &central); u16(flags, &central)
            u16(entry.deflated ? 8 : 0, &central); u16(0, &central); u16(0x5B77, &central)
            u32(crc, &central); u32(data.count, &central); u32(entry.bytes.count, &central)
            u16(name.count, &central); u16(0, &central); u16(0, &central); u16(0, &central); u16(0, &central)
            u32(0, &central); u32(offset, &central); central += name
        }
        let centralOffset = out.count
        out += central
        u32(0x0605_4B50, &out); u16(0, &out); u16(0, &out); u16(entries.count, &out); u16(entries.count, &out)
        u32(central.count, &out); u32(centralOffset, &out); u16(0, &out)
        return Data(out)
    }

    static func deflate(_ bytes: [UInt8]) -> [UInt8] {
        var stream = z_stream()
        precondition(deflateInit2_(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY,
                                   ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK)
        defer { deflateEnd(&stream) }
        var input = bytes
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, uLong(bytes.count))) + 16)
        let produced: Int = input.withUnsafeMutableBufferPointer { inBuffer in
            output.withUnsafeMutableBufferPointer { outBuffer in
                stream.next_in = inBuffer.baseAddress
                stream.avail_in = uInt(inBuffer.count)
                stream.next_out = outBuffer.baseAddress
                stream.avail_out = uInt(outBuffer.count)
                precondition(CZlib.deflate(&stream, Z_FINISH) == Z_STREAM_END)
                return Int(stream.total_out)
            }
        }
        return Array(output.prefix(produced))
    }
}
