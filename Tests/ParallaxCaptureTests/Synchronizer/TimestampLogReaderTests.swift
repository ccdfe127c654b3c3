import Foundation
import Testing
@testable import ParallaxCapture

/// The streaming reader behind `parallax pair` and ``RecordedTimestampLog``.
@Suite("Timestamp log reader")
struct TimestampLogReaderTests {
    static func write(_ text: String) throws -> String {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("parallax-log-\(UUID().uuidString).csv")
        try Data(text.utf8).write(to: url)
        return url.path
    }

    /// Every frame and problem, with the frame's file name.
    static func lines(of reader: TimestampLogReader) throws -> [String] {
        var out: [String] = []
        while let line = try reader.next() {
            switch line {
            case .frame(let t, let n): out.append("\(n):\(t):\(reader.filename)")
            case .problem(let p): out.append("\(p.line)!\(p.message)")
            }
        }
        return out
    }

    @Test("line ends \\n, \\r\\n and \\r, comments, blanks and spaces read the same at every chunk size")
    func lineEndsAcrossChunks() throws {
        let text = "#timestamp [ns],filename\r\n 10 , a.png \r\n\r\n# note\n20,b b.png\r30,c.png\n\t40\t,\td.png\r\n50,e.png"
        let expected = ["2:10:a.png", "5:20:b b.png", "6:30:c.png", "7:40:d.png", "8:50:e.png"]
        let path = try Self.write(text)
        defer { try? FileManager.default.removeItem(atPath: path) }
        for chunk in [1, 2, 3, 5, 7, 13, 64, 1 << 20] {
            let reader = try TimestampLogReader(path: path, chunkSize: chunk)
            #expect(try Self.lines(of: reader) == expected, "chunk size \(chunk)")
            #expect(reader.bytesRead == text.utf8.count, "chunk size \(chunk)")
        }
        #expect(try Self.lines(of: TimestampLogReader(bytes: Array(text.utf8), path: "memory")) == expected)
    }

    @Test("bad lines are named with their numbers and reasons")
    func problems() throws {
        let text = "1,a.png\nx,b.png\n2,c.png,extra\n3,\n-4,d.png\n99999999999999999999,e.png\n5\n"
        let reader = TimestampLogReader(bytes: Array(text.utf8), path: "memory")
        #expect(try Self.lines(of: reader) == [
            "1:1:a.png",
            "2!timestamp `x` is not a non-negative integer (nanoseconds)",
            "3!expected 2 fields `timestamp,filename`, found 3",
            "4!empty file name",
            "5!timestamp `-4` is not a non-negative integer (nanoseconds)",
            "6!timestamp `99999999999999999999` is not a non-negative integer (nanoseconds)",
            "7!expected 2 fields `timestamp,filename`, found 1",
        ])
    }

    @Test("the summary counts frames, spans and order in one pass, and finds repeats")
    func summary() throws {
        let sorted = try Self.write("#timestamp [ns],filename\n100,a\n133,b\n166,c\n240,d\n")
        let unsorted = try Self.write("100,a\n166,c\n133,b\n")
        let repeated = try Self.write("100,a\n100,b\n")
        defer { for p in [sorted, unsorted, repeated] { try? FileManager.default.removeItem(atPath: p) } }
        let s = try TimestampLogSummary(scanning: sorted)
        #expect(s.frameCount == 4)
        #expect(s.firstTimestampNanoseconds == 100 && s.lastTimestampNanoseconds == 240)
        #expect(s.isSorted)
        #expect(s.typicalSpacingNanoseconds == 33)
        let u = try TimestampLogSummary(scanning: unsorted)
        #expect(!u.isSorted && u.frameCount == 3 && u.lastTimestampNanoseconds == 166)
        #expect(throws: RecordedTimestampLogError.malformedLines(
            path: repeated, lines: [.init(line: 2, message: "timestamp 100 repeats line 1")])) {
            try TimestampLogSummary(scanning: repeated)
        }
    }

    @Test("the typical spacing is the median gap of the first 100 000 frames")
    func spacingOfTheFirstHundredThousandFrames() throws {
        // The first 100 000 frames have 99 999 gaps: 50 000 of 50 ms, then 49 999 of 20 ms,
        // so their median (the middle, 50 000th, of the sorted gaps) is 50 ms. The log goes
        // on at 20 ms: a sample just two frames longer already has a 20 ms median.
        var text = ""
        var t: Int64 = 0
        for k in 0..<110_000 {
            text += "\(t),\(k).png\n"
            t += k < 50_000 ? 50_000_000 : 20_000_000
        }
        #expect(TimestampLogSummary.spacingSampleSize == 100_000)
        let path = try Self.write(text)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let summary = try TimestampLogSummary(scanning: path)
        #expect(summary.frameCount == 110_000)
        #expect(summary.typicalSpacingNanoseconds == 50_000_000)
    }

    @Test("a file of the wrong kind stops after the problem limit instead of listing every line")
    func problemLimit() throws {
        let path = try Self.write(String(repeating: "not,a,log\n", count: 5000))
        defer { try? FileManager.default.removeItem(atPath: path) }
        do {
            _ = try TimestampLogSummary(scanning: path)
            Issue.record("a file of garbage was accepted")
        } catch {
            guard case .malformedLines(_, let lines) = error else { Issue.record("\(error)"); return }
            #expect(lines.count == RecordedTimestampLogError.problemLimit)
            #expect(error.description.contains("1000 or more malformed lines (reading stopped there)"))
        }
    }

    @Test("streamed pairing pairs every frame with its true partner and accounts for the rest")
    func replayPairsTruePartners() throws {
        // Frame k of each camera was exposed together; some frames of each camera are lost.
        let leftKept = (0..<500).filter { $0 % 37 != 5 }, rightKept = (0..<500).filter { $0 % 41 != 9 }
        let leftTimes = leftKept.map { Int64(1_000_000 + $0 * 33_333_333) }
        let rightTimes = rightKept.map { Int64(1_000_000 + $0 * 33_333_333 + 2_000_000 + ($0 % 7) * 100_000) }
        let configuration = SynchronizerConfiguration(
            policy: .approximate, frameIntervalNanoseconds: 33_333_333, maximumSkewNanoseconds: 16_000_000,
            queueCapacity: 64, clockCorrection: .estimate)
        var pairs: [(Int, Int)] = [], drops = 0
        var li = 0, ri = 0
        let statistics = RecordedStreamPairing.replay(
            configuration: configuration,
            left: { li < leftTimes.count ? { defer { li += 1 }; return leftTimes[li] }() : nil },
            right: { ri < rightTimes.count ? { defer { ri += 1 }; return rightTimes[ri] }() : nil },
            emit: { event in
                switch event {
                case .pair(let p): pairs.append((leftKept[p.left.payload], rightKept[p.right.payload]))
                case .drop: drops += 1
                }
            })
        let both = Set(leftKept).intersection(rightKept)
        #expect(pairs.count == both.count)
        #expect(pairs.allSatisfy { $0.0 == $0.1 }, "a frame paired with a frame of another instant")
        #expect(pairs.count * 2 + drops == leftKept.count + rightKept.count)
        #expect(statistics.framesLeft == leftKept.count && statistics.framesRight == rightKept.count)
    }
}
