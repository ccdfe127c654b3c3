import Foundation
import Testing

/// What README.md says about the Makefile, read from both files at the package root.
@Suite("README and Makefile agree")
struct ReadmeMakefileTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardized

    static func text(_ name: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(name), encoding: .utf8)
    }

    /// The prerequisites of `target` in the Makefile (`target: a b`).
    static func prerequisites(of target: String, in makefile: String) -> [String] {
        makefile.split(separator: "\n").first { $0.hasPrefix(target + ":") && !$0.hasPrefix(target + ":=") }
            .map { $0.dropFirst(target.count + 1).split(separator: " ").map(String.init) } ?? []
    }

    /// README, "Two commands": "Both install the Debian packages they need (`libv4l-dev`, …,
    /// `pkg-config`) when any is missing". The list is the Makefile's DEBIAN_PACKAGES, in any
    /// order, and both `make demo` and `make test` reach the `deps` target that installs it.
    @Test("the Debian packages README.md lists under \"Two commands\" are the Makefile's DEBIAN_PACKAGES, which demo and test install")
    func debianPackages() throws {
        let readme = try Self.text("README.md"), makefile = try Self.text("Makefile")
        let sentence = try #require(readme.range(of: "Both install the Debian packages they need ("), "README.md: the sentence moved")
        let list = try #require(readme[sentence.upperBound...].split(separator: ")", maxSplits: 1).first)
        let listed = list.split(separator: "`", omittingEmptySubsequences: false).enumerated().filter { $0.offset % 2 == 1 }.map { String($0.element) }
        let line = try #require(makefile.split(separator: "\n").first { $0.hasPrefix("DEBIAN_PACKAGES :=") },
                                "Makefile: no DEBIAN_PACKAGES")
        let packages = line.dropFirst("DEBIAN_PACKAGES :=".count).split(separator: " ").map(String.init)
        #expect(!packages.isEmpty && listed.sorted() == packages.sorted(), "README \(listed), Makefile \(packages)")
        #expect(Self.prerequisites(of: "deps", in: makefile).isEmpty
                && makefile.contains("deps:\n\t@$(MAKE) --no-print-directory install-packages PACKAGES=\"$(DEBIAN_PACKAGES)\""))
        for target in ["demo", "test"] {
            // Every prerequisite, transitively: demo → release → deps, test → deps.
            var seen: Set<String> = [], next = [target]
            while let current = next.popLast(), seen.insert(current).inserted {
                next += Self.prerequisites(of: current, in: makefile)
            }
            #expect(seen.contains("deps"), "make \(target) does not reach deps: \(seen.sorted())")
        }
    }
}
