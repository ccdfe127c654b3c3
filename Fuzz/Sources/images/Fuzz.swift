import FuzzSupport
import ParallaxGeometry
import ParallaxImage

/// Image decoding from memory, as `ImageBuffer(contentsOfFile:)` does after reading the
/// file: PGM/PPM (Parallax's own parser), PNG (libpng) and JPEG (libjpeg-turbo), chosen by
/// the magic bytes. One target for the three because that dispatch is the entry point users
/// reach. A decoded image must be as large as its size says.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzImages(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = Fuzz.bytes(data, size)
    guard let image = try? ImageBuffer(decoding: bytes, source: "input") else { return 0 }
    let channels = image.format == .gray8 ? 1 : image.format == .rgb8 ? 3 : 4
    Fuzz.expect(!image.size.isEmpty && image.bytes.count == image.size.area * channels,
                "decoded \(image.format) \(image.size) holds \(image.bytes.count) bytes")
    return 0
}

@_cdecl("images_main")
func main(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    Fuzz.run(argc, argv, fuzzImages)
}
