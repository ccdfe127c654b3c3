import FuzzSupport
import ParallaxCalibration
import ParallaxGeometry

/// `--corners-in` lists: Parallax's corner JSON and mrcal's corners.vnl, told apart by
/// content. A list that reads has only finite corners and sizes within the documented
/// ranges, and every entry is found again by its own name.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCornerList(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let text = Fuzz.text(Fuzz.bytes(data, size))
    guard let list = try? CornerList(text: text, source: "input") else { return 0 }
    for (name, entry) in list.entries {
        Fuzz.expect(list.entry(for: name) != nil, "entry \(name) is not found by its own name")
        for corner in entry.corners ?? [] {
            Fuzz.expect(corner.x.isFinite && corner.y.isFinite, "a non-finite corner in \(name): \(corner)")
        }
        if let size = entry.size {
            Fuzz.expect(size.width >= 1 && size.height >= 1 && size.width <= 65536 && size.height <= 65536,
                        "an image size out of range for \(name): \(size)")
        }
    }
    if let board = list.board {
        Fuzz.expect(board.columns >= 2 && board.rows >= 2, "a board below 2x2: \(board)")
    }
    return 0
}

@_cdecl("corner_list_main")
func main(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    Fuzz.run(argc, argv, fuzzCornerList)
}
