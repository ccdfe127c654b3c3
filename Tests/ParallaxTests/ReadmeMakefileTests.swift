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

    /// Each target's `dependencies:` and `linkedLibrary`s in Package.swift, under the names the
    /// README uses (products by their package, C libraries by their project's name).
    static func packageTargets() throws -> [String: Set<String>] {
        let manifest = try text("Package.swift")
        let libraries = ["v4l2": "libv4l2", "udev": "libudev", "lapacke": "LAPACKE", "openblas": "OpenBLAS", "png16": "libpng",
                         "turbojpeg": "libjpeg-turbo", "jpeg": "libjpeg-turbo", "zstd": "libzstd"]
        let products = ["ArgumentParser": "swift-argument-parser", "Yams": "Yams", "Logging": "swift-log"]
        var targets: [String: Set<String>] = [:]
        // One declaration per `.target(`/`.executableTarget(` up to the next one or the test targets;
        // a dependency's trait condition is not a dependency.
        let body = (manifest.components(separatedBy: "// MARK: Tests").first ?? manifest)
            .replacing(/, condition: \.when\(traits: \[[^\]]*\]\)/, with: "")
        for declaration in body.components(separatedBy: "Target(").dropFirst() + body.components(separatedBy: ".target(").dropFirst() {
            guard let name = declaration.firstMatch(of: /name: "([A-Za-z0-9]+)"/)?.1 else { continue }
            var links: Set<String> = []
            if let list = declaration.firstMatch(of: /dependencies: \[([^\]]*)\]/)?.1 {
                for match in list.matches(of: /\.product\(name: "([A-Za-z0-9]+)"/) { links.insert(products[String(match.1)] ?? String(match.1)) }
                let targetNames = list.replacing(/\.product\([^)]*\)/, with: "")
                for match in targetNames.matches(of: /"([A-Za-z0-9]+)"/) { links.insert(String(match.1)) }
            }
            for match in declaration.matches(of: /linkedLibrary\("([a-z0-9]+)"\)/) {
                links.insert(libraries[String(match.1)] ?? String(match.1))
            }
            targets[String(name)] = targets[String(name)] ?? links
        }
        return targets
    }

    /// README, "Layout": every `Sources/…` row names a target that exists, its "links" column
    /// is what Package.swift makes that target depend on and link, and every folder in
    /// Sources/ has a row. README, "Use it from your package": the layers are products of
    /// their own.
    @Test("README's layout table is Package.swift's targets, their dependencies and libraries, and every folder of Sources/")
    func layoutTableMatchesThePackage() throws {
        let readme = try Self.text("README.md"), manifest = try Self.text("Package.swift")
        let targets = try Self.packageTargets()
        let layers = ["ParallaxGeometry", "ParallaxImage", "ParallaxCapture", "ParallaxCalibration", "ParallaxDepth"]
        var rows: [String: Set<String>] = [:]
        for line in readme.split(separator: "\n") where line.hasPrefix("| `Sources/") {
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            try #require(cells.count >= 4, "\(line)")
            let name = String(cells[1].dropFirst("`Sources/".count).dropLast())
            let column = cells[3]
            let links: Set<String> = column == "–" ? [] : column == "those five" ? Set(layers)
                : Set(column.components(separatedBy: ", ").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "` ")) })
            rows[name] = links
        }
        let folders = try FileManager.default.contentsOfDirectory(atPath: Self.root.appendingPathComponent("Sources").path)
            .filter { !$0.hasPrefix(".") }
        #expect(Set(rows.keys) == Set(folders), "rows \(rows.keys.sorted()), folders \(folders.sorted())")
        for (name, links) in rows.sorted(by: { $0.key < $1.key }) {
            let declared = try #require(targets[name], "README lists Sources/\(name); Package.swift has no such target: \(targets.keys.sorted())")
            #expect(links == declared, "\(name): README links \(links.sorted()), Package.swift \(declared.sorted())")
        }
        for layer in layers + ["Parallax"] {
            #expect(manifest.contains(".library(name: \"\(layer)\", targets: [\"\(layer)\"])"), "no product \(layer)")
        }
        // Detection, calibration and rectification are Parallax's own: OpenCV is no dependency.
        #expect(!manifest.lowercased().contains("opencv"))
    }
}
