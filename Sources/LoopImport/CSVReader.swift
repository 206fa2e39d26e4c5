/// An RFC 4180 reader: fields separated by commas, records by CRLF or LF (a lone CR too);
/// a field in double quotes may hold commas, line breaks and doubled quotes (`""` → `"`).
/// Input is UTF-8, with or without a byte order mark. Loop writes its CSV files with
/// opencsv's CSVWriter (quotes only where needed, `"` escaped by doubling, LF line ends).
///
/// Strict where RFC 4180 is: a quote inside an unquoted field, text after a closing quote
/// and an unterminated quoted field are errors that name the line and column (1-based,
/// columns counted in Unicode scalars), not guesses.
public struct CSVRecord: Equatable, Sendable {
    public var fields: [String]
    /// The line on which the record starts (a quoted field may span lines).
    public var line: Int
    /// The column at which each field starts.
    public var columns: [Int]
}

public enum CSVReader {
    /// The most bytes one file may have: a Loop export of 50 habits × 20 years is ~20 MB in all.
    public static let maximumBytes = 64 << 20

    public static func records(_ bytes: [UInt8], file: String) throws(LoopImportError) -> [CSVRecord] {
        guard bytes.count <= maximumBytes else {
            throw LoopImportError(.csvTooLarge, "\(bytes.count) bytes; at most \(maximumBytes)", file: file)
        }
        var body = bytes[...]
        if body.starts(with: [0xEF, 0xBB, 0xBF]) { body = body.dropFirst(3) }
        guard let text = String(validating: body, as: UTF8.self) else {
            let bad = firstInvalidUTF8Offset(body)
            let line = body[..<(bad ?? body.endIndex)].reduce(1) { $1 == 0x0A ? $0 + 1 : $0 }
            throw LoopImportError(.invalidUTF8, "not valid UTF-8", file: file, line: line)
        }
        return try records(text, file: file)
    }

    /// Where a lead or continuation byte is out of place (overlong forms and surrogates are
    /// caught by `String(validating:)`; this only locates the common errors for the message).
    static func firstInvalidUTF8Offset(_ bytes: ArraySlice<UInt8>) -> Int? {
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let lead = bytes[index]
            let length = lead < 0x80 ? 1 : lead >> 5 == 0b110 ? 2 : lead >> 4 == 0b1110 ? 3 : lead >> 3 == 0b11110 ? 4 : 0
            guard length > 0, index + length <= bytes.endIndex else { return index }
            for next in (index + 1)..<(index + length) where bytes[next] >> 6 != 0b10 { return index }
            index += length
        }
        return nil
    }

    public static func records(_ text: String, file: String) throws(LoopImportError) -> [CSVRecord] {
        var result: [CSVRecord] = []
        var scalars = Array(text.unicodeScalars)[...]
        if scalars.first == "\u{FEFF}" { scalars = scalars.dropFirst() }
        var line = 1, column = 1
        var index = scalars.startIndex
        let end = scalars.endIndex

        func advanceLine() { line += 1; column = 1 }

        while index < end {
            var record = CSVRecord(fields: [], line: line, columns: [])
            recordLoop: while true {
                record.columns.append(column)
                var field = String.UnicodeScalarView()
                if index < end, scalars[index] == "\"" {
                    let quoteLine = line, quoteColumn = column
                    index += 1; column += 1
                    while true {
                        guard index < end else {
                            throw LoopImportError(.csvUnterminatedQuote, "a quoted field is not closed", file: file, line: quoteLine, column: quoteColumn)
                        }
                        let scalar = scalars[index]
                        if scalar == "\"" {
                            if index + 1 < end, scalars[index + 1] == "\"" {
                                field.append("\""); index += 2; column += 2
                                continue
                            }
                            index += 1; column += 1
                            break
                        }
                        field.append(scalar)
                        index += 1
                        if scalar == "\n" || (scalar == "\r" && !(index < end && scalars[index] == "\n")) { advanceLine() } else { column += 1 }
                    }
                    if index < end, !(scalars[index] == "," || scalars[index] == "\n" || scalars[index] == "\r") {
                        throw LoopImportError(.csvBadQuote, "text after a closing quote", file: file, line: line, column: column)
                    }
                } else {
                    while index < end {
                        let scalar = scalars[index]
                        if scalar == "," || scalar == "\n" || scalar == "\r" { break }
                        if scalar == "\"" {
                            throw LoopImportError(.csvBadQuote, "a quote inside an unquoted field", file: file, line: line, column: column)
                        }
                        field.append(scalar)
                        index += 1; column += 1
                    }
                }
                record.fields.append(String(field))
                guard index < end else { break recordLoop }
                switch scalars[index] {
                case ",":
                    index += 1; column += 1
                case "\r":
                    index += 1
                    if index < end, scalars[index] == "\n" { index += 1 }
                    advanceLine()
                    break recordLoop
                default: // "\n"
                    index += 1
                    advanceLine()
                    break recordLoop
                }
            }
            result.append(record)
        }
        return result
    }
}
