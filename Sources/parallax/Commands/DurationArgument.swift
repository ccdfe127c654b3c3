import ArgumentParser
import Foundation

/// A duration with a unit: `5ms`, `200us` (or `µs`), `33.3ms`, `1000000ns`, `0.5s`.
struct DurationArgument: ExpressibleByArgument, Equatable {
    /// The duration in whole nanoseconds (rounded), > 0.
    var nanoseconds: Int64

    init?(argument: String) {
        let units: [(String, Double)] = [("ns", 1), ("us", 1e3), ("µs", 1e3), ("ms", 1e6), ("s", 1e9)]
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

    static var defaultCompletionKind: CompletionKind { .default }
}
