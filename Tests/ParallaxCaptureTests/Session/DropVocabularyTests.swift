import Testing
@testable import ParallaxCapture

/// The frame account's three stages share one vocabulary, ``DropReason``: every reason's
/// name is its raw value, snake_case, no name means two things, and each reason belongs to
/// exactly one stage.
@Suite("Drop reasons: one vocabulary")
struct DropVocabularyTests {
    @Test func everyReasonHasADistinctSnakeCaseName() {
        let names = DropReason.allCases.map(\.rawValue)
        #expect(Set(names).count == names.count, "a name used twice: \(names.sorted())")
        for name in names {
            #expect(name.allSatisfy { $0.isLowercase || $0 == "_" }, "\(name) is not snake_case")
        }
        #expect(DropReason.allCases.allSatisfy { $0.description == $0.rawValue })
    }

    @Test func countersIndexEachReasonOnce() {
        #expect(DropReason.allCases.map(\.index) == Array(0..<DropReason.caseCount))
    }

    /// The stages, written out: a reason added to the wrong block of the enum (or the block
    /// boundaries left behind) moves a count from one part of the account to another.
    @Test func eachReasonBelongsToOneStage() {
        #expect(DropReason.reasons(of: .camera) == [.corruptBuffer, .sequenceGap, .timestampWentBackwards, .streamRestarted,
                                                    .simulated, .frameRateCap, .corruptFrame, .noDecodeBuffer, .malformedMessage,
                                                    .unsupportedEncoding, .formatChanged, .unreadableImage])
        #expect(DropReason.reasons(of: .synchronizer) == [.noMatchWithinSkew, .superseded, .queueOverflow, .constituentDisabled,
                                                          .discontinuity, .deviceError, .disconnected, .afterStop])
        #expect(DropReason.reasons(of: .session) == [.consumerBehind, .noFreeBuffer, .rectificationFailed, .sessionStopped,
                                                     .adaptiveFrameRateCap])
        #expect(DropReason.Stage.allCases.map { DropReason.reasons(of: $0).count }.reduce(0, +) == DropReason.allCases.count)
    }
}
