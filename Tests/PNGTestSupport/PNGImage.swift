import CZlib
import Foundation

/// Just enough PNG to read back what rsvg-convert writes: 8-bit RGB or RGBA, not interlaced;
/// the IDAT stream inflated by zlib, the five row filters undone. Anything else is refused
/// with a reason (a test then fails saying so, rather than reading wrong pixels).
public struct PNGImage {
    public let width: Int
    public let height: Int
    /// RGBA, row by row.
    let pixels: [UInt8]

    public struct Colour: Equatable, CustomStringConvertible {
        public var red: UInt8, green: UInt8, blue: UInt8, alpha: UInt8

        public init(red: UInt8, green: UInt8, blue: UInt8, alpha: UInt8 = 255) {
            (self.red, self.green, self.blue, self.alpha) = (red, green, blue, alpha)
        }

        /// "#rrggbb".
        public init(hex: String) {
            let value = UInt32(hex.dropFirst(), radix: 16) ?? 0
            self.init(red: UInt8(value >> 16 & 0xff), green: UInt8(value >> 8 & 0xff), blue: UInt8(value & 0xff))
        }

        public var description: String {
            "#" + [red, green, blue].map { String($0, radix: 16).leftPadded(2) }.joined() + (alpha == 255 ? "" : "/\(alpha)")
        }

        /// The largest difference of one channel.
        public func distance(to other: Colour) -> Int {
            [Int(red) - Int(other.red), Int(green) - Int(other.green), Int(blue) - Int(other.blue), Int(alpha) - Int(other.alpha)]
                .map(abs).max() ?? 0
        }
    }

    public struct DecodingError: Error, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    public func pixel(x: Int, y: Int) -> Colour {
        precondition(x >= 0 && x < width && y >= 0 && y < height, "(\(x), \(y)) outside \(width)×\(height)")
        let at = (y * width + x) * 4
        return Colour(red: pixels[at], green: pixels[at + 1], blue: pixels[at + 2], alpha: pixels[at + 3])
    }

    public func pixel(x: Double, y: Double) -> Colour { pixel(x: Int(x), y: Int(y)) }

    public init(data: Data) throws {
        let bytes = [UInt8](data)
        guard bytes.count > 8, bytes[0..<8].elementsEqual([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) else {
            throw DecodingError("not a PNG")
        }
        func uint32(_ at: Int) -> Int { Int(bytes[at]) << 24 | Int(bytes[at + 1]) << 16 | Int(bytes[at + 2]) << 8 | Int(bytes[at + 3]) }
        var offset = 8
        var header: (width: Int, height: Int, depth: UInt8, colourType: UInt8, interlace: UInt8)?
        var compressed: [UInt8] = []
        while offset + 8 <= bytes.count {
            let length = uint32(offset)
            let type = String(decoding: bytes[(offset + 4)..<(offset + 8)], as: UTF8.self)
            let start = offset + 8
            guard start + length + 4 <= bytes.count else { throw DecodingError("truncated \(type) chunk") }
            switch type {
            case "IHDR": header = (uint32(start), uint32(start + 4), bytes[start + 8], bytes[start + 9], bytes[start + 12])
            case "IDAT": compressed += bytes[start..<(start + length)]
            default: break
            }
            offset = start + length + 4
            if type == "IEND" { break }
        }
        guard let header else { throw DecodingError("no IHDR") }
        guard header.depth == 8, header.colourType == 6 || header.colourType == 2, header.interlace == 0 else {
            throw DecodingError("unsupported PNG: depth \(header.depth), colour type \(header.colourType), interlace \(header.interlace)")
        }
        let channels = header.colourType == 6 ? 4 : 3
        let stride = header.width * channels
        var raw = [UInt8](repeating: 0, count: header.height * (stride + 1))
        var rawLength = uLongf(raw.count)
        let status = raw.withUnsafeMutableBufferPointer { out in
            compressed.withUnsafeBufferPointer { input in
                uncompress(out.baseAddress, &rawLength, input.baseAddress, uLong(input.count))
            }
        }
        guard status == Z_OK, Int(rawLength) == raw.count else { throw DecodingError("zlib uncompress: status \(status), \(rawLength) of \(raw.count) bytes") }

        // Undo the filters, row by row, into `image` (channels per pixel).
        var image = [UInt8](repeating: 0, count: header.height * stride)
        for row in 0..<header.height {
            let filter = raw[row * (stride + 1)]
            let source = row * (stride + 1) + 1
            let target = row * stride
            for i in 0..<stride {
                let x = raw[source + i]
                let a = i >= channels ? Int(image[target + i - channels]) : 0
                let b = row > 0 ? Int(image[target - stride + i]) : 0
                let c = row > 0 && i >= channels ? Int(image[target - stride + i - channels]) : 0
                let predictor: Int
                switch filter {
                case 0: predictor = 0
                case 1: predictor = a
                case 2: predictor = b
                case 3: predictor = (a + b) / 2
                case 4:
                    let p = a + b - c
                    let (pa, pb, pc) = (abs(p - a), abs(p - b), abs(p - c))
                    predictor = pa <= pb && pa <= pc ? a : (pb <= pc ? b : c)
                default: throw DecodingError("row \(row): filter \(filter)")
                }
                image[target + i] = x &+ UInt8(truncatingIfNeeded: predictor)
            }
        }
        if channels == 4 {
            pixels = image
        } else {
            var rgba = [UInt8](); rgba.reserveCapacity(header.width * header.height * 4)
            for index in Swift.stride(from: 0, to: image.count, by: 3) { rgba += [image[index], image[index + 1], image[index + 2], 255] }
            pixels = rgba
        }
        width = header.width
        height = header.height
    }

    /// Renders `svg` with librsvg's `rsvg-convert` (one user unit = one pixel) and decodes the PNG.
    /// With HABIT_KEEP_PICTURES=DIR, the SVG and PNG are also copied to DIR/`name`.svg|png (to look at them).
    public static func rendering(svg: String, name: String = "picture") throws -> PNGImage {
        try renderingPNG(svg: svg, name: name).image
    }

    /// As `rendering(svg:name:)`, also giving the PNG file's bytes (what a golden picture keeps).
    public static func renderingPNG(svg: String, name: String = "picture") throws -> (image: PNGImage, png: Data) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("habit-svg-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let input = directory.appendingPathComponent("in.svg"), output = directory.appendingPathComponent("out.png")
        try Data(svg.utf8).write(to: input)
        let image = try rendering(svgFile: input.path, pngFile: output.path)
        if let keep = ProcessInfo.processInfo.environment["HABIT_KEEP_PICTURES"], !keep.isEmpty {
            for (file, suffix) in [(input, "svg"), (output, "png")] {
                let target = URL(fileURLWithPath: keep).appendingPathComponent("\(name).\(suffix)")
                try? FileManager.default.removeItem(at: target)
                try FileManager.default.copyItem(at: file, to: target)
            }
        }
        return (image, try Data(contentsOf: output))
    }

    /// Renders the SVG file at `svgFile` into `pngFile` and decodes it.
    public static func rendering(svgFile: String, pngFile: String) throws -> PNGImage {
        guard let converter = ["/usr/bin/rsvg-convert", "/usr/local/bin/rsvg-convert"].first(where: FileManager.default.isExecutableFile) else {
            throw DecodingError("rsvg-convert not found: scripts/pg-tmp ensure-packages --tests installs librsvg2-bin")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: converter)
        process.arguments = ["--format", "png", "--output", pngFile, svgFile]
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        let message = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw DecodingError("rsvg-convert exited \(process.terminationStatus): \(String(decoding: message, as: UTF8.self))")
        }
        return try PNGImage(data: try Data(contentsOf: URL(fileURLWithPath: pngFile)))
    }
}

extension PNGImage {
    /// The pixel's luminance in greyscale, 0 (black) … 255 (white): Rec. 709 weights over the
    /// sRGB values, composited over white when not opaque.
    public func luminance(x: Int, y: Int) -> Double {
        let colour = pixel(x: x, y: y)
        let alpha = Double(colour.alpha) / 255
        func channel(_ value: UInt8) -> Double { Double(value) * alpha + 255 * (1 - alpha) }
        return 0.2126 * channel(colour.red) + 0.7152 * channel(colour.green) + 0.0722 * channel(colour.blue)
    }

    /// The whole picture in greyscale, row by row (what someone without colour vision sees, roughly).
    public var greyscale: [[Double]] {
        (0..<height).map { y in (0..<width).map { x in luminance(x: x, y: y) } }
    }
}

/// A picture kept in the repository as the PNG rsvg-convert made of it (Tests/Fixtures/pictures):
/// a test renders the SVG again and compares pixel by pixel, so that any change to how a
/// picture looks shows in review as a changed PNG. HABIT_UPDATE_GOLDEN=1 rewrites the golden
/// files instead of comparing (then look at them, e.g. `git diff --stat`, and commit them).
public struct GoldenPicture {
    /// A pixel differs when one of its channels differs by more than this (antialiasing and
    /// hinting of another librsvg or FreeType move edges by a few levels, not by this much).
    public static let channelTolerance = 24
    /// How many pixels may differ by more than that: none. One letter of an 11 px subtitle
    /// changed ("Angeles" → "Angelas") differs in 21 pixels, so any allowance large enough to
    /// matter would let a changed label through (PictureGoldenTests checks that it is caught).
    /// The goldens need the renderer and font CI installs (scripts/pg-tmp ensure-packages
    /// --tests: librsvg2-bin and fonts-dejavu-core, DejaVu Sans being SVGWriter's first family).
    public static let allowedDifferingPixels = 0

    public let name: String
    public let path: String

    /// The golden file `name`.png in `directory`.
    public init(name: String, directory: String) {
        self.name = name
        self.path = URL(fileURLWithPath: directory).appendingPathComponent("\(name).png").path
    }

    public static var updating: Bool { ProcessInfo.processInfo.environment["HABIT_UPDATE_GOLDEN"] == "1" }

    /// How the rendering differs from the golden file.
    public struct Comparison: CustomStringConvertible {
        public var differingPixels: Int
        public var largestDistance: Int
        /// The smallest rectangle holding every differing pixel (x, y, width, height), nil when none.
        public var region: (x: Int, y: Int, width: Int, height: Int)?
        public var sizeMismatch: String?
        /// Where the new rendering was written to look at (when it differs).
        public var actualPath: String?
        public var rewritten = false

        public var matches: Bool { sizeMismatch == nil && differingPixels <= GoldenPicture.allowedDifferingPixels }

        public var description: String {
            var text = sizeMismatch ?? "\(differingPixels) pixel(s) differ by more than \(GoldenPicture.channelTolerance) (largest \(largestDistance))"
            if let region { text += " within x \(region.x)…\(region.x + region.width - 1), y \(region.y)…\(region.y + region.height - 1)" }
            if let actualPath { text += "; the new rendering is at \(actualPath)" }
            return text
        }
    }

    /// Renders `svg` and compares it with the golden file (or rewrites the file when updating).
    /// A missing golden file is a mismatch. The message says how to regenerate.
    public func check(svg: String) throws -> Comparison {
        let (image, png) = try PNGImage.renderingPNG(svg: svg, name: name)
        if Self.updating {
            try FileManager.default.createDirectory(atPath: URL(fileURLWithPath: path).deletingLastPathComponent().path,
                                                    withIntermediateDirectories: true)
            try png.write(to: URL(fileURLWithPath: path))
            var comparison = Comparison(differingPixels: 0, largestDistance: 0)
            comparison.rewritten = true
            return comparison
        }
        var comparison: Comparison
        if let data = FileManager.default.contents(atPath: path) {
            comparison = Self.compare(image, try PNGImage(data: data))
        } else {
            comparison = Comparison(differingPixels: 0, largestDistance: 0, sizeMismatch: "no golden picture at \(path)")
        }
        if !comparison.matches {
            let actual = FileManager.default.temporaryDirectory.appendingPathComponent("habit-golden-\(name).png")
            try? png.write(to: actual)
            comparison.actualPath = actual.path
        }
        return comparison
    }

    public static func compare(_ image: PNGImage, _ golden: PNGImage) -> Comparison {
        guard image.width == golden.width, image.height == golden.height else {
            return Comparison(differingPixels: 0, largestDistance: 0,
                              sizeMismatch: "rendered \(image.width)×\(image.height), golden \(golden.width)×\(golden.height)")
        }
        var count = 0, largest = 0
        var (minX, minY, maxX, maxY) = (Int.max, Int.max, -1, -1)
        for y in 0..<image.height {
            for x in 0..<image.width {
                let distance = image.pixel(x: x, y: y).distance(to: golden.pixel(x: x, y: y))
                largest = max(largest, distance)
                if distance > channelTolerance {
                    count += 1
                    (minX, minY, maxX, maxY) = (min(minX, x), min(minY, y), max(maxX, x), max(maxY, y))
                }
            }
        }
        return Comparison(differingPixels: count, largestDistance: largest,
                          region: count == 0 ? nil : (minX, minY, maxX - minX + 1, maxY - minY + 1))
    }

    /// What a failing test prints after the comparison.
    public var howToRegenerate: String {
        "if the change is intended: HABIT_UPDATE_GOLDEN=1 swift test --skip-build --filter PictureGoldenTests, then look at and commit \(path)"
    }
}

extension String {
    func leftPadded(_ width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
