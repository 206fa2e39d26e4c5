import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import HabitReports
import Testing

/// Parses `svg` with Foundation's XML parser: the document's text nodes in order, or the
/// parser's error.
func xmlText(_ svg: String) throws -> [String] {
    final class Collector: NSObject, XMLParserDelegate {
        var texts: [String] = []
        var current = ""
        func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) { current = "" }
        func parser(_ parser: XMLParser, foundCharacters string: String) { current += string }
        func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName: String?) {
            if !current.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty { texts.append(current) }
            current = ""
        }
    }
    let parser = XMLParser(data: Data(svg.utf8))
    let collector = Collector()
    parser.delegate = collector
    guard parser.parse() else { throw parser.parserError ?? CocoaError(.coderReadCorrupt) }
    return collector.texts
}

@Suite("SVG writer: escaping and numbers")
struct SVGWriterTests {
    @Test("text escapes & < >; attributes also quotes and whitespace; forbidden controls become U+FFFD")
    func escaping() {
        #expect(SVGWriter.escapeText(#"a<b> & "c" 'd'"#) == #"a&lt;b&gt; &amp; "c" 'd'"#)
        #expect(SVGWriter.escapeAttribute(#"a<b> & "c" 'd'"#) == "a&lt;b&gt; &amp; &quot;c&quot; &apos;d&apos;")
        #expect(SVGWriter.escapeAttribute("x\ty\nz") == "x&#9;y&#10;z")
        #expect(SVGWriter.escapeText("bell\u{07}nul\u{00}") == "bell\u{FFFD}nul\u{FFFD}")
        #expect(SVGWriter.escapeText("Läufe 🏃 ✓") == "Läufe 🏃 ✓")
    }

    @Test("a hostile title and label leave a well-formed document whose text reads back unchanged")
    func hostileTextRoundTrips() throws {
        let hostile = #"</text><script>alert("x")</script> & ]]> <!-- 'q'"#
        var svg = SVGWriter(width: 100, height: 50, title: hostile)
        svg.text(hostile, x: 1, y: 10)
        svg.add("rect", ["x": 0, "y": 0, "width": 1, "height": 1, "fill": .string(hostile)])
        let document = svg.document()
        #expect(!document.contains("<script>"))
        let texts = try xmlText(document)
        #expect(texts == [hostile, hostile])
    }

    @Test("numbers: at most two decimals, no exponent, dot separator")
    func numbers() {
        #expect(SVGWriter.number(3) == "3")
        #expect(SVGWriter.number(2.5) == "2.5")
        #expect(SVGWriter.number(1.0 / 3) == "0.33")
        #expect(SVGWriter.number(0.05) == "0.05")
        #expect(SVGWriter.number(-12.345) == "-12.35" || SVGWriter.number(-12.345) == "-12.34")
        #expect(SVGWriter.number(1e-9) == "0")
        #expect(SVGWriter.number(123_456_789) == "123456789")
        #expect(SVGWriter.number(.nan) == "0")
    }
}

@Suite("report dates")
struct ReportDateTests {
    @Test("day numbers, weekdays and week starts agree with known dates")
    func knownDates() throws {
        let epoch = try #require(ReportDate(iso8601: "1970-01-01"))
        #expect(epoch.dayNumber == 0 && epoch.isoWeekday == 4)
        let leap = try #require(ReportDate(iso8601: "2024-02-29"))
        #expect(leap.description == "2024-02-29" && leap.isoWeekday == 4)
        #expect(ReportDate(iso8601: "2026-02-29") == nil)
        let sunday = try #require(ReportDate(iso8601: "2026-03-01"))
        #expect(sunday.isoWeekday == 7)
        #expect(sunday.weekStart(.monday).description == "2026-02-23")
        #expect(sunday.weekStart(.sunday) == sunday)
        for n in stride(from: -700_000, to: 800_000, by: 997) {
            let date = ReportDate(dayNumber: n)
            #expect(ReportDate(iso8601: date.description) == date, "\(n)")
        }
    }
}
