import Foundation

/// A small SVG writer: elements are appended as text, every attribute value and every text
/// node escaped here and nowhere else, numbers written with a dot and at most two decimals
/// whatever the process locale. No DOM, no dependency: the pictures are a few hundred
/// rectangles and labels, written once.
public struct SVGWriter {
    public let width: Double
    public let height: Double
    private var body: [String] = []

    /// `title` becomes the document's `<title>` (what a browser tab or a screen reader shows).
    public init(width: Double, height: Double, title: String, background: String = "#ffffff") {
        self.width = width
        self.height = height
        body.append(Self.element("title", text: title))
        rect(x: 0, y: 0, width: width, height: height, fill: background)
    }

    /// Appends `<name attributes…/>` or `<name attributes…>text</name>` (and `<title>` children
    /// for a tooltip, when `tooltip` is given).
    public mutating func add(_ name: String, _ attributes: KeyValuePairs<String, SVGValue>, text: String? = nil, tooltip: String? = nil) {
        body.append(Self.element(name, attributes, text: text, tooltip: tooltip))
    }

    /// `dash`: the stroke's dash and gap lengths (`stroke-dasharray`), nil for a solid stroke.
    public mutating func rect(x: Double, y: Double, width: Double, height: Double, fill: String,
                              stroke: String? = nil, strokeWidth: Double = 1, dash: [Double]? = nil,
                              opacity: Double? = nil, tooltip: String? = nil) {
        body.append(Self.element("rect", [
            "x": .number(x), "y": .number(y), "width": .number(width), "height": .number(height),
            "fill": .string(fill), "stroke": stroke.map(SVGValue.string) ?? .omitted,
            "stroke-width": stroke == nil ? .omitted : .number(strokeWidth),
            "stroke-dasharray": Self.dashes(stroke == nil ? nil : dash),
            "fill-opacity": opacity.map(SVGValue.number) ?? .omitted,
        ], tooltip: tooltip))
    }

    public mutating func line(x1: Double, y1: Double, x2: Double, y2: Double, stroke: String, strokeWidth: Double = 1,
                              dash: [Double]? = nil) {
        body.append(Self.element("line", [
            "x1": .number(x1), "y1": .number(y1), "x2": .number(x2), "y2": .number(y2),
            "stroke": .string(stroke), "stroke-width": .number(strokeWidth), "stroke-dasharray": Self.dashes(dash),
        ]))
    }

    /// An open line through `points` (round joins and caps, no fill).
    public mutating func polyline(_ points: [(x: Double, y: Double)], stroke: String, strokeWidth: Double, dash: [Double]? = nil) {
        body.append(Self.element("polyline", [
            "points": .string(Self.points(points)), "fill": "none", "stroke": .string(stroke),
            "stroke-width": .number(strokeWidth), "stroke-linejoin": "round",
            "stroke-linecap": dash == nil ? "round" : "butt", "stroke-dasharray": Self.dashes(dash),
        ]))
    }

    /// A closed filled shape through `points`.
    public mutating func polygon(_ points: [(x: Double, y: Double)], fill: String, opacity: Double? = nil) {
        body.append(Self.element("polygon", [
            "points": .string(Self.points(points)), "fill": .string(fill),
            "fill-opacity": opacity.map(SVGValue.number) ?? .omitted,
        ]))
    }

    public mutating func circle(cx: Double, cy: Double, r: Double, fill: String, stroke: String? = nil, strokeWidth: Double = 1,
                                tooltip: String? = nil) {
        body.append(Self.element("circle", [
            "cx": .number(cx), "cy": .number(cy), "r": .number(r), "fill": .string(fill),
            "stroke": stroke.map(SVGValue.string) ?? .omitted, "stroke-width": stroke == nil ? .omitted : .number(strokeWidth),
        ], tooltip: tooltip))
    }

    public enum Anchor: String { case start, middle, end }

    /// Text at (x, y) (y is the baseline), sans-serif; `rotation` in degrees about (x, y).
    public mutating func text(_ text: String, x: Double, y: Double, size: Double = 11, anchor: Anchor = .start,
                              fill: String = "#24292f", bold: Bool = false, rotation: Double? = nil) {
        body.append(Self.element("text", [
            "x": .number(x), "y": .number(y), "font-family": .string(Self.fontFamily), "font-size": .number(size),
            "text-anchor": anchor == .start ? .omitted : .string(anchor.rawValue), "fill": .string(fill),
            "font-weight": bold ? "bold" : .omitted,
            "transform": rotation.map { .string("rotate(\(Self.number($0)) \(Self.number(x)) \(Self.number(y)))") } ?? .omitted,
        ], text: text))
    }

    /// The finished document.
    public func document() -> String {
        var out = #"<?xml version="1.0" encoding="UTF-8"?>"# + "\n"
        out += #"<svg xmlns="http://www.w3.org/2000/svg" width="\#(Self.number(width))" height="\#(Self.number(height))" viewBox="0 0 \#(Self.number(width)) \#(Self.number(height))">"# + "\n"
        for element in body { out += element + "\n" }
        out += "</svg>\n"
        return out
    }

    public static let fontFamily = "DejaVu Sans, Liberation Sans, Arial, Helvetica, sans-serif"

    // MARK: Escaping and numbers

    /// Text content: `&`, `<` and `>` escaped; characters XML 1.0 forbids (C0 controls other
    /// than tab, newline and carriage return, U+FFFE, U+FFFF, lone surrogates cannot occur in
    /// a Swift String) become U+FFFD, so any user-given name yields a well-formed document.
    public static func escapeText(_ string: String) -> String {
        escape(string, quotes: false)
    }

    /// An attribute value (always written in double quotes): as text, plus `"` and `'`, and
    /// tab, newline and carriage return as character references (a parser would otherwise
    /// normalise them to spaces).
    public static func escapeAttribute(_ string: String) -> String {
        escape(string, quotes: true)
    }

    private static func escape(_ string: String, quotes: Bool) -> String {
        var out = ""
        out.reserveCapacity(string.utf8.count)
        for scalar in string.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"" where quotes: out += "&quot;"
            case "'" where quotes: out += "&apos;"
            case "\t" where quotes: out += "&#9;"
            case "\n" where quotes: out += "&#10;"
            case "\r": out += "&#13;"
            case "\t", "\n": out.unicodeScalars.append(scalar)
            default:
                if scalar.value < 0x20 || scalar.value == 0xFFFE || scalar.value == 0xFFFF {
                    out += "\u{FFFD}"
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out
    }

    /// At most two decimals, no exponent, no locale: 3 → "3", 2.5 → "2.5", 1/3 → "0.33".
    public static func number(_ value: Double) -> String {
        guard value.isFinite else { return "0" }
        let hundredths = (value * 100).rounded()
        if hundredths == 0 { return "0" }
        let negative = hundredths < 0
        let magnitude = Int64(abs(hundredths))
        var text = String(magnitude / 100)
        let fraction = magnitude % 100
        if fraction != 0 {
            text += fraction % 10 == 0 ? ".\(fraction / 10)" : (fraction < 10 ? ".0\(fraction)" : ".\(fraction)")
        }
        return negative ? "-" + text : text
    }

    private static func dashes(_ dash: [Double]?) -> SVGValue {
        dash.map { .string($0.map(number).joined(separator: " ")) } ?? .omitted
    }

    private static func points(_ points: [(x: Double, y: Double)]) -> String {
        points.map { "\(number($0.x)),\(number($0.y))" }.joined(separator: " ")
    }

    static func element(_ name: String, _ attributes: KeyValuePairs<String, SVGValue> = [:], text: String? = nil, tooltip: String? = nil) -> String {
        var out = "<" + name
        for (key, value) in attributes {
            switch value {
            case .omitted: continue
            case .string(let string): out += " \(key)=\"\(escapeAttribute(string))\""
            case .number(let number): out += " \(key)=\"\(Self.number(number))\""
            }
        }
        let tooltipElement = tooltip.map { "<title>\(escapeText($0))</title>" } ?? ""
        if text == nil && tooltip == nil { return out + "/>" }
        return out + ">" + tooltipElement + escapeText(text ?? "") + "</\(name)>"
    }
}

/// An attribute value; `.omitted` leaves the attribute out.
public enum SVGValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral, Sendable {
    case string(String)
    case number(Double)
    case omitted

    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .number(Double(value)) }
    public init(floatLiteral value: Double) { self = .number(value) }
}
