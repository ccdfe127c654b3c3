import ArgumentParser
import Foundation

/// A duration with a unit, the one syntax of every duration option: `200us` (or `µs`),
/// `33.3ms`, `5s`, `2min`, `1h`, `1000000ns`. A bare number is refused: `--timeout 5`
/// could mean seconds or milliseconds, and a wrong guess costs a recording.
struct DurationArgument: ExpressibleByArgument, Equatable, Sendable {
    /// The duration in whole nanoseconds (rounded), > 0.
    var nanoseconds: Int64

    /// The syntax, for help texts and errors.
    static let syntax = "a number with a unit: 200us, 33.3ms, 5s, 2min, 1h"

    init(nanoseconds: Int64) { self.nanoseconds = nanoseconds }

    init?(argument: String) {
        let units: [(String, Double)] = [
            ("ns", 1), ("us", 1e3), ("µs", 1e3), ("ms", 1e6), ("min", 60e9), ("s", 1e9), ("h", 3600e9),
        ]
        let text = argument.trimmingCharacters(in: .whitespaces)
        guard let (suffix, scale) = units.first(where: { text.hasSuffix($0.0) }) else { return nil }
        let number = text.dropLast(suffix.count).trimmingCharacters(in: .whitespaces)
        // Digits and at most one decimal point: no exponents, signs, inf or nan.
        guard !number.isEmpty, number.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }),
            number.filter({ $0 == "." }).count <= 1, let value = Double(number)
        else { return nil }
        let nanoseconds = (value * scale).rounded()
        guard nanoseconds >= 1, nanoseconds < 9.2e18 else { return nil }
        self.nanoseconds = Int64(nanoseconds)
    }

    /// The duration in seconds.
    var seconds: Double { Double(nanoseconds) / 1e9 }

    /// Parses an option's value, or fails with the syntax (ArgumentParser names the option).
    static func parse(_ text: String) throws -> DurationArgument {
        if let duration = DurationArgument(argument: text) { return duration }
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if let bare = Double(trimmed), bare.isFinite {
            throw ValidationError("a duration needs a unit (\(syntax)); for \(trimmed) seconds write \(trimmed)s")
        }
        throw ValidationError("expected \(syntax), a positive duration under 292 years")
    }

    /// Refuses a duration above `limit`, naming `option`.
    func check(_ option: String, atMost limit: DurationArgument) throws {
        guard nanoseconds <= limit.nanoseconds else {
            throw ValidationError("\(option) must be at most \(limit.description), got \(description)")
        }
    }

    static var defaultCompletionKind: CompletionKind { .default }

    /// In the unit that reads best: `2s`, `33.3ms`, `1h`.
    var description: String {
        let steps: [(Int64, String)] = [(3_600_000_000_000, "h"), (60_000_000_000, "min"), (1_000_000_000, "s"),
                                        (1_000_000, "ms"), (1_000, "us")]
        for (scale, unit) in steps where nanoseconds >= scale {
            let value = Double(nanoseconds) / Double(scale)
            return String(format: "%g", value) + unit
        }
        return "\(nanoseconds)ns"
    }

    /// Shown as the default in `--help`.
    var defaultValueDescription: String { description }
}
