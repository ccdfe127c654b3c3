import FuzzSupport
import ParallaxCapture

/// The EuRoC `data.csv` timestamp log, read three ways that must agree: whole from memory
/// (`TimestampLogReader(bytes:)`), streamed from a file in chunks of 1 to 64 bytes (the
/// first input byte picks the size, so lines and `\r\n` pairs straddle chunk boundaries),
/// and as `RecordedTimestampLog` and `TimestampLogSummary`.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzEuRoCCSV(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = Fuzz.bytes(data, size)
    guard let chooser = bytes.first else { return 0 }
    let log = Array(bytes.dropFirst())
    let path = Fuzz.file(named: "data.csv", holding: log)

    let inMemory = TimestampLogReader(bytes: log, path: path)
    let streamed: TimestampLogReader
    do {
        streamed = try TimestampLogReader(path: path, chunkSize: Int(chooser % 64) + 1)
    } catch {
        Fuzz.fail("cannot open the scratch log: \(error)")
    }
    var lines = 0
    while true {
        let a: TimestampLogReader.Line?, b: TimestampLogReader.Line?
        do {
            a = try inMemory.next()
            b = try streamed.next()
        } catch {
            Fuzz.fail("reading failed: \(error)")
        }
        Fuzz.expect(a == b, "line \(lines + 1): in memory \(String(describing: a)), streamed \(String(describing: b))")
        guard a != nil else { break }
        if case .frame = a {
            Fuzz.expect(inMemory.filename == streamed.filename,
                        "file names differ: \(inMemory.filename) and \(streamed.filename)")
        }
        lines += 1
    }
    Fuzz.expect(inMemory.bytesRead == log.count && streamed.bytesRead == log.count,
                "bytes read: \(inMemory.bytesRead) in memory, \(streamed.bytesRead) streamed, of \(log.count)")

    let whole = try? RecordedTimestampLog(contentsOfFile: path)
    let summary = try? TimestampLogSummary(scanning: path)
    if let whole {
        // The summary finds no problem the whole read does not (it misses repeats that
        // sorting brings together, which the whole read reports).
        guard let summary else { Fuzz.fail("the whole log reads but its summary fails") }
        let stamps = whole.entries.map(\.timestampNanoseconds)
        Fuzz.expect(summary.frameCount == whole.entries.count
                    && summary.firstTimestampNanoseconds == stamps.first
                    && summary.lastTimestampNanoseconds == stamps.last
                    && summary.isSorted == !whole.wasUnsorted,
                    "summary \(summary) disagrees with the whole log (\(stamps.count) frames)")
        Fuzz.expect(zip(stamps, stamps.dropFirst()).allSatisfy { $0 < $1 }, "entries not strictly increasing")
    }
    _ = try? RecordedTimestampLog(text: Fuzz.text(log), path: "input.csv")
    return 0
}

@_cdecl("euroc_csv_main")
func main(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    Fuzz.run(argc, argv, fuzzEuRoCCSV)
}
