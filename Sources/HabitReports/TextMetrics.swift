/// How wide a label will be, without a font engine: the pictures lay out their headers (wrap
/// a long subtitle, make room for it) before any renderer sees them.
///
/// The estimate is an upper bound for the fonts SVGWriter asks for. Its widths are DejaVu Sans'
/// advance widths (Book and Bold, from the hmtx table of DejaVuSans.ttf and DejaVuSans-Bold.ttf
/// 2.37, in thousandths of an em rounded up), the first and widest family of
/// `SVGWriter.fontFamily`: Liberation Sans, Arial and Helvetica are narrower glyph for glyph, and
/// kerning only takes away. Characters outside the table count 1 em (1.3 em from U+1F000 on:
/// emoji come from a fallback font); combining marks and invisible format characters count 0.
/// SVGWriterTests checks it against what rsvg-convert draws.
public enum TextMetrics {
    /// Advance widths of U+0020 … U+007E in thousandths of an em.
    static let book: [UInt16] = [
        318, 401, 460, 838, 637, 951, 780, 275, 391, 391, 500, 838, 318, 361, 318, 337, 637, 637, 637, 637, 637, 637, 637, 637,
        637, 637, 337, 337, 838, 838, 838, 531, 1000, 685, 687, 699, 771, 632, 576, 775, 752, 295, 295, 656, 558, 863, 749, 788,
        604, 788, 695, 635, 611, 732, 685, 989, 686, 611, 686, 391, 337, 391, 838, 500, 500, 613, 635, 550, 635, 616, 353, 635,
        634, 278, 278, 580, 278, 975, 634, 612, 635, 635, 412, 521, 393, 634, 592, 818, 592, 592, 525, 637, 337, 637, 838,
    ]
    static let bold: [UInt16] = [
        349, 457, 521, 838, 696, 1002, 873, 307, 458, 458, 523, 838, 380, 416, 380, 366, 696, 696, 696, 696, 696, 696, 696, 696,
        696, 696, 400, 400, 838, 838, 838, 581, 1000, 774, 763, 734, 831, 684, 684, 821, 837, 373, 373, 775, 638, 996, 837, 851,
        733, 851, 771, 721, 683, 813, 774, 1104, 771, 725, 726, 458, 366, 458, 838, 500, 500, 675, 716, 593, 716, 679, 436, 716,
        712, 343, 343, 666, 343, 1042, 712, 688, 716, 716, 494, 596, 479, 712, 652, 924, 646, 652, 583, 712, 366, 712, 838,
    ]
    /// The punctuation the pictures write themselves: · – — … × (Book, Bold).
    static let punctuation: [Unicode.Scalar: (book: UInt16, bold: UInt16)] = [
        "\u{00B7}": (318, 380), "\u{2013}": (500, 500), "\u{2014}": (1000, 1000), "\u{2026}": (1000, 1000), "\u{00D7}": (838, 838),
    ]

    /// The estimated width of `text` in pixels at font size `size`.
    public static func width(_ text: String, size: Double, bold: Bool = false) -> Double {
        var thousandths = 0
        for scalar in text.unicodeScalars {
            let value = scalar.value
            if value >= 0x20 && value <= 0x7E {
                thousandths += Int((bold ? Self.bold : book)[Int(value - 0x20)])
            } else if let known = punctuation[scalar] {
                thousandths += Int(bold ? known.bold : known.book)
            } else if isInvisible(value) {
                continue
            } else {
                thousandths += value >= 0x1F000 ? 1300 : 1000
            }
        }
        return Double(thousandths) * size / 1000
    }

    static func isInvisible(_ value: UInt32) -> Bool {
        (0x0300...0x036F).contains(value) || (0x200B...0x200F).contains(value) || (0x202A...0x202E).contains(value)
            || (0x2060...0x2069).contains(value) || (0xFE00...0xFE0F).contains(value) || value < 0x20
    }

    /// `text` broken into lines no wider than `width`: first between the parts separated by
    /// " · " (a part never split while it fits on a line of its own), then between words, and a
    /// word wider than a line between characters. Never empty; an empty text is one empty line.
    public static func wrap(_ text: String, width: Double, size: Double, bold: Bool = false) -> [String] {
        let separator = " \u{00B7} "
        func fits(_ line: String) -> Bool { self.width(line, size: size, bold: bold) <= width }
        var lines: [String] = []
        var current = ""
        for part in text.components(separatedBy: separator) {
            let joined = current.isEmpty ? part : current + separator + part
            if fits(joined) {
                current = joined
                continue
            }
            if !current.isEmpty { lines.append(current) }
            current = ""
            if fits(part) {
                current = part
                continue
            }
            // A part wider than a line: by words, then a too-long word by characters.
            for word in part.split(separator: " ", omittingEmptySubsequences: false).map(String.init) {
                let candidate = current.isEmpty ? word : current + " " + word
                if fits(candidate) {
                    current = candidate
                    continue
                }
                if !current.isEmpty { lines.append(current) }
                current = ""
                for character in word {
                    if !current.isEmpty && !fits(current + String(character)) {
                        lines.append(current)
                        current = ""
                    }
                    current.append(character)
                }
            }
        }
        lines.append(current)
        return lines
    }
}
