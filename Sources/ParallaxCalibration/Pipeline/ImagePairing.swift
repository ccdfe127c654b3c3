import ParallaxGeometry

/// Pairs left and right image files.
///
/// By default (``Rule/number``) files pair by the number in their names
/// (`left07.png` with `right07.png`, `cam1_0007.jpg` with `cam2_7.jpg`): the last run of
/// digits of the file name, ignoring leading zeros. A file without a number, a number
/// used twice on one side, or a number with no partner leaves that file unpaired, with
/// the reason; the pairs that do line up are still made (never a fallback to sorted
/// order, which would shift every pair after a gap). ``Rule/order`` pairs in sorted
/// order when asked for explicitly.
public enum ImagePairing {
    /// How files are matched.
    public enum Rule: String, CaseIterable, Sendable {
        /// By the number in the file name.
        case number
        /// In sorted order of the paths (the n-th left with the n-th right).
        case order
    }

    /// A left/right file pair.
    public struct Pair: Hashable, Sendable {
        /// The left image file.
        public var left: String
        /// The right image file.
        public var right: String
        /// A pair of `left` and `right`.
        public init(left: String, right: String) {
            self.left = left
            self.right = right
        }

        /// "left + right", for messages.
        public var name: String { "\(left) + \(right)" }
    }

    /// The number in a file name: the last run of digits of its last path component.
    public static func number(in path: String) -> Int? {
        let name = path.split(separator: "/").last.map(String.init) ?? path
        var digits = ""
        var last: String?
        for ch in name {
            if ch.isASCII && ch.isNumber { digits.append(ch) } else if !digits.isEmpty { last = digits; digits = "" }
        }
        if !digits.isEmpty { last = digits }
        return last.flatMap { Int($0) }
    }

    /// Pairs `left` with `right` by `rule`; every file that could not be paired comes back
    /// in `unpaired` with the reason.
    public static func pair(left: [String], right: [String], by rule: Rule = .number)
        -> (pairs: [Pair], unpaired: [RejectedView])
    {
        let l = left.sorted(), r = right.sorted()
        var pairs: [Pair] = []
        var unpaired: [RejectedView] = []
        switch rule {
        case .order:
            for i in 0..<min(l.count, r.count) { pairs.append(Pair(left: l[i], right: r[i])) }
            for file in l.dropFirst(r.count) {
                unpaired.append(RejectedView(name: file, reason: "no right image to pair with (sorted order)", left: file))
            }
            for file in r.dropFirst(l.count) {
                unpaired.append(RejectedView(name: file, reason: "no left image to pair with (sorted order)", right: file))
            }
        case .number:
            /// Each side's files by number; files without one, or sharing one, are unpaired.
            func index(_ files: [String], side: StereoSide) -> [Int: String] {
                var byNumber: [Int: [String]] = [:]
                for file in files {
                    if let n = number(in: file) {
                        byNumber[n, default: []].append(file)
                    } else {
                        unpaired.append(view(file, side: side, "its name has no number to pair by"))
                    }
                }
                var unique: [Int: String] = [:]
                for (n, files) in byNumber {
                    if files.count == 1 {
                        unique[n] = files[0]
                    } else {
                        for file in files {
                            let others = files.filter { $0 != file }.joined(separator: ", ")
                            unpaired.append(view(file, side: side, "number \(n) is also in \(others)"))
                        }
                    }
                }
                return unique
            }
            let leftByNumber = index(l, side: .left), rightByNumber = index(r, side: .right)
            for n in leftByNumber.keys.sorted() {
                let file = leftByNumber[n]!
                if let partner = rightByNumber[n] {
                    pairs.append(Pair(left: file, right: partner))
                } else {
                    unpaired.append(view(file, side: .left, "no right image with number \(n)"))
                }
            }
            for n in rightByNumber.keys.sorted() where leftByNumber[n] == nil {
                unpaired.append(view(rightByNumber[n]!, side: .right, "no left image with number \(n)"))
            }
        }
        unpaired.sort { $0.name < $1.name }
        return (pairs, unpaired)
    }

    private static func view(_ file: String, side: StereoSide, _ reason: String) -> RejectedView {
        side == .left ? RejectedView(name: file, reason: reason, left: file) : RejectedView(name: file, reason: reason, right: file)
    }
}
