import ArgumentParser
import Foundation
import ParallaxCapture
import ParallaxGeometry

/// `parallax devices`: the V4L2 cameras on this machine, with identity and formats.
struct DevicesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices",
        abstract: "List the V4L2 cameras: identity, USB port and speed, formats.",
        discussion: """
            Cameras are found through sysfs; each is opened briefly to list its formats. \
            The identity column is what `--left`/`--right` and reconnection use: the serial \
            number when it is unique, otherwise the USB port path.
            """)

    @Flag(name: .long, help: "Print JSON instead of a table.")
    var json = false

    @Flag(name: .long, help: "List the camera pairs that can run together as one stereo device, with their formats and costs.")
    var pairs = false

    @Flag(name: .long, help: "With --pairs: also list the formats libv4l2 only emulates (converted in software); JSON always has them.")
    var emulated = false

    @Option(name: .long, help: ArgumentHelp("sysfs root (for testing).", visibility: .hidden))
    var sysfs: String = "/sys"

    @Option(name: .long, help: ArgumentHelp("device directory (for testing).", visibility: .hidden))
    var dev: String = "/dev"

    func run() throws {
        let discovery = V4L2Discovery(sysfsRoot: sysfs, devRoot: dev)
        let cameras = discovery.cameras()
        if pairs { return listPairs(cameras, hint: Self.hint(discovery: discovery, found: cameras.count)) }
        var listed: [(DiscoveredCamera, [CaptureFormat], String?)] = []
        for camera in cameras {
            do {
                let device = try V4L2Camera(path: camera.devicePath, stableID: camera.identity.stableID, usb: camera.usb)
                listed.append((camera, try device.supportedFormats(), nil))
            } catch {
                listed.append((camera, [], "\(error)"))
            }
        }
        let hint = Self.hint(discovery: discovery, found: cameras.count)
        if json {
            print(Self.json(listed, hint: hint))
            return
        }
        if listed.isEmpty {
            print("No V4L2 cameras found.")
            if let hint { print(hint) }
            return
        }
        for (camera, formats, error) in listed {
            print("\(camera.devicePath)  \(camera.name)")
            print("    identity: \(camera.identity.stableID)")
            if let usb = camera.usb {
                print("    usb: bus \(usb.bus) port \(usb.portPath)\(usb.speedMbps.map { ", \(String(format: "%g", $0)) Mbit/s" } ?? "")")
            }
            if let driver = camera.driver { print("    driver: \(driver)") }
            if let error { print("    cannot open: \(error)") }
            for format in formats { print("    \(format)") }
        }
    }

    /// Every two cameras that share a format under cost 1.0, with those formats.
    private func listPairs(_ cameras: [DiscoveredCamera], hint: String?) {
        var opened: [V4L2Camera] = []
        for camera in cameras {
            if let device = try? V4L2Camera(path: camera.devicePath, stableID: camera.identity.stableID, usb: camera.usb) {
                opened.append(device)
            }
        }
        var found: [(PerSide<DeviceIdentity>, [SharedFormat])] = []
        for i in opened.indices {
            for j in opened.indices where j > i {
                let device = StereoDevice(left: opened[i], right: opened[j])
                let runnable = ((try? device.sharedFormats()) ?? []).filter(\.cost.runs)
                if !runnable.isEmpty { found.append((device.identities, runnable)) }
            }
        }
        if json {
            let items: [JSONValue] = found.map { identities, formats in
                .object(JSONObject([
                    ("left", .string(identities.left.stableID)), ("right", .string(identities.right.stableID)),
                    ("left_path", identities.left.path.map(JSONValue.string) ?? .null),
                    ("right_path", identities.right.path.map(JSONValue.string) ?? .null),
                    ("formats", .array(formats.map { shared in
                        .object(JSONObject([("format", .string(shared.format.description)),
                                            ("cost", .number((shared.cost.cost * 1e6).rounded() / 1e6)),
                                            ("emulated", .bool(shared.isEmulated))]))
                    })),
                ]))
            }
            var root = JSONObject([("pairs", .array(items))])
            if let hint { root["hint"] = .string(hint) }
            print(JSONValue.object(root).serialized())
            return
        }
        if found.isEmpty {
            print(cameras.count < 2 ? "No camera pairs: \(cameras.count) camera(s) found." : "No two cameras can run together (no shared format under cost 1.0).")
            if let hint { print(hint) }
            return
        }
        for (identities, formats) in found {
            print("\(identities.left.path ?? identities.left.stableID) + \(identities.right.path ?? identities.right.stableID)"
                  + "  (\(identities.left.stableID), \(identities.right.stableID))")
            let shown = emulated ? formats : formats.filter { !$0.isEmulated }
            for shared in shown { print("    \(shared)") }
            if shown.count < formats.count {
                print("    (\(formats.count - shown.count) formats libv4l2 only emulates are not shown; --emulated lists them)")
            }
        }
    }

    /// Why nothing was found, when the machine itself explains it.
    static func hint(discovery: V4L2Discovery, found: Int) -> String? {
        guard found == 0 else { return nil }
        let nodes = (try? FileManager.default.contentsOfDirectory(atPath: discovery.devRoot))?.filter { $0.hasPrefix("video") } ?? []
        if !discovery.kernelHasV4L2 {
            return "This kernel has no V4L2 support (\(discovery.sysfsRoot)/class/video4linux does not exist) "
                + "and \(nodes.isEmpty ? "there are no \(discovery.devRoot)/video* nodes" : "\(nodes.count) video node(s) exist without sysfs entries"). "
                + "Try `parallax capture --simulated` or `parallax demo`, which need no camera."
        }
        return nodes.isEmpty
            ? "No \(discovery.devRoot)/video* nodes: plug a camera in, or check that its driver (uvcvideo) is loaded."
            : "Video nodes exist but none is a capture device; check permissions (the video group)."
    }

    static func json(_ listed: [(DiscoveredCamera, [CaptureFormat], String?)], hint: String?) -> String {
        let items: [JSONValue] = listed.map { camera, formats, error in
            var fields = JSONObject([
                ("path", .string(camera.devicePath)), ("name", .string(camera.name)),
                ("identity", .string(camera.identity.stableID)),
                ("formats", .array(formats.map { .string($0.description) })),
            ])
            if let driver = camera.driver { fields["driver"] = .string(driver) }
            if let usb = camera.usb {
                fields["usb"] = .object(JSONObject([
                    ("bus", .number(Double(usb.bus))), ("port", .string(usb.portPath)),
                    ("speedMbps", usb.speedMbps.map(JSONValue.number) ?? .null),
                    ("serial", usb.serial.map(JSONValue.string) ?? .null),
                ]))
            }
            if let error { fields["error"] = .string(error) }
            return .object(fields)
        }
        var root = JSONObject([("cameras", .array(items))])
        if let hint { root["hint"] = .string(hint) }
        return JSONValue.object(root).serialized()
    }
}
