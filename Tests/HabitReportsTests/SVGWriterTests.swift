import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import HabitReports
import PNGTestSupport
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

/// A `<text>` element of a picture with its estimated horizontal extent (TextMetrics).
struct SVGText {
    var text: String
    var x: Double, y: Double, size: Double
    var bold: Bool
    var rotation: String?
    var left: Double, right: Double
}

/// The document's `<text>` elements, parsed by Foundation's XML parser.
func svgTexts(_ svg: String) throws -> [SVGText] {
    final class Collector: NSObject, XMLParserDelegate {
        var texts: [SVGText] = []
        var attributes: [String: String]?
        var current = ""
        func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) {
            if elementName == "text" { (self.attributes, current) = (attributes, "") }
        }
        func parser(_ parser: XMLParser, foundCharacters string: String) { if attributes != nil { current += string } }
        func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName: String?) {
            guard elementName == "text", let attributes else { return }
            let x = Double(attributes["x"] ?? "") ?? 0, size = Double(attributes["font-size"] ?? "") ?? 16
            let bold = attributes["font-weight"] == "bold"
            let width = TextMetrics.width(current, size: size, bold: bold)
            let left = attributes["text-anchor"] == "end" ? x - width : (attributes["text-anchor"] == "middle" ? x - width / 2 : x)
            texts.append(SVGText(text: current, x: x, y: Double(attributes["y"] ?? "") ?? 0, size: size, bold: bold,
                                 rotation: attributes["transform"], left: left, right: left + width))
            self.attributes = nil
        }
    }
    let parser = XMLParser(data: Data(svg.utf8))
    let collector = Collector()
    parser.delegate = collector
    guard parser.parse() else { throw parser.parserError ?? CocoaError(.coderReadCorrupt) }
    return collector.texts
}

@Suite("text metrics: the width estimate against rsvg-convert, wrapping")
struct TextMetricsTests {
    /// The rightmost column with ink (a pixel darker than 160 in greyscale), or nil.
    static func inkRight(_ image: PNGImage) -> Int? {
        (0..<image.width).reversed().first { x in (0..<image.height).contains { image.luminance(x: x, y: $0) < 160 } }
    }

    @Test("the estimate is never narrower than what rsvg-convert draws, and not much wider")
    func estimateBoundsRendering() throws {
        let samples = [
            "user 7d9f0e2a-3c41-4b8e-9a57-1f2e3d4c5b6a", "2026-10-19 to 2026-11-29 · today 2026-11-25 in America/Los_Angeles",
            "Habit calendar: Morning Run, Read 20 pages and Drink 2 L of Water", "WWW MMM mmm www %%% @@@", "iiii llll ....  ''''",
            "Läufe, Grüße — naïve café…", "weeks start on Monday",
        ]
        for text in samples {
            for (size, bold) in [(10.0, false), (11.0, false), (15.0, true)] {
                let estimate = TextMetrics.width(text, size: size, bold: bold)
                var svg = SVGWriter(width: estimate + 60, height: size * 2, title: "t")
                svg.text(text, x: 10, y: size * 1.4, size: size, fill: "#000000", bold: bold)
                let image = try PNGImage.rendering(svg: svg.document(), name: "metrics")
                let drawn = Double(try #require(Self.inkRight(image))) + 1 - 10
                #expect(drawn <= estimate + 1, "\"\(text)\" at \(size)\(bold ? " bold" : ""): drawn \(drawn) px, estimated \(estimate)")
                #expect(estimate <= drawn * 1.15 + 4, "\"\(text)\" at \(size)\(bold ? " bold" : ""): drawn \(drawn) px, estimated \(estimate)")
            }
        }
    }

    @Test("wrap: between the parts of a · list first, then words, then characters; every line fits")
    func wrapping() {
        let text = "2026-10-19 to 2026-11-29 · today 2026-11-25 in America/Los_Angeles · weeks start on Monday"
        let lines = TextMetrics.wrap(text, width: 300, size: 11)
        #expect(lines == ["2026-10-19 to 2026-11-29", "today 2026-11-25 in America/Los_Angeles", "weeks start on Monday"], "\(lines)")
        #expect(TextMetrics.wrap(text, width: 2000, size: 11) == [text])
        let words = TextMetrics.wrap("one two three four five six", width: TextMetrics.width("one two three", size: 10), size: 10)
        #expect(words == ["one two three", "four five six"], "\(words)")
        let long = String(repeating: "x", count: 200)
        let broken = TextMetrics.wrap(long, width: 100, size: 10)
        #expect(broken.count > 1 && broken.joined() == long && broken.allSatisfy { TextMetrics.width($0, size: 10) <= 100 }, "\(broken)")
        #expect(TextMetrics.wrap("", width: 100, size: 10) == [""])
        // Invisible format characters take no room; unknown characters a whole em.
        #expect(TextMetrics.width("a\u{202E}b\u{200B}", size: 10) == TextMetrics.width("ab", size: 10))
        #expect(TextMetrics.width("日本", size: 10) == 20)
    }
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
