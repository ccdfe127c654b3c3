import Testing
@testable import ParallaxCapture

/// The frame account's three stages share one vocabulary: every reason's name is its raw
/// value, snake_case, and no name means two things.
@Suite("Drop reasons: one vocabulary")
struct DropVocabularyTests {
    @Test func everyReasonHasADistinctSnakeCaseName() {
        let names = DropReason.allCases.map(\.rawValue) + FrameDropReason.allCases.map(\.rawValue)
            + SessionDropReason.allCases.map(\.rawValue)
        #expect(Set(names).count == names.count, "a name used twice: \(names.sorted())")
        for name in names {
            #expect(name.allSatisfy { $0.isLowercase || $0 == "_" }, "\(name) is not snake_case")
        }
    }

    @Test func synchronizerCountersIndexEachReasonOnce() {
        #expect(FrameDropReason.allCases.map(\.index) == Array(0..<FrameDropReason.caseCount))
    }
}
