import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The kernel's USB/IP virtual host controller (`vhci-hcd`), driven through its sysfs
/// files: `attach` takes "PORT SOCKFD DEVID SPEED" (SOCKFD: a connected stream socket of
/// the writing process), `detach` a port number, and `status` lists the ports (state 4:
/// free). Writing needs root.
public struct VHCIHost: Sendable {
    /// The controller's sysfs folder.
    public var root: String

    /// The first controller (`modprobe vhci-hcd` makes it).
    public init(root: String = "/sys/devices/platform/vhci_hcd.0") { self.root = root }

    /// True when the controller exists.
    public var isAvailable: Bool { FileManager.default.fileExists(atPath: root + "/attach") }

    /// The free high-speed ports, lowest first.
    public func freePorts() -> [Int] {
        guard let text = try? String(contentsOfFile: root + "/status", encoding: .utf8) else { return [] }
        // "hub port sta spd dev sockfd local_busid", then one line a port: "hs  0000 004 000 …".
        return text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 3, fields[0] == "hs", let port = Int(fields[1]), Int(fields[2]) == 4 else { return nil }
            return port
        }
    }

    /// Attaches the device at the other end of `socket` to a free high-speed port; returns the port.
    func attach(socket: Int32) throws(EmulatedWebcam.AttachError) -> Int {
        guard isAvailable else { throw .noHostController("\(root)/attach is missing (modprobe vhci-hcd)") }
        guard let port = freePorts().first else { throw .noFreePort }
        // DEVID only names the device in the protocol's headers; speed 3 is USB 2.0 high speed.
        let request = "\(port) \(socket) \(0x10000 | (port + 2)) 3"
        let status = write(request, to: root + "/attach")
        guard status == 0 else { throw .refused(errno: status) }
        return port
    }

    /// Detaches whatever is on `port` (the kernel then closes the connection).
    func detach(port: Int) { _ = write("\(port)", to: root + "/detach") }

    /// Writes `text` to a sysfs file in one write; the errno, or 0.
    private func write(_ text: String, to path: String) -> Int32 {
        let fd = open(path, O_WRONLY)
        guard fd >= 0 else { return errno }
        defer { close(fd) }
        let bytes = Array(text.utf8)
        let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        return written == bytes.count ? 0 : errno
    }
}
