import Foundation
import ParallaxCapture
import Testing

/// The real seam, on a machine whose kernel has no V4L2: what can be checked
/// is that failures come back as errno values, named by device and request.
@Suite("libv4l2 seam on this kernel")
struct LibV4L2SyscallsTests {
    @Test("A missing node is cannotOpen with ENOENT")
    func missingNode() {
        #expect {
            _ = try V4L2Camera(path: "/dev/video-parallax-missing")
        } throws: { error in
            if case CaptureError.cannotOpen("/dev/video-parallax-missing", ENOENT) = error { return true }
            return false
        }
    }

    @Test("A node that is not a V4L2 device is refused as such, named")
    func notACamera() {
        #expect {
            _ = try V4L2Camera(path: "/dev/null")
        } throws: { error in
            if case CaptureError.notACaptureDevice("/dev/null", let reason) = error { return reason.contains("QUERYCAP") }
            Issue.record("unexpected \(error)")
            return false
        }
    }

    @Test("poll() through the seam times out on an idle descriptor instead of blocking")
    func pollTimesOut() throws {
        let seam = LibV4L2Syscalls()
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        let started = Date()
        let revents = try seam.poll(fds[0], events: Int16(POLLIN), timeoutMilliseconds: 20)
        #expect(revents == 0)
        #expect(Date().timeIntervalSince(started) < 2)
    }
}
