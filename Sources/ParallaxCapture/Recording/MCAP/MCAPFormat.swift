/// The pieces of the MCAP container format (mcap.dev/spec, major version 0) that the writer
/// and the reader share: the magic, the record opcodes, little-endian field coding and the
/// CRC-32 the format uses.
///
/// An MCAP file is `magic, Header, data section, [summary], [summary offsets], Footer, magic`;
/// every record is an opcode byte, a `UInt64` content length and the content. Strings are a
/// `UInt32` byte count then UTF-8; byte arrays a `UInt32` (or, for a chunk's records, a
/// `UInt64`) count then the bytes; maps a `UInt32` byte count then their key–value pairs.
enum MCAPFormat {
    /// `0x89 M C A P 0 \r \n`: the file's first and last eight bytes (`0` is the major version).
    static let magic: [UInt8] = [0x89, 0x4D, 0x43, 0x41, 0x50, 0x30, 0x0D, 0x0A]

    /// Record opcodes.
    enum Opcode: UInt8, CustomStringConvertible {
        case header = 0x01, footer = 0x02, schema = 0x03, channel = 0x04, message = 0x05, chunk = 0x06
        case messageIndex = 0x07, chunkIndex = 0x08, attachment = 0x09, attachmentIndex = 0x0A, statistics = 0x0B
        case metadata = 0x0C, metadataIndex = 0x0D, summaryOffset = 0x0E, dataEnd = 0x0F

        var description: String {
            switch self {
            case .header: "Header"
            case .footer: "Footer"
            case .schema: "Schema"
            case .channel: "Channel"
            case .message: "Message"
            case .chunk: "Chunk"
            case .messageIndex: "Message Index"
            case .chunkIndex: "Chunk Index"
            case .attachment: "Attachment"
            case .attachmentIndex: "Attachment Index"
            case .statistics: "Statistics"
            case .metadata: "Metadata"
            case .metadataIndex: "Metadata Index"
            case .summaryOffset: "Summary Offset"
            case .dataEnd: "Data End"
            }
        }
    }

    /// Bytes of a record before its content: the opcode and the `UInt64` length.
    static let recordPrefix = 9

    /// A Message Index record: `channel`'s messages in a chunk, as (log time, offset in the
    /// chunk's records).
    static func messageIndex(channel: UInt16, entries: [(UInt64, UInt64)]) -> [UInt8] {
        MCAPFieldWriter.record(.messageIndex) { m in
            m.u16(channel)
            m.map(entries, key: { $0.u64($1) }, value: { $0.u64($1) })
        }
    }
}

/// CRC-32 as MCAP uses it (IEEE 802.3, reflected, polynomial 0xEDB88320, as zlib's `crc32`),
/// computed incrementally over any number of byte runs.
struct CRC32 {
    private(set) var state: UInt32 = 0xFFFF_FFFF

    /// The checksum of the bytes so far.
    var value: UInt32 { ~state }

    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        var crc = state
        for byte in bytes { crc = Self.table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        state = crc
    }

    mutating func update(_ bytes: [UInt8]) { bytes.withUnsafeBytes { update($0) } }

    /// The checksum of `bytes` alone.
    static func of(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        var crc = CRC32()
        crc.update(bytes)
        return crc.value
    }

    private static let table: [UInt32] = (0..<256).map { n in
        var c = UInt32(n)
        for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }
}

/// Builds a record's content: little-endian integers, MCAP strings, byte arrays and maps.
struct MCAPFieldWriter {
    var bytes: [UInt8] = []

    mutating func u8(_ v: UInt8) { bytes.append(v) }
    mutating func u16(_ v: UInt16) { withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) } }
    mutating func u32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) } }
    mutating func u64(_ v: UInt64) { withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) } }
    mutating func string(_ s: String) {
        u32(UInt32(s.utf8.count))
        bytes.append(contentsOf: s.utf8)
    }
    /// A byte array with a `UInt32` count.
    mutating func data32(_ d: [UInt8]) {
        u32(UInt32(d.count))
        bytes.append(contentsOf: d)
    }
    /// A map: its byte count, then each pair as `key` and `value` write them.
    mutating func map<Key, Value>(_ pairs: [(Key, Value)], key: (inout MCAPFieldWriter, Key) -> Void,
                                  value: (inout MCAPFieldWriter, Value) -> Void) {
        var inner = MCAPFieldWriter()
        for (k, v) in pairs {
            key(&inner, k)
            value(&inner, v)
        }
        u32(UInt32(inner.bytes.count))
        bytes += inner.bytes
    }

    /// `opcode`, the content's length, and the content.
    static func record(_ opcode: MCAPFormat.Opcode, _ build: (inout MCAPFieldWriter) -> Void) -> [UInt8] {
        var content = MCAPFieldWriter()
        build(&content)
        var record = MCAPFieldWriter()
        record.u8(opcode.rawValue)
        record.u64(UInt64(content.bytes.count))
        record.bytes += content.bytes
        return record.bytes
    }
}

/// Reads a record's fields, each checked against the record's end: a field that runs past
/// it throws, naming the field.
struct MCAPFieldReader {
    let bytes: UnsafeRawBufferPointer
    private(set) var position: Int
    let end: Int

    init(_ bytes: UnsafeRawBufferPointer, from start: Int, to end: Int) {
        (self.bytes, position, self.end) = (bytes, start, end)
    }

    var remaining: Int { end - position }

    /// Thrown as the reason of a ``MCAPReadError``.
    struct Short: Error { let field: String }

    private mutating func take(_ count: Int, _ field: String) throws(Short) -> Int {
        guard count >= 0, count <= end - position else { throw Short(field: field) }
        defer { position += count }
        return position
    }

    private mutating func integer<T: FixedWidthInteger>(_: T.Type, _ field: String) throws(Short) -> T {
        let at = try take(MemoryLayout<T>.size, field)
        return T(littleEndian: bytes.loadUnaligned(fromByteOffset: at, as: T.self))
    }

    mutating func u8(_ field: String) throws(Short) -> UInt8 { try integer(UInt8.self, field) }
    mutating func u16(_ field: String) throws(Short) -> UInt16 { try integer(UInt16.self, field) }
    mutating func u32(_ field: String) throws(Short) -> UInt32 { try integer(UInt32.self, field) }
    mutating func u64(_ field: String) throws(Short) -> UInt64 { try integer(UInt64.self, field) }

    /// A count that must fit in what is left of the record.
    private mutating func count<T: FixedWidthInteger>(_: T.Type, _ field: String) throws(Short) -> Int {
        let n = try integer(T.self, field)
        guard n <= T(clamping: remaining) else { throw Short(field: field) }
        return Int(n)
    }

    mutating func string(_ field: String) throws(Short) -> String {
        let n = try count(UInt32.self, field)
        let at = try take(n, field)
        return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[at..<(at + n)]), as: UTF8.self)
    }

    mutating func data32(_ field: String) throws(Short) -> [UInt8] {
        let n = try count(UInt32.self, field)
        let at = try take(n, field)
        return Array(UnsafeRawBufferPointer(rebasing: bytes[at..<(at + n)]))
    }

    /// A `UInt64`-counted byte run: its range in `bytes`.
    mutating func range64(_ field: String) throws(Short) -> Range<Int> {
        let n = try count(UInt64.self, field)
        let at = try take(n, field)
        return at..<(at + n)
    }

    /// The rest of the record: its range in `bytes`.
    mutating func rest() -> Range<Int> {
        defer { position = end }
        return position..<end
    }

    /// A map's pairs, each read by `pair` from a reader bounded to the map.
    mutating func map<T>(_ field: String, _ pair: (inout MCAPFieldReader) throws(Short) -> T) throws(Short) -> [T] {
        let n = try count(UInt32.self, field)
        let at = try take(n, field)
        var inner = MCAPFieldReader(bytes, from: at, to: at + n)
        var out: [T] = []
        while inner.remaining > 0 { out.append(try pair(&inner)) }
        return out
    }
}

/// `bytes.withUnsafeBytes` with `body`'s error type kept (the standard library's rethrows
/// an untyped error).
func withBytes<E: Error>(_ bytes: [UInt8], _ body: (UnsafeRawBufferPointer) throws(E) -> Void) throws(E) {
    var failure: E?
    bytes.withUnsafeBytes { raw in
        do throws(E) { try body(raw) } catch { failure = error }
    }
    if let failure { throw failure }
}
