/// Pairs left and right image files.
///
/// When every file name on both sides carries a number (`left07.png`,
/// `cam1_0007.jpg`), files pair by that number (the last run of digits in the
/// name, ignoring leading zeros), so a missing image on one side drops only its
/// own pair. Otherwise files pair in sorted order.
public enum ImagePairing {
    /// A left/right file pair.
    public struct Pair: Hashable, Sendable {
        /// The left image file.
        public var left: String
        /// The right image file.
        public var right: String
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

    /// Pairs `left` with `right`; files without a partner come back as rejected, with the reason.
    public static func pair(left: [String], right: [String]) -> (pairs: [Pair], unpaired: [RejectedView]) {
        let l = left.sorted(), r = right.sorted()
        let leftNumbers = l.map(number(in:)), rightNumbers = r.map(number(in:))
        let numbered = !l.isEmpty && !r.isEmpty && leftNumbers.allSatisfy { $0 != nil } && rightNumbers.allSatisfy { $0 != nil }
            && Set(leftNumbers).count == l.count && Set(rightNumbers).count == r.count
        var pairs: [Pair] = []
        var unpaired: [RejectedView] = []
        if numbered {
            var byNumber: [Int: String] = [:]
            for (file, n) in zip(r, rightNumbers) { if let n { byNumber[n] = file } }
            var matched = Set<String>()
            for (file, n) in zip(l, leftNumbers) {
                if let n, let partner = byNumber[n] {
                    pairs.append(Pair(left: file, right: partner))
                    matched.insert(partner)
                } else {
                    unpaired.append(RejectedView(name: file, reason: "no right image with number \(n ?? -1)", left: file))
                }
            }
            for file in r where !matched.contains(file) {
                unpaired.append(RejectedView(name: file, reason: "no left image with number \(number(in: file) ?? -1)", right: file))
            }
        } else {
            for i in 0..<min(l.count, r.count) { pairs.append(Pair(left: l[i], right: r[i])) }
            for file in l.dropFirst(r.count) { unpaired.append(RejectedView(name: file, reason: "no right image to pair with (sorted order)", left: file)) }
            for file in r.dropFirst(l.count) { unpaired.append(RejectedView(name: file, reason: "no left image to pair with (sorted order)", right: file)) }
        }
        return (pairs, unpaired)
    }
}
