/// The unit a calibration's translations (and so its baseline and every depth) are in.
///
/// A calibration made with `--square 25mm` is in millimetres; one made with a bare
/// `--square 1` is ``unitless`` (board units). Files that do not say (older Parallax files,
/// OpenCV's and ROS's) are ``unitless``: a distance with a unit cannot be converted against
/// them, only a bare number in their own units.
public enum LengthUnit: String, Hashable, Sendable, CaseIterable {
    /// Metres (`m`).
    case metre = "m"
    /// Centimetres (`cm`).
    case centimetre = "cm"
    /// Millimetres (`mm`).
    case millimetre = "mm"
    /// Inches (`in`).
    case inch = "in"
    /// No known unit (`unitless`): the board's own units.
    case unitless

    /// Millimetres in one of this unit, `nil` for ``unitless``.
    public var millimetres: Double? {
        switch self {
        case .metre: 1000
        case .centimetre: 10
        case .millimetre: 1
        case .inch: 25.4
        case .unitless: nil
        }
    }

    /// The suffix written after a number in this unit (`mm`), empty for ``unitless``.
    public var suffix: String { self == .unitless ? "" : rawValue }

    /// The unit of a suffix as users type it (`m`, `cm`, `mm`, `in`); `nil` for anything else.
    public init?(symbol: String) {
        guard let unit = LengthUnit(rawValue: symbol), unit != .unitless else { return nil }
        self = unit
    }
}

/// A length as typed on a command line: a positive finite number with an optional unit
/// suffix (`1.5m`, `150cm`, `1500mm`, `2in`, or a bare `1500`).
public struct Length: Hashable, Sendable, CustomStringConvertible {
    /// The number as typed.
    public var value: Double
    /// The unit typed after it, `nil` for a bare number.
    public var unit: LengthUnit?

    /// Parses `text`; `nil` unless it is a positive finite number with at most one of the
    /// suffixes `m`, `cm`, `mm`, `in`.
    public init?(parsing text: String) {
        var number = Substring(text.trimmingWhitespaceForLength)
        var unit: LengthUnit?
        for candidate in [LengthUnit.millimetre, .centimetre, .inch, .metre] where number.hasSuffix(candidate.rawValue) {
            unit = candidate
            number = number.dropLast(candidate.rawValue.count)
            break
        }
        // Decimal digits, one point and an exponent only: `Double("0x19")` reads hexadecimal,
        // which nobody types for a length (0x19mm would silently be 25 mm).
        guard number.allSatisfy({ $0.isASCII && ($0.isNumber || ".eE+-".contains($0)) }),
              let value = Double(number), value.isFinite, value > 0 else { return nil }
        self.value = value
        self.unit = unit
    }

    /// The length in `target` units: converted when both units are known, as typed when
    /// it is bare; `nil` when it has a unit and `target` is ``LengthUnit/unitless``.
    public func value(in target: LengthUnit) -> Double? {
        guard let unit else { return value }
        guard let from = unit.millimetres, let to = target.millimetres else { return nil }
        return value * from / to
    }

    /// `1.5m`, or `1500` for a bare number.
    public var description: String {
        let number = value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
        return number + (unit?.rawValue ?? "")
    }
}

extension String {
    fileprivate var trimmingWhitespaceForLength: String {
        var s = Substring(self)
        while let first = s.first, first.isWhitespace { s = s.dropFirst() }
        while let last = s.last, last.isWhitespace { s = s.dropLast() }
        return String(s)
    }
}
