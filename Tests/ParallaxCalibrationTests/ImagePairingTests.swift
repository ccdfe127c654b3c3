import Testing
import ParallaxCalibration

@Suite("Pairing image files")
struct ImagePairingTests {
    @Test func pairsByTheSharedNumberAndNamesTheOrphans() {
        let (pairs, unpaired) = ImagePairing.pair(
            left: ["cam/left_0003.png", "cam/left_0001.png", "cam/left_0002.png"],
            right: ["cam/right_1.png", "cam/right_3.png", "cam/right_4.png"])
        #expect(pairs.map(\.left) == ["cam/left_0001.png", "cam/left_0003.png"])
        #expect(pairs.map(\.right) == ["cam/right_1.png", "cam/right_3.png"])
        #expect(Set(unpaired.map(\.name)) == ["cam/left_0002.png", "cam/right_4.png"])
        #expect(unpaired.first { $0.name == "cam/left_0002.png" }?.left == "cam/left_0002.png")
    }

    @Test func pairsInSortedOrderOnlyWhenAsked() {
        let (pairs, unpaired) = ImagePairing.pair(left: ["b.png", "a.png", "c.png"], right: ["y.png", "x.png"], by: .order)
        #expect(pairs.map(\.left) == ["a.png", "b.png"])
        #expect(pairs.map(\.right) == ["x.png", "y.png"])
        #expect(unpaired.map(\.name) == ["c.png"])
    }

    @Test("a file without a number does not shift the others to sorted order (OpenCV's left0*.jpg with right*.jpg)")
    func aFileWithoutANumberIsSetAsideAlone() {
        let left = (1...9).map { String(format: "left%02d.jpg", $0) }
        let right = ["right.jpg"] + [1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14].map { String(format: "right%02d.jpg", $0) }
        let (pairs, unpaired) = ImagePairing.pair(left: left, right: right)
        #expect(pairs.count == 9)
        #expect(pairs.allSatisfy { ImagePairing.number(in: $0.left) == ImagePairing.number(in: $0.right) })
        #expect(unpaired.map(\.name) == ["right.jpg", "right11.jpg", "right12.jpg", "right13.jpg", "right14.jpg"])
        #expect(unpaired[0].reason == "its name has no number to pair by")
        #expect(unpaired[1].reason == "no left image with number 11")
    }

    @Test func aNumberUsedTwiceOnOneSideIsNamed() {
        let (pairs, unpaired) = ImagePairing.pair(left: ["l1.png", "l01.png", "l2.png"], right: ["r1.png", "r2.png"])
        #expect(pairs == [ImagePairing.Pair(left: "l2.png", right: "r2.png")])
        #expect(unpaired.map(\.name) == ["l01.png", "l1.png", "r1.png"])
        #expect(unpaired[0].reason == "number 1 is also in l1.png")
    }

    @Test func readsTheLastNumberOfTheFileName() {
        #expect(ImagePairing.number(in: "/data/set2/left07.jpg") == 7)
        #expect(ImagePairing.number(in: "cam1_frame_000123.png") == 123)
        #expect(ImagePairing.number(in: "left.png") == nil)
    }

    @Test func targetSheetRefusesBoardsThatDoNotFit() throws {
        let board = try CalibrationBoard(parsing: "9x6", square: "25mm")
        let svg = try TargetSheet.svg(for: board, paper: .a4)
        #expect(svg.contains("viewBox=\"0 0 297.0 210.0\""))
        #expect(throws: TargetSheet.Failure.self) { try TargetSheet.svg(for: CalibrationBoard(parsing: "9x6", square: "30mm"), paper: .letter) }
        #expect(throws: TargetSheet.Failure.noUnit) { try TargetSheet.svg(for: CalibrationBoard(parsing: "9x6", square: "25"), paper: .a4) }
        #expect(throws: TargetSpecificationError.self) { try CalibrationBoard(parsing: "9by6", square: "25mm") }
        #expect(throws: TargetSpecificationError.self) { try CalibrationBoard(parsing: "9x6", square: "-3mm") }
    }
}
