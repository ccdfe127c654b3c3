#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import CLibFuzzer

/// What every target needs: the input as bytes or text, a scratch file for the parsers that
/// read only from a path, and a way to report a broken promise as a crash libFuzzer records.
public enum Fuzz {
    /// libFuzzer's command line with `testOneInput` as the target: what each executable's
    /// `main` does.
    public static func run(
        _ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
        _ testOneInput: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
    ) -> CInt {
        var argc = argc, argv = argv
        return LLVMFuzzerRunDriver(&argc, &argv, testOneInput)
    }

    /// libFuzzer's input copied out (the parsers take arrays and strings).
    public static func bytes(_ data: UnsafePointer<UInt8>?, _ size: Int) -> [UInt8] {
        guard let data, size > 0 else { return [] }
        return Array(UnsafeBufferPointer(start: data, count: size))
    }

    /// The input as text, as the file readers see it (invalid UTF-8 replaced).
    public static func text(_ bytes: [UInt8]) -> String {
        String(decoding: bytes, as: UTF8.self)
    }

    /// A path in a per-process folder under `$TMPDIR` (or /tmp) holding `bytes`, for the
    /// entry points that read files. The file is rewritten for every input.
    public static func file(named name: String, holding bytes: [UInt8]) -> String {
        let path = scratchFolder + "/" + name
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { fail("cannot write the scratch file \(path)") }
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
            guard n > 0 else { close(fd); fail("cannot write the scratch file \(path)") }
            offset += n
        }
        close(fd)
        return path
    }

    /// Stops the run as a crash: libFuzzer saves the input that broke `message`'s promise.
    public static func fail(_ message: String) -> Never {
        let line = Array("fuzz: \(message)\n".utf8)
        _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
        abort()
    }

    /// Checks a promise the parser makes about what it returns.
    public static func expect(_ condition: Bool, _ message: @autoclosure () -> String) {
        if !condition { fail(message()) }
    }

    nonisolated(unsafe) private static var folder: String?

    /// Made once per process (libFuzzer calls the target from one thread).
    private static var scratchFolder: String {
        if let folder { return folder }
        let base = getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp"
        var template = Array((base + "/parallax-fuzz-XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            fail("cannot make a scratch folder under \(base)")
        }
        let path = String(cString: made)
        folder = path
        return path
    }
}
