import CLibPQ
import Foundation

/// Queues `query` as an unnamed statement (Parse, Bind, Execute of the unnamed statement);
/// false if libpq could not send it.
func sendUnnamed(_ query: Query, on handle: OpaquePointer) -> Bool {
    withParameters(query.bindings) { count, types, values, lengths, formats in
        PQsendQueryParams(handle, query.sql, count, types, values, lengths, formats, 1)
    } == 1
}

/// Lays the parameters out in one buffer and passes libpq the arrays it wants. Every
/// parameter is binary (format 1) with its type OID. libpq copies what it sends before the
/// call returns, so the buffer lives only for `body`.
func withParameters<Result>(
    _ bindings: Query.Bindings,
    _ body: (Int32, UnsafePointer<Oid>?, UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?, UnsafePointer<Int32>?) -> Result
) -> Result {
    let count = bindings.count
    if count == 0 { return body(0, nil, nil, nil, nil) }
    let total = bindings.values.reduce(0) { $0 + ($1?.count ?? 0) }
    let storage = UnsafeMutablePointer<CChar>.allocate(capacity: max(total, 1))
    defer { storage.deallocate() }
    var pointers: [UnsafePointer<CChar>?] = []
    var lengths: [Int32] = []
    pointers.reserveCapacity(count)
    lengths.reserveCapacity(count)
    var offset = 0
    for value in bindings.values {
        if let value {
            value.withUnsafeBytes { bytes in
                UnsafeMutableRawPointer(storage + offset).copyMemory(from: bytes.baseAddress ?? UnsafeRawPointer(storage), byteCount: bytes.count)
            }
            // A zero-length value still needs a non-NULL pointer: NULL would mean SQL NULL.
            pointers.append(UnsafePointer(storage + offset))
            lengths.append(Int32(value.count))
            offset += value.count
        } else {
            pointers.append(nil)
            lengths.append(0)
        }
    }
    let formats = [Int32](repeating: 1, count: count)
    return bindings.types.withUnsafeBufferPointer { types in
        pointers.withUnsafeBufferPointer { values in
            lengths.withUnsafeBufferPointer { lengths in
                formats.withUnsafeBufferPointer { formats in
                    body(Int32(count), types.baseAddress, values.baseAddress, lengths.baseAddress, formats.baseAddress)
                }
            }
        }
    }
}

/// A NULL-terminated array of C strings for libpq's keyword/value arrays, valid during `body`.
func withCStringArray<Result>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> Result) -> Result {
    let copies = strings.map { strdup($0) }
    defer { copies.forEach { free($0) } }
    let pointers: [UnsafePointer<CChar>?] = copies.map { UnsafePointer($0) } + [nil]
    return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
}
