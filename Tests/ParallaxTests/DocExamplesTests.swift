import Foundation
import Testing

/// Every ```swift block of the documentation (the READMEs, the calibration guide, the DocC
/// catalogs' pages and the doc comments) is compiled: it appears, line for line
/// (indentation aside), in `DocExamples.swift` or `ReadmeExample.swift`, which this target
/// builds. The one manifest fragment (README's `dependencies:`) names a product the package has.
@Suite("Documentation examples")
struct DocExamplesTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardized

    static func text(_ path: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    }

    /// The ```swift blocks of `text`, each as its lines with surrounding whitespace removed;
    /// `prefix` is stripped first from every line (`///` for doc comments, whose blocks are
    /// collected only from comment lines). A block never closed is returned with
    /// ``unterminated`` as its last line, so that the check fails on it (an open fence turns
    /// the rest of a page into code, and its example would escape the compiled check).
    static func blocks(in text: String, commentPrefix: String? = nil) -> [[String]] {
        var blocks: [[String]] = []
        var current: [String]?
        for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
            var line = raw.trimmingCharacters(in: .whitespaces)
            if let commentPrefix {
                guard line.hasPrefix(commentPrefix) else { current = nil; continue }
                line = String(line.dropFirst(commentPrefix.count)).trimmingCharacters(in: .whitespaces)
            }
            if current == nil {
                if line == "```swift" { current = [] }
            } else if line == "```" {
                blocks.append(current ?? [])
                current = nil
            } else {
                current?.append(line)
            }
        }
        if let current, commentPrefix == nil { blocks.append(current + [unterminated]) }
        return blocks
    }

    /// The marker line of a block whose closing fence is missing.
    static let unterminated = "<the closing ``` of this block is missing>"

    /// Files under `folder` whose names end in `suffix`, recursively.
    static func files(under folder: String, endingIn suffix: String) -> [String] {
        let base = root.appendingPathComponent(folder).path
        let names = (FileManager.default.enumerator(atPath: base)?.allObjects as? [String]) ?? []
        return names.filter { $0.hasSuffix(suffix) }.map { folder + "/" + $0 }.sorted()
    }

    @Test func everyDocumentedExampleIsCompiled() throws {
        let compiled = try (Self.text("Tests/ParallaxTests/DocExamples.swift") + "\n" + Self.text("Tests/ParallaxTests/ReadmeExample.swift"))
            .split(separator: "\n", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        func isCompiled(_ block: [String]) -> Bool {
            guard !block.isEmpty, block.count <= compiled.count else { return false }
            return (0...(compiled.count - block.count)).contains { start in Array(compiled[start..<(start + block.count)]) == block }
        }
        var examples: [(source: String, block: [String])] = []
        var documents = ["README.md", "Tests/README.md", "Calibration/GUIDE.md", "Benchmarks/README.md", "Fuzz/README.md"]
        documents += Self.files(under: "Sources", endingIn: ".md")  // the DocC catalogs' pages and articles
        for document in documents where FileManager.default.fileExists(atPath: Self.root.appendingPathComponent(document).path) {
            examples += try Self.blocks(in: Self.text(document)).map { (document, $0) }
        }
        for file in Self.files(under: "Sources", endingIn: ".swift") {
            examples += try Self.blocks(in: Self.text(file), commentPrefix: "///").map { (file, $0) }
        }
        let manifestFragments = examples.filter { $0.block.first?.hasPrefix("dependencies:") == true }
        let code = examples.filter { $0.block.first?.hasPrefix("dependencies:") != true }
        print("documentation examples: \(code.count) compiled, \(manifestFragments.count) manifest fragment(s)")
        #expect(code.count >= 6, "the README's two, Tests/README's, and three doc comments' at least")
        for example in code {
            #expect(isCompiled(example.block), "\(example.source): an example not compiled by DocExamples.swift:\n\(example.block.joined(separator: "\n"))")
        }
        let manifest = try Self.text("Package.swift")
        for fragment in manifestFragments {
            let text = fragment.block.joined(separator: "\n")
            #expect(text.contains(#".product(name: "Parallax", package: "Parallax")"#) && manifest.contains(#".library(name: "Parallax""#),
                    "\(fragment.source): the dependency names a product the package does not have")
        }
    }
}
