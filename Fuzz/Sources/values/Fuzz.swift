import FuzzSupport
import ParallaxCalibration
import ParallaxCapture
import ParallaxGeometry

/// The command line's value parsers, one per input: the first byte picks the parser (its
/// value modulo 5), the rest is the text typed. `DurationArgument.swift` is the CLI's own
/// file, linked here, since an executable's types cannot be imported by another package.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzValues(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = Fuzz.bytes(data, size)
    guard let chooser = bytes.first else { return 0 }
    let text = Fuzz.text(Array(bytes.dropFirst()))
    switch chooser % 5 {
    case 0:
        // `--size 1920x1080`
        guard let parsed = ImageSize(parsing: text) else { return 0 }
        Fuzz.expect(parsed.width > 0 && parsed.height > 0, "size \(parsed) from \"\(text)\"")
        Fuzz.expect(ImageSize(parsing: parsed.description) == parsed, "size \(parsed) does not read back")
    case 1:
        // `--format 1280x720@30:YUYV`; `devices` prints formats in the same syntax.
        guard let parsed = CaptureFormat(parsing: text) else { return 0 }
        let fps = parsed.frameInterval.framesPerSecond
        Fuzz.expect(!parsed.size.isEmpty && fps > 0 && fps <= 1000, "format \(parsed) from \"\(text)\"")
        Fuzz.expect(CaptureFormat(parsing: parsed.description) != nil, "format \(parsed) does not read back")
        // And what `cost` and `capture` do with it: two cameras on one bus, capped or not, and
        // the cheaper alternatives offered when they do not fit (sizes and rates multiply here).
        for cap in [nil, fps / 2] as [Double?] {
            let planned = PlannedRig(formats: PerSide(repeating: parsed), sharedBus: true, speed: .high, maximumFramesPerSecond: cap)
            let cost = planned.cost
            Fuzz.expect(!cost.cost.isNaN && cost.cost >= 0, "cost \(cost.cost) of \(parsed)")
            Fuzz.expect(!cost.description.isEmpty && !planned.description.isEmpty, "cost text of \(parsed)")
            for alternative in planned.alternatives(limit: 3) {
                Fuzz.expect(alternative.cost.runs, "alternative \(alternative.rig) of \(parsed) does not run: \(alternative.cost.cost)")
            }
        }
    case 2:
        // `--convergence 1.5m`, `--square 25mm`
        guard let parsed = Length(parsing: text) else { return 0 }
        Fuzz.expect(parsed.value > 0 && parsed.value.isFinite, "length \(parsed.value) from \"\(text)\"")
        Fuzz.expect(Length(parsing: parsed.description) == parsed, "length \(parsed) does not read back")
        for unit in LengthUnit.allCases { _ = parsed.value(in: unit) }
    case 3:
        // `--timeout 5s`, `--consumer-delay 50ms`, the times of `--unplug right@2s`
        let parsed = DurationArgument(argument: text)
        if let parsed {
            Fuzz.expect(parsed.nanoseconds >= 1, "duration \(parsed.nanoseconds) ns from \"\(text)\"")
            Fuzz.expect(!parsed.description.isEmpty && parsed.seconds > 0, "duration \(parsed.nanoseconds) ns")
        }
        let thrown = try? DurationArgument.parse(text)
        Fuzz.expect(thrown == parsed, "parse and init disagree on \"\(text)\"")
    default:
        // `--board 9x6 --square 25mm`, the two texts separated by a newline
        let parts = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, let board = try? CalibrationBoard(parsing: String(parts[0]), square: String(parts[1])) else {
            return 0
        }
        Fuzz.expect(board.cornerCount >= 4 && board.squareSize > 0, "board \(board)")
        // And `target`, which draws it: a sheet, or a refusal naming why (too small or too
        // large for the paper), never a trap on the board's geometry.
        for paper in TargetSheet.Paper.allCases {
            do {
                let sheet = try TargetSheet.svg(for: board, paper: paper)
                Fuzz.expect(sheet.hasPrefix("<?xml") || sheet.hasPrefix("<svg"), "sheet of \(board) on \(paper)")
            } catch {
                Fuzz.expect(!error.description.isEmpty, "refusal of \(board) on \(paper)")
            }
        }
    }
    return 0
}

@_cdecl("values_main")
func main(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    Fuzz.run(argc, argv, fuzzValues)
}
