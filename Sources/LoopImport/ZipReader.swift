import CZlib

/// Reads the zip files Loop's exporter writes (java.util.zip.ZipOutputStream: deflated
/// entries whose sizes and CRC follow the data in a data descriptor, so the local headers say
/// 0). The central directory is the one source of names, sizes and offsets; each local header
/// is checked against it. Hostile archives are refused before anything is inflated:
/// zip64, encryption, spanning and methods other than stored (0) and deflate (8); names
/// that are absolute, contain `..` segments, backslashes, NUL or are not UTF-8; duplicate
/// names; an entry or a total beyond the caps (a zip bomb declares small sizes and inflates
/// far past them, so inflation stops at the declared size and the CRC-32 is checked).
public enum ZipReader {
    public struct Limits: Sendable {
        public var maximumEntries: Int
        public var maximumEntryBytes: Int
        public var maximumTotalBytes: Int

        public init(maximumEntries: Int = 10_000, maximumEntryBytes: Int = 32 << 20, maximumTotalBytes: Int = 256 << 20) {
            self.maximumEntries = maximumEntries
            self.maximumEntryBytes = maximumEntryBytes
            self.maximumTotalBytes = maximumTotalBytes
        }
    }

    /// The archive's files by name (directories left out), inflated.
    public static func entries(_ zip: [UInt8], limits: Limits = Limits()) throws(LoopImportError) -> [String: [UInt8]] {
        func u16(_ at: Int) -> Int { Int(zip[at]) | Int(zip[at + 1]) << 8 }
        func u32(_ at: Int) -> Int { u16(at) | u16(at + 2) << 16 }
        func need(_ range: Range<Int>, _ what: String) throws(LoopImportError) {
            guard range.lowerBound >= 0, range.upperBound <= zip.count else {
                throw LoopImportError(.zipTruncated, "the archive ends inside \(what)")
            }
        }

        // End of central directory: 22 bytes plus a comment of up to 65535, searched backwards.
        guard zip.count >= 22 else {
            throw LoopImportError(zip.starts(with: [0x50, 0x4B]) ? .zipTruncated : .zipBadSignature,
                                  "\(zip.count) bytes is too short for a zip archive")
        }
        var eocd: Int?
        var at = zip.count - 22
        while at >= max(0, zip.count - 22 - 65535) {
            if zip[at] == 0x50, zip[at + 1] == 0x4B, zip[at + 2] == 5, zip[at + 3] == 6 { eocd = at; break }
            at -= 1
        }
        guard let eocd else {
            throw LoopImportError(zip.starts(with: [0x50, 0x4B, 3, 4]) ? .zipTruncated : .zipBadSignature,
                                  zip.starts(with: [0x50, 0x4B, 3, 4])
                                      ? "no end of central directory: the archive is cut short"
                                      : "not a zip archive (no PK signature)")
        }
        guard u16(eocd + 4) == 0, u16(eocd + 6) == 0 else {
            throw LoopImportError(.zipUnsupported, "multi-disk archives are not supported")
        }
        let count = u16(eocd + 10), directorySize = u32(eocd + 12), directoryOffset = u32(eocd + 16)
        guard count != 0xFFFF, directoryOffset != 0xFFFF_FFFF else {
            throw LoopImportError(.zipUnsupported, "zip64 archives are not supported")
        }
        guard count <= limits.maximumEntries else {
            throw LoopImportError(.zipTooLarge, "\(count) entries; at most \(limits.maximumEntries)")
        }
        try need(directoryOffset..<(directoryOffset + directorySize), "the central directory")

        var files: [String: [UInt8]] = [:]
        var names = Set<String>()
        var total = 0
        var cursor = directoryOffset
        for _ in 0..<count {
            try need(cursor..<(cursor + 46), "a central directory header")
            guard u32(cursor) == 0x0201_4B50 else {
                throw LoopImportError(.zipBadSignature, "bad central directory header signature at byte \(cursor)")
            }
            let flags = u16(cursor + 8), method = u16(cursor + 10), crc = UInt32(u32(cursor + 16))
            let compressedSize = u32(cursor + 20), size = u32(cursor + 24)
            let nameLength = u16(cursor + 28), extraLength = u16(cursor + 30), commentLength = u16(cursor + 32)
            let localOffset = u32(cursor + 42)
            try need((cursor + 46)..<(cursor + 46 + nameLength), "an entry name")
            let nameBytes = Array(zip[(cursor + 46)..<(cursor + 46 + nameLength)])
            cursor += 46 + nameLength + extraLength + commentLength

            let name = try checkedName(nameBytes)
            guard names.insert(name).inserted else {
                throw LoopImportError(.zipDuplicateEntry, "\"\(name)\" appears twice", file: name)
            }
            guard compressedSize != 0xFFFF_FFFF, size != 0xFFFF_FFFF, localOffset != 0xFFFF_FFFF else {
                throw LoopImportError(.zipUnsupported, "zip64 entries are not supported", file: name)
            }
            guard flags & 1 == 0 else { throw LoopImportError(.zipUnsupported, "encrypted entries are not supported", file: name) }
            guard size <= limits.maximumEntryBytes else {
                throw LoopImportError(.zipEntryTooLarge, "\(size) bytes inflated; at most \(limits.maximumEntryBytes)", file: name)
            }
            total += size
            guard total <= limits.maximumTotalBytes else {
                throw LoopImportError(.zipTooLarge, "more than \(limits.maximumTotalBytes) bytes inflated in all", file: name)
            }
            if name.hasSuffix("/") { continue }

            try need(localOffset..<(localOffset + 30), "a local header")
            guard u32(localOffset) == 0x0403_4B50 else {
                throw LoopImportError(.zipBadSignature, "bad local header signature at byte \(localOffset)", file: name)
            }
            let dataStart = localOffset + 30 + u16(localOffset + 26) + u16(localOffset + 28)
            try need(dataStart..<(dataStart + compressedSize), "the data of \(name)")
            let data = zip[dataStart..<(dataStart + compressedSize)]
            let content: [UInt8]
            switch method {
            case 0:
                guard compressedSize == size else {
                    throw LoopImportError(.zipCorrupt, "stored entry with different sizes", file: name)
                }
                content = Array(data)
            case 8:
                content = try inflate(data, size: size, name: name)
            default:
                throw LoopImportError(.zipUnsupported, "compression method \(method); only stored (0) and deflate (8)", file: name)
            }
            let actual = content.withUnsafeBufferPointer { UInt32(crc32(0, $0.baseAddress, uInt($0.count))) }
            guard actual == crc else { throw LoopImportError(.zipCorrupt, "CRC-32 mismatch", file: name) }
            files[name] = content
        }
        return files
    }

    /// Names are relative paths of UTF-8 segments; anything that could leave the archive's
    /// root, or name the same file two ways, is refused.
    static func checkedName(_ bytes: [UInt8]) throws(LoopImportError) -> String {
        guard let name = String(validating: bytes, as: UTF8.self) else {
            throw LoopImportError(.zipBadPath, "an entry name is not UTF-8")
        }
        let segments = name.split(separator: "/", omittingEmptySubsequences: false)
        let bad = name.isEmpty || name.hasPrefix("/") || name.contains("\\") || name.contains("\0")
            || name.unicodeScalars.contains { $0.value < 0x20 }
            || (segments.count > 1 && segments.dropLast().contains { $0.isEmpty })
            || segments.contains { $0 == ".." || $0 == "." }
            || (segments.first.map { $0.count >= 2 && $0.dropFirst().first == ":" } ?? false)
        guard !bad else { throw LoopImportError(.zipBadPath, "unsafe entry name \"\(name)\"", file: name) }
        return name
    }

    /// Raw deflate (no zlib header), into exactly `size` bytes: more output than declared, or
    /// less, is corruption (and stops a bomb at the declared size).
    static func inflate(_ data: ArraySlice<UInt8>, size: Int, name: String) throws(LoopImportError) -> [UInt8] {
        var stream = z_stream()
        guard inflateInit2_(&stream, -MAX_WBITS, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw LoopImportError(.zipCorrupt, "zlib could not start", file: name)
        }
        defer { inflateEnd(&stream) }
        // One byte more than declared, so output beyond the declared size is detected.
        var output = [UInt8](repeating: 0, count: size + 1)
        var input = Array(data)
        let status: Int32 = input.withUnsafeMutableBufferPointer { inBuffer in
            output.withUnsafeMutableBufferPointer { outBuffer in
                stream.next_in = inBuffer.baseAddress
                stream.avail_in = uInt(inBuffer.count)
                stream.next_out = outBuffer.baseAddress
                stream.avail_out = uInt(outBuffer.count)
                return CZlib.inflate(&stream, Z_FINISH)
            }
        }
        guard status == Z_STREAM_END, Int(stream.total_out) == size else {
            throw LoopImportError(.zipCorrupt, status == Z_STREAM_END || status == Z_BUF_ERROR && stream.total_out > size
                                  ? "inflates to more or fewer bytes than the \(size) declared"
                                  : "deflate data is corrupt (zlib status \(status))", file: name)
        }
        output.removeLast()
        return output
    }
}
